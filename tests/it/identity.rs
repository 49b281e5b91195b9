//! Whose Host a pid is: a copied stack directory never makes `host stop` signal (or `host
//! status` claim) another stack's Host, and a clock step never orphans a directly started one.

use std::path::{Path, PathBuf};

use crate::common::has_all;
use crate::common::{args, free_port, TestContext};

/// `host start` of `stack` from `root` on `port`, verified; the Host's pid.
pub(crate) fn start(t: &TestContext, stack: &str, root: &Path, port: u16) -> u32 {
    t.run(args(&["host", "start"]).stack(stack).host(root).port(port).wait_secs(10)).ok();
    pid_of(t, stack)
}

pub(crate) fn run_dir(t: &TestContext, stack: &str) -> PathBuf {
    t.home.join(".oysterun-stacks").join(stack).join("run")
}

fn pid_of(t: &TestContext, stack: &str) -> u32 {
    let text =
        std::fs::read_to_string(run_dir(t, stack).join(format!("oysterun-host-{stack}.pid")))
            .unwrap();
    text.trim().parse().unwrap()
}

pub(crate) fn alive(pid: u32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()), None).is_ok()
        && !crate::common::zombie(pid)
}

/// Copies stack `from`'s directory to `to`, renaming its identity files as `to`'s, as a user
/// restoring a backup under another name does while `from` runs.
fn copy_stack(t: &TestContext, from: &str, to: &str) {
    let src = t.home.join(".oysterun-stacks").join(from);
    let dst = t.home.join(".oysterun-stacks").join(to);
    let status = std::process::Command::new("cp").arg("-a").arg(&src).arg(&dst).status().unwrap();
    assert!(status.success());
    let run = dst.join("run");
    for ext in ["pid", "origin.tsv"] {
        std::fs::rename(
            run.join(format!("oysterun-host-{from}.{ext}")),
            run.join(format!("oysterun-host-{to}.{ext}")),
        )
        .unwrap();
    }
}

#[test]
fn a_copied_stack_directory_never_makes_host_stop_signal_the_other_stacks_host() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    let b = start(&t, "b", &root, free_port());
    copy_stack(&t, "b", "a");
    let copied: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(run_dir(&t, "a"))
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().ends_with(".lock"))
        .map(|e| (e.path(), std::fs::read(e.path()).unwrap_or_default()))
        .collect();

    let st = t.run(["host", "status", "--stack", "a", "--json"]).fails_with(1).json();
    assert_eq!(
        (st["running"].as_bool(), st["pid_file"].as_str()),
        (Some(false), Some("other_stack")),
        "{st}"
    );
    let human = t.run(["host", "status", "--stack", "a"]).fails_with(1);
    assert!(
        human.stdout().contains("not stack a's Host") && human.stdout().contains("\"b\""),
        "{}",
        human.stdout()
    );

    let r = t.run(["host", "stop", "--stack", "a"]).fails_with(1);
    let e = r.stderr();
    has_all(&e, &[&format!("pid {b} is not stack a's Host"), "stack \"b\""]);
    has_all(&e, &["nothing was signalled", "hint:"]);
    assert!(alive(b), "stack b's Host was signalled");
    for (path, bytes) in &copied {
        assert_eq!(
            std::fs::read(path).ok().as_ref(),
            Some(bytes),
            "{} was changed or removed",
            path.display()
        );
    }
    // `host start --stack a` over the copies refuses the same way, deleting nothing.
    t.run(args(&["host", "start"]).stack("a").host(&root).port(free_port()))
        .fails_with(1)
        .stderr_has_all(&["not stack a's Host"]);
    assert!(run_dir(&t, "a").join("oysterun-host-a.pid").exists());
    assert!(alive(b));
    // b's own stop still works.
    t.run(["host", "stop", "--stack", "b"]).ok();
    assert!(!alive(b));
}

/// A Host started directly as stack `it`, its exec record then edited by `edit` (what a clock
/// step, an older oyster did to it): the context, the root, the Host's pid and the record.
fn started_with_record(
    edit: impl FnOnce(&mut serde_json::Value),
) -> (TestContext, PathBuf, u32, PathBuf) {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    let pid = start(&t, "it", &root, free_port());
    let record = run_dir(&t, "it").join("oyster-exec.json");
    let mut rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    edit(&mut rec);
    std::fs::write(&record, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
    (t, root, pid, record)
}

/// A record's wall-clock start time, an hour later: what a +1 h clock step does to it.
fn clock_step(rec: &mut serde_json::Value) {
    rec["start_time"] = (rec["start_time"].as_u64().unwrap() + 3600).into();
}

#[test]
fn a_clock_step_does_not_orphan_a_directly_started_host() {
    // What a +1 h clock step does to a wall-clock start time: the recorded one no longer
    // equals what the kernel reports now.
    let (t, _, pid, _) = started_with_record(clock_step);

    let st = t.run(["host", "status", "--stack", "it", "--json"]).ok().json();
    assert_eq!(
        (st["running"].as_bool(), st["pid"].as_u64(), st["verified"].as_bool()),
        (Some(true), Some(pid as u64), Some(true)),
        "{st}"
    );
    let r = t.run(["host", "stop", "--stack", "it"]).ok();
    assert!(r.stdout().contains(&format!("Host stopped (pid {pid}")), "{}", r.stdout());
    assert!(!alive(pid), "the Host kept running");
    assert!(!run_dir(&t, "it").join("oysterun-host-it.pid").exists());
}

#[test]
fn an_older_record_that_no_longer_proves_a_live_host_is_kept_and_nothing_is_signalled() {
    // A record of an older oyster (no start stamp) after a clock step: the wall-clock time
    // no longer matches, and nothing else proves the process is the one recorded.
    let (t, root, pid, record) = started_with_record(|rec| {
        rec.as_object_mut().unwrap().remove("start_stamp");
        clock_step(rec);
    });
    t.run(["host", "stop", "--stack", "it"])
        .fails_with(1)
        .stderr_has_all(&["was not signalled", &format!("kill {pid}")]);
    assert!(alive(pid));
    assert!(run_dir(&t, "it").join("oysterun-host-it.pid").exists());
    assert!(record.exists());
    // `host start` does not take the files over either.
    t.run(args(&["host", "start"]).stack("it").host(&root).port(free_port()))
        .fails_with(1)
        .stderr_has_all(&["was not signalled"]);
    assert!(alive(pid));
    assert!(record.exists());
}

#[test]
fn host_stop_never_signals_a_pid_launchd_runs_under_another_label() {
    let mut t = TestContext::new();
    t.use_sim();
    let root = t.fixture_root("root");
    let port = free_port().to_string();
    t.run(args(&["agent", "install"]).stack("a").host(&root).port(&port).wait(10, 200)).ok();
    // The same definition loaded under another stack's label (a hand-copied plist): launchd
    // runs stack a's Host as com.oysterun.host.b, and a's own label is not loaded.
    let agents = t.home.join("Library/LaunchAgents");
    let a_plist = agents.join("com.oysterun.host.a.plist");
    let b_plist = agents.join("com.oysterun.host.b.plist");
    let text = std::fs::read_to_string(&a_plist).unwrap();
    let copied = text.replacen(
        "<string>com.oysterun.host.a</string>",
        "<string>com.oysterun.host.b</string>",
        1,
    );
    assert_ne!(copied, text);
    let uid = nix::unistd::getuid();
    t.sim(&["bootout", &format!("gui/{uid}/com.oysterun.host.a")]).ok();
    std::fs::remove_file(&a_plist).unwrap();
    std::fs::write(&b_plist, copied).unwrap();
    t.sim(&["bootstrap", &format!("gui/{uid}"), b_plist.to_str().unwrap()]).ok();
    let t0 = std::time::Instant::now();
    let pid = loop {
        let st = t.run(["host", "status", "--stack", "a", "--json"]).json();
        if let Some(pid) = st["pid"].as_u64().filter(|_| st["running"] == true) {
            break u32::try_from(pid).unwrap();
        }
        assert!(t0.elapsed().as_secs() < 15, "the Host never came up: {st}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    t.run(["host", "stop", "--stack", "a"])
        .fails_with(1)
        .stderr_has_all(&[&format!("launchd runs pid {pid}"), "com.oysterun.host.b"]);
    assert!(alive(pid), "launchd's job was signalled");
    assert!(run_dir(&t, "a").join("oysterun-host-a.pid").exists());
    t.sim(&["bootout", &format!("gui/{uid}/com.oysterun.host.b")]).ok();
}
