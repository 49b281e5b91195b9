#![cfg(target_os = "linux")]
//! The systemd door (`oyster::systemd`) against a REAL `systemd --user`
//! (common/user_manager.rs): a unit rendered for the Node Host fixture run through the real
//! launch program (`oyster host exec --stack NAME`), driven only through `Systemctl`, and what
//! the manager then says and does. One manager for the tests that run together; each test its
//! own stack, unit and port.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use oyster::systemd::{
    self, ActiveState, CallError, Cause, ManagerState, Systemctl, Timing, UnitResult, UnitShow,
    UnitSpec,
};

use crate::common::has_all;
use crate::common::user_manager::{self, UserManager};
use crate::common::{fixture_root_at, free_port, http_get, real_node, wait_until};

/// `daemon-reload` (and `enable`/`disable`, which reload too) is manager-wide: a test that
/// watches `NeedDaemonReload` holds this so no other test reloads in between.
static RELOADS: Mutex<()> = Mutex::new(());

fn reloads() -> MutexGuard<'static, ()> {
    RELOADS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The shared manager and a door to it; `None` (said) where there can be none.
fn door() -> Option<(Arc<UserManager>, Systemctl)> {
    match user_manager::shared() {
        Ok(m) => {
            let sc = Systemctl::locate(None, Some(m.runtime_dir.as_os_str()))
                .unwrap()
                .with_home(&m.home);
            Some((m, sc))
        }
        Err(why) => {
            user_manager::skip(&why);
            None
        }
    }
}

/// A Host unit of one test: the fixture copied to a root of its own, a stack, a port.
struct HostUnit {
    sc: Systemctl,
    m: Arc<UserManager>,
    stack: String,
    name: String,
    path: PathBuf,
    root: PathBuf,
    port: u16,
    env: Vec<(String, String)>,
    timing: Timing,
    _dir: tempfile::TempDir,
}

impl HostUnit {
    /// The unit for `stack`, written (not yet loaded). `root_name` may be hostile.
    fn new(m: &Arc<UserManager>, sc: &Systemctl, stack: &str, root_name: &str) -> HostUnit {
        let dir = tempfile::Builder::new().prefix("oyster-sd-").tempdir().unwrap();
        let root = fixture_root_at(&dir.path().join(root_name));
        let port = free_port();
        let label = format!("com.oysterun.host.{stack}");
        let name = systemd::unit_name(&label).unwrap();
        let path = systemd::unit_path(&m.home, None, &label).unwrap();
        let env = host_env(&m.home, stack, &root, port);
        std::fs::create_dir_all(log_path(&m.home, stack).parent().unwrap()).unwrap();
        let timing = Timing { restart: Duration::from_millis(200), ..Timing::HOST };
        let unit = HostUnit {
            sc: sc.clone(),
            m: m.clone(),
            stack: stack.to_owned(),
            name,
            path,
            root,
            port,
            env,
            timing,
            _dir: dir,
        };
        unit.write();
        unit
    }

    fn args(&self) -> Vec<String> {
        ["host", "exec", "--stack", &self.stack].map(str::to_owned).to_vec()
    }

    fn write(&self) {
        let args = self.args();
        let log = log_path(&self.m.home, &self.stack);
        let cwd = self.root.join("host-service");
        let spec = UnitSpec {
            description: "Oysterun Host (oyster test)",
            program: Path::new(crate::common::BIN),
            args: &args,
            working_directory: &cwd,
            env: &self.env,
            log_path: &log,
            timing: self.timing,
        };
        let bytes = systemd::render(&spec).unwrap();
        std::fs::create_dir_all(self.path.parent().unwrap()).unwrap();
        std::fs::write(&self.path, bytes).unwrap();
    }

    /// daemon-reload, enable, start: the Host answers `/health`. Returns its `show`.
    fn install_and_start(&self) -> UnitShow {
        {
            let _r = reloads();
            self.sc.daemon_reload().unwrap();
            self.sc.enable(&self.name).unwrap();
        }
        self.sc.start(&self.name).unwrap();
        self.wait_healthy()
    }

    fn show(&self) -> UnitShow {
        self.sc.show(&self.name).unwrap()
    }

    /// Running, and its MainPID is the process answering `/health`.
    fn wait_healthy(&self) -> UnitShow {
        let mut last = None;
        wait_until(Duration::from_secs(15), "the Host to answer", || {
            let s = self.show();
            let pid = s.main_pid;
            let answered = http_get(self.port, "/health").and_then(|(code, body)| {
                let v: serde_json::Value = serde_json::from_str(&body).ok()?;
                Some((code, v["pid"].as_u64()?))
            });
            let ok = s.is_running() && answered == Some((200, u64::from(pid.unwrap_or(0))));
            last = Some(s);
            ok
        });
        last.unwrap()
    }

    /// Polls `show` until `cond` holds.
    fn wait_show(&self, what: &str, mut cond: impl FnMut(&UnitShow) -> bool) -> UnitShow {
        let mut last = None;
        wait_until(Duration::from_secs(20), what, || {
            let s = self.show();
            let ok = cond(&s);
            last = Some(s);
            ok
        });
        last.unwrap()
    }
}

impl Drop for HostUnit {
    fn drop(&mut self) {
        let _r = reloads();
        let _ = self.sc.disable(&self.name, true);
        let _ = self.sc.reset_failed(&self.name);
        let _ = std::fs::remove_file(&self.path);
    }
}

fn log_path(home: &Path, stack: &str) -> PathBuf {
    home.join(".oysterun-stacks").join(stack).join("logs/oysterun-host.log")
}

/// What oyster generates for a stack (src/host/launchenv.rs: the eight variables, PATH from
/// the pinned node's directory and the system directories, each once) and the account
/// variables direct startup adds (`host_environment`), in name order.
fn host_env(home: &Path, stack: &str, root: &Path, port: u16) -> Vec<(String, String)> {
    let node = real_node();
    let path = crate::common::generated_path(vec![node.parent().unwrap().display().to_string()]);
    let user = nix::unistd::User::from_uid(nix::unistd::getuid()).unwrap().unwrap();
    let stack_root = home.join(".oysterun-stacks").join(stack);
    let s = |p: &Path| p.display().to_string();
    let vars: BTreeMap<&str, String> = [
        ("HOME", s(home)),
        ("USER", user.name.clone()),
        ("LOGNAME", user.name),
        ("SHELL", "/bin/sh".to_owned()),
        ("TMPDIR", "/tmp".to_owned()),
        ("OYSTERUN_NODE_BIN", s(&node)),
        ("PATH", path.join(":")),
        ("OYSTERUN_CONFIG_DIR", s(&stack_root.join("host"))),
        ("OYSTERUN_PORT", port.to_string()),
        ("OYSTERUN_REPO_ROOT", s(root)),
        ("OYSTERUN_ROUTEC_STACK_NAME", stack.to_owned()),
        ("OYSTERUN_ROUTEC_STACK_ROOT", s(&stack_root)),
        ("OYSTERUN_ROUTEC_MATRIX_STORAGE_PATH", s(&stack_root.join("matrix/homeserver.db"))),
    ]
    .into_iter()
    .collect();
    vars.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// `/proc/<pid>/environ`, as a map.
fn environ(pid: u32) -> BTreeMap<String, String> {
    let bytes = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    bytes
        .split(|b| *b == 0)
        .filter(|e| !e.is_empty())
        .filter_map(|e| {
            let e = String::from_utf8_lossy(e);
            let (k, v) = e.split_once('=')?;
            Some((k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// Every line `systemd-analyze --user verify UNIT` prints about the unit (none is the pass).
fn verify_lines(m: &UserManager, unit: &Path) -> Vec<String> {
    let out =
        m.client("/usr/bin/systemd-analyze").args(["--user", "verify"]).arg(unit).output().unwrap();
    let name = unit.file_name().unwrap().to_string_lossy().into_owned();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "verify failed: {text}");
    text.lines()
        .filter(|l| l.contains(&name) || l.contains(&unit.display().to_string()))
        .map(str::to_owned)
        .collect()
}

fn timed(what: &str, t0: Instant) {
    eprintln!("timing: {what}: {:.0} ms", t0.elapsed().as_secs_f64() * 1000.0);
}

#[test]
fn the_real_host_runs_from_its_unit_with_exactly_the_generated_environment() {
    let Some((m, sc)) = door() else { return };
    let t0 = Instant::now();
    let u = HostUnit::new(&m, &sc, "sd-env", "Oysterun 100% $HOME 'q' \"dq\" ü");
    assert_eq!(verify_lines(&m, &u.path), Vec::<String>::new());
    let s = u.install_and_start();
    timed("write, daemon-reload, enable, start, healthy", t0);
    let pid = s.main_pid.unwrap();
    assert_eq!(s.active_state, ActiveState::Active);
    assert_eq!(s.exec_main_pid, Some(pid));
    assert!(s.is_enabled() && !s.need_daemon_reload, "{s:?}");
    assert_eq!(s.fragment_path.as_deref(), Some(u.path.as_path()));
    assert!(s.drop_in_paths.is_empty());
    assert!(
        m.home.join(".config/systemd/user/default.target.wants").join(&u.name).exists(),
        "enabled into default.target"
    );
    // The live environment: every generated variable, and besides them only what the
    // manager's environment holds and the keys systemd adds itself.
    let live = environ(pid);
    let manager = sc.show_environment().unwrap();
    let check = systemd::check_environ(&live, &u.env, &manager);
    assert!(check.holds_the_generated(), "{check:?}\n{live:#?}");
    assert!(check.from_manager.contains(&"XDG_RUNTIME_DIR".to_owned()), "{check:?}");
    assert_eq!(live.get("INVOCATION_ID"), s.invocation_id.as_ref());
    assert_eq!(live.get("SYSTEMD_EXEC_PID"), Some(&pid.to_string()));
    assert_eq!(live.get("MANAGERPID"), Some(&m.pid.to_string()));
    let added: Vec<&String> =
        live.keys().filter(|k| systemd::EXEC_ADDED_KEYS.contains(&k.as_str())).collect();
    assert_eq!(added, ["INVOCATION_ID", "MANAGERPID", "SYSTEMD_EXEC_PID"]);
    // The working directory and the log, through paths with blanks, quotes, `%` and `$`.
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap();
    assert_eq!(cwd, u.root.join("host-service"));
    let log = std::fs::read_to_string(log_path(&m.home, &u.stack)).unwrap();
    has_all(&log, &[&format!("fixture host pid {pid} starting")]);
    has_all(&log, &["oyster host exec (stack sd-env"]);
    let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    has_all(&cgroup, &[&format!("/{}", u.name)]);
}

#[test]
fn restart_gives_a_new_instance_and_a_rewritten_unit_waits_for_daemon_reload() {
    let Some((m, sc)) = door() else { return };
    let mut u = HostUnit::new(&m, &sc, "sd-restart", "root");
    let first = u.install_and_start();
    let t0 = Instant::now();
    sc.restart(&u.name).unwrap();
    let second = u.wait_healthy();
    timed("restart, healthy", t0);
    assert_ne!(second.main_pid, first.main_pid);
    assert_ne!(second.invocation_id, first.invocation_id);
    assert_eq!(second.n_restarts, 0, "a manual restart is not counted");
    // A changed file is not read until daemon-reload; a restart meanwhile keeps the old one.
    let old_port = u.port;
    u.port = free_port();
    u.env = host_env(&m.home, &u.stack, &u.root, u.port);
    {
        let _r = reloads();
        u.write();
        assert!(u.show().need_daemon_reload);
        sc.restart(&u.name).unwrap();
        // The new instance as it serves, on the old port (its environment is read once it
        // answers: right after the restart it may still be on its way to exec).
        let new_port = std::mem::replace(&mut u.port, old_port);
        let kept = u.wait_healthy();
        u.port = new_port;
        let live = environ(kept.main_pid.unwrap());
        assert_eq!(live["OYSTERUN_PORT"], old_port.to_string());
        let t0 = Instant::now();
        sc.daemon_reload().unwrap();
        timed("daemon-reload", t0);
        assert!(!u.show().need_daemon_reload);
    }
    sc.restart(&u.name).unwrap();
    let third = u.wait_healthy();
    let live = environ(third.main_pid.unwrap());
    assert_eq!(live["OYSTERUN_PORT"], u.port.to_string());
}

#[test]
fn a_drop_in_overriding_the_environment_is_named_and_seen_live() {
    let Some((m, sc)) = door() else { return };
    let u = HostUnit::new(&m, &sc, "sd-dropin", "root");
    u.install_and_start();
    let dropin = u.path.with_extension("service.d").join("override.conf");
    std::fs::create_dir_all(dropin.parent().unwrap()).unwrap();
    std::fs::write(&dropin, "[Service]\nEnvironment=OYSTERUN_ROUTEC_STACK_NAME=other\n").unwrap();
    {
        let _r = reloads();
        sc.daemon_reload().unwrap();
    }
    sc.restart(&u.name).unwrap();
    let s = u.wait_healthy();
    assert_eq!(s.drop_in_paths, std::slice::from_ref(&dropin));
    let check = systemd::check_environ(
        &environ(s.main_pid.unwrap()),
        &u.env,
        &sc.show_environment().unwrap(),
    );
    assert_eq!(check.differs, ["OYSTERUN_ROUTEC_STACK_NAME"]);
    std::fs::remove_dir_all(dropin.parent().unwrap()).unwrap();
}

#[test]
fn stop_then_disable_now_leave_it_stopped_with_its_result_and_the_file_kept() {
    let Some((m, sc)) = door() else { return };
    let u = HostUnit::new(&m, &sc, "sd-stop", "root");
    let running = u.install_and_start();
    let t0 = Instant::now();
    sc.stop(&u.name).unwrap();
    timed("stop", t0);
    let s = u.show();
    assert_eq!(
        (&s.active_state, s.sub_state.as_str(), s.main_pid),
        (&ActiveState::Inactive, "dead", None)
    );
    assert_eq!(s.result, UnitResult::Success);
    let pid = running.main_pid.unwrap();
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "the Host is gone");
    assert!(s.is_enabled(), "a stop does not disable");
    sc.start(&u.name).unwrap();
    u.wait_healthy();
    let t0 = Instant::now();
    {
        let _r = reloads();
        sc.disable(&u.name, true).unwrap();
    }
    timed("disable --now", t0);
    assert_eq!(u.show().active_state, ActiveState::Inactive);
    let wants = m.home.join(".config/systemd/user/default.target.wants");
    assert!(!wants.join(&u.name).exists(), "the wants link is gone");
    // systemctl reloads after enable/disable only when it sees /run/systemd/system, which
    // this test's clients (outside the manager's namespace) do not: until a daemon-reload
    // the manager still says enabled (measured, systemd 252).
    {
        let _r = reloads();
        sc.daemon_reload().unwrap();
    }
    assert_eq!(u.show().unit_file_state.as_deref(), Some("disabled"));
    assert!(u.path.exists(), "the unit file stays");
}

#[test]
fn a_killed_host_is_started_again_by_the_manager() {
    let Some((m, sc)) = door() else { return };
    let u = HostUnit::new(&m, &sc, "sd-kill", "root");
    let before = u.install_and_start();
    let t0 = Instant::now();
    sc.kill(&u.name, nix::sys::signal::Signal::SIGTERM, true).unwrap();
    let after = u.wait_show("a new MainPID after the kill", |s| {
        s.is_running() && s.main_pid != before.main_pid
    });
    let after = if http_get(u.port, "/health").is_some() { after } else { u.wait_healthy() };
    timed("kill SIGTERM to a new healthy instance (RestartSec=200ms)", t0);
    // At least one restart by the manager (a loaded machine may see the new instance fail once
    // before it answers, which the manager restarts again: a second is not this test's subject).
    assert!(after.n_restarts >= 1, "{}", after.n_restarts);
    assert_ne!(after.invocation_id, before.invocation_id);
}

#[test]
fn a_crash_loop_fails_at_its_start_limit_until_reset_failed() {
    let Some((m, sc)) = door() else { return };
    let mut u = HostUnit::new(&m, &sc, "sd-crash", "root");
    u.timing = Timing {
        restart: Duration::from_millis(100),
        start_limit_interval: Duration::from_secs(60),
        start_limit_burst: 3,
        ..Timing::HOST
    };
    u.write();
    crate::common::TestContext::fixture_flag(&u.root, "crash-on-start", "");
    // Held through the loop: every daemon-reload starts the start-limit count again
    // (measured, systemd 252), so another test's reload would stretch it.
    let reloads_held = reloads();
    sc.daemon_reload().unwrap();
    let t0 = Instant::now();
    sc.start(&u.name).unwrap();
    let failed = u.wait_show("the start limit", UnitShow::is_failed);
    timed("crash loop to failed (burst 3, RestartSec=100ms)", t0);
    assert_eq!(failed.result, UnitResult::ExitCode);
    assert_eq!(failed.main_pid, None);
    assert_eq!((failed.exec_main_status, failed.n_restarts), (1, 3));
    // A manual start is refused while the limit holds.
    std::fs::remove_file(u.root.join("host-service/crash-on-start")).unwrap();
    let Err(CallError::Exit(e)) = sc.start(&u.name) else {
        panic!("a start past the start limit fails")
    };
    assert_eq!(e.code, 1);
    assert!(u.show().is_failed());
    drop(reloads_held);
    sc.reset_failed(&u.name).unwrap();
    assert_eq!(u.show().active_state, ActiveState::Inactive);
    sc.start(&u.name).unwrap();
    u.wait_healthy();
}

#[test]
fn the_manager_probe_says_running_or_why_there_is_none() {
    let Some((m, sc)) = door() else { return };
    eprintln!("timing: manager ready in {:.0} ms", m.started_in.as_secs_f64() * 1000.0);
    let t0 = Instant::now();
    let state = sc.manager_state().unwrap();
    timed("manager_state", t0);
    assert!(matches!(state, ManagerState::Running | ManagerState::Degraded));
    assert!(!sc.runtime_dir_defaulted);
    // Where the manager reads units from holds the directory oyster writes to (HOME has a
    // blank, so systemd quotes it).
    let search = sc.unit_search_path().unwrap();
    assert!(search.contains(&systemd::unit_dir(&m.home, None)), "{search:?}");
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    let bogus = Systemctl::locate(None, Some(gone.as_os_str())).unwrap();
    let e = bogus.manager_state().unwrap_err();
    assert_eq!(e.cause, Cause::NoRuntimeDir);
    // A runtime directory with no manager in it: the real systemctl's own words.
    let empty = Systemctl::locate(None, Some(dir.path().as_os_str())).unwrap();
    let e = empty.manager_state().unwrap_err();
    assert_eq!(e.cause, Cause::NoBus, "{e:?}");
    assert!(e.detail.starts_with("Failed to connect to bus"), "{e:?}");
    // An unknown unit is an answer.
    let s = sc.show("oyster-it-no-such.service").unwrap();
    assert!(s.is_not_found());
}

#[test]
fn hostile_arguments_values_and_paths_reach_the_process_as_given() {
    let Some((m, sc)) = door() else { return };
    let dir = tempfile::tempdir().unwrap();
    // systemd refuses a program path with a quote or a backslash; elsewhere they are fine.
    let weird = dir.path().join("a dir $HOME %n ; ü");
    let cwd = dir.path().join("cwd 'q' \"dq\" a\\b $HOME %n");
    std::fs::create_dir(&weird).unwrap();
    std::fs::create_dir(&cwd).unwrap();
    // The program, through a link in that directory: `sh -c` keeps every argument in its
    // command line, and runs until stopped.
    let program = weird.join("s$h%");
    std::os::unix::fs::symlink("/bin/sh", &program).unwrap();
    let args: Vec<String> = [
        "-c",
        "while :; do sleep 1; done",
        "",
        ";",
        "a\\b",
        "q\"q",
        "$HOME",
        "${HOME}",
        "$$",
        "%n %%",
        "it's",
        "ü x",
        "--now",
        "  lead",
    ]
    .map(str::to_owned)
    .to_vec();
    let env: Vec<(String, String)> =
        [("A", "$HOME x"), ("B", "%n"), ("C", "q\"\\z"), ("D", ""), ("E", "it's ; x=y")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .to_vec();
    let log = cwd.join("log 'file' \"x\"");
    let spec = UnitSpec {
        description: "hostile 100% $HOME",
        program: &program,
        args: &args,
        working_directory: &cwd,
        env: &env,
        log_path: &log,
        timing: Timing::HOST,
    };
    let name = "oyster-it-hostile.service";
    let path = systemd::unit_dir(&m.home, None).join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, systemd::render(&spec).unwrap()).unwrap();
    assert_eq!(verify_lines(&m, &path), Vec::<String>::new());
    {
        let _r = reloads();
        sc.daemon_reload().unwrap();
    }
    sc.start(name).unwrap();
    let s = sc.show(name).unwrap();
    let pid = s.main_pid.unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let argv: Vec<String> =
        cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    let mut want = vec![program.display().to_string()];
    want.extend(args.iter().cloned());
    want.push(String::new()); // the NUL that ends the last argument
    assert_eq!(argv, want);
    let live = environ(pid);
    for (k, v) in &env {
        assert_eq!(live.get(k), Some(v), "{k}");
    }
    assert_eq!(std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(), cwd);
    assert!(log.exists(), "the log was opened for appending");
    assert_eq!(s.raw.get("Description").map(String::as_str), None, "only the properties asked for");
    sc.stop(name).unwrap();
    let _ = sc.reset_failed(name);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_log_directory_that_is_not_there_fails_the_start_before_the_program_runs() {
    let Some((m, sc)) = door() else { return };
    let dir = tempfile::tempdir().unwrap();
    let args = ["-c".to_owned(), "sleep 100".to_owned()];
    let log = dir.path().join("no-such-dir/host.log");
    let spec = UnitSpec {
        description: "no log directory",
        program: Path::new("/bin/sh"),
        args: &args,
        working_directory: dir.path(),
        env: &[],
        log_path: &log,
        timing: Timing::HOST,
    };
    let name = "oyster-it-nolog.service";
    let path = systemd::unit_dir(&m.home, None).join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, systemd::render(&spec).unwrap()).unwrap();
    {
        let _r = reloads();
        sc.daemon_reload().unwrap();
    }
    // systemd opens `append:` files itself, before the exec, and makes no directory:
    // `Type=exec` makes that a failed start (209 = EXIT_STDOUT).
    let Err(CallError::Exit(e)) = sc.start(name) else { panic!("the start fails") };
    assert_eq!(e.code, 1);
    let s = sc.show(name).unwrap();
    assert_eq!((s.result, s.exec_main_status, s.main_pid), (UnitResult::ExitCode, 209, None));
    assert!(!log.exists());
    sc.stop(name).unwrap();
    let _ = sc.reset_failed(name);
    std::fs::remove_file(&path).unwrap();
}
