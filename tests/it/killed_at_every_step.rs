//! The crash matrix (issue 36 item 8): a run that changes a job is SIGKILLed right after its
//! receipt names step n as the next, for every step n it decided (as `--dry-run --json` lists
//! them), through `OYSTER_TEST_KILL_AT_STEP` (a hook compiled into debug builds only). Whatever
//! n: the run was killed there (so every step of a change is journaled before it is taken), its
//! receipt is on disk, and the next run ends with one verified Host whose config.json, plist
//! and `/health` port agree, and no receipt left.

use std::os::unix::process::ExitStatusExt;

use crate::common::{free_port, has_all, Stack, TestContext};

/// The steps `args` would take, from its `--dry-run --json`.
fn steps(t: &TestContext, args: &[String]) -> Vec<String> {
    let mut dry = args.to_vec();
    dry.extend(["--dry-run".into(), "--json".into()]);
    let doc = t.run(&dry).ok().json();
    doc["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no steps: {doc}"))
        .iter()
        .map(|s| s["step"].as_str().unwrap().to_owned())
        .collect()
}

/// Runs `args` (on `stack`) killed before step `n`: it must die by SIGKILL and leave its
/// receipt.
fn killed_at(t: &TestContext, stack: &str, args: &[String], n: usize, step: &str) {
    killed(t, args, n, step);
    assert!(
        t.stack_dir(stack).join("run/pending").exists(),
        "killed before step {n} ({step}): no receipt"
    );
}

/// Runs `args` killed at its step boundary `n`: it must die by SIGKILL.
fn killed(t: &TestContext, args: &[String], n: usize, step: &str) {
    let out = t.cmd().env("OYSTER_TEST_KILL_AT_STEP", n.to_string()).args(args).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(9),
        "{args:?}: step {n} ({step}) was not journaled before it was taken (the run ended {:?}): {said}",
        out.status
    );
}

/// The port the installed definition gives the Host: the unit's `Environment=` line under
/// systemd, else the plist's `EnvironmentVariables`.
fn definition_port(t: &TestContext, stack: &str) -> Option<String> {
    let label = format!("com.oysterun.host.{stack}");
    let unit = t.home.join(format!(".config/systemd/user/{label}.service"));
    if let Ok(text) = std::fs::read_to_string(unit) {
        return text.lines().find_map(|l| {
            let v = l.strip_prefix("Environment=\"OYSTERUN_PORT=")?;
            Some(v.trim_end_matches('"').to_owned())
        });
    }
    let plist = plist::Value::from_file(t.home.join(format!("Library/LaunchAgents/{label}.plist")));
    let plist = plist.ok()?;
    let env = plist.as_dictionary()?.get("EnvironmentVariables")?.as_dictionary()?;
    Some(env.get("OYSTERUN_PORT")?.as_string()?.to_owned())
}

/// The stack is verified on one port that config.json, the definition and the Host agree on,
/// and no receipt is left: that port.
fn consistent(t: &TestContext, stack: &str, what: &str) -> u16 {
    let st = t.run(["status", stack, "--json"]).json();
    assert_eq!(st["summary"], "verified", "{what}: {st}");
    let port = u16::try_from(st["port"].as_u64().expect("a port")).unwrap();
    let dir = t.stack_dir(stack);
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("host/config.json")).unwrap()).unwrap();
    assert_eq!(config["port"], port, "{what}: config.json");
    assert_eq!(definition_port(t, stack), Some(port.to_string()), "{what}: the definition");
    assert!(!dir.join("run/pending").exists(), "{what}: a receipt is left");
    port
}

/// `restart --port NEW` killed before each of its steps, each time settled by a plain restart:
/// the port the stack ends on is the old one or the new one, never a third.
fn restart_matrix(t: &TestContext, stack: &str, base: &[String], port: u16) {
    let with = |p: u16| -> Vec<String> {
        let mut a = base.to_vec();
        a.extend(["--port".into(), p.to_string()]);
        a
    };
    let decided = steps(t, &with(free_port()));
    assert!(decided.len() >= 4, "{decided:?}");
    let mut port = port;
    for (n, step) in decided.iter().enumerate() {
        let new = free_port();
        killed_at(t, stack, &with(new), n, step);
        t.run(base).ok();
        let now = consistent(t, stack, &format!("after a kill before step {n} ({step})"));
        assert!(now == new || now == port, "step {n}: port {now}, neither {port} nor {new}");
        port = now;
    }
}

#[test]
fn a_restart_onto_a_new_port_killed_at_any_step_is_settled_by_the_next_restart() {
    let s = Stack::installed("killrs");
    let base: Vec<String> = s.agent_args("restart", false, Some((10, 300))).into();
    restart_matrix(&s.t, s.name, &base, s.port);
    s.done();
}

#[test]
fn a_first_install_killed_at_any_step_is_settled_by_the_next_install() {
    let s = Stack::new("killin");
    let install: Vec<String> = s.args("install");
    let decided = steps(&s.t, &install);
    assert!(decided.len() >= 3, "{decided:?}");
    for (n, step) in decided.iter().enumerate() {
        killed_at(&s.t, s.name, &install, n, step);
        s.t.run(&install).ok();
        consistent(&s.t, s.name, &format!("after a kill before step {n} ({step})"));
        // A first install again for the next step.
        s.t.run(["uninstall", s.name, "--purge", "--yes"]).ok();
        s.t.wait_no_processes();
        assert!(!s.stack_dir().exists());
    }
}

#[test]
fn a_start_killed_at_any_step_is_settled_by_the_next_start() {
    let s = Stack::installed("killst");
    let start: Vec<String> = s.agent_args("start", false, Some((10, 300))).into();
    s.t.run(["stop", s.name]).ok();
    let decided = steps(&s.t, &start);
    assert!(decided.len() >= 2, "{decided:?}");
    for (n, step) in decided.iter().enumerate() {
        killed_at(&s.t, s.name, &start, n, step);
        s.t.run(&start).ok();
        consistent(&s.t, s.name, &format!("after a kill before step {n} ({step})"));
        s.t.run(["stop", s.name]).ok();
    }
    s.done();
}

/// `stop` and `uninstall` take no receipt (each step is one the next run takes again or finds
/// done): killed before each of their steps, the next `stop` leaves the Host stopped and
/// disabled (and `start` verifies it again), the next `uninstall` leaves nothing loaded, no
/// plist and the label enabled.
#[test]
fn a_stop_or_an_uninstall_killed_at_any_step_is_finished_by_the_next_one() {
    let s = Stack::installed("killsu");
    let start: Vec<String> = s.agent_args("start", false, Some((10, 300))).into();
    let stop: Vec<String> = ["stop", s.name].map(String::from).into();
    let decided = steps(&s.t, &stop);
    assert_eq!(decided, ["boot_out", "disable"]);
    for (n, step) in decided.iter().enumerate() {
        killed(&s.t, &stop, n, step);
        s.t.run(&stop).ok();
        let st = s.status();
        assert_eq!(st["summary"], "stopped", "stop killed before {step}: {st}");
        assert!(s.disabled_in("gui"), "stop killed before {step}: not disabled");
        s.t.run(&start).ok();
        consistent(&s.t, s.name, &format!("start after a stop killed before {step}"));
    }
    let uninstall: Vec<String> = ["uninstall", s.name].map(String::from).into();
    let decided = steps(&s.t, &uninstall);
    assert_eq!(decided, ["boot_out", "enable", "remove_definition"]);
    for (n, step) in decided.iter().enumerate() {
        // From a stopped (disabled) job: the uninstall must enable it again.
        s.t.run(&stop).ok();
        s.t.run(&start).ok();
        killed(&s.t, &uninstall, n, step);
        s.t.run(&uninstall).ok();
        assert!(!s.plist().exists(), "uninstall killed before {step}");
        assert!(s.launchd_pid().is_none(), "uninstall killed before {step}");
        assert!(!s.disabled_in("gui"), "uninstall killed before {step}: left disabled");
        s.t.run(s.args("install")).ok();
    }
    s.done();
}

/// The same under a real `systemd --user`: a unit's install, restart and stop, killed before
/// each step, are settled by the next run.
#[cfg(target_os = "linux")]
#[test]
fn under_systemd_an_install_a_restart_and_a_stop_killed_at_any_step_are_settled_by_the_next_run() {
    let Some((m, t)) = crate::common::user_manager::world() else {
        return;
    };
    let stack = "sdkill";
    let port = free_port();
    let timing = ["--wait", "15", "--settle-ms", "300"].map(String::from);
    let mut install: Vec<String> = vec!["install".into(), stack.into(), "--port".into()];
    install.push(port.to_string());
    install.extend(timing.clone());
    let decided = steps(&t, &install);
    assert!(decided.len() >= 3, "{decided:?}");
    for (n, step) in decided.iter().enumerate() {
        killed_at(&t, stack, &install, n, step);
        t.run(&install).ok();
        consistent(&t, stack, &format!("install killed before step {n} ({step})"));
        if n + 1 < decided.len() {
            t.run(["uninstall", stack, "--purge", "--yes"]).ok();
        }
    }
    let mut restart: Vec<String> = vec!["restart".into(), stack.into()];
    restart.extend(timing);
    restart_matrix(&t, stack, &restart, port);
    let stop: Vec<String> = ["stop", stack].map(String::from).into();
    let decided = steps(&t, &stop);
    assert_eq!(decided, ["boot_out", "disable"]);
    let mut start: Vec<String> = vec!["start".into(), stack.into()];
    start.extend(["--wait", "15", "--settle-ms", "300"].map(String::from));
    for (n, step) in decided.iter().enumerate() {
        killed(&t, &stop, n, step);
        t.run(&stop).ok();
        let st = t.run(["status", stack, "--json"]).json();
        assert_eq!(st["summary"], "stopped", "stop killed before {step}: {st}");
        let state = crate::systemd_job::prop(&m, stack, "UnitFileState");
        assert_eq!(state, "disabled", "stop killed before {step}");
        t.run(&start).ok();
        consistent(&t, stack, &format!("start after a stop killed before {step}"));
    }
    t.run(["uninstall", stack, "--purge", "--yes"]).ok();
}

/// A stopped stack (its label disabled) whose plist is then gone — removed by hand, or by an
/// older oyster's uninstall, which removed it before enabling — is uninstalled all the same:
/// the label is enabled again, so the next installer (Oysterun's own, which never enables)
/// can bootstrap it. Before, `uninstall` found nothing installed ("nothing to uninstall") and
/// left the label disabled for good.
#[test]
fn an_uninstall_enables_the_label_a_stop_left_disabled_when_the_plist_is_gone() {
    let s = Stack::stopped("disgone");
    assert!(s.disabled_in("gui"));
    std::fs::remove_file(s.plist()).unwrap();
    let r = s.t.run(["uninstall", s.name]).ok();
    assert!(!s.disabled_in("gui"), "uninstall left the label disabled: {}", r.stdout());
    has_all(
        &r.stdout(),
        &["is not installed (its label, left disabled by `stop`, is enabled again)"],
    );
    // Nothing else to do: the second one finds nothing to uninstall.
    has_all(&s.t.run(["uninstall", s.name]).ok().stdout(), &["nothing to uninstall"]);
    s.done();
}
