//! The decided steps, the systemd way: the receipt first, then the config, the unit file,
//! `enable`, `stop`, `daemon-reload` + `start` (or `restart`), and the proof — a new `MainPID`
//! in state running, `/health` from its socket, its live environment, the settle. A changed
//! unit that does not verify is rolled back to the last good one.

use super::*;
use crate::service::run::{
    self as runner, check_interrupt, sleep_interruptible, Failed, Job, Run, Stop,
};
use crate::service::said::{Failure, Left, Restored, Rollback, Said};
use crate::service::{ManagerKind, Step, Verified};

/// `show` is a process start: polled with a back-off from this to 500 ms.
const SHOW_FIRST: Duration = Duration::from_millis(50);

/// What the new instance is measured against.
#[derive(Clone, Default)]
pub struct Baseline {
    /// The instance replaced (a new one must have another pid).
    old_pid: Option<u32>,
    /// A `Load` step follows (its `daemon-reload` makes an enable current too).
    loads: bool,
}

impl Unit<'_> {
    /// One step on the manager.
    fn take_step(
        &mut self,
        plan: &Plan,
        step: &Step,
        action: Action,
        bytes: &[u8],
        baseline: &mut Baseline,
    ) -> anyhow::Result<()> {
        let name = self.name.clone();
        match step {
            Step::WriteConfig { .. } => self.run.write_config(plan),
            Step::WriteDefinition { .. } => {
                self.write_unit(bytes)?;
                self.run
                    .audit
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
                self.run
                    .audit
                    .record(action, Logged::Enable, StepOutcome::Ok, None, "");
                Ok(())
            }
            Step::BootOut { pid, .. } => {
                self.sc.stop(&name)?;
                self.run
                    .audit
                    .record(action, Logged::Stop, StepOutcome::Ok, *pid, "");
                baseline.old_pid = *pid;
                Ok(())
            }
            Step::Load { .. } => {
                self.sc.daemon_reload()?;
                self.run
                    .audit
                    .record(action, Logged::DaemonReload, StepOutcome::Ok, None, "");
                // A crash loop that hit its start limit stays failed until this.
                if self.before.is_failed() {
                    self.sc.reset_failed(&name)?;
                }
                self.sc.start(&name)?;
                self.run
                    .audit
                    .record(action, Logged::Start, StepOutcome::Ok, None, "");
                Ok(())
            }
            Step::Restart { pid, .. } => {
                // systemd's restart is graceful: SIGTERM to the Host (KillMode=mixed), then
                // SIGKILL after TimeoutStopSec, then a start; it runs to its end.
                let _whole = signal::Suspended::new();
                self.sc.restart(&name)?;
                self.run
                    .audit
                    .record(action, Logged::Restart, StepOutcome::Ok, *pid, "");
                baseline.old_pid = *pid;
                Ok(())
            }
            Step::StopDirect { pid } => {
                crate::direct::stop_checked(self.run.stack, &self.hints, self.run.out, &|_| None)?;
                self.run
                    .out
                    .progress(&Said::DirectTakenOver { pid: *pid }.to_string());
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
        fsutil::create_dir_all(&self.run.stack.log_dir, 0o755)?;
        if let Some(dir) = self.path.parent() {
            fsutil::create_dir_all(dir, 0o755)?;
        }
        fsutil::write_atomic(self.run.lock()?, &self.path, bytes, Some(0o644))?;
        Ok(())
    }

    /// A new instance running, `/health` from its socket, its environment, the settle.
    fn verify(&self, plan: &Plan, baseline: &Baseline, timing: Timing) -> Result<Verified, Stop> {
        let t0 = Instant::now();
        let port = plan.port;
        self.run.out.waiting(
            &format!("the Host to answer /health on 127.0.0.1:{port}"),
            timing.wait,
        );
        let first = self.wait_for_instance(baseline, t0, timing)?;
        let pid = first.main_pid.unwrap_or_default();
        runner::wait_for_health(pid, port, t0 + timing.wait.max(Duration::from_secs(1)))?;
        let health_after = t0.elapsed();
        crate::verify::check_listener(port, pid).map_err(Stop::from)?;
        let record = crate::host::identity::ExecRecord::read(&self.run.stack.exec_record_path());
        let proof = crate::verify::prove_live_or_exec(
            pid,
            &plan.env,
            record.as_ref(),
            self.run.proof_floor,
        )
        .map_err(Stop::from)?
        .ok_or(Stop::Failed(Failure::Unproven))?;
        if !first.drop_in_paths.is_empty() {
            let said = Said::DropIns {
                unit: self.name.clone(),
                paths: first.drop_in_paths.clone(),
            };
            self.run.out.note(&said.to_string());
        }
        self.run.out.waiting(
            &format!("pid {pid} to stay up (a crash loop would not)"),
            timing.settle,
        );
        self.stays_up(pid, &first, timing)?;
        Ok(Verified {
            pid,
            health_after,
            env_proof: proof,
        })
    }

    /// After the settle, the same `pid` runs and systemd has not restarted the unit since it
    /// was first seen (`first`).
    fn stays_up(&self, pid: u32, first: &UnitShow, timing: Timing) -> Result<(), Stop> {
        sleep_interruptible(timing.settle)?;
        let after = self.show().map_err(|e| Stop::from(format!("{e:#}")))?;
        if after.main_pid != Some(pid) || !after.is_running() || after.n_restarts > first.n_restarts
        {
            return Err(Failure::DidNotStayUp {
                pid,
                became: after.main_pid,
                settle_ms: timing.settle.as_millis(),
                respawned: None,
            }
            .into());
        }
        Ok(())
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
            let s = self.show().map_err(|e| Stop::from(format!("{e:#}")))?;
            if s.is_running() && s.main_pid != b.old_pid {
                return Ok(s);
            }
            if s.is_failed() {
                let state = format!(
                    "{} {}, result {:?}, exit status {}",
                    self.name, s.sub_state, s.result, s.exec_main_status
                );
                return Err(Failure::NotRunning { state }.into());
            }
            if t0.elapsed() > timing.wait {
                return Err(Failure::NoNewInstance {
                    secs: timing.wait.as_secs(),
                    state: format!("{:?} {}", s.active_state, s.sub_state),
                }
                .into());
            }
            sleep_interruptible(pause)?;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    /// A signal came while a restart's new instance was being verified: systemd had stopped
    /// the old Host already, so the new one is verified to its end (the unit is the same:
    /// nothing to roll back), and the error says where the Host stands.
    fn finish_interrupted_restart(
        &self,
        action: Action,
        sig: signal::Signal,
        old: u32,
        plan: &Plan,
        baseline: &Baseline,
        timing: Timing,
    ) -> anyhow::Error {
        self.run
            .out
            .progress(&Said::InterruptedRestart { sig, old }.to_string());
        let proof = {
            let _quiet = signal::Suspended::new();
            self.verify(plan, baseline, timing)
        };
        let state = match proof {
            Ok(v) => {
                self.run
                    .audit
                    .record(action, Logged::Verify, StepOutcome::Ok, Some(v.pid), "");
                if let Some(bytes) = self.on_disk() {
                    runner::keep_as_last_good(self, &bytes);
                }
                Left::RestartVerified { old, new: v.pid }
            }
            Err(stop) => {
                let failure = match stop {
                    Stop::Failed(f) => f.to_string(),
                    Stop::Interrupted(sig) => format!("interrupted by {sig}"),
                };
                self.run
                    .audit
                    .record(action, Logged::Verify, StepOutcome::Failed, None, &failure);
                Left::RestartUnverified {
                    manager: ManagerKind::Systemd,
                    old,
                    failure,
                    status: self.hints.agent("status"),
                }
            }
        };
        crate::error::Interrupted(sig, state.to_string()).into()
    }

    /// Without linger the user manager, and the Host with it, stops when the user's last
    /// session ends: said once the Host is installed (doctor says it too).
    fn note_linger(&self) {
        let user = crate::sys::user::name_of(crate::sys::user::uid()).unwrap_or_default();
        if self.sc.linger(&user) == Some(false) {
            self.run.out.note(&Said::LingerOff { user }.to_string());
        }
    }
}

impl Job for Unit<'_> {
    type Baseline = Baseline;

    fn manager(&self) -> ManagerKind {
        ManagerKind::Systemd
    }

    fn run(&self) -> &Run<'_> {
        &self.run
    }

    /// The unit that last verified, kept for rollback.
    fn last_good_path(&self) -> PathBuf {
        self.run.stack.run_dir.join("last-good.service")
    }

    fn definitions(&mut self, plan: &Plan) -> anyhow::Result<(Option<Vec<u8>>, Vec<u8>)> {
        Ok((self.on_disk(), self.render(plan)?))
    }

    fn before_steps(&mut self, plan: &Plan, d: &Decision) -> anyhow::Result<Baseline> {
        self.run.keep_stopped = d.keep_stopped;
        self.run.config_unchanged(plan, d)?;
        Ok(Baseline {
            loads: d.steps.iter().any(|s| matches!(s, Step::Load { .. })),
            ..Baseline::default()
        })
    }

    fn take(
        &mut self,
        plan: &Plan,
        action: Action,
        step: &Step,
        new: &[u8],
        baseline: &mut Baseline,
    ) -> Result<(), Failed> {
        Ok(self.take_step(plan, step, action, new, baseline)?)
    }

    fn verify(&self, plan: &Plan, baseline: &Baseline, timing: Timing) -> Result<Verified, Stop> {
        Unit::verify(self, plan, baseline, timing)
    }

    fn was_loaded_here(&self) -> bool {
        Unit::is_loaded(&self.before)
    }

    fn verified(&self, action: Action, _new: &[u8]) {
        if matches!(action, Action::Install | Action::Setup) {
            self.note_linger();
        }
    }

    fn interrupted(
        &self,
        action: Action,
        sig: signal::Signal,
        plan: &Plan,
        baseline: &Baseline,
        timing: Timing,
    ) -> anyhow::Error {
        match baseline.old_pid {
            Some(old) => self.finish_interrupted_restart(action, sig, old, plan, baseline, timing),
            None => {
                crate::error::Interrupted(sig, "nothing about the unit was changed".into()).into()
            }
        }
    }

    fn restore(
        &mut self,
        _action: Action,
        restore: Option<Vec<u8>>,
        known_good: bool,
        timing: Timing,
    ) -> anyhow::Result<Rollback> {
        self.sc.stop(&self.name)?;
        let restored = match restore {
            Some(bytes) if self.run.keep_stopped => {
                self.write_unit(&bytes)?;
                self.sc.daemon_reload()?;
                Restored::KeptStopped {
                    start: self.hints.agent("start"),
                }
            }
            Some(bytes) => {
                self.write_unit(&bytes)?;
                self.sc.daemon_reload()?;
                self.sc.reset_failed(&self.name)?;
                self.sc.start(&self.name)?;
                let port = unit_port(&bytes, &self.run.stack.home).unwrap_or(0);
                let fresh = Baseline::default();
                let first = self.wait_for_instance(&fresh, Instant::now(), timing);
                // Healthy, and still up after the settle: a cause outside the unit (the root,
                // the machine) fells the restored Host as it did the new one.
                let healthy = first.and_then(|s| {
                    let pid = s.main_pid.unwrap_or_default();
                    runner::wait_for_health(pid, port, Instant::now() + timing.wait)?;
                    self.stays_up(pid, &s, timing).map(|()| pid)
                });
                match healthy {
                    Ok(pid) => Restored::Runs { pid },
                    Err(Stop::Failed(f)) => Restored::NotVerified {
                        failure: f.to_string(),
                    },
                    Err(Stop::Interrupted(_)) => Restored::Started,
                }
            }
            None if known_good => Restored::KeptGood {
                path: self.path.clone(),
                start: self.hints.agent("start"),
            },
            None => {
                let _ = self.sc.disable(&self.name, false);
                std::fs::remove_file(&self.path)?;
                self.sc.daemon_reload()?;
                Restored::Removed
            }
        };
        Ok(Rollback {
            manager: ManagerKind::Systemd,
            restored,
        })
    }

    fn last_exit(&self) -> Option<String> {
        None
    }

    fn status_command(&self) -> Option<String> {
        Some(format!("systemctl --user status {}", self.name))
    }

    fn hint(&self, verb: &str) -> String {
        self.hints.agent(verb)
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
