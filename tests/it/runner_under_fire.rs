//! The one runner (`service::run`) as a hostile user meets it: a rollback whose restore cannot
//! write the definition back keeps the receipt and the next run finishes it; a receipt planted
//! by hand in a shape no run writes. Every process is signalled by its pid.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::{self, free_port, Stack, TestContext};
use crate::common::{has_all, has_none};
use crate::rollback_under_fire::{restart_onto, wait_while_running};

fn stack_dir(s: &Stack) -> PathBuf {
    s.t.home.join(format!(".oysterun-stacks/{}", s.name))
}

fn config_port(s: &Stack) -> serde_json::Value {
    let path = stack_dir(s).join("host/config.json");
    serde_json::from_slice::<serde_json::Value>(&std::fs::read(path).unwrap()).unwrap()["port"]
        .clone()
}

#[test]
fn a_rollback_that_cannot_write_the_plist_back_keeps_the_receipt_and_the_next_run_finishes_it() {
    let s = Stack::installed("nowrite");
    let bad = s.t.fixture_root("bad");
    TestContext::fixture_flag(&bad, "unhealthy", "");
    let pending = stack_dir(&s).join("run/pending");
    let err = s.t.path("restart.err");
    let read = || std::fs::read_to_string(&err).unwrap_or_default();
    let new_port = free_port();
    let mut child = restart_onto(&s, (&bad, new_port), 3, &err);
    wait_while_running(&mut child, Duration::from_secs(20), "the wait", || {
        read().contains("answer /health")
    });
    // While the new Host is waited for, the log directory's place becomes a file (the Host
    // keeps writing to its open log): no plist can be written back, root's neither.
    let logs = stack_dir(&s).join("logs");
    let moved = stack_dir(&s).join("logs.moved");
    std::fs::rename(&logs, &moved).unwrap();
    std::fs::write(&logs, "").unwrap();
    let status = child.wait().unwrap();
    let e = read();
    assert_eq!(status.code(), Some(1), "{e}");
    has_all(&e, &["rollback failed too (the next run retries it)"]);
    assert!(pending.exists(), "the receipt is the next run's: {e}");
    // The cause goes; the next run (no --port) finds the receipt and finishes the rollback.
    std::fs::remove_file(&logs).unwrap();
    std::fs::rename(&moved, &logs).unwrap();
    let args: Vec<String> = common::args(&["agent", "restart"]).stack(s.name).wait(3, 200).into();
    let next = s.t.run(args);
    let out = format!("{}{}", next.stdout(), next.stderr());
    has_all(&out, &["A previous oyster run stopped before its change verified"]);
    assert!(!pending.exists(), "{out}");
    assert_eq!(config_port(&s), s.port, "{out}");
    let st = s.status();
    assert_eq!(
        (&st["verified"], &st["port"]),
        (&serde_json::json!(true), &serde_json::json!(s.port)),
        "{st}\n{out}"
    );
    has_none(&out, &["rollback failed too"]);
    s.t.run(["agent", "uninstall", "--stack", s.name]).ok();
    s.t.wait_no_processes();
}

/// A `systemctl` that, at the rollback's `stop` (the run's second), stops for real and then
/// puts a file where the stack's log directory was: the restore cannot write the unit back.
#[cfg(target_os = "linux")]
fn breaking_the_restore(t: &mut TestContext, logs: &Path) {
    let count = t.path("stops");
    t.stand_in(
        "OYSTER_SYSTEMCTL",
        "bin/systemctl",
        &format!(
            r#"#!/bin/sh
if [ "$2" = stop ]; then
  echo x >> '{count}'
  if [ "$(/usr/bin/wc -l < '{count}')" -eq 2 ]; then
    /usr/bin/systemctl "$@"; rc=$?
    /bin/mv '{logs}' '{logs}.moved' && : > '{logs}'
    exit $rc
  fi
fi
exec /usr/bin/systemctl "$@"
"#,
            count = count.display(),
            logs = logs.display()
        ),
    );
}

#[test]
#[cfg(target_os = "linux")]
fn a_systemd_rollback_that_cannot_write_the_unit_back_keeps_the_receipt_for_the_next_run() {
    let Some((_m, mut t)) = crate::systemd_job::world() else { return };
    let s = "sdnowrite";
    let dir = t.home.join(format!(".oysterun-stacks/{s}"));
    let (logs, pending) = (dir.join("logs"), dir.join("run/pending"));
    let (port, _) = crate::systemd_job::installed(&t, s);
    crate::systemd_job::poison(&t, s);
    breaking_the_restore(&mut t, &logs);
    let new = free_port().to_string();
    let r = crate::systemd_job::verb(&t, &["restart"], s, &["--port", &new]);
    let e = r.stderr();
    assert_eq!(r.code(), 1, "{e}");
    has_all(&e, &["rollback failed too (the next run retries it)"]);
    assert!(pending.exists(), "the receipt is the next run's: {e}");
    // The cause goes; the next run (no --port) finds the receipt and finishes the rollback.
    std::fs::remove_file(&logs).unwrap();
    std::fs::rename(dir.join("logs.moved"), &logs).unwrap();
    let next = crate::systemd_job::verb(&t, &["restart"], s, &[]);
    let out = format!("{}{}", next.stdout(), next.stderr());
    has_all(&out, &["A previous oyster run stopped before its change verified"]);
    has_none(&out, &["rollback failed too"]);
    assert!(!pending.exists(), "{out}");
    let config = dir.join("host/config.json");
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(config).unwrap()).unwrap();
    assert_eq!(config["port"], port, "{out}");
    assert_eq!(crate::common::get(port, "/health"), 200, "{out}");
}

/// A receipt planted by hand: a shape no run writes is refused with its fix before anything
/// is changed (the Host keeps running), one that does not parse is an unfinished run that
/// names no port (recovered, then removed).
#[test]
fn a_receipt_planted_by_hand_is_refused_with_its_fix_or_recovered() {
    let s = Stack::installed("planted");
    let pending = stack_dir(&s).join("run/pending");
    let plant = |how: &str| {
        let _ = std::fs::remove_file(&pending);
        let _ = std::fs::remove_dir_all(&pending);
        match how {
            "dir" => {
                std::fs::create_dir(&pending).unwrap();
                std::fs::write(pending.join("x"), "").unwrap();
            }
            "fifo" => {
                nix::unistd::mkfifo(&pending, nix::sys::stat::Mode::from_bits_truncate(0o600))
                    .unwrap();
            }
            "zero" => std::os::unix::fs::symlink("/dev/zero", &pending).unwrap(),
            "huge" => std::fs::write(&pending, vec![b'{'; 8 << 20]).unwrap(),
            _ => std::fs::write(&pending, how).unwrap(),
        }
    };
    for (how, fix) in [("dir", "is a directory"), ("fifo", "is a FIFO"), ("zero", "is a symlink")] {
        plant(how);
        let pid = s.status()["pid"].clone();
        let r = s.t.run(s.args("restart"));
        let e = r.stderr();
        assert_eq!(r.code(), 2, "{how}: {e}");
        has_all(&e, &[fix, "remove it"]);
        assert_eq!(s.status()["pid"], pid, "{how}: {e}");
    }
    for how in ["huge", "{\"action\":\"x\",\"steps\":[],\"done\":99}"] {
        plant(how);
        let r = s.t.run(s.args("restart")).ok();
        r.stderr_has("A previous oyster run stopped before its change verified");
        assert!(std::fs::symlink_metadata(&pending).is_err(), "{how}");
        assert_eq!(config_port(&s), s.port);
    }
    s.t.run(["agent", "uninstall", "--stack", s.name]).ok();
    s.t.wait_no_processes();
}

/// A `launchctl` that runs the shell lines `first` (given the simulator as `$SIM`), then the
/// simulator with its arguments.
fn launchctl_with(t: &mut TestContext, first: &str) {
    let sim = crate::common::sim_bin();
    let script = format!("#!/bin/sh\nSIM='{}'\n{first}\nexec \"$SIM\" \"$@\"\n", sim.display());
    t.stand_in("OYSTER_LAUNCHCTL", "bin/launchctl", &script);
}

/// A `launchctl` that sends SIGINT to oyster (its parent) at its first call whose verb is
/// `$INT_ON`, then makes that call for real.
fn interrupting_launchctl(t: &mut TestContext) {
    let done = t.path("interrupted");
    launchctl_with(
        t,
        &format!(
            r#"if [ -n "$INT_ON" ] && [ "$1" = "$INT_ON" ] && [ ! -e '{done}' ]; then
  : > '{done}'
  kill -INT $PPID
fi"#,
            done = done.display()
        ),
    );
}

#[test]
fn a_signal_while_the_run_still_looks_changes_nothing_and_leaves_the_host_running() {
    let mut s = Stack::installed("intlook");
    interrupting_launchctl(&mut s.t);
    let pending = stack_dir(&s).join("run/pending");
    let plist = std::fs::read(s.plist()).unwrap();
    let pid = s.status()["pid"].clone();
    assert!(pid.is_u64(), "{pid}");
    // `restart --port NEW` asks ServiceManagement whether the job is switched off before it
    // decides; Ctrl-C lands during that question (which the decision takes as "no answer").
    let args: Vec<String> = common::args(&["agent", "restart"])
        .stack(s.name)
        .host(&s.root)
        .port(free_port())
        .wait(5, 200)
        .into();
    let mut c = s.t.cmd();
    c.args(&args).env("INT_ON", "login-item-status");
    let out = c.output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(s.t.path("interrupted").exists(), "the signal was not sent: {e}");
    assert_eq!(out.status.code(), Some(130), "{e}");
    has_all(&e, &["interrupted by SIGINT", "nothing was changed"]);
    has_none(&e, &["rollback", "Rolling back", "waiting for the Host"]);
    // The Host was not bounced, and nothing on disk moved.
    let st = s.status();
    assert_eq!((&st["pid"], &st["verified"]), (&pid, &serde_json::json!(true)), "{st}\n{e}");
    assert_eq!(config_port(&s), s.port, "{e}");
    assert_eq!(std::fs::read(s.plist()).unwrap(), plist, "{e}");
    assert!(!pending.exists(), "{e}");
    s.t.run(["agent", "uninstall", "--stack", s.name]).ok();
    s.t.wait_no_processes();
}

/// A signal while a systemd `restart`'s new Host settles: the old Host is gone already, so the
/// run verifies the new one to its end and says where the Host stands, as launchd's does (it
/// said "nothing about the unit was changed" and left the new Host unproven).
#[test]
#[cfg(target_os = "linux")]
fn a_systemd_restart_interrupted_after_the_old_host_stopped_says_where_the_host_stands() {
    let Some((m, t, port, old)) = crate::systemd_job::world_with("sdintrst") else { return };
    let err = t.path("restart.err");
    let read = || std::fs::read_to_string(&err).unwrap_or_default();
    let mut child = t
        .cmd()
        .args(["restart", "sdintrst", "--wait", "15", "--settle-ms", "3000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    wait_while_running(&mut child, Duration::from_secs(30), "the settle", || {
        read().contains("to stay up")
    });
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    let e = read();
    assert_eq!(status.code(), Some(130), "{e}");
    let new = crate::systemd_job::main_pid(&m, "sdintrst");
    assert_ne!(new, old, "{e}");
    has_all(
        &e,
        &[
            &format!("the old Host (pid {old}) is already stopped"),
            &format!("the new Host (pid {new}) runs and verified"),
        ],
    );
    has_none(&e, &["nothing about the unit was changed"]);
    assert_eq!(crate::common::get(port, "/health"), 200, "{e}");
}

/// A proof whose wait runs out (`--wait 1`, a Host that answers 503) under systemd: a restart
/// of the same unit says why, names a longer `--wait` and the manager's own look, and leaves
/// no receipt (nothing to roll back to).
#[test]
#[cfg(target_os = "linux")]
fn a_systemd_proof_that_runs_out_of_time_names_a_longer_wait() {
    let Some((_m, t, _port, _pid)) = crate::systemd_job::world_with("sdwait") else { return };
    TestContext::fixture_flag(&t.host_root(), "unhealthy", "");
    let r = t.run(["restart", "sdwait", "--wait", "1", "--settle-ms", "200"]);
    let e = r.stderr();
    assert_eq!(r.code(), 1, "{e}");
    has_all(
        &e,
        &[
            "the Host did not verify: GET /health answered 503, never 200",
            "`oyster restart sdwait --wait 60` gives the Host longer to answer",
            "`systemctl --user status com.oysterun.host.sdwait.service` shows the unit",
        ],
    );
    has_none(&e, &["rollback"]);
    assert!(!t.home.join(".oysterun-stacks/sdwait/run/pending").exists(), "{e}");
}

/// A cause outside the unit (the root's Host dies soon after it answers /health): the new
/// unit does not stay up, and neither does the restored one. The rollback says so instead of
/// "the previous Host runs again" (systemd's restore checked /health, not the settle).
#[test]
#[cfg(target_os = "linux")]
fn a_systemd_rollback_whose_restored_host_dies_after_health_does_not_claim_it_runs() {
    let Some((_m, t, _port, _pid)) = crate::systemd_job::world_with("sdsettle") else { return };
    TestContext::fixture_flag(&t.host_root(), "crash-after-ms", "700");
    let new = free_port().to_string();
    let r = t.run(["restart", "sdsettle", "--port", &new, "--wait", "10", "--settle-ms", "1500"]);
    let e = r.stderr();
    assert_eq!(r.code(), 1, "{e}");
    has_all(
        &e,
        &["Rolling back", "restored and started the last good unit, but it did not verify either"],
    );
    has_none(&e, &["the previous Host runs again"]);
    let _ = std::fs::remove_file(t.host_root().join("crash-after-ms"));
}

/// A `launchctl` that, after its first real `bootout`, makes the receipt unwritable (a
/// directory with a file in it where `pending` is: as a full disk would, for root too).
fn receipt_breaking_launchctl(t: &mut TestContext, pending: &Path) {
    launchctl_with(
        t,
        &format!(
            r#"if [ "$1" = bootout ] && [ ! -d '{p}' ]; then
  "$SIM" "$@"; rc=$?
  /bin/rm -f '{p}'; /bin/mkdir '{p}'; : > '{p}/x'
  exit $rc
fi"#,
            p = pending.display()
        ),
    );
}

/// The receipt cannot be written once the old Host is booted out: the run does not stop
/// there with the Host down; it rolls back to the last good plist, which runs again.
#[test]
fn a_receipt_that_cannot_be_written_mid_change_does_not_leave_the_host_down() {
    let mut s = Stack::installed("rcptfull");
    let pending = stack_dir(&s).join("run/pending");
    receipt_breaking_launchctl(&mut s.t, &pending);
    let args: Vec<String> = common::args(&["agent", "restart"])
        .stack(s.name)
        .host(&s.root)
        .port(free_port())
        .wait(5, 200)
        .into();
    let r = s.t.run(&args);
    let e = r.stderr();
    assert_eq!(r.code(), 1, "{e}");
    has_all(&e, &["Rolling back", "the previous Host runs again"]);
    std::fs::remove_dir_all(&pending).unwrap();
    let st = s.status();
    assert_eq!(
        (&st["verified"], &st["port"]),
        (&serde_json::json!(true), &serde_json::json!(s.port)),
        "{st}\n{e}"
    );
    assert_eq!(config_port(&s), s.port, "{e}");
    s.t.run(["agent", "uninstall", "--stack", s.name]).ok();
    s.t.wait_no_processes();
}
