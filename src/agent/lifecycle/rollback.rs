//! After a failure or an interrupt: the last good plist restored, reloaded and verified (or,
//! with none, the new one removed), the message saying which state the Host is in; and the
//! record of what verified.

use super::*;
use crate::undo::{Journal, Revert};

/// How many lines of this attempt's Host log a failure shows.
const MAX_TAIL_LINES: usize = 20;

impl Agent<'_> {
    pub(super) fn keep_as_last_good(&self, bytes: &[u8]) {
        let Some(lock) = self.lock else {
            return;
        };
        let r = fsutil::create_dir_all(&self.stack.run_dir, 0o700)
            .and_then(|()| fsutil::write_atomic(lock, &self.last_good_path(), bytes, Some(0o600)))
            .and_then(|_| crate::service::journal::remove(&self.pending_path()));
        if let Err(e) = r {
            self.out
                .warn(&format!("could not record the verified plist: {e}"));
        }
        // The Node this verified start ran, so `doctor` can say when it changed (a privacy
        // grant given to one Node binary does not hold for the next). Advisory.
        let identity = agentplist::read_env(bytes).ok().and_then(|env| {
            crate::host::privacy::node_identity(std::path::Path::new(
                env.get(crate::host::launchenv::NODE_BIN)?,
            ))
        });
        if let Some(id) = identity {
            let _ = fsutil::write_atomic(
                lock,
                &crate::host::privacy::verified_node_path(&self.stack.run_dir),
                id.as_bytes(),
                Some(0o600),
            );
        }
    }

    pub(super) fn finish(
        &self,
        action: Action,
        v: Result<Verified, Stop>,
        plist: &[u8],
    ) -> anyhow::Result<Verified> {
        match v {
            Ok(v) => {
                self.audit
                    .record(action, Step::Verify, StepOutcome::Ok, Some(v.pid), "");
                self.keep_as_last_good(plist);
                Ok(v)
            }
            Err(Stop::Interrupted(sig)) => {
                Err(crate::error::Interrupted(sig, "nothing was changed".into()).into())
            }
            Err(Stop::Failed(f)) => {
                self.audit
                    .record(action, Step::Verify, StepOutcome::Failed, None, &f);
                Err(anyhow::anyhow!(self.failure_message(&f)))
            }
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
    ) -> anyhow::Result<String> {
        let plist = self.stack.plist_path();
        self.bootout(action)?;
        // Nothing of this stack runs now unless a restored plist starts it again: the
        // identity files the failed Host wrote would name a dead pid that Oysterun's own
        // scripts wait for (a restored Host writes its own).
        if restore.is_none() || self.keep_stopped {
            self.remove_stale_identity();
        }
        match &restore {
            Some(bytes) if self.keep_stopped => {
                agentplist::write(self.lock()?, &plist, bytes, &self.stack.log_dir)?;
                Ok(format!(
                    "the job was booted out and the plist `stop` left restored, not loaded: \
                     the Host stays stopped; `{}` loads it again once the cause is fixed",
                    self.hints.agent("start")
                ))
            }
            Some(bytes) => {
                agentplist::write(self.lock()?, &plist, bytes, &self.stack.log_dir)?;
                self.reload(action, false)?;
                let old_env = agentplist::read_env(bytes).unwrap_or_default();
                let port = old_env.port().unwrap_or(0);
                // The rollback's own verification is not cut short by the signal that
                // started it: it runs to its deadline.
                match self.verify_unattended(&old_env, port, timing) {
                    Ok(v) => Ok(format!("restored the last good plist; the previous Host runs again (pid {})", v.pid)),
                    Err(e) => Ok(format!("restored and reloaded the last good plist, but it did not verify either: {e}")),
                }
            }
            None if known_good => Ok(format!(
                "this definition verified before, so the failure is not the plist's: the job \
                 was booted out and {} kept; `{}` loads it again once the cause is fixed",
                plist.display(),
                self.hints.agent("start")
            )),
            None => {
                std::fs::remove_file(&plist)?;
                Ok(
                    "there was no earlier good plist; the new one was booted out and removed"
                        .into(),
                )
            }
        }
    }

    /// Reverts what the run journaled (the definition it replaced: the last good plist
    /// restored, reloaded and verified) and returns the error describing what failed — an
    /// interrupt included, whose rollback runs to its end before the run exits. `hint` is the
    /// fix for a cause launchd's refusal named; it stays the error's hint (else the fix a
    /// failed revert names becomes it).
    pub(super) fn roll_back(
        &mut self,
        action: Action,
        journal: Journal<Definition>,
        stop: Stop,
        hint: Option<String>,
    ) -> anyhow::Error {
        // The rollback runs to its end, whatever signal started it or comes during it.
        let _quiet = signal::Suspended::new();
        let (failure, interrupted) = match stop {
            Stop::Failed(f) => (f, None),
            Stop::Interrupted(sig) => (format!("interrupted by {sig}"), Some(sig)),
        };
        self.audit
            .record(action, Step::Verify, StepOutcome::Failed, None, &failure);
        let last_exit = self
            .poll()
            .ok()
            .flatten()
            .and_then(|i| i.last_exit().map(|e| e.to_string()))
            .unwrap_or_else(|| "unknown".into());
        self.out
            .progress(&format!("Verification stopped: {failure}. Rolling back…"));
        let undone = journal.roll_back(self);
        let rollback = undone.said.join("; ");
        if let Some(sig) = interrupted {
            return crate::error::Interrupted(sig, format!("rollback: {rollback}")).into();
        }
        let msg = format!(
            "{}\nlast exit: {last_exit}\nrollback: {rollback}",
            self.failure_message(&failure)
        );
        // A rollback launchd refused too, naming its cause: that fix is what the user needs
        // now (the Host is down), unless the change's own refusal named one already.
        let hint = hint.or_else(|| {
            undone.failures.iter().find_map(|e| {
                e.downcast_ref::<crate::error::Failed>()
                    .and_then(|f| f.hint.clone())
            })
        });
        match hint {
            Some(hint) => crate::error::Failed::new(msg, hint).into(),
            None => anyhow::anyhow!(msg),
        }
    }

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
            Err(Stop::Failed(f)) => Err(f),
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
        self.out.progress(&format!("Interrupted by {sig}; the old Host (pid {old}) is already stopped, so oyster finishes verifying the new one first…"));
        let _ = std::fs::remove_file(self.pending_path());
        let state = match self.verify_to_the_end(&plan.env, plan.port, baseline, timing) {
            Ok(v) => {
                self.audit
                    .record(action, Step::Verify, StepOutcome::Ok, Some(v.pid), "");
                self.keep_as_last_good(&plan.plist);
                format!(
                    "the restart had stopped the old Host (pid {old}); the new Host (pid {}) runs and verified",
                    v.pid
                )
            }
            Err(f) => {
                self.audit
                    .record(action, Step::Verify, StepOutcome::Failed, None, &f);
                format!(
                    "the restart had stopped the old Host (pid {old}); launchd runs the same definition again, but the new Host did not verify: {f}; `{}` shows it",
                    self.hints.agent("status")
                )
            }
        };
        crate::error::Interrupted(sig, state).into()
    }

    pub(super) fn failure_message(&self, failure: &str) -> String {
        // What this attempt wrote (the log may hold days of earlier runs, which would scroll
        // the cause away): the bytes since the run began, at most the last 20 lines. A log
        // that shrank meanwhile (rotated, truncated) is shown from its start, capped.
        let log = self.stack.log_path();
        let meta = std::fs::symlink_metadata(&log).ok();
        let len = meta.as_ref().filter(|m| m.is_file()).map_or(0, |m| m.len());
        let since = len.checked_sub(self.log_start).unwrap_or(len);
        let tail = if meta.as_ref().is_some_and(|m| !m.is_file()) {
            // A FIFO, a symlink: the reader says why it is not shown.
            verify::log_tail(&log, 16 * 1024)
        } else if since == 0 {
            "(the Host wrote nothing to its log during this attempt)".to_owned()
        } else {
            let text = verify::log_tail(&log, since.min(16 * 1024));
            let lines: Vec<&str> = text.trim_end().lines().collect();
            lines[lines.len().saturating_sub(MAX_TAIL_LINES)..].join("\n")
        };
        // The Host may have written secrets of its own since this run began, and logged them:
        // the config is read again after the log, so whatever the tail holds is known by the
        // time it is printed.
        crate::config::learn_secrets(&self.stack.config_path());
        // The next step: the log as it goes on, and more time when the wait ran out (not
        // when the Host died: waiting longer would not help).
        let ran_out = super::verification::ran_out(failure);
        let mut next = format!("`{} -f` follows the Host log", self.hints.agent("logs"));
        if ran_out {
            next.push_str(&format!(
                "; `{} --wait 60` gives the Host longer to answer",
                self.hints.agent("restart")
            ));
        }
        format!(
            "the Host did not verify: {failure}\n--- this attempt's last lines of {} ---\n{}\nnext: {next}",
            log.display(),
            tail.trim_end()
        )
    }
}

/// The definition a run replaced, journaled once its plist is written for a change that rolls
/// back. Reverting it is the lifecycle's rollback: the last good plist kept on disk (else the
/// bytes it replaced) written back, reloaded and verified, or the new one removed.
pub(super) struct Definition {
    pub(super) action: Action,
    pub(super) timing: Timing,
    /// The installed plist's bytes before this run (`None`: there was none).
    pub(super) previous: Option<Vec<u8>>,
    /// The plist this run wrote.
    pub(super) new: Vec<u8>,
    /// The port this run recorded in config.json (`--port`), as a change: put back with the
    /// definition, so the config names the port of the plist on disk again.
    pub(super) port: Option<crate::config::Change>,
}

impl Revert<Agent<'_>> for Definition {
    fn revert(self, agent: &mut Agent<'_>) -> anyhow::Result<Option<String>> {
        let Definition {
            action,
            timing,
            previous,
            new,
            port,
        } = self;
        let last_good = fsutil::read_regular(&agent.last_good_path(), agentplist::MAX_PLIST_BYTES)
            .ok()
            .flatten();
        // The definition that failed is itself a good one (it verified before, or it was the
        // installed plist already): the cause is elsewhere, so it stays on disk, not loaded.
        let known_good = last_good.as_deref() == Some(&new) || previous.as_deref() == Some(&new);
        let restore = last_good
            .filter(|b| *b != new)
            .or(previous.filter(|b| *b != new));
        // Kept on disk, the failed definition still names the port this run recorded.
        let replaced = restore.is_some() || !known_good;
        let said = agent.restore(action, restore, known_good, timing)?;
        // Rolled back: the next run has nothing to recover.
        let _ = std::fs::remove_file(agent.pending_path());
        // The definition is rolled back whatever the config says: a config.json that cannot
        // take its port back (broken by hand meanwhile) is said, not made the rollback's
        // failure (nothing is left for a next run to retry).
        match port {
            Some(change) if replaced => {
                let config = crate::host::plan::put_back_port(
                    &agent.stack.config_path(),
                    &change,
                    agent.out,
                )
                .unwrap_or_else(|e| format!("config.json's port could not be put back: {e:#}"));
                Ok(Some(format!("{said}; {config}")))
            }
            _ => Ok(Some(said)),
        }
    }

    fn failed(err: &anyhow::Error) -> String {
        format!("rollback failed too (the next run retries it): {err:#}")
    }
}
