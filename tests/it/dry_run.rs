//! `--dry-run` of the job verbs (`install`, `start`, `restart`, `stop`, `uninstall`): the
//! steps the run would take, in order (`--json`: a `steps` list), and nothing changed — no
//! file under HOME, no launchd state; a refusal is said as the run says it. What it prints is
//! what the run then does: the audit log of the real run names the same steps in that order.

use crate::bounded::snapshot;
use crate::common::has_all;
use crate::common::{free_port, Stack};

/// `VERB STACK [more] --dry-run --json`, its steps' names, checking nothing changed.
fn dry(s: &Stack, verb: &str, more: &[&str]) -> (serde_json::Value, Vec<String>) {
    let before = snapshot(&s.t.home, true);
    let pid = s.launchd_pid();
    let mut a = vec![verb, s.name, "--dry-run", "--json"];
    a.extend_from_slice(more);
    let doc = s.t.run(&a).ok().json();
    assert_eq!(snapshot(&s.t.home, true), before, "{a:?} changed files");
    assert_eq!(s.launchd_pid(), pid, "{a:?} changed launchd's job");
    let names = doc["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no steps: {doc}"))
        .iter()
        .map(|s| s["step"].as_str().unwrap().to_owned())
        .collect();
    (doc, names)
}

/// The audit log's steps of `action` after its first `from` lines, as the dry run names them
/// (the Host's launch program writes lines of its own meanwhile).
fn audited(s: &Stack, action: &str, from: usize) -> Vec<String> {
    s.audit()[from..]
        .iter()
        .filter(|l| l["action"] == action)
        .filter_map(|l| {
            Some(match l["step"].as_str()? {
                "write-plist" if l["outcome"] == "written" => "write_definition",
                "bootout" => "boot_out",
                "bootstrap" => "load",
                "sigterm" => "restart",
                "verify" => "verify",
                _ => return None,
            })
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn restart_with_a_new_port_lists_every_step_and_the_run_takes_them_in_order() {
    let s = Stack::installed("drynew");
    let port = free_port();
    let p = port.to_string();
    let (doc, steps) = dry(&s, "restart", &["--port", &p]);
    assert_eq!(
        steps,
        ["write_config", "write_definition", "enable", "boot_out", "load", "verify"],
        "{doc}"
    );
    assert_eq!(doc["steps"][0]["edits"][0]["setting"], "port", "{doc}");
    assert_eq!(doc["steps"][0]["edits"][0]["to"], port, "{doc}");
    assert_eq!((doc["stack"].as_str(), doc["port"].as_u64()), (Some(s.name), Some(port.into())));
    // The human form numbers the same steps.
    let human = s.t.run(["restart", s.name, "--port", &p, "--dry-run"]).ok().stdout();
    has_all(&human, &["would take these steps (nothing was changed)"]);
    has_all(&human, &["  6. verify the Host on 127.0.0.1:"]);
    // The real run: the steps that reach launchd, in that order.
    let from = s.audit().len();
    s.t.run(s.agent_args("restart", false, Some((10, 300))).port(port)).ok();
    let acted: Vec<String> = steps
        .iter()
        .filter(|s| !matches!(s.as_str(), "write_config" | "enable"))
        .cloned()
        .collect();
    assert_eq!(audited(&s, "restart", from), acted);
    // Unchanged now: a restart is a graceful restart and a verification.
    let (_, steps) = dry(&s, "restart", &[]);
    assert_eq!(steps, ["restart", "verify"]);
    let from = s.audit().len();
    s.t.run(s.agent_args("restart", false, Some((10, 300)))).ok();
    assert_eq!(audited(&s, "restart", from), steps);
    s.done();
}

#[test]
fn stop_start_and_uninstall_list_their_steps_and_change_nothing() {
    let s = Stack::installed("drystop");
    let (_, steps) = dry(&s, "stop", &[]);
    assert_eq!(steps, ["boot_out", "disable"]);
    let (_, steps) = dry(&s, "stop", &["--keep"]);
    assert_eq!(steps, ["boot_out"]);
    let (doc, steps) = dry(&s, "uninstall", &[]);
    assert_eq!(steps, ["boot_out", "enable", "remove_definition"], "{doc}");
    s.t.run(["stop", s.name]).ok();
    let (_, steps) = dry(&s, "start", &[]);
    assert_eq!(steps, ["enable", "enable", "load", "verify"]);
    s.done();
}

#[test]
fn a_first_install_dry_run_creates_no_stack() {
    let s = Stack::new("dryfresh");
    let before = snapshot(&s.t.home, false);
    let args: Vec<String> = s.agent_args("install", true, None).arg("--dry-run").into();
    let out = s.t.run(&args).ok().stdout();
    has_all(&out, &["write ~/.oysterun-stacks/dryfresh/host/config.json"]);
    has_all(&out, &["load gui/"]);
    assert_eq!(snapshot(&s.t.home, false), before, "a dry run created files");
    assert!(!s.stack_dir().exists());
}

#[test]
fn a_dry_run_is_refused_as_the_run_would_be() {
    let s = Stack::installed("dryheld");
    let other = free_port();
    let _holder = std::net::TcpListener::bind(("::", other)).unwrap();
    let o = other.to_string();
    let before = snapshot(&s.t.home, true);
    let r = s.t.run(["restart", s.name, "--port", &o, "--dry-run"]).fails_with(1);
    r.stderr_has("is already held by pid");
    assert_eq!(snapshot(&s.t.home, true), before);
    // --json needs --dry-run (the verbs themselves print words).
    s.t.run(["restart", s.name, "--json"]).fails_with(2);
    s.done();
}
