//! A rollback that something disturbs while it runs (docs/behaviour.md §9): a second signal
//! while the last good plist is reloaded and verified does not cut it short, and a config.json
//! that became unreadable before its port is put back does not hide that the previous Host runs
//! again (nor claim a retry the next run will not make). Every process is signalled by its pid.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::common::{self, free_port, Stack, TestContext};
use crate::common::{has_all, has_none};

/// Sends `sig` to exactly this child's pid (ESRCH: it finished first).
fn send(child: &Child, sig: Signal) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    let _ = nix::sys::signal::kill(pid, sig);
}

/// Polls `cond` every 20 ms for at most `bound`; a child that ends first, or a bound that
/// passes, fails the test (the child is killed by its pid).
pub(crate) fn wait_while_running(
    child: &mut Child,
    bound: Duration,
    what: &str,
    cond: impl Fn() -> bool,
) {
    let t0 = Instant::now();
    while !cond() {
        if child.try_wait().unwrap().is_some() || t0.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: not seen before the run ended or {bound:?} passed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A stack installed on its port from a healthy root, and a second root whose Host never
/// answers /health: `restart` onto it with another port fails and rolls back.
fn installed_with_a_bad_root(name: &'static str) -> (Stack, std::path::PathBuf) {
    let s = Stack::new(name);
    s.t.run(s.args("install")).ok();
    let bad = s.t.fixture_root("bad");
    TestContext::fixture_flag(&bad, "unhealthy", "");
    (s, bad)
}

/// `agent restart` onto `root` and `port`, in the background (waiting `secs` for `/health`),
/// its stderr in `err`.
pub(crate) fn restart_onto(s: &Stack, (root, port): (&Path, u16), secs: u64, err: &Path) -> Child {
    let args: Vec<String> = common::args(&["agent", "restart"])
        .stack(s.name)
        .host(root)
        .port(port)
        .wait(secs, 200)
        .into();
    s.t.cmd()
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(err).unwrap())
        .spawn()
        .unwrap()
}

fn config_port(s: &Stack) -> serde_json::Value {
    let path = s.t.home.join(format!(".oysterun-stacks/{}/host/config.json", s.name));
    serde_json::from_slice::<serde_json::Value>(&std::fs::read(path).unwrap()).unwrap()["port"]
        .clone()
}

#[test]
fn a_second_signal_during_the_rollback_does_not_cut_it_short() {
    let (s, bad) = installed_with_a_bad_root("sigroll");
    let err = s.t.path("restart.err");
    let read = || std::fs::read_to_string(&err).unwrap_or_default();
    let mut child = restart_onto(&s, (&bad, free_port()), 4, &err);
    wait_while_running(&mut child, Duration::from_secs(20), "the wait", || {
        read().contains("answer /health")
    });
    send(&child, Signal::SIGINT);
    wait_while_running(&mut child, Duration::from_secs(20), "the rollback", || {
        read().contains("Rolling back")
    });
    // SIGTERM after SIGTERM while the last good plist is booted in, reloaded and verified.
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "the rollback hung");
        send(&child, Signal::SIGTERM);
        std::thread::sleep(Duration::from_millis(40));
    };
    let e = read();
    assert_eq!(status.code(), Some(130), "the first signal names the exit ({status:?})\n{e}");
    has_all(&e, &["restored the last good plist; the previous Host runs again"]);
    has_none(&e, &["rollback failed too"]);
    assert_eq!(config_port(&s), s.port, "{e}");
    let st = s.status();
    assert_eq!(
        (&st["verified"], &st["port"]),
        (&serde_json::json!(true), &serde_json::json!(s.port)),
        "{st}"
    );
    s.t.run(["agent", "uninstall", "--stack", s.name]).ok();
    s.t.wait_no_processes();
}

#[test]
fn a_config_that_cannot_take_its_port_back_does_not_hide_the_restored_host() {
    let (s, bad) = installed_with_a_bad_root("cfgroll");
    let err = s.t.path("restart.err");
    let read = || std::fs::read_to_string(&err).unwrap_or_default();
    let config = s.t.home.join(".oysterun-stacks/cfgroll/host/config.json");
    let mut child = restart_onto(&s, (&bad, free_port()), 4, &err);
    wait_while_running(&mut child, Duration::from_secs(20), "the wait", || {
        read().contains("answer /health")
    });
    // While the new Host is waited for, config.json is broken by hand.
    std::fs::write(&config, "{broken").unwrap();
    let status = child.wait().unwrap();
    let e = read();
    assert_eq!(status.code(), Some(1), "{e}");
    // What the rollback did is said, then why the port stays: the rollback did not fail (the
    // pending marker is gone, so no next run would retry it).
    has_all(
        &e,
        &[
            "restored the last good plist; the previous Host runs again",
            "config.json's port could not be put back",
            "not valid JSON",
        ],
    );
    has_none(&e, &["rollback failed too"]);
    assert!(!s.t.home.join(".oysterun-stacks/cfgroll/run/pending").exists());
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "{broken");
    s.t.run(["agent", "uninstall", "--stack", s.name]).ok();
    s.t.wait_no_processes();
}

#[test]
fn a_run_killed_mid_change_leaves_its_port_for_the_recovering_runs_rollback_to_put_back() {
    let (s, bad) = installed_with_a_bad_root("killroll");
    let before = config_port(&s);
    assert_eq!(before, s.port);
    let err = s.t.path("restart.err");
    let new_port = free_port();
    let mut child = restart_onto(&s, (&bad, new_port), 4, &err);
    // SIGKILL once the change is under way (its receipt written, then its config step): no
    // rollback runs, the receipt stays.
    let pending = s.t.home.join(".oysterun-stacks/killroll/run/pending");
    wait_while_running(
        &mut child,
        Duration::from_secs(20),
        "the receipt and the config step",
        || pending.exists() && config_port(&s) == new_port,
    );
    send(&child, Signal::SIGKILL);
    let _ = child.wait();
    assert_eq!(config_port(&s), new_port, "the killed run recorded its port");
    // The next run finds the marker, verifies the unfinished change, and rolls it back: the
    // port the killed run recorded goes back with the definition.
    let r = s.t.run(common::args(&["agent", "regenerate"]).stack(s.name).host(&bad).wait(3, 200));
    r.fails_with(1).stderr_has_all(&[&format!("config.json's port is {} again", s.port)]);
    assert_eq!(config_port(&s), before);
    assert!(!pending.exists());
    s.t.run(["agent", "uninstall", "--stack", "killroll"]).ok();
    s.t.wait_no_processes();
}

/// A recovering run puts back only a port a marker could have recorded: a hand-edited or
/// corrupt `port` line (not a port, out of range, not JSON, a marker that is not a file at all)
/// never reaches config.json, and the recovery still rolls back and clears the marker.
#[test]
fn a_corrupt_marker_never_puts_a_non_port_into_config() {
    let (s, bad) = installed_with_a_bad_root("badmark");
    let good = config_port(&s);
    let pending = s.t.home.join(".oysterun-stacks/badmark/run/pending");
    let p = s.port;
    // An older oyster's line format (never a port now: every such line is "a run died") and a
    // JSON receipt whose port edit no run could make; the other shapes of both are unit tests
    // of `service::journal` (each case here waits out a Host that never answers).
    let config = s.t.home.join(".oysterun-stacks/badmark/host/config.json");
    let markers = [
        format!("restart\nport \"x\" {p}\n"),
        serde_json::json!({
            "action": "restart",
            "steps": [{"step": "write_config", "path": config, "edits": [{"setting": "port", "from": 70000, "to": p}]}],
            "done": 1
        })
        .to_string(),
    ];
    for m in &markers {
        std::fs::write(&pending, m).unwrap();
        let r =
            s.t.run(common::args(&["agent", "regenerate"]).stack(s.name).host(&bad).wait(3, 200));
        let e = r.fails_with(1).stderr();
        assert_eq!(config_port(&s), good, "marker {m:?}: {e}");
        assert!(!pending.exists(), "marker {m:?}: {e}");
    }
    s.t.run(["agent", "uninstall", "--stack", "badmark"]).ok();
    s.t.wait_no_processes();
}
