//! The verbs a `brew services` user types first (issue 22, item 1): a stack as a plain name,
//! `--all`, the aliases, an unknown verb answered by meaning, `cleanup`, and a `list` that
//! fits 100 columns — against the launchd simulator with the real Node Host.

use std::process::Command;

use crate::common::{args, free_port, TestContext, BIN};
use crate::common::{has_all, has_none};

/// A HOME with the simulator and the pinned Node; each stack gets its own root on install.
fn ctx() -> TestContext {
    TestContext::with_sim_and_node()
}

fn install(t: &TestContext, stack: &str, port: u16) {
    let root = t.fixture_root(&format!("root-{stack}"));
    t.run(crate::common::install_args(stack, port, &root).settle(200)).ok();
}

fn status(t: &TestContext, stack: &str) -> serde_json::Value {
    t.run(["status", stack, "--json"]).json()
}

#[test]
fn a_stack_is_taken_as_a_plain_name_and_a_contradiction_is_refused() {
    let t = ctx();
    let port = free_port();
    install(&t, "dev", port);
    let st = status(&t, "dev");
    assert_eq!((st["stack"].as_str(), st["verified"].as_bool()), (Some("dev"), Some(true)));
    let old = st["pid"].as_u64().unwrap();
    let r = t.run(["restart", "dev", "--settle-ms", "200"]).ok();
    r.stdout_has("Host verified");
    let new = status(&t, "dev")["pid"].as_u64().unwrap();
    assert_ne!(old, new, "restart dev restarted stack dev");
    // The same name twice is fine; two different ones are not.
    t.run(["status", "dev", "--stack", "dev"]).ok();
    let e = t.run(["restart", "dev", "--stack", "other"]).fails_with(2);
    assert!(
        e.stderr().contains("two different stacks") && e.stderr().contains("`dev`"),
        "{}",
        e.stderr()
    );
    // A name and --all: the usage shown is the verb's whole usage, not `oyster restart
    // <STACK>` (clap's conflict usage, as if the stack were required).
    t.run(["restart", "dev", "--all"]).fails_with(2).stderr_has_all(&[
        "cannot be used with '--all'",
        "Usage: oyster restart [OPTIONS] [STACK]",
    ]);
    t.run(["logs", "dev", "-n", "3"]).ok();
    t.run(["agent", "status", "dev"]).ok();
    for args in [
        &["host", "status", "dev", "--json"][..],
        &["providers", "status", "dev", "--json"],
        &["doctor", "dev", "--json"],
    ] {
        let doc = t.run(args).json();
        assert_eq!(doc["stack"], "dev", "{args:?}: {doc}");
    }
    // config show prints the stack's config itself: its port is dev's.
    let doc = t.run(["config", "show", "dev", "--json"]).ok().json();
    assert_eq!(doc["port"], port, "{doc}");
    t.run(["config", "show", "dev", "--stack", "qa"]).fails_with(2);
    // A positional name that is not a stack is said like --stack's.
    t.run(["status", "nosuch"]).fails_with(2).stderr_has_all(&["no stack named \"nosuch\""]);
    // The hint after `oyster stop dev` is `oyster start dev`, in the form typed.
    t.run(["stop", "dev"]).ok().stdout_has_all(&["`oyster start dev` starts it again"]);
    t.run(["agent", "stop", "--stack", "dev"])
        .ok()
        .stdout_has_all(&["`oyster agent start --stack dev`"]);
}

#[test]
fn commands_about_every_stack_refuse_stack_instead_of_ignoring_it() {
    let t = TestContext::new();
    for args in [
        &["list", "--stack", "dev"][..],
        &["ls", "--stack", "dev"],
        &["agent", "list", "--stack", "dev"],
        &["completions", "bash", "--stack", "dev"],
        &["man", "--stack", "dev"],
        &["cleanup", "--stack", "dev"],
        &["restart", "--all", "--stack", "dev"],
    ] {
        let r = t.run(args).fails_with(2);
        assert!(r.stdout().is_empty(), "{args:?}: {}", r.stdout());
        assert!(r.stderr().contains("--stack dev"), "{args:?}: {}", r.stderr());
    }
    t.run(["restart", "--all", "dev"]).fails_with(2);
}

#[test]
fn all_acts_on_every_stack_and_names_the_failures_at_the_end() {
    let t = ctx();
    let (pa, pb) = (free_port(), free_port());
    install(&t, "aa", pa);
    install(&t, "bb", pb);
    // A stack with only a config has no LaunchAgent: skipped, and said.
    t.run(args(&["config", "sync"]).stack("cc").port(free_port())).ok();
    let r = t.run(["stop", "--all"]).ok();
    let out = r.stdout();
    for s in ["aa", "bb"] {
        has_all(&out, &[&format!("==> stop stack {s}")]);
        assert_eq!(status(&t, s)["summary"], "stopped", "{s}");
    }
    let summary: Vec<&str> =
        out.lines().skip_while(|l| !l.starts_with("stop --all:")).skip(1).collect();
    assert_eq!(summary.len(), 3, "one line per stack:\n{out}");
    assert!(summary.iter().any(|l| l.contains("cc") && l.contains("skipped")), "{out}");
    // Stack bb's port is held: its start fails, aa's succeeds, exit 1 names bb at the end.
    let hold = std::net::TcpListener::bind(("127.0.0.1", pb)).unwrap();
    let r = t.run(["start", "--all", "--wait", "5", "--settle-ms", "200"]).fails_with(1);
    drop(hold);
    assert_eq!(status(&t, "aa")["verified"], true);
    let err = r.stderr();
    let last = err.lines().rev().find(|l| l.starts_with("oyster: error:")).unwrap();
    assert!(last.contains("1 of 3 stacks failed to start: bb"), "{err}");
    r.stdout_has("FAILED");
    // restart --all of a stopped stack starts it, and the summary says so.
    t.run(["start", "bb", "--settle-ms", "200"]).ok();
    t.run(["stop", "aa"]).ok();
    let out = t.run(["restart", "--all", "--settle-ms", "200"]).ok().stdout();
    let row = |s: &str| {
        out.lines()
            .skip_while(|l| !l.starts_with("restart --all:"))
            .find(|l| l.trim_start().starts_with(s))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(row("aa").contains("started, verified (it was stopped)"), "{out}");
    assert!(row("bb").contains("restarted, verified"), "{out}");
    // Every LaunchAgent goes, config and logs stay (what to run before `brew uninstall`).
    let r = t.run(["agent", "uninstall", "--all"]).ok();
    for s in ["aa", "bb"] {
        let plist = t.home.join(format!("Library/LaunchAgents/com.oysterun.host.{s}.plist"));
        assert!(!plist.exists(), "{s}: {}", r.stdout());
    }
    assert!(t.home.join(".oysterun-stacks/aa/host/config.json").exists());
    // Again: nothing is installed any more, and the summary does not claim an uninstall.
    let out = t.run(["uninstall", "--all"]).ok().stdout();
    assert_eq!(out.matches("no plist to remove").count(), 3, "{out}");
    has_none(&out, &["uninstalled"]);
}

/// Ctrl-C in `restart --all` ends the run at the stack it was on, which finishes its own
/// restart as an interrupted restart does, and the error names the stacks never reached.
#[test]
fn an_interrupted_all_names_the_stacks_it_did_not_reach() {
    let t = ctx();
    for s in ["ia", "ib", "ic"] {
        install(&t, s, free_port());
    }
    let log = t.path("all.log");
    let out = std::fs::File::create(&log).unwrap();
    let mut child = t
        .cmd()
        .args(["restart", "--all", "--settle-ms", "3000"])
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !said().contains("==> restart stack ia") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Inside ia's 3 s settle.
    std::thread::sleep(std::time::Duration::from_millis(800));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let code = child.wait().unwrap().code();
    let text = said();
    assert_eq!(code, Some(130), "{text}");
    has_none(&text, &["==> restart stack ib"]);
    let err = text
        .lines()
        .find(|l| l.starts_with("oyster: error: interrupted by SIGINT"))
        .unwrap_or_else(|| panic!("{text}"));
    has_all(err, &["stack ia: ", "not reached: ib, ic"]);
    // Nothing was left half-done: every stack still runs a verified Host.
    for s in ["ia", "ib", "ic"] {
        assert_eq!(status(&t, s)["verified"], true, "{s}");
    }
}

#[test]
fn the_aliases_run_the_agent_verbs_with_their_full_help() {
    let t = ctx();
    let port = free_port();
    install(&t, "al", port);
    let info = t.run(["info", "al", "--json"]).ok().json();
    assert_eq!(info["stack"], "al");
    assert_eq!(info["summary"], "verified");
    assert_eq!(t.run(["ls"]).ok().stdout(), t.run(["list"]).ok().stdout());
    let old = info["pid"].as_u64().unwrap();
    t.run(["kill", "al"]).ok().stdout_has_all(&[&format!("pid {old}")]);
    t.run(["uninstall", "al"]).ok();
    assert!(!t.home.join("Library/LaunchAgents/com.oysterun.host.al.plist").exists());
    // An alias's help is the full help of what it runs (options included).
    for (alias, agent, words) in [
        ("restart", "restart", "Restart the Host and verify it"),
        ("status", "status", "separate facts"),
        ("kill", "kill", "KeepAlive"),
        ("install", "install", "LaunchAgent"),
    ] {
        let a = t.run([alias, "--help"]).ok().stdout();
        let b = t.run(["agent", agent, "--help"]).ok().stdout();
        assert!(a.contains(words) && b.contains(words), "{alias}:\n{a}");
        has_none(&a, &["Alias of"]);
        for opt in b.lines().filter_map(|l| l.trim().strip_prefix("--")) {
            let flag = opt.split([' ', '<']).next().unwrap();
            assert!(a.contains(&format!("--{flag}")), "{alias} lacks --{flag}:\n{a}");
        }
    }
    t.run(["info", "--help"]).ok().stdout_has_all(&["separate facts"]);
}

#[test]
fn an_unknown_verb_is_answered_with_the_verb_it_means() {
    let t = TestContext::new();
    for (args, meant) in [
        (&["services", "list"][..], "`oyster list`"),
        (&["services", "restart", "dev"], "`oyster restart dev`"),
        (&["service", "stop"], "`oyster stop`"),
        (&["reload", "--stack", "dev"], "`oyster restart --stack dev`"),
        (&["remove"], "`oyster uninstall`"),
        (&["agent", "unload"], "`oyster agent stop`"),
        (&["log", "-f"], "`oyster logs -f`"),
    ] {
        let e = t.run(args).fails_with(2).stderr();
        let hint = e.lines().find(|l| l.starts_with("hint:")).unwrap_or_default();
        assert!(hint.contains(meant), "{args:?}: {e}");
        assert!(!hint.contains("similar subcommand"), "{args:?}: {e}");
        // One empty line at most between the message and the usage line.
        assert!(!e.contains("\n\n\n"), "{args:?}: {e:?}");
    }
    // A misspelling keeps clap's nearest spelling, without two empty lines.
    let e = t.run(["restat"]).fails_with(2).stderr();
    has_all(&e, &["similar subcommand", "'restart'"]);
    assert!(!e.contains("\n\n\n") && e.contains("\n\nUsage:"), "{e:?}");
}

#[test]
fn list_has_one_status_column_and_fits_100_columns() {
    let t = ctx();
    install(&t, "staging", free_port());
    install(&t, "dev", free_port());
    t.run(["stop", "dev"]).ok();
    let out = t.run(["list"]).ok().stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("STACK") && lines[0].contains("STATUS"), "{out}");
    for l in &lines {
        assert!(l.chars().count() <= 100, "{} columns: {l}", l.chars().count());
    }
    let row = |s: &str| lines.iter().find(|l| l.starts_with(s)).unwrap().to_owned();
    assert!(row("staging").contains(" verified "), "{out}");
    assert!(row("dev").contains(" stopped "), "{out}");
}

/// A stack directory holding only oyster's bookkeeping, as a refused first install leaves it.
fn phantom(t: &TestContext, name: &str) -> std::path::PathBuf {
    let dir = t.home.join(".oysterun-stacks").join(name);
    std::fs::create_dir_all(dir.join("run")).unwrap();
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    std::fs::write(dir.join("run/oyster.lock"), "").unwrap();
    std::fs::write(dir.join("run/node-version.cache"), "v22.0.0").unwrap();
    // A pid file naming a pid that is gone.
    let dead = {
        let mut c = Command::new("true").spawn().unwrap();
        c.wait().unwrap();
        c.id()
    };
    std::fs::write(dir.join(format!("run/oysterun-host-{name}.pid")), format!("{dead}\n")).unwrap();
    dir
}

#[test]
fn cleanup_removes_only_stacks_of_pure_bookkeeping_and_asks_first() {
    let mut t = ctx();
    // A machine with no stack at all is told so, not that every stack has files of its own.
    let out = t.run(["cleanup"]).ok().stdout();
    assert_eq!(out, "No Oysterun stack on this machine; nothing to clean up.\n");
    install(&t, "live", free_port());
    let ghost = phantom(&t, "ghost");
    // A stack with a config (and a log) is the user's: named, never removed with the others.
    let kept = phantom(&t, "mine");
    std::fs::create_dir_all(kept.join("host")).unwrap();
    std::fs::write(kept.join("host/config.json"), "{\"port\": 9999}").unwrap();
    std::fs::write(kept.join("logs/oysterun-host.log"), "hello\n").unwrap();
    // A pid file naming a live process keeps its stack.
    let busy = phantom(&t, "busy");
    std::fs::write(busy.join("run/oysterun-host-busy.pid"), format!("{}\n", std::process::id()))
        .unwrap();
    assert!(t.run(["list"]).ok().stdout().contains("ghost"));

    // Without a terminal: a dry run, saying how to do it.
    for args in [&["cleanup"][..], &["cleanup", "--dry-run"]] {
        let out = t.run(args).ok().stdout();
        has_all(&out, &["leftover ghost"]);
        has_all(&out, &["Nothing removed", "--yes"]);
        has_all(&out, &["kept    live: has a LaunchAgent"]);
        has_all(&out, &["kept    busy", "running"]);
        has_all(
            &out,
            &[
                "kept    mine",
                &kept
                    .join("host/config.json")
                    .display()
                    .to_string()
                    .replace(&t.home.display().to_string(), "~"),
            ],
        );
        assert!(ghost.exists());
    }
    // On a terminal, Enter says no. (mine is moved aside meanwhile: its own question would
    // wait for a second answer the driver does not type.)
    // While it asks, it holds ghost's lock, and an oyster that waits for it names cleanup.
    let aside = t.path("mine-aside");
    std::fs::rename(&kept, &aside).unwrap();
    let waiter = serde_json::json!([BIN, "host", "stop", "ghost"]).to_string();
    t.extra_env.push(("PTY_WHILE_ASKED".into(), waiter));
    let r = t.pty(b"\n", ["cleanup"]);
    t.extra_env.retain(|(k, _)| k != "PTY_WHILE_ASKED");
    std::fs::rename(&aside, &kept).unwrap();
    assert!(r["prompted"].as_bool().unwrap(), "{r}");
    assert_eq!(r["code"], 0, "{r}");
    assert!(ghost.exists(), "{r}");
    let waited = r["while_asked"].as_str().unwrap();
    has_all(
        waited,
        &["waiting for another oyster (pid ", " (cleanup)) to finish with stack ghost"],
    );
    t.run(["cleanup", "--yes"]).ok().stdout_has_all(&["removed ghost"]);
    assert!(!ghost.exists());
    assert!(kept.join("host/config.json").exists() && kept.join("logs/oysterun-host.log").exists());
    assert!(busy.exists());
    assert!(t.home.join("Library/LaunchAgents/com.oysterun.host.live.plist").exists());
    assert!(!t.run(["list"]).ok().stdout().contains("ghost"));

    // A terminal yes removes the leftovers; a yes to the question naming the config and logs
    // removes that stack too (the driver answers the first question only, so one at a time).
    std::fs::remove_file(busy.join("run/oysterun-host-busy.pid")).unwrap();
    t.run(["cleanup", "--yes"]).ok();
    assert!(!busy.exists());
    let r = t.pty(b"y\n", ["cleanup"]);
    let shown = r["output"].as_str().unwrap();
    // Read as words: the terminal is 80 columns, so the question is wrapped.
    let words = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("Remove stack mine with its config (") && words.contains(") and logs ("),
        "{shown}"
    );
    assert!(!kept.exists(), "{shown}");
    assert!(t.home.join("Library/LaunchAgents/com.oysterun.host.live.plist").exists());
}

#[test]
fn a_fresh_home_is_told_what_a_newcomer_needs() {
    // A Mac with Node but no Oysterun yet.
    let t = ctx();
    let st = t.run(["status"]).fails_with(1).stdout();
    has_all(&st, &["`npm install -g oysterun`", "`oyster setup --root DIR`"]);
    has_none(&st, &["agent regenerate", "oyster agent install"]);
    let doc = t.run(["doctor"]).fails_with(1).stdout();
    has_all(&doc, &["fix: install Oysterun (`npm install -g oysterun`), then run `oyster setup`"]);
    has_none(&doc, &["--root to `oyster agent regenerate`"]);
}

#[test]
fn a_refused_first_install_leaves_no_stack_behind() {
    let t = ctx();
    // No Oysterun root anywhere.
    let e = t.run(args(&["install", "ghost"]).port(free_port())).fails_with(1).stderr();
    has_all(&e, &["could not find the Oysterun install root"]);
    assert!(!t.home.join(".oysterun-stacks/ghost").exists(), "{e}");
    // The port is held: the config sync of this run goes again too.
    let root = t.fixture_root("root");
    let hold = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = hold.local_addr().unwrap().port().to_string();
    let held = args(&["install", "held"]).port(&port).root(&root).wait_secs(3);
    let e = t.run(held).fails_with(1).stderr();
    has_all(&e, &["already held"]);
    // Refused before the lock, so nothing of stack held was ever written.
    has_all(&e, &["Nothing was written"]);
    assert!(!t.home.join(".oysterun-stacks/held").exists(), "{e}");
    assert_eq!(t.run(["list"]).ok().stdout().lines().count(), 1, "only production's... or none");
    // A stack that existed before keeps everything of its own.
    drop(hold);
    install(&t, "kept", free_port());
    t.run(["uninstall", "kept"]).ok();
    let hold = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = hold.local_addr().unwrap().port().to_string();
    t.run(args(&["install", "kept"]).port(&port).root(&root).wait_secs(3)).fails_with(1);
    assert!(t.home.join(".oysterun-stacks/kept/host/config.json").exists());
}

#[test]
fn a_stale_plist_names_its_fix_once_in_the_form_typed_in_status_and_doctor() {
    let t = ctx();
    t.fake_exe(&t.home.join(".local/bin/claude"));
    install(&t, "st", free_port());
    t.run(["providers", "set", "claude", "", "--stack", "st"]).ok();
    let out = t.run(["status", "st"]).ok().stdout();
    has_all(&out, &["stale"]);
    assert_eq!(out.matches("regenerate").count(), 1, "{out}");
    has_all(&out, &["`oyster agent regenerate st`"]);
    t.run(["status", "--stack", "st"])
        .ok()
        .stdout_has_all(&["`oyster agent regenerate --stack st`"]);
    // doctor's fix, and a status note, in the form typed too.
    for (form, want) in [
        (&["doctor", "st"][..], "`oyster agent regenerate st`"),
        (&["doctor", "--stack", "st"], "`oyster agent regenerate --stack st`"),
    ] {
        let out = t.run(form).ok().stdout();
        assert!(out.contains(want), "{form:?}: {out}");
        // `--stack` in the plain form only where the verb takes no plain STACK (`providers
        // set ID CMD --stack hf`: a plain `hf` there is one argument too many).
        assert!(
            out.lines()
                .filter(|l| l.contains("--stack st`"))
                .all(|l| form.contains(&"--stack") || l.contains("`oyster providers ")),
            "{out}"
        );
    }
    // An interrupted change (its marker left behind) is named with the fix, in that form too.
    std::fs::write(t.home.join(".oysterun-stacks/st/run/pending"), "restart\n").unwrap();
    let st = t.run(["status", "st", "--json"]).json();
    assert!(
        st["notes"].to_string().contains("`oyster agent regenerate st` re-verifies it"),
        "{st}"
    );
}

#[test]
fn doctor_reports_the_configs_port_when_the_root_cannot_be_found() {
    let t = ctx();
    let port = free_port();
    t.run(args(&["config", "sync"]).stack("dev").port(port)).ok();
    let st = t.run(["status", "dev", "--json"]).json();
    assert_eq!(st["port"], port);
    let doc = t.run(["doctor", "dev", "--json"]).fails_with(1).json();
    assert_eq!((&doc["stack"], &doc["port"]), (&"dev".into(), &port.into()), "{doc}");
}
