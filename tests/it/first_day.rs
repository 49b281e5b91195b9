//! The first day with oyster (docs/behaviour.md, "The first day"): bare `oyster`, errors a
//! script can read under `--json`, names that are not stacks, and help that offers only what
//! a command takes.

use crate::common::{args, doctor_check, free_port, recorder, shown_width, TestContext};
use crate::common::{has_all, has_none};
use crate::snapshots::{installed, snap_table};

#[test]
fn bare_oyster_shows_the_stacks_and_what_to_type_next() {
    let (t, port) = installed();
    snap_table("bare_oyster", &t, &[], &[port]).ok();
    // With no stack at all, the one line names setup (exit 0 either way).
    let fresh = TestContext::new();
    let r = fresh.run::<[&str; 0], &str>([]).ok();
    assert_eq!(r.stdout(), "No Oysterun stack on this machine yet; `oyster setup` sets one up.\n");
}

#[test]
fn a_json_error_is_one_document_on_stdout_with_the_text_still_on_stderr() {
    let (t, _) = installed();
    // A typo of a stack: the nearest name, exit 2, in both forms.
    let r = t.run(["status", "snp", "--json"]).fails_with(2);
    let doc = r.json();
    let err = &doc["error"];
    assert_eq!(err["kind"], "invalid");
    assert_eq!(err["exit_code"], 2);
    let message = err["message"].as_str().unwrap();
    assert!(message.contains("snp"), "{doc}");
    r.stderr_has(message);
    assert!(err["hint"].as_str().unwrap().contains("snap"), "{doc}");
    // A usage error under --json too.
    let r = t.run(["status", "--bogus", "--json"]).fails_with(2);
    assert_eq!(r.json()["error"]["kind"], "invalid");
    // Without --json, stdout stays empty.
    let r = t.run(["status", "snp"]).fails_with(2);
    assert_eq!(r.stdout(), "");
}

#[test]
fn all_and_oysteruns_reserved_names_are_not_stack_names() {
    let t = TestContext::new();
    let port = free_port().to_string();
    let r = t.run(args(&["install", "all"]).port(&port)).fails_with(2);
    r.stderr_has("--all");
    for name in ["local", "phone", "daily", "shared"] {
        let r = t.run(["setup", name, "--dry-run"]).fails_with(2);
        assert!(r.stderr().contains("reserved"), "{name}: {}", r.stderr());
        let r = t.run(["restart", "--stack", name]).fails_with(2);
        assert!(r.stderr().contains("reserved"), "{name}: {}", r.stderr());
    }
    // Nothing was created for any of them.
    assert!(!t.home.join(".oysterun-stacks").exists());
    assert!(!t.home.join("Library/LaunchAgents").exists());
}

#[test]
fn help_and_completion_offer_stack_only_where_a_command_takes_one() {
    let t = TestContext::new();
    for verb in [&["list"][..], &["completions"], &["cleanup"], &["man"], &["agent", "list"]] {
        let mut args = verb.to_vec();
        args.push("--help");
        let help = t.run(&args).ok().stdout();
        assert!(!help.contains("--stack <NAME>"), "{verb:?}: {help}");
    }
    for verb in [&["status"][..], &["restart"], &["providers", "set"], &["host", "exec"]] {
        let mut args = verb.to_vec();
        args.push("--help");
        let help = t.run(&args).ok().stdout();
        assert!(help.contains("--stack <NAME>"), "{verb:?}: {help}");
    }
    // bash: the words offered after `oyster list` and after `oyster status`.
    let script = t.run(["completions", "bash"]).ok().stdout();
    let opts_after = |case: &str| -> String {
        let at = script.find(&format!("        {case})")).unwrap_or_else(|| panic!("{case}"));
        let rest = &script[at..];
        let line = rest.lines().find(|l| l.trim_start().starts_with("opts=")).unwrap();
        line.to_owned()
    };
    assert!(!opts_after("oyster__subcmd__list").contains("--stack"));
    assert!(opts_after("oyster__subcmd__status").contains("--stack"));
    // `--stack` after such a verb is refused with its value, as before the verb.
    let r = t.run(["list", "--stack", "dev"]).fails_with(2);
    r.stderr_has("--stack dev would be ignored");
}

#[test]
fn doctor_refuses_a_typo_of_a_stack_as_every_verb_does() {
    let (t, _) = installed();
    for verb in ["doctor", "status", "restart", "logs"] {
        let r = t.run([verb, "snp"]).fails_with(2);
        assert!(r.stderr().contains("did you mean `snap`?"), "{verb}: {}", r.stderr());
    }
    // The stack named right is examined.
    t.run(["doctor", "snap"]).ok();
}

#[test]
fn config_sync_with_a_new_port_says_the_host_still_runs_on_the_old_one() {
    let (t, port) = installed();
    let new = free_port();
    let r = t.run(args(&["config", "sync"]).stack("snap").port(new)).ok();
    r.stdout_has_all(&[&format!(
            "The Host still runs on port {port}: run `oyster agent regenerate --stack snap` to move it to port {new}."
        )]);
    // Once regenerated, the same sync changes nothing and says nothing about the Host.
    t.run(["agent", "regenerate", "snap", "--settle-ms", "200"]).ok();
    let out = t.run(args(&["config", "sync"]).stack("snap").port(new)).ok().stdout();
    has_all(&out, &["unchanged"]);
    has_none(&out, &["still runs"]);
}

#[test]
fn brews_words_mean_what_brew_users_mean() {
    let t = TestContext::new();
    for (typed, meant) in [
        (&["terminate", "dev"][..], "try `oyster stop dev`"),
        (&["term"], "try `oyster stop`"),
        (&["rm"], "try `oyster cleanup`"),
        (&["services", "rm"], "try `oyster cleanup`"),
    ] {
        let r = t.run(typed).fails_with(2);
        assert!(r.stderr().contains(meant), "{typed:?}: {}", r.stderr());
    }
    // kill of a stack that is not installed names install, never start (which would fail).
    let mut t = TestContext::new();
    t.use_sim();
    let r = t.run(["kill"]).fails_with(1);
    r.stderr_has("is not installed");
    r.stderr_has("oyster install");
    assert!(!r.stderr().contains("oyster start"), "{}", r.stderr());
}

#[test]
fn logs_of_a_stack_migrated_from_oysterun_1_5_3_show_its_log_and_say_which() {
    let t = TestContext::new();
    let logs = t.home.join(".oysterun-stacks/old/logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::create_dir_all(t.home.join(".oysterun-stacks/old/host")).unwrap();
    std::fs::write(logs.join("oysterun-host-old.log"), "line one\nline two\n").unwrap();
    let r = t.run(["logs", "old"]).ok();
    assert_eq!(r.stdout(), "line one\nline two\n");
    r.stderr_has("oysterun-host-old.log, the log Oysterun 1.5.3 wrote");
    // Once oyster's own log exists, it is the one shown, without the note.
    std::fs::write(logs.join("oysterun-host.log"), "new\n").unwrap();
    let r = t.run(["logs", "old"]).ok();
    assert_eq!(r.stdout(), "new\n");
    assert!(!r.stderr().contains("1.5.3"), "{}", r.stderr());
}

#[test]
fn version_open_and_qr_answer_on_demand() {
    let (mut t, port) = installed();
    // version, plain and verbose (the pinned Node and the root of each stack).
    let plain = t.run(["version"]).ok().stdout();
    assert_eq!(plain, format!("oyster {}\n", env!("CARGO_PKG_VERSION")));
    assert_eq!(t.run(["--version"]).ok().stdout(), plain, "the same as --version");
    let root = t.path("root");
    std::fs::write(root.join("package.json"), r#"{"version": "1.5.3"}"#).unwrap();
    let verbose = t.run(["version", "--verbose"]).ok().stdout();
    has_all(&verbose, &["stack snap:"]);
    has_all(&verbose, &[&format!("oysterun: {} 1.5.3", root.display())]);
    has_all(&verbose, &["  node:     "]);
    // A custom stack with no port yet still runs a Node and a root: said as such, not as the
    // plan's refusal to go without a port.
    let noport = t.home.join(".oysterun-stacks/noport/host");
    std::fs::create_dir_all(&noport).unwrap();
    std::fs::write(
        noport.join("config.json"),
        serde_json::json!({ "oyster_root": root }).to_string(),
    )
    .unwrap();
    let verbose = t.run(["version", "--verbose"]).ok().stdout();
    let lines: Vec<&str> = verbose.lines().collect();
    let at =
        lines.iter().position(|l| *l == "stack noport:").unwrap_or_else(|| panic!("{verbose}"));
    assert!(lines[at + 1].starts_with("  node:     "), "{verbose}");
    assert_eq!(lines[at + 2], format!("  oysterun: {} 1.5.3", root.display()), "{verbose}");
    // open: the URL handed to xdg-open on PATH, nothing else.
    let log = t.path("opened.log");
    let bin = t.path("bin");
    recorder(&bin.join("xdg-open"), &log);
    t.path_dirs.push(bin);
    let r = t.run(["open", "snap"]).ok();
    let url = format!("http://127.0.0.1:{port}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), format!("{url}\n"));
    r.stdout_has(&format!("Opened {url}"));
    // Without an opener, the URL is printed and the missing opener said.
    t.path_dirs.clear();
    let r = t.run(["open", "snap"]).ok();
    assert_eq!(r.stdout(), format!("{url}\n"));
    r.stderr_has("xdg-open");
    // qr: the root's own entry point, with the stack's port, again and again.
    let qr_log = t.path("qr.log");
    std::fs::write(
        root.join("host-service/setup.mjs"),
        format!(
            "import fs from 'node:fs';\nfs.appendFileSync({:?}, process.argv.slice(2).join(' ') + ' ' + process.env.OYSTERUN_PORT + '\\n');\nconsole.log('LOGIN-QR');\n",
            qr_log.display().to_string()
        ),
    )
    .unwrap();
    for _ in 0..2 {
        let r = t.run(["qr", "snap"]).ok();
        r.stdout_has("LOGIN-QR");
    }
    assert_eq!(
        std::fs::read_to_string(&qr_log).unwrap(),
        format!("--show-qr {port}\n--show-qr {port}\n")
    );
    // A root without the entry point: said, exit 1.
    std::fs::remove_file(root.join("host-service/setup.mjs")).unwrap();
    let r = t.run(["qr", "snap"]).fails_with(1);
    r.stderr_has("no login QR");
}

#[test]
fn a_launchagents_dir_the_user_cannot_write_is_named_with_its_fix_and_nothing_changes() {
    use std::os::unix::fs::PermissionsExt;
    let mut t = TestContext::with_claude();
    let port = free_port().to_string();
    let agents = t.home.join("Library/LaunchAgents");
    std::fs::create_dir_all(&agents).unwrap();
    // Read-only (mode 555): refused by its mode, also for root, who could write it anyway.
    std::fs::set_permissions(&agents, std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = crate::common::tree(&t.home);
    let r = t.run(args(&["install", "pa"]).port(&port)).fails_with(1);
    let err = r.stderr();
    has_all(&err, &["Library/LaunchAgents", "mode is 0555"]);
    has_all(&err, &["chmod u+wx"]);
    assert_eq!(crate::common::tree(&t.home), before, "nothing was written");
    // Owned by another user (a `sudo` mistake): the owner and `sudo chown` are named, in
    // install, regenerate, status and doctor alike.
    std::fs::set_permissions(&agents, std::fs::Permissions::from_mode(0o755)).unwrap();
    if nix::unistd::geteuid().is_root() {
        std::os::unix::fs::chown(&agents, Some(54321), None).unwrap();
        let before = crate::common::tree(&t.home);
        let r = t.run(args(&["install", "pa"]).port(&port)).fails_with(1);
        r.stderr_has("owned by uid 54321");
        r.stderr_has("sudo chown $USER");
        assert_eq!(crate::common::tree(&t.home), before, "nothing was written");
        let r = t.run(["agent", "regenerate"]).fails_with(1);
        r.stderr_has("sudo chown $USER");
        let st = t.run(["status", "--json"]).json();
        let notes = st["notes"].to_string();
        assert!(notes.contains("sudo chown $USER"), "{st}");
        let doc = t.run(["doctor", "--json"]).json();
        let check = doctor_check(&doc, "LaunchAgents dir");
        assert_eq!(check["status"], "fail", "{doc}");
        t.extra_env.clear();
    }
}

#[test]
fn info_all_shows_every_stack_and_exits_1_unless_each_is_verified() {
    let (t, _) = installed();
    let other = free_port().to_string();
    t.install("snap2", &other);
    let doc = t.run(["info", "--all", "--json"]).ok().json();
    let stacks = crate::common::column(&doc["stacks"], "stack");
    assert_eq!(stacks, ["snap", "snap2"], "{doc}");
    t.run(["stop", "snap2"]).ok();
    let r = t.run(["status", "--all"]).fails_with(1);
    let out = r.stdout();
    has_all(&out, &["com.oysterun.host.snap (stack snap)"]);
    has_all(&out, &["com.oysterun.host.snap2 (stack snap2)"]);
    has_all(&out, &["status:    stopped"]);
    // One stack or all: not both.
    t.run(["info", "snap", "--all"]).fails_with(2);
    t.run(["uninstall", "--all"]).ok();
}

#[test]
fn at_80_columns_no_line_is_wider_than_the_terminal_and_piped_output_is_never_wrapped() {
    let (mut t, _) = installed();
    // A long stack name and a stopped stack: the stop line, a status note and the list row
    // run long.
    let other = free_port().to_string();
    t.install("second-stack", &other);
    let commands: Vec<Vec<&str>> = vec![
        vec!["stop", "second-stack"],
        vec!["status", "second-stack"],
        vec!["list"],
        vec!["doctor", "snap"],
        vec!["providers", "status", "--stack", "snap"],
        vec!["uninstall", "second-stack"],
        vec!["--help"],
        vec!["restart", "--help"],
        vec!["setup", "--help"],
        vec!["agent", "regenerate", "--help"],
    ];
    for args in &commands {
        let r = t.pty(b"", args);
        let output = r["output"].as_str().unwrap();
        for line in output.lines() {
            // A single word (a path) is never cut in prose; it stands alone instead.
            assert!(
                shown_width(line) <= 80 || !line.trim().contains(' '),
                "{args:?}: {} columns: {line:?}\n{output}",
                shown_width(line)
            );
        }
    }
    // Piped, the same long line is one line.
    t.extra_env.push(("COLUMNS".into(), "80".into()));
    let piped = t.run(["status", "second-stack"]);
    assert!(piped.stdout().lines().any(|l| l.chars().count() > 80), "{}", piped.stdout());
}

#[test]
fn stop_keep_stays_registered_for_the_next_login_and_no_wait_returns_at_once() {
    let (t, _) = installed();
    let uid = nix::unistd::getuid().as_raw();
    let st = t.run(["status", "snap", "--json"]).json();
    let old = st["pid"].as_u64().unwrap();
    // --keep: booted out, not disabled; a login loads it again (brew's `stop --keep`).
    t.run(["stop", "snap", "--keep"]).ok().stdout_has_all(&["left enabled (--keep)"]);
    let st = t.run(["status", "snap", "--json"]).fails_with(1).json();
    assert_eq!(st["loaded"], false, "{st}");
    assert_ne!(st["disabled"], true, "not disabled: {st}");
    assert_eq!(st["summary"], "not_loaded", "{st}");
    t.sim(&["login", &format!("gui/{uid}")]).ok();
    crate::common::wait_until(std::time::Duration::from_secs(10), "the login's Host", || {
        let st = t.run(["status", "snap", "--json"]).json();
        st["running"] == true && st["pid"].as_u64() != Some(old)
    });
    // --no-wait: the stop returns once launchd was told; the Host goes by itself.
    let pid = t.run(["status", "snap", "--json"]).json()["pid"].as_u64().unwrap();
    t.run(["stop", "snap", "--no-wait"])
        .ok()
        .stdout_has_all(&["disabled, so it stays stopped", &format!("pid {pid}")]);
    crate::common::wait_until(std::time::Duration::from_secs(10), "the Host to exit", || {
        t.run(["status", "snap", "--json"]).json()["running"] == false
    });
    t.run(["uninstall", "snap"]).ok();
}

#[test]
fn cleanup_yes_purge_removes_uninstalled_stacks_with_their_files_named_and_only_then() {
    let (t, _) = installed();
    t.run(["uninstall", "snap"]).ok();
    let root = t.home.join(".oysterun-stacks/snap");
    assert!(root.join("host/config.json").exists() && root.join("logs").is_dir());
    // Without --purge: kept, and the way to remove it is named.
    let out = t.run(["cleanup", "--yes"]).ok().stdout();
    has_all(&out, &["kept    snap: no LaunchAgent and no Host, but it holds"]);
    has_all(&out, &["--yes --purge"]);
    assert!(root.exists());
    // --dry-run --purge: says what it would remove, removes nothing.
    let out = t.run(["cleanup", "--dry-run", "--purge"]).ok().stdout();
    has_all(&out, &["would purge snap: "]);
    has_all(&out, &["config.json"]);
    assert!(root.exists());
    // --yes --purge: removed, each file named.
    let out = t.run(["cleanup", "--yes", "--purge"]).ok().stdout();
    has_all(&out, &["purging snap: ", "config.json"]);
    assert!(!root.exists(), "{out}");
    assert_eq!(t.run(["list", "--json"]).json()["stacks"], serde_json::json!([]));
}

#[test]
fn stop_all_names_each_stack_in_the_form_stop_stack_does() {
    let (t, _) = installed();
    t.run(["stop", "snap"]).ok().stdout_has_all(&["`oyster start snap` starts it again"]);
    t.run(["start", "snap", "--settle-ms", "200"]).ok();
    let all = t.run(["stop", "--all"]).ok().stdout();
    has_all(&all, &["`oyster start snap` starts it again"]);
    t.run(["uninstall", "--all"]).ok();
}

/// An `xdg-open` on its own PATH directory that runs `body` (a POSIX shell script).
fn opener(t: &mut TestContext, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let bin = t.path("openers");
    std::fs::create_dir_all(&bin).unwrap();
    let path = bin.join("xdg-open");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    t.path_dirs.retain(|d| d != &bin);
    t.path_dirs.insert(0, bin);
}

#[cfg_attr(target_os = "macos", ignore = "macOS always opens with /usr/bin/open")]
#[test]
fn an_opener_whose_browser_stays_in_the_foreground_is_left_running_and_a_failing_one_is_said() {
    let (mut t, port) = installed();
    let url = format!("http://127.0.0.1:{port}");
    // A browser in the foreground: the opener never returns. oyster stops waiting and leaves
    // it (and the browser) running, in its own process group.
    let pid_file = t.path("opener.pid");
    let sleep = ["/bin/sleep", "/usr/bin/sleep"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("sleep");
    opener(&mut t, &format!("echo $$ > '{}'\nexec {sleep} 60", pid_file.display()));
    let r = t.run(["open", "snap"]).ok();
    r.stdout_has(&format!("Handed {url} to "));
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
    assert!(alive, "the opener (pid {pid}) was killed");
    let _ =
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    // An opener that fails: its exit code, and the URL to open by hand.
    opener(&mut t, "exit 3");
    t.run(["open", "snap"]).fails_with(1).stderr_has_all(&["exited 3", &url]);
}

/// `version --verbose` names each stack's root and the version in its `package.json` on one
/// line each, whatever they hold: a newline in a root's name or in a hostile package's
/// version never forges a line (say, a stack that is not there).
#[test]
fn version_verbose_says_each_root_and_version_on_one_line() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    std::fs::write(
        root.join("package.json"),
        serde_json::json!({ "version": "1.5.3\nstack forged:" }).to_string(),
    )
    .unwrap();
    let dir = t.home.join(".oysterun-stacks/one/host");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), serde_json::json!({ "oyster_root": root }).to_string())
        .unwrap();
    let verbose = t
        .cmd()
        .env("OYSTERUN_NODE_BIN", crate::common::real_node())
        .args(["version", "--verbose"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&verbose.stdout).into_owned();
    let stacks: Vec<&str> = out.lines().filter(|l| l.starts_with("stack ")).collect();
    assert_eq!(stacks, ["stack one:"], "{out}");
    has_all(&out, &["/root 1.5.3\\nstack forged:"]);
    // A root whose name holds a newline is refused where it enters (the plist cannot carry
    // it): the refusal names it on one line too.
    let ghost = crate::common::fixture_root_at(&t.path("r\nstack ghost:"));
    std::fs::write(
        dir.join("config.json"),
        serde_json::json!({ "oyster_root": ghost }).to_string(),
    )
    .unwrap();
    let r = t.run(
        crate::common::args(&["agent", "print", "--stack", "one", "--port", "1"])
            .node(crate::common::real_node()),
    );
    let all = format!("{}{}", r.stdout(), r.stderr());
    assert!(
        !all.lines().any(|l| l.starts_with("stack ghost:")) && all.contains("r\\nstack ghost:"),
        "{all}"
    );
}
