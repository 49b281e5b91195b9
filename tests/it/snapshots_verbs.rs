//! Whole outputs of the everyday verbs as snapshots (human and `--json`), from the real
//! binary, filtered as `snapshots.rs` filters them: every user-visible command is checked as a
//! whole here or there, and `contains` is kept for properties.

use crate::common::{free_port, TestContext};
use crate::snapshots::{installed, settings, snap, snap_table, snaps};
use crate::snapshots_more::snap_docs;

/// `snap` for a document whose key order and values are the contract: pretty JSON, filtered.
#[track_caller]
fn snap_json(name: &str, t: &TestContext, args: &[&str], ports: &[u16]) {
    let r = t.run(args);
    let mut s = settings(t, ports);
    s.add_filter(r#""pid": \d+"#, r#""pid": "[PID]""#);
    s.bind(|| {
        insta::assert_snapshot!(
            name,
            format!("$ oyster {}\nexit: {}\n{}", args.join(" "), r.code(), r.stdout())
        )
    });
}

#[test]
fn the_lifecycle_verbs_say_what_they_did() {
    let (t, port) = installed();
    let p = port.to_string();
    snaps(
        &t,
        &[port],
        &[
            ("verb_restart", &["restart", "snap", "--settle-ms", "200"], 0),
            ("verb_stop", &["stop", "snap"], 0),
            ("verb_start", &["start", "snap", "--settle-ms", "200"], 0),
            ("verb_uninstall", &["uninstall", "snap"], 0),
            ("verb_install", &["install", "snap", "--port", &p, "--settle-ms", "200"], 0),
        ],
    );
    t.run(["uninstall", "snap"]).ok();
}

#[test]
fn the_config_and_provider_verbs_show_their_documents() {
    let (t, port) = installed();
    snap("config_show", &t, &["config", "show", "snap"], &[port]).ok();
    snap_json("config_show_json", &t, &["config", "show", "snap", "--json"], &[port]);
    snaps(
        &t,
        &[port],
        &[
            ("config_sync_unchanged", &["config", "sync", "snap"], 0),
            ("providers_set_disable", &["providers", "set", "codex", "", "--stack", "snap"], 0),
            ("providers_auto", &["providers", "auto", "codex", "--stack", "snap"], 0),
        ],
    );
    snap_json("list_json", &t, &["list", "--json"], &[port]);
    snap_table("status_all", &t, &["status", "--all"], &[port]).ok();
    t.run(["uninstall", "snap"]).ok();
}

/// A Host started directly: its start, status (human and JSON), stop, and status once stopped.
#[test]
fn the_direct_host_verbs_say_what_they_did() {
    let port = free_port();
    let t = TestContext::with_claude();
    let p = port.to_string();
    snaps(
        &t,
        &[port],
        &[
            ("host_start", &["host", "start", "dh", "--port", &p, "--settle-ms", "200"], 0),
            ("host_status", &["host", "status", "dh"], 0),
        ],
    );
    let json: &[&str] = &["host", "status", "dh", "--json"];
    snap_docs(&t, &[port], &[("host_status_json_direct", json, 0)]);
    snaps(&t, &[port], &[("host_stop", &["host", "stop", "dh"], 0)]);
    snap_docs(&t, &[port], &[("host_status_json_stopped", json, 1)]);
}

#[test]
fn version_and_cleanup_on_a_fresh_machine() {
    let t = TestContext::new();
    snaps(
        &t,
        &[],
        &[
            ("version", &["version"], 0),
            ("version_verbose_no_stack", &["version", "--verbose"], 0),
            ("cleanup_nothing", &["cleanup", "--dry-run"], 0),
        ],
    );
}
