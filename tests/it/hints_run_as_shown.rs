//! A hostile user against the everyday layer (issue 22): every hint is copied and run as
//! shown (it must act on the stack the user named, never on production), a login-QR entry
//! point that floods its output must still answer Ctrl-C, fish completes a plain stack after
//! an alias, and an unknown argument shows the verb's whole usage.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{args, free_port, runner_tool, TestContext, BIN};
use crate::common::{has_all, has_none};

/// A HOME with the simulator and the pinned Node.
fn ctx() -> TestContext {
    TestContext::with_sim_and_node()
}

/// Installs `stack` from its own fixture root and returns that root.
fn install(t: &TestContext, stack: &str) -> std::path::PathBuf {
    let root = t.fixture_root(&format!("root-{stack}"));
    t.run(crate::common::install_args(stack, free_port(), &root).settle(200)).ok();
    root
}

/// The commands a text suggests, between backticks, that start with `oyster `.
fn suggested(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| c.starts_with("oyster "))
        .map(str::to_owned)
        .collect()
}

/// Splits a suggested command as a shell would for these simple ones (`""` is one empty word).
fn words(cmd: &str) -> Vec<String> {
    cmd.split_whitespace()
        .skip(1)
        .map(|w| if w == "\"\"" { String::new() } else { w.to_owned() })
        .collect()
}

#[test]
fn doctors_provider_fixes_for_a_named_stack_change_that_stack_when_run() {
    let t = ctx();
    install(&t, "dev");
    let production = t.config_path();
    for (args, form) in [
        (&["doctor", "dev"][..], "--stack dev"),
        (&["doctor", "--stack", "dev"][..], "--stack dev"),
    ] {
        let out = t.run(args).stdout();
        let fix = out
            .lines()
            .find(|l| l.contains("fix:") && l.contains("providers set claude"))
            .unwrap_or_else(|| panic!("no provider fix in {args:?}:\n{out}"));
        let cmds = suggested(fix);
        assert!(
            !cmds.is_empty() && cmds.iter().all(|c| c.ends_with(form) || c.ends_with(" dev")),
            "{args:?}: every command names stack dev: {fix}"
        );
        // `oyster setup --install-providers` is this stack's setup too.
        assert!(
            cmds.iter().any(|c| c.starts_with("oyster setup --install-providers")
                && (c.ends_with(" dev") || c.ends_with("--stack dev"))),
            "{fix}"
        );
    }
    // Run as shown: the disable fix disables claude for dev, and writes no production config.
    let out = t.run(["doctor", "dev"]).stdout();
    let off = suggested(&out)
        .into_iter()
        .find(|c| c.starts_with("oyster providers set claude \"\""))
        .unwrap_or_else(|| panic!("no disable fix:\n{out}"));
    t.run(words(&off)).ok();
    assert!(!production.exists(), "`{off}` wrote production's config");
    let doc = t.run(["providers", "status", "dev", "--json"]).ok().json();
    let text = doc.to_string();
    assert!(text.contains("disabled"), "claude disabled for dev: {doc}");
}

#[test]
fn hints_for_a_stack_given_with_a_flag_name_it_where_there_is_no_plist_or_a_loaded_agent() {
    let t = ctx();
    // A stack with only a config: `providers set` says which setup uses the change.
    t.run(["providers", "set", "claude", "/usr/bin/true", "--stack", "qa"])
        .ok()
        .stdout_has_all(&["`oyster setup --stack qa` uses the change"]);
    // Disabling names the undo for this stack; run as shown, it undoes it there.
    t.run(["providers", "set", "codex", "", "--stack", "qa"])
        .ok()
        .stdout_has_all(&["(`oyster providers auto codex --stack qa` undoes this)"]);
    t.run(["providers", "auto", "codex", "--stack", "qa"]).ok().stdout_has_all(&["codex: auto"]);
    assert!(!t.config_path().exists(), "production's config was written");
    // A manual path that is no executable names the way back for this stack.
    t.run(["providers", "set", "codex", "/nonexistent/codex", "--stack", "qa"])
        .ok()
        .stderr_has_all(&["(or `oyster providers auto codex --stack qa`)"]);
    // A loaded LaunchAgent refuses `host start`: its suggestions are for that stack.
    install(&t, "dev");
    t.run(["host", "start", "dev"])
        .fails_with(1)
        .stderr_has_all(&["Use `oyster restart dev`, or `oyster uninstall dev`"]);
    t.run(["host", "start", "--stack", "dev"])
        .fails_with(1)
        .stderr_has_all(&["`oyster restart --stack dev`", "`oyster uninstall --stack dev`"]);
}

#[test]
fn an_unknown_argument_shows_the_verbs_whole_usage() {
    let t = TestContext::new();
    for (args, usage) in [
        (&["info", "dev", "--all"][..], "Usage: oyster status [OPTIONS] [STACK]"),
        (
            &["agent", "uninstall", "dev", "--purge-everything"][..],
            "Usage: oyster agent uninstall [OPTIONS] [STACK]",
        ),
        (&["restart", "dev", "--nosuch"][..], "Usage: oyster restart [OPTIONS] [STACK]"),
    ] {
        let e = t.run(args).fails_with(2).stderr();
        assert!(e.contains(usage), "{args:?}: {e}");
        assert!(!e.contains("<STACK>"), "{args:?}: no required STACK: {e}");
    }
}

#[test]
fn fish_completes_a_plain_stack_after_an_alias_too() {
    let t = TestContext::new();
    let fish = t.run(["completions", "fish"]).ok().stdout();
    for when in [
        "\"__fish_oyster_using_subcommand info\" -f -a \"(oyster __complete-stacks",
        "\"__fish_oyster_using_subcommand agent; and __fish_seen_subcommand_from info\" -f -a \"(oyster __complete-stacks",
    ] {
        assert!(fish.contains(when), "{when}");
    }
    // `ls` takes no stack: nothing offered after it.
    assert!(
        !fish.contains("\"__fish_oyster_using_subcommand ls\" -f -a \"(oyster __complete-stacks")
    );
}

/// Starts oyster with stdout to /dev/null and stderr to a file; returns the child and the
/// file's path.
fn spawn(t: &TestContext, args: &[&str]) -> (std::process::Child, std::path::PathBuf) {
    let err = t.path("stderr.txt");
    let mut c = Command::new(BIN);
    c.env_clear()
        .env("HOME", &t.home)
        .env("PATH", "")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(&err).unwrap());
    for (k, v) in &t.extra_env {
        c.env(k, v);
    }
    (c.spawn().unwrap(), err)
}

fn wait_bounded(child: &mut std::process::Child, bound: Duration, err: &Path) -> i32 {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code().unwrap_or(-1);
        }
        if t0.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!("oyster still ran after {bound:?} (killed); stderr:\n{}", tail(err));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tail(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("y")).collect();
    lines[lines.len().saturating_sub(12)..].join("\n")
}

#[test]
fn a_login_qr_that_floods_its_output_still_answers_ctrl_c() {
    let yes = runner_tool("yes").expect("this test needs yes(1)");
    let t = ctx();
    let root = install(&t, "flood");
    // The entry point hands its stdout to a program that never stops writing.
    std::fs::write(
        root.join("host-service/setup.mjs"),
        format!(
            "import cp from \"node:child_process\";\ncp.spawnSync({:?}, [\"y-flood-line\"], {{ stdio: \"inherit\" }});\n",
            yes.display().to_string()
        ),
    )
    .unwrap();
    let (mut child, err) = spawn(&t, &["restart", "flood", "--qr", "--settle-ms", "200"]);
    let t0 = Instant::now();
    while !std::fs::read_to_string(&err).unwrap_or_default().contains("waiting for the login QR") {
        assert!(t0.elapsed() < Duration::from_secs(60), "{}", tail(&err));
        assert!(child.try_wait().unwrap().is_none(), "{}", tail(&err));
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let the flood fill every buffer between the entry point and oyster's printing.
    std::thread::sleep(Duration::from_millis(1500));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let code = wait_bounded(&mut child, Duration::from_secs(10), &err);
    assert_eq!(code, 130, "{}", tail(&err));
    // The Host it restarted is still verified; the flood's processes are gone.
    let st = t.run(["status", "flood", "--json"]).json();
    assert_eq!(st["verified"], true, "{st}");
}

#[test]
fn a_providers_reason_for_a_named_stack_suggests_that_stacks_commands() {
    let t = TestContext::new();
    t.run(["providers", "set", "codex", "", "--stack", "qa"]).ok();
    for args in
        [&["providers", "status", "qa"][..], &["providers", "resolve", "--stack", "qa", "--json"]]
    {
        let out = t.run(args).ok().stdout().replace("\\\"", "\"");
        let cmds = suggested(&out);
        assert!(
            cmds.iter().any(|c| c.starts_with("oyster providers set claude")),
            "{args:?}: {out}"
        );
        assert!(
            cmds.iter()
                .filter(|c| c.starts_with("oyster providers "))
                .all(|c| c.ends_with(" --stack qa")),
            "{args:?}: {out}"
        );
    }
    // Run as shown, the way back re-enables codex for qa, and writes no production config.
    let out = t.run(["providers", "status", "qa"]).ok().stdout();
    let back = suggested(&out)
        .into_iter()
        .find(|c| c.starts_with("oyster providers auto codex"))
        .unwrap_or_else(|| panic!("{out}"));
    t.run(words(&back)).ok().stdout_has_all(&["codex: auto"]);
    assert!(!t.config_path().exists(), "`{back}` wrote production's config");
}

#[test]
fn without_launchd_the_way_to_start_directly_names_the_stack_given() {
    // OYSTER_LAUNCHCTL=none: launchd switched off, as on Linux.
    let t = TestContext::new();
    t.run(["providers", "set", "codex", "", "--stack", "dev"]).ok();
    for (args, want) in [
        (&["start", "dev"][..], "`oyster host start dev`"),
        (&["restart", "--stack", "dev"][..], "`oyster host start --stack dev`"),
        (&["agent", "stop", "dev"][..], "`oyster host start dev`"),
    ] {
        let e = t.run(args).fails_with(1).stderr();
        assert!(e.contains(want), "{args:?}: {e}");
    }
    let out = t.run(["status", "dev", "--json"]).json().to_string();
    has_all(&out, &["`oyster host start dev`"]);
    t.run(["doctor", "--stack", "dev"]).stdout_has_all(&["`oyster host start --stack dev`"]);
    // A newcomer's first look at staging: staging's setup.
    let fresh = TestContext::new();
    fresh.run(["status", "staging"]).stdout_has_all(&["then run `oyster setup staging`"]);
    // Production's own hint stays as it was.
    t.run(["providers", "set", "codex", ""]).ok();
    t.run(["start"])
        .fails_with(1)
        .stderr_has_all(&["`oyster host start` starts the Host directly"]);
}

/// `start` right after a `stop` interrupted while launchd drained the job: the label is
/// disabled but still listed. start finishes that bootout, says so, and loads the job again;
/// it once took the draining job for a loaded, matching one and failed when it vanished.
#[test]
fn start_right_after_an_interrupted_stop_loads_the_job_again() {
    let mut t = ctx();
    // The booted-out label lingers 2 s, as on a real Mac (3–5 s).
    t.extra_env.push(("LAUNCHD_SIM_DRAIN_MS".into(), "2000".into()));
    install(&t, "dr");
    let (mut stop, err) = spawn(&t, &["stop", "dr"]);
    std::thread::sleep(Duration::from_millis(400));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(stop.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(wait_bounded(&mut stop, Duration::from_secs(30), &err), 143, "{}", tail(&err));
    assert!(tail(&err).contains("disabled, so it stays stopped"), "{}", tail(&err));
    let r = t.run(["start", "dr", "--settle-ms", "200"]).ok();
    r.stderr_has("is still being booted out (a stop was interrupted)");
    r.stdout_has("Host verified");
    let st = t.run(["status", "dr", "--json"]).json();
    assert_eq!(st["verified"], true, "{st}");
    t.run(["uninstall", "dr"]).ok();
}

/// `uninstall` of a stack whose directory was removed by hand (its plist stayed) leaves no
/// stack directory behind: its lock and audit line once created one, which `list` and
/// `cleanup` then showed as a stack of nothing.
#[test]
fn uninstall_of_a_stack_whose_directory_is_gone_leaves_none_behind() {
    let t = ctx();
    install(&t, "gone");
    let dir = t.home.join(".oysterun-stacks/gone");
    std::fs::remove_dir_all(&dir).unwrap();
    let r = t.run(["uninstall", "--all"]).ok();
    r.stdout_has("was already gone");
    assert!(!dir.exists(), "{}", r.stdout());
    assert!(!t.run(["list"]).ok().stdout().contains("gone"));
    assert!(t.run(["cleanup"]).ok().stdout().contains("No Oysterun stack on this machine"));
}

/// A stack stopped over SSH (disabled through user/<uid>; gui/<uid> does not exist then, and
/// the override is the user's, read by both) whose start at the console then fails: the failure
/// leaves it stopped as `stop` left it. The start once read only gui/<uid>'s override, took
/// the stack for a running one, left user/<uid> enabled (where launchd loads a Background plist
/// at the next login), and its rollback tried for 20 s to load the narrowed plist into
/// gui/<uid>, then said "rollback failed too".
#[test]
fn a_failed_console_start_of_a_stack_stopped_over_ssh_leaves_it_stopped() {
    let t = ctx();
    let root = t.fixture_root("root-ssh");
    let ssh = |args: &[&str]| {
        crate::common::Run(t.cmd().env("LAUNCHD_SIM_NO_GUI", "1").args(args).output().unwrap())
    };
    let port = free_port().to_string();
    ssh(&[
        "install",
        "ssh",
        "--port",
        &port,
        "--root",
        root.to_str().unwrap(),
        "--settle-ms",
        "200",
    ])
    .ok();
    ssh(&["stop", "ssh"]).ok();
    TestContext::fixture_flag(&root, "crash-on-start", "");
    let t0 = Instant::now();
    let r = t.run(["start", "ssh", "--wait", "5", "--settle-ms", "200"]).fails_with(1);
    let e = r.stderr();
    has_none(&e, &["rollback failed"]);
    has_all(&e, &["disabled again"]);
    assert!(t0.elapsed() < Duration::from_secs(15), "{e}");
    let uid = nix::unistd::getuid();
    for kind in ["user", "gui"] {
        let d = t.sim(&["print-disabled", &format!("{kind}/{uid}")]).stdout();
        assert!(d.contains("\"com.oysterun.host.ssh\" => disabled"), "{kind}: {d}\n{e}");
    }
    assert!(!t.home.join(".oysterun-stacks/ssh/run/pending").exists());
    // A console login does not bring it back.
    t.sim(&["login", &format!("gui/{uid}")]).ok();
    std::thread::sleep(Duration::from_millis(300));
    assert_ne!(t.sim(&["print", &format!("gui/{uid}/com.oysterun.host.ssh")]).code(), 0);
    t.run(["uninstall", "ssh"]).ok();
}

/// A stopped stack whose `start` with a new port fails: the rollback writes the plist `stop`
/// left back but does not load it. It once loaded that previous plist again, so the failed
/// start ran the old Host the user had stopped, and left the label enabled.
#[test]
fn a_failed_start_with_a_new_port_does_not_run_the_stopped_host_again() {
    let t = ctx();
    let root = install(&t, "np");
    t.run(["stop", "np"]).ok();
    TestContext::fixture_flag(&root, "crash-on-start", "");
    let port = free_port().to_string();
    let e = t.run(args(&["start", "np"]).port(&port).wait(5, 200)).fails_with(1).stderr();
    has_all(&e, &["the Host stays stopped"]);
    has_all(&e, &["disabled again"]);
    let uid = nix::unistd::getuid();
    assert_ne!(t.sim(&["print", &format!("gui/{uid}/com.oysterun.host.np")]).code(), 0, "{e}");
    t.sim(&["print-disabled", &format!("gui/{uid}")])
        .stdout_has_all(&["\"com.oysterun.host.np\" => disabled"]);
    let plist =
        std::fs::read_to_string(t.home.join("Library/LaunchAgents/com.oysterun.host.np.plist"))
            .unwrap();
    assert!(!plist.contains(&port), "the failed port stayed: {plist}");
    // No identity file of the Host that failed names a dead pid.
    let run = t.home.join(".oysterun-stacks/np/run");
    assert!(!run.join("oyster-exec.json").exists(), "{e}");
    assert!(!run.join("oysterun-host-np.pid").exists(), "{e}");
    t.run(["uninstall", "np"]).ok();
}

/// A stack directory that is a symlink whose target was removed by hand: `uninstall` (or
/// `stop`) says so and how to fix it, changing nothing; with the link removed as the hint says,
/// `uninstall` then removes the job. It once failed with "could not create the directory
/// …/run: File exists" and no hint.
#[test]
fn a_stack_directory_that_is_a_dangling_symlink_is_named_with_the_fix() {
    let t = ctx();
    install(&t, "ln");
    let dir = t.home.join(".oysterun-stacks/ln");
    let moved = t.path("ln-elsewhere");
    std::fs::rename(&dir, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &dir).unwrap();
    std::fs::remove_dir_all(&moved).unwrap();
    let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.ln.plist");
    for verb in ["uninstall", "stop"] {
        let e = t.run([verb, "ln"]).fails_with(1).stderr();
        assert!(e.contains("is a symlink to") && e.contains("which does not exist"), "{verb}: {e}");
        assert!(e.contains("hint: remove the link"), "{verb}: {e}");
        assert!(!e.contains("File exists"), "{verb}: {e}");
        assert!(plist.exists(), "{verb}: {e}");
        assert!(!moved.exists(), "{verb} created the link's target");
    }
    std::fs::remove_file(&dir).unwrap();
    let r = t.run(["uninstall", "ln"]).ok();
    r.stdout_has("was already gone");
    assert!(!plist.exists());
    assert!(!dir.exists());
}

/// `restart` (or `start`) run while `uninstall` of the same stack holds its lock: once the
/// uninstall is done there is nothing to restart, and it says so. It once waited for the lock,
/// then wrote the plist again and loaded it, exit 0: the stack just uninstalled came back.
#[test]
fn a_restart_that_waited_for_an_uninstall_does_not_install_it_again() {
    let t = ctx();
    let root = install(&t, "ur");
    // launchd takes 1.5 s to stop the Host, so the uninstall holds the lock that long.
    TestContext::fixture_flag(&root, "sigterm-delay-ms", "1500");
    let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.ur.plist");
    for verb in ["restart", "start"] {
        if !plist.exists() {
            install(&t, "ur");
        }
        let (mut un, err) = spawn(&t, &["uninstall", "ur"]);
        std::thread::sleep(Duration::from_millis(400));
        let r = t.run([verb, "ur", "--settle-ms", "200"]);
        assert_eq!(wait_bounded(&mut un, Duration::from_secs(30), &err), 0, "{}", tail(&err));
        let e = r.fails_with(1).stderr();
        assert!(e.contains("waiting for another oyster"), "{verb}: {e}");
        assert!(e.contains("is not installed"), "{verb}: {e}");
        assert!(!plist.exists(), "{verb} installed it again: {e}");
        let uid = nix::unistd::getuid();
        assert_ne!(
            t.sim(&["print", &format!("gui/{uid}/com.oysterun.host.ur")]).code(),
            0,
            "{verb}: {e}"
        );
    }
}
