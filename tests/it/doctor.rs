//! `oyster doctor` (docs/behaviour.md §8) on healthy, drifted, broken-manual and disabled set-ups,
//! `--probe` against honest and dishonest fakes, and redaction everywhere.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::has_all;
use crate::common::{args, free_port, TestContext};

fn ready() -> (TestContext, Vec<String>) {
    let t = TestContext::with_claude();
    t.run(args(&["agent", "install"]).stack("doc").port(free_port()).settle(200)).ok();
    (t, vec!["doctor".into(), "--stack".into(), "doc".into(), "--json".into()])
}

fn checks(v: &serde_json::Value) -> Vec<(String, String, String)> {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["check"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
                c["detail"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn status_of(v: &serde_json::Value, name: &str) -> String {
    checks(v)
        .into_iter()
        .find(|c| c.0 == name)
        .map(|c| c.1)
        .unwrap_or_else(|| panic!("no check {name} in {v}"))
}

#[test]
fn healthy_setup_is_all_ok_but_the_override_is_said() {
    let (t, args) = ready();
    let v = t.run(&args).ok().json();
    for (name, status, detail) in checks(&v) {
        // `agent install` sets no Host login: nobody could log in yet (host_login.rs).
        let want = if ["launchctl", "provider codex", "host login"].contains(&name.as_str()) {
            "warn"
        } else {
            "ok"
        };
        assert_eq!(status, want, "{name}: {detail}");
    }
    assert_eq!(status_of(&v, "live host"), "ok");
    let claude = &v["providers"][0];
    assert_eq!(
        (claude["state"].as_str(), claude["authentication"].as_str()),
        (Some("available"), Some("not_checked"))
    );
    assert_eq!(claude["resolved"], format!("{}/.local/bin/claude", t.home.display()));
    t.run(["doctor", "--stack", "doc"])
        .ok()
        .stdout_has_all(&["OYSTER_LAUNCHCTL override in effect"]);
    t.assert_nothing_executed();
}

#[test]
fn drift_between_plist_and_generator_is_a_warning_with_the_fix() {
    let (t, args) = ready();
    t.fake_exe(&t.home.join("bin/codex"));
    let v = t.run(&args).ok().json();
    assert_eq!(status_of(&v, "plist"), "warn");
    let detail = checks(&v).into_iter().find(|c| c.0 == "plist").unwrap().2;
    let home_bin = format!("{}/bin", t.home.display());
    has_all(&detail, &["+", &home_bin]);
    t.run(["doctor", "--stack", "doc"]).ok().stdout_has_all(&["oyster agent regenerate"]);
}

#[test]
fn a_broken_manual_command_fails_with_the_fix_and_disabled_is_fine() {
    let (t, args) = ready();
    t.run(["providers", "set", "claude", "/gone/claude", "--stack", "doc"]).ok();
    t.run(["providers", "set", "codex", "", "--stack", "doc"]).ok();
    let r = t.run(&args).fails_with(1);
    let v = r.json();
    assert_eq!(status_of(&v, "provider claude"), "fail");
    assert_eq!(status_of(&v, "provider codex"), "ok");
    assert_eq!(v["providers"][1]["state"], "disabled");
    t.run(["doctor", "--stack", "doc"])
        .fails_with(1)
        .stdout_has_all(&["oyster providers set claude /full/path"]);
}

#[test]
fn a_crashed_host_fails_the_launchd_check() {
    let (t, args) = ready();
    let pid =
        t.run(["agent", "status", "--stack", "doc", "--json"]).ok().json()["pid"].as_u64().unwrap();
    let root = t.path("root");
    TestContext::fixture_flag(&root, "crash-on-start", "");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    let t0 = Instant::now();
    loop {
        let v = t.run(&args).json();
        if status_of(&v, "launchd") == "fail" {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "{v}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn fake_provider(t: &TestContext, dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("claude");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        &p,
        format!("#!/bin/sh\necho \"executed $0 $*\" >> '{}'\n{body}\n", t.exec_log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn probe_runs_only_version_and_believes_only_the_right_banner() {
    let mut t = TestContext::new();
    t.pin_host_env();
    let dir = t.path("p");
    t.path_dirs.push(dir.clone());
    let cases: [(&str, &str, &str); 4] = [
        ("right banner", "echo '2.0.14 (Claude Code)'", "ok"),
        ("wrong banner", "echo 'dancer shell 0.1'", "fail"),
        ("hangs", "sleep 30", "fail"),
        ("megabytes", "head -c 4000000 /dev/zero | tr '\\0' 'x'", "fail"),
    ];
    for (name, body, want) in cases {
        let _ = std::fs::remove_file(&t.exec_log);
        fake_provider(&t, &dir, body);
        let t0 = Instant::now();
        let r = t.run(["doctor", "--probe", "--json"]);
        assert!(t0.elapsed() < Duration::from_secs(15), "{name} took {:?}", t0.elapsed());
        let v = r.json();
        assert_eq!(status_of(&v, "claude --version"), want, "{name}: {v}");
        if want == "fail" {
            assert_eq!(v["providers"][0]["state"], "unavailable", "{name}: not that provider");
        }
        let log = std::fs::read_to_string(&t.exec_log).unwrap();
        assert_eq!(log.lines().count(), 1, "{name}: exactly one execution");
        assert!(log.trim_end().ends_with("claude --version"), "{name}: only --version: {log}");
    }
    // Without --probe, nothing runs.
    let _ = std::fs::remove_file(&t.exec_log);
    t.run(["doctor", "--json"]);
    t.assert_nothing_executed();
}

#[test]
fn secrets_never_appear_in_status_doctor_or_config_output() {
    let (t, _) = ready();
    let cfg = t.home.join(".oysterun-stacks/doc/host/config.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&cfg).unwrap()).unwrap();
    v["auth_token"] = "SECRET-1".into();
    v["admin_password_hash"] = "SECRET-2".into();
    v["relay"] = serde_json::json!({"api_key": "SECRET-3", "refresh_token": "SECRET-4"});
    std::fs::write(&cfg, serde_json::to_vec(&v).unwrap()).unwrap();
    for args in [
        vec!["doctor", "--stack", "doc"],
        vec!["doctor", "--stack", "doc", "--json"],
        vec!["providers", "status", "--stack", "doc", "--json"],
        vec!["agent", "status", "--stack", "doc", "--json"],
        vec!["config", "show", "--stack", "doc"],
        vec!["config", "sync", "--stack", "doc"],
        vec!["agent", "regenerate", "--stack", "doc"],
    ] {
        let r = t.run(&args);
        let all = r.stdout() + &r.stderr();
        assert!(!all.contains("SECRET"), "{args:?}: {all}");
        // People see `~`; documents carry absolute paths and never `~` (docs/behaviour.md §10).
        if args.contains(&"--json") {
            assert!(!r.stdout().contains('~'), "{args:?} prints ~ in JSON: {all}");
        } else {
            assert!(!all.contains(t.home.to_str().unwrap()), "{args:?} shows the home path: {all}");
        }
    }
    let plist =
        std::fs::read_to_string(t.home.join("Library/LaunchAgents/com.oysterun.host.doc.plist"))
            .unwrap();
    assert!(!plist.contains("SECRET"));
    let audit =
        std::fs::read_to_string(t.home.join(".oysterun-stacks/doc/logs/service-control.jsonl"))
            .unwrap();
    assert!(!audit.contains("SECRET"));
}
