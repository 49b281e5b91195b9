//! A hostile `brew services` user against the everyday verbs (issue 22): every hint must
//! work when typed as shown, `cleanup` must touch nothing outside the stacks it names nor a
//! stack another oyster is working on, and setup's suggested command must be one that works.

use crate::common::has_all;
use crate::common::{args, free_port, TestContext};

/// A HOME with the simulator and the pinned Node.
fn ctx() -> TestContext {
    TestContext::with_sim_and_node()
}

/// The commands in backquotes in `text`.
fn quoted(text: &str) -> Vec<String> {
    text.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// Runs a suggested `oyster …` command (split on spaces) and returns its exit code: a hint
/// that does not parse exits 2.
fn typed_code(t: &TestContext, cmd: &str) -> i32 {
    let words: Vec<&str> = cmd.split(' ').collect();
    assert_eq!(words[0], "oyster", "{cmd}");
    t.run(&words[1..]).0.status.code().unwrap_or(-1)
}

#[test]
fn kill_hints_are_commands_in_the_form_typed() {
    let t = ctx();
    let port = free_port();
    let root = t.fixture_root("root-dev");
    t.run(crate::common::install_args("dev", port, &root).settle(200)).ok();
    // After a kill, the command said to show the new pid is a real command.
    let out = t.run(["kill", "dev"]).ok().stdout();
    let shown = quoted(&out);
    let status = shown
        .iter()
        .find(|c| c.contains("status"))
        .unwrap_or_else(|| panic!("no status command named: {out}"));
    assert_eq!(status, "oyster status dev", "{out}");
    assert_ne!(typed_code(&t, status), 2, "`{status}` does not parse");
    // Not loaded: the hints echo `oyster kill dev`, not `oyster agent … --stack dev`.
    t.run(["stop", "dev"]).ok();
    let e = t.run(["kill", "dev"]).fails_with(1).stderr();
    let hint = e.lines().find(|l| l.starts_with("hint:")).unwrap_or("");
    assert_eq!(quoted(hint), ["oyster start dev", "oyster status dev"], "{e}");
    t.run(["agent", "kill", "--stack", "dev"])
        .fails_with(1)
        .stderr_has_all(&["`oyster agent start --stack dev`"]);
}

/// A leftover stack (a run dir with only an earlier version's lock and the node cache) at `dir`.
fn leftover(dir: &std::path::Path) {
    std::fs::create_dir_all(dir.join("run")).unwrap();
    std::fs::write(dir.join("run/oyster.lock"), "").unwrap();
    std::fs::write(dir.join("run/node-version.cache"), "v20\n").unwrap();
}

#[test]
fn cleanup_removes_nothing_through_a_symlinked_stack_dir() {
    let t = TestContext::new();
    let stacks = t.home.join(".oysterun-stacks");
    std::fs::create_dir_all(&stacks).unwrap();
    // The user keeps a directory elsewhere that happens to look like a leftover stack.
    let outside = t.path("elsewhere");
    leftover(&outside);
    std::os::unix::fs::symlink(&outside, stacks.join("linked")).unwrap();
    leftover(&stacks.join("ghost"));
    let before = crate::common::tree(&outside);
    let r = t.run(["cleanup", "--yes"]).ok();
    assert_eq!(crate::common::tree(&outside), before, "{}", r.stderr());
    assert!(!stacks.join("ghost").exists(), "the real leftover is removed");
    r.stdout_has_all(&["kept    linked", "symlink"]);
    assert!(!r.stderr().contains("something was added"), "{}", r.stderr());
}

#[test]
fn cleanup_keeps_a_stack_another_oyster_holds_the_lock_of() {
    let t = TestContext::new();
    let busy = t.home.join(".oysterun-stacks/busy");
    leftover(&busy);
    // Another oyster (here: this test) is mid-install on the stack: it holds the lock.
    let lock = t.lock_file("busy");
    std::fs::write(&lock, "").unwrap();
    let held = std::fs::File::open(&lock).unwrap();
    held.lock().unwrap();
    let before = crate::common::tree(&busy);
    let r = t.run(["cleanup", "--yes"]).ok();
    assert_eq!(crate::common::tree(&busy), before, "{}", r.stdout());
    // The closing line does not give another reason than the one said beside the stack.
    crate::common::has_all(
        &r.stdout(),
        &[
            "kept    busy",
            "another oyster",
            "every stack on this machine is kept, for the reason said",
        ],
    );
    // Once the lock is free, it is an ordinary leftover.
    drop(held);
    t.run(["cleanup", "--yes"]).ok();
    assert!(!busy.exists());
}

#[test]
fn setups_offered_command_without_providers_works_when_typed() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    // A node prefix with an npm, so setup offers to install the missing providers.
    let bin = t.node_prefix();
    t.fake_exe(&bin.join("npm"));
    let port = free_port().to_string();
    let (root, node) = (root.to_str().unwrap(), bin.join("node"));
    let node = node.to_str().unwrap();
    let out = t
        .run(
            args(&["setup", "--dry-run"])
                .stack("st")
                .root(root)
                .node(node)
                .port(&port)
                .extra(&["--no-start"]),
        )
        .ok()
        .stdout();
    let offered = quoted(&out)
        .into_iter()
        .find(|c| c.starts_with("oyster setup --no-install-providers"))
        .unwrap_or_else(|| panic!("no command offered: {out}"));
    // Typed as shown (plus --dry-run, to change nothing), it plans the same Host.
    let mut words: Vec<&str> = offered.split(' ').skip(1).collect();
    words.push("--dry-run");
    let r = t.run(&words);
    assert_eq!(r.0.status.code(), Some(0), "`{offered}`: {}", r.stderr());
    let again = r.stdout();
    has_all(&again, &[root]);
    has_all(&offered, &[&format!("--port {port}")]);
    assert!(again.contains("start:       no"), "--no-start is kept: {again}");
    t.assert_nothing_executed();
}

#[test]
fn an_unknown_flag_is_not_answered_with_a_tip_that_fails_when_typed() {
    let t = TestContext::new();
    for (args, says) in [
        (
            &["kill", "--all"][..],
            Some("--all is taken by start, stop, restart, uninstall and status"),
        ),
        (&["logs", "--all"], Some("--all is taken by")),
        (&["status", "--bogus"], None),
    ] {
        let e = t.run(args).fails_with(2).stderr();
        let hint = e.lines().find(|l| l.starts_with("hint:")).unwrap_or("");
        // clap's "use '-- --all'" would make the flag a stack name, refused again.
        assert!(!hint.contains("'-- "), "{args:?}: {e}");
        let mut typed = args.to_vec();
        typed.insert(1, "--");
        t.run(&typed).fails_with(2);
        if let Some(says) = says {
            assert!(hint.contains(says), "{args:?}: {e}");
        }
    }
}

#[test]
fn cleanup_never_removes_a_directory_that_was_never_a_stack() {
    let mut t = TestContext::new();
    // The stacks live in a directory the user shares with other things.
    let shared = t.home.join("work");
    std::fs::create_dir_all(shared.join("newproj")).unwrap();
    std::fs::create_dir_all(shared.join("mnt/sub")).unwrap();
    leftover(&shared.join("ghost"));
    t.extra_env.push(("OYSTERUN_STACKS_DIR".into(), shared.display().to_string()));
    let r = t.run(["cleanup", "--yes"]).ok();
    assert!(shared.join("newproj").is_dir(), "{}", r.stdout());
    assert!(shared.join("mnt/sub").is_dir(), "{}", r.stdout());
    assert!(!r.stdout().contains("newproj"), "{}", r.stdout());
    assert!(!shared.join("ghost").exists(), "a real leftover still goes");
}

/// Whether `pid` is alive (oyster reaps its step, and init an orphan, so no zombie lingers).
fn alive(pid: u32) -> bool {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap());
    nix::sys::signal::kill(pid, None).is_ok()
}

#[test]
fn ctrl_c_during_the_login_qr_stops_the_step_and_exits_130() {
    use std::time::Duration;
    let t = ctx();
    let port = free_port();
    let root = t.fixture_root("root-dev");
    t.run(crate::common::install_args("dev", port, &root).settle(200)).ok();
    // A QR entry point that never ends, and says its pid.
    let pid_file = t.path("qr.pid");
    std::fs::write(
        root.join("host-service/setup.mjs"),
        format!(
            "import {{ writeFileSync }} from 'node:fs';\nwriteFileSync({:?}, String(process.pid));\nsetInterval(() => {{}}, 1000);\n",
            pid_file.display().to_string()
        ),
    )
    .unwrap();
    let mut child = t
        .cmd()
        .args(["restart", "dev", "--qr", "--settle-ms", "200"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::common::wait_until(Duration::from_secs(30), "the QR step to start", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|s| !s.is_empty())
    });
    let qr: u32 = std::fs::read_to_string(&pid_file).unwrap().parse().unwrap();
    let oyster = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(oyster, nix::sys::signal::Signal::SIGINT).unwrap();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let still = alive(qr);
    if still {
        // Stop what the test started (by pid) before failing.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(qr).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!still, "the QR step (pid {qr}) outlived oyster's Ctrl-C: {err}");
    assert_eq!(out.status.code(), Some(130), "{err}");
    has_all(&err, &["the login QR step was stopped; the Host runs and verified"]);
    assert_eq!(status_of(&t, "dev")["verified"], true);
}

fn status_of(t: &TestContext, stack: &str) -> serde_json::Value {
    t.run(["status", stack, "--json"]).json()
}

#[test]
fn oysteruns_stack_all_is_answered_with_all_not_with_creating_a_stack_named_all() {
    let t = TestContext::new();
    for args in [
        &["uninstall", "--stack", "all"][..],
        &["restart", "all"],
        &["agent", "stop", "--stack", "all"],
    ] {
        let e = t.run(args).fails_with(2).stderr();
        let hint = e.lines().find(|l| l.starts_with("hint:")).unwrap_or("");
        assert!(hint.contains("--all"), "{args:?}: {e}");
        assert!(!hint.contains("install --stack all"), "{args:?}: {e}");
    }
}

/// A full disk under `> file` is not a closed pipe: the document the user asked for is lost,
/// so the run must not exit 0 (`/dev/full` answers every write with ENOSPC).
// Linux only: macOS has no `/dev/full`, and no other file that fails every write with ENOSPC
// can be had there without root (a full disk image needs `hdiutil` and a mount).
#[cfg(target_os = "linux")]
#[test]
fn a_stdout_that_cannot_be_written_is_a_failure_not_success() {
    let t = TestContext::new();
    for args in [&["list", "--json"][..], &["list"], &["completions", "bash"]] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = t.cmd().args(args).stdout(full).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("could not write the output"), "{args:?}: {err}");
    }
    // A reader that closes the pipe early is still not an error.
    let mut child =
        t.cmd().args(["completions", "bash"]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}
