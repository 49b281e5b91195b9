//! The seam itself: what a verb asks of the service manager that runs a stack's Host. launchd
//! (`agent::lifecycle::Agent`) and the systemd user manager (`unit::Unit`) implement it; the
//! commands hold a `dyn ServiceManager` and never name either. The decision
//! ([`super::decide`]), the receipt ([`super::journal`]), the proofs (`verify`, `probe`) and
//! the words (`commands/`) are shared.

use std::time::Duration;

use super::{Decision, ManagerKind, Observed, Request};
use crate::host::plan::Plan;
use crate::output::audit::Action;
use crate::verify::EnvProof;

/// Verification timing.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// For the new instance to run and answer `/health`.
    pub wait: Duration,
    /// How long the pid must stay the same after `/health` said 200.
    pub settle: Duration,
    /// `--ignore-login-items`: reload a loaded job that does not run even when
    /// ServiceManagement says it is switched off in Login Items. Not timing, but it travels
    /// with it to the decision, the one place that refusal is made.
    pub ignore_login_items: bool,
}

/// A verified Host.
#[derive(Debug, Clone)]
pub struct Verified {
    pub pid: u32,
    pub health_after: Duration,
    pub env_proof: EnvProof,
}

/// What a run that loads did.
pub struct Outcome {
    pub verified: Verified,
    /// The definition was loaded again (launchd: bootout + bootstrap; systemd: daemon-reload
    /// + start).
    pub reloaded: bool,
    /// The job was loaded before.
    pub was_loaded: bool,
}

/// What `stop` found and did.
#[derive(Debug, Clone, Copy)]
pub struct StopOutcome {
    /// The job was loaded and has been stopped.
    pub was_loaded: bool,
    /// The stop was issued and not waited for (`--no-wait`): the manager may still be stopping
    /// the Host.
    pub still_stopping: bool,
    /// The pid that was running, if one was.
    pub pid: Option<u32>,
}

/// What `kill` did.
#[derive(Debug, Clone, Copy)]
pub struct KillOutcome {
    /// The pid that got SIGTERM.
    pub pid: u32,
    /// Whether that pid was gone when oyster stopped watching.
    pub exited: bool,
}

impl KillOutcome {
    /// How long `kill` watches the pid it signalled (launchd's exit timeout for agents is 5 s).
    pub const WATCH: Duration = Duration::from_secs(5);

    /// After SIGTERM to `pid`: watches it exit for [`KillOutcome::WATCH`] (said on `out`). An
    /// interrupt ends the watch with the signal; the manager (`restarts`: how it starts the
    /// Host again) is said in the error.
    pub fn watch(
        pid: u32,
        restarts: &str,
        out: &dyn crate::output::Reporter,
    ) -> anyhow::Result<KillOutcome> {
        out.waiting(&format!("pid {pid} to exit"), Self::WATCH);
        let t0 = std::time::Instant::now();
        while t0.elapsed() < Self::WATCH {
            if crate::verify::inspect(pid).is_none() {
                return Ok(KillOutcome { pid, exited: true });
            }
            if let Err(sig) = crate::sys::signal::pause(Duration::from_millis(50)) {
                let said = format!("SIGTERM was sent to pid {pid}; {restarts}");
                return Err(crate::error::Interrupted(sig, said).into());
            }
        }
        Ok(KillOutcome { pid, exited: false })
    }
}

/// The job against a plan, for `regenerate`: whether it needs the change at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Loaded nowhere and no run unfinished: nothing to reload (`stopped`: `stop` left it so).
    NotLoaded { stopped: bool },
    /// Loaded, running the plan's definition, nothing unfinished: left alone.
    Current,
    /// Anything else: the change is applied (reloaded, recovered, the other copy booted out).
    Behind,
}

/// One service manager, for one stack, for one run.
pub trait ServiceManager {
    fn kind(&self) -> ManagerKind;
    /// Whether the job was loaded (anywhere) when the run began.
    fn was_loaded(&self) -> bool;
    /// The running Host's pid where oyster acts, as the run found it.
    fn running_pid(&self) -> Option<u32>;
    /// The job in the seam's shape, without a plan (`stop`, `uninstall`).
    fn observe_job(&mut self) -> anyhow::Result<Observed>;
    /// Every refusal, then the steps: nothing is written.
    fn decide(&mut self, plan: &Plan, request: Request) -> anyhow::Result<Decision>;
    /// `--ignore-login-items` for the decisions that follow.
    fn allow_switched_off(&mut self, yes: bool);
    /// [`ServiceManager::decide`], then the steps: the Host verified, or rolled back. A
    /// signal that came already ends the run here.
    fn apply(
        &mut self,
        plan: &Plan,
        action: Action,
        request: Request,
        timing: Timing,
    ) -> anyhow::Result<Outcome> {
        super::run::refuse_interrupted()?;
        self.allow_switched_off(timing.ignore_login_items);
        let decision = self.decide(plan, request)?;
        self.run_decided(plan, action, &decision, timing)
    }
    /// The decided steps, taken by the one runner ([`super::run::run`]).
    fn run_decided(
        &mut self,
        plan: &Plan,
        action: Action,
        decision: &Decision,
        timing: Timing,
    ) -> anyhow::Result<Outcome>;
    /// Undo `stop`: enable, load, verify; a failure leaves a stopped stack stopped.
    fn start(&mut self, plan: &Plan, timing: Timing) -> anyhow::Result<Outcome>;
    /// Stop the Host and keep it from starting at the next login (unless `keep`).
    fn stop(&mut self, keep: bool, wait: bool) -> anyhow::Result<StopOutcome>;
    /// SIGTERM to the running Host only; the manager starts it again.
    fn kill(&mut self, hint: &dyn Fn(&str) -> String) -> anyhow::Result<KillOutcome>;
    /// Stop it and remove the definition; config and logs stay. Says whether it was loaded.
    fn uninstall(&mut self) -> anyhow::Result<bool>;
    /// The config step alone (a run that finds nothing else to do).
    fn write_config(&self, plan: &Plan) -> anyhow::Result<()>;
    /// Whether `regenerate` has anything to apply.
    fn standing(&mut self, plan: &Plan) -> anyhow::Result<Standing>;
}
