//! Whole outputs of one stack's commands as snapshots (issue 28): `logs`, `kill`,
//! `agent regenerate` (unchanged, a dry run, `--no-restart`, a reload), `agent print`,
//! `providers resolve`/`status --json`, `doctor --json`, `config sync` that changes something,
//! `host status --json`, and errors under `--json` (one document on stdout). Filtered as
//! `snapshots.rs` filters them; `contains` is kept for properties elsewhere.

use crate::common::{args, free_port, Run, TestContext};
use crate::snapshots::{installed, settings, shown, snap};

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
fn kill_says_which_pid_it_ended_and_that_launchd_starts_it_again() {
    let (t, port) = installed();
    snap("kill", &t, &["kill", "snap"], &[port]).ok();
}

#[test]
fn agent_regenerate_unchanged_dry_run_no_restart_and_reload() {
    let (t, port) = installed();
    let p = &[port];
    // Nothing changed: said for the config and the plist, the Host left alone.
    snap(
        "regenerate_unchanged",
        &t,
        &[
            "agent",
            "regenerate",
            "--stack",
            "snap",
            "--settle-ms",
            "200",
        ],
        p,
    )
    .ok();
    snap(
        "regenerate_dry_run_unchanged",
        &t,
        &["agent", "regenerate", "--stack", "snap", "--dry-run"],
        p,
    )
    .ok();
    snap(
        "regenerate_no_restart_unchanged",
        &t,
        &["agent", "regenerate", "--stack", "snap", "--no-restart"],
        p,
    )
    .ok();
    // A manual codex in a directory of its own: the plist's PATH gains it.
    let codex = t.fake_exe(&t.home.join("tools/codex"));
    t.run([
        "providers",
        "set",
        "codex",
        codex.to_str().unwrap(),
        "--stack",
        "snap",
    ])
    .ok();
    snap(
        "regenerate_dry_run_changed",
        &t,
        &["agent", "regenerate", "--stack", "snap", "--dry-run"],
        p,
    )
    .ok();
    snap(
        "regenerate_no_restart_changed",
        &t,
        &["agent", "regenerate", "--stack", "snap", "--no-restart"],
        p,
    )
    .ok();
    // The plist is written, the running Host still has the old PATH: a reload gives it.
    snap(
        "regenerate_reload",
        &t,
        &[
            "agent",
            "regenerate",
            "--stack",
            "snap",
            "--settle-ms",
            "200",
        ],
        p,
    )
    .ok();
    t.assert_nothing_executed();
}

#[test]
fn agent_print_shows_the_plist_that_would_be_installed() {
    let (t, port) = installed();
    snap(
        "agent_print",
        &t,
        &["agent", "print", "--stack", "snap"],
        &[port],
    )
    .ok();
}

#[test]
fn providers_resolve_and_status_json() {
    let t = TestContext::with_claude();
    snap("providers_resolve", &t, &["providers", "resolve"], &[]).ok();
    snap_doc(
        "providers_resolve_json",
        &t,
        &["providers", "resolve", "--json"],
        &[],
    )
    .ok();
    t.run(["providers", "set", "codex", ""]).ok();
    snap_doc(
        "providers_status_json",
        &t,
        &["providers", "status", "--json"],
        &[],
    )
    .ok();
    t.assert_nothing_executed();
}

#[test]
fn doctor_json_on_a_verified_agent() {
    let (t, port) = installed();
    snap_doc(
        "doctor_verified_json",
        &t,
        &["doctor", "--stack", "snap", "--json"],
        &[port],
    )
    .ok();
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
fn host_status_json_direct_and_under_launchd() {
    let port = free_port();
    let t = TestContext::with_claude();
    t.run(args(&["host", "start", "dh"]).port(port).settle(200))
        .ok();
    snap_doc(
        "host_status_json_direct",
        &t,
        &["host", "status", "dh", "--json"],
        &[port],
    )
    .ok();
    t.run(["host", "stop", "dh"]).ok();
    snap_doc(
        "host_status_json_stopped",
        &t,
        &["host", "status", "dh", "--json"],
        &[port],
    );
    let (t, port) = installed();
    snap_doc(
        "host_status_json_launchd",
        &t,
        &["host", "status", "snap", "--json"],
        &[port],
    )
    .ok();
}

#[test]
fn errors_under_json_are_one_document_on_stdout() {
    let t = TestContext::with_claude();
    t.run(args(&["config", "sync", "real"]).port(18999)).ok();
    let r = snap_doc(
        "error_json_unknown_stack",
        &t,
        &["status", "--stack", "nope", "--json"],
        &[],
    )
    .fails_with(2);
    r.json();
    snap_doc(
        "error_json_unsupported_provider",
        &t,
        &["providers", "resolve", "gemini", "--json"],
        &[],
    )
    .fails_with(2)
    .json();
    t.write_config("{\"port\": 88");
    snap_doc(
        "error_json_corrupt_config",
        &t,
        &["providers", "status", "--json"],
        &[],
    )
    .fails_with(2)
    .json();
    // doctor reports a corrupt config as a failed check in its own document.
    snap_doc("doctor_json_corrupt_config", &t, &["doctor", "--json"], &[])
        .fails_with(1)
        .json();
    // Not an error: a status document, exit 1 because nothing is verified.
    snap_doc(
        "status_json_not_installed",
        &t,
        &["status", "real", "--json"],
        &[],
    )
    .fails_with(1)
    .json();
}
