//! A setup killed outright while its direct start was under way (journaled `stop_host`, not
//! yet `host_started`): a pid file newer than the receipt is either that start's Host or one
//! the user started since (`host start`, which writes no audit line). The stack's lock tells
//! them apart: every `host start` takes it, and a holder that lets go empties the record the
//! killed setup left in the lock file. The user's Host is never stopped by a recovery; the
//! killed run's own is.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use crate::common::{has_all, has_none, wait_until};
use crate::setup::Setup;

/// Where the receipt of stack `st` lives.
fn receipt(s: &Setup) -> std::path::PathBuf {
    s.t.home.join(".oysterun-stacks/st/run/setup-pending")
}

fn pid_file(s: &Setup) -> std::path::PathBuf {
    s.t.home.join(".oysterun-stacks/st/run/oysterun-host-st.pid")
}

/// Killed as its start began (before the Host ran): the user's `host stop` finds nothing,
/// their `host start` starts their Host, and the next setup takes nothing back. It stopped
/// that Host and removed the stack directory, taking the Host for the killed run's.
#[test]
fn a_host_started_after_a_setup_killed_as_its_start_began_is_left_running() {
    let last_step = |s: &Setup| -> Option<String> {
        let text = std::fs::read_to_string(receipt(s)).ok()?;
        let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
        Some(doc["steps"].as_array()?.last()?.to_string())
    };
    let s = (0..40)
        .find_map(|n| {
            let s = Setup::new(0);
            let mut killed = s.t.cmd();
            killed.env("OYSTER_TEST_KILL_AT_STEP", n.to_string());
            let out = killed.args(s.args(&["--no-install-providers"])).output().unwrap();
            assert_eq!(out.status.signal(), Some(9), "setup ended before its start's step");
            (last_step(&s).as_deref() == Some("\"stop_host\"")).then_some(s)
        })
        .expect("the step of the direct start");
    s.t.run(["host", "stop", "--stack", "st"]).ok();
    let mut start = s.args(&[]);
    start.splice(0..1, ["host".to_owned(), "start".to_owned()]);
    s.t.run(start).ok();
    let users = std::fs::read_to_string(pid_file(&s)).unwrap();
    let r = s.pty(b"\r", &[]);
    let output = r["output"].as_str().unwrap().to_owned();
    has_all(&output, &["nothing of it is taken back"]);
    has_none(&output, &["took back", "stopped the Host"]);
    assert_eq!(std::fs::read_to_string(pid_file(&s)).unwrap(), users, "{output}");
    s.t.run(["host", "status", "--stack", "st"]).ok();
    s.t.run(["host", "stop", "--stack", "st"]).ok();
    s.t.wait_no_processes();
}

/// Killed while its own Host ran but did not answer yet (its pid file written, no
/// `host_started`), nobody using the stack since: that Host is the killed run's, and the next
/// setup stops it.
#[test]
fn the_host_of_a_setup_killed_during_its_start_is_taken_back() {
    let s = Setup::new(0);
    let unhealthy = s.t.path("root/host-service/unhealthy");
    std::fs::write(&unhealthy, "").unwrap();
    let mut killed =
        s.t.cmd()
            .args(s.args(&["--yes", "--no-install-providers"]))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
    wait_until(Duration::from_secs(15), "the killed run's pid file", || pid_file(&s).exists());
    std::thread::sleep(Duration::from_millis(300));
    killed.kill().unwrap();
    killed.wait().unwrap();
    std::fs::remove_file(&unhealthy).unwrap();
    let text = std::fs::read_to_string(receipt(&s)).unwrap();
    has_none(&text, &["host_started"]);
    let r = s.pty(b"\r", &[]);
    let output = r["output"].as_str().unwrap().to_owned();
    assert_eq!(r["code"], 0, "{output}");
    has_all(&output, &["stopped the Host it started"]);
    s.t.wait_no_processes();
}
