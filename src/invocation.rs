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

/// A declared value given on the command line: a secret, so its `Debug` never shows it.
#[derive(Clone)]
pub struct SecretArg(pub OsString);

impl std::fmt::Debug for SecretArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretArg(<redacted>)")
    }
}

/// `oyster env …`.
#[derive(Debug, Clone)]
pub enum EnvVerb {
    List,
    Set {
        name: String,
        /// The value from the command line; `None`: read it from stdin (`--value-stdin`).
        value: Option<SecretArg>,
        /// `--restart` (`Some(true)`), `--no-restart` (`Some(false)`), or ask (`None`).
        restart: Option<bool>,
    },
    Unset {
        name: String,
        restart: Option<bool>,
    },
}

/// Every verb, once, with its settings: the verbs of one group nested in that group's enum, so
/// each command module matches its own group whole (uv's nested command enums).
#[derive(Debug, Clone)]
pub enum Verb {
    /// `oyster` alone: the stacks on this machine and what to type next.
    Overview,
    Setup(Box<Setup>),
    /// A verb of the stack's job (`oyster VERB`, `oyster agent VERB`).
    Job(Job),
    /// `oyster host …`.
    Host(HostVerb),
    /// `oyster providers …`.
    Providers(ProvidersVerb),
    /// `oyster config …`.
    Config(ConfigVerb),
    /// `oyster env …`.
    Env(EnvVerb),
    Logs(Logs),
    Cleanup(Cleanup),
    Doctor {
        probe: bool,
    },
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
    /// The packaging helpers, which need no HOME and no stack.
    Packaging(Packaging),
}

/// The verbs of the stack's job.
#[derive(Debug, Clone)]
pub enum Job {
    Status,
    Start(Starting),
    Stop {
        /// `--keep`: not disabled, so the next login starts it again.
        keep: bool,
        /// `--no-wait`: return once the bootout is issued.
        no_wait: bool,
    },
    Restart(Starting),
    List {
        /// `--wide`: the LOG path never cut to the terminal.
        wide: bool,
    },
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
}

/// `oyster host …`: the direct (pid-file) Host and its launch program.
#[derive(Debug, Clone)]
pub enum HostVerb {
    Start { host: HostInputs, timing: Timing },
    Stop,
    Status,
    Exec,
}

/// `oyster providers …`.
#[derive(Debug, Clone)]
pub enum ProvidersVerb {
    Resolve(Vec<String>),
    Set { provider: String, command: OsString },
    Auto(String),
    Status,
}

/// `oyster config …`.
#[derive(Debug, Clone)]
pub enum ConfigVerb {
    Sync { port: Option<u16> },
    Show,
}

/// The packaging helpers.
#[derive(Debug, Clone)]
pub enum Packaging {
    Completions(clap_complete::Shell),
    Man { dir: Option<PathBuf> },
    CompleteStacks,
}

impl Job {
    /// The verb as the user types it.
    pub fn word(&self) -> &'static str {
        match self {
            Job::Status => "status",
            Job::Start(_) => "start",
            Job::Stop { .. } => "stop",
            Job::Restart(_) => "restart",
            Job::List { .. } => "list",
            Job::Kill => "kill",
            Job::Install { .. } => "install",
            Job::Uninstall { .. } => "uninstall",
            Job::Print(_) => "print",
            Job::Regenerate { .. } => "regenerate",
        }
    }
}

impl Verb {
    /// The verb as the user types it (a group's word for its verbs).
    pub fn word(&self) -> &'static str {
        match self {
            Verb::Overview => "",
            Verb::Setup(_) => "setup",
            Verb::Job(j) => j.word(),
            Verb::Logs(_) => "logs",
            Verb::Cleanup(_) => "cleanup",
            Verb::Doctor { .. } => "doctor",
            Verb::Providers(_) => "providers",
            Verb::Config(_) => "config",
            Verb::Host(_) => "host",
            Verb::Env(_) => "env",
            Verb::Version { .. } => "version",
            Verb::MdmProfile { .. } => "mdm",
            Verb::Inventory(_) => "inventory",
            Verb::Open => "open",
            Verb::Qr => "qr",
            Verb::Packaging(Packaging::Completions(_)) => "completions",
            Verb::Packaging(Packaging::Man { .. }) => "man",
            Verb::Packaging(Packaging::CompleteStacks) => "__complete-stacks",
        }
    }
}
