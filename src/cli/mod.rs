//! The command line, in one place: these clap structs and their `///` comments are the help.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod groups;
mod help;
mod meaning;
mod resolve;
mod top_help;
mod usage;
pub(crate) mod values;

pub use groups::{
    ConfigCommand, EnvArgs, EnvCommand, HostCommand, InventoryArgs, MdmCommand, ProvidersCommand,
};

pub use resolve::Unresolved;
pub use usage::reword;

pub use help::{with_help, ENVIRONMENT};
pub use meaning::meant_verb;
pub use top_help::{details_for, GROUPS};
pub use values::{bounded_settle, bounded_wait, port_number, whole_number};

/// Installs, starts, restarts and verifies the Oysterun Host, and keeps its provider commands
/// (claude, codex) durable across setup, restarts and upgrades.
#[derive(Debug, Parser)]
#[command(
    name = "oyster",
    version,
    propagate_version = true,
    max_term_width = 80
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// Without one, oyster shows the stacks on this machine (as `brew services` alone does).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// A part of the tree clap builds only when the command line names it (clap's
/// `Command::defer`): a group's subcommands (`agent`, `providers`, `config`, `host`, `mdm`) or
/// a verb's options (`setup`, `logs`, `cleanup`, `inventory`, `start`, `restart`). An everyday
/// run never pays for the trees it does not use. Whatever walks the whole tree (help, man
/// pages, completions, the nearest-name hints) takes [`Cli::whole`], which builds it all.
#[derive(Debug, Clone)]
pub struct Deferred<T>(pub T);

impl<T: Subcommand> Subcommand for Deferred<T> {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        cmd.defer(|group| keeping_words(group, T::augment_subcommands))
    }
    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        cmd.defer(|group| keeping_words(group, T::augment_subcommands_for_update))
    }
    fn has_subcommand(name: &str) -> bool {
        T::has_subcommand(name)
    }
}

/// Adds a group's subcommands and keeps the group's own words (its variant's doc comment):
/// built late, the enum's doc comment would replace them.
fn keeping_words(
    group: clap::Command,
    augment: fn(clap::Command) -> clap::Command,
) -> clap::Command {
    let about = group.get_about().cloned();
    let long_about = group.get_long_about().cloned();
    let mut cmd = augment(group);
    if let Some(about) = about {
        cmd = cmd.about(about);
    }
    if let Some(long_about) = long_about {
        cmd = cmd.long_about(long_about);
    }
    cmd
}

/// A verb whose options clap adds only when the command line names it (the same `defer`).
impl<T: Args> Args for Deferred<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.defer(|verb| keeping_words(verb, T::augment_args))
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        cmd.defer(|verb| keeping_words(verb, T::augment_args_for_update))
    }
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

impl<T: clap::FromArgMatches> clap::FromArgMatches for Deferred<T> {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(m).map(Deferred)
    }
    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(m)
    }
}

/// `--stack` before the subcommand (`oyster --stack dev restart`); each command about one
/// stack also takes it after its name, and only those: `list --help` does not offer it.
#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// The stack: `production` (default), `staging`, or a custom name (`oyster list` shows the
    /// stacks on this machine).
    #[arg(long, value_name = "NAME")]
    pub stack: Option<String>,
    /// Print nothing on stdout but what the command was asked to show (an action's own
    /// report and progress are left out; warnings and errors still go to stderr).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Say more: how each start was proven (the environment proof, the Host's PATH), and for
    /// `version` each stack's Node and Oysterun.
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

/// `--stack NAME` on a command about one stack.
#[derive(Debug, Args, Clone, Default)]
pub struct StackFlag {
    /// The stack: `production` (default), `staging`, or a custom name (`oyster list` shows the
    /// stacks on this machine).
    #[arg(long = "stack", value_name = "NAME")]
    pub stack: Option<String>,
}

/// A stack given as a plain name after the verb, as `brew services restart NAME` takes one,
/// or as `--stack NAME`.
#[derive(Debug, Args, Clone, Default)]
pub struct Target {
    /// The stack, as `--stack STACK` [default: production].
    #[arg(value_name = "STACK")]
    pub stack_name: Option<String>,
    #[command(flatten)]
    pub flag: StackFlag,
}

/// A stack by name, or every stack on disk with `--all`.
#[derive(Debug, Args, Clone, Default)]
pub struct Targets {
    /// The stack, as `--stack STACK` [default: production].
    #[arg(value_name = "STACK")]
    pub stack_name: Option<String>,
    #[command(flatten)]
    pub flag: StackFlag,
    /// Every stack found on this machine, one after another; exit 1 if any failed, naming them.
    #[arg(long, conflicts_with = "stack_name")]
    pub all: bool,
    #[command(flatten)]
    pub preview: Preview,
}

/// `--dry-run [--json]`: the steps the run would take, changing nothing.
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct Preview {
    /// Print the steps this run would take, in order, and change nothing (a refusal is said
    /// as the run would say it).
    #[arg(long)]
    pub dry_run: bool,
    /// With --dry-run: print the steps as JSON (`{"steps": [...]}`).
    #[arg(long, requires = "dry_run")]
    pub json: bool,
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

// The words of each verb, shared by `oyster agent VERB` and its top-level alias, so the alias's
// help (and man page) is the full help of what it runs.
const STATUS_ABOUT: &str =
    "Show installed, loaded, running and verified as separate facts (exit 1 unless verified)";
const START_ABOUT: &str =
    "Start the Host: enable the label, regenerate and load the plist, verify (undoes `stop`)";
const STOP_ABOUT: &str = "Stop the Host: boot the job out and disable the label so it stays stopped across logins; the plist is kept (`start` undoes it)";
// One or two lines: how it restarts is its man page's (`cli::help` DETAILS).
const RESTART_ABOUT: &str = "Restart the Host and verify it; a changed definition (the plist or unit) is reloaded, and rolled back if it does not verify";
const LIST_ABOUT: &str =
    "Every stack found on this machine: its status in one word, port, pid, last exit and log";
const KILL_ABOUT: &str = "Send SIGTERM to the running Host only; launchd (KeepAlive) starts it again (brew's `kill`, stopped until the next login, is `stop --keep`)";
const INSTALL_ABOUT: &str =
    "Write the LaunchAgent, load it into launchd, and verify the running Host";
const UNINSTALL_ABOUT: &str =
    "Boot the job out and remove the plist; config, history and logs are kept (--purge deletes them too)";
const RESTORE_HELP: &str = "Before restarting, run the root's host-service/cli/prepare-restart-restore.mjs so the Host restores its sessions (as Oysterun's `service:restart --restore-sessions`).";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Release Setup: plan providers, config, AgentFolder and service; ask; then apply (a
    /// cancel changes nothing, a failure rolls back).
    Setup(Deferred<SetupArgs>),
    /// The launchd job's verbs, also as `oyster agent VERB`: both forms parse into the same
    /// variant.
    #[command(flatten)]
    Job(JobCommand),
    /// Print the Host log (secrets redacted); `-f` follows it, across rotation and truncation.
    Logs(Deferred<LogsArgs>),
    /// Remove stacks that hold nothing but oyster's own bookkeeping (no plist, no Host, no
    /// config, no log): lists them, asks on a terminal, `--yes` without one.
    Cleanup(Deferred<CleanupArgs>),
    /// Check node, providers, the plist, launchd, the live Host and the log dir; say the fix.
    Doctor {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Also run `<provider> --version` (only that: never login, model or auth).
        #[arg(long)]
        probe: bool,
        /// Every stack found on this machine, one report each; exit 1 if any check failed.
        #[arg(long, conflicts_with = "stack_name")]
        all: bool,
        #[command(flatten)]
        target: Target,
    },
    /// Find and configure the provider commands (claude, codex).
    #[command(subcommand)]
    Providers(Deferred<ProvidersCommand>),
    /// Read and synchronize the stack's config.json.
    #[command(subcommand)]
    Config(Deferred<ConfigCommand>),
    /// The Host's declared environment (proxies, CA bundles): list, set, unset; values are
    /// secrets, never shown, and never in the plist or unit.
    Env(Deferred<EnvArgs>),
    /// The LaunchAgent: generate, install, restart and verify the launchd job.
    #[command(subcommand)]
    Agent(Deferred<AgentCommand>),
    /// Direct (pid-file) Host startup, for Linux and macOS without launchd.
    #[command(subcommand)]
    Host(Deferred<HostCommand>),
    /// Print oyster's version; `--verbose` adds, per stack, the pinned Node and the Oysterun
    /// root with its version.
    Version,
    /// Open the Host's URL in the browser (`open` on macOS, `xdg-open` elsewhere; the URL is
    /// printed when neither exists).
    Open {
        #[command(flatten)]
        target: Target,
    },
    /// Show the login QR again, through the Oysterun root's own entry point (as after `start`).
    Qr {
        #[command(flatten)]
        target: Target,
    },
    /// Print a shell completion script (`--stack` completes the stacks on this machine).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page in roff; `--dir DIR` writes every page (oyster.1, oyster-agent.1, …)
    /// into DIR instead.
    Man {
        /// Write oyster.1 and one page per subcommand into this directory.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// For MDM administrators: configuration profiles for the Macs of an organisation.
    #[command(subcommand)]
    Mdm(Deferred<MdmCommand>),
    /// One JSON document about oyster on this Mac (every user's stacks when run as root), for
    /// MDM inventory; read-only, bounded, exit 0 even when something is broken.
    Inventory(Deferred<InventoryArgs>),
    /// The stacks on this machine, one per line (what the completion scripts offer).
    #[command(name = "__complete-stacks", hide = true)]
    CompleteStacks,
}

/// The verbs of the launchd job, written once: `oyster VERB` (as `brew services VERB`) and
/// `oyster agent VERB` both parse into these.
#[derive(Debug, Subcommand, Clone)]
pub enum JobCommand {
    #[command(visible_alias = "info", about = STATUS_ABOUT)]
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Every stack on this machine, one after another (`--json`: `{"stacks": [...]}`); exit
        /// 1 unless every one is verified.
        #[arg(long, conflicts_with = "stack_name")]
        all: bool,
        #[command(flatten)]
        target: Target,
    },
    #[command(about = START_ABOUT)]
    Start(Deferred<StartArgs>),
    #[command(about = STOP_ABOUT)]
    Stop {
        /// Stop it now but keep it registered: launchd starts it again at the next login (as
        /// `brew services stop --keep`).
        #[arg(long)]
        keep: bool,
        /// Return once launchd was told; do not wait for the Host to exit.
        #[arg(long)]
        no_wait: bool,
        #[command(flatten)]
        targets: Targets,
    },
    #[command(about = RESTART_ABOUT)]
    Restart(Deferred<RestartArgs>),
    #[command(visible_alias = "ls", about = LIST_ABOUT)]
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Never cut the LOG path to fit the terminal (piped output never is).
        #[arg(long, short, conflicts_with = "json")]
        wide: bool,
    },
    #[command(about = KILL_ABOUT)]
    Kill {
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
        login_items: LoginItemsArgs,
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        preview: Preview,
    },
    #[command(about = UNINSTALL_ABOUT)]
    Uninstall {
        #[command(flatten)]
        targets: Targets,
        /// Also delete the stack's data: its config, logs and the Host's history (the whole
        /// stack directory), after a question naming what goes; the AgentFolder is kept.
        #[arg(long, conflicts_with = "all")]
        purge: bool,
        /// With --purge: delete without asking (the only way without a terminal).
        #[arg(long, requires = "purge")]
        yes: bool,
    },
}

/// `oyster agent …`: the job's verbs, plus the two that only make sense about the plist.
#[derive(Debug, Subcommand, Clone)]
pub enum AgentCommand {
    /// Print the LaunchAgent plist that would be installed (no side effects).
    Print {
        #[command(flatten)]
        host: HostArgs,
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
        login_items: LoginItemsArgs,
        #[command(flatten)]
        target: Target,
    },
    #[command(flatten)]
    Job(JobCommand),
}

/// `oyster restart` / `oyster agent restart`.
#[derive(Debug, Args, Clone)]
pub struct RestartArgs {
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub verify: VerifyArgs,
    #[command(flatten)]
    pub login_items: LoginItemsArgs,
    #[command(flatten)]
    pub targets: Targets,
    #[command(flatten)]
    pub qr: QrArgs,
    #[arg(long, help = RESTORE_HELP)]
    pub restore_sessions: bool,
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
    /// Also remove uninstalled stacks (no LaunchAgent, no Host) that still hold a config or
    /// logs, naming each file; without it those are kept (with `--yes`, or asked about one by
    /// one on a terminal).
    #[arg(long)]
    pub purge: bool,
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
    pub login_items: LoginItemsArgs,
    #[command(flatten)]
    pub targets: Targets,
    #[command(flatten)]
    pub qr: QrArgs,
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
    /// Read the Host's login password from stdin (as `docker login` does); without it, setup
    /// asks on a terminal when no login is set.
    #[arg(long)]
    pub password_stdin: bool,
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
            ignore_login_items: false,
        }
    }

    /// [`VerifyArgs::timing`] with the job verbs' `--ignore-login-items`.
    pub fn loading(&self, li: LoginItemsArgs) -> crate::agent::lifecycle::Timing {
        crate::agent::lifecycle::Timing {
            ignore_login_items: li.ignore_login_items,
            ..self.timing()
        }
    }
}

/// The job verbs that may reload a loaded job (issue 39 item 2).
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct LoginItemsArgs {
    /// Reload a loaded Host that does not run even though System Settings → General → Login
    /// Items says it is switched off (ServiceManagement's answer for a LaunchAgent can be
    /// wrong); a Host that runs is reloaded anyway, with a note.
    #[arg(long)]
    pub ignore_login_items: bool,
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
            port: self.port,
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

#[cfg(test)]
mod tests;

impl Cli {
    /// The whole tree, every [`Deferred`] part added: for what walks it (help, man pages,
    /// completions, the hints that name the verb a user meant). A test proves nothing is left
    /// deferred in it.
    pub fn whole() -> clap::Command {
        /// A deferred group with its subcommands added now (its deferred step made a no-op).
        fn group<T: Subcommand>(group: clap::Command) -> clap::Command {
            keeping_words(group.defer(std::convert::identity), T::augment_subcommands)
        }
        /// A deferred verb with its options added now.
        fn verb<T: Args>(verb: clap::Command) -> clap::Command {
            keeping_words(verb.defer(std::convert::identity), T::augment_args)
        }
        /// The top level's and `agent`'s deferred parts (the job's verbs are in both).
        fn now(sc: clap::Command) -> clap::Command {
            match sc.get_name() {
                "agent" => group::<AgentCommand>(sc).mut_subcommands(now),
                "providers" => group::<ProvidersCommand>(sc),
                "config" => group::<ConfigCommand>(sc),
                "env" => verb::<EnvArgs>(sc),
                "host" => group::<HostCommand>(sc),
                "mdm" => group::<MdmCommand>(sc),
                "setup" => verb::<SetupArgs>(sc),
                "logs" => verb::<LogsArgs>(sc),
                "cleanup" => verb::<CleanupArgs>(sc),
                "inventory" => verb::<InventoryArgs>(sc),
                "start" => verb::<StartArgs>(sc),
                "restart" => verb::<RestartArgs>(sc),
                _ => sc,
            }
        }
        <Cli as clap::CommandFactory>::command().mut_subcommands(now)
    }

    /// Parses `args`; the help text (examples, the environment block) is laid out only when
    /// the command line asks for help (`-h`, `--help`, `help`) or names no subcommand where
    /// one is needed, whose answer is help.
    pub fn parse_args(args: &[std::ffi::OsString]) -> Result<Cli, clap::Error> {
        use clap::{CommandFactory, FromArgMatches};
        let asks = args
            .iter()
            .skip(1)
            .any(|a| a == "-h" || a == "--help" || a == "help");
        let parse = |cmd: clap::Command| {
            cmd.try_get_matches_from(args)
                .and_then(|m| Cli::from_arg_matches(&m))
        };
        if asks {
            return parse(with_help(Cli::whole()));
        }
        match parse(Cli::command()) {
            Err(e)
                if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
            {
                parse(with_help(Cli::whole()))
            }
            other => other,
        }
    }
}
