//! What doctor finds that a user could not get past alone (issue 38, item 6): a program on a
//! stopped stack's port (pid and name, as `start` names it), the last error line of a Host
//! that keeps crashing, and `--all`.

use std::process::{Command, Stdio};

use crate::common::{self, free_port, python, TestContext};

/// A python process listening on `port` (another program on the Host's port).
fn squatter(port: u16) -> std::process::Child {
    let mut child = Command::new(python())
        .args([
            "-c",
            &format!(
                "import socket,sys,time\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\ns.bind(('127.0.0.1',{port}))\ns.listen()\nprint('up',flush=True)\ntime.sleep(60)"
            ),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    common::first_line(&mut child);
    child
}

#[test]
fn doctor_names_the_program_holding_a_stopped_stacks_port() {
    let (t, port) = TestContext::with_stopped("dev");
    t.wait_no_processes();
    let mut other = squatter(port);
    let doc = t.run(["doctor", "dev", "--json"]).json();
    let row = common::doctor_check(&doc, "port");
    let detail = row["detail"].as_str().unwrap();
    assert_eq!(row["status"], "warn", "{row}");
    assert!(
        detail.contains(&format!("port {port} is held by pid {}", other.id()))
            && detail.contains("python")
            && detail.contains("`oyster start dev` would be refused"),
        "{row}"
    );
    // As `start` names it.
    t.run(common::args(&["start", "dev"]).settle(200))
        .fails_with(1)
        .stderr_has(&format!("port {port} is already held by pid {}", other.id()));
    other.kill().unwrap();
    other.wait().unwrap();
    let doc = t.run(["doctor", "dev", "--json"]).json();
    assert!(!doc["checks"].to_string().contains("\"port\""), "{doc}");
    // The stack's own Host on its port, as launchd runs it: no port row either.
    t.run(common::args(&["start", "dev"]).settle(200)).ok();
    let doc = t.run(["doctor", "dev", "--json"]).json();
    assert!(!doc["checks"].to_string().contains("\"port\""), "{doc}");
    t.run(["uninstall", "dev"]).ok();
}

#[test]
fn doctor_says_a_crash_loops_last_error_line_from_the_log() {
    let mut t = TestContext::with_pinned_host();
    t.scale_throttle("0.2");
    t.run(common::args(&["install", "dev"]).port(free_port()).settle(200)).ok();
    TestContext::fixture_flag(&t.host_root(), "crash-on-start", "");
    t.run(["kill", "dev"]).ok();
    common::wait_until(std::time::Duration::from_secs(20), "a crash loop", || {
        t.run(["status", "dev", "--json"]).json()["crash_loop"] == true
    });
    let doc = t.run(["doctor", "dev", "--json"]).fails_with(1).json();
    let row = common::doctor_check(&doc, "launchd");
    let detail = row["detail"].as_str().unwrap();
    assert_eq!(row["status"], "fail", "{row}");
    assert!(
        detail.contains("crash loop")
            && detail
                .contains("the log's last error: fixture host: crash-on-start is set; exiting 1"),
        "{row}"
    );
    t.run(["uninstall", "dev"]).ok();
    t.wait_no_processes();
}

#[test]
fn doctor_all_reports_every_stack_and_fails_when_one_does() {
    let t = TestContext::with_claude();
    let (a, b) = (free_port(), free_port());
    t.install("one", a);
    t.install("two", b);
    let all = t.run(["doctor", "--all", "--json"]).json();
    let names = crate::common::column(&all["stacks"], "stack");
    assert_eq!(names, ["one", "two"], "{all}");
    t.run(["doctor", "--all"]).stdout_has_all(&["stack one", "stack two"]);
    // One stack's failure fails the whole run, as `status --all`.
    std::fs::write(t.stack_dir("two").join("host/config.json"), "{not json").unwrap();
    let r = t.run(["doctor", "--all", "--json"]).fails_with(1);
    assert_eq!(r.json()["ok"], false);
    t.run(["doctor", "--all", "--stack", "one"]).fails_with(2);
    t.run(["uninstall", "one"]).ok();
    t.run(["uninstall", "two"]).ok();
    t.wait_no_processes();
}
