#![cfg(target_os = "linux")]
//! The verbs through the binary under a REAL `systemd --user` (common/user_manager.rs): a
//! Linux user gets a supervised Host. install, verify, restart (unchanged, and with a new
//! port), stop that stays stopped across a re-login, start, kill answered by the manager, a
//! crashing generation rolled back to the last good unit, status, dry runs, uninstall leaving
//! nothing. Each test its own stack and port; one manager for the tests that run together.

use crate::common::has_all;
use crate::common::user_manager::UserManager;
use crate::common::{free_port, get, wait_until, Run, TestContext};

pub(crate) use crate::common::user_manager::world;

pub(crate) fn unit(stack: &str) -> String {
    format!("com.oysterun.host.{stack}.service")
}

/// `systemctl --user show -p PROP --value UNIT`.
pub(crate) fn prop(m: &UserManager, stack: &str, p: &str) -> String {
    let out = m.systemctl(&["show", "-p", p, "--value", &unit(stack)]);
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

pub(crate) fn main_pid(m: &UserManager, stack: &str) -> u32 {
    prop(m, stack, "MainPID").parse().unwrap_or(0)
}

/// `VERB STACK [--wait 15 --settle-ms 300] MORE` (the timing for the verbs that verify).
pub(crate) fn verb(t: &TestContext, words: &[&str], stack: &str, more: &[&str]) -> Run {
    let mut a: Vec<&str> = words.to_vec();
    a.push(stack);
    if !matches!(words[0], "stop" | "uninstall") {
        a.extend_from_slice(&["--wait", "15", "--settle-ms", "300"]);
    }
    a.extend_from_slice(more);
    t.run(&a)
}

/// `install STACK --port P` on a free port, verified: the port, and as text.
pub(crate) fn installed(t: &TestContext, stack: &str) -> (u16, String) {
    let (port, p) = free_port_text();
    verb(t, &["install"], stack, &["--port", &p]).ok();
    (port, p)
}

/// A free port, and as text.
fn free_port_text() -> (u16, String) {
    let port = free_port();
    (port, port.to_string())
}

/// A world with stack `s` installed on a free port (see [`installed`]): the manager, the
/// context, the port and the Host's pid.
pub(crate) fn world_with(s: &str) -> Option<(UserManager, TestContext, u16, u32)> {
    let (m, t) = world()?;
    let (port, _) = installed(&t, s);
    let pid = main_pid(&m, s);
    Some((m, t, port, pid))
}

/// Gives stack `s` a provider whose directory poisons the Host's PATH: every new generation
/// crashes at once.
pub(crate) fn poison(t: &TestContext, s: &str) {
    let poison = t.path("poison");
    std::fs::create_dir_all(&poison).unwrap();
    std::fs::write(poison.join(".crash-host"), "").unwrap();
    let codex = t.fake_exe(&poison.join("codex"));
    t.run(
        crate::common::args(&["providers", "set", "codex"]).arg(codex.to_str().unwrap()).stack(s),
    )
    .ok();
}

#[test]
fn install_restart_stop_start_and_uninstall_under_the_user_manager() {
    let Some((m, t)) = world() else { return };
    let s = "sdlife";
    let (port, p) = free_port_text();
    let r = verb(&t, &["install"], s, &["--port", &p, "-v"]).ok();
    r.stdout_has(&format!("Host verified: {} started", unit(s)));
    assert_eq!(t.run(["status", s, "--json"]).json()["env_proof"], "live");
    let path = m.home.join(".config/systemd/user").join(unit(s));
    let text = std::fs::read_to_string(&path).unwrap();
    has_all(&text, &["ExecStart=", "Restart=always"]);
    assert_eq!(prop(&m, s, "UnitFileState"), "enabled");
    let first = main_pid(&m, s);
    assert!(first > 0);
    assert_eq!(get(port, "/health"), 200);
    // status names the manager and the unit's facts.
    let st = t.run(["status", s, "--json"]).ok().json();
    assert_eq!(
        (st["manager"].as_str(), st["verified"].as_bool()),
        (Some("systemd"), Some(true)),
        "{st}"
    );
    assert_eq!(st["unit"]["main_pid"], first, "{st}");
    assert_eq!(st["summary"], "verified", "{st}");
    // An unchanged restart: a new MainPID, the same unit (its time is said, not asserted:
    // speed is measured in benchmarks).
    let t0 = std::time::Instant::now();
    verb(&t, &["restart"], s, &[]).ok();
    eprintln!("timing: verified restart under systemd: {} ms", t0.elapsed().as_millis());
    let second = main_pid(&m, s);
    assert!(second > 0 && second != first);
    // A new port: the unit is rewritten, reloaded and verified on it.
    let port2 = free_port();
    let p2 = port2.to_string();
    verb(&t, &["restart"], s, &["--port", &p2]).ok().stdout_has("reloaded (daemon-reload, start)");
    assert_eq!(get(port2, "/health"), 200);
    assert!(std::fs::read_to_string(&path).unwrap().contains(&format!("OYSTERUN_PORT={port2}")));
    // stop: stopped and disabled; a re-login (default.target started again) leaves it stopped.
    verb(&t, &["stop"], s, &[]).ok().stdout_has("disabled, so it stays stopped at the next login");
    assert_eq!(prop(&m, s, "ActiveState"), "inactive");
    assert_eq!(prop(&m, s, "UnitFileState"), "disabled");
    m.systemctl(&["start", "default.target"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(prop(&m, s, "ActiveState"), "inactive", "a re-login started a stopped Host");
    let st = t.run(["status", s, "--json"]).json();
    assert_eq!(st["summary"], "stopped", "{st}");
    // start undoes stop.
    verb(&t, &["start"], s, &[]).ok();
    assert_eq!(prop(&m, s, "UnitFileState"), "enabled");
    assert_eq!(get(port2, "/health"), 200);
    // kill: SIGTERM to the Host; the manager will start it again (Restart=always).
    let before = main_pid(&m, s);
    t.run(["kill", s]).ok().stdout_has("systemd starts it again");
    wait_until(std::time::Duration::from_secs(5), "the manager to schedule a restart", || {
        prop(&m, s, "SubState") == "auto-restart" || main_pid(&m, s) != before
    });
    // uninstall: nothing of the unit is left.
    verb(&t, &["uninstall"], s, &[]).ok();
    assert!(!path.exists());
    assert_eq!(prop(&m, s, "LoadState"), "not-found");
    wait_until(std::time::Duration::from_secs(5), "the Host to be gone", || {
        crate::common::http_get(port2, "/health").is_none()
    });
}

#[test]
fn a_crashing_generation_is_rolled_back_to_the_last_good_unit() {
    let s = "sdroll";
    let Some((m, t, port, good)) = world_with(s) else { return };
    let path = m.home.join(".config/systemd/user").join(unit(s));
    let good_unit = std::fs::read(&path).unwrap();
    poison(&t, s);
    let port2 = free_port();
    let p2 = port2.to_string();
    let r = verb(&t, &["restart"], s, &["--port", &p2]).fails_with(1);
    r.stderr_has("the Host did not verify");
    r.stderr_has("restored the last good unit; the previous Host runs again");
    assert_eq!(std::fs::read(&path).unwrap(), good_unit, "the good unit is back");
    assert_eq!(get(port, "/health"), 200);
    assert_ne!(main_pid(&m, s), good);
    let config: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(t.home.join(format!(".oysterun-stacks/{s}/host/config.json")))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(config["port"], port, "the port is put back");
    verb(&t, &["uninstall"], s, &[]).ok();
}

#[test]
fn dry_runs_list_the_systemd_steps_and_change_nothing() {
    let Some((m, t)) = world() else { return };
    let s = "sddry";
    let (_, p) = free_port_text();
    let doc = t.run(["install", s, "--port", &p, "--dry-run", "--json"]).ok().json();
    assert_eq!(doc["manager"], "systemd", "{doc}");
    let steps = crate::common::column(&doc["steps"], "step");
    assert_eq!(steps, ["write_config", "write_definition", "enable", "load", "verify"], "{doc}");
    assert!(!t.home.join(format!(".oysterun-stacks/{s}")).exists());
    assert_eq!(prop(&m, s, "LoadState"), "not-found");
}

#[test]
fn without_a_user_manager_install_says_why_and_host_start_remains() {
    let mut t = TestContext::new();
    t.pin_host_env();
    t.extra_env.push(("OYSTER_SYSTEMCTL".into(), "/usr/bin/systemctl".into()));
    let missing = t.path("no-runtime-dir");
    t.extra_env.push(("XDG_RUNTIME_DIR".into(), missing.display().to_string()));
    let port = free_port().to_string();
    let r = t.run(["install", "sdnone", "--port", &port]).fails_with(1);
    r.stderr_has("no systemd user manager answers");
    r.stderr_has("oyster host start");
    assert!(!t.home.join(".oysterun-stacks/sdnone").exists(), "a refused install wrote");
    // A stack whose unit is there: the verbs that act on it say so, with the systemctl that
    // reaches nothing and the way to a session where it does.
    std::fs::create_dir_all(t.home.join(".oysterun-stacks/sdnone/host")).unwrap();
    let units = t.home.join(".config/systemd/user");
    std::fs::create_dir_all(&units).unwrap();
    std::fs::write(units.join("com.oysterun.host.sdnone.service"), "[Service]\n").unwrap();
    let r = t.run(["restart", "sdnone"]).fails_with(1);
    r.stderr_has("stack sdnone has a systemd unit (");
    r.stderr_has("but no systemd user manager answers `/usr/bin/systemctl --user` (");
    r.stderr_has("; nothing was changed");
    r.stderr_has("loginctl enable-linger");
}

/// A stand-in `systemctl` that records each call, then runs the real one.
fn counting(t: &mut TestContext) -> std::path::PathBuf {
    let log = t.path("systemctl.calls");
    let script =
        format!("#!/bin/sh\necho \"$*\" >> '{}'\nexec /usr/bin/systemctl \"$@\"\n", log.display());
    t.stand_in("OYSTER_SYSTEMCTL", "bin/systemctl", &script);
    log
}

fn calls(log: &std::path::Path) -> usize {
    let n = std::fs::read_to_string(log).unwrap_or_default().lines().count();
    let _ = std::fs::remove_file(log);
    n
}

#[test]
fn status_and_restart_ask_systemd_few_times_and_doctor_names_the_unit_and_linger() {
    let Some((m, mut t)) = world() else { return };
    let log = counting(&mut t);
    let s = "sdcount";
    let (_, _p) = installed(&t, s);
    calls(&log);
    t.run(["status", s, "--json"]).ok();
    let status = calls(&log);
    assert!(status <= 2, "status made {status} systemctl calls");
    verb(&t, &["restart"], s, &[]).ok();
    let restart = calls(&log);
    assert!(restart <= 8, "an unchanged restart made {restart} systemctl calls");
    let doc = t.run(["doctor", s, "--json"]).json();
    let names: Vec<(&str, &str)> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["check"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    for want in [("service manager", "ok"), ("unit", "ok")] {
        assert!(names.contains(&want), "{doc}");
    }
    assert!(names.iter().any(|(n, _)| *n == "linger"), "{doc}");
    assert!(!names.iter().any(|(n, _)| *n == "launchd" || *n == "plist"), "{doc}");
    let list = t.run(["list", "--json"]).ok().json();
    assert_eq!(list["stacks"][0]["summary"], "verified", "{list}");
    drop(m);
}

#[test]
fn a_directly_started_host_moves_to_the_unit_on_install_and_host_start_is_refused_beside_it() {
    let Some((m, t)) = world() else { return };
    let s = "sdmove";
    let (port, p) = free_port_text();
    // Without a manager (as before systemd): the direct Host.
    let mut direct = t.cmd();
    direct.env("OYSTER_SYSTEMCTL", "none");
    let out =
        direct.args(["host", "start", s, "--port", &p, "--settle-ms", "300"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let direct_pid: u32 = std::fs::read_to_string(
        t.home.join(format!(".oysterun-stacks/{s}/run/oysterun-host-{s}.pid")),
    )
    .unwrap()
    .trim()
    .parse()
    .unwrap();
    let r = verb(&t, &["install"], s, &[]).ok();
    r.stderr_has(&format!("(pid {direct_pid}) was stopped; the systemd unit runs it"));
    assert!(main_pid(&m, s) != direct_pid && main_pid(&m, s) > 0);
    assert_eq!(get(port, "/health"), 200, "the port is kept");
    t.run(["host", "start", s]).fails_with(1).stderr_has("is active under systemd --user");
    verb(&t, &["uninstall"], s, &[]).ok();
}

#[test]
fn install_says_when_linger_is_off_and_doctor_warns() {
    let Some((_m, mut t)) = world() else { return };
    counting(&mut t);
    // logind's answer, from a stand-in beside the systemctl oyster was given.
    let loginctl = t.path("bin/loginctl");
    std::fs::write(&loginctl, "#!/bin/sh\necho no\n").unwrap();
    std::fs::set_permissions(&loginctl, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    let s = "sdlinger";
    let p = free_port().to_string();
    verb(&t, &["install"], s, &["--port", &p])
        .ok()
        .stderr_has("the Host stops when you log out; `loginctl enable-linger");
    let doc = t.run(["doctor", s, "--json"]).json();
    let linger = crate::common::doctor_check(&doc, "linger");
    assert_eq!(linger["status"], "warn", "{linger}");
    verb(&t, &["uninstall"], s, &[]).ok();
}

#[test]
fn setup_installs_and_verifies_the_unit() {
    let Some((m, t)) = world() else { return };
    let s = "sdsetup";
    let p = free_port().to_string();
    let r = t.run(["setup", s, "--port", &p, "--yes", "--no-install-providers", "--no-qr"]).ok();
    r.stdout_has("systemd user unit");
    assert!(main_pid(&m, s) > 0);
    assert_eq!(prop(&m, s, "UnitFileState"), "enabled");
    verb(&t, &["uninstall"], s, &[]).ok();
}

#[test]
fn all_stops_and_starts_every_unit() {
    let Some((m, t)) = world() else { return };
    for s in ["sdall1", "sdall2"] {
        let p = free_port().to_string();
        verb(&t, &["install"], s, &["--port", &p]).ok();
    }
    let r = t.run(["stop", "--all"]).ok();
    r.stdout_has("sdall1");
    for s in ["sdall1", "sdall2"] {
        assert_eq!(prop(&m, s, "ActiveState"), "inactive", "{s}");
    }
    t.run(["start", "--all", "--settle-ms", "300"]).ok();
    for s in ["sdall1", "sdall2"] {
        assert!(main_pid(&m, s) > 0, "{s}");
    }
    t.run(["uninstall", "--all"]).ok();
}

#[test]
fn inventory_reports_a_units_stack_as_it_runs() {
    let Some((_m, t)) = world() else { return };
    let s = "sdinv";
    let (_, _p) = installed(&t, s);
    let doc = t.run(["inventory", "--json"]).ok().json();
    let part = doc["users"][0]["stacks"]
        .as_array()
        .and_then(|a| a.iter().find(|p| p["stack"] == s))
        .unwrap_or_else(|| panic!("no {s} in {doc}"));
    assert_eq!(part["manager"], "systemd", "{part}");
    assert_eq!(part["summary"], "verified", "{part}");
    assert!(part["plist_path"].as_str().unwrap().ends_with(".service"), "{part}");
    // The Node and root the unit runs, read from its Environment= lines.
    assert!(part["node_bin"].as_str().is_some_and(|n| n.contains("node")), "{part}");
    assert!(part["oysterun_root"].is_string(), "{part}");
    verb(&t, &["uninstall"], s, &[]).ok();
}

/// A unit edited by hand (`OYSTERUN_NODE_BIN` assigned again at its end, unquoted, as systemd
/// also takes it) and a drop-in (`systemctl --user edit`: `Environment = "OYSTERUN_REPO_ROOT=
/// %h/elsewhere"`): inventory names the Node and root systemd runs, as `systemctl show` says
/// them; a drop-in's empty `Environment=` (which clears every assignment) leaves both unknown
/// (null). Before, inventory read only the exact `Environment="…"` form and took the first
/// assignment: it named the Node and root oyster had written, not the ones systemd ran.
#[test]
fn inventory_reads_a_hand_edited_unit_and_its_drop_ins_as_systemd_does() {
    let Some((m, t)) = world() else { return };
    let s = "sdhand";
    let p = free_port().to_string();
    verb(&t, &["install"], s, &["--port", &p]).ok();
    let path = m.home.join(".config/systemd/user").join(unit(s));
    let orig = std::fs::read_to_string(&path).unwrap();
    let text =
        orig.replace("\n[Install]", "Environment=OYSTERUN_NODE_BIN=/opt/hand/node\n\n[Install]");
    std::fs::write(&path, text).unwrap();
    let drop_in = m.home.join(".config/systemd/user").join(format!("{}.d", unit(s)));
    std::fs::create_dir_all(&drop_in).unwrap();
    let conf = drop_in.join("override.conf");
    std::fs::write(&conf, "[Service]\nEnvironment = \"OYSTERUN_REPO_ROOT=%h/elsewhere\"\n")
        .unwrap();
    m.systemctl(&["daemon-reload"]);
    let shown = prop(&m, s, "Environment");
    let root = format!("{}/elsewhere", m.home.display());
    assert!(shown.contains("OYSTERUN_NODE_BIN=/opt/hand/node"), "{shown}");
    assert!(shown.contains(&format!("OYSTERUN_REPO_ROOT={root}")), "{shown}");
    let part = |t: &TestContext| {
        let doc = t.run(["inventory", "--json"]).ok().json();
        doc["users"][0]["stacks"]
            .as_array()
            .and_then(|a| a.iter().find(|p| p["stack"] == s).cloned())
            .unwrap_or_else(|| panic!("no {s} in {doc}"))
    };
    let now = part(&t);
    assert_eq!(now["node_bin"], "/opt/hand/node", "{now}");
    assert_eq!(now["oysterun_root"], root.as_str(), "{now}");
    // A drop-in reached through a link is read, as systemd reads it.
    let elsewhere = t.path("elsewhere.conf");
    std::fs::write(&elsewhere, "[Service]\nEnvironment=OYSTERUN_NODE_BIN=/opt/linked/node\n")
        .unwrap();
    std::os::unix::fs::symlink(&elsewhere, drop_in.join("zz-linked.conf")).unwrap();
    m.systemctl(&["daemon-reload"]);
    assert!(prop(&m, s, "Environment").contains("OYSTERUN_NODE_BIN=/opt/linked/node"));
    assert_eq!(part(&t)["node_bin"], "/opt/linked/node");
    std::fs::remove_file(drop_in.join("zz-linked.conf")).unwrap();
    std::fs::write(&conf, "[Service]\nEnvironment=\n").unwrap();
    m.systemctl(&["daemon-reload"]);
    assert_eq!(prop(&m, s, "Environment"), "", "cleared");
    let now = part(&t);
    assert!(now["node_bin"].is_null() && now["oysterun_root"].is_null(), "{now}");
    std::fs::remove_dir_all(&drop_in).unwrap();
    std::fs::write(&path, orig).unwrap();
    m.systemctl(&["daemon-reload"]);
    verb(&t, &["uninstall"], s, &[]).ok();
}
