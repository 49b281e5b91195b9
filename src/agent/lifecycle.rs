//! The LaunchAgent lifecycle (docs/behaviour.md §5, §9): load, reload or restart the job, prove the
//! restarted Host runs with the generated environment, and roll back when it does not — also
//! when the run is interrupted, and, through a `pending` marker, after a run that was killed.
//!
//! `kickstart -k` never re-reads a plist, so any change to the definition — on disk, or a loaded
//! definition that no longer matches the generator — goes through enable, bootout, a wait until
//! the label is gone, and bootstrap. An unchanged job restarts gracefully: `launchctl kill
//! SIGTERM`, a wait of up to its exit timeout, then `kickstart` (SIGKILL only as a last resort).

use std::time::{Duration, Instant};

use crate::context::Context;
use crate::host::identity::ExecRecord;
use crate::host::launchenv::LaunchEnv;
use crate::host::plan::Plan;
use crate::host::plist as agentplist;
use crate::launchctl::{
    self, Code, Domain, DomainChoice, JobState, LastExit, Launchctl, PrintInfo,
};
use crate::output::audit::{Action, Step, StepOutcome};
use crate::sys::fs::{self as fsutil, Lock};
use crate::sys::signal::{self, Signal};
use crate::verify;

/// How long oyster waits for a booted-out label to disappear.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(20);
/// A bootout drain longer than this is said aloud (exit notice plus drain is ~0.4 s on an
/// ordinary day; only a wait a user would wonder about gets a line).
const SAY_WAIT_AFTER: Duration = Duration::from_secs(1);
/// How long bootstrap is retried while launchd reports 5/37 (loaded or still draining).
const BOOTSTRAP_RETRY: Duration = Duration::from_secs(20);
/// How long a bootstrap refused with 5/37 while `print` shows the label **not** loaded is
/// retried before the causes are looked for: nothing is draining, so waiting longer only
/// delays the answer (issue 29 item 3).
const NOT_LOADED_RETRY: Duration = Duration::from_secs(2);
/// `launchctl print` is a process start on a Mac: polled with a back-off from this…
const PRINT_FIRST: Duration = Duration::from_millis(50);
/// …to this (never more than ~5 a second for long).
const PRINT_MAX: Duration = Duration::from_millis(500);
/// How long a restart waits for launchd to notice the old instance's exit and start a new one.
const EXIT_NOTICE_BOUND: Duration = Duration::from_secs(5);

/// Pauses that double from `first` up to `max`.
struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    fn new(first: Duration, max: Duration) -> Backoff {
        Backoff { next: first, max }
    }
    fn next(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        d
    }
}

pub use crate::service::{Outcome, Timing, Verified};

pub use crate::verify::EnvProof;

mod load;
mod restart;
mod rollback;
mod run;
mod seam;
mod verification;

use verification::{generated_keys_match, Baseline};

/// The launchd side of one stack.
pub struct Agent<'a> {
    pub lc: &'a Launchctl,
    /// The domain chosen when the run began (`gui/<uid>` when it exists).
    pub domain: DomainChoice,
    active: Domain,
    /// Every domain the label was loaded in when the run began, with its `print`.
    copies: Vec<(Domain, PrintInfo)>,
    /// The first `print` of the job in the chosen domain, until [`Agent::before`] takes it.
    before: Option<Option<PrintInfo>>,
    /// What every manager's run holds: the stack, its audit log and lock, the proofs allowed…
    pub run: Run<'a>,
    /// Commands the lifecycle suggests, in the form the user typed (beside the run, not in it:
    /// `service` does not import the context, whose type this is).
    pub hints: crate::context::Hints,
    /// The job a run that loads replaces, as it was before its steps.
    replaced: Option<PrintInfo>,
}

use crate::service::run::{
    check_interrupt, sleep_interruptible, stop_from, Job, Run, Stop, HEALTH_EVERY,
};

impl<'a> Agent<'a> {
    /// Locates launchctl and the domain, saying aloud when it falls back to `user/<uid>` or
    /// finds the job loaded in the other domain. `lock` is the stack's lifecycle lock.
    pub fn new(ctx: &'a Context, lock: &'a Lock) -> anyhow::Result<Agent<'a>> {
        Agent::located(ctx, Some(lock))
    }

    /// An agent that only observes and decides (`--dry-run`): it holds no lock and takes no
    /// step.
    pub fn observer(ctx: &'a Context) -> anyhow::Result<Agent<'a>> {
        Agent::located(ctx, None)
    }

    fn located(ctx: &'a Context, lock: Option<&'a Lock>) -> anyhow::Result<Agent<'a>> {
        // Another oyster held the lock first: what this run saw of launchd before may be stale.
        let lc = ctx.launchctl()?;
        if lock.is_some_and(Lock::waited) {
            lc.forget_prints();
        }
        let stack = &ctx.stack;
        if !lc.overridden && crate::sys::user::euid() == 0 {
            let root = crate::service::said::Declined::Root {
                manager: crate::service::ManagerKind::Launchd,
            };
            return Err(crate::error::Invalid::from(root).into());
        }
        if lc.overridden || lc.timeout != Duration::from_secs(30) {
            ctx.out.note(&format!("using launchctl {}", lc.describe()));
        }
        // One `print` per domain answers everything: whether `gui/<uid>` exists (112/125
        // when there is no console session), and where the label is loaded (a job in
        // `user/<uid>` is invisible in `gui/<uid>`, and a console login can load a second copy).
        let both = lc.in_both_domains(&stack.label)?;
        // Issue 39 item 4: the console's owner decides too (nobody, or another user, there).
        let domain = both.choice_at(ctx.console()?);
        if let Some(note) = &domain.fallback_note {
            ctx.out.note(note);
        }
        let copies: Vec<(Domain, PrintInfo)> = both
            .loaded()
            .into_iter()
            .map(|(d, i)| (d, i.clone()))
            .collect();
        let before = copies
            .iter()
            .find(|(d, _)| *d == domain.name)
            .map(|(_, i)| i.clone());
        Ok(Agent {
            lc,
            active: domain.name,
            domain,
            copies,
            before: Some(before),
            run: Run::new(ctx.into(), ctx.env.proof_floor, lock),
            hints: ctx.hints(),
            replaced: None,
        })
    }

    /// The domain oyster acts in now: the chosen one, or `user/<uid>` after a `gui/<uid>`
    /// bootstrap was refused for the session.
    pub fn active(&self) -> Domain {
        self.active
    }

    pub fn target(&self) -> String {
        self.active().target(&self.run.stack.label)
    }

    /// The job's `print` now: for waits that poll for a change.
    fn poll(&self) -> anyhow::Result<Option<PrintInfo>> {
        self.lc.print_now(&self.target())
    }

    /// The job as it was when this run began: the `print` taken by [`Agent::new`] the first
    /// time (no second process start for the same fact), a fresh one afterwards.
    pub fn before(&mut self) -> anyhow::Result<Option<PrintInfo>> {
        match self.before.take() {
            Some(first) => Ok(first),
            None => self.poll(),
        }
    }

    /// The job wherever it is loaded: in the domain oyster acts in (the first `print`, as
    /// [`Agent::before`]), else in the other one. A job loaded in `user/<uid>` while
    /// `gui/<uid>` exists (oyster's own fallback after a 125, or a console `stop` then an SSH
    /// `start`) is the stack's Host all the same: every verb that reads the job (`kill`,
    /// `stop`, `agent regenerate`) asks through this one function.
    pub fn job(&mut self) -> anyhow::Result<Option<(Domain, PrintInfo)>> {
        if let Some(info) = self.before()? {
            return Ok(Some((self.active(), info)));
        }
        let other = self.active().other();
        Ok(self
            .lc
            .print_job(other, &self.run.stack.label)?
            .ok()
            .map(|info| (other, info)))
    }

    /// Whether the label was loaded in either domain when the run began.
    pub fn was_loaded(&self) -> bool {
        !self.copies.is_empty()
    }

    /// The job as the run found it loaded in the domain oyster acts in.
    pub fn loaded_here(&self) -> Option<&PrintInfo> {
        let active = self.active();
        self.copies
            .iter()
            .find(|(d, _)| *d == active)
            .map(|(_, i)| i)
    }

    /// Forgets the first `print` (the job changed since: [`Agent::before`] asks again).
    pub fn forget_before(&mut self) {
        self.before = None;
    }

    /// Every copy of the label loaded when the run began (`gui/<uid>` first); two means
    /// loaded twice.
    pub fn copies(&self) -> &[(Domain, PrintInfo)] {
        &self.copies
    }

    /// Copies of the label loaded in the other domain than the one oyster acts in (installed
    /// over SSH into `user/<uid>`, then a console login loaded the plist into `gui/<uid>`).
    pub fn other_copies(&self) -> impl Iterator<Item = &(Domain, PrintInfo)> {
        let active = self.active();
        self.copies.iter().filter(move |(d, _)| *d != active)
    }

    /// Whether the loaded job runs the definition the plan generates (the stale-definition trap:
    /// a plist edited or replaced behind oyster's back): our plist's path, the launch program
    /// (`<oyster> host exec --stack NAME`) as program and arguments, and the generated keys of
    /// the environment (launchd adds keys of its own to the printed environment).
    pub fn loaded_matches(&self, info: &PrintInfo, plan: &Plan) -> bool {
        let plist = self.run.stack.plist_path();
        let launcher = plan.launcher.to_string_lossy();
        let arguments: Vec<String> = std::iter::once(launcher.clone().into_owned())
            .chain(plan.launch_arguments(&self.run.stack.name))
            .collect();
        info.path() == Some(plist.as_path())
            && info.get("program") == Some(launcher.as_ref())
            && info.arguments == arguments
            && generated_keys_match(info, &plan.env)
    }

    /// The run's receipt (`<run dir>/pending`, [`crate::service::journal`]).
    pub(super) fn pending_path(&self) -> std::path::PathBuf {
        self.run.stack.pending_path()
    }

    /// Whether a previous run was interrupted before its change verified.
    pub fn pending(&self) -> bool {
        self.pending_path().exists()
    }

    /// Boots the job out (waiting until it is gone) and removes the plist; keeps config, history
    /// and logs.
    pub fn uninstall(&mut self) -> anyhow::Result<bool> {
        // Ctrl-C while launchd stops a slow Host: the plist is removed all the same (else
        // launchd loads it again at the next login), then the interrupt is said.
        let _guard = signal::InterruptGuard::install();
        let before = self.before()?;
        let loaded = before.is_some();
        if loaded {
            crate::service::journal::step_boundary();
        }
        let booted_out = (|| -> anyhow::Result<()> {
            let _ = self.boot_out_other_copies(Action::Uninstall)?;
            if let Some(info) = &before {
                self.bootout_in(self.active(), Action::Uninstall, info.pid())?;
            }
            Ok(())
        })();
        let interrupted = signal::cut_short(booted_out)?;
        let _rest = interrupted.map(|_| signal::Suspended::new());
        // `agent stop` disabled the label; an uninstalled label must not stay disabled, or the
        // next installer (Oysterun's own, which never enables) gets a bare 5 from bootstrap.
        // Enabled before the plist goes: a run killed in between leaves the plist, so the next
        // `uninstall` does it all again (the other way round it would find nothing installed
        // and leave the label disabled).
        crate::service::journal::step_boundary();
        for d in Domain::both() {
            let _ = self.lc.enable(d, &self.run.stack.label);
        }
        let plist = self.run.stack.plist_path();
        crate::service::journal::step_boundary();
        match std::fs::remove_file(&plist) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => anyhow::bail!("could not remove {}: {e}", plist.display()),
        }
        for f in [self.pending_path(), Job::last_good_path(self)] {
            let _ = std::fs::remove_file(f);
        }
        self.remove_stale_identity();
        self.run.audit.record(
            Action::Uninstall,
            Step::RemovePlist,
            StepOutcome::Ok,
            None,
            "",
        );
        if let Some(sig) = interrupted {
            let left = crate::service::said::Left::Uninstalled {
                label: self.run.stack.label.clone(),
                plist,
            };
            return Err(crate::error::Interrupted(sig, left.to_string()).into());
        }
        Ok(loaded)
    }
}

impl Agent<'_> {
    /// After the Host is gone (bootout waited for it), the identity files `host exec` wrote
    /// would name a dead pid; Oysterun's runner removes them on exit, and so does oyster.
    pub fn remove_stale_identity(&self) {
        // Read through the regular-file reader (a FIFO there must not hang stop/uninstall).
        let _ = crate::host::identity::remove_if_dead(self.run.stack);
    }
}

#[cfg(test)]
mod tests;
