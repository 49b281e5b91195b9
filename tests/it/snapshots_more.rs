//! Whole outputs of one stack's commands as snapshots (issue 28): `logs`, `kill`,
//! `agent regenerate` (unchanged, a dry run, `--no-restart`, a reload), `agent print`,
//! `providers resolve`/`status --json`, `doctor --json`, `config sync` that changes something,
//! `host status --json`, and errors under `--json` (one document on stdout). Filtered as
//! `snapshots.rs` filters them; `contains` is kept for properties elsewhere.

use crate::common::{args, free_port, Run, TestContext};
use crate::snapshots::{installed, settings, shown, snap, snaps};

/// `snap` for a run whose stdout is a JSON document: the command, the exit code, stdout and
/// stderr, a document's pids filtered like the human ones.
#[track_caller]
pub fn snap_doc(name: &str, t: &TestContext, args: &[&str], ports: &[u16]) -> Run {
    let r = t.run(args);
    let mut s = settings(t, ports);
    s.add_filter(r#""pid": \d+"#, r#""pid": [PID]"#);
    s.bind(|| insta::assert_snapshot!(name, shown(args, &r)));
    r
}

/// Runs each `(name, args, exit code)` row as [`snap_doc`] on `t`, each run's code checked and
/// its stdout one JSON document.
#[track_caller]
pub fn snap_docs(t: &TestContext, ports: &[u16], rows: &[(&str, &[&str], i32)]) {
    for (name, args, code) in rows {
        snap_doc(name, t, args, ports).fails_with(*code).json();
    }
}

#[test]
fn logs_prints_the_last_lines_redacted_and_n_chooses_how_many() {
    let t = TestContext::with_claude();
    t.run(args(&["config", "sync", "lg"]).port(18123)).ok();
    let log = t.home.join(".oysterun-stacks/lg/logs/oysterun-host.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let lines: Vec<String> = (1..=25)
        .map(|i| format!("fixture host line {i:02}"))
        .chain([
            "relay https://relayuser:URLPASS-4242@relay.example.com/v1 connected".to_owned(),
            "fixture host listening on 127.0.0.1:18123".to_owned(),
        ])
        .collect();
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let all = snap("logs_default", &t, &["logs", "lg"], &[]).ok();
    assert!(!all.stdout().contains("URLPASS"), "{}", all.stdout());
    snap("logs_n_3", &t, &["logs", "lg", "-n", "3"], &[]).ok();
}

#[test]
fn agent_regenerate_unchanged_dry_run_no_restart_and_reload() {
    let (t, port) = installed();
    let regen = |more: &'static str| ["agent", "regenerate", "--stack", "snap", more];
    let settle = [&regen("--settle-ms")[..], &["200"]].concat();
    // Nothing changed: said for the config and the plist, the Host left alone.
    snaps(
        &t,
        &[port],
        &[
            ("regenerate_unchanged", &settle, 0),
            ("regenerate_dry_run_unchanged", &regen("--dry-run"), 0),
            ("regenerate_no_restart_unchanged", &regen("--no-restart"), 0),
        ],
    );
    // A manual codex in a directory of its own: the plist's PATH gains it.
    let codex = t.fake_exe(&t.home.join("tools/codex"));
    t.run(args(&["providers", "set", "codex"]).arg(codex.to_str().unwrap()).stack("snap")).ok();
    // Then the plist is written, the running Host still has the old PATH: a reload gives it.
    snaps(
        &t,
        &[port],
        &[
            ("regenerate_dry_run_changed", &regen("--dry-run"), 0),
            ("regenerate_no_restart_changed", &regen("--no-restart"), 0),
            ("regenerate_reload", &settle, 0),
        ],
    );
    t.assert_nothing_executed();
}

#[test]
fn providers_resolve_and_status_json() {
    let t = TestContext::with_claude();
    snap("providers_resolve", &t, &["providers", "resolve"], &[]).ok();
    snap_doc("providers_resolve_json", &t, &["providers", "resolve", "--json"], &[]).ok();
    t.run(["providers", "set", "codex", ""]).ok();
    snap_doc("providers_status_json", &t, &["providers", "status", "--json"], &[]).ok();
    t.assert_nothing_executed();
}

#[test]
fn config_sync_that_changes_the_port_of_a_running_host() {
    let (t, port) = installed();
    let other = free_port();
    // The two ports under names of their own: which one the Host runs on is the point.
    let mut s = settings(&t, &[port]);
    s.add_filter(&format!(r"\b{other}\b"), "[NEW_PORT]");
    let to_other = ["config", "sync", "snap", "--port", &other.to_string()];
    let r = t.run(to_other);
    s.bind(|| insta::assert_snapshot!("config_sync_changed", shown(&to_other, &r)));
    r.ok();
    // Back to the port it runs on: the plist already matches.
    let back = ["config", "sync", "snap", "--port", &port.to_string()];
    let r = t.run(back);
    s.bind(|| insta::assert_snapshot!("config_sync_changed_back", shown(&back, &r)));
    r.ok();
}

#[test]
fn errors_under_json_are_one_document_on_stdout() {
    let t = TestContext::with_claude();
    t.run(args(&["config", "sync", "real"]).port(18999)).ok();
    snap_docs(
        &t,
        &[],
        &[
            ("error_json_unknown_stack", &["status", "--stack", "nope", "--json"], 2),
            ("error_json_unsupported_provider", &["providers", "resolve", "gemini", "--json"], 2),
        ],
    );
    t.write_config("{\"port\": 88");
    snap_docs(
        &t,
        &[],
        &[
            ("error_json_corrupt_config", &["providers", "status", "--json"], 2),
            // doctor reports a corrupt config as a failed check in its own document.
            ("doctor_json_corrupt_config", &["doctor", "--json"], 1),
            // Not an error: a status document, exit 1 because nothing is verified.
            ("status_json_not_installed", &["status", "real", "--json"], 1),
        ],
    );
}
