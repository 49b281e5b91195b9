//! The LaunchAgent lifecycle (CONTRACT.md §5, §9): load, reload or restart the job, prove the
//! restarted Host runs with the generated environment, and roll back when it does not — also
//! when the run is interrupted, and, through a `pending` marker, after a run that was killed.
//!
//! `kickstart -k` never re-reads a plist, so any change to the definition — on disk, or a loaded
//! definition that no longer matches the generator — goes through enable, bootout, a wait until
//! the label is gone, and bootstrap. An unchanged job restarts gracefully: `launchctl kill
//! SIGTERM`, a wait of up to its exit timeout, then `kickstart` (SIGKILL only as a last resort).

use std::time::{Duration, Instant};

use crate::agent::launchctl::{Domain, JobState, LastExit, Launchctl, PrintInfo};
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
/// `launchctl print` is a process start on a Mac: at most ~5 a second.
const PRINT_EVERY: Duration = Duration::from_millis(200);
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
    pub domain: Domain,
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
        let mut domain = lc.domain()?;
        if let Some((loaded_in, _)) = lc.find_loaded(&stack.label)? {
            if loaded_in != domain.name {
                ctx.out.note(&format!(
                    "{} is loaded in {loaded_in}, not {}; working with it there",
                    stack.label, domain.name
                ));
                domain = Domain {
                    name: loaded_in,
                    fallback_note: None,
                };
            }
        }
        if let Some(note) = &domain.fallback_note {
            ctx.out.note(note);
        }
        Ok(Agent {
            lc,
            domain,
            audit: Audit::new(stack.audit_path(), &stack.name, &stack.label),
            stack,
            lock,
            proof_floor: ProofFloor::from_env(ctx.env.env_proof.as_deref()),
        })
    }

    pub fn target(&self) -> String {
        self.domain.target(&self.stack.label)
    }

    pub fn print(&self) -> anyhow::Result<Option<PrintInfo>> {
        self.lc.print(&self.target())
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
        self.stack.pending_path()
    }

    /// The plist that last verified, kept on disk for rollback.
    fn last_good_path(&self) -> std::path::PathBuf {
        self.stack.last_good_plist_path()
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
        let plist = self.stack.plist_path();
        let before = self.print()?;
        let old_pid = before.as_ref().and_then(PrintInfo::pid);
        self.refuse_port_held_by_another(plan.port, old_pid)?;
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
            let v = self.verify(&plan.env, plan.port, None, None, timing);
            return self.finish(action, v, &plan.plist).map(|v| Outcome {
                verified: v,
                reloaded: false,
                was_loaded: true,
            });
        }
        let step = if reload {
            if stale && !wrote {
                crate::tell!("The loaded job does not match the plist oyster generates (edited behind oyster's back?); reloading it.");
            }
            self.reload(action, before.is_some()).map(|()| Some(0))
        } else if force_restart {
            self.restart_gracefully(action, old_pid)
        } else {
            Ok(before.as_ref().and_then(PrintInfo::runs))
        };
        let baseline = match step {
            Ok(b) => b,
            // A signal cut a launchctl call short (its group was killed): the new plist may be
            // half loaded, so this is an interrupt to roll back, not a plain failure.
            Err(e) => match signal::received() {
                Some(sig) => {
                    let previous = plan.installed.as_ref().map(|i| i.bytes.clone());
                    let stop = Stop::Interrupted(sig);
                    return Err(self.roll_back(action, previous, &plan.plist, stop, timing));
                }
                None => return Err(e),
            },
        };
        let old = if reload || force_restart {
            old_pid
        } else {
            None
        };
        match self.verify(&plan.env, plan.port, old, baseline, timing) {
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

    /// Refuses (before anything is written) a port held by a process that is not this stack's
    /// current Host, naming it and, when it is one, its oyster stack.
    fn refuse_port_held_by_another(&self, port: u16, current: Option<u32>) -> anyhow::Result<()> {
        let holders = match crate::sys::net::listeners_on(port) {
            Ok(h) => h,
            Err(e) => {
                crate::output::printer()
                    .note(&format!("could not list who listens on port {port}: {e}"));
                return Ok(());
            }
        };
        let foreign: Vec<_> = holders
            .iter()
            .filter(|h| !current.is_some_and(|c| crate::sys::net::descends_from(h.pid, c)))
            .collect();
        let Some(h) = foreign.first() else {
            return Ok(());
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
    /// timeout for the old pid to go, then `kickstart` (37: KeepAlive already started it). Only
    /// an old pid that outlives the wait gets `kickstart -k` (SIGKILL), said aloud. Returns the
    /// job's `runs` before the new instance, the baseline for crash evidence.
    fn restart_gracefully(
        &self,
        action: Action,
        old_pid: Option<u32>,
    ) -> anyhow::Result<Option<u32>> {
        let target = self.target();
        let info = self.print()?;
        let runs = info.as_ref().and_then(PrintInfo::runs);
        let Some(pid) = old_pid else {
            self.lc.ok(&["kickstart", &target])?;
            self.audit
                .record(action, Step::Kickstart, StepOutcome::Ok, None, "");
            return Ok(runs);
        };
        let grace =
            Duration::from_secs(info.as_ref().and_then(PrintInfo::exit_timeout).unwrap_or(5));
        crate::tell!(
            "Restarting {target}: SIGTERM to pid {pid}, waiting up to {} s for it to exit…",
            grace.as_secs()
        );
        let f = self.lc.call(&["kill", "SIGTERM", &target])?;
        if f.code != 0 && f.code != 3 {
            anyhow::bail!(
                "`launchctl kill SIGTERM {target}` exited {}: {}",
                f.code,
                f.stderr.trim()
            );
        }
        let t0 = Instant::now();
        while signal::exists(pid) && verify::inspect(pid).is_some() && t0.elapsed() < grace {
            std::thread::sleep(HEALTH_EVERY);
        }
        if verify::inspect(pid).is_some() {
            crate::tell!(
                "pid {pid} outlived SIGTERM by {} s; killing it with `launchctl kickstart -k` (SIGKILL).",
                grace.as_secs()
            );
            self.lc.ok(&["kickstart", "-k", &target])?;
            self.audit.record(
                action,
                Step::KickstartK,
                StepOutcome::Ok,
                Some(pid),
                "SIGTERM was not enough",
            );
            return Ok(runs);
        }
        let f = self.lc.call(&["kickstart", &target])?;
        match f.code {
            // 37: already running — KeepAlive started the new instance first.
            0 | 37 => {}
            code => anyhow::bail!(
                "`launchctl kickstart {target}` exited {code}: {}",
                f.stderr.trim()
            ),
        }
        self.audit.record(
            action,
            Step::Kickstart,
            StepOutcome::Ok,
            None,
            "after SIGTERM",
        );
        Ok(runs)
    }

    /// enable, bootout (if loaded), wait for the label to go, bootstrap with bounded retries.
    pub fn reload(&self, action: Action, loaded: bool) -> anyhow::Result<()> {
        let target = self.target();
        self.lc.ok(&["enable", &target])?;
        if loaded {
            self.bootout(action)?;
        }
        let plist = self.stack.plist_path();
        let plist_s = plist.to_string_lossy();
        let t0 = Instant::now();
        let mut said = false;
        loop {
            let f = self.lc.call(&["bootstrap", &self.domain.name, &plist_s])?;
            match f.code {
                0 => {
                    self.audit
                        .record(action, Step::Bootstrap, StepOutcome::Ok, None, "");
                    return Ok(());
                }
                5 | 37 if t0.elapsed() < BOOTSTRAP_RETRY => {
                    if !said {
                        let loaded = self.print()?.is_some();
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
                119 => {
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
                    self.audit.record(
                        action,
                        Step::Bootstrap,
                        StepOutcome::Failed,
                        None,
                        &format!("exit {code}"),
                    );
                    let mut msg = format!(
                        "`launchctl bootstrap {} {}` exited {code}: {}",
                        self.domain.name,
                        plist.display(),
                        f.stderr.trim()
                    );
                    let hint = if code == 5 || code == 37 {
                        let loaded_elsewhere = self
                            .print()?
                            .is_some_and(|i| i.path().is_some_and(|p| p != plist.as_path()));
                        msg.push_str(" (still failing after 20 s of retries)");
                        if loaded_elsewhere {
                            "the label is loaded from another plist: `launchctl bootout` it, then run again".to_owned()
                        } else {
                            format!(
                                "the agent may be switched off in System Settings → General → Login Items \
                                 (switch it on), or launchd refused the session type of {}",
                                self.domain.name
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
    /// process has exited, and exit 36 means it is still in progress.
    pub fn bootout(&self, action: Action) -> anyhow::Result<()> {
        let target = self.target();
        let f = self.lc.call(&["bootout", &target])?;
        // 3: not loaded; 36: operation now in progress (keep polling).
        if f.code != 0 && f.code != 3 && f.code != 36 {
            anyhow::bail!(
                "`launchctl bootout {target}` exited {}: {}",
                f.code,
                f.stderr.trim()
            );
        }
        self.audit
            .record(action, Step::Bootout, StepOutcome::Ok, None, "");
        let t0 = Instant::now();
        let mut said = false;
        while self.print()?.is_some() {
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
            std::thread::sleep(PRINT_EVERY);
        }
        Ok(())
    }

    /// §5: `print` shows a running instance with a new pid from our plist; `/health` answers
    /// 200 from a socket that pid owns; the environment is proven; the pid survives a settle
    /// period. `baseline_runs` is the job's `runs` before our instance (crash evidence counts
    /// only what came after it).
    fn verify(
        &self,
        env: &LaunchEnv,
        port: u16,
        old_pid: Option<u32>,
        baseline_runs: Option<u32>,
        timing: Timing,
    ) -> Result<Verified, Stop> {
        let t0 = Instant::now();
        let plist = self.stack.plist_path();
        crate::output::printer().waiting(
            &format!("the Host to start and answer /health on 127.0.0.1:{port}"),
            timing.wait,
        );
        let (pid, info) = loop {
            check_interrupt()?;
            let info = self
                .print()
                .map_err(stop_from)?
                .ok_or("the job is not loaded")?;
            match info.pid() {
                Some(pid) if info.running() && Some(pid) != old_pid => break (pid, info),
                _ => {}
            }
            // A crash counts only with evidence from this instance (LAUNCHD.md: `spawn
            // scheduled` also shows for a first launch that has not failed).
            let ours = info.runs().unwrap_or(0) > baseline_runs.unwrap_or(0);
            let crashed = ours
                && info.job_state() != JobState::Running
                && (info.last_exit().is_some_and(LastExit::failed)
                    || info.successive_crashes().is_some_and(|n| n > 0));
            if crashed {
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
            std::thread::sleep(PRINT_EVERY);
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
        let deadline = Instant::now() + remaining;
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
                break;
            }
            if Instant::now() >= deadline {
                return Err(Stop::Failed(format!(
                    "{} on 127.0.0.1:{port}",
                    verify::HealthFailure::Timeout(last)
                )));
            }
            std::thread::sleep(HEALTH_EVERY);
        }
        let health_after = t0.elapsed();
        verify::check_listener(port, pid).map_err(Stop::Failed)?;
        let env_proof = self.prove_env(pid, &info, env)?;
        crate::output::printer().waiting(
            &format!("pid {pid} to stay up (a crash loop would not)"),
            timing.settle,
        );
        sleep_interruptible(timing.settle)?;
        match self.print().map_err(stop_from)? {
            Some(after) if after.pid() == Some(pid) && after.running() => Ok(Verified {
                pid,
                health_after,
                env_proof,
            }),
            Some(after) => Err(Stop::Failed(format!(
                "the Host did not stay up: pid {pid} became {} within {} ms of answering /health (a crash loop?)",
                after.pid().map_or("none".into(), |p| p.to_string()),
                timing.settle.as_millis()
            ))),
            None => Err("the job was unloaded during verification".into()),
        }
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
            .print()
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
        match self.verify(env, port, None, Some(0), timing) {
            Ok(v) => Ok(v),
            Err(Stop::Failed(f)) => Err(f),
            Err(Stop::Interrupted(sig)) => Err(format!("interrupted by {sig}")),
        }
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
        let loaded = self.print()?.is_some();
        if loaded {
            self.bootout(Action::Uninstall)?;
        }
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
        let _ = self.lc.call(&["enable", &self.target()]);
        self.audit.record(
            Action::Uninstall,
            Step::RemovePlist,
            StepOutcome::Ok,
            None,
            "",
        );
        Ok(loaded)
    }
}

impl Agent<'_> {
    /// After the Host is gone (bootout waited for it), the identity files `host exec` wrote
    /// would name a dead pid; Oysterun's runner removes them on exit, and so does oyster.
    pub fn remove_stale_identity(&self) {
        // Read through the regular-file reader (a FIFO there must not hang stop/uninstall).
        let _ = crate::host::identity::remove_if_dead(self.stack);
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

/// What `apply` did.
pub struct Outcome {
    pub verified: Verified,
    pub reloaded: bool,
    pub was_loaded: bool,
}
