//! Whole outputs of the commands about every stack on this machine as snapshots (issue 28):
//! `list` of a stopped stack, `stop --all`, `status --all --json`, `cleanup` with something to
//! clean, `inventory` (summary and `--json`) and `mdm profile`. Filtered as `snapshots.rs`
//! filters them.

use crate::common::{args, free_port, TestContext};
use crate::snapshots::{installed, settings, shown, snap, snap_table};
use crate::snapshots_more::snap_docs;

#[test]
fn list_stop_all_and_status_all_json_of_a_stopped_and_a_verified_stack() {
    let (t, port) = installed();
    let all: &[&str] = &["status", "--all", "--json"];
    snap_docs(&t, &[port], &[("status_all_json_verified", all, 0)]);
    snap("stop_all", &t, &["stop", "--all"], &[port]).ok();
    snap_table("list_stopped", &t, &["list"], &[port]).ok();
    snap_docs(&t, &[port], &[("status_all_json_stopped", all, 1)]);
}

/// What Oysterun's own runner leaves of stack `name` once its Host is gone: the run directory
/// with a pid file naming no process.
fn leftover(t: &TestContext, name: &str) {
    let run = t.home.join(".oysterun-stacks").join(name).join("run");
    std::fs::create_dir_all(&run).unwrap();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    std::fs::write(run.join(format!("oysterun-host-{name}.pid")), format!("{}\n", gone.id()))
        .unwrap();
}

#[test]
fn cleanup_lists_removes_and_purges() {
    let (t, port) = installed();
    leftover(&t, "dev");
    // An uninstalled stack that still holds its config and logs.
    t.run(args(&["config", "sync", "old"]).port(free_port())).ok();
    snap("cleanup_dry_run", &t, &["cleanup", "--dry-run"], &[port]).ok();
    snap("cleanup_yes", &t, &["cleanup", "--yes"], &[port]).ok();
    assert!(!t.home.join(".oysterun-stacks/dev").exists());
    snap("cleanup_yes_purge", &t, &["cleanup", "--yes", "--purge"], &[port]).ok();
    assert!(!t.home.join(".oysterun-stacks/old").exists());
    assert!(t.home.join(".oysterun-stacks/snap").exists());
}

/// `settings` plus what the inventory says of whoever runs the tests: their name and uid, and
/// whether they are root (root's inventory covers every user; the others' only themselves).
fn inventory_settings(t: &TestContext, ports: &[u16]) -> insta::Settings {
    let me = nix::unistd::User::from_uid(nix::unistd::geteuid()).unwrap().unwrap();
    let mut s = settings(t, ports);
    s.add_filter(r#""pid": \d+"#, r#""pid": [PID]"#);
    s.add_filter(r#""uid": \d+"#, r#""uid": [UID]"#);
    s.add_filter(r#""as_root": (true|false)"#, r#""as_root": [AS_ROOT]"#);
    s.add_filter(&format!(r#""name": "{}""#, regex_lite::escape(&me.name)), r#""name": "[USER]""#);
    s.add_filter(
        &format!(r"(?m)^{} \(uid \d+\)", regex_lite::escape(&me.name)),
        "[USER] (uid [UID])",
    );
    // `--result problems`: `USER/STACK:PROBLEM`.
    s.add_filter(&format!(r"\b{}/", regex_lite::escape(&me.name)), "[USER]/");
    s
}

/// The signature and the login-items profile are read from macOS itself (`codesign`,
/// `profiles`): elsewhere the inventory says why it cannot, the same on every machine.
#[test]
#[cfg_attr(target_os = "macos", ignore = "the signature and profile lines are the Mac's own")]
fn inventory_summary_and_json_of_one_verified_stack() {
    let (t, port) = installed();
    let s = inventory_settings(&t, &[port]);
    for (name, args) in [
        ("inventory", &["inventory"][..]),
        ("inventory_json", &["inventory", "--json"]),
        ("inventory_result_stacks", &["inventory", "--result", "stacks"]),
        ("inventory_result_problems", &["inventory", "--result", "problems"]),
    ] {
        let r = t.run(args).ok();
        s.bind(|| insta::assert_snapshot!(name, shown(args, &r)));
    }
}

/// Which team the profile's rule names, and the note about it, follow oyster's own signature.
#[test]
#[cfg_attr(target_os = "macos", ignore = "the rule and its note follow this build's own signature")]
fn mdm_profile_on_stdout_and_for_a_named_organization() {
    let t = TestContext::new();
    snap("mdm_profile", &t, &["mdm", "profile"], &[]).ok();
    let r = snap(
        "mdm_profile_organization",
        &t,
        &["mdm", "profile", "--organization", "Example & Co."],
        &[],
    )
    .ok();
    // An independent reader takes it as a plist.
    let doc = crate::common::plistlib(&r.0.stdout);
    assert_eq!(doc["PayloadOrganization"], "Example & Co.");
    // To a file: what was written is said, and the file holds what stdout showed.
    let file = t.path("oysterun.mobileconfig");
    snap("mdm_profile_output", &t, &["mdm", "profile", "--output", file.to_str().unwrap()], &[])
        .ok();
    let plain = t.run(["mdm", "profile"]).ok();
    assert_eq!(std::fs::read(&file).unwrap(), plain.0.stdout);
}
