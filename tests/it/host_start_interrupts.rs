//! Ctrl-C (SIGINT), SIGTERM or SIGHUP while `oyster host start` (or setup in direct mode)
//! waits for `/health`: the spawned Host is stopped, its identity files removed, the run says
//! so and exits 128 + N, at once.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::common::has_all;
use crate::common::{args, free_port, real_node, TestContext};

fn run_dir(t: &TestContext, stack: &str) -> PathBuf {
    t.home.join(".oysterun-stacks").join(stack).join("run")
}

fn spawn<S: AsRef<std::ffi::OsStr>>(t: &TestContext, args: &[S]) -> Child {
    t.spawn(args, Stdio::null(), Stdio::piped(), Stdio::piped())
}

/// Waits (bounded) until the launch program has written the pid file: the Host runs and
/// oyster waits for its /health.
fn wait_for_pid_file(pid_file: &Path) -> u32 {
    let t0 = Instant::now();
    loop {
        if let Some(pid) =
            std::fs::read_to_string(pid_file).ok().and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "no pid file");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn interrupt(child: Child, sig: Signal) -> (Option<i32>, String, Duration) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()), sig)
        .unwrap();
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), t0.elapsed())
}

/// Whether `pid` is gone: no such process, or a zombie nobody reaped yet (a Host whose
/// `host start` exited is reparented, and not every init reaps at once).
fn gone(pid: u32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()), None).is_err()
        || crate::common::zombie(pid)
}

#[test]
fn an_interrupted_host_start_stops_the_host_it_spawned_and_exits_128_plus_n() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    // A Host that never listens: oyster waits the whole --wait for /health.
    TestContext::fixture_flag(&root, "silent", "");
    let node = real_node();
    for (sig, code) in [(Signal::SIGINT, 130), (Signal::SIGTERM, 143), (Signal::SIGHUP, 129)] {
        let port = free_port().to_string();
        let start = args(&["host", "start"]).stack("hs").root(&root).node(&node);
        let child = spawn(&t, &Vec::from(start.port(&port).wait_secs(60)));
        let pid_file = run_dir(&t, "hs").join("oysterun-host-hs.pid");
        let host = wait_for_pid_file(&pid_file);
        let (got, stderr, took) = interrupt(child, sig);
        assert_eq!(got, Some(code), "{sig}: {stderr}");
        assert!(took < Duration::from_secs(10), "{sig}: took {took:?}");
        has_all(
            &stderr,
            &[
                &format!("interrupted by {sig}"),
                &format!("stopped the Host it had started (pid {host}"),
            ],
        );
        assert!(gone(host), "{sig}: the unverified Host kept running");
        for f in ["oysterun-host-hs.pid", "oysterun-host-hs.origin.tsv", "oyster-exec.json"] {
            assert!(!run_dir(&t, "hs").join(f).exists(), "{sig}: {f} left");
        }
    }
    assert_eq!(t.own_processes(), Vec::<u32>::new());
}

#[test]
fn ctrl_c_during_setups_direct_start_stops_waiting_at_once() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    TestContext::fixture_flag(&root, "silent", "");
    let port = free_port().to_string();
    let setup = args(&["setup"]).stack("sd").host(&root).port(&port).wait_secs(60);
    let child = spawn(&t, &Vec::from(setup));
    let host = wait_for_pid_file(&run_dir(&t, "sd").join("oysterun-host-sd.pid"));
    let (got, stderr, took) = interrupt(child, Signal::SIGINT);
    assert_eq!(got, Some(130), "{stderr}");
    assert!(took < Duration::from_secs(5), "setup waited {took:?} after Ctrl-C");
    has_all(&stderr, &["interrupted by SIGINT"]);
    assert!(gone(host), "the Host kept running");
    assert_eq!(t.own_processes(), Vec::<u32>::new());
}

#[test]
fn ctrl_c_during_host_stop_finishes_the_stop_and_says_so() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    // A Host that takes 1.5 s to exit after SIGTERM: oyster is still waiting when Ctrl-C comes.
    TestContext::fixture_flag(&root, "sigterm-delay-ms", "1500");
    let port = free_port().to_string();
    t.run(args(&["host", "start"]).stack("hs").host(&root).port(&port).wait_secs(10)).ok();
    let pid_file = run_dir(&t, "hs").join("oysterun-host-hs.pid");
    let host = wait_for_pid_file(&pid_file);
    let log = t.home.join(".oysterun-stacks/hs/logs/oysterun-host.log");
    let child = spawn(&t, &["host", "stop", "--stack", "hs"]);
    let t0 = Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("SIGTERM, exiting in")) {
        assert!(t0.elapsed() < Duration::from_secs(10), "the Host never got SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (got, stderr, _) = interrupt(child, Signal::SIGINT);
    assert_eq!(got, Some(130), "{stderr}");
    has_all(&stderr, &["interrupted by SIGINT", &format!("Host stopped (pid {host})")]);
    assert!(gone(host), "the Host kept running");
    assert!(!pid_file.exists(), "the pid file names a dead pid");
}
