//! A setup whose plan went stale while it asked: the user started the Host directly
//! (`oyster host start`) while setup's question waited. The plan said to start the Host;
//! going on installed the providers, rewrote config.json, then failed at the start ("already
//! running") and rolled it all back. It must change nothing at all, leave the user's Host as
//! it is, and say so.

use crate::common::{self, has_all, has_none, BIN};
use crate::setup::Setup;

#[test]
fn a_host_started_while_setup_asked_makes_the_setup_change_nothing() {
    let s = Setup::new(0);
    // The stack configured, its Host not running.
    s.t.cmd().args(s.args(&["--yes", "--no-install-providers", "--no-start"])).output().unwrap();
    let config = std::fs::read(s.config()).unwrap();
    // While the question waits: `host start` (its output kept from the terminal driver,
    // which reads until "waiting for").
    let start = format!(
        "'{BIN}' host start --stack st --settle-ms 200 --root '{}' --node-bin '{}' >'{}' 2>&1; \
         echo 'waiting for' >&2; sleep 5",
        s.t.path("root").display(),
        s.t.path("nodepfx/bin/node").display(),
        s.t.path("host-start.log").display(),
    );
    let mut c = s.t.pty_cmd(b"y\r", s.args(&[]));
    c.env("PTY_PASSWORD", "setup-test password");
    c.env("PTY_WHILE_ASKED", serde_json::json!(["/bin/sh", "-c", start]).to_string());
    let r = common::pty_report(&mut c);
    let output = r["output"].as_str().unwrap().to_owned();
    let pid_file = s.t.home.join(".oysterun-stacks/st/run/oysterun-host-st.pid");
    let started = std::fs::read_to_string(&pid_file).unwrap_or_default();
    let said = std::fs::read_to_string(s.t.path("host-start.log")).unwrap_or_default();
    assert!(!started.is_empty(), "host start did not start the Host: {said}\n{output}");
    assert_eq!(r["code"], 1, "{output}");
    has_all(
        &output,
        &["started or stopped the Host of stack st", "run `oyster setup --stack st` again"],
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
