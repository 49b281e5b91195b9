//! The decided steps, the systemd way: the receipt first, then the config, the unit file,
//! `enable`, `stop`, `daemon-reload` + `start` (or `restart`), and the proof — a new `MainPID`
//! in state running, `/health` from its socket, its live environment, the settle. A changed
//! unit that does not verify is rolled back to the last good one.

use super::*;
use crate::service::journal::Receipt;
use crate::service::{Step, Verified};

/// How many lines of this attempt's Host log a failure shows.
const MAX_TAIL_LINES: usize = 20;
/// `show` is a process start: polled with a back-off from this to 500 ms.
const SHOW_FIRST: Duration = Duration::from_millis(50);

/// Why a verification stopped.
enum Stop {
    Failed(String),
    Interrupted(signal::Signal),
}

fn check_interrupt() -> Result<(), Stop> {
    signal::received().map_or(Ok(()), |s| Err(Stop::Interrupted(s)))
}

fn sleep_interruptible(d: Duration) -> Result<(), Stop> {
    let end = Instant::now() + d;
    while Instant::now() < end {
        check_interrupt()?;
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
    check_interrupt()
}

/// The unit this run replaces and writes, and the port change a rollback puts back.
struct Generation {
    previous: Option<Vec<u8>>,
    bytes: Vec<u8>,
    port: Option<crate::config::Change>,
}

/// What the new instance is measured against.
#[derive(Clone, Default)]
struct Baseline {
    /// The instance replaced (a new one must have another pid).
    old_pid: Option<u32>,
    /// A `Load` step follows (its `daemon-reload` makes an enable current too).
    loads: bool,
}

impl Unit<'_> {
    pub(super) fn run(
        &mut self,
        plan: &Plan,
        action: Action,
        d: &Decision,
        timing: Timing,
    ) -> anyhow::Result<Outcome> {
        let pending = self.stack.pending_path().exists();
        if pending {
            self.out.progress("A previous oyster run stopped before its change verified; verifying now (and rolling back to the last good unit if it does not).");
        }
        let port = self.port_change(plan, pending);
        let mut receipt = (d.reload || pending)
            .then(|| self.write_receipt(action, d, port.as_ref()))
            .transpose()?;
        self.keep_stopped = d.keep_stopped;
        let bytes = self.render(plan)?;
        let previous = self.on_disk();
        if !d
            .steps
            .iter()
            .any(|s| matches!(s, Step::WriteConfig { .. }))
        {
            crate::host::node::record_version(
                &self.stack.node_version_cache_path(),
                self.lock()?,
                &plan.node,
            );
            crate::config::report(&self.stack.config_path(), &[], self.out);
        }
        let rolls_back = d.change.rolls_back();
        let mut baseline = Baseline {
            loads: d.steps.iter().any(|s| matches!(s, Step::Load { .. })),
            ..Baseline::default()
        };
        for (i, step) in d.steps.iter().enumerate() {
            if let Some(r) = receipt.as_mut() {
                r.advance(i, self.lock()?, &self.stack.pending_path())?;
            }
            let taken = self.take(plan, step, action, &bytes, &mut baseline);
            if let Err(e) = taken {
                if matches!(
                    step,
                    Step::WriteConfig { .. } | Step::WriteDefinition { .. }
                ) {
                    let paths = (self.stack.config_path(), self.stack.pending_path());
                    return Err(crate::service::journal::undo_writes(
                        e,
                        (&paths.0, &paths.1),
                        port.as_ref(),
                        pending,
                        "systemd",
                        self.out,
                    ));
                }
                if !rolls_back {
                    return Err(e);
                }
                let stop = match signal::received() {
                    Some(sig) => Stop::Interrupted(sig),
                    None => Stop::Failed(format!("{e:#}")),
                };
                let g = Generation {
                    previous,
                    bytes,
                    port,
                };
                return Err(self.roll_back(action, g, stop, timing));
            }
        }
        let result = self.verify(plan, &baseline, timing);
        let g = Generation {
            previous,
            bytes,
            port,
        };
        self.conclude(action, d, result, g, timing)
    }

    /// The proof's outcome: kept as the last good unit, or rolled back (a changed unit), or
    /// said (an unchanged one: nothing to roll back to).
    fn conclude(
        &mut self,
        action: Action,
        d: &Decision,
        result: Result<Verified, Stop>,
        g: Generation,
        timing: Timing,
    ) -> anyhow::Result<Outcome> {
        match result {
            Ok(v) => {
                self.audit
                    .record(action, Logged::Verify, StepOutcome::Ok, Some(v.pid), "");
                self.keep_as_last_good(&g.bytes);
                if matches!(action, Action::Install | Action::Setup) {
                    self.note_linger();
                }
                Ok(Outcome {
                    verified: v,
                    reloaded: d.reload,
                    was_loaded: Unit::is_loaded(&self.before),
                })
            }
            Err(stop) if d.change.rolls_back() => Err(self.roll_back(action, g, stop, timing)),
            Err(Stop::Interrupted(sig)) => {
                let _ = crate::service::journal::remove(&self.stack.pending_path());
                Err(
                    crate::error::Interrupted(sig, "nothing about the unit was changed".into())
                        .into(),
                )
            }
            Err(Stop::Failed(f)) => {
                let _ = crate::service::journal::remove(&self.stack.pending_path());
                self.audit
                    .record(action, Logged::Verify, StepOutcome::Failed, None, &f);
                Err(anyhow::anyhow!(self.failure_message(&f)))
            }
        }
    }

    /// One step on the manager.
    fn take(
        &mut self,
        plan: &Plan,
        step: &Step,
        action: Action,
        bytes: &[u8],
        baseline: &mut Baseline,
    ) -> anyhow::Result<()> {
        let name = self.name.clone();
        match step {
            Step::WriteConfig { .. } => self.write_config(plan),
            Step::WriteDefinition { .. } => {
                self.write_unit(bytes)?;
                self.audit
                    .record(action, Logged::WriteUnit, StepOutcome::Written, None, "");
                Ok(())
            }
            Step::Enable { .. } => {
                self.sc.enable(&name)?;
                // Current `UnitFileState` wherever systemctl runs (see `stop_job`); a load
                // that follows reloads anyway.
                if !baseline.loads {
                    self.sc.daemon_reload()?;
                }
                self.audit
                    .record(action, Logged::Enable, StepOutcome::Ok, None, "");
                Ok(())
            }
            Step::BootOut { pid, .. } => {
                self.sc.stop(&name)?;
                self.audit
                    .record(action, Logged::Stop, StepOutcome::Ok, *pid, "");
                baseline.old_pid = *pid;
                Ok(())
            }
            Step::Load { .. } => {
                self.sc.daemon_reload()?;
                self.audit
                    .record(action, Logged::DaemonReload, StepOutcome::Ok, None, "");
                // A crash loop that hit its start limit stays failed until this.
                if self.before.is_failed() {
                    self.sc.reset_failed(&name)?;
                }
                self.sc.start(&name)?;
                self.audit
                    .record(action, Logged::Start, StepOutcome::Ok, None, "");
                Ok(())
            }
            Step::Restart { pid, .. } => {
                // systemd's restart is graceful: SIGTERM to the Host (KillMode=mixed), then
                // SIGKILL after TimeoutStopSec, then a start; it runs to its end.
                let _whole = signal::Suspended::new();
                self.sc.restart(&name)?;
                self.audit
                    .record(action, Logged::Restart, StepOutcome::Ok, *pid, "");
                baseline.old_pid = *pid;
                Ok(())
            }
            Step::StopDirect { pid } => {
                crate::direct::stop_checked(self.stack, &self.hints, self.out, &|_| None)?;
                self.out.progress(&format!(
                    "the Host `oyster host start` ran (pid {pid}) was stopped; the systemd unit runs it from now on, on the same port"
                ));
                Ok(())
            }
            Step::Verify { .. } => Ok(()),
            Step::FinishStop { .. } | Step::Disable { .. } | Step::RemoveDefinition { .. } => {
                anyhow::bail!("{} is not a step of a start", step_word(step))
            }
        }
    }

    /// The unit file written atomically, mode 0644, its log directory first (systemd opens the
    /// `append:` file itself and creates no directory).
    fn write_unit(&self, bytes: &[u8]) -> anyhow::Result<()> {
        fsutil::create_dir_all(&self.stack.log_dir, 0o755)?;
        if let Some(dir) = self.path.parent() {
            fsutil::create_dir_all(dir, 0o755)?;
        }
        fsutil::write_atomic(self.lock()?, &self.path, bytes, Some(0o644))?;
        Ok(())
    }

    /// The port change a rollback puts back ([`journal::port_change`]).
    fn port_change(&self, plan: &Plan, pending: bool) -> Option<crate::config::Change> {
        let now = plan
            .changes
            .iter()
            .find(|c| c.key == crate::config::PORT_KEY)
            .cloned();
        let earlier = pending
            .then(|| crate::service::journal::read(&self.stack.pending_path()))
            .flatten()
            .and_then(|r| r.port_edit());
        crate::service::journal::port_to_put_back(earlier, now, plan.port)
    }

    fn write_receipt(
        &self,
        action: Action,
        d: &Decision,
        port: Option<&crate::config::Change>,
    ) -> anyhow::Result<Receipt> {
        let receipt = Receipt::of(&action.to_string(), d, port, &self.stack.config_path());
        receipt.write(self.lock()?, &self.stack.pending_path())?;
        Ok(receipt)
    }

    /// A new instance running, `/health` from its socket, its environment, the settle.
    fn verify(&self, plan: &Plan, baseline: &Baseline, timing: Timing) -> Result<Verified, Stop> {
        let t0 = Instant::now();
        let port = plan.port;
        self.out.waiting(
            &format!("the Host to answer /health on 127.0.0.1:{port}"),
            timing.wait,
        );
        let first = self.wait_for_instance(baseline, t0, timing)?;
        let pid = first.main_pid.unwrap_or_default();
        self.wait_for_health(pid, port, t0 + timing.wait.max(Duration::from_secs(1)))?;
        let health_after = t0.elapsed();
        crate::verify::check_listener(port, pid).map_err(Stop::Failed)?;
        let record = crate::host::identity::ExecRecord::read(&self.stack.exec_record_path());
        let proof = crate::verify::prove_live_or_exec(pid, &plan.env, record.as_ref(), self.proof_floor)
            .map_err(Stop::Failed)?
            .ok_or_else(|| Stop::Failed("the environment is unproven: the kernel hides it and `oyster host exec` left no record for this process".into()))?;
        if !first.drop_in_paths.is_empty() {
            let shown: Vec<String> = first
                .drop_in_paths
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            self.out.note(&format!(
                "drop-ins change {} beside oyster's unit ({}); the Host's environment is still the generated one",
                self.name,
                shown.join(", ")
            ));
        }
        self.out.waiting(
            &format!("pid {pid} to stay up (a crash loop would not)"),
            timing.settle,
        );
        sleep_interruptible(timing.settle)?;
        let after = self.show().map_err(|e| Stop::Failed(format!("{e:#}")))?;
        if after.main_pid != Some(pid) || !after.is_running() || after.n_restarts > first.n_restarts
        {
            return Err(Stop::Failed(format!(
                "the Host did not stay up: pid {pid} became {} within {} ms of answering /health (a crash loop?)",
                after.main_pid.map_or("none".into(), |p| p.to_string()),
                timing.settle.as_millis()
            )));
        }
        Ok(Verified {
            pid,
            health_after,
            env_proof: proof,
        })
    }

    /// Polls `show` (backing off) until a running instance other than the one replaced; a unit
    /// that failed is a failure at once.
    fn wait_for_instance(
        &self,
        b: &Baseline,
        t0: Instant,
        timing: Timing,
    ) -> Result<UnitShow, Stop> {
        let mut pause = SHOW_FIRST;
        loop {
            check_interrupt()?;
            let s = self.show().map_err(|e| Stop::Failed(format!("{e:#}")))?;
            if s.is_running() && s.main_pid != b.old_pid {
                return Ok(s);
            }
            if s.is_failed() {
                return Err(Stop::Failed(format!(
                    "the Host is not running ({} {}, result {:?}, exit status {})",
                    self.name, s.sub_state, s.result, s.exec_main_status
                )));
            }
            if t0.elapsed() > timing.wait {
                return Err(Stop::Failed(format!(
                    "no new running instance within {} s (state = {:?} {})",
                    timing.wait.as_secs(),
                    s.active_state,
                    s.sub_state
                )));
            }
            sleep_interruptible(pause)?;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    fn wait_for_health(&self, pid: u32, port: u16, deadline: Instant) -> Result<(), Stop> {
        let mut last = None;
        loop {
            check_interrupt()?;
            if crate::verify::inspect(pid).is_none() {
                return Err(Stop::Failed(format!(
                    "the Host (pid {pid}) exited before answering /health on 127.0.0.1:{port}"
                )));
            }
            last = crate::verify::health(port, Duration::from_millis(500)).or(last);
            if last == Some(200) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Stop::Failed(format!(
                    "{} on 127.0.0.1:{port}",
                    crate::verify::HealthFailure::Timeout(last)
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Without linger the user manager, and the Host with it, stops when the user's last
    /// session ends: said once the Host is installed (doctor says it too).
    fn note_linger(&self) {
        let user = crate::sys::user::name_of(crate::sys::user::uid()).unwrap_or_default();
        if self.sc.linger(&user) == Some(false) {
            self.out.note(&format!(
                "linger is off for {user}: the Host stops when you log out; `loginctl enable-linger {user}` keeps it running"
            ));
        }
    }

    /// The unit that verified, kept for rollback; the receipt removed.
    fn keep_as_last_good(&self, bytes: &[u8]) {
        let Some(lock) = self.lock else { return };
        let r = fsutil::create_dir_all(&self.stack.run_dir, 0o700)
            .and_then(|()| fsutil::write_atomic(lock, &self.last_good_path(), bytes, Some(0o600)))
            .and_then(|_| crate::service::journal::remove(&self.stack.pending_path()));
        if let Err(e) = r {
            self.out
                .warn(&format!("could not record the verified unit: {e}"));
        }
    }

    /// After a failure or an interrupt: the unit stopped, the last good one (else the one it
    /// replaced) written back and started, or the new one removed; the port put back.
    fn roll_back(
        &mut self,
        action: Action,
        g: Generation,
        stop: Stop,
        timing: Timing,
    ) -> anyhow::Error {
        let Generation {
            previous,
            bytes: new,
            port,
        } = g;
        let new = new.as_slice();
        let _quiet = signal::Suspended::new();
        let (failure, interrupted) = match stop {
            Stop::Failed(f) => (f, None),
            Stop::Interrupted(sig) => (format!("interrupted by {sig}"), Some(sig)),
        };
        self.audit
            .record(action, Logged::Verify, StepOutcome::Failed, None, &failure);
        self.out
            .progress(&format!("Verification stopped: {failure}. Rolling back…"));
        let last_good = fsutil::read_regular(&self.last_good_path(), 1024 * 1024)
            .ok()
            .flatten();
        let known_good = last_good.as_deref() == Some(new) || previous.as_deref() == Some(new);
        let restore = last_good
            .filter(|b| b != new)
            .or(previous.filter(|b| b != new));
        let replaced = restore.is_some() || !known_good;
        let mut said = self
            .restore(restore, known_good, timing)
            .unwrap_or_else(|e| format!("rollback failed too (the next run retries it): {e:#}"));
        if let (Some(change), true) = (port, replaced) {
            let config =
                crate::host::plan::put_back_port(&self.stack.config_path(), &change, self.out)
                    .unwrap_or_else(|e| format!("config.json's port could not be put back: {e:#}"));
            said = format!("{said}; {config}");
        }
        let _ = crate::service::journal::remove(&self.stack.pending_path());
        self.audit
            .record(action, Logged::Rollback, StepOutcome::Done, None, &said);
        if let Some(sig) = interrupted {
            return crate::error::Interrupted(sig, format!("rollback: {said}")).into();
        }
        anyhow::anyhow!("{}\nrollback: {said}", self.failure_message(&failure))
    }

    fn restore(
        &mut self,
        restore: Option<Vec<u8>>,
        known_good: bool,
        timing: Timing,
    ) -> anyhow::Result<String> {
        self.sc.stop(&self.name)?;
        match restore {
            Some(bytes) if self.keep_stopped => {
                self.write_unit(&bytes)?;
                self.sc.daemon_reload()?;
                Ok(format!(
                    "the unit `stop` left was restored, not started: the Host stays stopped; `{}` starts it once the cause is fixed",
                    self.hints.agent("start")
                ))
            }
            Some(bytes) => {
                self.write_unit(&bytes)?;
                self.sc.daemon_reload()?;
                self.sc.reset_failed(&self.name)?;
                self.sc.start(&self.name)?;
                let port = unit_port(&bytes, &self.stack.home).unwrap_or(0);
                let fresh = Baseline::default();
                let first = self.wait_for_instance(&fresh, Instant::now(), timing);
                let healthy = first.and_then(|s| {
                    let pid = s.main_pid.unwrap_or_default();
                    self.wait_for_health(pid, port, Instant::now() + timing.wait).map(|()| pid)
                });
                Ok(match healthy {
                    Ok(pid) => format!("restored the last good unit; the previous Host runs again (pid {pid})"),
                    Err(Stop::Failed(f)) => format!("restored and started the last good unit, but it did not verify either: {f}"),
                    Err(Stop::Interrupted(_)) => "restored and started the last good unit".to_owned(),
                })
            }
            None if known_good => Ok(format!(
                "this unit verified before, so the failure is not the unit's: it was stopped and {} kept; `{}` starts it again once the cause is fixed",
                self.path.display(),
                self.hints.agent("start")
            )),
            None => {
                let _ = self.sc.disable(&self.name, false);
                std::fs::remove_file(&self.path)?;
                self.sc.daemon_reload()?;
                Ok("there was no earlier good unit; the new one was stopped and removed".into())
            }
        }
    }

    fn failure_message(&self, failure: &str) -> String {
        let log = self.stack.log_path();
        let len = std::fs::symlink_metadata(&log).map_or(0, |m| m.len());
        let since = len.checked_sub(self.log_start).unwrap_or(len);
        let tail = if since == 0 {
            "(the Host wrote nothing to its log during this attempt)".to_owned()
        } else {
            let text = crate::verify::log_tail(&log, since.min(16 * 1024));
            let lines: Vec<&str> = text.trim_end().lines().collect();
            lines[lines.len().saturating_sub(MAX_TAIL_LINES)..].join("\n")
        };
        crate::config::learn_secrets(&self.stack.config_path());
        format!(
            "the Host did not verify: {failure}\n--- this attempt's last lines of {} ---\n{}\nnext: `{} -f` follows the Host log; `systemctl --user status {}` shows the unit",
            log.display(),
            tail.trim_end(),
            self.hints.agent("logs"),
            self.name
        )
    }
}

/// `OYSTERUN_PORT` as the unit's `Environment=` lines set it (read as systemd reads them).
fn unit_port(bytes: &[u8], home: &std::path::Path) -> Option<u16> {
    let text = std::str::from_utf8(bytes).ok()?;
    crate::systemd::environment_of(&[text], home)
        .into_iter()
        .find(|(k, _)| k == "OYSTERUN_PORT")?
        .1?
        .parse()
        .ok()
}

fn step_word(step: &Step) -> String {
    serde_json::to_value(step)
        .ok()
        .and_then(|v| v["step"].as_str().map(str::to_owned))
        .unwrap_or_default()
}
