//! What a real Mac needs (docs/behaviour.md §5): the launchd proof when the
//! kernel hides the Host's environment, `/health` that must come from our own listener, a port
//! held by someone else refused before anything is written, and launchctl's real answers
//! (bootout 36, keys launchd adds to the printed environment) through the simulator.

use std::process::{Child, Command, Stdio};

use crate::common::{args, free_port, real_node, wait_until, Stack, TestContext};

/// A process of the test's own listening on `port` on every interface, like another Host.
fn impostor(t: &TestContext, port: u16) -> Child {
    let script = "require('http').createServer((q,s)=>{s.writeHead(200);s.end('impostor')})\
                  .listen(+process.argv[1], ()=>console.log('up'))";
    let mut c = Command::new(real_node())
        .args(["-e", script, &port.to_string()])
        .env("HOME", &t.home)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    assert_eq!(crate::common::first_line(&mut c).trim(), "up");
    c
}

#[test]
fn the_launchd_proof_is_used_when_the_kernel_hides_the_environment() {
    let mut s = Stack::new("proof");
    s.t.extra_env.push(("OYSTER_ENV_PROOF".into(), "launchd".into()));
    // The proof is said with -v (every restart would otherwise repeat it).
    let r = s.t.run(s.host_args(&["agent", "install", "-v"]).wait(10, 300)).ok();
    assert!(
        r.stdout().contains("env_proof: launchd")
            && r.stdout().contains("launchd's loaded definition"),
        "{}",
        r.stdout()
    );
    let st = s.status();
    assert_eq!(
        (st["verified"].as_bool(), st["env_proof"].as_str()),
        (Some(true), Some("launchd")),
        "{st}"
    );
    // Where the launch program's own record is there, it is the stronger of the two.
    s.t.extra_env.retain(|(k, _)| k != "OYSTER_ENV_PROOF");
    s.t.extra_env.push(("OYSTER_ENV_PROOF".into(), "exec".into()));
    let r = s.t.run(s.host_args(&["agent", "restart", "-v"]).wait(10, 300)).ok();
    r.stdout_has("env_proof: exec");
    assert_eq!(s.status()["env_proof"], "exec");
    // A record that says something else than the generator is a failure, not a pass.
    let record = s.t.home.join(format!(".oysterun-stacks/{}/run/oyster-exec.json", s.name));
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    v["env"]["OYSTERUN_PORT"] = "1".into();
    std::fs::write(&record, serde_json::to_vec(&v).unwrap()).unwrap();
    let st = s.status();
    assert_eq!(st["verified"], false, "{st}");
    assert!(st["notes"].to_string().contains("OYSTERUN_PORT"), "{st}");
    // Without the override, the strongest proof the kernel allows (`live` wherever it shows
    // the environment).
    s.t.extra_env.retain(|(k, _)| k != "OYSTER_ENV_PROOF");
    let st = s.status();
    let pid = u32::try_from(st["pid"].as_u64().unwrap()).unwrap();
    assert_eq!(st["env_proof"], crate::common::strongest_proof(pid), "{st}");
    let r = s.t.run(s.host_args(&["agent", "restart", "--verbose"]).wait(10, 300)).ok();
    let pid = u32::try_from(s.status()["pid"].as_u64().unwrap()).unwrap();
    let said = format!("env_proof: {}", crate::common::strongest_proof(pid));
    r.stdout_has(&said);
}

#[test]
fn keys_launchd_adds_to_the_printed_environment_are_not_a_stale_definition() {
    let mut s = Stack::new("extra");
    s.t.extra_env.push(("LAUNCHD_SIM_PRINT_EXTRA_ENV".into(), "MallocSpaceEfficient=1".into()));
    s.t.run(s.args("install")).ok();
    let r = s.t.run(s.args("regenerate")).ok();
    r.stdout_has("unchanged; the running Host is left alone");
    // The launchd proof compares only oyster's keys, too.
    s.t.extra_env.push(("OYSTER_ENV_PROOF".into(), "launchd".into()));
    assert_eq!(s.status()["verified"], true);
}

#[test]
fn a_port_held_by_another_process_is_refused_before_anything_is_written() {
    let s = Stack::new("held");
    let mut other = impostor(&s.t, s.port);
    let r = s.t.run(s.args("install")).fails_with(1);
    r.stderr_has_all(&[&format!("port {} is already held by pid {}", s.port, other.id())]);
    assert!(!s.plist().exists(), "nothing was written");
    // Refused before anything is written: not even the stack's directory (so it is no stack).
    assert!(!s.t.home.join(".oysterun-stacks").join(s.name).exists(), "no stack dir");
    // A refused first install leaves no stack behind: the name is unknown again.
    assert!(!s.t.home.join(".oysterun-stacks/held").exists());
    s.t.run(["agent", "status", "--json", "--stack", s.name]).fails_with(2);
    other.kill().unwrap();
    other.wait().unwrap();
    s.t.run(s.args("install")).ok();
}

#[test]
fn a_port_shared_with_another_stack_is_refused_naming_it() {
    // One HOME, two stacks, one port; the first Host listens as the real one does.
    let first = Stack::new("first");
    TestContext::fixture_flag(&first.root, "listen-all", "");
    first.t.run(first.args("install")).ok();
    let second: Vec<String> = first
        .args("install")
        .into_iter()
        .map(|x| if x == "first" { "second".into() } else { x })
        .collect();
    let e = first.t.run(second).fails_with(1).stderr();
    assert!(
        e.contains("already held by pid") && e.contains("oyster stack first"),
        "names the other stack: {e}"
    );
    assert!(!first.t.home.join("Library/LaunchAgents/com.oysterun.host.second.plist").exists());
    assert_eq!(first.status()["verified"], true, "the first stack is untouched");
}

#[test]
fn a_health_answer_from_another_process_does_not_verify() {
    // Our Host never listens (`silent`); an impostor takes the port just after oyster starts,
    // so its /health 200 arrives while oyster waits. Refused either before loading (if the
    // impostor was already there) or at verification (the socket is not the Host's).
    let s = Stack::new("impost");
    TestContext::fixture_flag(&s.root, "silent", "");
    let mut child =
        s.t.cmd()
            .args(s.args("install"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    // Past the port check: the plist is written (or oyster already gave up).
    wait_until(std::time::Duration::from_secs(15), "oyster to write the plist", || {
        s.plist().exists() || child.try_wait().unwrap().is_some()
    });
    let mut other = impostor(&s.t, s.port);
    let out = child.wait_with_output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains("already held by pid") || e.contains("not by the Host"), "{e}");
    assert_ne!(s.status()["verified"], true);
    other.kill().unwrap();
    other.wait().unwrap();
}

#[test]
fn a_dual_stack_listener_is_recognised_as_the_hosts_own() {
    let s = Stack::new("dual");
    TestContext::fixture_flag(&s.root, "listen-all", "");
    let r = s.t.run(s.args("install")).ok();
    r.stdout_has("Host verified");
    assert_eq!(s.status()["verified"], true);
}

#[test]
fn bootout_answering_36_means_keep_polling() {
    let mut s = crate::common::Stack::installed("busy");
    s.t.extra_env.push(("LAUNCHD_SIM_BOOTOUT_IN_PROGRESS".into(), "1".into()));
    // A change (another port) forces bootout + bootstrap.
    s.port = free_port();
    let r = s.t.run(s.args("regenerate")).ok();
    r.stdout_has("reloaded");
    assert_eq!(s.status()["verified"], true);
}

/// Direct startup uses the same proofs: where the kernel hides the Host's environment, the
/// launch program's own record proves it (before, `host start` killed a healthy Host there).
#[test]
fn a_direct_host_is_proven_by_the_exec_record_when_the_kernel_hides_it() {
    let mut t = TestContext::new();
    let root = t.fixture_root("root");
    t.extra_env.push(("OYSTER_ENV_PROOF".into(), "exec".into()));
    let port = free_port().to_string();
    let node = real_node();
    t.run(args(&["host", "start"]).stack("dx").root(&root).node(&node).port(&port).wait(10, 300))
        .ok();
    let st = t.run(["host", "status", "--stack", "dx", "--json"]).ok().json();
    assert_eq!(
        (st["verified"].as_bool(), st["env_proof"].as_str()),
        (Some(true), Some("exec")),
        "{st}"
    );
    t.run(["host", "stop", "--stack", "dx"]).ok();
}

#[test]
fn only_a_verb_that_loads_the_host_asks_who_holds_its_port() {
    // Writing the plist starts nothing that could fail to listen: `install --no-start` and
    // `regenerate --no-restart` neither walk the process table nor refuse; the verb that loads
    // the Host asks, and refuses naming the holder.
    let s = Stack::new("writeonly");
    let mut other = impostor(&s.t, s.port);
    let mut write = s.args("install");
    write.push("--no-start".into());
    s.t.run(&write).ok();
    assert!(s.plist().exists());
    let mut again = s.args("regenerate");
    again.push("--no-restart".into());
    s.t.run(&again).ok().stdout_has_all(&["unchanged"]);
    s.t.run(s.args("install")).fails_with(1).stderr_has_all(&[&format!(
        "port {} is already held by pid {}",
        s.port,
        other.id()
    )]);
    other.kill().unwrap();
    other.wait().unwrap();
}
