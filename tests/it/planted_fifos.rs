//! A FIFO planted where oyster reads one of its own files (the Node version cache, the pid
//! file, the origin file, the exec record) never hangs a command: each goes through the one
//! regular-file reader, which opens without blocking and refuses what is not a regular file.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::has_all;
use crate::common::{args, free_port, Run, TestContext};

const STACK: &str = "ff";

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

fn run_dir(t: &TestContext) -> PathBuf {
    t.home.join(".oysterun-stacks").join(STACK).join("run")
}

/// Runs oyster, failing the test (and killing it) if it has not finished within 60 s.
fn bounded(t: &TestContext, args: &[String]) -> Run {
    let mut child = t.spawn(args, Stdio::inherit(), Stdio::piped(), Stdio::piped());
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "`oyster {}` hung\nstderr:\n{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Run(child.wait_with_output().unwrap())
}

fn agent(root: &Path, port: u16, verb: &str) -> Vec<String> {
    let a = args(&["agent", verb]).stack(STACK);
    if ["stop", "uninstall"].contains(&verb) {
        return a.into();
    }
    a.host(root).port(port).wait(10, 200).into()
}

#[test]
fn a_fifo_at_the_node_version_cache_hangs_no_install_regenerate_or_restart() {
    let (t, root, port) = TestContext::sim_root();
    let cache = run_dir(&t).join("node-version.cache");
    mkfifo(&cache);
    for verb in ["install", "regenerate", "restart"] {
        bounded(&t, &agent(&root, port, verb)).ok();
        mkfifo(&cache);
    }
    bounded(&t, &agent(&root, port, "uninstall")).ok();
}

#[test]
fn a_fifo_at_the_pid_file_hangs_neither_agent_stop_nor_uninstall() {
    let (t, root, port) = TestContext::sim_root();
    let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.ff.plist");
    let pid_file = run_dir(&t).join("oysterun-host-ff.pid");
    bounded(&t, &agent(&root, port, "install")).ok();
    mkfifo(&pid_file);
    bounded(&t, &agent(&root, port, "stop")).ok();
    assert!(plist.exists(), "stop keeps the plist");
    let st = t.run(["agent", "status", "--stack", STACK, "--json"]).json();
    assert_eq!(st["summary"], "stopped", "{st}");
    mkfifo(&pid_file);
    bounded(&t, &agent(&root, port, "uninstall")).ok();
    assert!(!plist.exists(), "uninstall removes the plist");
}

#[test]
fn fifos_at_the_identity_files_hang_neither_host_status_nor_host_stop() {
    let t = TestContext::new();
    let run = t.home.join(".oysterun/run");
    for name in ["oysterun-host.pid", "oysterun-host.origin.tsv", "oyster-exec.json"] {
        let f = run.join(name);
        mkfifo(&f);
        for verb in ["status", "stop"] {
            let r = bounded(&t, &["host".into(), verb.into()]);
            if name == "oysterun-host.pid" {
                // The pid file itself is refused, naming it, as every special file is.
                let e = r.stderr();
                assert_eq!(r.code(), 2, "{e}");
                has_all(&e, &["FIFO", name]);
            }
        }
        std::fs::remove_file(&f).unwrap();
    }
}

#[test]
fn a_fifo_at_a_lock_file_is_refused_naming_it_never_waited_on() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    let lock = t.lock_file(STACK);
    mkfifo(&lock);
    let r = bounded(
        &t,
        &Vec::from(args(&["host", "start"]).stack(STACK).host(&root).port(free_port())),
    );
    let e = r.stderr();
    assert_eq!(r.code(), 2, "{e}");
    has_all(&e, &["com.oysterun.host.ff.lock", "FIFO"]);
    assert!(t.own_processes().is_empty(), "nothing was started");

    let config_lock = t.home.join(".oysterun/config.json.lock");
    mkfifo(&config_lock);
    let id = crate::common::provider_ids()[0].clone();
    let r = bounded(&t, &["providers", "set", &id, "/opt/tools/bin/tool"].map(String::from));
    let e = r.stderr();
    assert_eq!(r.code(), 2, "{e}");
    has_all(&e, &["config.json.lock", "FIFO"]);
    assert!(!t.home.join(".oysterun/config.json").exists());
}
