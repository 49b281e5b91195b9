//! Real Macs, round 4 (issue 39): what newer macOS answers that oyster did not accept, what a
//! session without the console can load, and what launchd's helpers do when they never answer
//! — against the simulator, each in the shape a real Mac shows (docs/launchd.md gives the
//! source for each).

use crate::common::{Run, Stack};

fn run_with(s: &Stack, env: &[(&str, &str)], args: &[String]) -> Run {
    let mut c = s.t.cmd();
    for (k, v) in env {
        c.env(k, v);
    }
    Run(c.args(args).output().unwrap())
}

/// 39.3: newer macOS answers `bootout` of a label that is not loaded with 5, not 3
/// (jdx/mise#10965), and a job that is going away by the time the bootout is issued again
/// (after a 36) answers it too. `stop`, a reload and `uninstall` take a 5 as "decide by
/// `print`": the label is gone, so each succeeds. Before, each failed with "exited with 5".
#[test]
fn a_bootout_answered_5_for_a_label_going_away_is_decided_by_print() {
    let mut s = Stack::new("bo5");
    s.t.run(s.args("install")).ok();
    // The first bootout answers 36 (in progress) and goes on; the one issued again finds the
    // label draining, which newer macOS answers with 5.
    let race = [
        ("LAUNCHD_SIM_BOOTOUT_IN_PROGRESS", "1"),
        ("LAUNCHD_SIM_BOOTOUT_NOT_LOADED_CODE", "5"),
    ];
    let stop: Vec<String> = ["stop", "--stack", s.name].map(String::from).to_vec();
    let r = run_with(&s, &race, &stop).ok();
    assert!(!r.stderr().contains("exited with 5"), "{}", r.stderr());
    assert_eq!(s.status()["summary"], "stopped");
    assert!(!s.loaded_in("gui"));
    s.t.run(s.args("start")).ok();
    // A reload (another port): bootout 36, then 5 while it drains; the new definition loads.
    s.port = crate::common::free_port();
    run_with(&s, &race, &s.args("regenerate")).ok();
    let st = s.status();
    assert_eq!(
        (st["verified"].as_bool(), &st["port"]),
        (Some(true), &serde_json::json!(s.port)),
        "{st}"
    );
    // stop --no-wait: a 5 with the label already gone is no failure either.
    let mut stop_now = stop.clone();
    stop_now.push("--no-wait".into());
    run_with(
        &s,
        &[("LAUNCHD_SIM_BOOTOUT_NOT_LOADED_CODE", "5")],
        &stop_now,
    )
    .ok();
    run_with(
        &s,
        &[("LAUNCHD_SIM_BOOTOUT_NOT_LOADED_CODE", "5")],
        &stop_now,
    )
    .ok();
    s.t.run(s.args("start")).ok();
    let uninstall: Vec<String> = ["agent", "uninstall", "--stack", s.name]
        .map(String::from)
        .to_vec();
    run_with(&s, &race, &uninstall).ok();
    assert!(!s.loaded_in("gui") && !s.plist().exists());
    s.done();
}
