//! Oysterun's own entry points beside oyster's launch program (docs/behaviour.md §6a): its
//! dashboard-credentials step run as its runner runs it, `oyster host exec` refused without the
//! environment that names the Host, a plist Oysterun's installer wrote (noticed by `doctor` and
//! `status`, taken over by `regenerate`), and the plist naming oyster by the link it was run
//! through (a Homebrew upgrade replaces what the link points at).

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::common::has_all;
use crate::common::{args, doctor_check, free_port, plistlib, real_node, TestContext, BIN};
use crate::runner::start_direct;

#[test]
fn oysteruns_dashboard_credentials_entry_point_runs_as_its_runner_runs_it() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    let script = root.join("tool_scripts/stack_dashboard_credentials.mjs");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(
        &script,
        r#"import { writeFileSync } from "node:fs";
const e = process.env;
writeFileSync(e.OYSTERUN_STACK_DASHBOARD_CREDENTIALS_PROOF_PATH, JSON.stringify({
  args: process.argv.slice(2), cwd: process.cwd(), stack: e.OYSTERUN_STACK_NAME,
  origin: e.OYSTERUN_HOST_ORIGIN, config: e.OYSTERUN_CONFIG_DIR,
}));
console.log("dashboard credentials ready");
"#,
    )
    .unwrap();
    let port = free_port();
    start_direct(&t, &root, port).ok();
    let proof: Value = serde_json::from_slice(
        &std::fs::read(t.home.join(".oysterun-stacks/dr/run/stack_dashboard_credentials.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        proof,
        json!({
            "args": ["ensure"],
            "cwd": std::fs::canonicalize(&root).unwrap(),
            "stack": "dr",
            "origin": format!("http://localhost:{port}"),
            "config": t.home.join(".oysterun-stacks/dr/host"),
        })
    );
    let log_path = t.home.join(".oysterun-stacks/dr/logs/oysterun-host.log");
    let log = std::fs::read_to_string(&log_path).unwrap();
    has_all(&log, &["dashboard credentials ready"]);
    t.run(["host", "stop", "--stack", "dr"]).ok();

    // A failing entry point is logged; the Host starts anyway.
    std::fs::write(&script, "console.error('no credentials for you'); process.exit(3);\n").unwrap();
    start_direct(&t, &root, port).ok();
    let log = std::fs::read_to_string(&log_path).unwrap();
    has_all(
        &log,
        &[
            "no credentials for you",
            "stack_dashboard_credentials.mjs exited 3; the Host starts anyway",
        ],
    );
    t.run(["host", "stop", "--stack", "dr"]).ok();
}

#[test]
fn exec_without_the_environment_that_names_the_host_is_refused() {
    let t = TestContext::new();
    t.run(["host", "exec", "--stack", "dr"])
        .fails_with(2)
        .stderr_has_all(&["OYSTERUN_NODE_BIN is not set", "launch program"]);
    assert!(!t.home.join(".oysterun-stacks").exists(), "nothing written");
}

/// The plist Oysterun 1.5.3's installer writes (`install_oysterun_launch_agents.sh`).
fn oysteruns_plist(root: &Path, node: &Path, log: &Path) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>com.oysterun.host</string>
  <key>ProgramArguments</key>
  <array>
    <string>{root}/tool_scripts/run_oysterun_host.sh</string>
    <string>--stack</string>
    <string>production</string>
  </array>
  <key>WorkingDirectory</key>
  <string>{root}</string>
  <key>EnvironmentVariables</key>
  <dict>
    <key>OYSTERUN_NODE_BIN</key>
    <string>{node}</string>
    <key>PATH</key>
    <string>/usr/bin:/bin</string>
  </dict>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <true/>
  <key>StandardOutPath</key>
  <string>{log}</string>
  <key>StandardErrorPath</key>
  <string>{log}</string>
</dict>
</plist>
"#,
        root = root.display(),
        node = node.display(),
        log = log.display()
    )
}

#[test]
fn doctor_and_status_notice_a_plist_from_oysteruns_installer_and_regenerate_takes_it_over() {
    let t = TestContext::new();
    let root = t.fixture_root("oysterun");
    let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.plist");
    std::fs::create_dir_all(plist.parent().unwrap()).unwrap();
    let log = t.home.join(".oysterun/logs/oysterun-host.log");
    std::fs::write(&plist, oysteruns_plist(&root, &real_node(), &log)).unwrap();

    let doc = t.run(["doctor", "--json"]).json();
    let check = doctor_check(&doc, "plist");
    assert_eq!(check["status"], "warn", "{check}");
    let detail = check["detail"].as_str().unwrap();
    has_all(
        detail,
        &["Oysterun's own installer", "run_oysterun_host.sh", "oyster agent regenerate"],
    );
    t.run(["doctor"]).stdout_has_all(&["Oysterun's own installer"]);
    let st = t.run(["agent", "status", "--json"]).json();
    assert_eq!(st["installed_by"], "oysterun", "{st}");
    t.run(["agent", "status"])
        .stdout_has_all(&["Oysterun's own installer", "oyster agent regenerate"]);

    // Regenerate takes it over: the root comes from the runner it ran, the node from its pin.
    // Oysterun's plist names no port: given one from the allocator, not production's 8802.
    let port = free_port().to_string();
    t.run(args(&["agent", "regenerate", "--no-restart"]).port(&port))
        .ok()
        .stdout_has_all(&["written"]);
    let v = plistlib(&std::fs::read(&plist).unwrap());
    assert_eq!(v["ProgramArguments"], json!([BIN, "host", "exec", "--stack", "production"]));
    assert_eq!(v["EnvironmentVariables"]["OYSTERUN_REPO_ROOT"], json!(root));
    assert_eq!(v["EnvironmentVariables"]["OYSTERUN_NODE_BIN"], json!(real_node()));
    let st = t.run(["agent", "status", "--json"]).json();
    assert_eq!(st["installed_by"], "oyster", "{st}");
}

/// oyster run through a link keeps the link in `ProgramArguments`, whether the link was named
/// by its path or found on PATH: a Homebrew upgrade replaces what the link points at.
#[test]
fn the_plist_runs_oyster_by_the_link_it_was_invoked_through() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    let bin = t.path("prefix/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("oyster");
    std::os::unix::fs::symlink(BIN, &link).unwrap();
    let print = |program: &str| {
        let out = crate::common::output_ok(
            Command::new(program)
                .args(crate::common::args(&["agent", "print"]).host(&root))
                .env_clear()
                .env("HOME", &t.home)
                .env("PATH", &bin)
                .env("OYSTER_LAUNCHCTL", "none")
                .current_dir(t.path("")),
        );
        plistlib(&out.stdout)["ProgramArguments"][0].clone()
    };
    assert_eq!(print(link.to_str().unwrap()), json!(link));
    assert_eq!(print("oyster"), json!(link), "found on PATH");
}
