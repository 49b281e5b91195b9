//! A restart never waits out launchd's throttle, and starts few `launchctl` processes: counted
//! with a recording wrapper around the simulator (each line of its log is one process start).
//! The counts are deterministic enough for an upper bound; wall times are only reported.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use crate::common::{args, free_port, real_node, sim_bin, TestContext};

pub struct Recorded {
    pub t: TestContext,
    pub root: PathBuf,
    pub port: u16,
    log: PathBuf,
}

impl Recorded {
    /// A simulator behind a wrapper that appends its argv to a log, then execs it.
    pub fn new() -> Recorded {
        let mut t = TestContext::new();
        t.use_sim();
        let log = t.path("launchctl-calls.log");
        let wrapper = t.path("launchctl-recorder");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
                log.display(),
                sim_bin().display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        for (k, v) in &mut t.extra_env {
            if k == "OYSTER_LAUNCHCTL" {
                *v = wrapper.display().to_string();
            }
        }
        let root = t.fixture_root("root");
        Recorded { t, root, port: free_port(), log }
    }

    pub fn args(&self, verb: &str) -> Vec<String> {
        let mut a: Vec<String> = ["agent", verb, "--stack", "rt"].map(String::from).to_vec();
        a.extend(
            [
                "--root",
                self.root.to_str().unwrap(),
                "--node-bin",
                real_node().to_str().unwrap(),
                "--port",
                &self.port.to_string(),
            ]
            .map(String::from),
        );
        a
    }

    /// Runs one verb and returns the launchctl calls it made, one argv per entry.
    pub fn calls_of(&self, verb: &str) -> (crate::common::Run, Vec<String>) {
        let _ = std::fs::remove_file(&self.log);
        let r = self.t.run(self.args(verb));
        let calls = std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect();
        (r, calls)
    }

    pub fn done(&self) {
        self.t.run(["agent", "uninstall", "--stack", "rt"]).ok();
        self.t.wait_no_processes();
    }
}

#[test]
fn restart_right_after_start_of_a_host_without_a_sigterm_handler_does_not_wait_out_the_throttle() {
    let r = Recorded::new();
    // Node's default: the process dies at once on SIGTERM, before launchd has seen the exit.
    TestContext::fixture_flag(&r.root, "no-sigterm-handler", "");
    r.t.run(r.args("install")).ok();
    let t0 = std::time::Instant::now();
    let (run, calls) = r.calls_of("restart");
    let took = t0.elapsed();
    let run = run.ok();
    run.stdout_has("Host verified");
    assert!(!run.stderr().contains("kickstart -k"), "{}", run.stderr());
    eprintln!("restart of a young handler-less Host: {} launchctl starts, {took:?}", calls.len());
    // Waiting out the throttle polled `print` ~50 times over ~10 s.
    assert!(calls.len() <= 8, "{} launchctl starts:\n{}", calls.len(), calls.join("\n"));
    r.done();
}

#[test]
fn restart_of_an_older_host_starts_at_most_six_launchctl_processes() {
    let mut r = Recorded::new();
    // ThrottleInterval's wait scaled from 10 s to 1 s, so the Host is older than it after
    // 1.5 s instead of 10.5 (oyster reads launchd's state, not the Host's age).
    r.t.scale_throttle("0.1");
    r.t.run(r.args("install")).ok();
    // Older than its ThrottleInterval: launchd's KeepAlive respawns it at once.
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    let (run, calls) = r.calls_of("restart");
    run.ok();
    eprintln!("restart of an older Host: {} launchctl starts", calls.len());
    assert!(calls.len() <= 6, "{} launchctl starts:\n{}", calls.len(), calls.join("\n"));
    r.done();
}

#[test]
fn bootout_is_issued_again_while_it_answers_36() {
    let mut r = Recorded::new();
    r.t.run(r.args("install")).ok();
    // A changed plist (another port) is reloaded: bootout, which answers 36 twice.
    r.port = free_port();
    r.t.extra_env.push(("LAUNCHD_SIM_BOOTOUT_IN_PROGRESS".into(), "2".into()));
    let (run, calls) = r.calls_of("regenerate");
    run.ok();
    let bootouts = calls.iter().filter(|c| c.starts_with("bootout ")).count();
    assert_eq!(bootouts, 3, "re-issued on each 36, then polled:\n{}", calls.join("\n"));
    r.done();
}

/// The launchctl calls one run of `args` made.
fn calls_of_args(r: &Recorded, args: &[&str]) -> (crate::common::Run, Vec<String>) {
    let _ = std::fs::remove_file(&r.log);
    let run = r.t.run(args);
    let calls =
        std::fs::read_to_string(&r.log).unwrap_or_default().lines().map(str::to_owned).collect();
    (run, calls)
}

#[test]
fn list_asks_launchd_once_per_domain_whatever_the_number_of_stacks() {
    let r = Recorded::new();
    r.t.run(r.args("install")).ok();
    for n in 0..8 {
        let port = free_port().to_string();
        r.t.run(args(&["config", "sync"]).stack(&format!("more{n}")).port(&port)).ok();
    }
    let (run, calls) = calls_of_args(&r, &["list", "--json"]);
    let doc = run.ok().json();
    assert_eq!(doc["stacks"].as_array().unwrap().len(), 9, "{doc}");
    let rt = doc["stacks"].as_array().unwrap().iter().find(|s| s["stack"] == "rt").unwrap();
    assert_eq!(rt["summary"], "verified", "{rt}");
    // One `print` per domain; a running, verified job needs nothing more.
    assert!(calls.len() <= 3, "{} launchctl calls: {calls:#?}", calls.len());
    assert!(
        calls.iter().all(|c| !c.starts_with("print gui/0/") && !c.contains("/com.")),
        "a per-job print: {calls:#?}"
    );
    r.done();
}
