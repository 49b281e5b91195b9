//! The service-manager seam (docs/architecture.md): what a manager (launchd, systemd --user)
//! observes about a stack's job, in one neutral shape ([`Observed`]); the one pure decision
//! from (observed state, plan, request) to a refusal or a list of typed [`Step`]s
//! ([`decide`]); and the receipt of a run in progress ([`journal`]), written before each step
//! and read back by the next run after a crash. A manager implements the steps; the decision,
//! the journal and the rendering (`commands/`) are shared.

pub mod decide;
pub mod journal;
pub mod manager;
pub mod port;
pub mod run;
pub mod said;
pub mod step;

pub use decide::{decide, Decision, Loaded, Observed, Planned, PortHolder, Refusal, Request};
pub use manager::{KillOutcome, Outcome, ServiceManager, Standing, StopOutcome, Timing, Verified};
pub use step::Step;

/// Which service manager runs a stack's Host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ManagerKind {
    /// launchd (macOS, or a launchctl named by `OYSTER_LAUNCHCTL`).
    Launchd,
    /// The systemd user manager (`systemctl --user`).
    Systemd,
    /// No manager: the pid-file direct Host (`oyster host start`).
    Direct,
}

impl ManagerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ManagerKind::Launchd => "launchd",
            ManagerKind::Systemd => "systemd",
            ManagerKind::Direct => "direct",
        }
    }
}
