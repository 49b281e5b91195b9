//! The Oysterun root is remembered per stack (`oyster_root` in its config.json), so `--root`
//! is needed at most once: after `agent uninstall`, for `host start`, and for a second stack
//! (the root the other stacks remember), with the "why this root" line saying so.

use std::path::Path;

use crate::common::{args, free_port, real_node, TestContext};

fn node() -> String {
    real_node().display().to_string()
}

fn config(t: &TestContext, stack: &str) -> serde_json::Value {
    let p = t.home.join(".oysterun-stacks").join(stack).join("host/config.json");
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

#[test]
fn the_root_given_once_is_remembered_for_host_start_after_uninstall_and_for_a_second_stack() {
    let mut t = TestContext::new();
    t.use_sim();
    let root = t.fixture_root("checkout");
    let root_s = std::fs::canonicalize(&root).unwrap().display().to_string();
    let port = free_port().to_string();
    let timing = ["--wait", "10", "--settle-ms", "200"];
    let mut install = vec!["agent", "install", "--stack", "rr", "--root", &root_s, "--node-bin"];
    let n = node();
    install.extend([n.as_str(), "--port", &port]);
    install.extend(timing);
    t.run(&install).ok();
    assert_eq!(config(&t, "rr")["oyster_root"], root_s.as_str());
    t.run(["agent", "uninstall", "--stack", "rr"]).ok();
    assert!(!t.home.join("Library/LaunchAgents/com.oysterun.host.rr.plist").exists());

    // No plist, no --root, no OYSTERUN_ROOT: the stack's own remembered root.
    let mut start = vec!["host", "start", "--stack", "rr", "--node-bin", &n];
    start.extend(timing);
    t.run(&start).ok();
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(t.home.join(".oysterun-stacks/rr/run/oyster-exec.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["argv"][1], format!("{root_s}/host-service/server.mjs").as_str());
    t.run(["host", "stop", "--stack", "rr"]).ok();

    // A second stack: the root the other stack remembers, and setup says why.
    let port2 = free_port().to_string();
    let r = t.run(args(&["setup"]).stack("rr2").node(&n).port(&port2).extra(&["--no-start"])).ok();
    r.stdout_has_all(&["root:", "the root stack rr remembers"]);
    assert_eq!(config(&t, "rr2")["oyster_root"], root_s.as_str());

    // A remembered root that no longer holds the Host is passed over aloud, never used.
    std::fs::remove_file(Path::new(&root_s).join("host-service/server.mjs")).unwrap();
    t.run(&start).fails_with(1).stderr_has_all(&["the root remembered in", "looking further"]);
}
