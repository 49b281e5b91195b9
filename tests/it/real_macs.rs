//! Real Macs, round 3 (issue 29): what launchd prints that oyster did not expect, what the
//! user switched off, and what launchd refused — against the simulator, each in a shape a
//! real Mac shows (docs/launchd.md gives the source for each).

use std::path::{Path, PathBuf};

use crate::common::has_all;
use crate::common::{doctor_check, Run, Stack};

fn uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// A third-party agent plist (not oyster's) with `label`, written under the test's own
/// directory, that launchd loads without running anything.
fn foreign_plist(s: &Stack, label: &str) -> PathBuf {
    let path = s.t.path(&format!("{}.plist", label.replace(['/', ' '], "_")));
    let text = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\"><dict><key>Label</key><string>{label}</string><key>ProgramArguments</key><array><string>/bin/sleep</string><string>60</string></array></dict></plist>\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn run_with(s: &Stack, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut c = s.t.cmd();
    for (k, v) in env {
        c.env(k, v);
    }
    Run(c.args(args).output().unwrap())
}

fn done(s: &Stack) {
    s.t.run(["agent", "uninstall", "--stack", s.name]).ok();
    s.t.wait_no_processes();
}

fn bootstrap_foreign(s: &Stack, plist: &Path) {
    s.t.sim(&["bootstrap", &format!("gui/{}", uid()), plist.to_str().unwrap()]).ok();
}

/// 29.7: a label with spaces (any string a third-party plist gives), Apple's
/// `UIKitApplication:…[704b][rb-legacy]` rows and a row that parses as nothing at all: `list`
/// still reads the domain listing (one `print` per domain) and reports the stack from it. On
/// the old parser one such row made the whole listing unreadable and `list` asked per stack.
#[test]
fn list_reads_a_domain_listing_with_rows_it_did_not_expect() {
    let s = crate::common::Stack::installed("rows");
    let agent = foreign_plist(&s, "com.example.my agent");
    bootstrap_foreign(&s, &agent);
    let rows = "     704      -     UIKitApplication:com.apple.Preferences[704b][rb-legacy]\n\
                ???\n\
                       0      -\t";
    let run = run_with(&s, &[("LAUNCHD_SIM_DOMAIN_EXTRA_ROWS", rows)], &["list", "--json"]).ok();
    let list = run.json();
    let row = &list["stacks"][0];
    assert!(
        !row["notes"].to_string().contains("could not be used"),
        "one odd row rejected the whole listing: {list}"
    );
    assert_eq!(row["stack"], "rows", "{list}");
    assert_eq!(row["summary"], "verified", "{list}");
    // Counted, said once: 2 rows (`???` and a row with no label) in each domain's listing.
    run.stderr_has("4 rows of launchd's domain listings");
    // A row that does not parse but names the stack's label: the table cannot say whether the
    // job is there, so that stack is asked for on its own, and still reported right.
    let label = format!("com.oysterun.host.{}", s.name);
    let odd = format!("??? {label} ???");
    let list =
        run_with(&s, &[("LAUNCHD_SIM_DOMAIN_EXTRA_ROWS", &odd)], &["list", "--json"]).ok().json();
    assert_eq!(list["stacks"][0]["summary"], "verified", "{list}");
    s.t.sim(&["bootout", &format!("gui/{}/com.example.my agent", uid())]).ok();
    done(&s);
}

/// `install` with one simulator setting (`LAUNCHD_SIM_…`) for this run only: the error and
/// how long the command took.
fn install_refused(s: &Stack, env: &[(&str, &str)]) -> (String, std::time::Duration) {
    let t0 = std::time::Instant::now();
    let mut c = s.t.cmd();
    for (k, v) in env {
        c.env(k, v);
    }
    let r = Run(c.args(s.args("install")).output().unwrap()).fails_with(1);
    (r.stderr(), t0.elapsed())
}

/// 29.3: a bootstrap answered 5 while `print` shows the label not loaded is not a draining job:
/// oyster stops retrying after about 2 s (not 20), runs the discriminators in order and names
/// the first cause that holds with its fix; "gave no reason" only when none does.
#[test]
fn a_bootstrap_refused_with_5_names_its_cause_after_about_two_seconds() {
    let s = Stack::new("five");
    // No cause holds: launchd just said 5.
    let (e, took) = install_refused(&s, &[("LAUNCHD_SIM_FAIL_BOOTSTRAP", "5")]);
    has_all(&e, &["exited 5"]);
    has_all(&e, &["launchd refused it and gave no reason"]);
    assert!(e.contains("log show"), "the hint: {e}");
    assert!(
        took < std::time::Duration::from_secs(10),
        "retried like a draining job: {took:?}\n{e}"
    );
    // Disabled, and `enable` does not undo it (a profile holds the override).
    let label = format!("com.oysterun.host.{}", s.name);
    s.t.sim(&["disable", &format!("gui/{}/{label}", uid())]).ok();
    let (e, _) = install_refused(&s, &[("LAUNCHD_SIM_ENABLE_IGNORED", "1")]);
    has_all(&e, &["disabled (`launchctl print-disabled"]);
    has_all(&e, &[&format!("launchctl enable gui/{}/{label}", uid())]);
    s.t.sim(&["enable", &format!("gui/{}/{label}", uid())]).ok();
    // The LaunchAgents directory writable by the group: launchd refuses what is in it.
    let dir = s.t.home.join("Library/LaunchAgents");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o775)).unwrap();
    let (e, _) = install_refused(&s, &[("LAUNCHD_SIM_OWNERSHIP_CODE", "5")]);
    has_all(&e, &["has an owner or mode launchd refuses (owner uid"]);
    has_all(&e, &["chmod go-w ~/Library/LaunchAgents`"]);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Nothing was left loaded or running by the refusals; a plain install works.
    s.t.run(s.args("install")).ok();
    done(&s);
}

/// 29.2: the Host switched off in System Settings → General → Login Items: bootstrap answers
/// a bare 5 and `enable` does not undo it. oyster says so at once (no retries), naming the
/// place and the item; before, it retried 5 for 20 s and ended with a guess.
#[test]
fn a_host_switched_off_in_login_items_is_named_at_once() {
    let s = Stack::new("bg");
    let label = format!("com.oysterun.host.{}", s.name);
    s.t.sim(&["login-item", &label, "off"]).ok();
    let (e, took) = install_refused(&s, &[]);
    has_all(&e, &["System Settings → General → Login Items"]);
    assert!(e.contains("\"oyster\""), "names the item as listed: {e}");
    assert!(took < std::time::Duration::from_secs(5), "retried before saying it: {took:?}\n{e}");
    // The plist stays installed (written, not loaded): every command that reads the stack says
    // why it is not loaded, and where to switch it on.
    s.t.run(args_no_wait(&s, "regenerate")).ok();
    let st = s.status();
    assert_eq!(st["login_item"], "requires_approval", "{st}");
    assert!(st["notes"].to_string().contains("Login Items"), "{st}");
    s.t.run(["status", s.name])
        .stdout_has_all(&["login:     switched off (requires approval) in Login Items"]);
    let doc = s.t.run(["doctor", "--json", "--stack", s.name]).json();
    let row = doctor_check(&doc, "login items");
    assert_eq!(row["status"], "fail", "{row}");
    assert!(row["fix"].to_string().contains("System Settings → General → Login Items"), "{row}");
    s.t.run(["list"]).stdout_has_all(&["bg: the agent is switched off in System Settings"]);
    let list = s.t.run(["list", "--json"]).json();
    assert_eq!(list["stacks"][0]["login_item"], "requires_approval", "{list}");
    // Switched on again: allowed, and it loads.
    s.t.sim(&["login-item", &label, "on"]).ok();
    s.t.run(s.args("install")).ok();
    assert_eq!(s.status()["login_item"], "enabled");
    // Switched off while it runs: the Host runs and verifies now, and the note says it will
    // not be loaded at the next login.
    s.t.sim(&["login-item", &label, "off"]).ok();
    let st = s.status();
    assert_eq!(
        (st["verified"].as_bool(), st["login_item"].as_str()),
        (Some(true), Some("requires_approval")),
        "{st}"
    );
    let notes = st["notes"].to_string();
    assert!(
        notes.contains("it is loaded now (it was loaded before), but will not be loaded again at the next login"),
        "{st}"
    );
    // Not also said as a job launchd will not load (it is loaded), nor as a command to run
    // again (status ran none).
    assert!(
        !notes.contains("so launchd will not load it") && !notes.contains("run the command again"),
        "{st}"
    );
    s.t.sim(&["login-item", &label, "on"]).ok();
    // Where ServiceManagement cannot be asked (macOS 12, or it fails): unknown, never fine.
    let r = run_with(
        &s,
        &[("LAUNCHD_SIM_LOGIN_ITEMS", "unavailable")],
        &["agent", "status", "--json", "--stack", s.name],
    );
    assert_eq!(r.json()["login_item"], "unknown");
    let r = run_with(&s, &[("LAUNCHD_SIM_LOGIN_ITEMS", "unavailable")], &["status", s.name]);
    assert!(r.stdout().contains("login:     Login Items state unknown ("), "{}", r.stdout());
    done(&s);
}

/// `agent VERB` for the stack without waiting for a Host (a command that does not verify).
fn args_no_wait(s: &Stack, verb: &str) -> Vec<String> {
    s.host_args(&["agent", verb]).arg("--no-restart").into()
}

/// Issue 30 item 5: a job loaded only in `user/<uid>` while `gui/<uid>` exists (oyster's own
/// fallback after a `gui/<uid>` bootstrap answered 125) is the stack's Host for every verb:
/// `kill` signals it, `host start` refuses to start a second Host beside it, `agent
/// regenerate` reloads it on the new definition (into `gui/<uid>`, the copy booted out), and
/// `stop` stops it without saying "was not loaded". Before, `kill` said "not loaded",
/// `regenerate` said "The LaunchAgent is not loaded" and left the old Host, and `host start`
/// started a second Host.
#[test]
fn a_job_only_in_the_user_domain_is_seen_by_every_verb() {
    let mut s = Stack::new("ud");
    let user = format!("user/{}", uid());
    let gui = format!("gui/{}", uid());
    // The count of injected failures lives in the simulator's state: one more each time.
    let in_user = |s: &Stack, fail: &str| {
        let r = run_with(
            s,
            &[("LAUNCHD_SIM_FAIL_BOOTSTRAP", fail)],
            &s.args("install").iter().map(String::as_str).collect::<Vec<_>>(),
        )
        .ok();
        let said = format!("{}{}", r.stdout(), r.stderr());
        has_all(&said, &["retrying once in"]);
        // The note does not promise that a console login moves the Host.
        has_all(&said, &["loads a second copy"]);
        let st = s.status();
        assert_eq!(st["loaded_in"], serde_json::json!([user.clone()]), "{st}");
        st["pid"].as_u64().unwrap()
    };
    let pid = in_user(&s, "125:1");
    // kill: SIGTERM to the copy in user/<uid>.
    let r = s.t.run(["kill", "--stack", s.name]).ok();
    r.stdout_has(&format!("pid {pid}"));
    // host start: refused, naming the domain.
    let e = s.t.run(s.host_args(&["host", "start"])).fails_with(1).stderr();
    has_all(&e, &[&format!("is loaded in {user}")]);
    // regenerate on another port: reloaded, verified, now in gui/<uid>.
    s.port = crate::common::free_port();
    let r = s.t.run(s.args("regenerate")).ok();
    assert!(!r.stdout().contains("not loaded"), "{}", r.stdout());
    let st = s.status();
    assert_eq!(st["loaded_in"], serde_json::json!([gui]), "{st}");
    assert_eq!(st["port"], s.port, "{st}");
    assert_eq!(st["verified"], true, "{st}");
    // stop of a copy only in user/<uid>.
    s.t.run(["agent", "uninstall", "--stack", s.name]).ok();
    s.t.wait_no_processes();
    let pid = in_user(&s, "125:2");
    let r = s.t.run(["stop", "--stack", s.name]).ok();
    assert!(!r.stdout().contains("was not loaded"), "{}", r.stdout());
    r.stdout_has(&format!("pid {pid} booted out"));
    assert_eq!(s.status()["loaded_in"], serde_json::json!([]));
    done(&s);
}

/// 29.5: a Host running in `user/<uid>` (a Background session, where the login keychain is
/// locked) is said to be at risk for as long as it runs there, even while `gui/<uid>` exists
/// (the 125 fallback): `status` and `doctor` name it with the fix, and `providers status`
/// does not call Claude Code's authentication unchecked-and-fine. A restart at the console
/// moves it and the warnings go.
#[test]
fn a_host_in_the_background_session_is_said_to_have_no_login_keychain() {
    let s = Stack::new("kc");
    let r = run_with(
        &s,
        &[("LAUNCHD_SIM_FAIL_BOOTSTRAP", "125:1")],
        &s.args("install").iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .ok();
    r.stdout_has("Host verified");
    let st = s.status();
    let notes = st["notes"].to_string();
    assert!(notes.contains("login keychain is locked"), "{st}");
    assert!(notes.contains("restart --stack kc` at the console"), "{st}");
    let doc = s.t.run(["doctor", "--json", "--stack", s.name]).json();
    let row = doctor_check(&doc, "keychain");
    assert_eq!(row["status"], "warn", "{row}");
    let p = s.t.run(["providers", "status", "--json", "--stack", s.name]).ok().json();
    let auth = |id: &str| {
        p["providers"].as_array().unwrap().iter().find(|r| r["provider"] == id).unwrap()
            ["authentication"]
            .clone()
    };
    assert_eq!(auth("claude"), "keychain_locked", "{p}");
    assert_eq!(auth("codex"), "not_checked", "{p}");
    s.t.run(["providers", "status", "--stack", s.name])
        .stdout_has_all(&["authentication: at risk"]);
    // At the console, a restart moves it to gui/<uid>: nothing to warn about.
    s.t.run(s.args("restart")).ok();
    let st = s.status();
    assert!(!st["notes"].to_string().contains("login keychain"), "{st}");
    let p = s.t.run(["providers", "status", "--json", "--stack", s.name]).ok().json();
    assert!(!p.to_string().contains("keychain_locked"), "{p}");
    done(&s);
}

/// A changed definition whose Host does not verify is rolled back; when launchd refuses the
/// rollback's own bootstrap with a named cause (here the LaunchAgents directory made
/// group-writable meanwhile), the error the run ends with keeps that cause's fix as its hint:
/// the Host is down and the user needs the fix, not a bare "rollback failed too".
#[test]
fn a_rollback_refused_with_a_named_cause_ends_with_that_causes_fix() {
    use std::os::unix::fs::PermissionsExt;
    use std::process::Stdio;
    let mut s = crate::common::Stack::installed("rbfix");
    std::fs::write(s.root.join("host-service/unhealthy"), "").unwrap();
    s.port = crate::common::free_port();
    let log = s.t.path("regenerate.log");
    let out = std::fs::File::create(&log).unwrap();
    let mut child =
        s.t.cmd()
            .env("LAUNCHD_SIM_OWNERSHIP_CODE", "5")
            .args(s.agent_args("regenerate", true, Some((3, 300))))
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    crate::common::wait_until(
        std::time::Duration::from_secs(15),
        "the new definition's verification",
        || said().contains("waiting for the Host"),
    );
    let dir = s.t.home.join("Library/LaunchAgents");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o775)).unwrap();
    let status = child.wait().unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let e = said();
    assert_eq!(status.code(), Some(1), "{e}");
    has_all(&e, &["rollback failed too"]);
    let hint = e.lines().find(|l| l.starts_with("hint:")).unwrap_or("");
    assert!(hint.contains("chmod go-w ~/Library/LaunchAgents"), "{e}");
    done(&s);
}
