//! The everyday verbs (docs/behaviour.md §10) against the launchd simulator with the real Node Host:
//! stop/start (the plist kept, the label disabled, the same definition back), kill (KeepAlive
//! brings a new pid), list over every stack on disk, logs and logs -f, the top-level aliases,
//! and stacks that do not exist.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{args, free_port, get, wait_until, TestContext};
use crate::common::{has_all, has_none};

fn install(t: &TestContext, stack: &str, port: u16) {
    t.run(args(&["agent", "install"]).stack(stack).port(port).settle(200)).ok();
}

fn status(t: &TestContext, stack: &str) -> serde_json::Value {
    t.run(["agent", "status", "--stack", stack, "--json"]).json()
}

fn plist(t: &TestContext, stack: &str) -> PathBuf {
    t.home.join(format!("Library/LaunchAgents/com.oysterun.host.{stack}.plist"))
}

/// Every path under HOME with its content (directories as `/`), to prove nothing was created.
fn tree(home: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    crate::common::tree(home).into_iter().map(|(p, e)| (p, e.content)).collect()
}

/// Waits (bounded) until `agent status` satisfies `f`.
fn wait_status(t: &TestContext, stack: &str, secs: u64, f: impl Fn(&serde_json::Value) -> bool) {
    let t0 = Instant::now();
    loop {
        let st = status(t, stack);
        if f(&st) {
            return;
        }
        assert!(t0.elapsed().as_secs() < secs, "status never got there: {st}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn stop_keeps_the_plist_and_disables_the_label_and_start_restores_the_same_host() {
    let t = TestContext::with_pinned_host();
    let port = free_port();
    install(&t, "vb", port);
    let before = status(&t, "vb");
    let old_pid = u32::try_from(before["pid"].as_u64().unwrap()).unwrap();
    let bytes = std::fs::read(plist(&t, "vb")).unwrap();
    let old_env = t.host_environ(old_pid);

    let r = t.run(["agent", "stop", "--stack", "vb"]).ok();
    r.stdout_has("stays stopped");
    assert_eq!(std::fs::read(plist(&t, "vb")).unwrap(), bytes, "plist kept");
    let uid = nix::unistd::getuid();
    let disabled = t.sim(&["print-disabled", &format!("gui/{uid}")]).ok().stdout();
    has_all(&disabled, &["\"com.oysterun.host.vb\" => disabled"]);
    let st = t.run(["agent", "status", "--stack", "vb", "--json"]).fails_with(1).json();
    assert_eq!(
        (&st["summary"], &st["installed"], &st["loaded"], &st["disabled"]),
        (&"stopped".into(), &true.into(), &false.into(), &true.into()),
        "{st}"
    );
    assert!(crate::common::live_environ(old_pid).is_empty(), "the Host is gone");
    let human = t.run(["status", "--stack", "vb"]).fails_with(1).stdout();
    has_all(&human, &["status:    stopped\n", "disabled so it stays stopped"]);
    has_none(&human, &["crash"]);
    // A second stop is harmless.
    t.run(["stop", "--stack", "vb"]).ok();

    let r = t.run(["agent", "start", "--stack", "vb", "--settle-ms", "200"]).ok();
    r.stdout_has("Host verified");
    assert_eq!(std::fs::read(plist(&t, "vb")).unwrap(), bytes, "start loads the same definition");
    let after = status(&t, "vb");
    assert_eq!(
        (&after["summary"], &after["verified"], &after["disabled"]),
        // A loaded job's override is not asked (it only matters for loading): `null`.
        (&"verified".into(), &true.into(), &serde_json::Value::Null),
        "{after}"
    );
    let new_pid = u32::try_from(after["pid"].as_u64().unwrap()).unwrap();
    assert_ne!(new_pid, old_pid);
    let strip = |env: Vec<String>| -> Vec<String> {
        env.into_iter()
            .filter(|kv| kv.starts_with("OYSTERUN_") || kv.starts_with("PATH="))
            .collect()
    };
    assert_eq!(
        strip(t.host_environ(new_pid)),
        strip(old_env),
        "the same Host definition runs again"
    );
    // The top-level aliases are the same verbs.
    t.run(["stop", "--stack", "vb"]).ok();
    t.run(["start", "--stack", "vb", "--settle-ms", "200"]).ok();
    t.run(["status", "--stack", "vb"]).ok();
    let audit =
        std::fs::read_to_string(t.home.join(".oysterun-stacks/vb/logs/service-control.jsonl"))
            .unwrap();
    assert!(audit.contains("\"action\":\"stop\"") && audit.contains("\"action\":\"start\""));
}

#[test]
fn kill_sends_sigterm_to_the_host_only_and_keepalive_starts_a_new_one() {
    let mut t = TestContext::with_pinned_host();
    t.scale_throttle("0.2");
    let port = free_port();
    install(&t, "kl", port);
    let old = status(&t, "kl")["pid"].as_u64().unwrap();
    let r = t.run(["agent", "kill", "--stack", "kl"]).ok();
    assert!(r.stdout().contains(&format!("SIGTERM to the Host (pid {old})")), "{}", r.stdout());
    r.stderr_has("waiting for pid");
    let log =
        std::fs::read_to_string(t.home.join(".oysterun-stacks/kl/logs/oysterun-host.log")).unwrap();
    assert!(log.contains("SIGTERM, exiting"), "a graceful stop: {log}");
    // A clean exit waiting out the throttle is not a crash loop.
    let st = status(&t, "kl");
    assert_eq!(st["crash_loop"], false, "{st}");
    // launchd's KeepAlive brings it back (after the rest of the throttle, 10 s scaled to 2).
    wait_status(&t, "kl", 20, |st| {
        st["verified"] == true && st["pid"].as_u64().is_some_and(|p| p != old)
    });
    // Nothing loaded: kill says so (exit 1) and signals nothing.
    t.run(["agent", "stop", "--stack", "kl"]).ok();
    t.run(["agent", "kill", "--stack", "kl"])
        .fails_with(1)
        .stderr_has_all(&["not loaded", "agent start"]);
}

#[test]
fn list_shows_every_stack_on_disk_with_its_facts() {
    let mut t = TestContext::with_pinned_host();
    t.extra_env.push(("OYSTERUN_STACKS_DIR".into(), t.path("stacks").display().to_string()));
    let (p1, p2, p3) = (free_port(), free_port(), free_port());
    install(&t, "one", p1);
    install(&t, "two", p2);
    t.run(["agent", "stop", "--stack", "two"]).ok();
    t.run(args(&["config", "sync"]).stack("three").port(p3)).ok();
    // Not stacks: a stray file and a directory with an invalid name.
    std::fs::create_dir_all(t.path("stacks/Not_A_Stack/run")).unwrap();
    std::fs::write(t.path("stacks/notes.txt"), "").unwrap();

    let v = t.run(["agent", "list", "--json"]).ok().json();
    let rows = v["stacks"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["stack"].as_str().unwrap()).collect();
    assert_eq!(names, ["one", "three", "two"], "{v}");
    let row = |n: &str| rows.iter().find(|r| r["stack"] == n).unwrap();
    assert_eq!(row("one")["summary"], "verified");
    assert_eq!(row("one")["port"], p1);
    assert!(row("one")["pid"].is_u64());
    let pid = u32::try_from(row("one")["pid"].as_u64().unwrap()).unwrap();
    assert_eq!(row("one")["env_proof"], crate::common::strongest_proof(pid));
    assert_eq!(row("two")["summary"], "stopped");
    assert_eq!(row("two")["port"], p2);
    assert_eq!(
        (&row("three")["summary"], &row("three")["installed"], &row("three")["port"]),
        (&"not_installed".into(), &false.into(), &p3.into())
    );
    for r in rows {
        assert!(
            r["log_path"].as_str().unwrap().starts_with(t.path("stacks").to_str().unwrap()),
            "{r}"
        );
    }
    let human = t.run(["list"]).ok().stdout();
    let lines: Vec<&str> = human.lines().collect();
    assert_eq!(lines.len(), 4, "{human}");
    assert!(lines[0].starts_with("STACK") && lines[0].contains("LOG"), "{human}");
    assert!(lines[1].starts_with("one") && lines[1].contains(" verified "), "{human}");
    assert!(lines[3].starts_with("two") && lines[3].contains(" stopped "), "{human}");
}

#[test]
// A failed assertion leaves `logs -f` running until TestContext's drop kills what carries this
// test's HOME, by pid; the happy path kills and waits for it below.
#[allow(clippy::zombie_processes)]
fn logs_prints_the_tail_and_follows_lines_the_host_writes_redacted() {
    let t = TestContext::with_pinned_host();
    let port = free_port();
    install(&t, "lg", port);
    // A secret in the stack's config never shows, even when the Host logs it.
    let cfg = t.home.join(".oysterun-stacks/lg/host/config.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&cfg).unwrap()).unwrap();
    v["device_token"] = "dt-SECRET-4711".into();
    std::fs::write(&cfg, serde_json::to_vec(&v).unwrap()).unwrap();

    let r = t.run(["logs", "--stack", "lg", "-n", "1"]).ok();
    assert_eq!(r.stdout().lines().count(), 1, "{}", r.stdout());
    r.stdout_has("fixture host listening");

    let mut child = t
        .cmd()
        .args(["logs", "-f", "--stack", "lg"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    let err = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    std::thread::spawn({
        let (err, mut pipe) = (err.clone(), child.stderr.take().unwrap());
        move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                err.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        }
    });
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let expect = |what: &str| -> String {
        let t0 = Instant::now();
        loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(line) if line.contains(what) => return line,
                Ok(_) => {}
                Err(_) => assert!(t0.elapsed().as_secs() < 15, "never saw {what:?}"),
            }
        }
    };
    expect("fixture host listening");
    assert_eq!(get(port, "/log?line=after-start-1"), 200);
    expect("fixture host says: after-start-1");
    assert_eq!(get(port, "/log?line=token-dt-SECRET-4711"), 200);
    let line = expect("token-");
    has_all(&line, &["<redacted>"]);
    has_none(&line, &["SECRET"]);
    // Truncated under the follower: it starts again from the beginning.
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(t.home.join(".oysterun-stacks/lg/logs/oysterun-host.log"))
        .unwrap();
    // The next line is written only once the follower said it saw the truncation: written
    // earlier, the file could grow back past the follower's offset before it looks.
    wait_until(Duration::from_secs(15), "the follower to report the truncation", || {
        err.lock().unwrap().contains("truncated")
    });
    assert_eq!(get(port, "/log?line=after-truncation"), 200);
    expect("after-truncation");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_symlinked_host_log_is_refused() {
    let t = TestContext::with_pinned_host();
    t.run(args(&["config", "sync"]).stack("sl").port(free_port())).ok();
    let logs = t.home.join(".oysterun-stacks/sl/logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(t.path("elsewhere"), "not the Host's\n").unwrap();
    std::os::unix::fs::symlink(t.path("elsewhere"), logs.join("oysterun-host.log")).unwrap();
    let r = t.run(["logs", "--stack", "sl"]).fails_with(2);
    r.stderr_has("symlink");
    assert!(!r.stdout().contains("not the Host's"));
}

/// Every command that needs an existing stack, with an unknown one.
fn needs_a_stack(stack: &str) -> Vec<Vec<String>> {
    [
        &["agent", "status"][..],
        &["status"],
        &["status", "--json"],
        &["agent", "stop"],
        &["stop"],
        &["agent", "start"],
        &["start"],
        &["agent", "restart"],
        &["restart"],
        &["agent", "uninstall"],
        &["agent", "kill"],
        &["logs"],
        &["logs", "-f"],
    ]
    .iter()
    .map(|a| {
        let mut v: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        v.extend(["--stack".into(), stack.into()]);
        v
    })
    .collect()
}

#[test]
fn an_unknown_stack_is_named_with_the_known_ones_and_nothing_is_created() {
    let t = TestContext::with_pinned_host();
    t.run(args(&["config", "sync"]).stack("real").port(free_port())).ok();
    let before = tree(&t.home);
    for args in needs_a_stack("nope") {
        let r = t.run(&args).fails_with(2);
        let e = r.stderr();
        assert!(
            e.contains("no stack named \"nope\"") && e.contains("known stacks: real"),
            "{args:?}: {e}"
        );
        assert!(e.contains("hint: "), "{args:?}: {e}");
    }
    assert_eq!(tree(&t.home), before, "nothing was created");
}

#[test]
fn read_only_commands_and_uninstall_create_nothing() {
    let t = TestContext::with_pinned_host();
    let before = tree(&t.home);
    for args in [
        &["agent", "status"][..],
        &["status", "--json"],
        &["list"],
        &["list", "--json"],
        &["logs"],
        &["config", "show"],
        &["config", "show", "--json"],
        &["providers", "status"],
        &["providers", "resolve", "--json"],
        &["doctor"],
        &["doctor", "--json"],
        &["host", "status"],
        &["host", "status", "--json"],
        &["agent", "print"],
        &["agent", "uninstall"],
        &["agent", "uninstall", "--stack", "staging"],
        &["status", "--stack", "staging"],
    ] {
        let r = t.run(args);
        assert!(r.code() <= 1, "{args:?}: {}", r.stderr());
        assert_eq!(tree(&t.home), before, "{args:?} created something");
    }
    let r = t.run(["agent", "uninstall"]).ok();
    r.stdout_has("nothing to uninstall");
}

#[test]
fn restart_of_an_uninstalled_stack_says_not_installed_before_anything_about_the_root() {
    let mut t = TestContext::new();
    t.use_sim();
    // No root anywhere: a restart that looked for one first would fail on that.
    t.run(args(&["config", "sync"]).stack("bare").port(free_port())).ok();
    for args in [
        &["agent", "restart", "--stack", "bare"][..],
        &["restart", "--stack", "bare"],
        &["agent", "start", "--stack", "bare"],
        &["agent", "stop", "--stack", "bare"],
    ] {
        let e = t.run(args).fails_with(1).stderr();
        assert!(e.contains("not installed"), "{args:?}: {e}");
        assert!(!e.contains("root"), "{args:?}: {e}");
        // The hint in the form the user typed.
        let install = if args[0] == "agent" {
            "hint: `oyster agent install --stack bare`"
        } else {
            "hint: `oyster install --stack bare`"
        };
        has_all(&e, &[install]);
    }
}

#[test]
fn host_stop_and_status_leave_a_launchd_host_to_launchd() {
    let t = TestContext::with_pinned_host();
    let port = free_port();
    install(&t, "hs", port);
    let pid = status(&t, "hs")["pid"].as_u64().unwrap();
    t.run(["host", "stop", "--stack", "hs"])
        .fails_with(1)
        .stderr_has_all(&["launchd runs this Host", "`oyster stop --stack hs` stops it"]);
    assert_eq!(status(&t, "hs")["pid"].as_u64(), Some(pid), "not signalled");
    let st = t.run(["host", "status", "--stack", "hs", "--json"]).ok().json();
    assert_eq!(
        (&st["managed_by"], &st["pid"], &st["verified"], &st["port"]),
        (&"launchd".into(), &pid.into(), &true.into(), &port.into()),
        "{st}"
    );
    t.run(["host", "status", "--stack", "hs"]).ok().stdout_has_all(&["launchd owns this Host"]);
}

/// Runs oyster on a real pseudo-terminal (tests/pty_drive.py, answering nothing); what the
/// terminal showed.
fn on_a_terminal(t: &TestContext, args: &[&str], extra_env: &[(&str, &str)]) -> String {
    let mut c = t.pty_cmd(b"", args);
    c.env("PATH", "/usr/bin:/bin");
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let report = crate::common::pty_report(&mut c);
    report["output"].as_str().unwrap().to_owned()
}

#[test]
fn colour_on_a_terminal_none_with_no_color_or_a_pipe() {
    let t = TestContext::with_pinned_host();
    let port = free_port();
    install(&t, "cl", port);
    let green = "\x1b[32m";
    let tty = on_a_terminal(&t, &["status", "--stack", "cl"], &[("TERM", "xterm")]);
    assert!(tty.contains(&format!("{green}  status:    running, verified")), "{tty:?}");
    assert!(tty.contains("\x1b[1mcom.oysterun.host.cl"), "a bold heading: {tty:?}");
    let doctor = on_a_terminal(&t, &["doctor", "--stack", "cl"], &[("TERM", "xterm")]);
    assert!(doctor.contains(&format!("{green}[ok  ]")), "{doctor:?}");
    assert!(doctor.contains("\x1b[33m[warn]"), "{doctor:?}");
    for (name, env) in [
        ("NO_COLOR", &[("TERM", "xterm"), ("NO_COLOR", "1")][..]),
        ("TERM=dumb", &[("TERM", "dumb")][..]),
    ] {
        for args in [&["status", "--stack", "cl"][..], &["doctor", "--stack", "cl"]] {
            let plain = on_a_terminal(&t, args, env);
            assert!(!plain.contains('\x1b'), "{name} {args:?}: {plain:?}");
            assert!(plain.contains("running") || plain.contains("[ok  ]"), "{plain}");
        }
    }
    let piped = t.run(["status", "--stack", "cl"]).ok();
    assert!(!piped.stdout().contains('\x1b') && !piped.stderr().contains('\x1b'));
}
