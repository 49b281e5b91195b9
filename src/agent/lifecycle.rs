//! The LaunchAgent lifecycle (CONTRACT.md §5, §9): load, reload or restart the job, prove the
//! restarted Host runs with the generated environment, and roll back when it does not — also
//! when the run is interrupted, and, through a `pending` marker, after a run that was killed.
//!
//! `kickstart -k` never re-reads a plist, so any change to the definition — on disk, or a loaded
//! definition that no longer matches the generator — goes through enable, bootout, a wait until
//! the label is gone, and bootstrap. An unchanged job restarts gracefully: `launchctl kill
//! SIGTERM`, a wait of up to its exit timeout, then `kickstart` (SIGKILL only as a last resort).

use std::time::{Duration, Instant};

use std::cell::{Cell, RefCell};

use crate::agent::launchctl::{
    self, Code, Domain, DomainChoice, JobState, LastExit, Launchctl, PrintInfo,
};
use crate::context::Context;
use crate::host::identity::ExecRecord;
use crate::host::launchenv::LaunchEnv;
use crate::host::plan::Plan;
use crate::host::plist as agentplist;
use crate::host::stack::Stack;
use crate::output::audit::{Action, Audit, Step, StepOutcome};
use crate::sys::fs::{self as fsutil, Lock};
use crate::sys::signal::{self, Signal};
use crate::verify;

/// How long oyster waits for a booted-out label to disappear.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(20);
/// How long bootstrap is retried while launchd reports 5/37 (loaded or still draining).
const BOOTSTRAP_RETRY: Duration = Duration::from_secs(20);
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

/// The new instance as launchd described it: `kickstart -p`'s pid in the definition that was
/// loaded before (a restart only kickstarts a job whose loaded definition matched the plan, and
/// kickstart never re-reads a plist), with one more run. `None` without a pid or a definition:
/// verification then asks `print`.
fn spawned(before: Option<&PrintInfo>, pid: Option<u32>) -> Option<(u32, PrintInfo)> {
    let (before, pid) = (before?, pid?);
    let mut info = before.clone();
    info.fields.insert("pid".into(), pid.to_string());
    info.fields.insert("state".into(), "running".into());
    if let Some(runs) = before.runs() {
        info.fields.insert("runs".into(), (runs + 1).to_string());
    }
    Some((pid, info))
}

/// What was true before this run's change: crash evidence counts only what came after it.
#[derive(Debug, Clone, Default)]
struct Baseline {
    /// The instance being replaced (a new one must have another pid).
    old_pid: Option<u32>,
    /// The job's `runs` before the new instance.
    runs: Option<u32>,
    /// The job's last exit before the change: seen again, it is the old instance's, not ours.
    last_exit: Option<LastExit>,
    /// Signals oyster itself sent to the old instance (its death by them is no crash).
    sent: Vec<i32>,
    /// The new instance, when the restart already saw it in a `print`.
    started: Option<(u32, PrintInfo)>,
}

impl Baseline {
    /// Measured from the job as it is (nothing replaced).
    fn of(info: Option<&PrintInfo>) -> Baseline {
        Baseline {
            runs: info.and_then(PrintInfo::runs),
            last_exit: info.and_then(PrintInfo::last_exit),
            ..Baseline::default()
        }
    }

    /// Whether `info` shows this instance crashed: launchd spawned since the baseline, the job
    /// is not running, and an exit that is not the old instance's (nor a signal oyster sent)
    /// or a crash count says so.
    fn crashed(&self, info: &PrintInfo) -> bool {
        let ours = info.runs().unwrap_or(0) > self.runs.unwrap_or(0);
        let exit_is_evidence = info.last_exit().is_some_and(|e| {
            e.failed()
                && Some(e) != self.last_exit
                && !e.signal().is_some_and(|s| self.sent.contains(&s))
        });
        ours && info.job_state() != JobState::Running
            && (exit_is_evidence || info.successive_crashes().is_some_and(|n| n > 0))
    }
}
/// `/health` is cheap: poll it often.
const HEALTH_EVERY: Duration = Duration::from_millis(20);

/// Verification timing.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// For the new instance to run and answer `/health`.
    pub wait: Duration,
    /// How long the pid must stay the same after `/health` said 200.
    pub settle: Duration,
}

pub use crate::verify::{EnvProof, ProofFloor};

/// The launchd side of one stack.
pub struct Agent<'a> {
    pub lc: Launchctl,
    /// The domain chosen when the run began (`gui/<uid>` when it exists).
    pub domain: DomainChoice,
    active: Cell<Domain>,
    /// Every domain the label was loaded in when the run began, with its `print`.
    copies: Vec<(Domain, PrintInfo)>,
    /// The first `print` of the job in the chosen domain, until [`Agent::before`] takes it.
    before: RefCell<Option<Option<PrintInfo>>>,
    pub stack: &'a Stack,
    pub audit: Audit,
    lock: &'a Lock,
    /// `OYSTER_ENV_PROOF`: which proofs may be used (all, unless a test or a user says).
    proof_floor: ProofFloor,
}

/// A verified Host.
#[derive(Debug, Clone)]
pub struct Verified {
    pub pid: u32,
    pub health_after: Duration,
    pub env_proof: EnvProof,
}

/// Why verification stopped.
enum Stop {
    Failed(String),
    Interrupted(Signal),
}

impl From<String> for Stop {
    fn from(s: String) -> Stop {
        Stop::Failed(s)
    }
}

impl From<&str> for Stop {
    fn from(s: &str) -> Stop {
        Stop::Failed(s.to_owned())
    }
}

/// Stops a wait when a signal came.
fn check_interrupt() -> Result<(), Stop> {
    match signal::received() {
        Some(sig) => Err(Stop::Interrupted(sig)),
        None => Ok(()),
    }
}

/// A launchctl call that failed while a signal is pending was cut short by it (its process
/// group is killed on an interrupt): that is the interrupt, not a failed verification.
fn stop_from(e: anyhow::Error) -> Stop {
    match signal::received() {
        Some(sig) => Stop::Interrupted(sig),
        None => Stop::Failed(format!("{e:#}")),
    }
}

/// Sleeps `d` in short steps, waking for a signal.
fn sleep_interruptible(d: Duration) -> Result<(), Stop> {
    let end = Instant::now() + d;
    while Instant::now() < end {
        check_interrupt()?;
        std::thread::sleep(HEALTH_EVERY.min(end.saturating_duration_since(Instant::now())));
    }
    check_interrupt()
}

impl<'a> Agent<'a> {
    /// Locates launchctl and the domain, saying aloud when it falls back to `user/<uid>` or
    /// finds the job loaded in the other domain. `lock` is the stack's lifecycle lock.
    pub fn new(ctx: &'a Context, lock: &'a Lock) -> anyhow::Result<Agent<'a>> {
        let stack = &ctx.stack;
        let lc = Launchctl::locate(&ctx.env)?;
        if !lc.overridden && crate::sys::user::euid() == 0 {
            return Err(crate::error::Invalid::new(
                "oyster runs as root: root has no gui/0 session, and a job loaded in user/0 would run the Host as root",
            )
            .hint("run oyster as the user whose Host it is, without sudo (a .pkg runs it with `sudo -u <user>`)")
            .into());
        }
        if lc.overridden || lc.timeout != Duration::from_secs(30) {
            ctx.out.note(&format!("using launchctl {}", lc.describe()));
        }
        // One `print` per domain answers everything: whether `gui/<uid>` exists (112/125
        // when there is no console session), and where the label is loaded (a job in
        // `user/<uid>` is invisible in `gui/<uid>`, and a console login can load a second copy).
        let both = lc.in_both_domains(&stack.label)?;
        let gui = Domain::gui();
        let domain = match both.gui_missing() {
            Some(code) => DomainChoice {
                name: gui.other(),
                fallback_note: Some(launchctl::user_domain_note(gui, code)),
            },
            None => DomainChoice {
                name: gui,
                fallback_note: None,
            },
        };
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
            active: Cell::new(domain.name),
            domain,
            copies,
            before: RefCell::new(Some(before)),
            audit: Audit::new(stack.audit_path(), &stack.name, &stack.label),
            stack,
            lock,
            proof_floor: ProofFloor::from_env(ctx.env.env_proof.as_deref()),
        })
    }

    /// The domain oyster acts in now: the chosen one, or `user/<uid>` after a `gui/<uid>`
    /// bootstrap was refused for the session.
    pub fn active(&self) -> Domain {
        self.active.get()
    }

    pub fn target(&self) -> String {
        self.active().target(&self.stack.label)
    }

    /// The job's `print` (remembered within the run until launchd's state changes).
    pub fn print(&self) -> anyhow::Result<Option<PrintInfo>> {
        self.lc.print(&self.target())
    }

    /// The job's `print` now: for waits that poll for a change.
    fn poll(&self) -> anyhow::Result<Option<PrintInfo>> {
        self.lc.print_now(&self.target())
    }

    /// The job as it was when this run began: the `print` taken by [`Agent::new`] the first
    /// time (no second process start for the same fact), a fresh one afterwards.
    pub fn before(&self) -> anyhow::Result<Option<PrintInfo>> {
        match self.before.borrow_mut().take() {
            Some(first) => Ok(first),
            None => self.poll(),
        }
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
        let plist = self.stack.plist_path();
        let launcher = plan.launcher.to_string_lossy();
        let arguments: Vec<String> = std::iter::once(launcher.clone().into_owned())
            .chain(plan.launch_arguments(&self.stack.name))
            .collect();
        info.path() == Some(plist.as_path())
            && info.get("program") == Some(launcher.as_ref())
            && info.arguments == arguments
            && generated_keys_match(info, &plan.env)
    }

    /// The `pending` marker: written before a change, removed once it verified (or was rolled
    /// back); found by the next run, it means a run died before it knew.
    fn pending_path(&self) -> std::path::PathBuf {
        self.stack.run_dir.join("pending")
    }

    /// The plist that last verified, kept on disk for rollback.
    fn last_good_path(&self) -> std::path::PathBuf {
        self.stack.run_dir.join("last-good.plist")
    }

    /// Whether a previous run was interrupted before its change verified.
    pub fn pending(&self) -> bool {
        self.pending_path().exists()
    }

    /// Writes the plist and makes launchd run it; verifies; rolls back on failure or interrupt.
    ///
    /// `force_restart` restarts an unchanged, loaded job (gracefully).
    pub fn apply(
        &self,
        plan: &Plan,
        action: Action,
        force_restart: bool,
        timing: Timing,
    ) -> anyhow::Result<Outcome> {
        if let Some(sig) = signal::received() {
            return Err(crate::error::Interrupted(sig, "nothing was changed".into()).into());
        }
        // launchd opens the Host log when it spawns the Host: a FIFO there would hang it.
        self.stack.refuse_special_log()?;
        agentplist::refuse_foreign_owner(&self.stack.plist_path())?;
        let plist = self.stack.plist_path();
        let before = self.before()?;
        let old_pid = before.as_ref().and_then(PrintInfo::pid);
        self.refuse_port_for(plan)?;
        let pending = self.pending();
        if pending {
            crate::tell!(
                "A previous oyster run stopped before its change verified; verifying now (and rolling back to the last good plist if it does not)."
            );
        }
        let stale = before
            .as_ref()
            .is_some_and(|b| !self.loaded_matches(b, plan));
        let changing = plan.plist_changed() || stale || before.is_none() || pending;
        if changing {
            fsutil::write_atomic(
                self.lock,
                &self.pending_path(),
                format!("{action}\n").as_bytes(),
                Some(0o600),
            )?;
        }
        let wrote = agentplist::write(self.lock, &plist, &plan.plist, &self.stack.log_dir)?;
        self.audit.record(
            action,
            Step::WritePlist,
            if wrote {
                StepOutcome::Written
            } else {
                StepOutcome::Unchanged
            },
            None,
            "",
        );
        let reload = wrote || stale || before.is_none();
        if !reload && !force_restart && !pending {
            let v = self.verify(&plan.env, plan.port, Baseline::of(before.as_ref()), timing);
            return self.finish(action, v, &plan.plist).map(|v| Outcome {
                verified: v,
                reloaded: false,
                was_loaded: true,
            });
        }
        self.boot_out_other_copies(action)?;
        let step = if reload {
            if stale && !wrote {
                crate::tell!("The loaded job does not match the plist oyster generates (edited behind oyster's back?); reloading it.");
            }
            self.reload(action, before.is_some()).map(|()| Baseline {
                old_pid,
                runs: Some(0),
                ..Baseline::default()
            })
        } else if force_restart {
            // SIGTERM … kickstart is one step: a signal in between would leave the Host
            // stopped, so it is noticed once the new instance has been started.
            let _whole = signal::Suspended::new();
            self.restart_gracefully(action, before.as_ref())
        } else {
            Ok(Baseline::of(before.as_ref()))
        };
        let baseline = match step {
            Ok(b) => b,
            // After the bootout every failure takes the rollback a failed verification takes
            // (a bootstrap refused, a launchctl timeout, a signal that cut a call short): the
            // Host is down and the new plist unverified.
            Err(e) if reload => {
                let previous = plan.installed.as_ref().map(|i| i.bytes.clone());
                let stop = match signal::received() {
                    Some(sig) => Stop::Interrupted(sig),
                    None => Stop::Failed(format!("{e:#}")),
                };
                return Err(self.roll_back(action, previous, &plan.plist, stop, timing));
            }
            Err(e) => return Err(e),
        };
        let restarted_from = baseline.old_pid.filter(|_| force_restart && !reload);
        match self.verify(&plan.env, plan.port, baseline.clone(), timing) {
            Ok(v) => {
                self.audit
                    .record(action, Step::Verify, StepOutcome::Ok, Some(v.pid), "");
                self.keep_as_last_good(&plan.plist);
                Ok(Outcome {
                    verified: v,
                    reloaded: reload,
                    was_loaded: before.is_some(),
                })
            }
            // Interrupted after the restart stopped the old Host: the new instance (same
            // definition) is verified to its end, and the message says what happened.
            Err(Stop::Interrupted(sig)) if !reload && !pending && restarted_from.is_some() => {
                let old = restarted_from.unwrap_or_default();
                Err(self.finish_interrupted_restart(action, sig, old, baseline, plan, timing))
            }
            // Nothing about the definition changed (a restart or start of the same plist):
            // there is nothing to roll back to. The failure is said; the job stays as it is.
            Err(stop) if !reload && !pending => {
                let _ = std::fs::remove_file(self.pending_path());
                self.finish(action, Err(stop), &plan.plist)
                    .map(|v| Outcome {
                        verified: v,
                        reloaded: false,
                        was_loaded: true,
                    })
            }
            Err(stop) => {
                let previous = plan.installed.as_ref().map(|i| i.bytes.clone());
                Err(self.roll_back(action, previous, &plan.plist, stop, timing))
            }
        }
    }

    /// Refuses a port held by a process that is not this stack's Host (in either domain).
    pub(crate) fn refuse_port_for(&self, plan: &Plan) -> anyhow::Result<()> {
        let before = self.print()?;
        let old_pid = before.as_ref().and_then(PrintInfo::pid);
        let copy_pids: Vec<u32> = self.other_copies().filter_map(|(_, i)| i.pid()).collect();
        self.refuse_port_held_by_another(plan.port, old_pid, &copy_pids)
    }

    /// Refuses (before anything is written) a port held by a process that is not this stack's
    /// current Host, naming it and, when it is one, its oyster stack.
    fn refuse_port_held_by_another(
        &self,
        port: u16,
        current: Option<u32>,
        copies: &[u32],
    ) -> anyhow::Result<()> {
        let ours = |pid: u32| {
            current
                .iter()
                .chain(copies)
                .any(|c| crate::sys::net::descends_from(pid, *c))
        };
        let h = match check_port(port, crate::sys::net::listeners_on, ours, port_in_use) {
            PortCheck::Free => return Ok(()),
            PortCheck::Unknown(e) => {
                crate::output::printer()
                    .note(&format!("could not list who listens on port {port}: {e}"));
                return Ok(());
            }
            PortCheck::Invisible => {
                return Err(crate::error::Failed::new(
                    format!(
                        "port {port} is held by a process oyster cannot see (another user's?): no socket this user may inspect listens there, yet it cannot be bound; the Host of stack {} could not listen there",
                        self.stack.name
                    ),
                    format!(
                        "find the holder as an administrator (`sudo lsof -nP -iTCP:{port} -sTCP:LISTEN`), or give stack {} another port with --port",
                        self.stack.name
                    ),
                )
                .into())
            }
            PortCheck::Foreign(h) => h,
        };
        let stack = verify::inspect(h.pid)
            .and_then(|p| {
                p.var("OYSTERUN_ROUTEC_STACK_NAME")
                    .or_else(|| p.var("OYSTERUN_CONFIG_DIR"))
            })
            .map_or(String::new(), |s| format!(", oyster stack {s}"));
        Err(crate::error::Failed::new(
            format!(
                "port {port} is already held by pid {} ({}{stack}); the Host of stack {} could not listen there",
                h.pid, h.name, self.stack.name
            ),
            format!(
                "stop that process (or give stack {} another port with --port), then run again",
                self.stack.name
            ),
        )
        .into())
    }

    fn keep_as_last_good(&self, bytes: &[u8]) {
        let r = fsutil::create_dir_all(&self.stack.run_dir, 0o700)
            .and_then(|()| {
                fsutil::write_atomic(self.lock, &self.last_good_path(), bytes, Some(0o600))
            })
            .and_then(|_| match std::fs::remove_file(self.pending_path()) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(fsutil::FsError::Io {
                    action: "remove",
                    path: self.pending_path(),
                    cause: e,
                }),
                _ => Ok(()),
            });
        if let Err(e) = r {
            crate::output::printer().warn(&format!("could not record the verified plist: {e}"));
        }
    }

    fn finish(
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

    /// Restarts an unchanged, loaded job: SIGTERM through launchd, a wait of up to its exit
    /// timeout for the old pid to go, then a `kickstart` that is never taken as success unless
    /// a new pid runs ([`Agent::kickstart_after_exit`]). Only an old pid that outlives the wait
    /// gets `kickstart -k` (SIGKILL), said aloud. Returns what crash evidence is measured from.
    fn restart_gracefully(
        &self,
        action: Action,
        before: Option<&PrintInfo>,
    ) -> anyhow::Result<Baseline> {
        let target = self.target();
        let mut baseline = Baseline::of(before);
        let Some(pid) = before.and_then(PrintInfo::pid) else {
            baseline.started = self.kickstart_after_exit(None, before)?;
            self.audit
                .record(action, Step::Kickstart, StepOutcome::Ok, None, "");
            return Ok(baseline);
        };
        baseline.old_pid = Some(pid);
        let grace = Duration::from_secs(before.and_then(PrintInfo::exit_timeout).unwrap_or(5));
        crate::tell!(
            "Restarting {target}: SIGTERM to pid {pid}, waiting up to {} s for it to exit…",
            grace.as_secs()
        );
        // 3: loaded, but the process is already gone.
        self.lc
            .kill_sigterm(self.active(), &self.stack.label)?
            .accept(&[Code::NoSuchProcess])?;
        self.audit
            .record(action, Step::Sigterm, StepOutcome::Ok, Some(pid), "");
        baseline.sent.push(Signal::SIGTERM as i32);
        // The kernel says when the pid is gone (cheap, polled often); launchd is asked after.
        let t0 = Instant::now();
        while verify::inspect(pid).is_some() && t0.elapsed() < grace {
            std::thread::sleep(HEALTH_EVERY);
        }
        if verify::inspect(pid).is_some() {
            crate::tell!(
                "pid {pid} outlived SIGTERM by {} s; killing it with `launchctl kickstart -k` (SIGKILL).",
                grace.as_secs()
            );
            self.lc
                .kickstart(self.active(), &self.stack.label, true)?
                .accept(&[])?;
            baseline.sent.push(Signal::SIGKILL as i32);
            self.audit.record(
                action,
                Step::KickstartK,
                StepOutcome::Ok,
                Some(pid),
                "SIGTERM was not enough",
            );
            return Ok(baseline);
        }
        baseline.started = self.kickstart_after_exit(Some(pid), before)?;
        self.audit.record(
            action,
            Step::Kickstart,
            StepOutcome::Ok,
            baseline.started.as_ref().map(|s| s.0),
            "after SIGTERM",
        );
        Ok(baseline)
    }

    /// `kickstart` once launchd has seen the old instance's exit. The kernel reports a pid gone
    /// before launchd has processed its exit: a `kickstart` in between answers 37 (running)
    /// and does nothing, and launchd then respawns a job younger than its ThrottleInterval only
    /// 10 s later. So: wait (a few `print`s, backing off) until launchd no longer shows the old
    /// pid running, then `kickstart`; a 37 is success only when `print` shows a new running pid
    /// (KeepAlive was first); otherwise it is retried, within [`EXIT_NOTICE_BOUND`]. Returns
    /// the new instance when a `print` showed it (verification then needs no second look).
    fn kickstart_after_exit(
        &self,
        old: Option<u32>,
        before: Option<&PrintInfo>,
    ) -> anyhow::Result<Option<(u32, PrintInfo)>> {
        let t0 = Instant::now();
        let mut pause = Backoff::new(Duration::from_millis(100), Duration::from_millis(400));
        let mut info = None;
        loop {
            if let Some(i) = &info {
                let i: &PrintInfo = i;
                match i.pid().filter(|_| i.running()) {
                    Some(p) if Some(p) != old => return Ok(Some((p, i.clone()))),
                    // launchd still counts the old instance as running: not yet.
                    Some(_) => {}
                    None => {
                        let r = self.lc.kickstart(self.active(), &self.stack.label, false)?;
                        match r.code {
                            Code::Ok => return Ok(spawned(before, r.spawned_pid())),
                            Code::AlreadyRunning => {}
                            _ => return Err(r.error().into()),
                        }
                    }
                }
            }
            if t0.elapsed() > EXIT_NOTICE_BOUND {
                anyhow::bail!(
                    "launchd did not start a new instance of {} within {} s of the old one's exit (kickstart kept answering 37, already running)",
                    self.target(),
                    EXIT_NOTICE_BOUND.as_secs()
                );
            }
            // Also before the first look: launchd learns of an exit after the kernel (a
            // `print` at once would almost always show the old pid still running).
            std::thread::sleep(pause.next());
            info = Some(self.poll()?.ok_or_else(|| {
                anyhow::anyhow!("{} was unloaded during the restart", self.target())
            })?);
        }
    }

    /// enable, bootout (if loaded), wait for the label to go, bootstrap with bounded retries.
    pub fn reload(&self, action: Action, loaded: bool) -> anyhow::Result<()> {
        let target = self.target();
        self.lc
            .enable(self.active(), &self.stack.label)?
            .accept(&[])?;
        if loaded {
            self.bootout(action)?;
        }
        let plist = self.stack.plist_path();
        let t0 = Instant::now();
        let mut said = false;
        loop {
            let r = self.lc.bootstrap(self.active(), &plist)?;
            let f = &r.finished;
            match r.code {
                Code::Ok => {
                    self.audit
                        .record(action, Step::Bootstrap, StepOutcome::Ok, None, "");
                    return Ok(());
                }
                Code::InputOutput | Code::AlreadyRunning if t0.elapsed() < BOOTSTRAP_RETRY => {
                    if !said {
                        let loaded = self.poll()?.is_some();
                        crate::tell!(
                            "launchctl bootstrap exited {} ({}); {}, retrying for up to {} s…",
                            f.code,
                            f.stderr.lines().next().unwrap_or("").trim(),
                            if loaded {
                                "the old job is still draining"
                            } else {
                                "launchd is busy"
                            },
                            BOOTSTRAP_RETRY.as_secs()
                        );
                        said = true;
                    }
                    if let Some(sig) = signal::received() {
                        return Err(crate::error::Interrupted(
                            sig,
                            "the job was not loaded again".into(),
                        )
                        .into());
                    }
                    std::thread::sleep(Duration::from_millis(250));
                }
                // launchd refused the GUI domain for this session (over SSH: 125, or 134 when the
                // session cannot load it): once, the user domain instead, said with what that
                // means for the Host.
                Code::DomainUnsupported | Code::WrongSession
                    if matches!(self.active(), Domain::Gui(_)) =>
                {
                    let gui = self.active();
                    crate::tell!(
                        "launchctl bootstrap {gui} exited {} ({}); retrying once in {}.",
                        f.code,
                        f.stderr.lines().last().unwrap_or("").trim(),
                        gui.other()
                    );
                    crate::output::printer().note(&launchctl::user_domain_note(gui, r.code));
                    self.active.set(gui.other());
                    self.lc
                        .enable(gui.other(), &self.stack.label)?
                        .accept(&[])?;
                }
                Code::Disabled => {
                    self.audit.record(
                        action,
                        Step::Bootstrap,
                        StepOutcome::Failed,
                        None,
                        "disabled",
                    );
                    return Err(crate::error::Failed::new(
                        format!("launchd says {target} is disabled (bootstrap exit 119) even after `launchctl enable`"),
                        format!("run `launchctl enable {target}` yourself and try again"),
                    )
                    .into());
                }
                code => {
                    let retried = matches!(code, Code::InputOutput | Code::AlreadyRunning);
                    self.audit.record(
                        action,
                        Step::Bootstrap,
                        StepOutcome::Failed,
                        None,
                        &format!("exit {code}"),
                    );
                    let mut msg = format!(
                        "`launchctl bootstrap {} {}` exited {code}: {}",
                        self.active(),
                        plist.display(),
                        f.stderr.trim()
                    );
                    let hint = if retried {
                        let loaded_elsewhere = self
                            .poll()?
                            .is_some_and(|i| i.path().is_some_and(|p| p != plist.as_path()));
                        msg.push_str(" (still failing after 20 s of retries)");
                        if loaded_elsewhere {
                            "the label is loaded from another plist: `launchctl bootout` it, then run again".to_owned()
                        } else {
                            format!(
                                "the agent may be switched off in System Settings → General → Login Items \
                                 (switch it on), or launchd refused the session type of {}",
                                self.active()
                            )
                        }
                    } else {
                        "run `oyster doctor` to see what launchd refuses".to_owned()
                    };
                    return Err(crate::error::Failed::new(msg, hint).into());
                }
            }
        }
    }

    /// bootout, then poll `print` until the label is gone (113): bootout returns before the
    /// process has exited.
    pub fn bootout(&self, action: Action) -> anyhow::Result<()> {
        self.bootout_in(self.active(), action, None)
    }

    /// bootout in `domain`, waiting until the label is gone there. While bootout answers 36
    /// (operation now in progress) it is issued again on each poll, as Homebrew does, within
    /// the same bound; then `print` is polled (backing off) until it answers 113.
    /// `pid` is the instance it stops, for the audit log.
    pub fn bootout_in(
        &self,
        domain: Domain,
        action: Action,
        pid: Option<u32>,
    ) -> anyhow::Result<()> {
        let target = domain.target(&self.stack.label);
        let label = &self.stack.label;
        // 3: not loaded; 36: still in progress.
        let mut r = self
            .lc
            .bootout(domain, label)?
            .accept(&[Code::NoSuchProcess, Code::InProgress])?;
        self.audit
            .record(action, Step::Bootout, StepOutcome::Ok, pid, "");
        let t0 = Instant::now();
        let mut said = false;
        let mut pause = Backoff::new(PRINT_FIRST, PRINT_MAX);
        loop {
            let gone = if r.code == Code::InProgress {
                false
            } else {
                self.lc.print_now(&target)?.is_none()
            };
            if gone {
                return Ok(());
            }
            // The bootout is issued and launchd finishes it by itself: a signal only stops
            // the wait (the caller decides what makes the state consistent).
            if let Some(sig) = signal::received() {
                return Err(crate::error::Interrupted(
                    sig,
                    format!("{target} was booted out; launchd is still stopping it"),
                )
                .into());
            }
            if t0.elapsed() > DRAIN_TIMEOUT {
                anyhow::bail!(
                    "{target} was still loaded {} s after bootout",
                    DRAIN_TIMEOUT.as_secs()
                );
            }
            if !said && t0.elapsed() > Duration::from_millis(300) {
                crate::output::printer().waiting(
                    &format!("launchd to finish booting out {target}"),
                    DRAIN_TIMEOUT,
                );
                said = true;
            }
            std::thread::sleep(pause.next());
            if r.code == Code::InProgress {
                r = self
                    .lc
                    .bootout(domain, label)?
                    .accept(&[Code::NoSuchProcess, Code::InProgress])?;
            }
        }
    }

    /// One Host per user across domains: before loading into the domain oyster acts in, a copy
    /// loaded in the other one (installed over SSH into `user/<uid>`, say) is booted out, said
    /// aloud, so two Hosts never fight over one port.
    fn boot_out_other_copies(&self, action: Action) -> anyhow::Result<()> {
        for (domain, info) in self.other_copies() {
            crate::tell!(
                "{} is also loaded in {domain}{}; booting that copy out so that only the one in {} runs.",
                self.stack.label,
                info.pid().map_or(String::new(), |p| format!(" (pid {p})")),
                self.active()
            );
            self.bootout_in(*domain, action, info.pid())?;
        }
        Ok(())
    }

    /// `print` shows a running instance with a new pid from our plist; `/health` answers 200
    /// from a socket that pid owns; the environment is proven; after a settle period the same
    /// pid still runs and launchd has not spawned the job again (`runs` unchanged).
    fn verify(
        &self,
        env: &LaunchEnv,
        port: u16,
        mut baseline: Baseline,
        timing: Timing,
    ) -> Result<Verified, Stop> {
        let t0 = Instant::now();
        let plist = self.stack.plist_path();
        crate::output::printer().waiting(
            &format!("the Host to start and answer /health on 127.0.0.1:{port}"),
            timing.wait,
        );
        let (pid, info) = match baseline.started.take() {
            Some(seen) => seen,
            None => self.wait_for_new_instance(&baseline, t0, timing)?,
        };
        if info.path() != Some(plist.as_path()) {
            return Err(Stop::Failed(format!(
                "launchd runs the job from {}, not {}",
                info.path()
                    .map_or("(no path)".into(), |p| p.display().to_string()),
                plist.display()
            )));
        }
        let remaining = timing
            .wait
            .saturating_sub(t0.elapsed())
            .max(Duration::from_secs(1));
        self.wait_for_health(pid, port, Instant::now() + remaining)?;
        let health_after = t0.elapsed();
        verify::check_listener(port, pid).map_err(Stop::Failed)?;
        let env_proof = self.prove_env(pid, &info, env)?;
        crate::output::printer().waiting(
            &format!("pid {pid} to stay up (a crash loop would not)"),
            timing.settle,
        );
        sleep_interruptible(timing.settle)?;
        self.check_settled(pid, &info, timing)?;
        Ok(Verified {
            pid,
            health_after,
            env_proof,
        })
    }

    /// Polls `print` (backing off) until a new instance runs; fails early on crash evidence
    /// from this instance (`spawn scheduled` alone is not: a first launch shows it too).
    fn wait_for_new_instance(
        &self,
        baseline: &Baseline,
        t0: Instant,
        timing: Timing,
    ) -> Result<(u32, PrintInfo), Stop> {
        let mut pause = Backoff::new(PRINT_FIRST, PRINT_MAX);
        loop {
            check_interrupt()?;
            let info = self
                .poll()
                .map_err(stop_from)?
                .ok_or("the job is not loaded")?;
            // A pid in `xpcproxy`/`spawning` is launchd's new instance on its way to exec: the
            // cheap `/health` poll takes it from there (the settle's `print` sees it running).
            let starting = info.running() || info.job_state() == JobState::Spawning;
            match info.pid() {
                Some(pid) if starting && Some(pid) != baseline.old_pid => return Ok((pid, info)),
                _ => {}
            }
            if baseline.crashed(&info) {
                return Err(Stop::Failed(format!(
                    "the Host is not running (state = {}, last exit: {})",
                    info.job_state(),
                    info.last_exit().map_or("unknown".into(), |e| e.to_string())
                )));
            }
            if t0.elapsed() > timing.wait {
                return Err(Stop::Failed(format!(
                    "no new running instance within {} s (state = {})",
                    timing.wait.as_secs(),
                    info.job_state()
                )));
            }
            sleep_interruptible(pause.next())?;
        }
    }

    /// Polls `/health` (cheap) until 200, while the kernel still shows `pid`.
    fn wait_for_health(&self, pid: u32, port: u16, deadline: Instant) -> Result<(), Stop> {
        let mut last = None;
        loop {
            check_interrupt()?;
            if verify::inspect(pid).is_none() {
                return Err(Stop::Failed(format!(
                    "the Host (pid {pid}) exited before answering /health on 127.0.0.1:{port}"
                )));
            }
            last = verify::health(port, Duration::from_millis(500)).or(last);
            if last == Some(200) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Stop::Failed(format!(
                    "{} on 127.0.0.1:{port}",
                    verify::HealthFailure::Timeout(last)
                )));
            }
            std::thread::sleep(HEALTH_EVERY);
        }
    }

    /// After the settle: the same pid runs, and launchd has not spawned the job again since
    /// it was first seen (a Host that died and came back within the settle has a new pid, or
    /// at least a higher `runs`).
    fn check_settled(&self, pid: u32, first: &PrintInfo, timing: Timing) -> Result<(), Stop> {
        let after = self
            .poll()
            .map_err(stop_from)?
            .ok_or("the job was unloaded during verification")?;
        let respawned = matches!((first.runs(), after.runs()), (Some(a), Some(b)) if b > a);
        if after.pid() == Some(pid) && after.running() && !respawned {
            return Ok(());
        }
        Err(Stop::Failed(format!(
            "the Host did not stay up: pid {pid} became {} within {} ms of answering /health{} (a crash loop?)",
            after.pid().map_or("none".into(), |p| p.to_string()),
            timing.settle.as_millis(),
            if respawned {
                format!(
                    ", and launchd spawned it {} more time(s)",
                    after.runs().unwrap_or(0) - first.runs().unwrap_or(0)
                )
            } else {
                String::new()
            }
        )))
    }

    fn prove_env(&self, pid: u32, info: &PrintInfo, env: &LaunchEnv) -> Result<EnvProof, Stop> {
        let record = ExecRecord::read(&self.stack.exec_record_path());
        prove_env(pid, info, env, record.as_ref(), self.proof_floor).map_err(Stop::Failed)
    }

    /// Restores the last good plist (kept on disk; else the previous bytes; else removes ours),
    /// reloads and verifies it, and returns the error describing what failed — an interrupt
    /// included, whose rollback runs to its end before the run exits.
    fn roll_back(
        &self,
        action: Action,
        previous: Option<Vec<u8>>,
        new: &[u8],
        stop: Stop,
        timing: Timing,
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
        let plist = self.stack.plist_path();
        crate::tell!("Verification stopped: {failure}. Rolling back…");
        let last_good = fsutil::read_regular(&self.last_good_path(), agentplist::MAX_PLIST_BYTES)
            .ok()
            .flatten();
        // The definition that failed is itself a good one (it verified before, or it was the
        // installed plist already): the cause is elsewhere, so it stays on disk, not loaded.
        let known_good = last_good.as_deref() == Some(new) || previous.as_deref() == Some(new);
        let restore = last_good
            .filter(|b| b.as_slice() != new)
            .or(previous.filter(|b| b.as_slice() != new));
        let restored = (|| -> anyhow::Result<String> {
            self.bootout(action)?;
            match &restore {
                Some(bytes) => {
                    agentplist::write(self.lock, &plist, bytes, &self.stack.log_dir)?;
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
                     was booted out and {} kept; `oyster agent start --stack {}` loads it again \
                     once the cause is fixed",
                    plist.display(),
                    self.stack.name
                )),
                None => {
                    std::fs::remove_file(&plist)?;
                    Ok(
                        "there was no earlier good plist; the new one was booted out and removed"
                            .into(),
                    )
                }
            }
        })();
        let rollback = match restored {
            Ok(s) => {
                let _ = std::fs::remove_file(self.pending_path());
                s
            }
            Err(e) => format!("rollback failed too (the next run retries it): {e:#}"),
        };
        self.audit
            .record(action, Step::Rollback, StepOutcome::Done, None, &rollback);
        if let Some(sig) = interrupted {
            return crate::error::Interrupted(sig, format!("rollback: {rollback}")).into();
        }
        anyhow::anyhow!(
            "{}\nlast exit: {last_exit}\nrollback: {rollback}",
            self.failure_message(&failure)
        )
    }

    /// Verification for a rollback: signals are not polled (the rollback must finish).
    fn verify_unattended(
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
    fn verify_to_the_end(
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
    fn finish_interrupted_restart(
        &self,
        action: Action,
        sig: Signal,
        old: u32,
        baseline: Baseline,
        plan: &Plan,
        timing: Timing,
    ) -> anyhow::Error {
        crate::tell!("Interrupted by {sig}; the old Host (pid {old}) is already stopped, so oyster finishes verifying the new one first…");
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
                    "the restart had stopped the old Host (pid {old}); launchd runs the same definition again, but the new Host did not verify: {f}; `oyster agent status --stack {}` shows it",
                    self.stack.name
                )
            }
        };
        crate::error::Interrupted(sig, state).into()
    }

    fn failure_message(&self, failure: &str) -> String {
        let log = self.stack.log_path();
        let tail = verify::log_tail(&log, 16 * 1024);
        // The Host may have written secrets of its own since this run began, and logged them:
        // the config is read again after the log, so whatever the tail holds is known by the
        // time it is printed.
        crate::config::learn_secrets(&self.stack.config_path());
        format!(
            "the Host did not verify: {failure}\n--- last lines of {} ---\n{}",
            log.display(),
            tail.trim_end()
        )
    }

    /// Boots the job out (waiting until it is gone) and removes the plist; keeps config, history
    /// and logs.
    pub fn uninstall(&self) -> anyhow::Result<bool> {
        // Ctrl-C while launchd stops a slow Host: the plist is removed all the same (else
        // launchd loads it again at the next login), then the interrupt is said.
        let _guard = signal::InterruptGuard::install();
        let before = self.before()?;
        let loaded = before.is_some();
        let booted_out = (|| -> anyhow::Result<()> {
            self.boot_out_other_copies(Action::Uninstall)?;
            if let Some(info) = &before {
                self.bootout_in(self.active(), Action::Uninstall, info.pid())?;
            }
            Ok(())
        })();
        let interrupted = match booted_out {
            Err(_) if signal::received().is_some() => signal::received(),
            Err(e) => return Err(e),
            Ok(()) => None,
        };
        let _rest = interrupted.map(|_| signal::Suspended::new());
        let plist = self.stack.plist_path();
        match std::fs::remove_file(&plist) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => anyhow::bail!("could not remove {}: {e}", plist.display()),
        }
        for f in [self.pending_path(), self.last_good_path()] {
            let _ = std::fs::remove_file(f);
        }
        self.remove_stale_identity();
        // `agent stop` disabled the label; an uninstalled label must not stay disabled, or the
        // next installer (Oysterun's own, which never enables) gets a bare 5 from bootstrap.
        for d in Domain::both() {
            let _ = self.lc.enable(d, &self.stack.label);
        }
        self.audit.record(
            Action::Uninstall,
            Step::RemovePlist,
            StepOutcome::Ok,
            None,
            "",
        );
        if let Some(sig) = interrupted {
            return Err(crate::error::Interrupted(
                sig,
                format!(
                    "{} was booted out (launchd finishes stopping the Host) and {} removed; config and logs are kept",
                    self.stack.label,
                    plist.display()
                ),
            )
            .into());
        }
        Ok(loaded)
    }
}

impl Agent<'_> {
    /// After the Host is gone (bootout waited for it), the identity files `host exec` wrote
    /// would name a dead pid; Oysterun's runner removes them on exit, and so does oyster.
    pub fn remove_stale_identity(&self) {
        let pid = std::fs::read_to_string(self.stack.pid_path())
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok());
        if pid.is_some_and(signal::exists) {
            return;
        }
        for f in [
            self.stack.pid_path(),
            self.stack.origin_path(),
            self.stack.exec_record_path(),
        ] {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// The environment proof for a running `pid` (CONTRACT.md §5), strongest first: the live
/// environment when the kernel shows it; else the record `oyster host exec` wrote as that same
/// process (same pid and start time) just before its exec; else launchd's loaded definition for
/// the pid launchd spawned. A mismatch in the one used is an error naming the variables.
pub fn prove_env(
    pid: u32,
    info: &PrintInfo,
    env: &LaunchEnv,
    exec_record: Option<&ExecRecord>,
    floor: ProofFloor,
) -> Result<EnvProof, String> {
    if let Some(proof) = verify::prove_live_or_exec(pid, env, exec_record, floor)? {
        return Ok(proof);
    }
    if info.pid() != Some(pid) {
        return Err(format!(
            "the kernel hides pid {pid}'s environment and launchd does not name it as the job's pid"
        ));
    }
    let diffs = verify::differing(env, |k| info.environment.get(k).cloned());
    if diffs.is_empty() {
        Ok(EnvProof::Launchd)
    } else {
        Err(format!(
            "the kernel hides the Host's environment, and launchd's loaded definition differs from the generated one in: {}",
            diffs.join(", ")
        ))
    }
}

/// Whether launchd's loaded environment holds exactly the generated variables (keys launchd
/// adds itself, such as `XPC_SERVICE_NAME`, are ignored).
fn generated_keys_match(info: &PrintInfo, env: &LaunchEnv) -> bool {
    env.vars
        .iter()
        .all(|(k, v)| info.environment.get(k) == Some(v))
}

/// Who holds a port, as far as the refusal before loading is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PortCheck {
    /// Nobody, or this stack's own Host.
    Free,
    /// A process that is not this stack's Host, seen in two listings in a row.
    Foreign(crate::sys::net::Holder),
    /// No visible socket, yet the port cannot be bound: another user's process (the kernel
    /// hides other uids' sockets from a normal user on macOS).
    Invisible,
    /// The listing failed: said, not refused.
    Unknown(String),
}

/// Decides who holds `port`. A foreign holder is refused only when a second listing shows the
/// same pid again: on macOS the `listeners` crate can report a holder from a descriptor closed
/// between two calls (it checks `proc_pidfdinfo` for `< 0`, while libproc returns 0 on failure,
/// and then reads a struct that was never filled). When nobody visible holds it, a bind says
/// whether someone invisible does.
fn check_port(
    port: u16,
    list: impl Fn(u16) -> Result<Vec<crate::sys::net::Holder>, String>,
    ours: impl Fn(u32) -> bool,
    in_use: impl Fn(u16) -> bool,
) -> PortCheck {
    let first = match list(port) {
        Ok(h) => h,
        Err(e) => return PortCheck::Unknown(e),
    };
    if first.is_empty() {
        return if in_use(port) {
            PortCheck::Invisible
        } else {
            PortCheck::Free
        };
    }
    let foreign: Vec<_> = first.into_iter().filter(|h| !ours(h.pid)).collect();
    if foreign.is_empty() {
        return PortCheck::Free;
    }
    let again = list(port).unwrap_or_else(|_| foreign.clone());
    match foreign
        .into_iter()
        .find(|h| again.iter().any(|a| a.pid == h.pid))
    {
        Some(h) => PortCheck::Foreign(h),
        None if again.is_empty() && in_use(port) => PortCheck::Invisible,
        None => PortCheck::Free,
    }
}

/// Whether binding the port the way the Host does (`server.listen(PORT)`: the dual-stack
/// wildcard, IPv4's when IPv6 is not available) fails with "address in use".
fn port_in_use(port: u16) -> bool {
    let in_use = |addr: &str| {
        matches!(
            std::net::TcpListener::bind(addr),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse
        )
    };
    match std::net::TcpListener::bind(("::", port)) {
        Ok(_) => false,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => true,
        Err(_) => in_use(&format!("0.0.0.0:{port}")),
    }
}

/// What `apply` did.
pub struct Outcome {
    pub verified: Verified,
    pub reloaded: bool,
    pub was_loaded: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::net::Holder;
    use std::cell::Cell;

    fn h(pid: u32) -> Holder {
        Holder {
            pid,
            name: format!("p{pid}"),
        }
    }

    #[test]
    fn a_port_held_by_our_own_host_is_free_and_by_another_is_refused() {
        let listed = |_| Ok(vec![h(10)]);
        assert_eq!(
            check_port(1, listed, |p| p == 10, |_| true),
            PortCheck::Free
        );
        assert_eq!(
            check_port(1, listed, |_| false, |_| false),
            PortCheck::Foreign(h(10))
        );
        assert_eq!(
            check_port(1, |_| Ok(vec![h(10), h(11)]), |p| p == 10, |_| false),
            PortCheck::Foreign(h(11)),
            "a second listener beside ours is still refused"
        );
    }

    #[test]
    fn a_phantom_holder_that_the_second_listing_does_not_show_is_not_refused() {
        let calls = Cell::new(0);
        let list = |_| {
            calls.set(calls.get() + 1);
            Ok(if calls.get() == 1 {
                vec![h(77)]
            } else {
                vec![]
            })
        };
        assert_eq!(check_port(1, list, |_| false, |_| false), PortCheck::Free);
        assert_eq!(calls.get(), 2, "listed again before refusing");
    }

    #[test]
    fn nobody_visible_but_unbindable_is_an_invisible_holder() {
        assert_eq!(
            check_port(1, |_| Ok(vec![]), |_| false, |_| true),
            PortCheck::Invisible
        );
        assert_eq!(
            check_port(1, |_| Ok(vec![]), |_| false, |_| false),
            PortCheck::Free
        );
        assert!(matches!(
            check_port(1, |_| Err("no /proc".into()), |_| false, |_| true),
            PortCheck::Unknown(_)
        ));
    }

    #[test]
    fn a_bound_port_is_in_use_and_a_released_one_is_not() {
        let l = std::net::TcpListener::bind(("::", 0))
            .or_else(|_| std::net::TcpListener::bind(("0.0.0.0", 0)))
            .unwrap();
        let port = l.local_addr().unwrap().port();
        assert!(port_in_use(port));
        drop(l);
        assert!(!port_in_use(port));
    }

    fn info(text: &str) -> PrintInfo {
        crate::agent::launchctl::parse_print(text)
    }

    #[test]
    fn the_old_instances_exit_and_oysters_own_signals_are_not_crash_evidence() {
        let before = info("x = {\n\truns = 3\n\tlast exit code = 1\n}\n");
        let mut b = Baseline::of(Some(&before));
        b.sent.push(15);
        // Launchd spawned once since (runs 4), the job is scheduled: the old exit and our
        // SIGTERM are not this instance's crash.
        let same_exit =
            info("x = {\n\truns = 4\n\tstate = spawn scheduled\n\tlast exit code = 1\n}\n");
        assert!(!b.crashed(&same_exit));
        let our_signal = info("x = {\n\truns = 4\n\tstate = not running\n\tlast terminating signal = Terminated: 15\n}\n");
        assert!(!b.crashed(&our_signal));
        let new_exit = info(
            "x = {\n\truns = 4\n\tstate = spawn scheduled\n\tlast exit code = 78: EX_CONFIG\n}\n",
        );
        assert!(b.crashed(&new_exit));
        let not_ours_yet =
            info("x = {\n\truns = 3\n\tstate = spawn scheduled\n\tlast exit code = 78\n}\n");
        assert!(
            !b.crashed(&not_ours_yet),
            "nothing spawned since the baseline"
        );
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(300));
        let got: Vec<u128> = (0..4).map(|_| b.next().as_millis()).collect();
        assert_eq!(got, [100, 200, 300, 300]);
    }

    #[test]
    fn a_kickstart_pid_becomes_the_new_instance_with_one_more_run() {
        let before =
            info("x = {\n\tpath = /p.plist\n\tstate = running\n\tpid = 5\n\truns = 2\n}\n");
        let (pid, new) = spawned(Some(&before), Some(9)).unwrap();
        assert_eq!((pid, new.pid(), new.runs()), (9, Some(9), Some(3)));
        assert!(new.running());
        assert_eq!(new.path(), before.path());
        assert!(spawned(Some(&before), None).is_none());
        assert!(spawned(None, Some(9)).is_none());
    }
}
