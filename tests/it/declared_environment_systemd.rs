#![cfg(target_os = "linux")]
//! The declared environment (`oyster env`, issue 41) under a REAL `systemd --user`
//! (common/user_manager.rs): the launch program the unit runs adds a declared proxy to the
//! Host's environment (`/proc/<MainPID>/environ`), the unit file and the manager's view of it
//! never hold it, and status calls the Host stale after `env set` until `restart`.

use crate::common::user_manager::UserManager;
use crate::common::{free_port, live_environ};

const SECRET: &str = "sd-s3cret-pw";

use crate::common::has_none;
use crate::common::user_manager::world;

fn main_pid(m: &UserManager, unit: &str) -> u32 {
    let out = m.systemctl(&["show", "-p", "MainPID", "--value", unit]);
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

#[test]
fn a_declared_proxy_reaches_the_host_systemd_runs_and_never_its_unit() {
    let Some((m, t)) = world() else { return };
    let s = "sdenv";
    let unit = format!("com.oysterun.host.{s}.service");
    let port = free_port().to_string();
    let timing = ["--wait", "15", "--settle-ms", "300"];
    let mut install = vec!["install", s, "--port", &port];
    install.extend(timing);
    t.run(&install).ok();
    let proxy = format!("http://bob:{SECRET}@proxy.corp.example:3128");
    let set = ["env", "set", "HTTPS_PROXY", "--value-stdin", "--stack", s];
    let r = t.run_with_stdin(set, proxy.as_bytes()).ok();
    r.stdout_has("`oyster restart --stack sdenv` applies it");
    let st = t.run(["status", s, "--json"]).json();
    assert_eq!(
        (st["manager"].as_str(), st["summary"].as_str()),
        (Some("systemd"), Some("stale")),
        "{st}"
    );
    assert_eq!(st["declared_stale"], serde_json::json!(["HTTPS_PROXY"]), "{st}");
    let mut restart = vec!["-v", "restart", s];
    restart.extend(timing);
    t.run(&restart).ok().stdout_has("env_proof: live");
    let pid = main_pid(&m, &unit);
    assert!(
        live_environ(pid).contains(&format!("HTTPS_PROXY={proxy}")),
        "the Host systemd runs lacks the declared proxy"
    );
    let st = t.run(["status", s, "--json"]).json();
    assert_eq!(st["summary"], "verified", "{st}");
    let unit_text =
        std::fs::read_to_string(m.home.join(".config/systemd/user").join(&unit)).unwrap();
    has_none(&unit_text, &["HTTPS_PROXY", SECRET]);
    let shown = m.systemctl(&["show", "-p", "Environment", &unit]);
    assert!(!String::from_utf8_lossy(&shown.stdout).contains(SECRET));
    // The unit's own Host holds its port: no port row.
    let doctor = t.run(["doctor", s, "--json"]).stdout();
    let checks = serde_json::from_str::<serde_json::Value>(&doctor).unwrap()["checks"].to_string();
    assert!(!checks.contains("\"port\""), "{doctor}");
    has_none(&format!("{}{doctor}", t.run(["status", s]).stdout()), &[SECRET]);
    // unset --restart: the Host the manager starts again has it no more.
    t.run(["env", "unset", "HTTPS_PROXY", "--stack", s, "--restart"]).ok();
    let pid = main_pid(&m, &unit);
    assert!(!live_environ(pid).iter().any(|kv| kv.starts_with("HTTPS_PROXY=")));
    assert_eq!(t.run(["status", s, "--json"]).json()["summary"], "verified");
    t.run(["uninstall", s]).ok();
}
