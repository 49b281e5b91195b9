//! A run killed outright between the steps of its change (SIGKILL: nothing of it runs again)
//! leaves its receipt, `<run dir>/pending`; the next run finds it, verifies the unfinished
//! change and rolls it back with the port the stack had before — whether the kill came after
//! the receipt but before the config step, or after the config step.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{self, free_port, Stack, TestContext};
use crate::common::{has_all, has_none};

fn config_port(s: &Stack) -> serde_json::Value {
    let path = s.stack_dir().join("host/config.json");
    serde_json::from_slice::<serde_json::Value>(&std::fs::read(path).unwrap()).unwrap()["port"]
        .clone()
}

/// Polls `cond` every 20 ms for at most 20 s while `child` runs.
fn wait_for(child: &mut std::process::Child, what: &str, cond: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        if child.try_wait().unwrap().is_some() || t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: not seen before the run ended");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// launchd: `restart --port NEW` onto a root whose Host never answers, SIGKILLed while its
/// config step is paused between read and rename (the receipt is on disk, config.json still
/// says the old port); the next run rolls back and the config keeps the old port, said as
/// such (not as another command's change).
#[test]
fn a_run_killed_between_its_receipt_and_its_config_step_is_rolled_back_on_the_old_port() {
    let s = Stack::installed("rcptcfg");
    let bad = s.t.fixture_root("bad");
    TestContext::fixture_flag(&bad, "unhealthy", "");
    let marker = s.t.path("paused");
    let pending = s.run_dir().join("pending");
    let new_port = free_port();
    let args: Vec<String> = common::args(&["agent", "restart"])
        .stack(s.name)
        .host(&bad)
        .port(new_port)
        .wait(4, 200)
        .into();
    let mut child =
        s.t.cmd()
            .env("OYSTER_TEST_PAUSE_BEFORE_RENAME", &marker)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
    wait_for(&mut child, "the paused config step", || marker.exists());
    assert!(pending.exists(), "the receipt comes before the config step");
    child.kill().unwrap();
    let _ = child.wait();
    assert_eq!(config_port(&s), s.port, "the config step never finished");
    let r = s.t.run(common::args(&["agent", "regenerate"]).stack(s.name).host(&bad).wait(3, 200));
    let e = r.fails_with(1).stderr();
    has_all(&e, &["rolling back"]);
    has_none(&e, &["changed by another command"]);
    assert_eq!(config_port(&s), s.port);
    assert!(!pending.exists());
    assert_eq!(common::get(s.port, "/health"), 200, "the old Host runs again");
    s.done();
}

/// launchd: `restart --port NEW` whose plist cannot be written (a read-only LaunchAgents
/// directory, which its mode does not show): the config step already wrote the new port, so
/// it is put back, and the receipt of a change launchd never saw is removed.
#[cfg(target_os = "linux")]
#[test]
fn a_plist_that_cannot_be_written_leaves_the_config_on_the_port_the_host_runs_on() {
    let s = Stack::installed("rcptro");
    let pid = s.launchd_pid();
    let Some(ro) = crate::systemd_misuse::ReadOnly::bind(s.plist().parent().unwrap()) else {
        eprintln!("skipped: cannot bind-mount a read-only directory here (needs root)");
        s.done();
        return;
    };
    let r = s.t.run(s.agent_args("restart", false, Some((4, 200))).port(free_port()));
    let e = r.fails_with(1).stderr();
    has_all(&e, &["Read-only file system"]);
    has_all(&e, &[&format!("config.json's port is {} again", s.port)]);
    drop(ro);
    assert_eq!(config_port(&s), s.port);
    assert!(!s.run_dir().join("pending").exists(), "a receipt is left");
    assert_eq!(s.launchd_pid(), pid, "the Host was touched");
    assert_eq!(common::get(s.port, "/health"), 200);
    s.done();
}
