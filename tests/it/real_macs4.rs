//! Real Macs, round 4 (issue 39): what newer macOS answers that oyster did not accept, what a
//! session without the console can load, and what launchd's helpers do when they never answer
//! — against the simulator, each in the shape a real Mac shows (docs/launchd.md gives the
//! source for each).

use crate::common::{has_all, has_none};
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
    let mut s = crate::common::Stack::installed("bo5");
    // The first bootout answers 36 (in progress) and goes on; the one issued again finds the
    // label draining, which newer macOS answers with 5.
    let race =
        [("LAUNCHD_SIM_BOOTOUT_IN_PROGRESS", "1"), ("LAUNCHD_SIM_BOOTOUT_NOT_LOADED_CODE", "5")];
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
    run_with(&s, &[("LAUNCHD_SIM_BOOTOUT_NOT_LOADED_CODE", "5")], &stop_now).ok();
    run_with(&s, &[("LAUNCHD_SIM_BOOTOUT_NOT_LOADED_CODE", "5")], &stop_now).ok();
    s.t.run(s.args("start")).ok();
    let uninstall: Vec<String> =
        ["agent", "uninstall", "--stack", s.name].map(String::from).to_vec();
    run_with(&s, &race, &uninstall).ok();
    assert!(!s.loaded_in("gui") && !s.plist().exists());
    s.done();
}

/// 39.2: ServiceManagement's status query has no time limit, and the Background Task
/// Management daemon behind it is known to wedge. With the simulator's `login-item LABEL
/// hang` (the query never answers), `status`, `doctor`, `list` and a bootstrap refused with 5
/// each wait at most about 3 s for it, say the state is unknown (never fine), and go on; the
/// second question in one run is not asked again. Before, each hung with the query.
#[test]
fn a_login_items_query_that_never_answers_is_unknown_after_three_seconds() {
    let s = crate::common::Stack::installed("hang");
    s.t.sim(&["login-item", &s.label(), "hang"]).ok();
    let timed = |args: &[&str]| {
        let t0 = std::time::Instant::now();
        let r = s.t.run(args);
        (r, t0.elapsed())
    };
    let bound = std::time::Duration::from_secs(8);
    let (r, took) = timed(&["agent", "status", "--json", "--stack", s.name]);
    assert!(took < bound, "status took {took:?}");
    let st = r.json();
    assert_eq!(
        (st["login_item"].as_str(), st["verified"].as_bool()),
        (Some("unknown"), Some(true)),
        "{st}"
    );
    let (r, took) = timed(&["status", s.name]);
    assert!(took < bound, "status took {took:?}");
    assert!(
        r.stdout().contains("Login Items state unknown (")
            && r.stdout().contains("did not answer within 3 s"),
        "{}",
        r.stdout()
    );
    // doctor asks twice (status, then its own check): one wait, then said at once.
    let (r, took) = timed(&["doctor", "--json", "--stack", s.name]);
    // Two waits would be 6 s.
    assert!(
        took < std::time::Duration::from_millis(5500),
        "doctor waited more than once: {took:?}"
    );
    let row = crate::common::doctor_check(&r.json(), "login items");
    assert_eq!(row["status"], "warn", "{row}");
    assert!(row["detail"].to_string().contains("did not answer"), "{row}");
    // list asks only for a stack that is not loaded.
    s.t.run(["stop", "--stack", s.name]).ok();
    let (r, took) = timed(&["list", "--json"]);
    assert!(took < bound, "list took {took:?}");
    assert_eq!(r.json()["stacks"][0]["login_item"], "unknown");
    // A bootstrap answered 5 with the label not loaded: the Login Items question costs its
    // 3 s once, then the other causes are looked for as ever.
    let t0 = std::time::Instant::now();
    let r = run_with(&s, &[("LAUNCHD_SIM_FAIL_BOOTSTRAP", "5")], &s.args("start")).fails_with(1);
    let took = t0.elapsed();
    assert!(took < std::time::Duration::from_secs(12), "start took {took:?}");
    assert!(r.stderr().contains("launchd refused it and gave no reason"), "{}", r.stderr());
    s.t.sim(&["login-item", &s.label(), "on"]).ok();
    s.done();
}

/// 39.2: a loaded Host that runs while ServiceManagement says "requires approval" (the answer
/// for a plist a CLI wrote is undocumented; a public report shows it for a running job): a
/// change that reloads it is not refused on that answer alone. It is noted and tried (here
/// launchd really refuses the bootstrap, and the error names the switch). A loaded Host that
/// does not run is still refused before anything is touched, unless --ignore-login-items.
#[test]
fn switched_off_in_login_items_refuses_a_reload_only_of_a_host_that_does_not_run() {
    let mut s = crate::common::Stack::installed("bgreload");
    s.t.sim(&["login-item", &s.label(), "off"]).ok();
    // It runs: noted, tried.
    s.port = crate::common::free_port();
    let r = s.t.run(s.args("regenerate")).fails_with(1);
    let said = format!("{}{}", r.stdout(), r.stderr());
    has_all(&said, &["but it runs, so that answer alone is not taken as proof"]);
    has_all(&said, &["System Settings → General → Login Items"]);
    // It does not run (a crash loop waiting out launchd's throttle): refused, nothing touched.
    s.t.sim(&["login-item", &s.label(), "on"]).ok();
    s.t.run(s.args("install")).ok();
    s.crash_looping();
    s.t.sim(&["login-item", &s.label(), "off"]).ok();
    let bytes = std::fs::read(s.plist()).unwrap();
    s.port = crate::common::free_port();
    let e = s.t.run(s.args("regenerate")).fails_with(1).stderr();
    has_all(&e, &["were left as they are"]);
    assert!(e.contains("--ignore-login-items"), "the hint names the override: {e}");
    assert_eq!(std::fs::read(s.plist()).unwrap(), bytes, "{e}");
    assert!(s.loaded_in("gui"), "{e}");
    // The override: tried, said.
    let mut args = s.args("regenerate");
    args.push("--ignore-login-items".into());
    let r = s.t.run(args).fails_with(1);
    let said = format!("{}{}", r.stdout(), r.stderr());
    has_all(&said, &["--ignore-login-items was given: reloading it anyway"]);
    s.t.sim(&["login-item", &s.label(), "on"]).ok();
    s.done();
}

/// 39.4: over SSH with nobody (or another user) at the console, `gui/<uid>` can answer `print`
/// while its bootstrap answers a bare 5, not 125 (psimaker/vaultsync#89; simulator:
/// `LAUNCHD_SIM_CONSOLE_UID`). oyster asks who owns the console (as Homebrew does, the owner of
/// `/dev/console`; `OYSTER_CONSOLE_UID` stands in for it here, and is said) and loads a Host
/// that is not loaded in `gui/<uid>` into `user/<uid>`, saying why. Before, it tried
/// `gui/<uid>` and ended with "launchd refused it and gave no reason".
#[test]
fn with_the_console_not_this_users_the_host_goes_to_the_user_domain_said() {
    let s = Stack::new("ssh");
    let me = nix::unistd::getuid().as_raw();
    let other = (me + 4242).to_string();
    let sim_only = [("LAUNCHD_SIM_CONSOLE_UID", other.as_str())];
    // launchd's answer, as oyster met it before it asked who owns the console.
    let e = run_with(&s, &sim_only, &s.args("install")).fails_with(1).stderr();
    has_all(&e, &[&format!("bootstrap gui/{me} "), "exited 5"]);
    has_all(&e, &["launchd refused it and gave no reason"]);
    let both =
        [("LAUNCHD_SIM_CONSOLE_UID", other.as_str()), ("OYSTER_CONSOLE_UID", other.as_str())];
    let r = run_with(&s, &both, &s.args("install")).ok();
    let said = format!("{}{}", r.stdout(), r.stderr());
    has_all(&said, &[&format!(
            "the console belongs to another user (uid {other}) (OYSTER_CONSOLE_UID={other}), so gui/{me} has no login session"
        ), &format!("so using user/{me}")]);
    r.stdout_has("Host verified");
    let status: Vec<String> =
        ["agent", "status", "--json", "--stack", s.name].map(String::from).to_vec();
    let st = run_with(&s, &both, &status).json();
    assert_eq!(st["loaded_in"], serde_json::json!([format!("user/{me}")]), "{st}");
    assert_eq!(st["verified"], true, "{st}");
    s.t.run(["agent", "uninstall", "--stack", s.name]).ok();
    // Nobody at the console (root owns it): said so.
    let nobody = [("LAUNCHD_SIM_CONSOLE_UID", "0"), ("OYSTER_CONSOLE_UID", "0")];
    if me != 0 {
        let r = run_with(&s, &nobody, &s.args("install")).ok();
        assert!(r.stderr().contains("nobody is logged in at the console"), "{}", r.stderr());
        s.t.run(["agent", "uninstall", "--stack", s.name]).ok();
    }
    // The console is this user's: gui/<uid>, as ever; a Host loaded there stays there when the
    // console is someone else's later (fast user switching), since it proves the domain works.
    let mine = me.to_string();
    run_with(&s, &[("OYSTER_CONSOLE_UID", mine.as_str())], &s.args("install")).ok();
    assert!(s.loaded_in("gui"));
    run_with(&s, &[("OYSTER_CONSOLE_UID", other.as_str())], &s.args("restart")).ok();
    let st = run_with(&s, &[("OYSTER_CONSOLE_UID", other.as_str())], &status).json();
    assert_eq!(st["loaded_in"], serde_json::json!([format!("gui/{me}")]), "{st}");
    // A value that is not a uid is refused as input.
    run_with(&s, &[("OYSTER_CONSOLE_UID", "alice")], &s.args("restart"))
        .fails_with(2)
        .stderr_has_all(&["OYSTER_CONSOLE_UID is \"alice\", which is not a uid"]);
    s.done();
}

/// 39.9: `list` reads one listing per domain whatever labels the domains hold: with labels
/// holding spaces (a third-party agent loaded in both domains, rows whose label follows a
/// tab, an override of such a label) beside three running stacks, it starts at most 3
/// launchctl processes (the two listings; nothing per stack), counted through a wrapper
/// that logs each call. A row oyster cannot read that names a longer label (`…sp1-old`) no
/// longer makes the stack whose label begins it (`…sp1`) ask on its own (two more calls).
#[test]
fn list_of_three_stacks_beside_labels_holding_spaces_starts_at_most_three_launchctls() {
    use std::os::unix::fs::PermissionsExt;
    let mut s = Stack::new("sp1");
    let log = s.t.path("launchctl-calls.log");
    let wrapper = s.t.path("launchctl-recorder");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            crate::common::sim_bin().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (k, v) in &mut s.t.extra_env {
        if k == "OYSTER_LAUNCHCTL" {
            *v = wrapper.display().to_string();
        }
    }
    for name in ["sp1", "sp2", "sp3"] {
        let port = crate::common::free_port();
        s.t.run(
            crate::common::args(&["agent", "install"])
                .stack(name)
                .root(&s.root)
                .node(crate::common::real_node())
                .port(port)
                .wait(10, 300),
        )
        .ok();
    }
    // A third-party agent whose label holds spaces, loaded in both domains and disabled.
    let label = "com.example.my agent";
    let plist = s.t.path("my agent.plist");
    std::fs::write(
        &plist,
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict><key>Label</key><string>{label}</string><key>ProgramArguments</key><array><string>/bin/sleep</string><string>60</string></array><key>LimitLoadToSessionType</key><array><string>Aqua</string><string>Background</string></array></dict></plist>\n"),
    )
    .unwrap();
    let me = nix::unistd::getuid().as_raw();
    for domain in [format!("gui/{me}"), format!("user/{me}")] {
        s.t.sim(&["bootstrap", &domain, plist.to_str().unwrap()]).ok();
    }
    s.t.sim(&["disable", &format!("gui/{me}/com.example.other agent")]).ok();
    // And a row in no shape oyster reads that names a label longer than a stack's (it says
    // nothing of `sp1`, which it begins with): skipped, counted, and no reason to ask `sp1`.
    let rows = "       0      -\tcom.example.tabbed label with spaces\n     812     -15     UIKitApplication:com.apple.Preferences[704b][rb-legacy]\n??? com.oysterun.host.sp1-old (a label holding spaces) ???";
    let _ = std::fs::remove_file(&log);
    let r = run_with(
        &s,
        &[("LAUNCHD_SIM_DOMAIN_EXTRA_ROWS", rows)],
        &["list".to_owned(), "--json".to_owned()],
    )
    .ok();
    let calls: Vec<String> =
        std::fs::read_to_string(&log).unwrap_or_default().lines().map(str::to_owned).collect();
    let doc = r.json();
    let stacks = doc["stacks"].as_array().unwrap();
    assert_eq!(stacks.len(), 3, "{doc}");
    for st in stacks {
        assert_eq!(st["summary"], "verified", "{st}");
        assert!(!st["notes"].to_string().contains("could not be used"), "{st}");
    }
    // Only the `???` row, once per domain: every row holding spaces was read.
    r.stderr_has("2 rows of launchd's domain listings");
    assert!(calls.len() <= 3, "{} launchctl calls: {calls:#?}", calls.len());
    assert!(
        calls.iter().all(|c| c == &format!("print gui/{me}") || c == &format!("print user/{me}")),
        "a call per stack: {calls:#?}"
    );
    for domain in [format!("gui/{me}"), format!("user/{me}")] {
        s.t.sim(&["bootout", &format!("{domain}/{label}")]).ok();
    }
    for name in ["sp2", "sp3"] {
        s.t.run(["agent", "uninstall", "--stack", name]).ok();
    }
    s.done();
}

/// 39.7: the hint after "launchd refused it and gave no reason" is one this user can follow:
/// `log show` needs an administrator (here root, so the plain form; a standard user is given
/// the `sudo` form as an administrator's command, `refusal::tests`), and launchctl's own advice
/// to a caller that is not root ("Try re-running the command as root for richer errors.") is
/// kept as the command it means. Before, the hint was a `log show` a standard user cannot run,
/// and launchctl's advice was only in the quoted error.
#[test]
fn the_hint_after_a_bare_5_keeps_launchctls_advice() {
    let s = Stack::new("adv");
    let me = nix::unistd::getuid().as_raw();
    let hint = |env: &[(&str, &str)]| {
        let e = run_with(&s, env, &s.args("install")).fails_with(1).stderr();
        e.lines()
            .find(|l| l.starts_with("hint:"))
            .unwrap_or_else(|| panic!("no hint: {e}"))
            .to_owned()
    };
    // launchctl as a caller that is not root sees it (the simulator's LAUNCHD_SIM_EUID).
    let h = hint(&[("LAUNCHD_SIM_FAIL_BOOTSTRAP", "5"), ("LAUNCHD_SIM_EUID", "501")]);
    has_all(&h, &[&format!(
            "launchctl's own advice, re-running it as root for a richer error, is `sudo launchctl bootstrap gui/{me} ~/Library/LaunchAgents/com.oysterun.host.adv.plist`"
        )]);
    if nix::unistd::geteuid().is_root() {
        assert!(h.contains("hint: `log show --last 5m"), "root reads the log itself: {h}");
    }
    // As root launchctl gives no such advice, and none is made up.
    let h = hint(&[("LAUNCHD_SIM_FAIL_BOOTSTRAP", "5"), ("LAUNCHD_SIM_EUID", "0")]);
    has_none(&h, &["launchctl bootstrap"]);
    has_all(&h, &["checks the rest"]);
    s.done();
}

/// 39.8: on macOS 15 and later a program launchd starts that is not an app may not reach the
/// local network until it is allowed (Local Network privacy, Apple TN3179): `doctor` warns
/// when the Host's config names an address there (a private or link-local IP, an mDNS name),
/// naming each and where to allow it, where launchd runs the Host; never for loopback or
/// public addresses, nor without launchd. What a Mac really does is recorded by the macOS job.
#[test]
fn doctor_says_local_network_privacy_when_the_config_names_a_lan_address() {
    let s = crate::common::Stack::installed("lan");
    let config = s.stack_dir().join("host/config.json");
    let row = |s: &Stack| {
        let doc = s.t.run(["doctor", "--json", "--stack", s.name]).json();
        doc["checks"].as_array().unwrap().iter().find(|c| c["check"] == "local network").cloned()
    };
    assert_eq!(row(&s), None, "nothing on the local network yet");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    doc["ollama_base_url"] = "http://192.168.1.20:11434/v1".into();
    doc["public_url"] = "https://api.example.com".into();
    std::fs::write(&config, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let r = row(&s).expect("a local network check");
    assert_eq!(r["status"], "warn", "{r}");
    let detail = r["detail"].as_str().unwrap();
    has_all(detail, &["ollama_base_url (192.168.1.20)"]);
    has_none(detail, &["api.example.com"]);
    has_all(detail, &["TN3179"]);
    assert!(
        r["fix"].as_str().unwrap().contains("System Settings → Privacy & Security → Local Network"),
        "{r}"
    );
    // Without launchd (the Host is started directly), nothing is said.
    let direct = run_with(
        &s,
        &[("OYSTER_LAUNCHCTL", "none")],
        &["doctor".into(), "--json".into(), "--stack".into(), s.name.into()],
    )
    .json();
    assert!(!direct.to_string().contains("local network"), "{direct}");
    s.done();
}

/// The pids of this test's Login Items queries (`launchctl login-item-status`) still running.
fn queries(s: &Stack) -> Vec<u32> {
    let ours = s.t.own_processes();
    let mut sys = sysinfo::System::new();
    sys.refresh_processes_specifics(
        sysinfo::ProcessesToUpdate::All,
        true,
        sysinfo::ProcessRefreshKind::nothing().with_cmd(sysinfo::UpdateKind::Always),
    );
    ours.into_iter()
        .filter(|pid| {
            sys.process(sysinfo::Pid::from_u32(*pid))
                .is_some_and(|p| p.cmd().iter().any(|a| a.to_string_lossy() == "login-item-status"))
        })
        .collect()
}

/// 39.2 with a real Ctrl-C or SIGTERM: `status`, `doctor` and `list` catch no signal, and the
/// Login Items query runs in a process group of its own (the terminal's Ctrl-C never reaches
/// it). Interrupted while the query hangs, oyster kills the query first and still ends by the
/// signal. Before, oyster died and the query it started was left running for good.
#[test]
fn an_interrupt_while_a_login_items_query_hangs_leaves_no_query_behind() {
    use std::os::unix::process::ExitStatusExt;
    let s = crate::common::Stack::installed("hangint");
    s.t.sim(&["login-item", &s.label(), "hang"]).ok();
    s.t.run(["stop", "--stack", s.name]).ok();
    let runs = [
        (["status", "--stack", s.name], nix::sys::signal::Signal::SIGINT),
        (["doctor", "--stack", s.name], nix::sys::signal::Signal::SIGTERM),
        (["list", "--json", "-q"], nix::sys::signal::Signal::SIGINT),
    ];
    for (args, sig) in runs {
        let mut child =
            s.t.cmd()
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
        let t0 = std::time::Instant::now();
        while queries(&s).is_empty() {
            assert!(t0.elapsed().as_secs() < 10, "{args:?} never asked Login Items");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        nix::sys::signal::kill(pid, sig).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(sig as i32), "{args:?}: {status:?}");
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert_eq!(queries(&s), Vec::<u32>::new(), "{args:?} left its query running");
    }
    s.t.sim(&["login-item", &s.label(), "on"]).ok();
    s.done();
}
