//! One Host per user across launchd's login domains, against the simulator: installed over SSH
//! (no console session: `user/<uid>`, said with what that means), then a console login loads a
//! second copy into `gui/<uid>`; the next restart at the console boots the `user/<uid>` copy
//! out; `stop` at the console disables the label in both domains and `start` enables both; a
//! `gui/<uid>` bootstrap refused with 125 is retried once in `user/<uid>`, saying so.

use crate::common::{has_all, has_none};
use crate::common::{Run, Stack};

const LABEL: &str = "com.oysterun.host.ld";

/// Stack `ld`: the fixture Host under the simulator.
fn ld() -> Stack {
    Stack::new("ld")
}

/// `agent VERB --stack ld`; every verb but stop, uninstall and status with the Host's
/// definition and `--wait 10 --settle-ms 300`.
fn verb_args(d: &Stack, verb: &str) -> Vec<String> {
    let definition = !["stop", "uninstall", "status"].contains(&verb);
    d.agent_args(verb, definition, definition.then_some((10, 300))).into()
}

/// The verb as run over SSH with nobody at the console.
fn over_ssh(d: &Stack, verb: &str) -> Run {
    d.run_with_env(("LAUNCHD_SIM_NO_GUI", "1"), verb_args(d, verb))
}

#[test]
fn installed_over_ssh_then_a_console_login_then_restart_leaves_one_host_in_gui() {
    let d = ld();
    let r = over_ssh(&d, "install").ok();
    let out = format!("{}{}", r.stdout(), r.stderr());
    has_all(&out, &["Background session"]);
    has_all(&out, &["login keychain"]);
    has_all(&out, &["after a reboot until"]);
    assert!(d.loaded_in("user") && !d.loaded_in("gui"));
    // The console login loads the plist into gui/<uid> beside the copy in user/<uid>.
    d.t.sim(&["login", &d.domain("gui")]).ok();
    assert!(d.loaded_in("user") && d.loaded_in("gui"), "loaded twice");
    // Every command that reads the job says so, with the fix, and fails.
    let st = d.t.run(["agent", "status", "--json", "--stack", "ld"]).fails_with(1).json();
    assert_eq!(st["summary"], "loaded_twice", "{st}");
    assert_eq!(st["loaded_in"], serde_json::json!([d.domain("gui"), d.domain("user")]), "{st}");
    let note = st["notes"].to_string();
    has_all(&note, &["loaded twice", "restart"]);
    d.t.run(["status", "ld"]).fails_with(1).stdout_has_all(&["loaded twice"]);
    let list = d.t.run(["list", "--json"]).json();
    assert_eq!(list["stacks"][0]["summary"], "loaded_twice", "{list}");
    let doc = d.t.run(["doctor", "--json", "--stack", "ld"]).fails_with(1).json();
    let twice = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["detail"].as_str().unwrap_or("").contains("loaded twice"))
        .unwrap_or_else(|| panic!("no loaded-twice check: {doc}"));
    assert_eq!(twice["status"], "fail", "{twice}");
    let r = d.t.run(verb_args(&d, "restart")).ok();
    assert!(r.stderr().contains(&format!("also loaded in {}", d.domain("user"))), "{}", r.stderr());
    r.stdout_has("Host verified");
    assert!(!d.loaded_in("user"), "the user/<uid> copy was booted out");
    assert!(d.loaded_in("gui"));
    d.done();
}

#[test]
fn an_unchanged_regenerate_of_a_job_loaded_twice_leaves_one_host_in_gui() {
    let mut d = ld();
    // The gui copy, dead on the port the other holds, waits out its throttle before the
    // regenerate's verification sees it again: 10 s, scaled to 2 (what is checked is which
    // copy is left, not when).
    d.t.scale_throttle("0.2");
    over_ssh(&d, "install").ok();
    d.t.sim(&["login", &d.domain("gui")]).ok();
    assert!(d.loaded_in("user") && d.loaded_in("gui"), "loaded twice");
    // Nothing about the definition changed, but two copies fight over one port: the one in
    // the other domain goes, said, and the one oyster acts in is verified.
    let r = d.t.run(verb_args(&d, "regenerate")).ok();
    assert!(r.stderr().contains(&format!("also loaded in {}", d.domain("user"))), "{}", r.stderr());
    r.stdout_has("Host verified");
    assert!(!d.loaded_in("user") && d.loaded_in("gui"));
    d.done();
}

#[test]
fn an_unchanged_regenerate_that_boots_out_the_running_copy_starts_the_one_left_at_once() {
    let d = ld();
    over_ssh(&d, "install").ok();
    // The console login loads a second copy, which dies on the port the user/<uid> copy holds
    // and waits out its ThrottleInterval (10 s): the copy in the other domain is the only Host.
    d.t.sim(&["login", &d.domain("gui")]).ok();
    crate::common::wait_until(std::time::Duration::from_secs(5), "the gui copy to exit", || {
        d.t.sim(&["print", &d.target("gui")]).stdout().contains("last exit code = 1")
    });
    assert_eq!(d.launchd_pid(), None);
    let args: Vec<String> = d.agent_args("regenerate", true, Some((4, 300))).into();
    let r = d.t.run(args);
    assert_eq!(
        r.code(),
        0,
        "booting the running copy out must not leave the stack down until launchd's throttle\n{}",
        r.stderr()
    );
    assert!(r.stdout().contains("Host verified"), "{}", r.stdout());
    assert!(!d.loaded_in("user") && d.launchd_pid().is_some());
    d.done();
}

#[test]
fn ctrl_c_while_the_other_copy_is_booted_out_rolls_the_whole_change_back() {
    let d = ld();
    over_ssh(&d, "install").ok();
    let old_plist = std::fs::read(d.plist()).unwrap();
    // The user/<uid> copy takes 1.5 s to go after SIGTERM: the interrupt lands in that bootout.
    crate::common::TestContext::fixture_flag(&d.root, "sigterm-delay-ms", "1500");
    d.t.sim(&["login", &d.domain("gui")]).ok();
    let err = d.t.path("regenerate.err");
    let new_port = crate::common::free_port();
    let args: Vec<String> = crate::common::args(&["agent", "regenerate"])
        .stack("ld")
        .root(&d.root)
        .node(crate::common::real_node())
        .port(new_port)
        .wait(10, 300)
        .into();
    let mut child =
        d.t.cmd()
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
    let read = || std::fs::read_to_string(&err).unwrap_or_default();
    crate::common::wait_until(std::time::Duration::from_secs(10), "the bootout", || {
        read().contains("also loaded in")
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    let e = read();
    assert_eq!(status.code(), Some(130), "{e}");
    // Nothing of the change is left: the old plist runs in gui/<uid> alone, config.json
    // names its port, and no next run has a half-done change to finish.
    has_all(&e, &["rollback: restored the last good plist"]);
    assert_eq!(std::fs::read(d.plist()).unwrap(), old_plist, "{e}");
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.stack_dir().join("host/config.json")).unwrap())
            .unwrap();
    assert_eq!(config["port"], d.port, "{e}");
    assert!(!d.run_dir().join("pending").exists(), "{e}");
    assert!(!d.loaded_in("user") && d.launchd_pid().is_some(), "{e}");
    d.done();
}

#[test]
fn stop_at_the_console_disables_both_domains_and_start_enables_both() {
    let d = Stack::stopped("ld");
    assert!(d.disabled_in("gui") && d.disabled_in("user"));
    d.t.run(verb_args(&d, "start")).ok();
    assert!(!d.disabled_in("gui") && !d.disabled_in("user"));
    d.done();
}

#[test]
fn a_gui_bootstrap_refused_with_125_is_retried_once_in_the_user_domain() {
    let d = ld();
    let r = d.run_with_env(("LAUNCHD_SIM_FAIL_BOOTSTRAP", "125:1"), verb_args(&d, "install")).ok();
    let out = format!("{}{}", r.stdout(), r.stderr());
    has_all(&out, &[&format!("retrying once in {}", d.domain("user"))]);
    assert!(out.contains("Background session"), "the fallback note: {out}");
    assert!(d.loaded_in("user") && !d.loaded_in("gui"));
    d.done();
}

/// 29.6: launchd keeps one store of disabled overrides per user, read by `gui/<uid>` and
/// `user/<uid>` alike. A Host stopped over SSH (only `user/<uid>` exists) is disabled for the
/// next console login too, with the plist left as generated: `status` right after the stop
/// does not call it stale, and neither `agent regenerate` nor an upgrade's postinstall (which
/// runs `agent regenerate` as the user) brings it back, at once or at the next login. Before,
/// `stop` narrowed the plist to Background sessions: `status` called it stale, and the
/// `regenerate` oyster itself names next wrote the whole plist again.
#[test]
fn a_host_stopped_over_ssh_stays_stopped_after_the_next_console_login() {
    let d = ld();
    over_ssh(&d, "install").ok();
    assert!(d.loaded_in("user"));
    let plist = d.t.home.join(format!("Library/LaunchAgents/{LABEL}.plist"));
    let generated = std::fs::read(&plist).unwrap();
    let r = over_ssh(&d, "stop").ok();
    let said = format!("{}{}", r.stdout(), r.stderr());
    has_all(&said, &["stays stopped at the next login"]);
    assert!(!d.loaded_in("user"));
    // One override, seen through both domains.
    assert!(d.disabled_in("user") && d.disabled_in("gui"));
    assert!(std::fs::read(&plist).unwrap() == generated, "stop rewrote the plist");
    let st = crate::common::Run(
        d.t.cmd()
            .env("LAUNCHD_SIM_NO_GUI", "1")
            .args(["agent", "status", "--json", "--stack", "ld"])
            .output()
            .unwrap(),
    )
    .json();
    assert_eq!(st["in_sync"], true, "status right after a stop: {st}");
    let human = d.t.cmd().env("LAUNCHD_SIM_NO_GUI", "1").args(["status", "ld"]).output().unwrap();
    let human = String::from_utf8_lossy(&human.stdout).into_owned();
    has_none(&human, &["stale"]);
    // What oyster names next, and what an upgrade's postinstall runs: the Host stays stopped.
    for _ in 0..2 {
        let r = d.t.run(verb_args(&d, "regenerate")).ok();
        r.stdout_has("not loaded");
        assert!(!d.loaded_in("gui") && !d.loaded_in("user"), "regenerate started it");
    }
    // The console login loads every Aqua agent into gui/<uid>: not this one.
    d.t.sim(&["login", &d.domain("gui")]).ok();
    assert!(!d.loaded_in("gui") && !d.loaded_in("user"), "it came back");
    // `start` at the console undoes the stop.
    let r = d.t.run(verb_args(&d, "start")).ok();
    r.stdout_has("Host verified");
    assert!(d.loaded_in("gui") && !d.disabled_in("gui") && !d.disabled_in("user"));
    d.done();
}

/// A `start` of a stopped stack that fails (launchd refuses the bootstrap) leaves the label
/// disabled as `stop` left it, in both domains, said: enabled, the next console login would
/// load the plist and the Host the user stopped would come back.
#[test]
fn a_failed_start_of_a_stopped_stack_stays_stopped_at_the_next_login() {
    let d = Stack::stopped("ld");
    let r =
        d.run_with_env(("LAUNCHD_SIM_FAIL_BOOTSTRAP", "122"), verb_args(&d, "start")).fails_with(1);
    r.stderr_has("is disabled again, as `stop` left it");
    assert!(d.disabled_in("gui") && d.disabled_in("user"));
    d.t.sim(&["login", &d.domain("gui")]).ok();
    assert!(!d.loaded_in("gui") && !d.loaded_in("user"), "it came back");
    // A start that works still undoes the stop.
    d.t.run(verb_args(&d, "start")).ok();
    assert!(d.loaded_in("gui") && !d.disabled_in("gui"));
    d.done();
}

/// `restart` of a stopped stack starts it as `start` does: enabled in both domains (a
/// restart that enabled only its own left the other disabled, so an install over SSH later
/// would not load).
#[test]
fn restart_of_a_stopped_stack_undoes_the_stop_in_both_domains() {
    let d = Stack::stopped("ld");
    assert!(d.disabled_in("gui") && d.disabled_in("user"));
    let r = d.t.run(verb_args(&d, "restart")).ok();
    r.stdout_has("Host verified");
    assert!(!d.disabled_in("gui") && !d.disabled_in("user"));
    assert!(d.loaded_in("gui") && !d.loaded_in("user"));
    d.done();
}
