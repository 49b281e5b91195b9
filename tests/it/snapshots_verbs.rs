//! Whole outputs of the everyday verbs as snapshots (human and `--json`), from the real
//! binary, filtered as `snapshots.rs` filters them: every user-visible command is checked as a
//! whole here or there, and `contains` is kept for properties.

use crate::common::{free_port, TestContext};
use crate::snapshots::{installed, settings, snap, snap_table};

/// `snap` for a document whose key order and values are the contract: pretty JSON, filtered.
#[track_caller]
fn snap_json(name: &str, t: &TestContext, args: &[&str], ports: &[u16]) {
    let r = t.run(args);
    let mut s = settings(t, ports);
    s.add_filter(r#""pid": \d+"#, r#""pid": "[PID]""#);
    s.bind(|| {
        insta::assert_snapshot!(
            name,
            format!(
                "$ oyster {}\nexit: {}\n{}",
                args.join(" "),
                r.code(),
                r.stdout()
            )
        )
    });
}

#[test]
fn the_lifecycle_verbs_say_what_they_did() {
    let (t, port) = installed();
    snap(
        "verb_restart",
        &t,
        &["restart", "snap", "--settle-ms", "200"],
        &[port],
    )
    .ok();
    snap("verb_stop", &t, &["stop", "snap"], &[port]).ok();
    snap(
        "verb_start",
        &t,
        &["start", "snap", "--settle-ms", "200"],
        &[port],
    )
    .ok();
    snap("verb_uninstall", &t, &["uninstall", "snap"], &[port]).ok();
    snap(
        "verb_install",
        &t,
        &[
            "install",
            "snap",
            "--port",
            &port.to_string(),
            "--settle-ms",
            "200",
        ],
        &[port],
    )
    .ok();
    t.run(["uninstall", "snap"]).ok();
}

#[test]
fn the_config_and_provider_verbs_show_their_documents() {
    let (t, port) = installed();
    snap("config_show", &t, &["config", "show", "snap"], &[port]).ok();
    snap_json(
        "config_show_json",
        &t,
        &["config", "show", "snap", "--json"],
        &[port],
    );
    snap(
        "config_sync_unchanged",
        &t,
        &["config", "sync", "snap"],
        &[port],
    )
    .ok();
    snap(
        "providers_set_disable",
        &t,
        &["providers", "set", "codex", "", "--stack", "snap"],
        &[port],
    )
    .ok();
    snap(
        "providers_auto",
        &t,
        &["providers", "auto", "codex", "--stack", "snap"],
        &[port],
    )
    .ok();
    snap_json("list_json", &t, &["list", "--json"], &[port]);
    snap_table("status_all", &t, &["status", "--all"], &[port]).ok();
    t.run(["uninstall", "snap"]).ok();
}

#[test]
fn the_direct_host_verbs_say_what_they_did() {
    let port = free_port();
    let t = TestContext::with_claude();
    let p = port.to_string();
    snap(
        "host_start",
        &t,
        &["host", "start", "dh", "--port", &p, "--settle-ms", "200"],
        &[port],
    )
    .ok();
    snap("host_status", &t, &["host", "status", "dh"], &[port]).ok();
    snap("host_stop", &t, &["host", "stop", "dh"], &[port]).ok();
}

#[test]
fn version_and_cleanup_on_a_fresh_machine() {
    let t = TestContext::new();
    snap("version", &t, &["version"], &[]).ok();
    snap(
        "version_verbose_no_stack",
        &t,
        &["version", "--verbose"],
        &[],
    )
    .ok();
    snap("cleanup_nothing", &t, &["cleanup", "--dry-run"], &[]).ok();
}
