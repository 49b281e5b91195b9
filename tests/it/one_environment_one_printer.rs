//! The house's promises that cut across commands: one launch environment (the plist, a
//! directly started Host and doctor agree on it), and one printer (a closed stdout ends a
//! command quietly, never with a panic).

use std::collections::BTreeMap;
use std::process::Stdio;

use crate::common::{args, free_port, plistlib, TestContext};

#[test]
fn agent_print_host_start_and_doctor_agree_on_the_environment() {
    let mut t = TestContext::new();
    t.fake_exe(&t.home.join(".local/bin/claude"));
    let root = t.fixture_root("root");
    // Root and node through the environment, so all three commands plan the same Host.
    t.extra_env.push(("OYSTERUN_ROOT".into(), root.display().to_string()));
    t.pin_node();
    let port = free_port().to_string();
    t.run(args(&["config", "sync"]).stack("env").port(&port)).ok();
    let plist = plistlib(&t.run(["agent", "print", "--stack", "env"]).ok().0.stdout);
    let generated: BTreeMap<String, String> =
        serde_json::from_value(plist["EnvironmentVariables"].clone()).unwrap();
    t.run(["host", "start", "--stack", "env", "--wait", "10"]).ok();
    let st = t.run(["host", "status", "--json", "--stack", "env"]).ok().json();
    let pid = u32::try_from(st["pid"].as_u64().unwrap()).unwrap();
    let live: BTreeMap<String, String> = t
        .host_environ(pid)
        .into_iter()
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
        .collect();
    // The directly started Host has exactly the plist's variables plus launchd's base, and
    // nothing from the caller's environment (OYSTERUN_ROOT above is the caller's).
    let base = ["HOME", "USER", "LOGNAME", "SHELL", "TMPDIR"];
    for (k, v) in &generated {
        assert_eq!(live.get(k), Some(v), "{k}");
    }
    for k in live.keys() {
        assert!(
            generated.contains_key(k) || base.contains(&k.as_str()),
            "{k} leaked into the Host"
        );
    }
    // Doctor reports exactly the environment that Host was started with.
    let d = t.run(["doctor", "--json", "--stack", "env"]).json();
    let said: BTreeMap<String, String> = serde_json::from_value(d["environment"].clone()).unwrap();
    assert_eq!(said, live, "doctor and the live Host disagree");
    t.run(["host", "stop", "--stack", "env"]).ok();
}

#[test]
fn a_closed_stdout_ends_a_command_quietly_with_its_own_status() {
    let t = TestContext::new();
    t.run(["config", "sync"]).ok();
    for args in [
        vec!["doctor"],
        vec!["config", "show"],
        vec!["providers", "status"],
        vec!["agent", "status"],
        vec!["completions", "bash"],
    ] {
        // A pipe whose reader is gone before oyster starts: every write meets EPIPE.
        let (reader, writer) = nix::unistd::pipe().unwrap();
        drop(reader);
        let out = t
            .cmd()
            .args(&args)
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{args:?}: {err}");
        // The command's own status, as with a reader that stayed (doctor and status fail
        // here: no Host).
        let own = t.run(&args).code();
        assert_eq!(out.status.code(), Some(own), "{args:?}: {err}");
    }
}

/// A path the user names (`man --dir`, `mdm profile --output`) is one line in every message
/// about it, its refusals and failures included: a newline in it never forges a line.
#[test]
fn a_path_with_a_newline_is_one_line_in_every_message_about_it() {
    let t = TestContext::new();
    std::fs::write(t.path("afile"), "x").unwrap();
    let forged = "\nALL OK";
    let cases: Vec<Vec<String>> = vec![
        // A directory that cannot be created (under a file).
        vec!["man".into(), "--dir".into(), format!("{}/x{forged}", t.path("afile").display())],
        // A directory that does not exist.
        vec![
            "mdm".into(),
            "profile".into(),
            "--output".into(),
            format!("{}/no{forged}/p.mobileconfig", t.path("").display()),
        ],
        // A file that cannot be put in place (a trailing slash).
        vec![
            "mdm".into(),
            "profile".into(),
            "--output".into(),
            format!("{}/q{forged}/", t.path("").display()),
        ],
        // A directory named as the file.
        vec![
            "mdm".into(),
            "profile".into(),
            "--output".into(),
            format!("{}/d{forged}", t.path("").display()),
        ],
    ];
    std::fs::create_dir_all(t.path("d\nALL OK")).unwrap();
    for args in cases {
        let r = t.run(&args);
        assert_ne!(r.code(), 0, "{args:?}");
        let e = r.stderr();
        assert!(
            !e.lines().any(|l| l.starts_with("ALL OK")) && e.contains("\\nALL OK"),
            "{args:?}:\n{e}"
        );
    }
}
