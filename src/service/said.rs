//! What a run of the service verbs has to say, as facts: why a proof failed, where a rollback
//! left the Host, and the progress and notes of the steps. The managers (launchd's agent, the
//! systemd unit) and the runner build these values; their words are written once, at the edge
//! (`commands/words/service.rs`), in each manager's terms where they differ.

use std::path::PathBuf;

use super::ManagerKind;
use crate::sys::signal::Signal;

/// Why the proof of a new Host failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The Host exited before `/health` answered.
    ExitedBeforeHealth { pid: u32, port: u16 },
    /// `/health` never said 200 in time (`last`: the last status, if any answer came).
    HealthTimeout { last: Option<u16>, port: u16 },
    /// No new running instance within the wait (`state`: the job's, as its manager says it).
    NoNewInstance { secs: u64, state: String },
    /// The job is not running (`state`: its state, last exit or result, as its manager says).
    NotRunning { state: String },
    /// Within the settle, the pid changed (`became`), or launchd spawned the job again
    /// (`respawned` more times).
    DidNotStayUp {
        pid: u32,
        became: Option<u32>,
        settle_ms: u128,
        respawned: Option<u32>,
    },
    /// launchd runs the job from another plist (or none) than oyster's.
    WrongPath {
        running: Option<PathBuf>,
        plist: PathBuf,
    },
    /// The kernel hides the Host's environment and `oyster host exec` left no record.
    Unproven,
    /// Said by the room that found it (the listener check, the environment proof, a call).
    Other(String),
}

impl Failure {
    /// Whether the wait ran out (no new instance, no 200 in time) rather than the Host dying:
    /// only then does a longer `--wait` help.
    pub fn ran_out(&self) -> bool {
        matches!(
            self,
            Failure::NoNewInstance { .. } | Failure::HealthTimeout { .. }
        )
    }
}

/// Where a rollback's restore left the Host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restored {
    /// The definition `stop` left written back and not run: the Host stays stopped.
    KeptStopped { start: String },
    /// The last good definition runs again, verified.
    Runs { pid: u32 },
    /// The last good definition runs again, but did not verify either.
    NotVerified { failure: String },
    /// The last good definition was started; a signal ended its proof.
    Started,
    /// The failed definition verified before: kept, not run (the cause is elsewhere).
    KeptGood { path: PathBuf, start: String },
    /// There was no good definition: the new one was stopped and removed.
    Removed,
}

/// A rollback's restore, in its manager's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rollback {
    pub manager: ManagerKind,
    pub restored: Restored,
}

/// What a run says while it takes its steps (progress, notes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// A receipt was found: an earlier run died before its change verified.
    Recovering { manager: ManagerKind },
    /// A Host `oyster host start` ran was stopped: the unit runs it from now on.
    DirectTakenOver { pid: u32 },
    /// Drop-ins change the unit beside oyster's (`paths`); the environment is still generated.
    DropIns { unit: String, paths: Vec<PathBuf> },
    /// Linger is off: the user manager, and the Host, stop at logout.
    LingerOff { user: String },
    /// A failed start of a stopped stack disabled the job again.
    DisabledAgain { job: String },
    /// …and could not (`error`), `stop` keeps it stopped.
    NotDisabledAgain {
        manager: ManagerKind,
        job: String,
        error: String,
        stop: String,
    },
    /// launchd runs another definition than the plist on disk: reloaded.
    StaleDefinition,
    /// ServiceManagement says the job is switched off; reloaded all the same (`ignored`:
    /// `--ignore-login-items` was given, else because it runs).
    SwitchedOffAnyway { label: String, ignored: bool },
    /// A bootout an interrupted `stop` left draining is finished first.
    FinishingStop { target: String },
    /// The label is loaded in the other domain too: that copy is booted out.
    OtherCopy {
        label: String,
        other: String,
        pid: Option<u32>,
        here: String,
    },
    /// A graceful restart: SIGTERM, a wait of up to the exit timeout.
    Restarting {
        target: String,
        pid: u32,
        grace_secs: u64,
    },
    /// The old pid outlived SIGTERM: `kickstart -k`.
    Outlived { pid: u32, grace_secs: u64 },
    /// `launchctl bootstrap` answered `code` (`said`): retried for up to `secs` (the old job
    /// still draining, or a label not loaded whose cause is looked for after).
    BootstrapRetrying {
        code: i32,
        said: String,
        draining: bool,
        secs: u64,
    },
    /// launchd refused the GUI domain for this session: once more in the user domain.
    FallingBack {
        gui: String,
        code: i32,
        said: String,
        user: String,
    },
    /// A signal after the restart stopped the old Host: the new one is verified first.
    InterruptedRestart { sig: Signal, old: u32 },
}

/// How an interrupted run left the Host (the text after "interrupted by SIG…: ").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Left {
    /// The restart had stopped the old Host; the new one runs and verified.
    RestartVerified { old: u32, new: u32 },
    /// …the same definition runs again (under `manager`), but the new Host did not verify.
    RestartUnverified {
        manager: ManagerKind,
        old: u32,
        failure: String,
        status: String,
    },
    /// `uninstall`: booted out and the plist removed; config and logs kept.
    Uninstalled { label: String, plist: PathBuf },
}

/// A refusal as the stack and its manager meet it: what `commands/` says, with its fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub manager: ManagerKind,
    /// The stack refused.
    pub stack: String,
    /// Its job's label.
    pub label: String,
    pub refusal: super::Refusal,
    /// launchd: how to switch the job on in Login Items (ServiceManagement's item), when known.
    pub switch_on: Option<String>,
}

/// A proof that failed, as its error says it: why, what this attempt wrote to the Host log,
/// and the next steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotVerified {
    pub failure: Failure,
    pub log: PathBuf,
    /// This attempt's last lines of the log (`None`: it wrote nothing).
    pub tail: Option<String>,
    /// `oyster logs …` in the form typed.
    pub logs: String,
    /// `oyster restart …` when a longer wait could help.
    pub restart: Option<String>,
    /// The manager's own look at the job (`systemctl --user status NAME`).
    pub status: Option<String>,
}

/// A manager's refusal of a run, before anything is changed (or, for a bootstrap, of the load
/// itself): the facts; the words and the fix are the edge's.
#[derive(Debug, Clone, PartialEq)]
pub enum Declined {
    /// oyster runs as root, and nothing named the manager on purpose.
    Root { manager: ManagerKind },
    /// The unit file is a symlink a `disable` would remove (`keep`: `stop --keep`, typed).
    LinkedUnit { path: PathBuf, keep: String },
    /// Drop-ins beside the unit set keys that override oyster's (`found`: each file and its
    /// keys; `keys`: every key that overrides).
    DropIns {
        unit: String,
        found: Vec<(PathBuf, Vec<String>)>,
        keys: Vec<String>,
    },
    /// The stack has a unit, but its manager cannot be reached (`why`).
    Unreachable(Unreachable),
    /// launchd says the job is disabled even after `launchctl enable`.
    StillDisabled { target: String },
    /// `launchctl bootstrap` kept refusing the plist.
    Bootstrap(Box<BootstrapRefused>),
    /// `kickstart` kept answering 37 and no new instance came.
    NoNewInstance { target: String, secs: u64 },
}

/// A stack whose unit's manager cannot be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreachable {
    pub stack: String,
    pub unit: PathBuf,
    /// The `systemctl` that reaches no user manager, and why.
    pub systemctl: PathBuf,
    pub why: String,
    pub user: String,
    pub uid: u32,
}

/// A bootstrap launchd kept refusing, and why, as far as oyster can tell.
#[derive(Debug, Clone, PartialEq)]
pub struct BootstrapRefused {
    pub domain: String,
    pub target: String,
    pub plist: PathBuf,
    pub code: String,
    pub stderr: String,
    /// How long it was retried, when that was long enough to say.
    pub retried_secs: Option<f64>,
    pub why: RefusedBecause,
}

/// Why launchd refused a bootstrap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefusedBecause {
    /// The label is loaded from another plist.
    LoadedElsewhere,
    /// Still loaded from this plist: the old job never finished booting out.
    StillDraining,
    /// The first cause that holds (`agent::refusal`), with its fix.
    Cause { what: String, fix: String },
    /// None holds; `hint` is what a user can still do.
    NoReason { hint: String },
    /// Not a 5/37: `doctor` says what launchd refuses.
    Other { doctor: String },
}
