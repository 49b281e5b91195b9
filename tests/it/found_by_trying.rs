//! Regressions found by trying oyster as a hostile user would, each named after what broke.

use crate::common::{args, free_port, Args, TestContext};
use crate::common::{has_all, has_none};

/// `agent VERB --stack NAME --wait 4 --settle-ms 300`, and `--port P` for the verbs that
/// take one (the root and Node are pinned: [`TestContext::with_pinned_host`]).
fn stack(verb: &str, name: &str, port: u16) -> Args {
    let a = args(&["agent", verb]).stack(name).wait(4, 300);
    if verb != "restart" && verb != "start" {
        a.port(port)
    } else {
        a
    }
}

#[test]
fn a_failed_restart_of_an_unchanged_job_keeps_the_plist() {
    let t = TestContext::with_pinned_host();
    let root = t.host_root();
    let port = free_port();
    t.run(stack("install", "rv", port)).ok();
    let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.rv.plist");
    let good = std::fs::read(&plist).unwrap();
    TestContext::fixture_flag(&root, "crash-on-start", "");
    let e = t.run(stack("restart", "rv", port)).fails_with(1).stderr();
    has_none(&e, &["removed"]);
    assert_eq!(std::fs::read(&plist).unwrap(), good, "the plist is still installed");
    std::fs::remove_file(root.join("host-service/crash-on-start")).unwrap();
    t.run(stack("restart", "rv", port)).ok();
}

#[test]
fn a_huge_wait_is_invalid_input_not_a_panic() {
    let t = TestContext::new();
    for args in [
        vec!["agent", "restart", "--wait", "18446744073709551615"],
        vec!["agent", "install", "--settle-ms", "18446744073709551615"],
        vec!["host", "start", "--settle-ms", "99999999999"],
    ] {
        let e = t.run(&args).fails_with(2).stderr();
        assert!(e.contains("up to"), "{args:?}: {e}");
    }
}

#[test]
fn uninstall_after_stop_leaves_the_label_enabled() {
    let t = TestContext::with_pinned_host();
    let port = free_port();
    t.run(stack("install", "en", port)).ok();
    t.run(["agent", "stop", "--stack", "en"]).ok();
    let uid = nix::unistd::getuid();
    let disabled = t.sim(&["print-disabled", &format!("gui/{uid}")]).ok().stdout();
    has_all(&disabled, &["com.oysterun.host.en"]);
    t.run(["agent", "uninstall", "--stack", "en"]).ok();
    let after = t.sim(&["print-disabled", &format!("gui/{uid}")]).ok().stdout();
    has_none(&after, &["\"com.oysterun.host.en\" => disabled"]);
    // The identity files named a pid that is gone: removed with the job.
    let run = t.home.join(".oysterun-stacks/en/run");
    assert!(!run.join("oysterun-host-en.pid").exists());
    assert!(!run.join("oysterun-host-en.origin.tsv").exists());
}

#[test]
fn a_refused_install_writes_no_config() {
    let t = TestContext::with_pinned_host();
    // An install with no --port, for a stack that has none yet.
    let no_port = args(&["agent", "install"]).stack("noport").wait(4, 300);
    t.run(no_port).fails_with(2).stderr_has_all(&["no port yet"]);
    assert!(
        !t.home.join(".oysterun-stacks/noport/host/config.json").exists(),
        "no config written for a stack that was refused"
    );
    // And it is no phantom stack afterwards.
    let list = t.run(["agent", "list", "--json"]).ok().stdout();
    has_none(&list, &["noport"]);
    t.run(["agent", "status", "--stack", "noport"]).fails_with(2);
}

#[test]
fn rerunning_setup_keeps_the_recorded_connection_mode() {
    let t = TestContext::with_pinned_host_no_launchd();
    t.write_config(r#"{"connection_mode": "managed"}"#);
    let r = t.run(["setup", "--no-start"]).ok();
    r.stdout_has("(mode: managed)");
    assert_eq!(t.read_config()["connection_mode"], "managed");
    t.run(["setup", "--no-start", "--mode", "cloud-direct"]).ok();
    assert_eq!(t.read_config()["connection_mode"], "cloud-direct");
}

#[test]
fn a_verified_host_on_a_stale_plist_is_said_to_be_stale() {
    let t = TestContext::with_claude();
    let port = free_port();
    t.run(stack("install", "st", port)).ok();
    // A provider change the Host has not been given yet.
    t.run(["providers", "set", "claude", "", "--stack", "st"]).ok();
    let st = t.run(["agent", "status", "--json", "--stack", "st"]).ok().json();
    assert_eq!(st["summary"], "stale", "{st}");
    t.run(["agent", "list"]).ok().stdout_has_all(&[" stale "]);
}

/// Where there is no launchd, setup starts the Host directly; the everyday `status` and `list`
/// see it, and `stop`/`restart` point at the `host` commands instead of "not installed".
#[test]
fn the_everyday_verbs_see_a_directly_started_host() {
    let t = TestContext::with_pinned_host_no_launchd();
    let port = free_port().to_string();
    t.run(args(&["host", "start"]).stack("dh").port(&port).wait(10, 300)).ok();
    let st = t.run(["status", "--json", "--stack", "dh"]).ok().json();
    assert_eq!(
        (st["summary"].as_str(), st["managed_by"].as_str(), st["running"].as_bool()),
        (Some("direct"), Some("direct"), Some(true)),
        "{st}"
    );
    t.run(["list"]).ok().stdout_has_all(&["dh", " direct "]);
    t.run(["stop", "--stack", "dh"])
        .fails_with(1)
        .stderr_has_all(&["started directly", "oyster host stop --stack dh"]);
    t.run(["host", "stop", "--stack", "dh"]).ok();
}
