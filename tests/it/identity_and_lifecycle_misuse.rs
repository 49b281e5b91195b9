//! A second hostile pass over the seams (identity files, interrupts, launchctl faults): what an
//! unlucky user meets when part of a directly started Host's identity goes missing.

use std::path::PathBuf;

use crate::common::{args, free_port, TestContext};
use crate::common::{has_all, has_none};
use crate::identity::{alive, run_dir, start};

fn pid_path(t: &TestContext, stack: &str) -> PathBuf {
    run_dir(t, stack).join(format!("oysterun-host-{stack}.pid"))
}

/// The pid file gone (removed by hand, or by a script that thought the Host had stopped) while
/// the exec record still proves the live Host is this stack's: `host status` and `host stop`
/// must not say "not running" while it serves; the exec record is enough to stop it.
#[test]
fn a_missing_pid_file_never_makes_a_running_host_read_as_stopped() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    let port = free_port();
    let pid = start(&t, "m", &root, port);
    std::fs::remove_file(pid_path(&t, "m")).unwrap();

    let st = t.run(["host", "status", "--stack", "m", "--json"]);
    let doc = st.json();
    assert_eq!(doc["running"], true, "{doc}");
    assert_eq!(doc["pid"], pid, "{doc}");

    let stop = t.run(["host", "stop", "--stack", "m"]).ok();
    assert!(!stop.stdout().contains("not running"), "{}", stop.stdout());
    assert!(!alive(pid), "host stop left pid {pid} running");
    assert!(!run_dir(&t, "m").join("oyster-exec.json").exists());
    // The port is free again: a new Host starts.
    start(&t, "m", &root, port);
    t.run(["host", "stop", "--stack", "m"]).ok();
}

/// The exec record gone (or unreadable) while the Host runs: the live process still runs
/// `<root>/host-service/server.mjs` with this stack's name and config dir in its environment,
/// so it is never called "another process", never left running while its pid and origin files
/// are deleted.
#[test]
fn a_missing_exec_record_never_deletes_the_files_of_a_host_that_is_still_this_stacks() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    let pid = start(&t, "x", &root, free_port());
    for damage in ["remove", "garbage"] {
        let rec = run_dir(&t, "x").join("oyster-exec.json");
        let saved = std::fs::read(&rec).unwrap();
        if damage == "remove" {
            std::fs::remove_file(&rec).unwrap();
        } else {
            std::fs::write(&rec, "{ not json").unwrap();
        }
        let st = t.run(["host", "status", "--stack", "x"]);
        assert!(!st.stdout().contains("another process"), "{damage}: {}", st.stdout());
        let stop = t.run(["host", "stop", "--stack", "x"]);
        assert_ne!(stop.code(), 0, "{damage}: {}{}", stop.stdout(), stop.stderr());
        assert!(!stop.stdout().contains("another process"), "{damage}: {}", stop.stdout());
        assert!(alive(pid));
        assert!(pid_path(&t, "x").exists(), "{damage}: the pid file was removed");
        assert!(
            run_dir(&t, "x").join("oysterun-host-x.origin.tsv").exists(),
            "{damage}: the origin file was removed"
        );
        let again = t.run(args(&["host", "start"]).stack("x").root(&root));
        assert_ne!(again.code(), 0);
        assert!(
            !again.stderr().contains("removing a stale pid file"),
            "{damage}: {}",
            again.stderr()
        );
        std::fs::write(&rec, saved).unwrap();
    }
    t.run(["host", "stop", "--stack", "x"]).ok();
    assert!(!alive(pid));
}

/// `stop` over SSH with nobody at the console cannot disable the label in `gui/<uid>` (that
/// domain answers 125), so a console login loads the plist there again: the summary line must
/// not promise "stays stopped at the next login" beside a warning that says the opposite.
#[test]
fn stop_over_ssh_keeps_its_promise_that_the_host_stays_stopped_at_the_next_console_login() {
    let mut t = TestContext::new();
    t.use_sim();
    let root = t.fixture_root("root");
    let port = free_port().to_string();
    let ssh = |args: Vec<String>| {
        crate::common::Run(t.cmd().env("LAUNCHD_SIM_NO_GUI", "1").args(args).output().unwrap())
    };
    let install = args(&["agent", "install"]).stack("sh").host(&root);
    ssh(install.port(&port).wait_secs(10).into()).ok();
    let stop = ssh(args(&["stop", "--stack", "sh"]).into()).ok();
    let gui = format!("gui/{}", nix::unistd::getuid());
    // gui/<uid> does not exist over SSH, but launchd's overrides are the user's, read by both
    // domains: the disable set through user/<uid> keeps the promise "stays stopped".
    let said = format!("{}{}", stop.stdout(), stop.stderr());
    has_all(&said, &["stays stopped at the next login"]);
    has_none(&said, &["may start it again"]);
    // What the line says is what happens: the console login does not start it in gui/<uid>.
    t.sim(&["login", &gui]).ok();
    assert_ne!(
        t.sim(&["print", &format!("{gui}/com.oysterun.host.sh")]).code(),
        0,
        "the login loaded it"
    );
    t.run(["agent", "uninstall", "--stack", "sh"]).ok();
    t.wait_no_processes();
}

/// The config lock's record (`pid N (config write)`) outlived its holder: the launch program
/// wrote it, released the lock and exec'd into the Host, whose pid it is. A later holder that
/// writes no record (another program's `flock`) then made a waiting command name the Host as
/// "another oyster" to wait for or stop — the one process that has nothing to do with it.
#[test]
fn a_stale_lock_record_never_names_the_host_as_the_config_locks_holder() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    let host = start(&t, "lk", &root, free_port());
    let lock_path = t.home.join(".oysterun-stacks/lk/host/config.json.lock");
    // Another program holds the lock without writing a record of its own.
    let f = std::fs::OpenOptions::new().read(true).write(true).open(&lock_path).unwrap();
    let held = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| e)
        .unwrap();
    let id = crate::common::provider_ids()[0].clone();
    let r = t.run(["providers", "set", "--stack", "lk", &id, "/opt/tools/bin/tool"]).fails_with(1);
    let e = r.stderr();
    assert!(
        !e.contains(&format!("pid {host}")),
        "named the Host (pid {host}) as the lock's holder:\n{e}"
    );
    has_all(&e, &["config.json.lock"]);
    assert!(!e.contains("()"), "an empty holder shown as `()`:\n{e}");
    drop(held);
    t.run(["host", "stop", "--stack", "lk"]).ok();
}

/// A rolled-back install or restart whose failed definition is not replaced by another (a
/// first install, or a definition that verified before) boots the Host out: its pid, origin
/// and exec-record files must go with it, not stay naming a dead pid.
#[test]
fn a_rollback_that_leaves_nothing_running_leaves_no_identity_files() {
    let mut t = TestContext::new();
    t.use_sim();
    let root = t.fixture_root("root");
    let port = free_port().to_string();
    let args = |verb: &str| args(&["agent", verb]).stack("rb").host(&root).port(&port).wait_secs(2);
    let identity = |t: &TestContext| -> Vec<String> {
        ["oysterun-host-rb.pid", "oysterun-host-rb.origin.tsv", "oyster-exec.json"]
            .into_iter()
            .filter(|f| run_dir(t, "rb").join(f).exists())
            .map(String::from)
            .collect()
    };
    // A first install whose Host never answers /health.
    TestContext::fixture_flag(&root, "unhealthy", "");
    t.run(args("install")).fails_with(1);
    assert_eq!(identity(&t), Vec::<String>::new(), "after the first install");
    // A definition that verified before, started again (after a stop) while its Host fails.
    std::fs::remove_file(root.join("host-service/unhealthy")).unwrap();
    t.run(args("install")).ok();
    t.run(["agent", "stop", "--stack", "rb"]).ok();
    TestContext::fixture_flag(&root, "unhealthy", "");
    t.run(args("start")).fails_with(1);
    assert_eq!(identity(&t), Vec::<String>::new(), "after the start");
    t.run(["agent", "uninstall", "--stack", "rb"]).ok();
    t.wait_no_processes();
}

/// `oyster kill` of a Host younger than ThrottleInterval: launchd waits out the throttle
/// before starting it again, with the SIGTERM as its last exit. That is the signal oyster
/// sent, not a crash: `status` must not report a crash loop meanwhile.
#[test]
fn status_right_after_kill_of_a_young_host_is_no_crash_loop() {
    let (mut t, root, port) = TestContext::sim_root();
    // A 5 s throttle: long enough for a status under load to see it (2 s was missed).
    t.scale_throttle("0.5");
    TestContext::fixture_flag(&root, "no-sigterm-handler", "");
    t.run(args(&["agent", "install"]).stack("kl").host(&root).port(port).wait_secs(10)).ok();
    t.run(["kill", "--stack", "kl"]).ok();
    let mut seen_throttled = false;
    crate::common::wait_until(std::time::Duration::from_secs(15), "the Host to run again", || {
        let st = t.run(["status", "--stack", "kl", "--json"]).json();
        assert_ne!(st["summary"], "crash_loop", "{st}");
        assert_eq!(st["crash_loop"], false, "{st}");
        seen_throttled |= st["state"] == "spawn scheduled";
        st["summary"] == "verified"
    });
    assert!(seen_throttled, "the kill never met the throttle");
    t.run(["agent", "uninstall", "--stack", "kl"]).ok();
    t.wait_no_processes();
}
