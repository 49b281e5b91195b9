//! The LaunchAgent lifecycle against the launchd simulator with the real Node Host
//! (docs/behaviour.md §5): install, restart, regenerate, the stale-definition trap, rollback, and the
//! ways launchd and the Host fail.

use std::path::Path;

use crate::common::has_all;
use crate::common::{args, real_node, Run, Stack, TestContext};

/// Stack `lc`: the fixture Host under the simulator.
fn lc() -> Stack {
    Stack::new("lc")
}

/// `agent VERB --stack lc`, with the Host's definition for the verbs that take one and the
/// verification bounds for the verbs that verify.
fn verb_args(l: &Stack, verb: &str) -> Vec<String> {
    let definition = verb != "status" && verb != "uninstall";
    let verifies = ["install", "restart", "regenerate"].contains(&verb);
    l.agent_args(verb, definition, verifies.then_some((10, 300))).into()
}

/// `agent install` whose verification waits at most 2 s.
fn install_waiting_2s(l: &Stack) -> Run {
    let mut a = verb_args(l, "install");
    let i = a.iter().position(|x| x == "--wait").unwrap();
    a[i + 1] = "2".into();
    l.t.run(a)
}

fn agent(l: &Stack, verb: &str) -> Run {
    l.t.run(verb_args(l, verb))
}

fn live_env(l: &Stack) -> (u32, Vec<String>) {
    let pid = u32::try_from(l.status()["pid"].as_u64().expect("a running pid")).unwrap();
    (pid, l.t.host_environ(pid))
}

fn live_path(l: &Stack) -> String {
    live_env(l).1.into_iter().find_map(|kv| kv.strip_prefix("PATH=").map(str::to_owned)).unwrap()
}

#[test]
fn install_status_uninstall_leaves_config_and_logs_and_no_process() {
    let l = lc();
    let r = agent(&l, "install").ok();
    assert!(
        r.stdout().contains("Host verified") && r.stdout().contains("loaded (bootstrap)"),
        "{}",
        r.stdout()
    );
    assert!(r.stderr().contains("OYSTER_LAUNCHCTL"), "the override is said: {}", r.stderr());
    let st = l.status();
    for k in ["installed", "loaded", "running", "verified", "launchctl_overridden", "in_sync"] {
        assert_eq!(st[k], true, "{k}: {st}");
    }
    assert_eq!(
        st["plist_path"],
        format!("{}/Library/LaunchAgents/com.oysterun.host.lc.plist", l.t.home.display())
    );
    assert!(st["domain"].as_str().unwrap().starts_with("gui/"));
    let (pid, env) = live_env(&l);
    assert!(env.contains(&format!("OYSTERUN_NODE_BIN={}", real_node().display())));
    assert!(
        env.contains(&"XPC_SERVICE_NAME=com.oysterun.host.lc".to_string()),
        "launchd's own variables are there too"
    );

    // A second install with nothing changed leaves the running Host alone.
    let r = agent(&l, "install").ok();
    r.stdout_has(&format!("pid {pid}"));

    let r = agent(&l, "uninstall").ok();
    r.stdout_has("removed");
    let st = l.t.run(["agent", "status", "--stack", "lc", "--json"]).fails_with(1).json();
    assert_eq!(
        (st["installed"].as_bool(), st["loaded"].as_bool(), st["running"].as_bool()),
        (Some(false), Some(false), Some(false))
    );
    assert!(!l.plist().exists());
    assert!(l.t.home.join(".oysterun-stacks/lc/host/config.json").exists(), "config kept");
    let audit =
        std::fs::read_to_string(l.t.home.join(".oysterun-stacks/lc/logs/service-control.jsonl"))
            .unwrap();
    let lines: Vec<serde_json::Value> =
        audit.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert!(lines
        .iter()
        .any(|v| v["action"] == "install" && v["step"] == "verify" && v["outcome"] == "ok"));
    assert!(lines.iter().any(|v| v["action"] == "uninstall" && v["step"] == "remove-plist"));
    l.t.wait_no_processes();
}

#[test]
fn restart_without_changes_is_graceful_and_verifies_a_new_pid() {
    let l = Stack::installed("lc");
    let (old, _) = live_env(&l);
    let r = agent(&l, "restart").ok();
    // SIGTERM through launchd, not kickstart -k's SIGKILL: the old Host shut down cleanly.
    r.stderr_has("SIGTERM to pid");
    assert!(!r.stderr().contains("kickstart -k"), "{}", r.stderr());
    let (new, _) = live_env(&l);
    assert_ne!(old, new);
    assert!(r.stdout().contains(&format!("pid {new}")));
    let log = std::fs::read_to_string(l.t.home.join(".oysterun-stacks/lc/logs/oysterun-host.log"))
        .unwrap();
    has_all(&log, &["fixture host: SIGTERM, exiting"]);
    let uid = nix::unistd::getuid();
    let print = l.t.sim(&["print", &format!("gui/{uid}/com.oysterun.host.lc")]).ok().stdout();
    assert!(print.contains("last exit code = 0"), "the old Host exited 0: {print}");
}

#[test]
fn regenerate_after_a_provider_change_reloads_and_the_live_path_changes() {
    let l = Stack::installed("lc");
    let before = live_path(&l);
    let dir = l.t.home.join(".local/bin");
    l.t.fake_exe(&dir.join("codex"));
    let r = agent(&l, "regenerate").ok();
    r.stdout_has("reloaded (bootout, bootstrap)");
    let after = live_path(&l);
    assert_ne!(before, after);
    assert!(after.split(':').any(|d| Path::new(d) == dir), "{after}");
    // Nothing changed since: regenerate leaves the Host alone.
    let (pid, _) = live_env(&l);
    let r = agent(&l, "regenerate").ok();
    r.stdout_has("left alone");
    assert_eq!(live_env(&l).0, pid);
    l.t.assert_nothing_executed();
}

#[test]
fn a_plist_edited_behind_oysters_back_is_noticed_by_restart() {
    let l = Stack::installed("lc");
    let good = std::fs::read(l.plist()).unwrap();
    let text = String::from_utf8(good.clone()).unwrap().replace("/usr/sbin:", "/tampered:");
    std::fs::write(l.plist(), &text).unwrap();
    let r = agent(&l, "restart").ok();
    r.stdout_has("reloaded");
    assert_eq!(std::fs::read(l.plist()).unwrap(), good, "rewritten from the generator");
    assert!(!live_path(&l).contains("/tampered"));

    // Worse: the tampered plist was loaded by hand and then the file put back. The file matches,
    // but the loaded definition does not; kickstart would keep running the stale one.
    std::fs::write(l.plist(), &text).unwrap();
    let target = format!("{}/com.oysterun.host.lc", l.status()["domain"].as_str().unwrap());
    l.t.sim(&["bootout", &target]).ok();
    let t0 = std::time::Instant::now();
    while l.t.sim(&["print", &target]).code() != 113 {
        assert!(t0.elapsed().as_secs() < 10);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let domain = l.status()["domain"].as_str().unwrap().to_owned();
    l.t.sim(&["bootstrap", &domain, l.plist().to_str().unwrap()]).ok();
    std::fs::write(l.plist(), &good).unwrap();
    let r = agent(&l, "restart").ok();
    r.stderr_has("launchd runs another definition than the plist on disk");
    assert!(!live_path(&l).contains("/tampered"));
}

#[test]
fn a_host_that_crashes_with_the_new_environment_is_rolled_back() {
    let l = Stack::installed("lc");
    let good = std::fs::read(l.plist()).unwrap();
    let good_path = live_path(&l);
    // The new provider's directory makes the Host crash on start.
    let dir = l.t.path("poison");
    l.t.fake_exe(&dir.join("claude"));
    std::fs::write(dir.join(".crash-host"), "").unwrap();
    l.t.run(["providers", "set", "claude", dir.join("claude").to_str().unwrap(), "--stack", "lc"])
        .ok();
    let r = agent(&l, "regenerate").fails_with(1);
    let e = r.stderr();
    has_all(&e, &["last exit:", "rollback: restored the last good plist"]);
    assert!(e.contains(".crash-host is on PATH"), "the log tail is shown: {e}");
    assert_eq!(std::fs::read(l.plist()).unwrap(), good, "the last good plist is back");
    let st = l.status();
    assert_eq!(
        (st["running"].as_bool(), st["verified"].as_bool()),
        (Some(true), Some(true)),
        "{st}"
    );
    assert_eq!(live_path(&l), good_path);
    let audit =
        std::fs::read_to_string(l.t.home.join(".oysterun-stacks/lc/logs/service-control.jsonl"))
            .unwrap();
    assert!(audit.contains("\"step\":\"rollback\""));
}

#[test]
fn a_first_install_whose_host_never_answers_health_is_removed_again() {
    let l = lc();
    TestContext::fixture_flag(&l.root, "unhealthy", "");
    install_waiting_2s(&l).fails_with(1).stderr_has_all(&["503", "no earlier good plist"]);
    assert!(!l.plist().exists());
    let st = l.t.run(["agent", "status", "--stack", "lc", "--json"]).fails_with(1).json();
    assert_eq!(st["loaded"], false);
    l.t.wait_no_processes();
}

#[test]
fn missing_launchctl_is_a_clear_error() {
    let mut l = lc();
    l.t.extra_env.retain(|(k, _)| k != "OYSTER_LAUNCHCTL");
    l.t.extra_env.push(("OYSTER_LAUNCHCTL".into(), "/nonexistent/launchctl".into()));
    // A variable the user set wrong is invalid input (2), like a bad OYSTERUN_NODE_BIN.
    agent(&l, "install")
        .fails_with(2)
        .stderr_has_all(&["OYSTER_LAUNCHCTL", "/nonexistent/launchctl"]);
    if !Path::new("/bin/launchctl").exists() {
        l.t.extra_env.retain(|(k, _)| k != "OYSTER_LAUNCHCTL");
        l.t.system_launchctl = true;
        agent(&l, "install")
            .fails_with(1)
            .stderr_has_all(&["launchctl was not found", "oyster host start"]);
        // The refused install left no stack behind; production always exists.
        l.t.run(["agent", "status", "--stack", "lc"]).fails_with(2);
        let st = l.t.run(["agent", "status", "--json"]).fails_with(1).json();
        assert!(st["notes"][0].as_str().unwrap().contains("not found"));
    }
}

#[test]
fn without_a_gui_session_the_user_domain_is_used_and_said() {
    let mut l = lc();
    l.t.extra_env.push(("LAUNCHD_SIM_NO_GUI".into(), "1".into()));
    let r = agent(&l, "install").ok();
    r.stderr_has("using user/");
    assert!(l.status()["domain"].as_str().unwrap().starts_with("user/"));
}

#[test]
fn a_disabled_label_is_enabled_before_bootstrap() {
    let l = lc();
    let uid = nix::unistd::getuid();
    l.t.sim(&["disable", &format!("gui/{uid}/com.oysterun.host.lc")]).ok();
    agent(&l, "install").ok();
    assert_eq!(l.status()["verified"], true);
}

#[test]
fn bootstrap_failures_are_retried_with_the_reason_printed() {
    let mut l = lc();
    l.t.extra_env.push(("LAUNCHD_SIM_FAIL_BOOTSTRAP".into(), "5:3".into()));
    let r = agent(&l, "install").ok();
    // One line says what is awaited and for how long; the retries themselves are quiet.
    assert_eq!(r.stderr().matches("retrying").count(), 1, "{}", r.stderr());
    // A code that is not transient fails at once with launchctl's words.
    let mut l = lc();
    l.t.extra_env.push(("LAUNCHD_SIM_FAIL_BOOTSTRAP".into(), "122".into()));
    agent(&l, "install").fails_with(1).stderr_has_all(&["exited 122", "ownership"]);
}

#[test]
fn direct_start_is_refused_while_the_agent_is_loaded() {
    let l = Stack::installed("lc");
    let port = l.port.to_string();
    let e =
        l.t.run(args(&["host", "start"]).stack("lc").host(&l.root).port(&port))
            .fails_with(1)
            .stderr();
    has_all(&e, &["LaunchAgent", "loaded"]);
}

/// A definition that verified before and now fails for another reason (here the Host itself
/// breaks) is not thrown away: the job is booted out, the plist stays, and `start` loads it
/// again once the cause is fixed.
#[test]
fn a_good_definition_that_fails_for_another_reason_keeps_its_plist() {
    let l = Stack::stopped("lc");
    let good = std::fs::read(l.plist()).unwrap();
    TestContext::fixture_flag(&l.root, "unhealthy", "");
    install_waiting_2s(&l).fails_with(1).stderr_has_all(&["verified before", "kept"]);
    assert_eq!(std::fs::read(l.plist()).unwrap(), good, "the plist is kept");
    std::fs::remove_file(l.root.join("host-service/unhealthy")).unwrap();
    let mut s = verb_args(&l, "install");
    s[1] = "start".into();
    l.t.run(s).ok();
    assert_eq!(l.status()["verified"], true);
}
