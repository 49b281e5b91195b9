//! Conformance of launchctl-sim with real launchd: exit codes, stderr lines, `print` layout,
//! the drain race, the stale-definition trap, environment isolation, KeepAlive and throttling.
//! Every test uses its own state directory and HOME, boots out what it loaded and kills what it
//! started.
//!
//! The binary under test is the simulator, or the one `LAUNCHCTL_UNDER_TEST` names
//! (`LAUNCHCTL_UNDER_TEST=/bin/launchctl` on a Mac, as the macOS workflow runs it): the same
//! assertions then check the simulator's model against launchd itself. Tests of what only the
//! simulator has (its knobs, `login`, its daemon) return early there with a `SKIPPED` line.
//!
//! Processes are found through `sysinfo` (no `/proc`), so the harness also runs on macOS.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use sysinfo::{ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System, UpdateKind};

const SIM: &str = env!("CARGO_BIN_EXE_launchctl-sim");

/// The launchctl under test: `$LAUNCHCTL_UNDER_TEST` (a real one), else the simulator.
fn launchctl() -> String {
    std::env::var("LAUNCHCTL_UNDER_TEST")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| SIM.to_owned())
}

/// Whether the tests run against a real launchctl.
fn real() -> bool {
    launchctl() != SIM
}

/// For a test (or the rest of one) that only the simulator can pass: its knobs, `login`, its
/// daemon. Against a real launchctl it says so and returns true, so the caller skips.
fn sim_only(why: &str) -> bool {
    if real() {
        eprintln!("SKIPPED against {}: simulator-only ({why})", launchctl());
    }
    real()
}

struct Sim {
    dir: tempfile::TempDir,
    uid: u32,
    env: Vec<(String, String)>,
}

impl Sim {
    fn new() -> Sim {
        Sim {
            dir: tempfile::Builder::new().prefix("sim-").tempdir().unwrap(),
            uid: nix::unistd::getuid().as_raw(),
            env: vec![],
        }
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn run(&self, args: &[&str]) -> Output {
        let mut c = Command::new(launchctl());
        c.args(args)
            .env_clear()
            .env("HOME", self.home())
            .env("PATH", "/usr/bin:/bin")
            .env("LAUNCHD_SIM_STATE", self.dir.path().join("state"))
            .env("CALLER_SECRET", "from-the-shell");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.output().unwrap()
    }
    fn gui(&self) -> String {
        format!("gui/{}", self.uid)
    }
    fn target(&self, label: &str) -> String {
        format!("gui/{}/{label}", self.uid)
    }
    fn user(&self) -> String {
        format!("user/{}", self.uid)
    }
    /// Writes a job plist running `sh -c SCRIPT` (`@DUMP@` in it names this test's HOME, an
    /// absolute path, since a real launchd gives the job the user's own HOME).
    fn plist(&self, label: &str, script: &str, extra: &str) -> PathBuf {
        let dir = self.home().join("Library/LaunchAgents");
        std::fs::create_dir_all(&dir).unwrap();
        let script = script.replace("@DUMP@", &self.home().display().to_string());
        let p = dir.join(format!("{label}.plist"));
        let xml = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict>\n\
             <key>Label</key><string>{label}</string>\n\
             <key>ProgramArguments</key><array><string>/bin/sh</string><string>-c</string><string>{script}</string></array>\n\
             <key>RunAtLoad</key><true/>\n{extra}</dict>\n</plist>\n"
        );
        std::fs::write(&p, xml).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        p
    }
    fn field(&self, label: &str, key: &str) -> Option<String> {
        let out = self.run(&["print", &self.target(label)]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .filter(|l| l.starts_with('\t') && !l.starts_with("\t\t"))
            .find_map(|l| l.trim().strip_prefix(&format!("{key} = ")).map(str::to_owned))
    }
    /// `Bootstrap failed: 5: …`, with launchctl's hint to retry as root when the caller is not
    /// root (the simulator's `LAUNCHD_SIM_EUID` pretends).
    fn bootstrap5(&self) -> String {
        let euid = self
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == "LAUNCHD_SIM_EUID")
            .and_then(|(_, v)| v.parse::<u32>().ok())
            .unwrap_or_else(|| nix::unistd::geteuid().as_raw());
        let hint =
            if euid == 0 { "" } else { "Try re-running the command as root for richer errors.\n" };
        format!("Bootstrap failed: 5: Input/output error\n{hint}")
    }
    fn wait_for(&self, what: &str, mut f: impl FnMut() -> bool) {
        let t0 = Instant::now();
        while !f() {
            assert!(t0.elapsed() < Duration::from_secs(15), "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        // Boot out, in both domains, every job this test wrote a plist for (each is named after
        // its label): a real launchd would keep them loaded after the test.
        let agents = self.home().join("Library/LaunchAgents");
        for entry in std::fs::read_dir(agents).into_iter().flatten().flatten() {
            let path = entry.path();
            if let Some(label) = path.file_stem().and_then(|l| l.to_str()) {
                for domain in [self.gui(), self.user()] {
                    let _ = self.run(&["bootout", &format!("{domain}/{label}")]);
                }
            }
        }
        // Kill, by pid, this test's daemon, every process carrying this test's HOME (the jobs),
        // and their descendants. Nothing is matched by name.
        let needle = format!("HOME={}", self.home().display());
        let state = self.dir.path().join("state");
        let mut sys = System::new();
        sys.refresh_processes_specifics(
            ProcessesToUpdate::All,
            true,
            ProcessRefreshKind::nothing()
                .with_environ(UpdateKind::Always)
                .with_cmd(UpdateKind::Always),
        );
        let mut doomed: BTreeSet<sysinfo::Pid> = sys
            .processes()
            .iter()
            .filter(|(_, p)| {
                let daemon = p.cmd().get(1).is_some_and(|a| a == "__daemon")
                    && p.cmd().get(2).is_some_and(|a| Path::new(a) == state);
                daemon || p.environ().iter().any(|kv| *kv == *needle)
            })
            .map(|(pid, _)| *pid)
            .collect();
        loop {
            let before = doomed.len();
            for (pid, p) in sys.processes() {
                if p.parent().is_some_and(|parent| doomed.contains(&parent)) {
                    doomed.insert(*pid);
                }
            }
            if doomed.len() == before {
                break;
            }
        }
        doomed.remove(&sysinfo::Pid::from_u32(std::process::id()));
        for pid in doomed {
            kill_pid(pid.as_u32(), Signal::SIGKILL);
        }
    }
}

/// Signals one process by pid; refuses pids that would address a process group.
fn kill_pid(pid: u32, sig: Signal) {
    if let Ok(p) = i32::try_from(pid) {
        if p > 0 {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), sig);
        }
    }
}

/// The kernel's view of one process: `None` when it is gone or a zombie.
fn process_env(pid: u32) -> Option<Vec<String>> {
    let mut sys = System::new();
    let spid = sysinfo::Pid::from_u32(pid);
    sys.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[spid]),
        true,
        ProcessRefreshKind::nothing().with_environ(UpdateKind::Always),
    );
    let p = sys.process(spid)?;
    if matches!(p.status(), ProcessStatus::Zombie | ProcessStatus::Dead) {
        return None;
    }
    Some(p.environ().iter().map(|kv| kv.to_string_lossy().into_owned()).collect())
}

fn alive(pid: u32) -> bool {
    process_env(pid).is_some()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
/// A job's environment as the kernel shows it. Where the kernel hides it (macOS, for
/// platform binaries such as `/bin/sh`), the dump an `ENV_LOOP` job wrote at start is used.
fn environ(home: &Path, pid: u32) -> Vec<String> {
    let live = process_env(pid).unwrap_or_default();
    if !live.is_empty() {
        return live;
    }
    let dump = home.join(format!("env.{pid}"));
    let t0 = Instant::now();
    while !dump.exists() && t0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::read_to_string(dump).unwrap_or_default().lines().map(str::to_owned).collect()
}

const LOOP: &str = "while :; do sleep 0.05; done";
/// What Homebrew (and oyster) write, so one plist loads in `gui/<uid>` and `user/<uid>`.
const BOTH_SESSIONS: &str = "<key>LimitLoadToSessionType</key><array><string>Aqua</string>\
     <string>Background</string><string>LoginWindow</string><string>StandardIO</string>\
     <string>System</string></array>\n";
/// A loop that first dumps its environment to `$HOME/env.<pid>` (see `environ`).
const ENV_LOOP: &str = "/usr/bin/env > '@DUMP@/env.'$$; while :; do sleep 0.05; done";

#[test]
fn unloaded_labels_answer_113_3_and_5() {
    let s = Sim::new();
    // Two lines, "Bad request." first (toss-agent-runtime#40), for print and kickstart.
    let missing =
        format!("Bad request.\nCould not find service \"x.y\" in domain for user gui: {}\n", s.uid);
    for args in [vec!["print"], vec!["kickstart"], vec!["kickstart", "-k"]] {
        let mut args = args;
        let target = s.target("x.y");
        args.push(&target);
        let o = s.run(&args);
        assert_eq!((code(&o), stderr(&o)), (113, missing.clone()), "{args:?}");
    }
    let o = s.run(&["print", &format!("{}/x.y", s.user())]);
    assert_eq!(
        stderr(&o),
        format!("Bad request.\nCould not find service \"x.y\" in domain for uid: {}\n", s.uid)
    );
    let o = s.run(&["bootout", &s.target("x.y")]);
    // Newer macOS may answer 5 instead (jdx/mise#10965, issue 39 item 3): against the real
    // launchctl either is recorded, never a failure here.
    if real() && code(&o) == 5 {
        eprintln!("bootout of an unloaded label answered 5 here: {}", stderr(&o));
    } else {
        assert_eq!((code(&o), stderr(&o).as_str()), (3, "Boot-out failed: 3: No such process\n"));
    }
    // The plist form answers 113 for an unloaded label (nix-installer#520), 2 for no file.
    let p = s.plist("x.y", LOOP, "");
    let o = s.run(&["bootout", &s.gui(), p.to_str().unwrap()]);
    if real() && code(&o) == 5 {
        eprintln!("plist-form bootout of an unloaded label answered 5 here: {}", stderr(&o));
    } else {
        assert_eq!(
            (code(&o), stderr(&o).as_str()),
            (113, "Boot-out failed: 113: Could not find specified service\n")
        );
    }
    let gone = s.home().join("gone.plist");
    let o = s.run(&["bootout", &s.gui(), gone.to_str().unwrap()]);
    assert_eq!(
        (code(&o), stderr(&o)),
        (
            2,
            format!(
                "{}: No such file or directory\nBoot-out failed: 2: No such file or directory\n",
                gone.display()
            )
        )
    );
    assert_eq!(code(&s.run(&["bootout", "--wait", &s.target("x.y")])), 64);
    assert_eq!(code(&s.run(&["frobnicate"])), 64);
    assert_eq!(code(&s.run(&["print", "gui/99999/x"])), 112);
}

#[test]
fn bootstrap_print_layout_and_already_loaded() {
    let s = Sim::new();
    let p = s.plist("a.b", LOOP, "<key>KeepAlive</key><true/>\n");
    let o = s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()]);
    assert_eq!((code(&o), stdout(&o).as_str(), stderr(&o).as_str()), (0, "", ""));
    s.wait_for("running (past xpcproxy)", || s.field("a.b", "state").as_deref() == Some("running"));
    let o = s.run(&["print", &s.target("a.b")]);
    let text = stdout(&o);
    assert!(text.starts_with(&format!("{} = {{\n", s.target("a.b"))), "{text}");
    assert!(text.ends_with("}\n"));
    for line in [
        "\ttype = LaunchAgent\n",
        "\tstate = running\n",
        "\tlast exit code = (never exited)\n",
        "\tproperties = keepalive | runatload | inferred program\n",
        "\texit timeout = 5\n",
    ] {
        assert!(text.contains(line), "{line:?} in\n{text}");
    }
    assert_eq!(s.field("a.b", "path").as_deref(), p.to_str());
    assert!(s.field("a.b", "pid").unwrap().parse::<u32>().is_ok());
    let o = s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()]);
    assert_eq!(code(&o), 5);
    assert_eq!(stderr(&o), s.bootstrap5());
    if sim_only("LAUNCHD_SIM_BUSY_CODE") {
        return;
    }
    let mut s = s;
    s.env.push(("LAUNCHD_SIM_BUSY_CODE".into(), "37".into()));
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 37);
}

#[test]
fn the_job_gets_launchds_environment_not_the_callers() {
    let s = Sim::new();
    let p = s.plist(
        "env.t",
        ENV_LOOP,
        "<key>EnvironmentVariables</key><dict><key>FOO</key><string>$HOME/x</string></dict>\n",
    );
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    let pid: u32 = s.field("env.t", "pid").unwrap().parse().unwrap();
    let env = environ(&s.home(), pid);
    assert!(env.contains(&"PATH=/usr/bin:/bin:/usr/sbin:/sbin".to_string()), "{env:?}");
    assert!(env.contains(&"XPC_SERVICE_NAME=env.t".to_string()));
    assert!(env.contains(&"FOO=$HOME/x".to_string()), "no expansion: {env:?}");
    // The simulator gives the jobs its caller's HOME; launchd the user's home directory.
    let home = if real() {
        nix::unistd::User::from_uid(nix::unistd::getuid()).unwrap().unwrap().dir
    } else {
        s.home()
    };
    assert!(env.contains(&format!("HOME={}", home.display())), "{env:?}");
    assert!(!env.iter().any(|kv| kv.contains("CALLER_SECRET")), "{env:?}");
    // The plist's PATH overrides the default.
    let q = s.plist(
        "env.u",
        ENV_LOOP,
        "<key>EnvironmentVariables</key><dict><key>PATH</key><string>/opt/x:/bin</string></dict>\n",
    );
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), q.to_str().unwrap()])), 0);
    let pid: u32 = s.field("env.u", "pid").unwrap().parse().unwrap();
    assert!(environ(&s.home(), pid).contains(&"PATH=/opt/x:/bin".to_string()));
}

#[test]
fn kickstart_never_rereads_the_plist() {
    let s = Sim::new();
    let p = s.plist(
        "stale.t",
        ENV_LOOP,
        "<key>EnvironmentVariables</key><dict><key>GEN</key><string>one</string></dict>\n",
    );
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    let old: u32 = s.field("stale.t", "pid").unwrap().parse().unwrap();
    s.plist(
        "stale.t",
        ENV_LOOP,
        "<key>EnvironmentVariables</key><dict><key>GEN</key><string>two</string></dict>\n",
    );
    let o = s.run(&["kickstart", "-k", "-p", &s.target("stale.t")]);
    assert_eq!(code(&o), 0);
    let new: u32 = stdout(&o).trim().parse().expect("bare pid on a pipe");
    assert_ne!(old, new);
    assert!(
        environ(&s.home(), new).contains(&"GEN=one".to_string()),
        "the captured definition runs"
    );
    // Only bootout + bootstrap picks up the edit.
    assert_eq!(code(&s.run(&["bootout", &s.target("stale.t")])), 0);
    s.wait_for("drain", || code(&s.run(&["print", &s.target("stale.t")])) == 113);
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    let pid: u32 = s.field("stale.t", "pid").unwrap().parse().unwrap();
    assert!(environ(&s.home(), pid).contains(&"GEN=two".to_string()));
}

#[test]
fn bootout_returns_before_the_process_is_gone_and_the_label_lingers() {
    let mut s = Sim::new();
    s.env.push(("LAUNCHD_SIM_DRAIN_MS".into(), "300".into()));
    let slow = "trap 'sleep 1; exit 0' TERM; while :; do sleep 0.05; done";
    let p = s.plist("drain.t", slow, "<key>KeepAlive</key><true/>\n");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    std::thread::sleep(Duration::from_millis(100));
    let pid: u32 = s.field("drain.t", "pid").unwrap().parse().unwrap();
    let t0 = Instant::now();
    assert_eq!(code(&s.run(&["bootout", &s.target("drain.t")])), 0);
    assert!(t0.elapsed() < Duration::from_millis(900), "bootout waited for the process");
    assert!(alive(pid), "still alive right after bootout");
    assert_eq!(s.field("drain.t", "state").as_deref(), Some("SIGTERMed"));
    let o = s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()]);
    assert_eq!(code(&o), 5, "bootstrap while draining fails with 5");
    assert_eq!(code(&s.run(&["bootout", &s.target("drain.t")])), 3, "already booting out");
    s.wait_for("label gone", || code(&s.run(&["print", &s.target("drain.t")])) == 113);
    assert!(t0.elapsed() >= Duration::from_millis(1000));
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
}

#[test]
fn disabled_labels_fail_bootstrap_until_enabled() {
    let mut s = Sim::new();
    let p = s.plist("dis.t", LOOP, "");
    assert_eq!(code(&s.run(&["disable", &s.target("dis.t")])), 0);
    let o = s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()]);
    assert_eq!(code(&o), 5);
    let o = s.run(&["print-disabled", &s.gui()]);
    // A real domain lists Apple's overrides too.
    assert!(
        stdout(&o).starts_with("disabled services = {\n")
            && stdout(&o).contains("\n\t\"dis.t\" => disabled\n"),
        "{}",
        stdout(&o)
    );
    if sim_only("LAUNCHD_SIM_DISABLED_CODE") {
        assert_eq!(code(&s.run(&["enable", &s.target("dis.t")])), 0);
        return;
    }
    s.env.push(("LAUNCHD_SIM_DISABLED_CODE".into(), "119".into()));
    let o = s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()]);
    assert_eq!(
        (code(&o), stderr(&o).as_str()),
        (119, "Bootstrap failed: 119: Service is disabled\n")
    );
    assert_eq!(code(&s.run(&["enable", &s.target("dis.t")])), 0);
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    s.env.push(("LAUNCHD_SIM_PRINT_DISABLED_STYLE".into(), "bool".into()));
    assert!(stdout(&s.run(&["print-disabled", &s.gui()])).contains("\"dis.t\" => false"));
}

#[test]
fn keepalive_respawns_after_the_throttle_interval() {
    let s = Sim::new();
    let p = s.plist(
        "crash.t",
        "exit 3",
        "<key>KeepAlive</key><true/>\n<key>ThrottleInterval</key><integer>1</integer>\n",
    );
    let t0 = Instant::now();
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    s.wait_for("first exit", || s.field("crash.t", "last exit code").as_deref() == Some("3"));
    assert_eq!(s.field("crash.t", "state").as_deref(), Some("spawn scheduled"));
    assert!(s.field("crash.t", "successive crashes").is_some());
    s.wait_for("respawn", || {
        s.field("crash.t", "runs").and_then(|r| r.parse::<u32>().ok()) >= Some(3)
    });
    assert!(t0.elapsed() >= Duration::from_millis(1900), "throttled to one run a second");
}

#[test]
fn unusable_paths_end_as_ex_config_and_bad_plists_are_refused() {
    let s = Sim::new();
    let p =
        s.plist("cfg.t", LOOP, "<key>WorkingDirectory</key><string>/nonexistent/dir</string>\n");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    assert_eq!(s.field("cfg.t", "last exit code").as_deref(), Some("78: EX_CONFIG"));
    let q = s.plist(
        "log.t",
        LOOP,
        "<key>StandardOutPath</key><string>/nonexistent/dir/out.log</string>\n",
    );
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), q.to_str().unwrap()])), 0);
    assert_eq!(s.field("log.t", "last exit code").as_deref(), Some("78: EX_CONFIG"));
    let w = s.plist("mode.t", LOOP, "");
    std::fs::set_permissions(&w, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), w.to_str().unwrap()])), 122);
    let missing = s.home().join("nope.plist");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), missing.to_str().unwrap()])), 2);
    let junk = s.home().join("junk.plist");
    std::fs::write(&junk, "not a plist").unwrap();
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), junk.to_str().unwrap()])), 5);
}

#[test]
fn no_gui_domain_and_injected_failures() {
    if sim_only("LAUNCHD_SIM_NO_GUI, LAUNCHD_SIM_FAIL_BOOTSTRAP") {
        return;
    }
    let mut s = Sim::new();
    let p = s.plist("gui.t", LOOP, BOTH_SESSIONS);
    s.env.push(("LAUNCHD_SIM_NO_GUI".into(), "1".into()));
    assert_eq!(code(&s.run(&["print", &s.gui()])), 125);
    let o = s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()]);
    assert_eq!(
        (code(&o), stderr(&o).as_str()),
        (125, "Bootstrap failed: 125: Domain does not support specified action\n")
    );
    let user = format!("user/{}", s.uid);
    s.env.push(("LAUNCHD_SIM_FAIL_BOOTSTRAP".into(), "5:2".into()));
    assert_eq!(code(&s.run(&["bootstrap", &user, p.to_str().unwrap()])), 5);
    assert_eq!(code(&s.run(&["bootstrap", &user, p.to_str().unwrap()])), 5);
    assert_eq!(code(&s.run(&["bootstrap", &user, p.to_str().unwrap()])), 0);
    assert_eq!(code(&s.run(&["print", &format!("{user}/gui.t")])), 0);
}

#[test]
fn the_daemon_exits_once_nothing_is_loaded() {
    if sim_only("the simulator's daemon") {
        return;
    }
    let s = Sim::new();
    let p = s.plist("idle.t", LOOP, "");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    let pidfile = s.dir.path().join("state/daemon.pid");
    let daemon: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    let job: u32 = s.field("idle.t", "pid").unwrap().parse().unwrap();
    assert_eq!(code(&s.run(&["bootout", &s.target("idle.t")])), 0);
    s.wait_for("daemon exit", || !pidfile.exists());
    s.wait_for("processes gone", || !alive(daemon) && !alive(job));
}

#[test]
fn session_types_decide_where_a_plist_loads_and_domains_are_separate() {
    let mut s = Sim::new();
    // No LimitLoadToSessionType: Aqua only, refused by the Background session of user/<uid>.
    let aqua = s.plist("aqua.t", LOOP, "");
    let o = s.run(&["bootstrap", &s.user(), aqua.to_str().unwrap()]);
    assert_eq!((code(&o), stderr(&o)), (5, s.bootstrap5()));
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), aqua.to_str().unwrap()])), 0);
    // A string naming Background loads in user/<uid> only.
    let bg =
        s.plist("bg.t", LOOP, "<key>LimitLoadToSessionType</key><string>Background</string>\n");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), bg.to_str().unwrap()])), 5);
    assert_eq!(code(&s.run(&["bootstrap", &s.user(), bg.to_str().unwrap()])), 0);
    // Loaded in user/<uid> is not visible in gui/<uid>.
    assert_eq!(code(&s.run(&["print", &format!("{}/bg.t", s.user())])), 0);
    assert_eq!(code(&s.run(&["print", &s.target("bg.t")])), 113);
    assert_eq!(code(&s.run(&["bootout", &s.target("bg.t")])), 3);
    // An array with both loads in both; each domain has its own instance.
    let both = s.plist("both.t", LOOP, BOTH_SESSIONS);
    for domain in [s.gui(), s.user()] {
        assert_eq!(code(&s.run(&["bootstrap", &domain, both.to_str().unwrap()])), 0, "{domain}");
    }
    let gui_pid = s.field("both.t", "pid").unwrap();
    let out = stdout(&s.run(&["print", &format!("{}/both.t", s.user())]));
    assert!(out.contains("\tdomain = user/"), "{out}");
    assert!(!out.contains(&format!("\tpid = {gui_pid}\n")), "{out}");
    // The refusal code is a knob: some reports show 125.
    if sim_only("LAUNCHD_SIM_SESSION_CODE") {
        return;
    }
    s.env.push(("LAUNCHD_SIM_SESSION_CODE".into(), "125".into()));
    let o = s.run(&["bootstrap", &s.user(), aqua.to_str().unwrap()]);
    assert_eq!(
        (code(&o), stderr(&o).as_str()),
        (125, "Bootstrap failed: 125: Domain does not support specified action\n")
    );
}

#[test]
fn a_signal_death_prints_the_signal_instead_of_the_exit_code() {
    let s = Sim::new();
    // The first run kills itself with SIGTERM after a moment; KeepAlive respawns it after the
    // throttle, so there is a window with `spawn scheduled` and no process. Later runs stay up.
    let p = s.plist(
        "sig.t",
        "[ -e \"$HOME/once\" ] &amp;&amp; exec sleep 30; touch \"$HOME/once\"; sleep 0.2; kill -TERM $$; sleep 5",
        "<key>KeepAlive</key><true/>\n<key>ThrottleInterval</key><integer>2</integer>\n",
    );
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    s.wait_for("the signal death", || s.field("sig.t", "last terminating signal").is_some());
    let text = stdout(&s.run(&["print", &s.target("sig.t")]));
    assert!(text.contains("\tlast terminating signal = Terminated: 15\n"), "{text}");
    assert!(!text.contains("last exit code"), "instead of: {text}");
    assert!(text.contains("\tstate = spawn scheduled\n"), "{text}");
    assert!(text.contains("\tsuccessive crashes = 1\n"), "{text}");
    assert!(text.contains("\truns = 1\n"), "{text}");
    assert!(!text.contains("\tpid = "), "no pid while not running: {text}");
    s.wait_for("the respawn", || {
        s.field("sig.t", "runs").as_deref() == Some("2") && s.field("sig.t", "pid").is_some()
    });
    s.wait_for("running (past xpcproxy)", || {
        s.field("sig.t", "state").as_deref() == Some("running")
    });
}

/// A job that notes a SIGTERM in `$HOME/got-term` before it exits 0.
const TERM_NOTED: &str =
    "trap 'touch \"$HOME/got-term\"; exit 0' TERM; while :; do sleep 0.05; done";

#[test]
fn kickstart_is_37_on_a_running_job_and_k_kills_with_sigkill() {
    let mut s = Sim::new();
    let p = s.plist("ks.t", TERM_NOTED, "<key>KeepAlive</key><true/>\n");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    let old: u32 = s.field("ks.t", "pid").unwrap().parse().unwrap();
    // Without -k on a running job: EALREADY, no message, nothing restarted.
    for flags in [&[][..], &["-p"][..]] {
        let mut args = vec!["kickstart"];
        args.extend_from_slice(flags);
        let target = s.target("ks.t");
        args.push(&target);
        let o = s.run(&args);
        assert_eq!((code(&o), stdout(&o).as_str(), stderr(&o).as_str()), (37, "", ""), "{args:?}");
    }
    assert_eq!(s.field("ks.t", "pid"), Some(old.to_string()));
    // -k: SIGKILL, so the TERM trap never runs; a new instance starts at once.
    let o = s.run(&["kickstart", "-kp", &s.target("ks.t")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let new: u32 = stdout(&o).trim().parse().expect("bare pid on a pipe");
    assert_ne!(old, new);
    assert!(!alive(old), "the old instance is gone when kickstart returns");
    let text = stdout(&s.run(&["print", &s.target("ks.t")]));
    assert!(text.contains("\tlast terminating signal = Killed: 9\n"), "{text}");
    assert!(!text.contains("last exit code"), "{text}");
    assert!(text.contains(&format!("\tpid = {new}\n")), "{text}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(!s.home().join("got-term").exists(), "-k must not send SIGTERM first");
    // The older reading (exit 0, the running pid) stays available as a knob.
    if sim_only("LAUNCHD_SIM_KICKSTART_RUNNING") {
        return;
    }
    s.env.push(("LAUNCHD_SIM_KICKSTART_RUNNING".into(), "0".into()));
    let o = s.run(&["kickstart", "-p", &s.target("ks.t")]);
    assert_eq!((code(&o), stdout(&o)), (0, format!("{new}\n")));
}

#[test]
fn kill_signals_the_instance_and_keepalive_respawns_it_after_the_throttle() {
    let s = Sim::new();
    let target = s.target("kill.t");
    let missing = format!("Could not find service \"kill.t\" in domain for user gui: {}\n", s.uid);
    // Not loaded (no daemon yet): 113.
    let o = s.run(&["kill", "SIGTERM", &target]);
    assert_eq!((code(&o), stderr(&o)), (113, missing.clone()));
    let o = s.run(&["kill", "SIGNOPE", &target]);
    assert_eq!((code(&o), stderr(&o).as_str()), (64, "Invalid signal.\n"));
    let p = s.plist(
        "kill.t",
        TERM_NOTED,
        "<key>KeepAlive</key><true/>\n<key>ThrottleInterval</key><integer>2</integer>\n",
    );
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    // Not loaded, with the daemon running for another label: 113 too.
    let o = s.run(&["kill", "TERM", &s.target("other.t")]);
    assert_eq!(code(&o), 113);
    std::thread::sleep(Duration::from_millis(150)); // the trap is set
    let old: u32 = s.field("kill.t", "pid").unwrap().parse().unwrap();

    // The graceful restart: kill SIGTERM, wait for the pid to go, then kickstart.
    let o = s.run(&["kill", "SIGTERM", &target]);
    assert_eq!((code(&o), stdout(&o).as_str(), stderr(&o).as_str()), (0, "", ""));
    s.wait_for("launchd to see the exit", || {
        s.field("kill.t", "state").as_deref() == Some("spawn scheduled")
    });
    assert!(!alive(old));
    assert!(s.home().join("got-term").exists(), "the job saw SIGTERM and shut down itself");
    let text = stdout(&s.run(&["print", &target]));
    assert!(text.contains("\tlast exit code = 0\n"), "{text}");
    assert!(text.contains("\tstate = spawn scheduled\n"), "{text}");
    // Nothing to signal while the throttle holds the respawn.
    let o = s.run(&["kill", "TERM", &target]);
    assert_eq!((code(&o), stderr(&o).as_str()), (3, "No process to signal.\n"));
    // kickstart starts it at once instead of after the throttle.
    let t0 = Instant::now();
    assert_eq!(code(&s.run(&["kickstart", &target])), 0);
    let new: u32 = s.field("kill.t", "pid").unwrap().parse().unwrap();
    assert_ne!(old, new);
    assert!(t0.elapsed() < Duration::from_secs(1));

    // A signal number works too; KeepAlive respawns only after ThrottleInterval (2 s).
    let t1 = Instant::now();
    assert_eq!(code(&s.run(&["kill", "9", &target])), 0);
    s.wait_for("the SIGKILL death", || {
        s.field("kill.t", "last terminating signal").as_deref() == Some("Killed: 9")
    });
    s.wait_for("the respawn", || {
        s.field("kill.t", "runs").as_deref() == Some("3")
            && s.field("kill.t", "state").as_deref() == Some("running")
    });
    assert!(
        t1.elapsed() >= Duration::from_millis(1500),
        "respawned after the throttle, not at once: {:?}",
        t1.elapsed()
    );
}

#[test]
fn plist_form_bootout_finds_the_label_and_answers_113_once_it_is_going() {
    let mut s = Sim::new();
    s.env.push(("LAUNCHD_SIM_DRAIN_MS".into(), "300".into()));
    let p = s.plist("pf.t", LOOP, "");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    // Loaded in gui/<uid> only: the user domain does not have it.
    assert_eq!(code(&s.run(&["bootout", &s.user(), p.to_str().unwrap()])), 113);
    assert_eq!(code(&s.run(&["bootout", &s.gui(), p.to_str().unwrap()])), 0);
    // Already booting out: not loaded as far as bootout is concerned.
    assert_eq!(code(&s.run(&["bootout", &s.gui(), p.to_str().unwrap()])), 113);
    s.wait_for("drain", || code(&s.run(&["print", &s.target("pf.t")])) == 113);
}

#[test]
fn bootout_can_answer_36_while_the_job_keeps_draining() {
    if sim_only("LAUNCHD_SIM_BOOTOUT_IN_PROGRESS") {
        return;
    }
    let mut s = Sim::new();
    s.env.push(("LAUNCHD_SIM_DRAIN_MS".into(), "300".into()));
    s.env.push(("LAUNCHD_SIM_BOOTOUT_IN_PROGRESS".into(), "2".into()));
    let slow = "trap 'sleep 0.5; exit 0' TERM; while :; do sleep 0.05; done";
    let p = s.plist("busy.t", slow, "<key>KeepAlive</key><true/>\n");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    std::thread::sleep(Duration::from_millis(100));
    let target = s.target("busy.t");
    let o = s.run(&["bootout", &target]);
    assert_eq!(
        (code(&o), stderr(&o).as_str()),
        (36, "Boot-out failed: 36: Operation now in progress\n")
    );
    // The bootout goes on regardless: SIGTERM was sent, the label drains.
    assert_eq!(s.field("busy.t", "state").as_deref(), Some("SIGTERMed"));
    // Re-issued (as Homebrew does while it gets 36): 36 again, then the usual "not loaded".
    assert_eq!(code(&s.run(&["bootout", &target])), 36);
    assert_eq!(code(&s.run(&["bootout", &target])), 3);
    s.wait_for("the label to go", || code(&s.run(&["print", &target])) == 113);
    // The count is used up: the next load and bootout behave normally.
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    assert_eq!(code(&s.run(&["bootout", &target])), 0);
}

#[test]
fn bootout_escalates_to_sigkill_after_the_exit_timeout() {
    let mut s = Sim::new();
    // Ignores SIGTERM, so only the SIGKILL after the exit timeout ends it.
    let stubborn = "trap '' TERM; while :; do sleep 0.05; done";
    let default = s.plist("to5.t", stubborn, "");
    let key = s.plist("to1.t", stubborn, "<key>ExitTimeOut</key><integer>1</integer>\n");
    for p in [&default, &key] {
        assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    }
    // The knob is the system default at load time; a plist's ExitTimeOut still wins.
    s.env.push(("LAUNCHD_SIM_EXIT_TIMEOUT".into(), "2".into()));
    let knob = s.plist("to2.t", stubborn, "");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), knob.to_str().unwrap()])), 0);
    let mut jobs = vec![];
    // A real launchd ignores the knob: its system default (5 s) applies.
    let knob_secs = if real() { 5 } else { 2 };
    for (label, secs) in [("to1.t", 1u64), ("to2.t", knob_secs), ("to5.t", 5)] {
        assert_eq!(s.field(label, "exit timeout"), Some(secs.to_string()), "{label}");
        let pid: u32 = s.field(label, "pid").unwrap().parse().unwrap();
        jobs.push((label, secs, pid));
    }
    std::thread::sleep(Duration::from_millis(100)); // the traps are set
    let t0 = Instant::now();
    for (label, _, _) in &jobs {
        assert_eq!(code(&s.run(&["bootout", &s.target(label)])), 0);
    }
    assert!(t0.elapsed() < Duration::from_millis(900), "bootout waited");
    for (label, secs, pid) in jobs {
        s.wait_for(label, || !alive(pid));
        let took = t0.elapsed();
        assert!(
            took >= Duration::from_secs(secs) && took < Duration::from_secs(secs + 3),
            "{label}: SIGKILL after {secs} s, not {took:?}"
        );
    }
}

#[test]
fn launchd_may_add_keys_to_the_printed_environment() {
    let mut s = Sim::new();
    let p = s.plist(
        "xenv.t",
        ENV_LOOP,
        "<key>EnvironmentVariables</key><dict><key>OURS</key><string>1</string></dict>\n",
    );
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    let block = |s: &Sim| -> Vec<String> {
        let text = stdout(&s.run(&["print", &s.target("xenv.t")]));
        let start = text.find("\tenvironment = {\n").expect("an environment block");
        text[start..].lines().skip(1).take_while(|l| *l != "\t}").map(str::to_owned).collect()
    };
    // launchd's own OSLogRateLimit (first) and XPC_SERVICE_NAME (last) are always there.
    assert_eq!(
        block(&s),
        ["\t\tOSLogRateLimit => 64", "\t\tOURS => 1", "\t\tXPC_SERVICE_NAME => xenv.t"]
    );
    if sim_only("LAUNCHD_SIM_PRINT_EXTRA_ENV") {
        return;
    }
    s.env.push(("LAUNCHD_SIM_PRINT_EXTRA_ENV".into(), "MallocSpaceEfficient=1,OURS=theirs".into()));
    assert_eq!(
        block(&s),
        [
            "\t\tOSLogRateLimit => 64",
            "\t\tMallocSpaceEfficient => 1",
            "\t\tOURS => 1",
            "\t\tXPC_SERVICE_NAME => xenv.t"
        ],
        "added keys are printed; the definition's own value wins"
    );
    // Printed only: the process was not given them.
    let pid: u32 = s.field("xenv.t", "pid").unwrap().parse().unwrap();
    let env = environ(&s.home(), pid);
    assert!(env.contains(&"OURS=1".to_string()), "{env:?}");
    assert!(!env.iter().any(|kv| kv.starts_with("MallocSpaceEfficient=")), "{env:?}");
}

/// A job without a SIGTERM handler: the signal ends it at once (Node's default).
const NO_HANDLER: &str = "exec sleep 60";

#[test]
fn launchd_handles_an_exit_only_after_the_kernel_reports_it() {
    if sim_only("LAUNCHD_SIM_EXIT_NOTICE_MS: the real lag is too short to observe") {
        return;
    }
    let mut s = Sim::new();
    s.env.push(("LAUNCHD_SIM_EXIT_NOTICE_MS".into(), "1500".into()));
    let target = s.target("late.t");
    // Young (the default ThrottleInterval, 10 s): launchd will schedule the respawn for later.
    let p = s.plist("late.t", NO_HANDLER, "<key>KeepAlive</key><true/>\n");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    s.wait_for("running", || s.field("late.t", "state").as_deref() == Some("running"));
    let old: u32 = s.field("late.t", "pid").unwrap().parse().unwrap();
    assert_eq!(code(&s.run(&["kill", "SIGTERM", &target])), 0);
    s.wait_for("the kernel to see the exit", || !alive(old));
    // Gone from the kernel, yet launchd still shows it running with the old pid...
    let text = stdout(&s.run(&["print", &target]));
    assert!(text.contains("\tstate = running\n"), "{text}");
    assert!(text.contains(&format!("\tpid = {old}\n")), "{text}");
    assert!(text.contains("\tlast exit code = (never exited)\n"), "{text}");
    // ...so a kickstart lands on a job it counts as running: 37, nothing started.
    let o = s.run(&["kickstart", &target]);
    assert_eq!((code(&o), stderr(&o).as_str()), (37, ""));
    // Then launchd sees the exit of a job younger than its minimum runtime.
    s.wait_for("launchd to process the exit", || {
        s.field("late.t", "state").as_deref() == Some("spawn scheduled")
    });
    let text = stdout(&s.run(&["print", &target]));
    assert!(!text.contains("\tpid = "), "{text}");
    assert!(text.contains("\tlast terminating signal = Terminated: 15\n"), "{text}");
    assert!(text.contains("\tsuccessive crashes = 1\n"), "{text}");
    // Now kickstart starts it at once instead of after the throttle.
    let o = s.run(&["kickstart", "-p", &target]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let new: u32 = stdout(&o).trim().parse().unwrap();
    assert_ne!(new, old);
    assert!(alive(new));
    s.wait_for("running", || s.field("late.t", "state").as_deref() == Some("running"));
    assert_eq!(s.field("late.t", "pid"), Some(new.to_string()));
}

#[test]
fn the_throttle_scale_shortens_the_wait_but_not_the_interval_print_shows() {
    if sim_only("LAUNCHD_SIM_THROTTLE_SCALE") {
        return;
    }
    let mut s = Sim::new();
    s.env.push(("LAUNCHD_SIM_THROTTLE_SCALE".into(), "0.1".into()));
    let target = s.target("scaled.t");
    // Young (the default ThrottleInterval, 10 s): the respawn waits 10 s × 0.1.
    let p = s.plist("scaled.t", NO_HANDLER, "<key>KeepAlive</key><true/>\n");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    let old: u32 = s.field("scaled.t", "pid").unwrap().parse().unwrap();
    let t0 = Instant::now();
    assert_eq!(code(&s.run(&["kill", "TERM", &target])), 0);
    s.wait_for("spawn scheduled", || {
        s.field("scaled.t", "state").as_deref() == Some("spawn scheduled")
    });
    let text = stdout(&s.run(&["print", &target]));
    assert!(text.contains("\tminimum runtime = 10\n"), "{text}");
    s.wait_for("the respawn", || s.field("scaled.t", "pid").is_some_and(|p| p != old.to_string()));
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(500) && waited < Duration::from_secs(5),
        "about 1 s, not 10: {waited:?}"
    );
    // A later call that sets it changes it for the loaded job: 0 respawns at once.
    s.env.retain(|(k, _)| k != "LAUNCHD_SIM_THROTTLE_SCALE");
    s.env.push(("LAUNCHD_SIM_THROTTLE_SCALE".into(), "0".into()));
    let young: u32 = s.field("scaled.t", "pid").unwrap().parse().unwrap();
    assert_eq!(code(&s.run(&["kill", "TERM", &target])), 0);
    s.wait_for("an immediate respawn", || {
        s.field("scaled.t", "pid").is_some_and(|p| p != young.to_string())
    });
    assert_eq!(code(&s.run(&["bootout", &target])), 0);
}

#[test]
fn a_new_instance_is_in_xpcproxy_with_its_pid_before_running() {
    if sim_only("LAUNCHD_SIM_SPAWNING_MS") {
        return;
    }
    let mut s = Sim::new();
    s.env.push(("LAUNCHD_SIM_SPAWNING_MS".into(), "1000".into()));
    let target = s.target("xpc.t");
    let p = s.plist("xpc.t", LOOP, "<key>KeepAlive</key><true/>\n");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    // The trampoline has the pid the program will keep once it has exec'd over it.
    let text = stdout(&s.run(&["print", &target]));
    assert!(text.contains("\tstate = xpcproxy\n"), "{text}");
    let pid: u32 = s.field("xpc.t", "pid").unwrap().parse().unwrap();
    assert!(alive(pid));
    // launchd counts it as active: kickstart without -k starts nothing.
    assert_eq!(code(&s.run(&["kickstart", &target])), 37);
    s.wait_for("running", || s.field("xpc.t", "state").as_deref() == Some("running"));
    assert_eq!(s.field("xpc.t", "pid"), Some(pid.to_string()));
    // The knob 0 turns the transient state off: running at once.
    s.env.push(("LAUNCHD_SIM_SPAWNING_MS".into(), "0".into()));
    let q = s.plist("xpc0.t", LOOP, "");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), q.to_str().unwrap()])), 0);
    assert_eq!(s.field("xpc0.t", "state").as_deref(), Some("running"));
}

#[test]
fn the_exit_notice_delay_is_on_by_default_and_0_turns_it_off() {
    if sim_only("LAUNCHD_SIM_EXIT_NOTICE_MS") {
        return;
    }
    for (knob, at_least) in [(None, Duration::from_millis(150)), (Some("0"), Duration::ZERO)] {
        let mut s = Sim::new();
        if let Some(ms) = knob {
            s.env.push(("LAUNCHD_SIM_EXIT_NOTICE_MS".into(), ms.into()));
        }
        let target = s.target("dflt.t");
        let p = s.plist("dflt.t", NO_HANDLER, "<key>KeepAlive</key><true/>\n");
        assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
        let old: u32 = s.field("dflt.t", "pid").unwrap().parse().unwrap();
        let t0 = Instant::now();
        assert_eq!(code(&s.run(&["kill", "TERM", &target])), 0);
        s.wait_for("spawn scheduled", || {
            s.field("dflt.t", "state").as_deref() == Some("spawn scheduled")
        });
        // The exit happened after the signal was sent, and launchd handled it that much later.
        assert!(t0.elapsed() >= at_least, "{knob:?}: {:?}", t0.elapsed());
        assert!(!alive(old));
    }
}

#[test]
fn login_loads_every_aqua_agent_into_gui_whatever_runs_in_user() {
    if sim_only("the login verb") {
        return;
    }
    let s = Sim::new();
    let user_target = |label: &str| format!("{}/{label}", s.user());
    s.plist("aqua.t", LOOP, "");
    let both = s.plist("both.t", LOOP, BOTH_SESSIONS);
    s.plist("bg.t", LOOP, "<key>LimitLoadToSessionType</key><string>Background</string>\n");
    s.plist("dis.t", LOOP, "");
    s.plist("udis.t", LOOP, BOTH_SESSIONS);
    // Installed over SSH: loaded in user/<uid>, where it keeps running after the login.
    assert_eq!(code(&s.run(&["bootstrap", &s.user(), both.to_str().unwrap()])), 0);
    let o = s.run(&["print", &user_target("both.t")]);
    let user_pid = String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("\tpid = ").map(str::to_owned))
        .unwrap();
    // Disabled overrides are per user, not per domain: one disabled through user/<uid> (over
    // SSH) is not loaded at the login either.
    assert_eq!(code(&s.run(&["disable", &s.target("dis.t")])), 0);
    assert_eq!(code(&s.run(&["disable", &user_target("udis.t")])), 0);
    let o = s.run(&["login", &s.gui()]);
    assert_eq!((code(&o), stdout(&o).as_str(), stderr(&o).as_str()), (0, "", ""));
    for label in ["aqua.t", "both.t"] {
        assert!(s.field(label, "pid").is_some(), "{label} runs in gui");
    }
    for label in ["bg.t", "dis.t", "udis.t"] {
        assert_eq!(code(&s.run(&["print", &s.target(label)])), 113, "{label}");
    }
    // Two copies now: the user/<uid> one is untouched.
    let gui_pid = s.field("both.t", "pid").unwrap();
    assert_ne!(gui_pid, user_pid);
    let text = stdout(&s.run(&["print", &user_target("both.t")]));
    assert!(text.contains(&format!("\tpid = {user_pid}\n")), "{text}");
    assert!(alive(user_pid.parse().unwrap()));
    // A second login loads nothing twice.
    assert_eq!(code(&s.run(&["login", &s.gui()])), 0);
    assert_eq!(s.field("both.t", "pid"), Some(gui_pid));
    // Both domains print the one store of the user's overrides.
    for domain in [s.user(), s.gui()] {
        let o = s.run(&["print-disabled", &domain]);
        assert_eq!(
            stdout(&o),
            "disabled services = {\n\t\"dis.t\" => disabled\n\t\"udis.t\" => disabled\n}\n",
            "{domain}"
        );
    }
    assert_eq!(code(&s.run(&["login", &s.user()])), 64);
}

#[test]
fn print_has_the_shape_of_a_real_capture() {
    let s = Sim::new();
    let p = s.plist(
        "shape.t",
        LOOP,
        "<key>KeepAlive</key><true/>\n<key>WorkingDirectory</key><string>/</string>\n\
         <key>StandardOutPath</key><string>/dev/null</string>\n\
         <key>EnvironmentVariables</key><dict><key>PORT</key><string>11002</string></dict>\n",
    );
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    s.wait_for("running", || s.field("shape.t", "state").as_deref() == Some("running"));
    let pid = s.field("shape.t", "pid").unwrap();
    let text = stdout(&s.run(&["print", &s.target("shape.t")]));
    // The coalition IDs depend on load order; everything else is fixed.
    let ids: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("\t\tID = ")).collect();
    assert_eq!(ids.len(), 2, "{text}");
    let (rid, jid) = (ids[0], ids[1]);
    assert_eq!(jid.parse::<u32>().unwrap(), rid.parse::<u32>().unwrap() + 1);
    let expected = format!(
        "{target} = {{\n\tactive count = 1\n\tpath = {path}\n\ttype = LaunchAgent\n\tstate = running\n\n\
         \tprogram = /bin/sh\n\targuments = {{\n\t\t/bin/sh\n\t\t-c\n\t\t{LOOP}\n\t}}\n\n\
         \tworking directory = /\n\n\
         \tstdout path = /dev/null\n\
         \tinherited environment = {{\n\t\tSSH_AUTH_SOCK => /private/tmp/launchd-sim/Listeners\n\t}}\n\n\
         \tdefault environment = {{\n\t\tPATH => /usr/bin:/bin:/usr/sbin:/sbin\n\t}}\n\n\
         \tenvironment = {{\n\t\tOSLogRateLimit => 64\n\t\tPORT => 11002\n\t\tXPC_SERVICE_NAME => shape.t\n\t}}\n\n\
         \tdomain = {gui} [100057]\n\tasid = 100057\n\tminimum runtime = 10\n\texit timeout = 5\n\truns = 1\n\
         \tpid = {pid}\n\timmediate reason = speculative\n\tforks = 0\n\texecs = 1\n\tinitialized = 1\n\
         \ttrampolined = 1\n\tstarted suspended = 0\n\tproxy started suspended = 0\n\
         \tlast exit code = (never exited)\n\n\
         \tresource coalition = {{\n\t\tID = {rid}\n\t\ttype = resource\n\t\tstate = active\n\t\tactive count = 1\n\t\tname = shape.t\n\t}}\n\n\
         \tjetsam coalition = {{\n\t\tID = {jid}\n\t\ttype = jetsam\n\t\tstate = active\n\t\tactive count = 1\n\t\tname = shape.t\n\t}}\n\n\
         \tspawn type = daemon (3)\n\tjetsam priority = 40\n\
         \tjetsam memory limit (active) = (unlimited)\n\tjetsam memory limit (inactive) = (unlimited)\n\
         \tjetsamproperties category = daemon\n\tjetsam thread limit = 32\n\tcpumon = default\n\
         \tjob state = running\n\n\
         \tproperties = keepalive | runatload | inferred program\n}}\n",
        target = s.target("shape.t"),
        path = p.display(),
        gui = s.gui(),
    );
    assert_eq!(text, expected);
}

#[test]
fn print_shows_job_state_empty_properties_event_triggers_and_the_user_domain_line() {
    let s = Sim::new();
    // `Program` set and nothing else: never run, no property at all.
    let dir = s.home().join("Library/LaunchAgents");
    std::fs::create_dir_all(&dir).unwrap();
    let bare = dir.join("bare.t.plist");
    std::fs::write(
        &bare,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict>\
         <key>Label</key><string>bare.t</string><key>Program</key><string>/usr/bin/true</string>\
         <key>LimitLoadToSessionType</key><array><string>Aqua</string><string>Background</string></array>\
         <key>StartCalendarInterval</key><dict><key>Hour</key><integer>2</integer>\
         <key>Minute</key><integer>0</integer></dict></dict></plist>\n",
    )
    .unwrap();
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), bare.to_str().unwrap()])), 0);
    let text = stdout(&s.run(&["print", &s.target("bare.t")]));
    assert!(text.contains("\n\tproperties = \n}\n"), "{text:?}");
    assert!(text.contains("\tjob state = uninitialized\n"), "{text}");
    assert!(text.contains("\truns = 0\n"), "{text}");
    assert!(!text.contains("coalition"), "not before a first run: {text}");
    assert!(
        text.contains(
            "\tevent triggers = {\n\t\tbare.t.268435470 => {\n\t\t\tkeepalive = 0\n\t\t\tservice = bare.t\n\
             \t\t\tstream = com.apple.launchd.calendarinterval\n\t\t\tmonitor = com.apple.UserEventAgent-Aqua\n\
             \t\t\tdescriptor = {\n\t\t\t\t\"Hour\" => 2\n\t\t\t\t\"Minute\" => 0\n\t\t\t}\n\t\t}\n\t}\n\n"
        ),
        "{text}"
    );
    // user/<uid>: no audit session in brackets, no inherited SSH_AUTH_SOCK.
    assert_eq!(code(&s.run(&["bootstrap", &s.user(), bare.to_str().unwrap()])), 0);
    let text = stdout(&s.run(&["print", &format!("{}/bare.t", s.user())]));
    assert!(text.contains(&format!("\tdomain = {}\n\tasid = ", s.user())), "{text}");
    assert!(!text.contains("inherited environment"), "{text}");
    // A job that exited: `exited`; one whose program could not start: `spawn failed`, 78.
    let quick = s.plist("quick.t", "exit 0", "");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), quick.to_str().unwrap()])), 0);
    s.wait_for("the exit", || s.field("quick.t", "job state").as_deref() == Some("exited"));
    assert_eq!(s.field("quick.t", "last exit code").as_deref(), Some("0"));
    assert_eq!(s.field("quick.t", "state").as_deref(), Some("not running"));
    let bad = s.plist(
        "bad.t",
        LOOP,
        "<key>KeepAlive</key><true/>\n<key>WorkingDirectory</key><string>/nonexistent</string>\n",
    );
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), bad.to_str().unwrap()])), 0);
    let text = stdout(&s.run(&["print", &s.target("bad.t")]));
    assert!(text.contains("\tstate = spawn scheduled\n"), "{text}");
    assert!(text.contains("\tlast exit code = 78: EX_CONFIG\n"), "{text}");
    assert!(text.contains("\tjob state = spawn failed\n"), "{text}");
}

#[test]
fn errors_have_their_real_text() {
    let mut s = Sim::new();
    let p = s.plist("err.t", LOOP, "");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    // 5 says "try as root" only to a caller that is not root.
    let pretend: &[&str] = if real() { &[] } else { &["501", "0"] };
    let o = s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()]);
    assert_eq!((code(&o), stderr(&o)), (5, s.bootstrap5()), "the real euid");
    for &euid in pretend {
        s.env.push(("LAUNCHD_SIM_EUID".into(), euid.into()));
        let o = s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()]);
        assert_eq!((code(&o), stderr(&o)), (5, s.bootstrap5()), "euid {euid}");
    }
    if !real() {
        assert!(s.bootstrap5().ends_with("error\n"));
        s.env.pop();
        s.env.pop();
    }
    // bootout --wait is not accepted (macOS 15.7): 64, the target complaint, then the usage.
    let o = s.run(&["bootout", "--wait", &s.target("err.t")]);
    assert_eq!(
        (code(&o), stderr(&o).as_str()),
        (
            64,
            "Unrecognized target specifier.\n\
             Usage: launchctl bootout <domain-target> [service-path1, service-path2, ...] | <service-target>\n\
             <service-target> takes a form of <domain-target>/<service-id>.\n\
             Please refer to `man launchctl` for explanation of the <domain-target> specifiers.\n"
        )
    );
    // Another user's domain (no such login): 112, "Bad request." then the domain line.
    let other = "gui/99999";
    for args in
        [vec!["print", other], vec!["print", "gui/99999/err.t"], vec!["print-disabled", other]]
    {
        let o = s.run(&args);
        assert_eq!(
            (code(&o), stderr(&o).as_str()),
            (112, "Bad request.\nCould not find domain for user gui: 99999\n"),
            "{args:?}"
        );
    }
    let o = s.run(&["print-disabled", "user/99999"]);
    assert_eq!(
        (code(&o), stderr(&o).as_str()),
        (112, "Bad request.\nCould not find domain for user uid: 99999\n")
    );
}

#[test]
fn a_missing_gui_domain_answers_112_or_125_and_print_disabled_probes_it_cheaply() {
    if sim_only("LAUNCHD_SIM_NO_GUI") {
        return;
    }
    let mut s = Sim::new();
    let p = s.plist("dom.t", LOOP, BOTH_SESSIONS);
    s.env.push(("LAUNCHD_SIM_NO_GUI".into(), "112".into()));
    let missing = format!("Bad request.\nCould not find domain for user gui: {}\n", s.uid);
    for args in [vec!["print", &s.gui()], vec!["print-disabled", &s.gui()]] {
        let o = s.run(&args);
        assert_eq!((code(&o), stderr(&o)), (112, missing.clone()), "{args:?}");
    }
    let o = s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()]);
    assert_eq!(
        (code(&o), stderr(&o).as_str()),
        (112, "Bootstrap failed: 112: Could not find specified domain\n")
    );
    // The user domain is there all the same.
    assert_eq!(code(&s.run(&["print-disabled", &s.user()])), 0);
    s.env.push(("LAUNCHD_SIM_NO_GUI".into(), "1".into()));
    let o = s.run(&["print-disabled", &s.gui()]);
    assert_eq!(
        (code(&o), stderr(&o).as_str()),
        (125, "Could not print domain: 125: Domain does not support specified action\n")
    );
}

#[test]
fn print_disabled_in_the_styles_of_macos_12_13_and_26() {
    if sim_only("LAUNCHD_SIM_PRINT_DISABLED_STYLE; the real domain has Apple's overrides") {
        return;
    }
    let mut s = Sim::new();
    assert_eq!(code(&s.run(&["disable", &s.target("off.t")])), 0);
    assert_eq!(code(&s.run(&["enable", &s.target("on.t")])), 0);
    let o = s.run(&["print-disabled", &s.gui()]);
    assert_eq!(
        stdout(&o),
        "disabled services = {\n\t\"off.t\" => disabled\n\t\"on.t\" => enabled\n}\n"
    );
    s.env.push(("LAUNCHD_SIM_PRINT_DISABLED_STYLE".into(), "bool".into()));
    let o = s.run(&["print-disabled", &s.gui()]);
    assert_eq!(stdout(&o), "disabled services = {\n\t\"off.t\" => true\n\t\"on.t\" => false\n}\n");
    s.env.push(("LAUNCHD_SIM_PRINT_DISABLED_STYLE".into(), "macos26".into()));
    let o = s.run(&["print-disabled", &s.gui()]);
    assert_eq!(
        stdout(&o),
        "\n\tdisabled services = {\n\t\t\"off.t\" => disabled\n\t\t\"on.t\" => enabled\n\t}\n"
    );
    // user/<uid> prints the same per-user store.
    let o = s.run(&["print-disabled", &s.user()]);
    assert_eq!(
        stdout(&o),
        "\n\tdisabled services = {\n\t\t\"off.t\" => disabled\n\t\t\"on.t\" => enabled\n\t}\n"
    );
    // A user with no override still gets the block.
    s.env.push(("LAUNCHD_SIM_STATE".into(), s.dir.path().join("empty").display().to_string()));
    let o = s.run(&["print-disabled", &s.user()]);
    assert_eq!(stdout(&o), "\n\tdisabled services = {\n\t}\n");
}

#[test]
fn print_of_a_domain_and_list_describe_every_job_in_one_call() {
    let mut s = Sim::new();
    // With nothing loaded (no daemon): the header and empty blocks. A real domain has
    // Apple's jobs, so against launchd only this test's rows are checked, wherever they are.
    if !real() {
        let o = s.run(&["print", &s.gui()]);
        assert_eq!(code(&o), 0);
        assert!(
            stdout(&o).contains("\n\tservices = {\n\t}\n\n\tdisabled services = {\n\t}\n}\n"),
            "{}",
            stdout(&o)
        );
        assert_eq!(stdout(&s.run(&["list"])), "PID\tStatus\tLabel\n");
    }
    let up = s.plist("a.up", LOOP, "");
    let three = s.plist("b.three", "exit 3", "");
    let term = s.plist("c.term", "kill -TERM $$", "");
    let bg = s.plist("d.bg", LOOP, BOTH_SESSIONS);
    for p in [&up, &three, &term] {
        assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    }
    assert_eq!(code(&s.run(&["bootstrap", &s.user(), bg.to_str().unwrap()])), 0);
    assert_eq!(code(&s.run(&["disable", &s.target("z.off")])), 0);
    s.wait_for("both exits", || {
        s.field("b.three", "last exit code").as_deref() == Some("3")
            && s.field("c.term", "last terminating signal").is_some()
    });
    let pid = s.field("a.up", "pid").unwrap();
    let text = stdout(&s.run(&["print", &s.gui()]));
    assert!(text.starts_with(&format!("{} = {{\n\ttype = login\n\thandle = ", s.gui())), "{text}");
    if !real() {
        assert!(text.contains("\n\tactive count = 1\n\tservice count = 3\n"), "{text}");
    }
    // pid (0 when not running) right-aligned in 8, the status in 6 (`-` before an exit, minus
    // the signal after a signal death), then the label.
    for row in [
        format!("\n\t\t{pid:>8}      -     a.up\n"),
        "\n\t\t       0      3     b.three\n".to_owned(),
        "\n\t\t       0    -15     c.term\n".to_owned(),
        "\n\t\t\"z.off\" => disabled\n".to_owned(),
    ] {
        assert!(text.contains(&row), "{row:?} in {text}");
    }
    if !real() {
        let services = format!(
            "\n\tservices = {{\n\t\t{pid:>8}      -     a.up\n\t\t       0      3     b.three\n\
             \t\t       0    -15     c.term\n\t}}\n\n\tdisabled services = {{\n\t\t\"z.off\" => disabled\n\t}}\n}}\n"
        );
        assert!(text.ends_with(&services), "{text}");
    }
    let text = stdout(&s.run(&["print", &s.user()]));
    assert!(text.contains("\t\td.bg\n") || text.contains("     d.bg\n"), "{text}");
    assert!(!text.contains("a.up"), "{text}");
    // The legacy list: the caller's session (gui/<uid> while there is one), tab-separated.
    let list = stdout(&s.run(&["list"]));
    assert!(list.starts_with("PID\tStatus\tLabel\n"), "{list}");
    for row in [
        format!("\n{pid}\t0\ta.up\n"),
        "\n-\t3\tb.three\n".to_owned(),
        "\n-\t-15\tc.term\n".to_owned(),
    ] {
        assert!(list.contains(&row), "{row:?} in {list}");
    }
    if sim_only("LAUNCHD_SIM_NO_GUI") {
        return;
    }
    assert_eq!(
        list,
        format!("PID\tStatus\tLabel\n{pid}\t0\ta.up\n-\t3\tb.three\n-\t-15\tc.term\n")
    );
    s.env.push(("LAUNCHD_SIM_NO_GUI".into(), "1".into()));
    let o = s.run(&["list"]);
    assert!(
        stdout(&o).starts_with("PID\tStatus\tLabel\n") && stdout(&o).ends_with("\t0\td.bg\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_timing_knob_set_after_bootstrap_applies_to_the_loaded_job() {
    if sim_only("LAUNCHD_SIM_EXIT_NOTICE_MS") {
        return;
    }
    let mut s = Sim::new();
    let target = s.target("later.t");
    let p = s.plist("later.t", NO_HANDLER, "<key>KeepAlive</key><true/>\n");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    let old: u32 = s.field("later.t", "pid").unwrap().parse().unwrap();
    // Loaded with the default; the restart's own calls carry a longer delay.
    s.env.push(("LAUNCHD_SIM_EXIT_NOTICE_MS".into(), "1500".into()));
    assert_eq!(code(&s.run(&["kill", "TERM", &target])), 0);
    s.wait_for("the kernel to see the exit", || !alive(old));
    assert_eq!(s.field("later.t", "pid"), Some(old.to_string()));
    assert_eq!(code(&s.run(&["kickstart", &target])), 37);
    s.wait_for("spawn scheduled", || {
        s.field("later.t", "state").as_deref() == Some("spawn scheduled")
    });
}

/// Issue 29 item 3: every cause a user's `bootstrap` reports as a bare 5 with the label not
/// loaded: switched off in Login Items (and `enable` does not undo it), a plist directory
/// launchd refuses (`LAUNCHD_SIM_OWNERSHIP_CODE=5`), a missing log directory
/// (`LAUNCHD_SIM_LOG_DIR_CODE=5`); and the Login Items status ServiceManagement gives.
#[test]
fn each_cause_of_a_bare_5_with_the_label_not_loaded() {
    if sim_only("the Login Items switch and the refusal codes are knobs") {
        return;
    }
    let mut s = Sim::new();
    s.env.push(("LAUNCHD_SIM_EUID".into(), "501".into()));
    let p = s.plist("li.t", LOOP, "");
    let path = p.to_str().unwrap();
    assert_eq!(stdout(&s.run(&["login-item-status", path])), "enabled\n");
    assert_eq!(code(&s.run(&["login-item", "li.t", "off"])), 0);
    assert_eq!(stdout(&s.run(&["login-item-status", path])), "requires approval\n");
    assert_eq!(code(&s.run(&["enable", &s.target("li.t")])), 0);
    let o = s.run(&["bootstrap", &s.gui(), path]);
    assert_eq!(
        (code(&o), stderr(&o).as_str()),
        (
            5,
            "Bootstrap failed: 5: Input/output error\nTry re-running the command as root for richer errors.\n"
        )
    );
    assert_eq!(code(&s.run(&["print", &s.target("li.t")])), 113);
    assert_eq!(code(&s.run(&["login-item", "li.t", "on"])), 0);
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), path])), 0);
    assert_eq!(code(&s.run(&["bootout", &s.target("li.t")])), 0);
    let missing = s.home().join("nope.plist");
    assert_eq!(stdout(&s.run(&["login-item-status", missing.to_str().unwrap()])), "not found\n");
    let mut u = Sim::new();
    u.env.push(("LAUNCHD_SIM_LOGIN_ITEMS".into(), "unavailable".into()));
    assert_eq!(code(&u.run(&["login-item-status", path])), 69);
    // A log directory that does not exist.
    let logged = s.plist(
        "log.t",
        LOOP,
        "<key>StandardErrorPath</key><string>/nonexistent-dir-29/err.log</string>\n",
    );
    let mut k = Sim::new();
    k.env.push(("LAUNCHD_SIM_LOG_DIR_CODE".into(), "5".into()));
    k.env.push(("LAUNCHD_SIM_STATE".into(), s.dir.path().join("state").display().to_string()));
    assert_eq!(code(&k.run(&["bootstrap", &s.gui(), logged.to_str().unwrap()])), 5);
    assert_eq!(code(&s.run(&["print", &s.target("log.t")])), 113);
    // A directory writable by the group.
    use std::os::unix::fs::PermissionsExt;
    let dir = p.parent().unwrap().to_owned();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o775)).unwrap();
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), path])), 122);
    s.env.push(("LAUNCHD_SIM_OWNERSHIP_CODE".into(), "5".into()));
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), path])), 5);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Issue 39 item 3: newer macOS answers a bootout of a label that is not loaded with 5
/// (jdx/mise#10965, the plist form on Darwin 27): `LAUNCHD_SIM_BOOTOUT_NOT_LOADED_CODE` is that
/// code, for both forms, with or without a daemon; a loaded label is still booted out with 0.
#[test]
fn bootout_of_an_unloaded_label_can_answer_5() {
    if sim_only("LAUNCHD_SIM_BOOTOUT_NOT_LOADED_CODE") {
        return;
    }
    let mut s = Sim::new();
    s.env.push(("LAUNCHD_SIM_EUID".into(), "501".into()));
    s.env.push(("LAUNCHD_SIM_BOOTOUT_NOT_LOADED_CODE".into(), "5".into()));
    let five = "Boot-out failed: 5: Input/output error\nTry re-running the command as root for richer errors.\n";
    // No daemon runs yet.
    let o = s.run(&["bootout", &s.target("nl.t")]);
    assert_eq!((code(&o), stderr(&o).as_str()), (5, five));
    let p = s.plist("nl.t", LOOP, "");
    let path = p.to_str().unwrap();
    let o = s.run(&["bootout", &s.gui(), path]);
    assert_eq!((code(&o), stderr(&o).as_str()), (5, five));
    // With a daemon: another label loaded, this one not.
    let other = s.plist("nl.other", LOOP, "");
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), other.to_str().unwrap()])), 0);
    assert_eq!(code(&s.run(&["bootout", &s.target("nl.t")])), 5);
    assert_eq!(code(&s.run(&["bootout", &s.gui(), path])), 5);
    // A loaded label boots out as ever; once it is going, the knob's code again.
    assert_eq!(code(&s.run(&["bootout", &s.target("nl.other")])), 0);
    assert_eq!(code(&s.run(&["bootout", &s.target("nl.other")])), 5);
}

/// Issue 39 item 2: `login-item LABEL hang` is a wedged Background Task Management daemon:
/// the status query for that plist never answers (the caller must bound its wait), while the
/// label's switch stays on (it loads).
#[test]
fn a_hung_login_items_query_never_answers() {
    if sim_only("the Login Items switch is the simulator's own verb") {
        return;
    }
    let s = Sim::new();
    let p = s.plist("hang.t", LOOP, "");
    assert_eq!(code(&s.run(&["login-item", "hang.t", "hang"])), 0);
    let mut child = Command::new(launchctl())
        .args(["login-item-status", p.to_str().unwrap()])
        .env_clear()
        .env("HOME", s.home())
        .env("LAUNCHD_SIM_STATE", s.dir.path().join("state"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(child.try_wait().unwrap().is_none(), "it answered");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), p.to_str().unwrap()])), 0);
    assert_eq!(code(&s.run(&["login-item", "hang.t", "on"])), 0);
    assert_eq!(stdout(&s.run(&["login-item-status", p.to_str().unwrap()])), "enabled\n");
}

/// Issue 39 item 4: over SSH with nobody (or another user) at the console, `gui/<uid>` still
/// answers `print-disabled` and `print`, but its bootstrap answers a bare 5 (not 125;
/// psimaker/vaultsync#89); `user/<uid>` loads a plist whose session types include Background.
#[test]
fn with_the_console_not_the_callers_a_gui_bootstrap_answers_5() {
    if sim_only("LAUNCHD_SIM_CONSOLE_UID") {
        return;
    }
    let mut s = Sim::new();
    s.env.push(("LAUNCHD_SIM_EUID".into(), "501".into()));
    s.env.push(("LAUNCHD_SIM_CONSOLE_UID".into(), (s.uid + 4242).to_string()));
    let both = "<key>LimitLoadToSessionType</key><array><string>Aqua</string><string>Background</string></array>\n";
    let p = s.plist("console.t", LOOP, both);
    let path = p.to_str().unwrap();
    assert_eq!(code(&s.run(&["print-disabled", &s.gui()])), 0);
    let o = s.run(&["bootstrap", &s.gui(), path]);
    assert_eq!((code(&o), stderr(&o)), (5, s.bootstrap5()));
    assert_eq!(code(&s.run(&["print", &s.target("console.t")])), 113);
    assert_eq!(code(&s.run(&["bootstrap", &s.user(), path])), 0);
    assert_eq!(code(&s.run(&["bootout", &format!("{}/console.t", s.user())])), 0);
    // The console is the caller's: gui loads.
    s.env.push(("LAUNCHD_SIM_CONSOLE_UID".into(), s.uid.to_string()));
    assert_eq!(code(&s.run(&["bootstrap", &s.gui(), path])), 0);
}
