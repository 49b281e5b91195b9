//! A setup whose plan went stale while it asked: the user started the Host directly
//! (`oyster host start`) while setup's question waited. The plan said to start the Host;
//! going on installed the providers, rewrote config.json, then failed at the start ("already
//! running") and rolled it all back. It must change nothing at all, leave the user's Host as
//! it is, and say so; likewise under launchd for a job the user installed meanwhile.

use crate::common::{self, has_all, has_none, BIN};
use crate::setup::Setup;

/// `oyster setup` on a terminal, answering yes, while `verb` (`host start`, `install`) of stack
/// st runs once its question waits (its output kept in a file, away from the terminal driver,
/// which reads until "waiting for"). Returns setup's exit code and output, and what `verb` said.
fn while_asked(s: &Setup, verb: &str) -> (serde_json::Value, String, String) {
    let log = s.t.path("while-asked.log");
    let run = format!(
        "'{BIN}' {verb} --stack st --settle-ms 200 --port {} --root '{}' --node-bin '{}' >'{}' 2>&1; \
         echo 'waiting for' >&2; sleep 5",
        s.port(),
        s.t.path("root").display(),
        s.t.path("nodepfx/bin/node").display(),
        log.display(),
    );
    let mut c = s.t.pty_cmd(b"y\r", s.args(&[]));
    c.env("PTY_PASSWORD", "setup-test password");
    c.env("PTY_WHILE_ASKED", serde_json::json!(["/bin/sh", "-c", run]).to_string());
    let r = common::pty_report(&mut c);
    let output = r["output"].as_str().unwrap().to_owned();
    (r["code"].clone(), output, std::fs::read_to_string(log).unwrap_or_default())
}

#[test]
fn a_host_started_while_setup_asked_makes_the_setup_change_nothing() {
    let s = Setup::new(0);
    // The stack configured, its Host not running.
    s.t.cmd().args(s.args(&["--yes", "--no-install-providers", "--no-start"])).output().unwrap();
    let config = std::fs::read(s.config()).unwrap();
    let (code, output, said) = while_asked(&s, "host start");
    let pid_file = s.t.home.join(".oysterun-stacks/st/run/oysterun-host-st.pid");
    let started = std::fs::read_to_string(&pid_file).unwrap_or_default();
    assert!(!started.is_empty(), "host start did not start the Host: {said}\n{output}");
    assert_eq!(code, 1, "{output}");
    has_all(
        &output,
        &[
            "started, stopped or installed the Host of stack st",
            "run `oyster setup --stack st` again",
        ],
    );
    has_none(&output, &["rolled back", "Installing", "already running"]);
    assert!(s.npm_calls().is_empty(), "npm ran: {:?}\n{output}", s.npm_calls());
    assert_eq!(std::fs::read(s.config()).unwrap(), config, "config.json\n{output}");
    // The user's Host: untouched, verified.
    assert_eq!(std::fs::read_to_string(&pid_file).unwrap(), started, "{output}");
    s.t.run(["host", "status", "--stack", "st"]).ok();
    s.t.run(["host", "stop", "--stack", "st"]).ok();
    s.t.wait_no_processes();
}

/// Under launchd: the user installs the job (`oyster install`) while setup's question waits.
/// config.json stays as it was (the same port and root), but the plist the plan decided on is
/// gone: setup changes nothing, names the plist, and the user's job keeps running.
#[test]
fn a_job_installed_while_setup_asked_makes_the_setup_change_nothing() {
    let mut s = Setup::new(0);
    s.t.use_sim();
    // The stack configured, its job not installed.
    s.t.run(s.args(&["--yes", "--no-install-providers"])).ok();
    s.t.run(["agent", "uninstall", "--stack", "st"]).ok();
    let config = std::fs::read(s.config()).unwrap();
    let plist = s.t.home.join("Library/LaunchAgents/com.oysterun.host.st.plist");
    assert!(!plist.exists());
    let (code, output, said) = while_asked(&s, "install");
    assert!(plist.exists(), "install did not install the job: {said}\n{output}");
    let installed = std::fs::read(&plist).unwrap();
    assert_eq!(code, 1, "{output}");
    has_all(
        &output,
        &["installed the Host of stack st", "com.oysterun.host.st.plist is not the one"],
    );
    has_none(&output, &["rolled back", "Installing"]);
    assert!(s.npm_calls().is_empty(), "npm ran: {:?}\n{output}", s.npm_calls());
    assert_eq!(std::fs::read(s.config()).unwrap(), config, "config.json\n{said}\n{output}");
    assert_eq!(std::fs::read(&plist).unwrap(), installed, "{output}");
    let st = s.t.run(["status", "--stack", "st", "--json"]).ok().json();
    assert_eq!(st["verified"], true, "{st}");
    s.t.run(["agent", "uninstall", "--stack", "st"]).ok();
    s.t.wait_no_processes();
}
