//! The command line, in one place: these clap structs and their `///` comments are the help.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Installs, starts, restarts and verifies the Oysterun Host, and keeps its provider commands
/// (claude, codex) durable across setup, restarts and upgrades.
#[derive(Debug, Parser)]
#[command(
    name = "oyster",
    version,
    propagate_version = true,
    max_term_width = 100,
    after_help = examples(),
    after_long_help = format!("{}\n\n{}", examples(), environment_help())
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// The environment variables oyster reads, for `--help` and the man page. (They are read
/// once into the run's context; clap's `env =` would hide whether a value came from a flag or
/// the environment, which oyster always says.)
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "HOME",
        "the home directory (~); the stack's files and the plist live under it",
    ),
    (
        "OYSTERUN_STACKS_DIR",
        "where non-production stacks live [default: ~/.oysterun-stacks]; absolute",
    ),
    (
        "OYSTERUN_CONFIG_DIR",
        "overrides the stack's config dir (said in output); absolute",
    ),
    (
        "OYSTERUN_ROOT",
        "the Oysterun install root, when --root is not given",
    ),
    (
        "OYSTERUN_NODE_BIN",
        "the Node to pin, when --node-bin is not given (must be valid)",
    ),
    (
        "OYSTER_LAUNCHCTL",
        "a launchctl-compatible program instead of /bin/launchctl (said in output); `none` means no launchd here (setup starts the Host directly)",
    ),
    (
        "OYSTER_LAUNCHCTL_TIMEOUT_SECS",
        "how long one launchctl call may take [default: 30, at most 3600]",
    ),
    (
        "OYSTER_ENV_PROOF",
        "`exec` or `launchd`: prove the Host's environment as on Macs whose kernel hides it: from `host exec`'s own record, or from launchd's definition",
    ),
    ("NO_COLOR", "no colour, even on a terminal"),
    (
        "npm_config_prefix",
        "also searched for the `oysterun` npm package (the Oysterun root)",
    ),
    (
        "PATH",
        "searched for providers and node (never given to the Host)",
    ),
];

/// The exit status line of `--help` (the man page has its own section).
pub const EXIT_STATUS_HELP: &str =
    "Exit status: 0 success (a cancel included), 1 the operation failed, 2 invalid input or usage.";

/// The widest line the help blocks oyster lays out itself may take: they read at 80 columns
/// (clap wraps only what is wider than the terminal, so a block that fits is left alone).
const HELP_WIDTH: usize = 79;

/// Greedy word wrap of `text` into lines of at most `width` characters (a longer word stands
/// alone).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![];
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A titled two-column block (`Examples:`, `Environment:`) laid out for 80 columns: the text
/// column starts after the longest first column of at most `max_left` characters; a longer
/// one (or one with a text that would not fit) puts its text on the next lines, indented to
/// that column, wrapped there.
fn two_columns(title: &str, rows: &[(String, &str)], max_left: usize) -> String {
    let col = 2
        + rows
            .iter()
            .map(|(l, _)| l.chars().count())
            .filter(|&n| n <= max_left)
            .max()
            .unwrap_or(0)
        + 3;
    let mut out = String::from(title);
    for (left, text) in rows {
        out.push_str("\n  ");
        out.push_str(left);
        if text.is_empty() {
            continue;
        }
        let lines = wrap(text, HELP_WIDTH - col);
        let fits = 2 + left.chars().count() + 3 <= col;
        for (i, line) in lines.iter().enumerate() {
            if i == 0 && fits {
                let pad = col - 2 - left.chars().count();
                out.push_str(&" ".repeat(pad));
            } else {
                out.push('\n');
                out.push_str(&" ".repeat(col));
            }
            out.push_str(line);
        }
    }
    out
}

/// The `Environment:` block of `oyster --help` (and the exit status line).
pub fn environment_help() -> String {
    let rows: Vec<(String, &str)> = ENVIRONMENT
        .iter()
        .map(|(k, v)| ((*k).to_owned(), *v))
        .collect();
    format!(
        "{}\n\n{EXIT_STATUS_HELP}",
        two_columns("Environment:", &rows, 20)
    )
}

/// Options every command takes, before or after the subcommand.
#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// The stack: `production` (default), `staging`, or a custom name (`oyster list` shows the
    /// stacks on this machine); most verbs also take it as a plain name (`oyster restart dev`).
    #[arg(long, global = true, value_name = "NAME")]
    pub stack: Option<String>,
}

/// A stack given as a plain name after the verb, as `brew services restart NAME` takes one.
#[derive(Debug, Args, Clone, Default)]
pub struct Target {
    /// The stack, as `--stack STACK` [default: production].
    #[arg(value_name = "STACK")]
    pub stack_name: Option<String>,
}

/// A stack by name, or every stack on disk with `--all`.
#[derive(Debug, Args, Clone, Default)]
pub struct Targets {
    /// The stack, as `--stack STACK` [default: production].
    #[arg(value_name = "STACK")]
    pub stack_name: Option<String>,
    /// Every stack found on this machine, one after another; exit 1 if any failed, naming them.
    #[arg(long, conflicts_with = "stack_name")]
    pub all: bool,
}

/// Whether the login QR is printed after the Host verified (Oysterun's `show-qr`).
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct QrArgs {
    /// Print the login QR after the Host verified, also without a terminal [default: only on
    /// a terminal].
    #[arg(long, overrides_with = "no_qr")]
    pub qr: bool,
    /// Do not print the login QR.
    #[arg(long)]
    pub no_qr: bool,
}

impl QrArgs {
    /// `--qr`, `--no-qr` (the last one given wins), else whether stdout is a terminal.
    pub fn wanted(&self, terminal: bool) -> bool {
        if self.no_qr {
            false
        } else {
            self.qr || terminal
        }
    }
}

// The words of each verb, shared by `oyster agent VERB` and its top-level alias, so the alias's
// help (and man page) is the full help of what it runs.
const STATUS_ABOUT: &str =
    "Show installed, loaded, running and verified as separate facts (exit 1 unless verified)";
const START_ABOUT: &str =
    "Start the Host: enable the label, regenerate and load the plist, verify (undoes `stop`)";
const STOP_ABOUT: &str = "Stop the Host: boot the job out and disable the label so it stays stopped across logins; the plist is kept (`start` undoes it)";
const RESTART_ABOUT: &str = "Restart the Host: reload when the definition changed (kickstart never re-reads a plist), else a graceful restart (SIGTERM through launchd, then kickstart; SIGKILL only if the old Host outlives its exit timeout); then verify, rolling back a changed plist that does not verify";
const LIST_ABOUT: &str =
    "Every stack found on this machine: its status in one word, port, pid, last exit and log";
const KILL_ABOUT: &str =
    "Send SIGTERM to the running Host only; launchd (KeepAlive) starts it again";
const INSTALL_ABOUT: &str =
    "Write the LaunchAgent, load it into launchd, and verify the running Host";
const UNINSTALL_ABOUT: &str =
    "Boot the job out and remove the plist; config, history and logs are kept";
const RESTORE_HELP: &str = "Before restarting, run the root's host-service/cli/prepare-restart-restore.mjs so the Host restores its sessions (as Oysterun's `service:restart --restore-sessions`).";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Release Setup: plan providers, config, AgentFolder and service; ask; then apply (a
    /// cancel changes nothing, a failure rolls back).
    #[command(after_help = examples_for("setup"))]
    Setup(SetupArgs),
    #[command(visible_alias = "info", about = STATUS_ABOUT, after_help = examples_for("status"))]
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: Target,
    },
    #[command(about = START_ABOUT, after_help = examples_for("start"))]
    Start(StartArgs),
    #[command(about = STOP_ABOUT, after_help = examples_for("stop"))]
    Stop {
        #[command(flatten)]
        targets: Targets,
    },
    #[command(about = RESTART_ABOUT, after_help = examples_for("restart"))]
    Restart {
        #[command(flatten)]
        host: HostArgs,
        #[command(flatten)]
        verify: VerifyArgs,
        #[command(flatten)]
        targets: Targets,
        #[command(flatten)]
        qr: QrArgs,
        #[arg(long, help = RESTORE_HELP)]
        restore_sessions: bool,
    },
    /// Print the Host log (secrets redacted); `-f` follows it, across rotation and truncation.
    #[command(after_help = examples_for("logs"))]
    Logs(LogsArgs),
    #[command(visible_alias = "ls", about = LIST_ABOUT, after_help = examples_for("list"))]
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    #[command(about = KILL_ABOUT, after_help = examples_for("kill"))]
    Kill {
        #[command(flatten)]
        target: Target,
    },
    #[command(about = INSTALL_ABOUT, after_help = examples_for("install"))]
    Install {
        #[command(flatten)]
        host: HostArgs,
        /// Write the plist only; launchd starts it at the next login.
        #[arg(long)]
        no_start: bool,
        #[command(flatten)]
        verify: VerifyArgs,
        #[command(flatten)]
        target: Target,
    },
    #[command(about = UNINSTALL_ABOUT, after_help = examples_for("uninstall"))]
    Uninstall {
        #[command(flatten)]
        targets: Targets,
    },
    /// Remove stacks that hold nothing but oyster's own bookkeeping (no plist, no Host, no
    /// config, no log): lists them, asks on a terminal, `--yes` without one.
    #[command(after_help = examples_for("cleanup"))]
    Cleanup(CleanupArgs),
    /// Check node, providers, the plist, launchd, the live Host and the log dir; say the fix.
    #[command(after_help = examples_for("doctor"))]
    Doctor {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Also run `<provider> --version` (only that: never login, model or auth).
        #[arg(long)]
        probe: bool,
        #[command(flatten)]
        target: Target,
    },
    /// Find and configure the provider commands (claude, codex).
    #[command(subcommand, after_help = providers_examples())]
    Providers(ProvidersCommand),
    /// Read and synchronize the stack's config.json.
    #[command(subcommand, after_help = examples_for("config"))]
    Config(ConfigCommand),
    /// The LaunchAgent: generate, install, restart and verify the launchd job.
    #[command(subcommand, after_help = agent_examples())]
    Agent(AgentCommand),
    /// Direct (pid-file) Host startup, for Linux and macOS without launchd.
    #[command(subcommand, after_help = examples_for("host"))]
    Host(HostCommand),
    /// Print a shell completion script (`--stack` completes the stacks on this machine).
    #[command(after_help = examples_for("completions"))]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page in roff; `--dir DIR` writes every page (oyster.1, oyster-agent.1, …)
    /// into DIR instead.
    #[command(after_help = examples_for("man"))]
    Man {
        /// Write oyster.1 and one page per subcommand into this directory.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// The stacks on this machine, one per line (what the completion scripts offer).
    #[command(name = "__complete-stacks", hide = true)]
    CompleteStacks,
}

/// `oyster cleanup`.
#[derive(Debug, Args)]
pub struct CleanupArgs {
    /// Remove what is listed without asking (without it and without a terminal, nothing is
    /// removed).
    #[arg(long, conflicts_with = "dry_run")]
    pub yes: bool,
    /// Only list what would be removed (the default without a terminal).
    #[arg(long)]
    pub dry_run: bool,
}

/// `oyster logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// How many lines from the end to print first.
    #[arg(short = 'n', long = "lines", default_value_t = 20, value_name = "N", value_parser = whole_number)]
    pub lines: u64,
    /// Keep printing what the Host writes (Ctrl-C ends it), across rotation and truncation.
    #[arg(short, long)]
    pub follow: bool,
    #[command(flatten)]
    pub target: Target,
}

/// `oyster agent start`: what `install` takes, since it regenerates the plist first.
#[derive(Debug, Args, Clone)]
pub struct StartArgs {
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub verify: VerifyArgs,
    #[command(flatten)]
    pub targets: Targets,
    #[command(flatten)]
    pub qr: QrArgs,
}

/// Why a command line names no single stack, or names it twice (exit 2, said as a usage error).
pub struct StackConflict(pub String);

/// The stack the command line names, and how the user typed it (hints echo that form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub name: String,
    /// `--stack NAME` or a plain name was given (hints name the stack only then).
    pub given: bool,
    /// Given as a plain name after the verb (`oyster restart dev`).
    pub positional: bool,
    /// The user typed `oyster agent VERB` rather than the top-level alias.
    pub agent_form: bool,
}

impl Cli {
    /// The stack this run acts on: `--stack`, a plain name after the verb, or production.
    /// Both given and different, `--all` beside a name, or `--stack` on a command that shows
    /// every stack anyway, is refused.
    pub fn chosen(&self) -> Result<Chosen, StackConflict> {
        let flag = self.global.stack.as_deref();
        let plain = self.command.stack_arg();
        let verb = self.command.verb();
        if let Some(f) = flag {
            if self.command.ignores_stack() {
                return Err(StackConflict(format!(
                    "`oyster {verb}` does not take --stack (it is not about one stack), so --stack {f} would be ignored"
                )));
            }
            if self.command.all() {
                return Err(StackConflict(format!(
                    "--all means every stack, so --stack {f} contradicts it; give one or the other"
                )));
            }
        }
        let name = match (flag, plain) {
            (Some(f), Some(p)) if f != p => {
                return Err(StackConflict(format!(
                    "two different stacks given: `{p}` and `--stack {f}`; give the stack once"
                )))
            }
            (Some(f), _) => Some(f),
            (None, p) => p,
        };
        Ok(Chosen {
            name: name.unwrap_or(crate::host::stack::DEFAULT_STACK).to_owned(),
            given: name.is_some(),
            positional: flag.is_none() && plain.is_some(),
            agent_form: matches!(self.command, Command::Agent(_)),
        })
    }
}

impl Command {
    /// The `--port` given to this command, if it takes one (only commands that sync the config
    /// or plan the Host do).
    pub fn port(&self) -> Option<u16> {
        let host = |h: &HostArgs| h.port;
        match self {
            Command::Config(ConfigCommand::Sync { port, .. }) => *port,
            Command::Setup(a) => host(&a.host),
            Command::Start(a) => host(&a.host),
            Command::Restart { host: h, .. } | Command::Install { host: h, .. } => host(h),
            Command::Host(HostCommand::Start { host: h, .. }) => host(h),
            Command::Agent(a) => match a {
                AgentCommand::Print { host: h, .. }
                | AgentCommand::Install { host: h, .. }
                | AgentCommand::Regenerate { host: h, .. }
                | AgentCommand::Restart { host: h, .. } => host(h),
                AgentCommand::Start(a) => host(&a.host),
                _ => None,
            },
            _ => None,
        }
    }

    /// The stack given as a plain name after the verb, if this verb takes one.
    pub fn stack_arg(&self) -> Option<&str> {
        fn t(t: &Target) -> Option<&str> {
            t.stack_name.as_deref()
        }
        fn ts(t: &Targets) -> Option<&str> {
            t.stack_name.as_deref()
        }
        match self {
            Command::Setup(a) => t(&a.target),
            Command::Status { target, .. }
            | Command::Kill { target }
            | Command::Install { target, .. }
            | Command::Doctor { target, .. } => t(target),
            Command::Logs(a) => t(&a.target),
            Command::Start(a) => ts(&a.targets),
            Command::Stop { targets } | Command::Uninstall { targets } => ts(targets),
            Command::Restart { targets, .. } => ts(targets),
            Command::Agent(a) => match a {
                AgentCommand::Print { target, .. }
                | AgentCommand::Install { target, .. }
                | AgentCommand::Regenerate { target, .. }
                | AgentCommand::Status { target, .. }
                | AgentCommand::Kill { target } => t(target),
                AgentCommand::Restart { targets, .. }
                | AgentCommand::Stop { targets }
                | AgentCommand::Uninstall { targets } => ts(targets),
                AgentCommand::Start(a) => ts(&a.targets),
                AgentCommand::List { .. } => None,
            },
            Command::Host(
                HostCommand::Start { target, .. }
                | HostCommand::Stop { target }
                | HostCommand::Status { target, .. },
            )
            | Command::Config(
                ConfigCommand::Sync { target, .. } | ConfigCommand::Show { target, .. },
            )
            | Command::Providers(ProvidersCommand::Status { target, .. }) => t(target),
            _ => None,
        }
    }

    /// `--all`: every stack on disk.
    pub fn all(&self) -> bool {
        match self {
            Command::Start(a) | Command::Agent(AgentCommand::Start(a)) => a.targets.all,
            Command::Stop { targets }
            | Command::Uninstall { targets }
            | Command::Restart { targets, .. }
            | Command::Agent(
                AgentCommand::Stop { targets }
                | AgentCommand::Uninstall { targets }
                | AgentCommand::Restart { targets, .. },
            ) => targets.all,
            _ => false,
        }
    }

    /// Commands that are not about one stack, which refuse `--stack` rather than ignore it.
    fn ignores_stack(&self) -> bool {
        matches!(
            self,
            Command::List { .. }
                | Command::Agent(AgentCommand::List { .. })
                | Command::Completions { .. }
                | Command::Man { .. }
                | Command::Cleanup(_)
                | Command::CompleteStacks
        )
    }

    /// The verb as typed at the top level (`list`, `agent list`), for messages.
    fn verb(&self) -> String {
        let top = match self {
            Command::Setup(_) => "setup",
            Command::Status { .. } => "status",
            Command::Start(_) => "start",
            Command::Stop { .. } => "stop",
            Command::Restart { .. } => "restart",
            Command::Logs(_) => "logs",
            Command::List { .. } => "list",
            Command::Kill { .. } => "kill",
            Command::Install { .. } => "install",
            Command::Uninstall { .. } => "uninstall",
            Command::Cleanup(_) => "cleanup",
            Command::Doctor { .. } => "doctor",
            Command::Providers(_) => "providers",
            Command::Config(_) => "config",
            Command::Agent(AgentCommand::List { .. }) => return "agent list".into(),
            Command::Agent(_) => "agent",
            Command::Host(_) => "host",
            Command::Completions { .. } => "completions",
            Command::Man { .. } => "man",
            Command::CompleteStacks => "__complete-stacks",
        };
        top.to_owned()
    }

    /// A top-level alias as the `agent` verb it runs (`oyster stop` is `oyster agent stop`);
    /// any other command comes back as it was.
    #[allow(clippy::result_large_err)] // handed back by value once per run, never stored
    pub fn into_agent(self) -> Result<AgentCommand, Command> {
        Ok(match self {
            Command::Status { json, target } => AgentCommand::Status { json, target },
            Command::Start(a) => AgentCommand::Start(a),
            Command::Stop { targets } => AgentCommand::Stop { targets },
            Command::Restart {
                host,
                verify,
                targets,
                qr,
                restore_sessions,
            } => AgentCommand::Restart {
                host,
                verify,
                targets,
                qr,
                restore_sessions,
            },
            Command::List { json } => AgentCommand::List { json },
            Command::Kill { target } => AgentCommand::Kill { target },
            Command::Install {
                host,
                no_start,
                verify,
                target,
            } => AgentCommand::Install {
                host,
                no_start,
                verify,
                target,
            },
            Command::Uninstall { targets } => AgentCommand::Uninstall { targets },
            Command::Agent(a) => a,
            other => return Err(other),
        })
    }
}

/// Words people type for a verb oyster names otherwise (`brew services`, launchctl and
/// systemctl habits), each with the verb it means.
const MEANINGS: &[(&str, &str)] = &[
    ("info", "status"),
    ("show", "status"),
    ("state", "status"),
    ("health", "status"),
    ("ls", "list"),
    ("ps", "list"),
    ("stacks", "list"),
    ("run", "start"),
    ("up", "start"),
    ("load", "start"),
    ("enable", "start"),
    ("bootstrap", "start"),
    ("down", "stop"),
    ("halt", "stop"),
    ("unload", "stop"),
    ("disable", "stop"),
    ("bootout", "stop"),
    ("reload", "restart"),
    ("reboot", "restart"),
    ("bounce", "restart"),
    ("kickstart", "restart"),
    ("log", "logs"),
    ("tail", "logs"),
    ("remove", "uninstall"),
    ("rm", "uninstall"),
    ("delete", "uninstall"),
    ("add", "install"),
    ("clean", "cleanup"),
    ("prune", "cleanup"),
    ("gc", "cleanup"),
    ("check", "doctor"),
    ("diagnose", "doctor"),
    ("init", "setup"),
    ("configure", "setup"),
    ("terminate", "kill"),
    ("signal", "kill"),
    ("provider", "providers"),
    ("completion", "completions"),
];

/// Words that only say "a service" (`brew services list`, `service oyster restart`): the
/// verb is the next word.
const SERVICE_WORDS: &[&str] = &["services", "service", "brew", "launchctl", "systemctl"];

/// For an unknown verb, the command it most likely means, by meaning rather than spelling:
/// `oyster services list` → `` `oyster list` ``, `oyster reload dev` → `` `oyster restart dev` ``.
/// `None` when no meaning fits (clap's nearest spelling is the tip then).
pub fn meant_verb(args: &[OsString]) -> Option<String> {
    let words: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cmd = <Cli as clap::CommandFactory>::command();
    // The unknown word is the first that is not an option (or `--stack`'s value); under
    // `oyster agent` it is the word after `agent`.
    let mut i = 0;
    let mut scope: Vec<String> = vec![];
    // Options given before the verb, kept in the suggestion (after it, where clap takes them).
    let mut before: Vec<String> = vec![];
    let mut level = &cmd;
    while i < words.len() {
        let w = &words[i];
        if w == "--stack" {
            before.extend(words[i..(i + 2).min(words.len())].iter().cloned());
            i += 2;
            continue;
        }
        if w.starts_with('-') {
            before.push(w.clone());
            i += 1;
            continue;
        }
        match level.find_subcommand(w) {
            Some(sub) if sub.has_subcommands() => {
                scope.push(sub.get_name().to_owned());
                level = sub;
                i += 1;
            }
            _ => break,
        }
    }
    let unknown = words.get(i)?.to_ascii_lowercase();
    let exists = |v: &str| level.find_subcommand(v).is_some();
    let meaning = |w: &str| -> Option<String> {
        let w = w.to_ascii_lowercase();
        if exists(&w) {
            return Some(w);
        }
        MEANINGS
            .iter()
            .find(|(said, _)| *said == w)
            .map(|(_, verb)| (*verb).to_owned())
            .filter(|v| exists(v))
    };
    let (verb, rest) = if SERVICE_WORDS.contains(&unknown.as_str()) {
        match words.get(i + 1) {
            Some(next) => (meaning(next)?, &words[i + 2..]),
            None => ("list".to_owned(), &words[i + 1..]),
        }
    } else {
        (meaning(&unknown)?, &words[i + 1..])
    };
    let mut line = vec!["oyster".to_owned()];
    line.extend(scope);
    line.push(verb);
    line.extend(rest.iter().cloned());
    line.extend(before);
    Some(format!("try `{}`", line.join(" ")))
}

/// A port as people type it: a whole number from 1 to 65535 (said in those words, not Rust's).
pub fn port_number(s: &str) -> Result<u16, String> {
    match s.trim().parse::<u64>() {
        #[allow(clippy::cast_possible_truncation)] // the pattern bounds n to a u16
        Ok(n @ 1..=65535) => Ok(n as u16),
        _ => Err("a port is a whole number from 1 to 65535".into()),
    }
}

/// A count or duration as people type it: a whole number, 0 or more.
pub fn whole_number(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| "give a whole number (0, 1, 2, …)".into())
}

/// A wait: a whole number no larger than a day (a longer one is a typo, and would overflow a
/// deadline).
pub fn bounded_wait(s: &str) -> Result<u64, String> {
    const MAX: u64 = 86_400;
    match whole_number(s)? {
        n if n <= MAX => Ok(n),
        _ => Err(format!(
            "give a whole number up to {MAX} (a day in seconds)"
        )),
    }
}

/// A settle period in milliseconds: a whole number up to ten minutes.
pub fn bounded_settle(s: &str) -> Result<u64, String> {
    const MAX: u64 = 600_000;
    match whole_number(s)? {
        n if n <= MAX => Ok(n),
        _ => Err(format!("give a whole number of milliseconds up to {MAX}")),
    }
}

/// An `Examples:` block: commands, and a comment in a column after them (on the next line
/// for a long command), laid out for 80 columns.
fn example_block(rows: &[(String, &str)]) -> String {
    two_columns("Examples:", rows, 36)
}

/// Every example, in one place: `--help` shows them (`after_help`) and the man pages print
/// the same text as their EXAMPLES section.
pub fn examples_for(name: &str) -> String {
    let rows: &[(&str, &str)] = match name {
        "setup" => &[
            ("oyster setup", "plan, ask once, apply, verify"),
            ("oyster setup --dry-run", "print the plan; change nothing"),
            (
                "oyster setup --no-install-providers --yes",
                "set up the Host; install no provider",
            ),
            (
                "oyster setup --install-providers",
                "no question: install what is missing",
            ),
            (
                "oyster setup dev --port 8810 --root ~/src/oysterun --no-start",
                "",
            ),
        ],
        "status" => &[
            ("oyster status", "installed, loaded, running, verified?"),
            ("oyster status staging --json", "the facts, for scripts"),
            ("oyster info dev", "the same (as `brew services info`)"),
        ],
        "start" => &[
            ("oyster start", "undo `stop`: enable, load, verify"),
            ("oyster start dev", "the stack named dev"),
            ("oyster start --all", "every stack on this machine"),
        ],
        "stop" => &[
            ("oyster stop", "stays stopped across logins"),
            ("oyster stop --all", "every stack on this machine"),
        ],
        "restart" => &[
            ("oyster restart", "restart and verify"),
            (
                "oyster restart dev --wait 60",
                "wait up to 60 s for /health",
            ),
            (
                "oyster restart --restore-sessions",
                "the Host restores its sessions",
            ),
            ("oyster restart --all --no-qr", "every stack; no login QR"),
        ],
        "logs" => &[
            ("oyster logs", "the last 20 lines"),
            (
                "oyster logs staging -n 200",
                "the last 200 lines of staging",
            ),
            ("oyster logs -f", "follow; Ctrl-C ends it"),
        ],
        "list" => &[
            ("oyster list", "one line per stack (also: oyster ls)"),
            ("oyster list --json", "every stack's status document"),
        ],
        "kill" => &[("oyster kill", "SIGTERM the Host; launchd starts it again")],
        "install" => &[
            ("oyster install", "write, load and verify the LaunchAgent"),
            ("oyster install dev --port 8810 --root ~/src/oysterun", ""),
        ],
        "uninstall" => &[
            (
                "oyster uninstall",
                "boot out, remove the plist; keep config and logs",
            ),
            (
                "oyster uninstall --all",
                "every stack (before `brew uninstall oyster`)",
            ),
        ],
        "cleanup" => &[
            (
                "oyster cleanup",
                "list the leftover stacks; ask on a terminal",
            ),
            ("oyster cleanup --yes", "remove them without asking"),
        ],
        "doctor" => &[
            ("oyster doctor", "what is wrong, and the fix"),
            ("oyster doctor --json | jq .ok", ""),
            ("oyster doctor --probe", "also run `<provider> --version`"),
        ],
        "config" => &[
            ("oyster config show", "secrets redacted"),
            ("oyster config show --json", ""),
            ("oyster config sync --stack dev --port 8810", ""),
        ],
        "host" => &[
            (
                "oyster host start --root ~/src/oysterun",
                "start the Host without launchd (Linux)",
            ),
            ("oyster host status --json", ""),
            ("oyster host stop", ""),
        ],
        "completions" => &[
            ("oyster completions zsh > ~/.zfunc/_oyster", ""),
            (
                "oyster completions bash > /etc/bash_completion.d/oyster",
                "",
            ),
        ],
        "man" => &[
            ("oyster man | man -l -", "read oyster(1)"),
            (
                "oyster man --dir share/man/man1",
                "every page, for packagers",
            ),
        ],
        _ => &[],
    };
    let rows: Vec<(String, &str)> = rows.iter().map(|(c, w)| ((*c).to_owned(), *w)).collect();
    example_block(&rows)
}

/// `oyster --help` examples (also the man page's EXAMPLES). Provider names come from the
/// registry, like everything else about providers.
pub fn examples() -> String {
    let p = crate::provider::registry::PROVIDERS.last();
    let (id, name) = p.map_or(("PROVIDER", "a provider"), |p| {
        (p.id.as_str(), p.display_name)
    });
    let without = format!("do without {name}");
    example_block(&[
        (
            "oyster setup".into(),
            "set up the Host (asks before installing)",
        ),
        (
            "oyster status".into(),
            "installed, loaded, running, verified?",
        ),
        (
            "oyster logs -f".into(),
            "follow the Host log (secrets redacted)",
        ),
        ("oyster restart dev".into(), "restart stack dev, verify it"),
        ("oyster list".into(), "every stack on this machine"),
        (format!("oyster providers set {id} \"\""), &without),
        ("oyster doctor".into(), "what is wrong, and the fix"),
    ])
}

/// `oyster agent --help` examples.
pub fn agent_examples() -> String {
    example_block(&[
        (
            "oyster agent status --json".into(),
            "the facts, for scripts",
        ),
        (
            "oyster agent stop".into(),
            "stop the Host; stays stopped at login",
        ),
        (
            "oyster agent start".into(),
            "undo `stop`: enable, load, verify",
        ),
        (
            "oyster agent kill".into(),
            "SIGTERM the Host; launchd starts it again",
        ),
        (
            "oyster agent regenerate --dry-run".into(),
            "what an upgrade would change",
        ),
        (
            "oyster agent uninstall --all".into(),
            "every stack (config and logs kept)",
        ),
        (
            "oyster agent install --stack dev --port 8810 --root ~/src/oysterun".into(),
            "",
        ),
    ])
}

/// `oyster providers --help` examples (names from the registry).
pub fn providers_examples() -> String {
    let ids: Vec<&str> = crate::provider::registry::PROVIDERS
        .iter()
        .map(|p| p.id.as_str())
        .collect();
    let first = ids.first().copied().unwrap_or("PROVIDER");
    let last = ids.last().copied().unwrap_or("PROVIDER");
    example_block(&[
        ("oyster providers status".into(), ""),
        (
            format!("oyster providers set {first} ~/.local/bin/{first}"),
            "always use this one (manual)",
        ),
        (format!("oyster providers set {last} \"\""), "disable it"),
        (
            format!("oyster providers auto {last}"),
            "let oyster find it again",
        ),
        (
            "oyster agent regenerate".into(),
            "give the running Host the change",
        ),
    ])
}

#[derive(Debug, Args)]
pub struct SetupArgs {
    /// How the Host connects; recorded as connection_mode [default: the recorded mode, else
    /// direct]. Every mode keeps manual commands and disabled providers.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Where agents live, recorded as default_browse_path [default: ~/OysterunAgents].
    #[arg(long, value_name = "DIR")]
    pub agent_folder: Option<PathBuf>,
    /// Install missing providers without asking (the only way without a terminal).
    #[arg(long)]
    pub install_providers: bool,
    /// Set up the Host without installing any provider (a missing one stays unavailable).
    #[arg(long, conflicts_with = "install_providers")]
    pub no_install_providers: bool,
    /// Consent without a question (for scripts and the installer package): apply the plan;
    /// missing providers are installed only with --install-providers.
    #[arg(long)]
    pub yes: bool,
    /// Print the plan and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Configure everything but do not start the Host.
    #[arg(long)]
    pub no_start: bool,
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub verify: VerifyArgs,
    #[command(flatten)]
    pub qr: QrArgs,
    #[command(flatten)]
    pub target: Target,
}

impl SetupArgs {
    /// The choices the user typed that a re-run needs to plan the same Host (`--root`,
    /// `--node-bin`, `--port`, `--mode`, `--agent-folder`, `--no-start`), as shell words: a
    /// suggested `oyster setup …` without them would plan another one, or find no root.
    pub fn retyped(&self) -> String {
        let mut words = vec![];
        let mut path = |flag: &str, p: &Option<PathBuf>| {
            if let Some(p) = p {
                words.push(format!("{flag} {}", shell_word(&p.display().to_string())));
            }
        };
        path("--root", &self.host.root);
        path("--node-bin", &self.host.node_bin);
        path("--agent-folder", &self.agent_folder);
        if let Some(port) = self.host.port {
            words.push(format!("--port {port}"));
        }
        if let Some(v) = self.mode.and_then(|m| m.to_possible_value()) {
            words.push(format!("--mode {}", v.get_name()));
        }
        if self.no_start {
            words.push("--no-start".to_owned());
        }
        words.iter().map(|w| format!(" {w}")).collect()
    }
}

/// `s` as one POSIX shell word: unchanged when it holds only safe characters, else in single
/// quotes (a `'` inside as `'\''`).
fn shell_word(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[derive(Debug, Subcommand, Clone)]
pub enum AgentCommand {
    /// Print the LaunchAgent plist that would be installed (no side effects).
    Print {
        #[command(flatten)]
        host: HostArgs,
        #[command(flatten)]
        target: Target,
    },
    #[command(about = INSTALL_ABOUT)]
    Install {
        #[command(flatten)]
        host: HostArgs,
        /// Write the plist only; launchd starts it at the next login.
        #[arg(long)]
        no_start: bool,
        #[command(flatten)]
        verify: VerifyArgs,
        #[command(flatten)]
        target: Target,
    },
    /// Sync the config and rewrite the plist if its bytes change (run after upgrades); a loaded
    /// job whose definition changed is reloaded and verified.
    Regenerate {
        #[command(flatten)]
        host: HostArgs,
        /// Write the plist but leave the running job alone.
        #[arg(long)]
        no_restart: bool,
        /// Print a unified diff of what would change; write nothing.
        #[arg(long, conflicts_with = "no_restart")]
        dry_run: bool,
        #[command(flatten)]
        verify: VerifyArgs,
        #[command(flatten)]
        target: Target,
    },
    #[command(about = RESTART_ABOUT)]
    Restart {
        #[command(flatten)]
        host: HostArgs,
        #[command(flatten)]
        verify: VerifyArgs,
        #[command(flatten)]
        targets: Targets,
        #[command(flatten)]
        qr: QrArgs,
        #[arg(long, help = RESTORE_HELP)]
        restore_sessions: bool,
    },
    #[command(visible_alias = "info", about = STATUS_ABOUT)]
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: Target,
    },
    #[command(about = UNINSTALL_ABOUT)]
    Uninstall {
        #[command(flatten)]
        targets: Targets,
    },
    #[command(about = STOP_ABOUT)]
    Stop {
        #[command(flatten)]
        targets: Targets,
    },
    #[command(about = START_ABOUT)]
    Start(StartArgs),
    #[command(about = KILL_ABOUT)]
    Kill {
        #[command(flatten)]
        target: Target,
    },
    #[command(visible_alias = "ls", about = LIST_ABOUT)]
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// How long verification waits.
#[derive(Debug, Args, Clone, Copy)]
pub struct VerifyArgs {
    /// Seconds to wait for the new instance to run and answer GET /health with 200.
    #[arg(long, default_value_t = 30, value_name = "SECS", value_parser = bounded_wait)]
    pub wait: u64,
    /// Milliseconds the pid must stay unchanged after /health answered (catches crash loops).
    #[arg(long, default_value_t = 1500, value_name = "MS", value_parser = bounded_settle)]
    pub settle_ms: u64,
}

impl VerifyArgs {
    pub fn timing(&self) -> crate::agent::lifecycle::Timing {
        crate::agent::lifecycle::Timing {
            wait: std::time::Duration::from_secs(self.wait),
            settle: std::time::Duration::from_millis(self.settle_ms),
        }
    }
}

/// Where the Host comes from, on every command that starts or describes it.
#[derive(Debug, Args, Clone, Default)]
pub struct HostArgs {
    /// The Oysterun install root (holding host-service/server.mjs) [default: OYSTERUN_ROOT, the
    /// installed LaunchAgent's root, the `oysterun` npm package of the pinned Node, then
    /// <bin>/../share/oysterun].
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// The Node (v20+) that runs the Host [default: OYSTERUN_NODE_BIN, the installed pin, then
    /// node found like a provider].
    #[arg(long, value_name = "PATH")]
    pub node_bin: Option<PathBuf>,
    /// The stack's port, recorded as `port` in its config.json (a custom stack needs it once;
    /// production is 8802 and staging 9902 unless recorded otherwise).
    #[arg(long, value_name = "PORT", value_parser = port_number)]
    pub port: Option<u16>,
}

impl HostArgs {
    pub fn inputs(&self) -> crate::host::plan::HostInputs {
        crate::host::plan::HostInputs {
            root: self.root.clone(),
            node_bin: self.node_bin.clone(),
        }
    }
}

/// How the Host connects (setup's `--mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Direct,
    CloudDirect,
    Managed,
    ManagedPending,
}

impl From<ModeArg> for crate::setup::Mode {
    fn from(m: ModeArg) -> Self {
        use crate::setup::Mode;
        match m {
            ModeArg::Direct => Mode::Direct,
            ModeArg::CloudDirect => Mode::CloudDirect,
            ModeArg::Managed => Mode::Managed,
            ModeArg::ManagedPending => Mode::ManagedPending,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// Start the Host directly with the generated environment and a pid file.
    Start {
        #[command(flatten)]
        host: HostArgs,
        #[command(flatten)]
        verify: VerifyArgs,
        #[command(flatten)]
        target: Target,
    },
    /// Stop the Host recorded in the pid file (only that exact process).
    Stop {
        #[command(flatten)]
        target: Target,
    },
    /// Show whether the directly started Host runs, answers /health and has its environment.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: Target,
    },
    /// The Host's launch program, which launchd (the LaunchAgent's ProgramArguments) and
    /// `host start` run: sync the config, write the pid and origin files Oysterun's scripts
    /// read, then exec OYSTERUN_NODE_BIN <OYSTERUN_REPO_ROOT>/host-service/server.mjs with its
    /// environment unchanged. Writes only to the Host log (its stderr). Not for interactive use.
    Exec,
}

#[derive(Debug, Subcommand)]
pub enum ProvidersCommand {
    /// Show what resolution finds now, without writing anything.
    Resolve {
        /// Providers to resolve (default: all).
        #[arg(value_parser = ProviderName)]
        providers: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Save a provider's command (Host Preferences): a full path makes it `manual`; an empty
    /// string disables it.
    Set {
        #[arg(value_parser = ProviderName)]
        provider: String,
        /// An absolute path (`~/` is expanded), or "" to disable the provider.
        #[arg(allow_hyphen_values = true)]
        command: OsString,
    },
    /// Hand a provider back to discovery (`auto`).
    Auto {
        #[arg(value_parser = ProviderName)]
        provider: String,
    },
    /// Show each provider's intent, command, state and authentication (home shown as ~).
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: Target,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// The stack config sync: migrate, merge what resolution finds, record --port; writes only
    /// when something changed.
    Sync {
        /// The stack's port, recorded as `port` in its config.json.
        #[arg(long, value_name = "PORT", value_parser = port_number)]
        port: Option<u16>,
        #[command(flatten)]
        target: Target,
    },
    /// Print the config with secrets redacted and home shown as ~.
    Show {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: Target,
    },
}

/// A provider name, checked against the registry while the command line is parsed: an
/// unsupported name fails closed (exit 2) before oyster touches any file, and completions
/// offer the supported names.
#[derive(Debug, Clone, Copy)]
pub struct ProviderName;

impl clap::builder::TypedValueParser for ProviderName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        crate::provider::registry::lookup(&value.to_string_lossy())
            .map(|p| p.id.as_str().to_owned())
            .map_err(|e| {
                clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{e}\n"))
                    .with_cmd(cmd)
            })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            crate::provider::registry::PROVIDERS
                .iter()
                .map(|p| clap::builder::PossibleValue::new(p.id.as_str())),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_column_block_fits_80_columns_and_keeps_every_word() {
        let long = "word ".repeat(60);
        let rows = vec![
            ("short".to_owned(), long.as_str()),
            (
                "a-first-column-longer-than-the-limit-of-twenty".to_owned(),
                "text",
            ),
            ("x".to_owned(), ""),
        ];
        let out = two_columns("Title:", &rows, 20);
        for line in out.lines() {
            assert!(line.chars().count() <= HELP_WIDTH, "{line:?}");
        }
        assert_eq!(out.matches("word").count(), 60);
        // The long first column stands alone; its text is on the next line, at the column.
        let lines: Vec<&str> = out.lines().collect();
        let i = lines
            .iter()
            .position(|l| l.contains("longer-than"))
            .unwrap();
        assert_eq!(
            lines[i].trim(),
            "a-first-column-longer-than-the-limit-of-twenty"
        );
        assert_eq!(lines[i + 1].trim(), "text");
        assert_eq!(lines[i + 1].len() - "text".len(), 2 + "short".len() + 3);
    }

    #[test]
    fn an_unknown_verb_is_mapped_by_meaning_keeping_the_rest() {
        let m = |args: &[&str]| {
            let v: Vec<OsString> = std::iter::once("oyster")
                .chain(args.iter().copied())
                .map(OsString::from)
                .collect();
            meant_verb(&v)
        };
        assert_eq!(
            m(&["services", "list"]).as_deref(),
            Some("try `oyster list`")
        );
        assert_eq!(m(&["services"]).as_deref(), Some("try `oyster list`"));
        assert_eq!(
            m(&["--stack", "x", "reload", "-f"]).as_deref(),
            Some("try `oyster restart -f --stack x`")
        );
        assert_eq!(
            m(&["agent", "bootout"]).as_deref(),
            Some("try `oyster agent stop`")
        );
        // No meaning fits: clap's spelling tip stays.
        assert_eq!(m(&["restat"]), None);
        assert_eq!(m(&["services", "frobnicate"]), None);
    }
}
