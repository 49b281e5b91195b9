//! Decide before you act: a refused command leaves `config.json` and the plist byte-identical
//! (and launchd's disabled override as it was), whichever refusal it meets — a port another
//! process holds, a reload launchd would refuse (switched off in Login Items), a forced
//! (managed) value, a directly started Host, a plist another user owns. Each attempt asks for
//! a change (`--port` of another port), so a run that wrote before refusing would show it.

use std::path::PathBuf;

use crate::bounded::{snapshot, Snapshot};
use crate::common::{free_port, need_root, Stack};

/// The files a refusal must not touch, with their bytes.
fn files(s: &Stack) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    [s.stack_dir().join("host/config.json"), s.plist()]
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).ok();
            (p, bytes)
        })
        .collect()
}

/// Runs each of `attempts` (arguments after `oyster`), expecting exit `code` and a stderr that
/// holds `says`, and checks that nothing under HOME changed (locks aside).
fn refused_unchanged(s: &Stack, attempts: &[Vec<String>], code: i32, says: &str) {
    let before: Snapshot = snapshot(&s.t.home, true);
    let bytes = files(s);
    for a in attempts {
        let r = s.t.run(a).fails_with(code);
        r.stderr_has(says);
        assert_eq!(files(s), bytes, "{a:?} changed config.json or the plist");
        assert_eq!(snapshot(&s.t.home, true), before, "{a:?} changed files under HOME");
    }
}

/// `VERB NAME --port P --wait 10 --settle-ms 300` for the verbs that load the Host, then the
/// same with `--dry-run` (refused as the run is).
fn loading_verbs(s: &Stack, port: u16) -> Vec<Vec<String>> {
    let runs: Vec<Vec<String>> = ["restart", "install", "start"]
        .iter()
        .map(|v| s.agent_args(v, false, Some((10, 300))).port(port).into())
        .collect();
    let dry = runs.iter().map(|a| {
        let mut a = a.clone();
        a.push("--dry-run".into());
        a
    });
    runs.clone().into_iter().chain(dry).collect()
}

#[test]
fn a_port_held_by_another_process_is_refused_before_the_config_changes() {
    let s = Stack::installed("held");
    let other = free_port();
    let _holder = std::net::TcpListener::bind(("::", other)).unwrap();
    refused_unchanged(&s, &loading_verbs(&s, other), 1, "is already held by pid");
    s.done();
}

/// The round-3 bug: `restart --port N` refused for Login Items left config.json on N while the
/// plist kept the old port. (Refused only for a loaded Host that does not run: here one waiting
/// out launchd's throttle after a crash.)
#[test]
fn a_reload_launchd_would_refuse_is_refused_before_the_config_changes() {
    let s = Stack::installed("switched");
    s.crash_looping();
    s.t.sim(&["login-item", &s.label(), "off"]).ok();
    let attempts = loading_verbs(&s, free_port());
    refused_unchanged(&s, &attempts, 1, "Login Items");
    s.t.sim(&["login-item", &s.label(), "on"]).ok();
    s.done();
}

#[test]
fn a_forced_port_is_refused_before_anything_is_written() {
    let mut s = Stack::installed("forced");
    let mut stacks = plist::Dictionary::new();
    let mut forced = plist::Dictionary::new();
    forced.insert("port".into(), u64::from(s.port).into());
    stacks.insert(s.name.into(), forced.into());
    let mut settings = plist::Dictionary::new();
    settings.insert("stacks".into(), stacks.into());
    s.t.managed_preferences("Managed Preferences", settings);
    refused_unchanged(&s, &loading_verbs(&s, free_port()), 1, "managed by your organization");
    s.done();
}

#[test]
fn a_directly_started_host_is_refused_before_the_config_changes() {
    let s = Stack::new("direct");
    s.t.run(s.host_args(&["host", "start"]).wait(10, 300)).ok();
    // install and restart of a job beside it, and stop (which would disable the label).
    let mut attempts =
        vec![s.agent_args("install", false, Some((10, 300))).port(free_port()).into()];
    attempts.push(s.agent_args("stop", false, None).into());
    let mut more = loading_verbs(&s, free_port());
    more.push(s.agent_args("stop", false, None).arg("--dry-run").into());
    attempts.extend(more);
    refused_unchanged(&s, &attempts, 1, "directly");
    s.t.run(["host", "stop", "--stack", s.name]).ok();
    s.t.wait_no_processes();
}

#[test]
#[ignore = "needs root: a plist owned by another uid"]
fn a_plist_another_user_owns_is_refused_before_the_config_changes() {
    need_root();
    let s = Stack::installed("owned");
    std::os::unix::fs::chown(s.plist(), Some(12345), None).unwrap();
    refused_unchanged(&s, &loading_verbs(&s, free_port()), 2, "12345");
    std::os::unix::fs::chown(s.plist(), Some(0), None).unwrap();
    s.done();
}
