//! The command line, resolved: built once from clap's structs right after parsing
//! (`cli::resolve`), and the only thing the commands read. The stack is a checked
//! [`StackName`] (or every stack, or none), the verb an enum whose variants hold that verb's
//! settings in plain types, and the output mode is decided here, once.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::agent::lifecycle::Timing;
use crate::context::Typed;
use crate::host::plan::HostInputs;
use crate::host::stack::StackName;
use crate::output::Mode;
use crate::setup::SetupOptions;

/// One run of oyster, as the user asked for it.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub stacks: Stacks,
    pub verb: Verb,
    pub mode: Mode,
    /// `--dry-run` of a job verb (`install`, `start`, `stop`, `restart`, `uninstall`): the
    /// steps it would take, and nothing changed.
    pub dry_run: bool,
    /// How it was typed, so hints echo that form.
    pub typed: Typed,
}

/// Which stacks the verb is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stacks {
    /// One stack: the one named, or production when none was.
    One(StackName),
    /// Every stack found on disk (`--all`).
    All,
    /// The verb is not about one stack (`list`, `cleanup`, `completions`, `man`).
    Unnamed,
}

/// Whether the login QR is shown after the Host verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Qr {
    /// On a terminal only.
    OnTerminal,
    Always,
    Never,
}

impl Qr {
    pub fn wanted(self, terminal: bool) -> bool {
        match self {
            Qr::OnTerminal => terminal,
            Qr::Always => true,
            Qr::Never => false,
        }
    }
}

/// The verbs that start the Host (`start`, `restart`): where it comes from, how long its
/// verification waits, and whether the login QR follows.
#[derive(Debug, Clone)]
pub struct Starting {
    pub host: HostInputs,
    pub timing: Timing,
    pub qr: Qr,
    /// `restart --restore-sessions`: let the Host restore its sessions.
    pub restore_sessions: bool,
}

/// `oyster setup`.
#[derive(Debug, Clone)]
pub struct Setup {
    pub options: SetupOptions,
    pub yes: bool,
    pub dry_run: bool,
    /// `--password-stdin`: the Host login's password is on stdin.
    pub password_stdin: bool,
    pub no_install_providers: bool,
    pub qr: Qr,
    /// The choices typed that a suggested re-run needs (`--root …`, `--port N`, …), as shell
    /// words.
    pub retyped: String,
}

/// `oyster logs`.
#[derive(Debug, Clone, Copy)]
pub struct Logs {
    /// How many lines from the end to print first.
    pub lines: u64,
    /// Keep printing what the Host writes.
    pub follow: bool,
}

/// `oyster inventory`.
#[derive(Debug, Clone)]
pub struct Inventory {
    pub json: bool,
    /// `--result KEY`: one value, as `<result>…</result>`.
    pub result: Option<String>,
    /// The hidden `--user-part`: this user's part only (what root's inventory runs).
    pub user_part: bool,
}

/// `oyster cleanup`.
#[derive(Debug, Clone, Copy)]
pub struct Cleanup {
    /// Remove without asking.
    pub yes: bool,
    /// Only list what would be removed.
    pub dry_run: bool,
    /// Also remove uninstalled stacks holding a config or logs (named).
    pub purge: bool,
}

/// Every verb, once, with its settings.
#[derive(Debug, Clone)]
pub enum Verb {
    /// `oyster` alone: the stacks on this machine and what to type next.
    Overview,
    Setup(Box<Setup>),
    Status,
    Start(Starting),
    Stop {
        /// `--keep`: not disabled, so the next login starts it again.
        keep: bool,
        /// `--no-wait`: return once the bootout is issued.
        no_wait: bool,
    },
    Restart(Starting),
    List,
    Kill,
    Install {
        host: HostInputs,
        no_start: bool,
        timing: Timing,
    },
    /// `--purge`: the stack's data goes too; `--yes`: without asking.
    Uninstall {
        purge: bool,
        yes: bool,
    },
    /// `agent print`.
    Print(HostInputs),
    /// `agent regenerate`.
    Regenerate {
        host: HostInputs,
        no_restart: bool,
        dry_run: bool,
        timing: Timing,
    },
    Logs(Logs),
    Cleanup(Cleanup),
    Doctor {
        probe: bool,
    },
    ProvidersResolve(Vec<String>),
    ProvidersSet {
        provider: String,
        command: OsString,
    },
    ProvidersAuto(String),
    ProvidersStatus,
    ConfigSync {
        port: Option<u16>,
    },
    ConfigShow,
    HostStart {
        host: HostInputs,
        timing: Timing,
    },
    HostStop,
    HostStatus,
    HostExec,
    Version {
        verbose: bool,
    },
    /// `mdm profile`.
    MdmProfile {
        output: Option<PathBuf>,
        organization: Option<String>,
    },
    Inventory(Inventory),
    Open,
    Qr,
    Completions(clap_complete::Shell),
    Man {
        dir: Option<PathBuf>,
    },
    CompleteStacks,
}

impl Verb {
    /// The launchd job's verbs that take `--all`, as the user types them.
    pub fn word(&self) -> &'static str {
        match self {
            Verb::Overview => "",
            Verb::Setup(_) => "setup",
            Verb::Status => "status",
            Verb::Start(_) => "start",
            Verb::Stop { .. } => "stop",
            Verb::Restart(_) => "restart",
            Verb::List => "list",
            Verb::Kill => "kill",
            Verb::Install { .. } => "install",
            Verb::Uninstall { .. } => "uninstall",
            Verb::Print(_) => "print",
            Verb::Regenerate { .. } => "regenerate",
            Verb::Logs(_) => "logs",
            Verb::Cleanup(_) => "cleanup",
            Verb::Doctor { .. } => "doctor",
            Verb::ProvidersResolve(_)
            | Verb::ProvidersSet { .. }
            | Verb::ProvidersAuto(_)
            | Verb::ProvidersStatus => "providers",
            Verb::ConfigSync { .. } | Verb::ConfigShow => "config",
            Verb::HostStart { .. } | Verb::HostStop | Verb::HostStatus | Verb::HostExec => "host",
            Verb::Version { .. } => "version",
            Verb::MdmProfile { .. } => "mdm",
            Verb::Inventory(_) => "inventory",
            Verb::Open => "open",
            Verb::Qr => "qr",
            Verb::Completions(_) => "completions",
            Verb::Man { .. } => "man",
            Verb::CompleteStacks => "__complete-stacks",
        }
    }

    /// The packaging helpers, which need no HOME and no stack.
    pub fn is_packaging(&self) -> bool {
        matches!(
            self,
            Verb::Completions(_) | Verb::Man { .. } | Verb::CompleteStacks
        )
    }
}
