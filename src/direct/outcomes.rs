//! What the direct start and stop find, refuse and fail with, as facts: the sentences are
//! said in `commands/words/direct.rs`.

use std::path::PathBuf;
use std::time::Duration;

/// Why a live recorded Host is not this stack's: its pid, this stack's name, and each fact
/// that names another (in words in `commands/words/direct.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotThisStacks {
    pub pid: u32,
    pub stack: String,
    pub why: Vec<Mismatch>,
}

/// One fact that names another stack than this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// The exec record names this stack.
    RecordStack(String),
    /// The exec record's config dir.
    RecordConfigDir(String),
    /// The live environment's stack name.
    EnvStack(String),
    /// The live environment has no stack name (the variable is named).
    EnvNoStack(&'static str),
    /// The live environment's config dir.
    EnvConfigDir(String),
}

/// Why a start failed, after the child was stopped and the pid file removed: what went wrong,
/// and the Host log's last lines (said in `commands/words/direct.rs`).
#[derive(Debug)]
pub struct StartFailed {
    pub what: NotVerified,
    pub log: String,
    pub tail: String,
}

impl std::error::Error for StartFailed {}

/// Why a started child is not a verified Host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotVerified {
    /// It exited (with this status) before `/health` answered.
    ExitedBeforeHealth(String),
    /// `/health` did not answer 200 (the failure in words) within `wait`.
    NoHealth {
        failure: String,
        port: u16,
        wait: Duration,
    },
    /// The launch program did not write the pid file for the child.
    NoPidFile { path: PathBuf, pid: u32 },
    /// Neither the live environment nor an exec record proves the environment.
    EnvUnproven { pid: u32 },
    /// It exited within the settle period after answering `/health`.
    ExitedWhileSettling(Duration),
    /// What a lower layer said (the listener or the environment proof).
    Said(String),
}

/// The environment a Host should have could not be computed (why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoExpectedEnv(pub String);

/// What the direct start, stop and pid file refuse or fail with; said (with the fix, where
/// there is one) in `commands/words/direct.rs`.
#[derive(Debug)]
pub enum DirectError {
    /// The pid file holds no pid.
    NotAPid { path: PathBuf },
    /// An identity file could not be removed.
    Remove {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// The launch program could not be spawned.
    Spawn {
        launcher: PathBuf,
        cause: std::io::Error,
    },
    /// A Host of this stack runs already; `stop` is the command that stops it.
    AlreadyRunning {
        pid: u32,
        pid_file: PathBuf,
        stop: String,
    },
    /// The pid outlived SIGTERM and SIGKILL.
    Outlived { pid: u32 },
}

impl std::error::Error for DirectError {}

/// A refusal with its fix: said as [`Failed`] (its message and `hint:`) by
/// `commands/words/direct.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The port is held by another process (`stack_of`: the oyster stack it runs, if any).
    PortHeld {
        port: u16,
        pid: u32,
        name: String,
        stack_of: Option<String>,
        stack: String,
    },
    /// The identity files describe another stack's Host; `files` are the ones that exist.
    OtherStack {
        why: NotThisStacks,
        stack: String,
        files: Vec<PathBuf>,
    },
    /// A live process runs the recorded server but is not provably the recorded one.
    Unproven {
        pid: u32,
        server: PathBuf,
        /// Whether any record of its start exists (else: none at all).
        recorded: bool,
        exec_record: PathBuf,
        stack: String,
        start: String,
    },
    /// launchd runs the pid (`job`): `stop` is the command that stops it.
    LaunchdRuns { pid: u32, job: String, stop: String },
}

/// What the direct start says on its way (through the `Reporter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The pid file's pid is gone.
    StalePidGone { pid: u32 },
    /// The pid file's pid belongs to another process now (`command`), left alone.
    StalePidForeign { pid: u32, command: String },
}

/// What an interrupted start or stop finished before the run ended (said after
/// "interrupted by SIGx; ").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finished {
    /// The start stopped the Host it had spawned; whether its identity files were removed.
    StartStopped { pid: u32, removed: bool },
    /// The stop that had begun was finished.
    StopFinished { pid: u32 },
}

/// The wait the reporter shows while a start or stop waits (`waiting for …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wait {
    Health { port: u16 },
    Exit { pid: u32 },
}
