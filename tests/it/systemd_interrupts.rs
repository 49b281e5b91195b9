//! A `restart` onto a crashing generation (a new port, a poisoned PATH) under a REAL `systemd
//! --user`, interrupted at each of its steps: SIGKILL (nothing of the run goes on; its receipt
//! `<run dir>/pending` stays and the next run recovers from it) and SIGTERM/SIGINT (the run
//! rolls back itself). Either way the old Host ends up running on the old port, config.json
//! names that port, and no receipt is left. A `systemctl` stand-in stalls the run at one verb
//! (before or after the real call) so the signal lands there; every process is signalled by
//! its pid.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::common::user_manager::UserManager;
use crate::common::{free_port, get, TestContext};
use crate::systemd_job::{main_pid, world};

/// Where the run is stopped: the verb the stand-in stalls at and whether the real verb ran
/// first; `None`: the config step, paused between its read and its rename (the receipt is on
/// disk, config.json not yet written).
const POINTS: [Option<(&str, &str)>; 6] = [
    None,
    Some(("enable", "before")),
    Some(("stop", "before")),
    Some(("stop", "after")),
    Some(("daemon-reload", "after")),
    Some(("start", "after")),
];

/// A `systemctl` that stalls at `$STALL_VERB` once (its pid in `marker`), else runs the real
/// one.
fn stalling(t: &mut TestContext, marker: &Path) {
    t.stand_in(
        "OYSTER_SYSTEMCTL",
        "bin/systemctl",
        &format!(
            r#"#!/bin/sh
m='{m}'
if [ -n "$STALL_VERB" ] && [ "$2" = "$STALL_VERB" ] && [ ! -e "$m" ]; then
  [ "$STALL_WHEN" = after ] && /usr/bin/systemctl "$@"
  echo $$ > "$m.tmp" && /bin/mv "$m.tmp" "$m"
  /bin/sleep 60
  exit 1
fi
exec /usr/bin/systemctl "$@"
"#,
            m = marker.display()
        ),
    );
}

fn send(pid: u32, sig: Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()), sig);
}

fn config_port(t: &TestContext, s: &str) -> serde_json::Value {
    let p = t.home.join(format!(".oysterun-stacks/{s}/host/config.json"));
    serde_json::from_slice::<serde_json::Value>(&std::fs::read(p).unwrap()).unwrap()["port"].clone()
}

/// `restart S --port NEW` stopped at `point`; returns the child and the stalled stand-in's
/// pid (none at the config step).
fn stopped_at(
    t: &TestContext,
    s: &str,
    point: Option<(&str, &str)>,
    marker: &Path,
    err: &Path,
) -> (Child, Option<u32>) {
    let _ = std::fs::remove_file(marker);
    let new = free_port().to_string();
    let mut c = t.cmd();
    c.args(["restart", s, "--port", &new, "--wait", "8", "--settle-ms", "300"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(err).unwrap());
    match point {
        Some((verb, when)) => c.env("STALL_VERB", verb).env("STALL_WHEN", when),
        None => c.env("OYSTER_TEST_PAUSE_BEFORE_RENAME", marker),
    };
    let mut child = c.spawn().unwrap();
    let t0 = Instant::now();
    while !marker.exists() {
        if child.try_wait().unwrap().is_some() || t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{point:?}: the run never got there: {}",
                std::fs::read_to_string(err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let stalled = point.map(|_| std::fs::read_to_string(marker).unwrap().trim().parse().unwrap());
    (child, stalled)
}

/// Installs `s` on a port, then poisons its provider PATH: every new generation crashes.
fn installed_then_poisoned(t: &TestContext, s: &str) -> u16 {
    let (port, _) = crate::systemd_job::installed(t, s);
    crate::systemd_job::poison(t, s);
    port
}

/// After an interrupted run (and its recovery, if any): the old Host on the old port.
fn back_on(t: &TestContext, s: &str, port: u16, pending: &Path, what: &str) {
    assert_eq!(config_port(t, s), port, "{what}: config.json's port");
    assert!(!pending.exists(), "{what}: a receipt is left");
    assert_eq!(get(port, "/health"), 200, "{what}: the old Host does not answer");
}

/// A world whose systemctl stalls where a test says, stack `s` installed then poisoned: the
/// manager, the context, the stall's marker, the old port, the receipt's path and the file
/// the interrupted run's stderr goes to.
type Poisoned = (UserManager, TestContext, PathBuf, u16, PathBuf, PathBuf);

fn poisoned_world(s: &str) -> Option<Poisoned> {
    let (m, mut t) = world()?;
    let marker = t.path("stalled");
    stalling(&mut t, &marker);
    let port = installed_then_poisoned(&t, s);
    let pending = t.home.join(format!(".oysterun-stacks/{s}/run/pending"));
    let err = t.path("run.err");
    Some((m, t, marker, port, pending, err))
}

#[test]
fn a_restart_killed_at_any_step_is_recovered_by_the_next_run_on_the_old_port() {
    let s = "sdkill";
    let Some((m, t, marker, port, pending, err)) = poisoned_world(s) else { return };
    for point in POINTS {
        let (mut child, stalled) = stopped_at(&t, s, point, &marker, &err);
        send(child.id(), Signal::SIGKILL);
        let _ = child.wait();
        if let Some(pid) = stalled {
            send(pid, Signal::SIGKILL);
        }
        assert!(pending.exists(), "{point:?}: the killed run left no receipt");
        let r = crate::systemd_job::verb(&t, &["restart"], s, &[]);
        let e = r.stderr();
        assert!(
            e.contains("A previous oyster run stopped before its change verified"),
            "{point:?}: {e}"
        );
        assert!(!e.contains("changed by another command"), "{point:?}: {e}");
        back_on(&t, s, port, &pending, &format!("{point:?}: {e}"));
        assert!(main_pid(&m, s) > 0);
    }
    crate::systemd_job::verb(&t, &["uninstall"], s, &[]).ok();
}

#[test]
fn a_restart_interrupted_at_any_step_rolls_itself_back_on_the_old_port() {
    let s = "sdterm";
    let Some((m, t, marker, port, pending, err)) = poisoned_world(s) else { return };
    for (i, point) in POINTS.into_iter().enumerate().filter(|(_, p)| p.is_some()) {
        // Ctrl-C reaches the whole foreground group (the stalled systemctl too); SIGTERM
        // only oyster (its systemctl is then killed by the test, as a deadline would).
        let sig = if i % 2 == 0 { Signal::SIGINT } else { Signal::SIGTERM };
        let (mut child, stalled) = stopped_at(&t, s, point, &marker, &err);
        send(child.id(), sig);
        std::thread::sleep(Duration::from_millis(200));
        send(stalled.unwrap(), Signal::SIGKILL);
        let status = child.wait().unwrap();
        let e = std::fs::read_to_string(&err).unwrap();
        assert!(!status.success(), "{point:?} {sig}: {e}");
        assert!(e.contains(&format!("interrupted by {sig}")), "{point:?}: {e}");
        back_on(&t, s, port, &pending, &format!("{point:?} {sig}: {e}"));
        assert!(main_pid(&m, s) > 0);
    }
    crate::systemd_job::verb(&t, &["uninstall"], s, &[]).ok();
}
