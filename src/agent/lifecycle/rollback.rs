//! launchd's part of the one runner ([`crate::service::run`]): its steps, its proof, and its
//! restore after a failure or an interrupt (the last good plist reloaded and verified, or,
//! with none, the new one removed); the record of the Node that verified.

use super::*;
use crate::service::run::{self as runner, Failed, Job, Run, Stop};
use crate::service::said::{Left, Restored, Rollback, Said};
use crate::service::{Decision, ManagerKind};

impl Agent<'_> {
    /// Verification for a rollback: signals are not polled (the rollback must finish).
    pub(super) fn verify_unattended(
        &self,
        env: &LaunchEnv,
        port: u16,
        timing: Timing,
    ) -> Result<Verified, String> {
        let fresh = Baseline {
            runs: Some(0),
            ..Baseline::default()
        };
        self.verify_to_the_end(env, port, fresh, timing)
    }

    /// Verification that no signal cuts short.
    pub(super) fn verify_to_the_end(
        &self,
        env: &LaunchEnv,
        port: u16,
        baseline: Baseline,
        timing: Timing,
    ) -> Result<Verified, String> {
        let _quiet = signal::Suspended::new();
        match self.verify(env, port, baseline, timing) {
            Ok(v) => Ok(v),
            Err(Stop::Failed(f)) => Err(f.to_string()),
            Err(Stop::Interrupted(sig)) => Err(format!("interrupted by {sig}")),
        }
    }

    /// A signal came while a restart's new instance was being verified: the old Host is gone
    /// already, so the new one is verified to its end (nothing to roll back: the definition is
    /// the same), and the message says exactly that.
    pub(super) fn finish_interrupted_restart(
        &self,
        action: Action,
        sig: Signal,
        old: u32,
        baseline: Baseline,
        plan: &Plan,
        timing: Timing,
    ) -> anyhow::Error {
        self.run
            .out
            .progress(&Said::InterruptedRestart { sig, old }.to_string());
        let state = match self.verify_to_the_end(&plan.env, plan.port, baseline, timing) {
            Ok(v) => {
                self.run
                    .audit
                    .record(action, Step::Verify, StepOutcome::Ok, Some(v.pid), "");
                runner::keep_as_last_good(self, &plan.plist);
                self.record_node(&plan.plist);
                Left::RestartVerified { old, new: v.pid }
            }
            Err(f) => {
                self.run
                    .audit
                    .record(action, Step::Verify, StepOutcome::Failed, None, &f);
                Left::RestartUnverified {
                    manager: ManagerKind::Launchd,
                    old,
                    failure: f,
                    status: self.hints.agent("status"),
                }
            }
        };
        crate::error::Interrupted(sig, state.to_string()).into()
    }
}

impl Agent<'_> {
    /// The Node this verified start ran, so `doctor` can say when it changed (a privacy grant
    /// given to one Node binary does not hold for the next). Advisory.
    fn record_node(&self, plist: &[u8]) {
        let Ok(lock) = self.run.lock() else { return };
        let identity = agentplist::read_env(plist).ok().and_then(|env| {
            crate::host::privacy::node_identity(std::path::Path::new(
                env.get(crate::host::launchenv::NODE_BIN)?,
            ))
        });
        if let Some(id) = identity {
            let _ = fsutil::write_atomic(
                lock,
                &crate::host::privacy::verified_node_path(&self.run.stack.run_dir),
                id.as_bytes(),
                Some(0o600),
            );
        }
    }
}

impl Job for Agent<'_> {
    type Baseline = Baseline;

    fn manager(&self) -> ManagerKind {
        ManagerKind::Launchd
    }

    fn run(&self) -> &Run<'_> {
        &self.run
    }

    /// The plist that last verified, kept on disk for rollback.
    fn last_good_path(&self) -> std::path::PathBuf {
        self.run.stack.last_good_plist_path()
    }

    fn definitions(&mut self, plan: &Plan) -> anyhow::Result<(Option<Vec<u8>>, Vec<u8>)> {
        let previous = plan.installed.as_ref().map(|i| i.bytes.clone());
        Ok((previous, plan.plist.clone()))
    }

    fn before_steps(&mut self, plan: &Plan, d: &Decision) -> anyhow::Result<Baseline> {
        self.replaced = self.peek_before()?;
        self.run.keep_stopped = d.keep_stopped;
        self.say_before_steps(plan, d)?;
        Ok(Baseline::of(self.replaced.as_ref()))
    }

    fn take(
        &mut self,
        plan: &Plan,
        action: Action,
        step: &crate::service::Step,
        _new: &[u8],
        baseline: &mut Baseline,
    ) -> Result<(), Failed> {
        self.take_step(plan, action, step, baseline)
    }

    fn verify(&self, plan: &Plan, baseline: &Baseline, timing: Timing) -> Result<Verified, Stop> {
        Agent::verify(self, &plan.env, plan.port, baseline.clone(), timing)
    }

    fn was_loaded_here(&self) -> bool {
        self.replaced.is_some()
    }

    fn verified(&self, _action: Action, new: &[u8]) {
        self.record_node(new);
    }

    fn interrupted(
        &self,
        action: Action,
        sig: Signal,
        plan: &Plan,
        baseline: &Baseline,
        timing: Timing,
    ) -> anyhow::Error {
        match baseline.old_pid {
            Some(old) => {
                self.finish_interrupted_restart(action, sig, old, baseline.clone(), plan, timing)
            }
            None => crate::error::Interrupted(sig, "nothing was changed".into()).into(),
        }
    }

    /// The rollback's own step: boot the failed definition out, then write back the plist to
    /// restore (loading and verifying it, unless `stop` left the stack stopped), keep a
    /// definition that verified before, or remove one that never did. Says what it did.
    fn restore(
        &mut self,
        action: Action,
        restore: Option<Vec<u8>>,
        known_good: bool,
        timing: Timing,
    ) -> anyhow::Result<Rollback> {
        let plist = self.run.stack.plist_path();
        self.bootout(action)?;
        // Nothing of this stack runs now unless a restored plist starts it again: the
        // identity files the failed Host wrote would name a dead pid that Oysterun's own
        // scripts wait for (a restored Host writes its own).
        if restore.is_none() || self.run.keep_stopped {
            self.remove_stale_identity();
        }
        let restored = match &restore {
            Some(bytes) if self.run.keep_stopped => {
                agentplist::write(self.run.lock()?, &plist, bytes, &self.run.stack.log_dir)?;
                Restored::KeptStopped {
                    start: self.hints.agent("start"),
                }
            }
            Some(bytes) => {
                agentplist::write(self.run.lock()?, &plist, bytes, &self.run.stack.log_dir)?;
                self.reload(action, false)?;
                let old_env = agentplist::read_env(bytes).unwrap_or_default();
                let port = old_env.port().unwrap_or(0);
                // The rollback's own verification is not cut short by the signal that
                // started it: it runs to its deadline.
                match self.verify_unattended(&old_env, port, timing) {
                    Ok(v) => Restored::Runs { pid: v.pid },
                    Err(failure) => Restored::NotVerified { failure },
                }
            }
            None if known_good => Restored::KeptGood {
                path: plist,
                start: self.hints.agent("start"),
            },
            None => {
                std::fs::remove_file(&plist)?;
                Restored::Removed
            }
        };
        Ok(Rollback {
            manager: ManagerKind::Launchd,
            restored,
        })
    }

    fn last_exit(&self) -> Option<String> {
        let last_exit = self
            .poll()
            .ok()
            .flatten()
            .and_then(|i| i.last_exit().map(|e| e.to_string()))
            .unwrap_or_else(|| "unknown".into());
        Some(format!("last exit: {last_exit}"))
    }

    fn status_command(&self) -> Option<String> {
        None
    }

    fn hint(&self, verb: &str) -> String {
        self.hints.agent(verb)
    }
}
