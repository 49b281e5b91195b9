//! The one runner of a decided change, for every manager: the receipt written before each
//! step, the steps taken in order, the proof, and the rollback of a changed definition that
//! does not verify or is interrupted. A manager ([`Job`]) knows how to take a step, how to prove
//! its Host and how to restore a definition; when to roll back, what is put back, what the
//! receipt holds and what an interrupt means are decided here, once.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::journal::{self, Receipt};
use super::said::{Failure, NotVerified, Rollback, Said};
use super::{Decision, ManagerKind, Outcome, Step, Timing, Verified};
use crate::config::Change;
use crate::host::plan::Plan;
use crate::output::audit::{Action, Step as Logged, StepOutcome};
use crate::sys::fs as fsutil;
use crate::sys::signal::{self, Signal};

mod fields;
pub use fields::Run;

/// How often `/health` (cheap) and an interruptible sleep look again.
pub const HEALTH_EVERY: Duration = Duration::from_millis(20);

/// Why a verification stopped.
#[derive(Debug)]
pub enum Stop {
    Failed(Failure),
    Interrupted(Signal),
}

impl From<Failure> for Stop {
    fn from(f: Failure) -> Stop {
        Stop::Failed(f)
    }
}

impl From<String> for Stop {
    fn from(s: String) -> Stop {
        Stop::Failed(Failure::Other(s))
    }
}

impl From<&str> for Stop {
    fn from(s: &str) -> Stop {
        Stop::Failed(Failure::Other(s.to_owned()))
    }
}

/// Whether a signal came, as a proof's stop.
pub fn check_interrupt() -> Result<(), Stop> {
    sleep_interruptible(Duration::ZERO)
}

/// A run that loads, before anything is decided: a signal that came already ends it here.
pub fn refuse_interrupted() -> anyhow::Result<()> {
    signal::pause(Duration::ZERO)
        .map_err(|sig| crate::error::Interrupted(sig, "nothing was changed".into()).into())
}

/// A manager's call that failed while a signal is pending was cut short by it (its process
/// group is killed on an interrupt): that is the interrupt, not a failure.
pub fn stop_from(e: anyhow::Error) -> Stop {
    match check_interrupt() {
        Err(stop) => stop,
        Ok(()) => Stop::Failed(Failure::Other(format!("{e:#}"))),
    }
}

/// Sleeps `d`, waking for a signal ([`signal::pause`]).
pub fn sleep_interruptible(d: Duration) -> Result<(), Stop> {
    signal::pause(d).map_err(Stop::Interrupted)
}

/// Polls `/health` until 200, while the kernel still shows `pid`.
pub fn wait_for_health(pid: u32, port: u16, deadline: Instant) -> Result<(), Stop> {
    let mut last = None;
    loop {
        check_interrupt()?;
        if crate::verify::inspect(pid).is_none() {
            return Err(Failure::ExitedBeforeHealth { pid, port }.into());
        }
        last = crate::verify::health(port, Duration::from_millis(500)).or(last);
        if last == Some(200) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Failure::HealthTimeout { last, port }.into());
        }
        std::thread::sleep(HEALTH_EVERY);
    }
}

/// A step that failed, as its manager classifies it.
pub enum Failed {
    /// Before the manager began changing the job (a stop finished, the other copies booted
    /// out, `start`'s enable): the error as it is; an unfinished run's receipt stays for the
    /// next run.
    Before(anyhow::Error),
    /// While the manager changed the job: a change of the definition is rolled back; `hint`
    /// is the fix the manager's refusal named.
    Changing(anyhow::Error, Option<String>),
}

impl From<anyhow::Error> for Failed {
    fn from(e: anyhow::Error) -> Failed {
        Failed::Changing(e, None)
    }
}

/// The definition a run replaces and the one it writes, and the port change a rollback puts
/// back with it.
pub struct Generation {
    pub previous: Option<Vec<u8>>,
    pub new: Vec<u8>,
    pub port: Option<Change>,
}

/// What only a manager knows about a run.
pub trait Job {
    /// What a new instance is measured against.
    type Baseline;
    /// Which manager it is.
    fn manager(&self) -> ManagerKind;
    /// What every manager's run holds.
    fn run(&self) -> &Run<'_>;
    /// Where the definition that last verified is kept.
    fn last_good_path(&self) -> PathBuf;
    /// The definition on disk now (`None`: none) and the plan's, as bytes.
    fn definitions(&mut self, plan: &Plan) -> anyhow::Result<(Option<Vec<u8>>, Vec<u8>)>;
    /// What is said and recorded before the steps; returns the baseline the steps update.
    fn before_steps(&mut self, plan: &Plan, d: &Decision) -> anyhow::Result<Self::Baseline>;
    /// One step (`new`: the definition's bytes). The config and definition writes are this
    /// runner's to undo, whatever the error.
    fn take(
        &mut self,
        plan: &Plan,
        action: Action,
        step: &Step,
        new: &[u8],
        baseline: &mut Self::Baseline,
    ) -> Result<(), Failed>;
    /// The proof of the new instance.
    fn verify(
        &self,
        plan: &Plan,
        baseline: &Self::Baseline,
        timing: Timing,
    ) -> Result<Verified, Stop>;
    /// Whether the job was loaded where oyster acts when the run began.
    fn was_loaded_here(&self) -> bool;
    /// After a verified run, beside the last good definition (a note, a record).
    fn verified(&self, action: Action, new: &[u8]);
    /// A signal during the proof of a change that does not roll back.
    fn interrupted(
        &self,
        action: Action,
        sig: Signal,
        plan: &Plan,
        baseline: &Self::Baseline,
        timing: Timing,
    ) -> anyhow::Error;
    /// The rollback's own step: the failed definition stopped, `restore` written back and
    /// run again (or kept, or the new one removed). Says what it did.
    fn restore(
        &mut self,
        action: Action,
        restore: Option<Vec<u8>>,
        known_good: bool,
        timing: Timing,
    ) -> anyhow::Result<Rollback>;
    /// A line about the failed instance, asked before the rollback (launchd's last exit).
    fn last_exit(&self) -> Option<String>;
    /// The manager's own look at the job a failure suggests (`systemctl --user status NAME`).
    fn status_command(&self) -> Option<String>;
    /// The command a failure suggests, in the form the user typed (`logs`, `restart`).
    fn hint(&self, verb: &str) -> String;
}

/// Takes the decided steps in order, the receipt written before each, and proves the Host:
/// a changed definition that does not verify, or is interrupted, is rolled back.
pub fn run<J: Job>(
    job: &mut J,
    plan: &Plan,
    action: Action,
    d: &Decision,
    timing: Timing,
) -> anyhow::Result<Outcome> {
    let stack = job.run().stack;
    let receipt_path = stack.pending_path();
    let pending = receipt_path.exists();
    if pending {
        job.run().out.progress(
            &Said::Recovering {
                manager: job.manager(),
            }
            .to_string(),
        );
    }
    let port = port_change(&receipt_path, plan, pending);
    // What the steps need is read before the receipt is written: a run that cannot render its
    // definition or read its job leaves no receipt that would send the next run recovering.
    let (previous, new) = job.definitions(plan)?;
    let mut baseline = job.before_steps(plan, d)?;
    let mut receipt = match d.reload || pending {
        true => {
            let r = Receipt::of(
                &action.to_string(),
                d,
                port.as_ref(),
                &job.run().stack.config_path(),
            );
            r.write(job.run().lock()?, &receipt_path)?;
            Some(r)
        }
        false => None,
    };
    let generation = Generation {
        previous,
        new,
        port,
    };
    for (i, step) in d.steps.iter().enumerate() {
        interrupted_before_any_step(i, &receipt_path, pending)?;
        if let Some(r) = receipt.as_mut() {
            // A receipt that cannot be written once steps were taken (a full disk): the change
            // is rolled back like a step that failed, not left half made (the Host down after
            // its bootout).
            match job
                .run()
                .lock()
                .and_then(|l| r.advance(i, l, &receipt_path))
            {
                Err(e) if i > 0 && d.change.rolls_back() => {
                    let stop = Stop::from(format!("{e:#}"));
                    return Err(roll_back(job, action, generation, stop, None, timing));
                }
                r => r?,
            }
        }
        let failed = match job.take(plan, action, step, &generation.new, &mut baseline) {
            Ok(()) => continue,
            Err(Failed::Before(e) | Failed::Changing(e, _))
                if matches!(
                    step,
                    Step::WriteConfig { .. } | Step::WriteDefinition { .. }
                ) =>
            {
                let stack = job.run().stack;
                return Err(journal::undo_writes(
                    e,
                    (&stack.config_path(), &receipt_path),
                    generation.port.as_ref(),
                    pending,
                    job.manager().as_str(),
                    job.run().out,
                ));
            }
            Err(failed) => failed,
        };
        return Err(match failed {
            Failed::Changing(e, hint) if d.change.rolls_back() => {
                let stop = stop_from(e);
                roll_back(job, action, generation, stop, hint, timing)
            }
            Failed::Before(e) | Failed::Changing(e, _) => e,
        });
    }
    let proof = job.verify(plan, &baseline, timing);
    conclude(job, plan, action, d, proof, (generation, baseline), timing)
}

/// Before the first step (`step` 0), a signal that came while the run was still looking (a
/// manager's call it cut short and that the decision took as "no answer") ends it: nothing has
/// been taken, so nothing is rolled back and the running Host is left alone (this run's
/// receipt goes; an unfinished earlier run's stays).
fn interrupted_before_any_step(
    step: usize,
    receipt: &std::path::Path,
    pending: bool,
) -> anyhow::Result<()> {
    if step > 0 {
        return Ok(());
    }
    signal::pause(Duration::ZERO).map_err(|sig| {
        if !pending {
            let _ = journal::remove(receipt);
        }
        crate::error::Interrupted(sig, "nothing was changed".into()).into()
    })
}

/// The proof's outcome: the definition kept as the last good one, or rolled back (a changed
/// one), or the failure said (an unchanged one: nothing to roll back to).
fn conclude<J: Job>(
    job: &mut J,
    plan: &Plan,
    action: Action,
    d: &Decision,
    proof: Result<Verified, Stop>,
    (generation, baseline): (Generation, J::Baseline),
    timing: Timing,
) -> anyhow::Result<Outcome> {
    let receipt_path = job.run().stack.pending_path();
    match proof {
        Ok(v) => {
            job.run()
                .audit
                .record(action, Logged::Verify, StepOutcome::Ok, Some(v.pid), "");
            keep_as_last_good(job, &generation.new);
            job.verified(action, &generation.new);
            Ok(Outcome {
                verified: v,
                reloaded: d.reload,
                was_loaded: job.was_loaded_here(),
            })
        }
        Err(stop) if d.change.rolls_back() => {
            Err(roll_back(job, action, generation, stop, None, timing))
        }
        // Nothing about the definition changed (a restart or a start of the same one): there
        // is nothing to roll back to. The failure is said; the job stays as it is.
        Err(Stop::Interrupted(sig)) => {
            let _ = journal::remove(&receipt_path);
            Err(job.interrupted(action, sig, plan, &baseline, timing))
        }
        Err(Stop::Failed(f)) => {
            let _ = journal::remove(&receipt_path);
            let failure = f.to_string();
            job.run()
                .audit
                .record(action, Logged::Verify, StepOutcome::Failed, None, &failure);
            Err(anyhow::anyhow!(failure_message(job, &f)))
        }
    }
}

/// The port change a rollback puts back ([`journal::port_to_put_back`]): this run's, reaching
/// back to an unfinished earlier run's.
fn port_change(receipt: &std::path::Path, plan: &Plan, pending: bool) -> Option<Change> {
    let now = plan
        .changes
        .iter()
        .find(|c| c.key == crate::config::PORT_KEY)
        .cloned();
    let earlier = pending
        .then(|| journal::read(receipt))
        .flatten()
        .and_then(|r| r.port_edit());
    journal::port_to_put_back(earlier, now, plan.port)
}

/// The definition that verified, kept for a later rollback; the receipt removed.
pub fn keep_as_last_good<J: Job + ?Sized>(job: &J, bytes: &[u8]) {
    let run = job.run();
    let Ok(lock) = run.lock() else { return };
    let stack = run.stack;
    let r = fsutil::create_dir_all(&stack.run_dir, 0o700)
        .and_then(|()| fsutil::write_atomic(lock, &job.last_good_path(), bytes, Some(0o600)))
        .and_then(|_| journal::remove(&stack.pending_path()));
    if let Err(e) = r {
        let what = match job.manager() {
            ManagerKind::Systemd => "unit",
            _ => "plist",
        };
        run.out
            .warn(&format!("could not record the verified {what}: {e}"));
    }
}

/// After a failure or an interrupt: the definition this run wrote rolled back to the last good
/// one (else the one it replaced), the port put back with it, to its end whatever signal
/// comes; the error says what failed and where the Host stands.
fn roll_back<J: Job>(
    job: &mut J,
    action: Action,
    g: Generation,
    stop: Stop,
    hint: Option<String>,
    timing: Timing,
) -> anyhow::Error {
    let _quiet = signal::Suspended::new();
    let (failure, interrupted) = match stop {
        Stop::Failed(f) => (f, None),
        Stop::Interrupted(sig) => (Failure::Other(format!("interrupted by {sig}")), Some(sig)),
    };
    let failure_kind = failure;
    let failure = failure_kind.to_string();
    job.run()
        .audit
        .record(action, Logged::Verify, StepOutcome::Failed, None, &failure);
    let last_exit = job.last_exit();
    job.run()
        .out
        .progress(&format!("Verification stopped: {failure}. Rolling back…"));
    let (said, failed) = match revert(job, action, g, timing) {
        Ok(said) => (said, None),
        Err(e) => (
            format!("rollback failed too (the next run retries it): {e:#}"),
            Some(e),
        ),
    };
    let outcome = match failed {
        Some(_) => StepOutcome::Failed,
        None => StepOutcome::Done,
    };
    job.run()
        .audit
        .record(action, Logged::Rollback, outcome, None, &said);
    if let Some(sig) = interrupted {
        return crate::error::Interrupted(sig, format!("rollback: {said}")).into();
    }
    let last_exit = last_exit.map_or_else(String::new, |l| format!("\n{l}"));
    let msg = format!(
        "{}{last_exit}\nrollback: {said}",
        failure_message(job, &failure_kind)
    );
    // A rollback the manager refused too, naming its cause: that fix is what the user needs
    // now (the Host is down), unless the change's own refusal named one already.
    let hint = hint.or_else(|| {
        failed.as_ref().and_then(|e| {
            e.downcast_ref::<crate::error::Failed>()
                .and_then(|f| f.hint.clone())
        })
    });
    match hint {
        Some(hint) => crate::error::Failed::new(msg, hint).into(),
        None => anyhow::anyhow!(msg),
    }
}

/// The rollback's revert: the last good definition kept on disk (else the bytes this run
/// replaced) restored; a failed definition that is itself a good one (it verified before, or
/// was installed already) kept, not run; one that never was removed. The receipt goes and the
/// port is put back only once that is done (else the next run retries it all).
fn revert<J: Job>(
    job: &mut J,
    action: Action,
    g: Generation,
    timing: Timing,
) -> anyhow::Result<String> {
    let Generation {
        previous,
        new,
        port,
    } = g;
    let last_good = fsutil::read_regular(&job.last_good_path(), 1024 * 1024)
        .ok()
        .flatten();
    let known_good = last_good.as_deref() == Some(&new) || previous.as_deref() == Some(&new);
    let restore = last_good
        .filter(|b| *b != new)
        .or(previous.filter(|b| *b != new));
    // Kept on disk, the failed definition still names the port this run recorded. Replaced,
    // its port goes back first, so that the restored Host starts with a config.json that
    // matches its definition (its launch would otherwise say the environment differs). A
    // restore that then fails keeps the receipt: the next run loads the old definition again.
    // The definition is rolled back whatever the config says: a config.json that cannot take
    // its port back (broken by hand meanwhile) is said, not made the rollback's failure.
    let replaced = restore.is_some() || !known_good;
    let config = port.filter(|_| replaced).map(|change| {
        crate::host::plan::put_back_port(&job.run().stack.config_path(), &change, job.run().out)
            .unwrap_or_else(|e| format!("config.json's port could not be put back: {e:#}"))
    });
    let said = job
        .restore(action, restore, known_good, timing)?
        .to_string();
    let _ = journal::remove(&job.run().stack.pending_path());
    Ok(match config {
        Some(config) => format!("{said}; {config}"),
        None => said,
    })
}

/// How many lines of this attempt's Host log a failure shows.
const MAX_TAIL_LINES: usize = 20;

/// A failed proof as the user reads it: why, what this attempt wrote to the Host log (the log
/// may hold days of earlier runs, which would scroll the cause away: the bytes since the run
/// began, at most the last 20 lines; a log that shrank meanwhile is shown from its start), and
/// the next step.
pub fn failure_message<J: Job + ?Sized>(job: &J, failure: &Failure) -> String {
    let stack = job.run().stack;
    let log = stack.log_path();
    let meta = std::fs::symlink_metadata(&log).ok();
    let len = meta.as_ref().filter(|m| m.is_file()).map_or(0, |m| m.len());
    let since = len.checked_sub(job.run().log_start).unwrap_or(len);
    let tail = if meta.as_ref().is_some_and(|m| !m.is_file()) {
        // A FIFO, a symlink: the reader says why it is not shown.
        Some(crate::verify::log_tail(&log, 16 * 1024))
    } else if since == 0 {
        None
    } else {
        let text = crate::verify::log_tail(&log, since.min(16 * 1024));
        let lines: Vec<&str> = text.trim_end().lines().collect();
        Some(lines[lines.len().saturating_sub(MAX_TAIL_LINES)..].join("\n"))
    };
    // The Host may have written secrets of its own since this run began, and logged them: the
    // config is read again after the log, so whatever the tail holds is known by the time it
    // is printed.
    crate::config::learn_secrets(&stack.config_path());
    // The next step: the log as it goes on, and more time when the wait ran out (not when the
    // Host died: waiting longer would not help).
    NotVerified {
        failure: failure.clone(),
        log,
        tail,
        logs: job.hint("logs"),
        restart: failure.ran_out().then(|| job.hint("restart")),
        status: job.status_command(),
    }
    .to_string()
}
