//! What setup says to people, as typed values: the words are at the edge
//! (`commands/setup_words.rs` holds their `Display`), the facts here.

use std::path::PathBuf;

/// A sentence setup says (an error, its hint, a note, a line of progress).
#[derive(Debug, Clone)]
pub enum Said {
    /// A receipt the next setup cannot read or trust: nothing was taken back.
    UnreadableReceipt { path: PathBuf, why: String },
    /// How to get past such a receipt.
    RemoveReceipt { path: PathBuf },
    /// Some reverts of a killed setup failed: what was said, and the receipt kept.
    PartlyTakenBack { said: Vec<String>, path: PathBuf },
    /// A dead setup's receipt found (and taken back) once this run held the lock.
    TookBackWhileWaiting { said: Vec<String> },
    /// The stack's config.json changed between the plan and the lock (another oyster wrote
    /// it while this setup asked or waited): the plan is stale.
    ChangedWhileWaiting { stack: String },
    /// The file that records the Host (`record`: the direct Host's pid file, or the job's
    /// definition) changed between the plan and the lock (a `host start`, `install` or
    /// `uninstall` while this setup asked or waited): the plan's start is stale.
    HostChangedWhileWaiting {
        stack: String,
        record: std::path::PathBuf,
    },
    /// Their hint: `setup` is this stack's setup command, in the form the user typed.
    RunAgain { setup: String },
    /// The job a killed setup changed, put back on the restored config and verified.
    JobPutBack { pid: u32, port: u16 },
    /// The files and empty directories a rollback removed, counted.
    RemovedCreated { removed: usize },
    /// `--agent-folder` given as a relative path.
    AgentFolderNotAbsolute { given: String },
    /// The Host started directly and verified.
    StartedDirectly { pid: u32, health_ms: u128 },
    /// A root without the login QR entry point.
    NoQrEntry { root: PathBuf },
    /// No QR for this Host: why, and where to log in instead.
    QrUnavailable { why: String, port: u16 },
    /// A root without the restore preparation entry point.
    NoRestoreEntry { root: PathBuf },
    /// The restore preparation begins (it may take `secs`).
    PreparingRestore { secs: u64 },
    /// The restore preparation failed; the restart goes on.
    RestoreFailed { why: String },
    /// A password over `cap` bytes.
    PasswordTooLong { cap: usize },
    /// `--password-stdin` on a terminal.
    StdinIsTerminal,
    /// Its hint: pipe it, or let setup ask.
    PipeItInOrAsk,
    /// A piped password that is not UTF-8.
    PasswordNotUtf8,
    /// `--password-stdin` with nothing piped.
    StdinEmpty,
    /// Its hint.
    PipeItIn,
    /// A root without Oysterun's password module.
    NoPasswordModule { root: PathBuf },
    /// The module could not hash the password (its exit code, its last line).
    HashFailed {
        module: PathBuf,
        code: i32,
        said: String,
    },
    /// Its hint.
    CheckInstall,
}
