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
    after_long_help = format!("{}\n\n{ENVIRONMENT_HELP}", examples())
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
pub const ENVIRONMENT_HELP: &str = "\
Environment:
  HOME                           the home directory (~); the stack's files and the plist live under it
  OYSTERUN_STACKS_DIR            where non-production stacks live [default: ~/.oysterun-stacks]; absolute
  OYSTERUN_CONFIG_DIR            overrides the stack's config dir (said in output); absolute
  OYSTERUN_ROOT                  the Oysterun install root, when --root is not given
  OYSTERUN_NODE_BIN              the Node to pin, when --node-bin is not given (must be valid)
  OYSTER_LAUNCHCTL               a launchctl-compatible program instead of /bin/launchctl (said in
                                 output); `none` means no launchd here (setup starts the Host directly)
  OYSTER_LAUNCHCTL_TIMEOUT_SECS  how long one launchctl call may take [default: 30, at most 3600]
  OYSTER_ENV_PROOF               `exec` or `launchd`: prove the Host's environment as on Macs whose kernel
                                 hides it: from `host exec`'s own record, or from launchd's definition
  NO_COLOR                       no colour, even on a terminal
  npm_config_prefix              also searched for the `oysterun` npm package (the Oysterun root)
  PATH                           searched for providers and node (never given to the Host)

Exit status: 0 success (a cancel included), 1 the operation failed, 2 invalid input or usage.";

/// Options every command takes, before or after the subcommand.
#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// The stack: `production` (default), `staging`, or a custom name (`oyster agent list`
    /// shows the stacks on this machine).
    #[arg(long, global = true, default_value = crate::host::stack::DEFAULT_STACK, value_name = "NAME")]
    pub stack: String,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Find and configure the provider commands (claude, codex).
    #[command(subcommand, after_help = providers_examples())]
    Providers(ProvidersCommand),
    /// Read and synchronize the stack's config.json.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// The LaunchAgent: generate, install, restart and verify the launchd job.
    #[command(subcommand, after_help = agent_examples())]
    Agent(AgentCommand),
    /// Direct (pid-file) Host startup, for Linux and macOS without launchd.
    #[command(subcommand)]
    Host(HostCommand),
    /// Release Setup: plan providers, config, AgentFolder and service; ask; then apply (a
    /// cancel changes nothing, a failure rolls back).
    Setup(SetupArgs),
    /// Print a shell completion script (for packagers).
    #[command(hide = true)]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page in roff (for packagers); `--dir DIR` writes every page (oyster.1,
    /// oyster-agent.1, …) into DIR instead.
    #[command(hide = true)]
    Man {
        /// Write oyster.1 and one page per subcommand into this directory.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Check node, providers, the plist, launchd, the live Host and the log dir; say the fix.
    Doctor {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Also run `<provider> --version` (only that: never login, model or auth).
        #[arg(long)]
        probe: bool,
    },
    /// Print the Host log (secrets redacted); `-f` follows it, across rotation and truncation.
    #[command(after_help = LOGS_EXAMPLES)]
    Logs(LogsArgs),
    /// Alias of `oyster agent status`.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Alias of `oyster agent start`.
    Start(StartArgs),
    /// Alias of `oyster agent stop`.
    Stop,
    /// Alias of `oyster agent restart`.
    Restart {
        #[command(flatten)]
        host: HostArgs,
        #[command(flatten)]
        verify: VerifyArgs,
    },
    /// Alias of `oyster agent list`.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
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
}

/// `oyster agent start`: what `install` takes, since it regenerates the plist first.
#[derive(Debug, Args, Clone)]
pub struct StartArgs {
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

impl Command {
    /// The `--port` given to this command, if it takes one (only commands that sync the config
    /// or plan the Host do).
    pub fn port(&self) -> Option<u16> {
        let host = |h: &HostArgs| h.port;
        match self {
            Command::Config(ConfigCommand::Sync { port }) => *port,
            Command::Setup(a) => host(&a.host),
            Command::Start(a) => host(&a.host),
            Command::Restart { host: h, .. } => host(h),
            Command::Host(HostCommand::Start { host: h, .. }) => host(h),
            Command::Agent(a) => match a {
                AgentCommand::Print { host: h }
                | AgentCommand::Install { host: h, .. }
                | AgentCommand::Regenerate { host: h, .. }
                | AgentCommand::Restart { host: h, .. } => host(h),
                AgentCommand::Start(a) => host(&a.host),
                _ => None,
            },
            _ => None,
        }
    }
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

/// An `Examples:` block: commands, and a comment aligned after the longest.
fn example_block(rows: &[(String, &str)]) -> String {
    let width = rows.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    let mut out = String::from("Examples:");
    for (cmd, what) in rows {
        out.push_str("\n  ");
        if what.is_empty() {
            out.push_str(cmd);
        } else {
            out.push_str(&format!("{cmd:<width$}   {what}"));
        }
    }
    out
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
            "set up the Host once (asks before installing anything)",
        ),
        (
            "oyster status".into(),
            "installed, loaded, running, verified?",
        ),
        (
            "oyster logs -f".into(),
            "follow the Host log (secrets redacted)",
        ),
        (
            "oyster restart".into(),
            "restart and verify (also: stop, start)",
        ),
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
            "stop the Host; it stays stopped across logins",
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

/// `oyster logs --help` examples.
pub const LOGS_EXAMPLES: &str = "\
Examples:
  oyster logs                       the last 20 lines
  oyster logs -n 200 --stack staging
  oyster logs -f                    follow; Ctrl-C ends it";

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
    /// Configure everything but do not start the Host.
    #[arg(long)]
    pub no_start: bool,
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Print the LaunchAgent plist that would be installed (no side effects).
    Print {
        #[command(flatten)]
        host: HostArgs,
    },
    /// Write the LaunchAgent, load it into launchd, and verify the running Host.
    Install {
        #[command(flatten)]
        host: HostArgs,
        /// Write the plist only; launchd starts it at the next login.
        #[arg(long)]
        no_start: bool,
        #[command(flatten)]
        verify: VerifyArgs,
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
    },
    /// Restart the Host: reload when the definition changed (kickstart never re-reads a plist),
    /// else a graceful restart (SIGTERM through launchd, then kickstart; SIGKILL only if the old
    /// Host outlives its exit timeout); then verify, rolling back a changed plist that does not
    /// verify.
    Restart {
        #[command(flatten)]
        host: HostArgs,
        #[command(flatten)]
        verify: VerifyArgs,
    },
    /// Show installed, loaded, running and verified as separate facts.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Boot the job out and remove the plist; config, history and logs are kept.
    Uninstall,
    /// Stop the Host: boot the job out and disable the label so it stays stopped across logins;
    /// the plist is kept (`start` undoes it).
    Stop,
    /// Start the Host: enable the label, regenerate and load the plist, verify (undoes `stop`).
    Start(StartArgs),
    /// Send SIGTERM to the running Host only; launchd (KeepAlive) starts it again.
    Kill,
    /// Every stack found on this machine: label, port, installed, loaded, running, verified.
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
    #[arg(long, default_value_t = 1000, value_name = "MS", value_parser = bounded_settle)]
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
    },
    /// Stop the Host recorded in the pid file (only that exact process).
    Stop,
    /// Show whether the directly started Host runs, answers /health and has its environment.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
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
    },
    /// Print the config with secrets redacted and home shown as ~.
    Show {
        /// Print JSON.
        #[arg(long)]
        json: bool,
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
