//! Values refused where they enter, through the binary (docs/behaviour.md §4, §9): an
//! overflowing `OYSTER_LAUNCHCTL_TIMEOUT_SECS`, an unexpanded or relative config or stacks
//! directory, a stored relative path or port 0, control characters in `--root`, and a provider
//! command whose directory cannot go on PATH; and `agent uninstall` with no launchctl at all.
//! Each refusal names the value and changes nothing. Every run is bounded (`bounded.rs`).

use std::time::Duration;

use crate::bounded::{bounded, snapshot, Snapshot};
use crate::common::{args, fixture_root_at, free_port, real_node, TestContext};

/// Issue 12 item 10: `OYSTER_LAUNCHCTL_TIMEOUT_SECS` larger than any duration is invalid input
/// (exit 2 naming the variable, never a panic's 101) for every verb that calls launchctl, and
/// such a refused run changes nothing — `regenerate` does not write the plist and say "not
/// reloaded", `uninstall` does not remove the plist of a job it cannot boot out.
#[test]
fn an_overflowing_launchctl_timeout_is_invalid_input_and_changes_nothing() {
    let t = TestContext::with_pinned_host();
    let port = free_port().to_string();
    let host = ["--stack", "to", "--port", &port];
    t.run([&["agent", "regenerate", "--no-restart"][..], &host].concat()).ok();
    // A definition change waiting to be applied, so a regenerate would have something to write.
    t.run(["providers", "set", "codex", "/opt/x/codex", "--stack", "to"]).ok();
    let before = snapshot(&t.home, true);
    let huge = [("OYSTER_LAUNCHCTL_TIMEOUT_SECS", "18446744073709551615")];
    for verb in ["install", "restart", "uninstall", "regenerate"] {
        let args: Vec<&str> = if verb == "uninstall" {
            vec!["agent", verb, "--stack", "to"]
        } else {
            [&["agent", verb][..], &host, &["--wait", "5"]].concat()
        };
        let r = bounded(&t, &args, &huge, Duration::from_secs(20));
        let e = r.stderr();
        assert_eq!(r.code, Some(2), "{verb}: {e}");
        assert!(
            e.contains("OYSTER_LAUNCHCTL_TIMEOUT_SECS") && !e.contains("panicked"),
            "{verb}: {e}"
        );
        assert_eq!(snapshot(&t.home, true), before, "{verb} changed files");
    }
    // On a fresh stack, install refuses before its config sync creates anything.
    let fresh = ["agent", "install", "--stack", "fresh", "--port", &port];
    let r = bounded(&t, &fresh, &huge, Duration::from_secs(20));
    assert_eq!(r.code, Some(2), "{}", r.stderr());
    assert!(
        !t.home.join(".oysterun-stacks/fresh/host/config.json").exists(),
        "install wrote the config before refusing"
    );
    for args in
        [vec!["agent", "status", "--stack", "to", "--json"], vec!["doctor", "--stack", "to"]]
    {
        let r = bounded(&t, &args, &huge, Duration::from_secs(20));
        assert_eq!(r.code, Some(1), "{args:?}: {}", r.stderr());
        assert!(
            r.stdout.contains("OYSTER_LAUNCHCTL_TIMEOUT_SECS") && !r.stderr().contains("panicked"),
            "{args:?}: {}",
            r.stdout
        );
    }
}

/// Issue 12 item 10: with launchctl missing, `agent uninstall` still removes the plist, says the
/// job could not be booted out, and exits 0.
#[test]
fn uninstall_without_launchctl_removes_the_plist_and_says_it_could_not_boot_out() {
    let t = TestContext::with_pinned_host_no_launchd();
    t.run(args(&["agent", "regenerate", "--no-restart"]).port(free_port())).ok();
    let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.plist");
    assert!(plist.exists());
    let r = bounded(
        &t,
        &["agent", "uninstall"],
        &[("OYSTER_LAUNCHCTL", "/nonexistent")],
        Duration::from_secs(10),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr());
    assert!(!plist.exists(), "the plist is removed");
    assert!(
        r.stderr().contains("could not be booted out") && r.stderr().contains("/nonexistent"),
        "{}",
        r.stderr()
    );
    assert!(t.config_path().exists(), "the config is kept");
}

/// §4/§9 values refused where they enter: `OYSTERUN_CONFIG_DIR='~/.x'` and a relative
/// `OYSTERUN_STACKS_DIR` (nothing created in the working directory or HOME), a stored
/// `default_browse_path` that is not absolute and `port: 0` (file and key named, file
/// untouched, no `./~` or `./agents` created).
#[test]
fn unexpanded_and_relative_values_are_refused_where_they_enter() {
    let t = TestContext::with_pinned_host_no_launchd();
    let root = t.host_root();
    let cwd = t.path("");
    let listing = || -> Vec<_> {
        std::fs::read_dir(&cwd)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n != "runs")
            .collect()
    };
    let cwd_before = listing();
    let port = free_port().to_string();
    let root_s = root.display().to_string();
    let verbs: Vec<Vec<&str>> = vec![
        vec!["config", "sync"],
        vec!["providers", "set", "claude", "/x/claude"],
        vec!["agent", "print"],
        vec!["agent", "regenerate", "--no-restart"],
        vec!["setup", "--no-start"],
        vec!["host", "start", "--root", &root_s, "--wait", "3"],
    ];
    for (var, value) in [("OYSTERUN_CONFIG_DIR", "~/.x"), ("OYSTERUN_STACKS_DIR", "rel/stacks")] {
        for v in &verbs {
            // `--port` only where the command takes one (it is not global).
            let takes_port =
                matches!(v[0], "config" | "setup" | "host") || v[..2] == ["agent", "regenerate"];
            let mut args: Vec<&str> = [&["--stack", "vals"][..], v].concat();
            if takes_port {
                args.extend(["--port", port.as_str()]);
            }
            let r = bounded(&t, &args, &[(var, value)], Duration::from_secs(10));
            assert_eq!(r.code, Some(2), "{var} {args:?}: {}", r.stderr());
            assert!(r.stderr().contains(var), "{var} {args:?}: {}", r.stderr());
        }
    }
    let cwd_after = listing();
    assert_eq!(cwd_after, cwd_before, "something was created in the working directory");
    assert_eq!(snapshot(&t.home, false), Snapshot::new(), "something was created in HOME");

    for (key, value) in [
        ("default_browse_path", "\"~/OysterunAgents\""),
        ("default_browse_path", "\"agents\""),
        ("default_browse_path", "\"\""),
        ("port", "0"),
    ] {
        let text = format!("{{\"history\": {{\"s1\": 1}}, \"{key}\": {value}}}");
        t.write_config(&text);
        for args in [vec!["setup", "--no-start"], vec!["agent", "print"], vec!["config", "sync"]] {
            let r = bounded(&t, &args, &[], Duration::from_secs(10));
            let e = r.stderr();
            assert_eq!(r.code, Some(2), "{key}={value} {args:?}: {e}");
            assert!(
                e.contains(".oysterun/config.json") && e.contains(&format!("`{key}`")),
                "{key}={value} {args:?}: names the file and key: {e}"
            );
            assert_eq!(std::fs::read_to_string(t.config_path()).unwrap(), text);
        }
        assert!(!t.home.join("OysterunAgents").exists());
    }
    let cwd_after = listing();
    assert_eq!(cwd_after, cwd_before, "setup created a relative AgentFolder");
}

/// §4/§8: control characters in `--root` (ESC, form feed, 0x01) are refused with exit 2 naming
/// the flag, and the terminal never sees them raw (no ESC byte in stdout or stderr).
#[test]
fn control_characters_in_root_are_refused_naming_the_flag_and_shown_escaped() {
    let t = TestContext::new();
    let port = free_port().to_string();
    for (name, ch) in [("ESC", '\u{1b}'), ("form feed", '\u{0c}'), ("0x01", '\u{01}')] {
        let root = fixture_root_at(&t.path(&format!("ro{ch}[31mot")));
        let root_s = root.to_str().unwrap();
        let node = real_node();
        for verb in [
            &["agent", "print"][..],
            &["agent", "regenerate", "--no-restart"],
            &["agent", "install", "--no-start"],
            &["setup", "--no-start"],
            &["host", "start"],
        ] {
            let args: Vec<&str> = [
                verb,
                &[
                    "--stack",
                    "cc",
                    "--port",
                    &port,
                    "--root",
                    root_s,
                    "--node-bin",
                    node.to_str().unwrap(),
                ],
            ]
            .concat();
            let r = bounded(&t, &args, &[], Duration::from_secs(10));
            let e = r.stderr();
            assert_eq!(r.code, Some(2), "{name} {verb:?}: {e}");
            assert!(
                e.contains("--root") && e.contains("control character"),
                "{name} {verb:?}: {e}"
            );
            for out in [r.stdout.as_bytes(), r.stderr.as_slice()] {
                assert!(
                    !out.iter().any(|b| *b < 0x20 && *b != b'\n' && *b != b'\t'),
                    "{name} {verb:?}: a raw control byte reached the terminal: {out:?}"
                );
            }
            assert!(!t.home.join("Library/LaunchAgents/com.oysterun.host.cc.plist").exists());
        }
    }
}

/// §9 / issue 12 item 7: `providers set` refuses a command whose directory cannot go into the
/// Host's PATH (a `:` or a control character) with exit 2, where it enters — it used to be
/// accepted and then block every later regenerate, setup and host start.
#[test]
fn a_provider_command_whose_directory_cannot_go_on_path_is_refused_where_it_enters() {
    let t = TestContext::new();
    t.write_config(r#"{"history": {"s1": "keep"}}"#);
    let before = std::fs::read(t.config_path()).unwrap();
    for cmd in [
        "/t/tools:v2/bin/claude",
        "/t/to\u{1b}[31mols/claude",
        "/t/form\u{0c}feed/claude",
        "/t/one\u{01}/claude",
    ] {
        let r = bounded(&t, &["providers", "set", "claude", cmd], &[], Duration::from_secs(10));
        let e = r.stderr();
        assert_eq!(r.code, Some(2), "{cmd:?}: {e}");
        assert!(e.contains("PATH") && e.contains("claude"), "{cmd:?}: {e}");
        for out in [r.stdout.as_bytes(), r.stderr.as_slice()] {
            assert!(
                !out.iter().any(|b| *b < 0x20 && *b != b'\n'),
                "{cmd:?}: a raw control byte reached the terminal"
            );
        }
        assert_eq!(std::fs::read(t.config_path()).unwrap(), before, "{cmd:?}");
    }
    // A `:` in the file name itself is harmless: only the directory goes on PATH.
    t.run(["providers", "set", "claude", "/t/bin/cla:ude"]).ok();
}
