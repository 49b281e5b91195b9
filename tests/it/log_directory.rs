//! A stack's log directory that is not a directory (a plain file, a symlink to a file, a FIFO,
//! a dangling symlink): the verbs that write refuse it before anything runs, the verbs that
//! only read report it, and doctor says it once, as a failure, never also "writable". A
//! symlink to a directory is followed (the Host's log lands where it points).

use std::path::Path;

use crate::common::{has_all, has_none};

/// Makes `dir` (which does not exist) something other than a directory, using `scratch`.
type Spoil = fn(&Path, &Path);

/// Each way the log directory can stop being one.
fn spoilers() -> Vec<(&'static str, Spoil)> {
    vec![
        ("a plain file", |dir, _| std::fs::write(dir, "x").unwrap()),
        ("a symlink to a file", |dir, scratch| {
            std::fs::write(scratch.join("afile"), "x").unwrap();
            std::os::unix::fs::symlink(scratch.join("afile"), dir).unwrap();
        }),
        ("a dangling symlink", |dir, scratch| {
            std::os::unix::fs::symlink(scratch.join("nothing"), dir).unwrap();
        }),
        ("a FIFO", |dir, _| {
            nix::unistd::mkfifo(dir, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        }),
    ]
}

#[test]
fn doctor_fails_a_log_directory_that_is_not_one_once_and_never_calls_it_writable() {
    let s = crate::common::Stack::installed("logdir");
    let logs = s.t.home.join(".oysterun-stacks/logdir/logs");
    std::fs::rename(&logs, s.t.path("logs.kept")).unwrap();
    for (what, spoil) in spoilers() {
        let scratch = s.t.path(&format!("scratch-{}", what.replace(' ', "-")));
        std::fs::create_dir_all(&scratch).unwrap();
        spoil(&logs, &scratch);
        let v = s.t.run(["doctor", "--stack", "logdir", "--json"]).fails_with(1).json();
        let about_it: Vec<(String, String)> = v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["detail"].as_str().unwrap().contains("logdir/logs"))
            .map(|c| {
                (c["status"].as_str().unwrap().to_owned(), c["detail"].as_str().unwrap().to_owned())
            })
            .collect();
        assert_eq!(about_it.len(), 1, "{what}: {about_it:?}");
        assert_eq!(about_it[0].0, "fail", "{what}: {about_it:?}");
        assert!(
            about_it[0].1.contains("the log directory") && !about_it[0].1.contains("writable"),
            "{what}: {about_it:?}"
        );
        // status only reads: it reports (exit 0), as before.
        assert_eq!(s.status()["installed"], true, "{what}");
        std::fs::remove_file(&logs).unwrap();
    }
    std::fs::rename(s.t.path("logs.kept"), &logs).unwrap();
    s.t.run(["agent", "uninstall", "--stack", "logdir"]).ok();
    s.t.wait_no_processes();
}

#[test]
fn a_log_directory_symlinked_to_a_directory_is_followed() {
    let s = crate::common::Stack::installed("logln");
    let logs = s.t.home.join(".oysterun-stacks/logln/logs");
    let real = s.t.path("elsewhere-logs");
    std::fs::rename(&logs, &real).unwrap();
    std::os::unix::fs::symlink(&real, &logs).unwrap();
    let before = std::fs::metadata(real.join("oysterun-host.log")).unwrap().len();
    s.t.run(s.args("restart")).ok();
    let after = std::fs::metadata(real.join("oysterun-host.log")).unwrap().len();
    assert!(after > before, "the restarted Host logs where the link points");
    let v = s.t.run(["doctor", "--stack", "logln", "--json"]).json();
    let log_checks: Vec<&serde_json::Value> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["detail"].as_str().unwrap().contains("logln/logs"))
        .collect();
    assert!(log_checks.iter().all(|c| c["status"] == "ok"), "{log_checks:?}");
    s.t.run(["agent", "uninstall", "--stack", "logln"]).ok();
    s.t.wait_no_processes();
}

#[test]
fn a_verb_that_only_stops_says_why_its_audit_line_was_not_written() {
    let s = crate::common::Stack::installed("logstop");
    let logs = s.t.home.join(".oysterun-stacks/logstop/logs");
    std::fs::rename(&logs, s.t.path("logs.kept")).unwrap();
    std::fs::write(&logs, "x").unwrap();
    // Stopping writes no Host log: it is not refused, and the audit line it cannot write is
    // said with the cause (not "File exists").
    let e = s.t.run(["agent", "stop", "--stack", "logstop"]).ok().stderr();
    has_all(&e, &["service-control.jsonl", "is not a directory"]);
    has_none(&e, &["File exists"]);
    std::fs::remove_file(&logs).unwrap();
    s.done();
}
