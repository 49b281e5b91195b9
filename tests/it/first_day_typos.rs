//! A hostile pass over issues 31 (the first day) and 32 (fleets) as they stand: a typo of a
//! stack in the verbs the first pass left out, and a refused first `host start`.

use crate::common::{args, doctor_check, free_port, shown_width, strip_ansi, TestContext};
use crate::common::{has_all, has_none};

/// A HOME with one custom stack, `snap`, that has a config (and so exists).
fn with_snap() -> TestContext {
    TestContext::with_stack_config("snap")
}

/// `host start --stack NAME --port P --root ROOT`.
fn host_start(stack: &str, port: u16, root: &std::path::Path) -> Vec<String> {
    args(&["host", "start"]).stack(stack).port(port).root(root).into()
}

#[test]
fn a_typo_of_a_stack_is_refused_by_host_config_and_providers_read_verbs_and_creates_nothing() {
    let t = with_snap();
    let typo = t.home.join(".oysterun-stacks/snp");
    for verb in [
        &["host", "status"][..],
        &["host", "stop"],
        &["config", "show"],
        &["providers", "status"],
        &["providers", "resolve"],
    ] {
        for json in [false, true] {
            let mut args: Vec<&str> = verb.to_vec();
            args.extend(["--stack", "snp"]);
            if json && verb[0] != "host" {
                args.push("--json");
            }
            let r = t.run(&args).fails_with(2);
            assert!(r.stderr().contains("did you mean `snap`?"), "{args:?}: {}", r.stderr());
            if json && verb[0] != "host" {
                assert_eq!(r.json()["error"]["exit_code"], 2, "{args:?}");
            }
            assert!(!typo.exists(), "{args:?} created {}", typo.display());
        }
    }
    // The stack named right is read.
    t.run(["config", "show", "--stack", "snap"]).ok();
    t.run(["providers", "status", "--stack", "snap"]).ok();
}

#[test]
fn a_refused_first_host_start_leaves_no_stack_behind() {
    let mut t = TestContext::new();
    t.pin_node();
    let root = t.fixture_root("root");
    // A --root without the Host (exit 2).
    let missing = t.path("no-such-root");
    let r = t.run(host_start("fresh", free_port(), &missing)).fails_with(2);
    t.assert_no_stack("fresh", &r.stderr());
    // Refused before anything was written: there is nothing to remove (the lock is outside the
    // stack), so nothing is said to be removed.
    assert!(!r.stderr().contains("created by"), "{}", r.stderr());
    // A port another process holds (exit 1).
    let held = std::net::TcpListener::bind(("127.0.0.1", free_port())).unwrap();
    let port = held.local_addr().unwrap().port();
    let r = t.run(host_start("fresh", port, &root)).fails_with(1);
    t.assert_no_stack("fresh", &r.stderr());
    assert_eq!(t.run(["list", "--json"]).ok().json()["stacks"], serde_json::json!([]));
}

#[test]
fn a_host_start_refused_for_a_managed_root_leaves_no_stack_behind() {
    let mut t = TestContext::new();
    t.pin_node();
    let forced = t.fixture_root("forced-root");
    force(&mut t, &[("root", forced.to_str().unwrap())]);
    let other = t.fixture_root("other-root");
    let r = t.run(host_start("fresh", free_port(), &other)).fails_with(1);
    r.stderr_has("managed by your organization");
    t.assert_no_stack("fresh", "");
}

#[test]
fn setups_question_fits_an_80_column_terminal_and_is_answered_after_it() {
    use std::os::unix::fs::PermissionsExt;
    let t = TestContext::new();
    let root = t.fixture_root("root");
    // A node prefix whose npm must never run (the question is cancelled).
    let bin = t.node_prefix();
    let npm = t.fake_exe(&bin.join("npm"));
    std::fs::set_permissions(&npm, std::fs::Permissions::from_mode(0o755)).unwrap();
    let port = free_port().to_string();
    let args = [
        "setup",
        "--stack",
        "st",
        "--port",
        &port,
        "--root",
        &root.display().to_string(),
        "--node-bin",
        &bin.join("node").display().to_string(),
    ];
    let r = t.pty(b"\r", args);
    let output = r["output"].as_str().unwrap();
    assert_eq!(r["prompted"], true, "{output}");
    assert!(output.trim_end().ends_with("no changes were made."), "{output}");
    for line in output.lines() {
        assert!(
            shown_width(line) <= 80 || !line.trim().contains(' '),
            "{} columns: {line:?}\n{output}",
            shown_width(line)
        );
    }
    // The answer is typed after the question's last word, on its line.
    assert!(output.contains("[y/s/N] \r\n"), "{output:?}");
    t.assert_nothing_executed();
}

#[test]
fn open_on_a_machine_with_nothing_set_up_sends_no_browser_to_the_default_port() {
    let mut t = TestContext::new();
    let bin = t.path("bin");
    t.fake_exe(&bin.join("xdg-open"));
    t.path_dirs.push(bin);
    for args in [&["open"][..], &["open", "staging"]] {
        let r = t.run(args).fails_with(1);
        assert!(
            r.stderr().contains("nothing is set up for stack") && r.stderr().contains("setup"),
            "{args:?}: {}",
            r.stderr()
        );
        assert!(r.stdout().is_empty(), "{args:?}: {}", r.stdout());
    }
    t.assert_nothing_executed();
    assert_eq!(std::fs::read_dir(&t.home).unwrap().count(), 0, "open wrote into HOME");
}

#[test]
fn mdm_profile_output_dash_is_stdout_not_a_file_named_dash() {
    let t = TestContext::new();
    let r = t.run(["mdm", "profile", "--output", "-"]).ok();
    let profile = crate::common::plistlib(r.stdout().as_bytes());
    assert_eq!(profile["PayloadType"], "Configuration", "{profile}");
    assert_eq!(r.stdout().as_bytes(), t.run(["mdm", "profile"]).ok().stdout().as_bytes());
    assert!(!t.path("-").exists(), "wrote a file named -");
}

#[test]
fn a_line_of_wide_characters_is_wrapped_by_the_columns_it_takes() {
    let mut t = TestContext::new();
    t.pin_node();
    let cjk = "数据".repeat(12);
    // A --root that does not hold the Host: its error line names the path, words of
    // ideographs that take 48 columns each but count 24 characters.
    let root = t.path(&format!("{cjk} {cjk} {cjk}"));
    let r = t.pty(b"", host_start("dev", free_port(), &root));
    let output = r["output"].as_str().unwrap();
    let words = output.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("has no host-service/server.mjs"), "{output}");
    for line in output.lines() {
        assert!(
            shown_width(line) <= 80 || !line.trim().contains(' '),
            "{} columns: {line:?}\n{output}",
            shown_width(line)
        );
    }
}

#[test]
fn lists_log_column_is_cut_as_shown_with_home_as_tilde() {
    let t = with_snap();
    // A HOME deep enough that the real log path does not fit an 80-column row.
    let r = t.pty(b"", ["list"]);
    let output = r["output"].as_str().unwrap();
    let row = output
        .lines()
        .map(strip_ansi)
        .find(|l| l.starts_with("snap "))
        .unwrap_or_else(|| panic!("{output}"));
    let log = row.split_whitespace().last().unwrap();
    // The path starts at `~/` and ends with the log's name, never at the temporary
    // directory HOME lives in.
    assert!(log.starts_with("~/") && log.ends_with("-host.log"), "{row:?}\n{output}");
    assert!(!row.contains("/tmp/"), "{row:?}");
}

#[test]
fn a_failed_login_qr_is_one_line_naming_where_to_log_in() {
    let t = TestContext::with_pinned_host();
    std::fs::write(
        t.host_root().join("host-service/setup.mjs"),
        "console.error('no QR today'); process.exit(3);\n",
    )
    .unwrap();
    let port = free_port();
    t.install("snap", port);
    let r = t.run(["qr", "snap"]).fails_with(1);
    // One line: no advice that fails the same way (`oyster qr`, `oysterun show-qr`), no
    // flag of another program; where the user logs in instead.
    r.stderr_has(&format!("no login QR for this Host (host-service/setup.mjs --show-qr shows none: it exited 3); log in at http://127.0.0.1:{port} instead"));
    assert!(
        !r.stderr().contains("oyster qr") && !r.stderr().contains("show-qr'"),
        "{}",
        r.stderr()
    );
    t.run(["uninstall", "snap"]).ok();
    t.wait_no_processes();
}

/// Points `t` at a managed preferences directory whose all-users file holds `pairs`.
fn force(t: &mut TestContext, pairs: &[(&str, &str)]) -> std::path::PathBuf {
    let mut d = plist::Dictionary::new();
    for (k, v) in pairs {
        d.insert((*k).into(), (*v).into());
    }
    t.managed_preferences("Managed Preferences", d)
}

#[test]
fn a_forced_node_or_root_that_does_not_work_is_the_profiles_not_a_flag_the_user_typed() {
    for (key, bad) in [("node_bin", "/nonexistent/node"), ("root", "/nonexistent/oysterun")] {
        let mut t = with_snap();
        let root = t.fixture_root("root");
        let file = force(&mut t, &[(key, bad)]);
        if key == "node_bin" {
            t.extra_env.push(("OYSTERUN_ROOT".into(), root.display().to_string()));
        } else {
            t.pin_node();
        }
        // The machine's setup, not the user's input: exit 1, the profile named, and the fix
        // the administrator's (a --node-bin or --root would be refused as managed).
        let r = t.run(["agent", "print", "--stack", "snap"]).fails_with(1);
        let err = r.stderr();
        has_all(&err, &[&format!("the managed {key} ({bad})")]);
        has_none(&err, &["--node-bin", "from --root"]);
        has_all(&err, &["ask your administrator", &file.display().to_string()]);
        let doc = t.run(["doctor", "snap", "--json"]).json();
        let check = doctor_check(&doc, "node/root");
        assert_eq!(check["status"], "fail", "{doc}");
        assert!(check["fix"].as_str().unwrap().contains("ask your administrator"), "{check}");
    }
}

#[test]
fn config_sync_port_of_a_stopped_host_does_not_say_it_still_runs() {
    let (t, old) = TestContext::with_stopped("snap");
    let new = free_port();
    let r = t.run(args(&["config", "sync", "snap"]).port(new)).ok();
    let out = r.stdout();
    has_none(&out, &["still runs"]);
    has_all(&out, &[&format!(
            "The Host is not running (its LaunchAgent still says port {old}); `oyster start snap` starts it on port {new}."
        )]);
    // Typed as told, it does.
    t.run(["start", "snap", "--settle-ms", "200"]).ok();
    assert_eq!(t.run(["status", "snap", "--json"]).ok().json()["port"], new);
    t.run(["uninstall", "snap"]).ok();
    t.wait_no_processes();
}

#[test]
fn bare_oyster_with_a_stack_names_status_instead_of_an_empty_verb() {
    let t = with_snap();
    let r = t.run(["--stack", "snap"]).fails_with(2);
    let err = r.stderr();
    has_none(&err, &["`oyster `"]);
    has_all(&err, &["`oyster status snap` shows that one"]);
}

#[test]
fn a_forced_provider_command_that_is_missing_is_fixed_by_the_administrator_not_by_providers_set() {
    let mut t = with_snap();
    t.pin_host_env();
    let mut intents = plist::Dictionary::new();
    intents.insert("claude".into(), "manual".into());
    intents.insert("codex".into(), "disabled".into());
    let mut d = plist::Dictionary::new();
    d.insert("claude_command".into(), "/nonexistent/corp/claude".into());
    d.insert("provider_command_intent".into(), plist::Value::Dictionary(intents));
    t.managed_preferences("Managed Preferences", d);
    // The config follows the profile.
    t.run(["config", "sync", "snap"]).ok();
    let setup = t.run(["setup", "snap", "--dry-run"]).ok().stdout();
    let status = t.run(["providers", "status", "--stack", "snap"]).ok().stdout();
    let doctor = t.run(["doctor", "snap"]).stdout();
    for (what, out) in [("setup", &setup), ("providers status", &status), ("doctor", &doctor)] {
        let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.contains("claude_command is forced by your organization")
                && words.contains("ask your administrator"),
            "{what}: {out}"
        );
        // Both would be refused as managed.
        assert!(
            !words.contains("providers set claude") && !words.contains("providers auto claude"),
            "{what}: {out}"
        );
        // codex is off because the profile says so, not the user.
        if what != "setup" {
            assert!(
                words.contains("disabled by your organization")
                    && !words.contains("disabled by the user"),
                "{what}: {out}"
            );
        }
    }
}

/// `host stop` of production on a machine where nothing was ever set up: not running, exit 0,
/// and HOME exactly as it was (no stack, no lock directory).
#[test]
fn host_stop_where_nothing_was_set_up_creates_nothing() {
    let t = TestContext::new();
    let before = crate::common::tree(&t.home);
    t.run(["host", "stop"]).ok().stdout_has_all(&["not running"]);
    assert_eq!(crate::common::tree(&t.home), before);
}
