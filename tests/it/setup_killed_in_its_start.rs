//! A setup killed outright while its direct start was under way (journaled `stop_host`, not
//! yet `host_started`): a pid file newer than the receipt is either that start's Host or one
//! the user started since (`host start`, which writes no audit line). The stack's lock tells
//! them apart: every `host start` takes it, and a holder that lets go empties the record the
//! killed setup left in the lock file. The user's Host is never stopped by a recovery; the
//! killed run's own is.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use crate::common::{has_all, has_none, wait_until};
use crate::setup::Setup;

fn pid_file(s: &Setup) -> std::path::PathBuf {
    s.t.home.join(".oysterun-stacks/st/run/oysterun-host-st.pid")
}

/// A fresh setup killed outright right after its receipt names `step` as its last.
fn killed_after(step: &str) -> Setup {
    let last_step = |s: &Setup| -> Option<String> {
        let text = std::fs::read_to_string(s.receipt()).ok()?;
        let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
        Some(doc["steps"].as_array()?.last()?.to_string())
    };
    (0..40)
        .find_map(|n| {
            let s = Setup::new(0);
            let mut killed = s.t.cmd();
            killed.env("OYSTER_TEST_KILL_AT_STEP", n.to_string());
            let out = killed.args(s.args(&["--no-install-providers"])).output().unwrap();
            assert_eq!(out.status.signal(), Some(9), "setup ended before its {step} step");
            if last_step(&s).as_deref() == Some(&format!("\"{step}\"")) {
                return Some(s);
            }
            s.t.run(["host", "stop", "--stack", "st"]);
            None
        })
        .unwrap_or_else(|| panic!("no {step} step"))
}

/// The user's `host stop` (which finds the killed run's Host, or nothing), then their `host
/// start`, then the next setup: it takes nothing back and leaves their Host running.
fn users_host_is_left_running(s: &Setup) {
    s.t.run(["host", "stop", "--stack", "st"]).ok();
    let mut start = s.args(&[]);
    start.splice(0..1, ["host".to_owned(), "start".to_owned()]);
    s.t.run(start).ok();
    let users = std::fs::read_to_string(pid_file(s)).unwrap();
    let r = s.pty(b"\r", &[]);
    let output = r["output"].as_str().unwrap().to_owned();
    has_all(&output, &["nothing of it is taken back"]);
    has_none(&output, &["took back", "stopped the Host"]);
    assert_eq!(std::fs::read_to_string(pid_file(s)).unwrap(), users, "{output}");
    s.t.run(["host", "status", "--stack", "st"]).ok();
    s.t.run(["host", "stop", "--stack", "st"]).ok();
    s.t.wait_no_processes();
}

/// Killed as its start began (before the Host ran): their Host is left running. It stopped
/// that Host and removed the stack directory, taking the Host for the killed run's.
#[test]
fn a_host_started_after_a_setup_killed_as_its_start_began_is_left_running() {
    users_host_is_left_running(&killed_after("stop_host"));
}

/// Killed once its direct start verified: their Host is left running. It stopped that Host,
/// taking it for the killed run's own.
#[test]
fn a_host_started_after_a_setup_killed_past_its_start_is_left_running() {
    users_host_is_left_running(&killed_after("host_started"));
}

/// Killed while its own Host ran but did not answer yet (its pid file written, no
/// `host_started`), nobody using the stack since: that Host is the killed run's, and the next
/// setup stops it.
#[test]
fn the_host_of_a_setup_killed_during_its_start_is_taken_back() {
    let s = Setup::new(0);
    let unhealthy = s.t.path("root/host-service/unhealthy");
    std::fs::write(&unhealthy, "").unwrap();
    let mut killed = s.spawn_quiet(&["--yes", "--no-install-providers"]);
    wait_until(Duration::from_secs(15), "the killed run's pid file", || pid_file(&s).exists());
    std::thread::sleep(Duration::from_millis(300));
    killed.kill().unwrap();
    killed.wait().unwrap();
    std::fs::remove_file(&unhealthy).unwrap();
    let text = std::fs::read_to_string(s.receipt()).unwrap();
    has_none(&text, &["host_started"]);
    let r = s.pty(b"\r", &[]);
    let output = r["output"].as_str().unwrap().to_owned();
    assert_eq!(r["code"], 0, "{output}");
    has_all(&output, &["stopped the Host it started"]);
    s.t.wait_no_processes();
}
