//! What a user leaves beside the unit, under a REAL `systemd --user` (common/user_manager.rs):
//! a unit path that is a FIFO or a symlink, a drop-in that overrides the unit's environment, a
//! Host past its start limit, and root without `OYSTER_SYSTEMCTL`. Each refusal comes before
//! anything is written or asked of the manager, and says what to do.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::bounded::bounded;
use crate::common::{free_port, get, TestContext};
use crate::common::{has_all, has_none};
use crate::systemd_job::{installed, main_pid, prop, unit, verb, world, world_with};

fn unit_path(home: &Path, s: &str) -> PathBuf {
    home.join(".config/systemd/user").join(unit(s))
}

/// The bytes a refusal must leave alone: config.json and the unit (`None`: absent or special).
fn files(t: &TestContext, s: &str) -> Vec<Option<Vec<u8>>> {
    let config = t.home.join(format!(".oysterun-stacks/{s}/host/config.json"));
    let unit = unit_path(&t.home, s);
    [config, unit]
        .iter()
        .map(|p| {
            std::fs::symlink_metadata(p)
                .ok()
                .filter(|m| m.is_file())
                .and_then(|_| std::fs::read(p).ok())
        })
        .collect()
}

/// Each of `attempts` exits 2 within 10 s saying `says`, leaving config.json, the unit and
/// the receipt as they were.
fn refused(t: &TestContext, s: &str, attempts: &[Vec<String>], says: &str) {
    let pending = t.home.join(format!(".oysterun-stacks/{s}/run/pending"));
    let before = files(t, s);
    for a in attempts {
        let args: Vec<&str> = a.iter().map(String::as_str).collect();
        let r = bounded(t, &args, &[], Duration::from_secs(10));
        let e = r.stderr();
        assert_eq!(r.code, Some(2), "{a:?}: {e}");
        assert!(e.contains(says), "{a:?}: {e}");
        assert_eq!(files(t, s), before, "{a:?} wrote");
        assert!(!pending.exists(), "{a:?} left a receipt");
    }
}

/// The verbs that load, each asking for a change (another port), and their dry runs.
fn loading(s: &str) -> Vec<Vec<String>> {
    let p = free_port().to_string();
    let mut v: Vec<Vec<String>> = vec![];
    for verb in ["start", "restart", "install"] {
        for more in [&["--port", p.as_str()][..], &["--dry-run"][..]] {
            let mut a = vec![verb.to_owned(), s.to_owned()];
            a.extend(more.iter().map(|m| (*m).to_owned()));
            a.extend(["--wait", "8", "--settle-ms", "300"].map(str::to_owned));
            v.push(a);
        }
    }
    v
}

#[test]
fn install_no_start_says_the_unit_is_not_enabled_and_a_fifo_or_symlinked_unit_is_refused() {
    let Some((m, t)) = world() else { return };
    let s = "sdspecial";
    let p = free_port().to_string();
    // --no-start writes the unit without enabling it: said so (launchd's "starts it at the next
    // login" would be false here).
    let out = t.run(["install", s, "--port", &p, "--no-start"]).ok().stdout();
    has_all(&out, &["not enabled, so nothing starts it at login"]);
    has_none(&out, &["launchd"]);
    assert_eq!(prop(&m, s, "UnitFileState"), "disabled");
    let path = unit_path(&t.home, s);
    let real = std::fs::read(&path).unwrap();
    // A FIFO: `systemctl enable` would block on it for the job's whole deadline.
    std::fs::remove_file(&path).unwrap();
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let mut attempts = loading(s);
    attempts.push(["agent", "regenerate", s, "--no-restart"].map(str::to_owned).to_vec());
    refused(&t, s, &attempts, "FIFO");
    let st = t.run(["status", s]).stdout();
    has_all(&st, &["is a FIFO (named pipe), not a regular file"]);
    let doc = t.run(["doctor", s, "--json"]).json();
    let c = crate::common::doctor_check(&doc, "unit");
    assert_eq!(c["status"], "fail", "{c}");
    assert!(c["detail"].to_string().contains("FIFO"), "{c}");
    assert!(!st.contains("stale"), "regenerate, the stale line's fix, is refused: {st}");
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(
        &std::fs::symlink_metadata(&path).unwrap().file_type()
    ));
    // A symlink (a dotfiles manager's): `systemctl disable` would remove the user's link.
    std::fs::remove_file(&path).unwrap();
    let target = t.path("dotfiles/oyster.service");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::write(&target, &real).unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    refused(&t, s, &attempts, "symlink");
    // `stop` disables, and `systemctl disable` removes a linked unit: refused (it said "Kept"
    // the unit it had just lost); `--keep` does not disable.
    let stops: Vec<Vec<String>> = [&["stop", s][..], &["stop", s, "--dry-run"][..]]
        .iter()
        .map(|a| a.iter().map(|w| (*w).to_owned()).collect())
        .collect();
    refused(&t, s, &stops, "would remove it");
    t.run(["stop", s, "--keep"]).ok();
    assert_eq!(std::fs::read_link(&path).unwrap(), target, "the link is kept");
    assert_eq!(std::fs::read(&target).unwrap(), real);
    assert_ne!(prop(&m, s, "ActiveState"), "active");
}

#[test]
fn a_drop_in_that_overrides_the_environment_is_refused_and_the_host_keeps_running() {
    let s = "sddropin";
    let Some((m, t, port, pid)) = world_with(s) else { return };
    let dir = PathBuf::from(format!("{}.d", unit_path(&t.home, s).display()));
    std::fs::create_dir_all(&dir).unwrap();
    let other = free_port();
    std::fs::write(
        dir.join("override.conf"),
        format!("[Service]\nEnvironment=\"OYSTERUN_PORT={other}\"\n"),
    )
    .unwrap();
    // On disk only (the next daemon-reload reads it), then loaded by the manager.
    for loaded in [false, true] {
        if loaded {
            m.systemctl(&["daemon-reload"]);
        }
        let mut attempts = loading(s);
        attempts.push(["restart", s].map(str::to_owned).to_vec());
        refused(&t, s, &attempts, "override.conf sets Environment=");
        assert_eq!(main_pid(&m, s), pid, "loaded={loaded}: the Host was touched");
        assert_eq!(get(port, "/health"), 200);
        let doc = t.run(["doctor", s, "--json"]).json();
        let c = crate::common::doctor_check(&doc, "drop-ins");
        assert_eq!(c["status"], "fail", "loaded={loaded}: {c}");
        assert!(c["detail"].to_string().contains("override.conf sets Environment="), "{c}");
    }
    // A drop-in that leaves the environment alone is the user's business: the restart runs.
    std::fs::write(dir.join("override.conf"), "[Service]\nNice=5\n").unwrap();
    verb(&t, &["restart"], s, &[]).ok();
    assert_eq!(get(port, "/health"), 200);
    verb(&t, &["uninstall"], s, &[]).ok();
}

/// Drives the unit into `failed` (past its start limit) with `crash-on-start` set, then clears
/// the flag.
fn crash_past_the_start_limit(
    m: &crate::common::user_manager::UserManager,
    t: &TestContext,
    s: &str,
) {
    let flag = t.host_root().join("host-service/crash-on-start");
    std::fs::write(&flag, "").unwrap();
    // `failed`: nothing starts it again (past the start limit; on a loaded machine a start
    // whose Host died before systemd saw the exec also ends there, `Result=exit-code`).
    let t0 = std::time::Instant::now();
    let mut last = String::new();
    while last != "failed" {
        m.systemctl(&["restart", &unit(s)]);
        std::thread::sleep(Duration::from_millis(100));
        last = prop(m, s, "ActiveState");
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "not failed within 60 s: {last} {}",
            prop(m, s, "Result")
        );
    }
    std::fs::remove_file(&flag).unwrap();
}

#[test]
fn a_host_past_its_start_limit_is_started_again_by_restart_and_start() {
    let Some((m, t)) = world() else { return };
    let s = "sdlimit";
    let (port, _p) = installed(&t, s);
    crash_past_the_start_limit(&m, &t, s);
    let st = t.run(["status", s]).stdout();
    has_all(&st, &["systemd gave up restarting the Host"]);
    has_none(&st, &["launchd"]);
    let dry = t.run(["restart", s, "--dry-run", "--json"]).ok().json();
    let steps = crate::common::column(&dry["steps"], "step");
    assert!(steps.iter().any(|s| s == "load"), "{dry}");
    verb(&t, &["restart"], s, &[]).ok();
    assert_eq!(get(port, "/health"), 200);
    crash_past_the_start_limit(&m, &t, s);
    verb(&t, &["start"], s, &[]).ok();
    assert_eq!(get(port, "/health"), 200);
    verb(&t, &["uninstall"], s, &[]).ok();
}

#[test]
fn root_without_oyster_systemctl_never_gets_a_user_unit() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root (root's own user manager is what is refused)");
        return;
    }
    let Some((_m, t)) = world() else { return };
    let s = "sdroot";
    let p = free_port().to_string();
    for args in [
        vec!["install", s, "--port", &p, "--no-start"],
        vec!["install", s, "--port", &p, "--no-start", "--dry-run"],
        vec!["install", s, "--port", &p, "--wait", "8"],
    ] {
        let out = t.cmd().env_remove("OYSTER_SYSTEMCTL").args(&args).output().unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains("a systemd user unit for root"), "{args:?}: {e}");
        assert!(!unit_path(&t.home, s).exists(), "{args:?} wrote root's unit");
    }
}

#[test]
fn status_names_the_unit_and_a_signal_that_killed_the_host() {
    let Some((m, t)) = world() else { return };
    let s = "sdsignal";
    let (_, _p) = installed(&t, s);
    // A unit edited by hand: stale, said of the unit (and `regenerate` its fix).
    let path = unit_path(&t.home, s);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("RestartSec=10", "RestartSec=11")).unwrap();
    let st = t.run(["status", s]).stdout();
    has_all(&st, &["the installed unit differs"]);
    has_none(&st, &["plist"]);
    std::fs::write(&path, text).unwrap();
    // SIGKILL to the Host: in the 10 s before systemd starts it again, the last exit is the
    // signal, not "code 9".
    let pid = main_pid(&m, s);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    crate::common::wait_until(Duration::from_secs(5), "the auto-restart", || {
        prop(&m, s, "SubState") == "auto-restart"
    });
    let doc = t.run(["status", s, "--json"]).json();
    assert_eq!(
        (doc["last_signal"].as_i64(), doc["last_exit_code"].as_i64()),
        (Some(9), None),
        "{doc}"
    );
    verb(&t, &["uninstall"], s, &[]).ok();
}

/// The unit directory made read-only (a bind mount onto itself; the user manager, in a
/// private mount namespace, does not see it), unmounted on drop.
pub(crate) struct ReadOnly(PathBuf);

impl ReadOnly {
    pub(crate) fn bind(dir: &Path) -> Option<ReadOnly> {
        let run = |args: &[&str]| {
            std::process::Command::new("/bin/mount")
                .args(args)
                .arg(dir)
                .arg(dir)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !run(&["--bind"]) {
            return None;
        }
        let ro = ReadOnly(dir.to_owned());
        run(&["-o", "remount,bind,ro"]).then_some(ro)
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = std::process::Command::new("/bin/umount").arg(&self.0).status();
    }
}

#[test]
fn a_unit_that_cannot_be_written_leaves_the_config_on_the_port_the_host_runs_on() {
    let s = "sdrofs";
    let Some((m, t, port, pid)) = world_with(s) else { return };
    let Some(_ro) = ReadOnly::bind(unit_path(&t.home, s).parent().unwrap()) else {
        eprintln!("skipped: cannot bind-mount a read-only directory here (needs root)");
        return;
    };
    let other = free_port().to_string();
    let r = verb(&t, &["restart"], s, &["--port", &other]).fails_with(1);
    let e = r.stderr();
    has_all(&e, &["Read-only file system"]);
    has_all(&e, &[&format!("config.json's port is {port} again")]);
    let config = t.home.join(format!(".oysterun-stacks/{s}/host/config.json"));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(config).unwrap()).unwrap();
    assert_eq!(doc["port"], port, "config.json names the port the Host runs on");
    assert!(
        !t.home.join(format!(".oysterun-stacks/{s}/run/pending")).exists(),
        "a receipt is left for a change that never reached systemd"
    );
    assert_eq!(main_pid(&m, s), pid);
    assert_eq!(get(port, "/health"), 200);
    drop(_ro);
    verb(&t, &["uninstall"], s, &[]).ok();
}

/// The audit log's steps of `action` after its first `from` lines, as a dry run names them
/// (`daemon-reload` then `start` is the one `load`).
fn audited(t: &TestContext, s: &str, action: &str, from: usize) -> Vec<String> {
    let log = t.home.join(format!(".oysterun-stacks/{s}/logs/service-control.jsonl"));
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .skip(from)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["action"] == action)
        .filter_map(|l| {
            Some(match l["step"].as_str()? {
                "write-unit" => "write_definition",
                "enable" => "enable",
                "stop" => "boot_out",
                "daemon-reload" => "load",
                "restart" => "restart",
                "verify" => "verify",
                _ => return None,
            })
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_dry_run_changes_nothing_and_lists_what_the_run_then_does() {
    let Some((m, t)) = world() else { return };
    let s = "sddryall";
    let (_, _p) = installed(&t, s);
    let facts = |m: &crate::common::user_manager::UserManager| {
        ["MainPID", "InvocationID", "UnitFileState", "NeedDaemonReload"].map(|k| prop(m, s, k))
    };
    let before = (crate::bounded::snapshot(&t.home, true), facts(&m));
    let other = free_port().to_string();
    let mut steps_of_restart = vec![];
    for args in [
        vec!["install", s, "--port", &other],
        vec!["restart", s, "--port", &other],
        vec!["restart", s],
        vec!["start", s],
        vec!["stop", s],
        vec!["stop", s, "--keep"],
        vec!["uninstall", s],
    ] {
        let mut a = args.clone();
        a.extend(["--dry-run", "--json"]);
        let doc = t.run(&a).ok().json();
        let now = (crate::bounded::snapshot(&t.home, true), facts(&m));
        assert_eq!(now, before, "{a:?} changed something");
        if args.len() == 4 && args[0] == "restart" {
            steps_of_restart = doc["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["step"].as_str().unwrap().to_owned())
                .filter(|s| s != "write_config")
                .collect();
        }
    }
    let log = t.home.join(format!(".oysterun-stacks/{s}/logs/service-control.jsonl"));
    let from = std::fs::read_to_string(&log).unwrap().lines().count();
    verb(&t, &["restart"], s, &["--port", &other]).ok();
    assert_eq!(audited(&t, s, "restart", from), steps_of_restart);
    verb(&t, &["uninstall"], s, &[]).ok();
}

#[test]
fn a_provider_change_and_host_status_name_the_unit_not_a_direct_host_or_launchd() {
    let Some((_m, t)) = world() else { return };
    let s = "sdprov";
    let (_, _p) = installed(&t, s);
    let codex = t.fake_exe(&t.path("tools/codex"));
    let out =
        t.run(["providers", "set", "codex", codex.to_str().unwrap(), "--stack", s]).ok().stdout();
    has_all(&out, &["The Host still runs with the old environment"]);
    has_none(&out, &["directly started"]);
    // `host status` of the unit's Host: running, verified, owned by systemd (it said "not
    // running" and "launchd owns this Host", reading a plist there is none of).
    // Not verified (exit 1): the Host predates the provider change.
    let r = t.run(["host", "status", s]).fails_with(1);
    r.stdout_has("Host running under systemd (com.oysterun.host.sdprov.service)");
    r.stdout_has("systemd owns this Host");
    let doc = t.run(["host", "status", s, "--json"]).fails_with(1).json();
    assert_eq!(
        (doc["managed_by"].as_str(), doc["verified"].as_bool()),
        (Some("systemd"), Some(false)),
        "the unit's Host predates the provider change: {doc}"
    );
    verb(&t, &["uninstall"], s, &[]).ok();
    t.run(["status", s]).stdout_has_all(&["installs the systemd unit alone"]);
}

/// A running unit whose plan cannot be made (config.json broken since): `status` still says the
/// unit runs the Host (it said launchd).
#[test]
fn a_running_unit_with_a_broken_config_is_said_to_be_systemds() {
    let Some((_m, t)) = world() else { return };
    let s = "sdbroken";
    let (_, _p) = installed(&t, s);
    let config = t.home.join(format!(".oysterun-stacks/{s}/host/config.json"));
    std::fs::write(&config, "{ not json").unwrap();
    let doc = t.run(["status", s, "--json"]).json();
    assert_eq!(doc["managed_by"].as_str(), Some("systemd"), "{doc}");
    std::fs::write(&config, "{}").unwrap();
    verb(&t, &["uninstall"], s, &[]).ok();
}

#[test]
fn a_unit_whose_manager_does_not_answer_is_never_taken_for_a_direct_host() {
    let Some((m, t)) = world() else { return };
    let s = "sdgone";
    let (_, _p) = installed(&t, s);
    let pid = main_pid(&m, s);
    // `su`, cron, an SSH session without XDG_RUNTIME_DIR: the manager runs, oyster cannot
    // reach it. The unit's Host writes the pid file a directly started one writes.
    let gone = t.path("no-runtime-dir");
    let run = |args: &[&str]| {
        let out = t.cmd().env("XDG_RUNTIME_DIR", &gone).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (_, out, _) = run(&["status", s, "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["summary"], "unknown", "it said direct: {doc}");
    assert!(doc["notes"].to_string().contains("has a systemd unit"), "{doc}");
    let (_, out, _) = run(&["doctor", s, "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let c = crate::common::doctor_check(&doc, "service manager");
    assert_eq!(c["status"], "fail", "{c}");
    // Every verb that acts on the job refuses (it said "started directly" and pointed at
    // `host stop`, which signalled the unit's Host; uninstall said "nothing to uninstall").
    for args in [
        vec!["stop", s],
        vec!["uninstall", s],
        vec!["restart", s],
        vec!["restart", s, "--dry-run"],
        vec!["start", s],
        vec!["kill", s],
        vec!["host", "stop", s],
        vec!["host", "start", s],
    ] {
        let (code, _, e) = run(&args);
        assert_eq!(code, Some(1), "{args:?}: {e}");
        assert!(e.contains("has a systemd unit"), "{args:?}: {e}");
        assert!(e.contains("login session"), "{args:?}: {e}");
    }
    assert_eq!(main_pid(&m, s), pid, "the unit's Host was signalled");
    assert!(unit_path(&t.home, s).exists());
    verb(&t, &["uninstall"], s, &[]).ok();
}

#[test]
fn a_home_with_quotes_percent_and_dollar_runs_the_whole_lifecycle() {
    let Some((m, t)) = crate::common::user_manager::world_in("ho me \"q\" 50% $HOME %n") else {
        return;
    };
    let s = "sdhome";
    let (_port, _p) = installed(&t, s);
    assert_eq!(t.run(["status", s, "--json"]).json()["env_proof"], "live");
    let other = free_port();
    let o = other.to_string();
    verb(&t, &["restart"], s, &["--port", &o]).ok();
    assert_eq!(get(other, "/health"), 200);
    // The Host log is the unit's `append:` file: the one under this HOME.
    let log = t.home.join(format!(".oysterun-stacks/{s}/logs/oysterun-host.log"));
    assert!(
        std::fs::read_to_string(&log).unwrap().contains(&format!("listening on 127.0.0.1:{other}")),
        "{}",
        log.display()
    );
    verb(&t, &["stop"], s, &[]).ok();
    assert_eq!(prop(&m, s, "UnitFileState"), "disabled");
    verb(&t, &["start"], s, &[]).ok();
    let st = t.run(["status", s, "--json"]).ok().json();
    assert_eq!(st["summary"], "verified", "{st}");
    verb(&t, &["uninstall"], s, &[]).ok();
    assert!(!unit_path(&t.home, s).exists());
}

#[test]
fn two_restarts_at_once_take_turns_and_leave_one_verified_host() {
    let Some((m, t)) = world() else { return };
    let s = "sdtwice";
    let (port, _p) = installed(&t, s);
    let other = free_port().to_string();
    let spawn = |more: &[&str]| {
        let mut a = vec!["restart", s, "--wait", "15", "--settle-ms", "300"];
        a.extend_from_slice(more);
        t.cmd()
            .args(&a)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(&["--port", &other]), spawn(&[]));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let other: u16 = other.parse().unwrap();
    assert_eq!(get(other, "/health"), 200);
    assert!(crate::common::http_get(port, "/health").is_none(), "two Hosts");
    let st = t.run(["status", s, "--json"]).ok().json();
    assert_eq!(st["pid"], main_pid(&m, s), "{st}");
    verb(&t, &["uninstall"], s, &[]).ok();
}
