//! The command groups under a second word (`host`, `providers`, `config`, `mdm`) and the
//! fleet's `inventory`, with the provider-name parser they share: their `///` comments are
//! their help.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{port_number, HostArgs, StackFlag, Target, VerifyArgs};

/// `oyster mdm`.
#[derive(Debug, Subcommand)]
pub enum MdmCommand {
    /// Write the Managed Login Items profile (.mobileconfig) that lets every stack's
    /// LaunchAgent run without a Background Items alert; install it through MDM (macOS 13+).
    Profile {
        /// Write the profile to this file instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
        /// The organization the profile names (PayloadOrganization).
        #[arg(long, value_name = "NAME")]
        organization: Option<String>,
    },
}

/// `oyster inventory`.
#[derive(Debug, Args)]
pub struct InventoryArgs {
    /// Print the JSON document (docs/json.md); without it, a short summary.
    #[arg(long)]
    pub json: bool,
    /// Print one value as `<result>VALUE</result>` (a Jamf extension attribute); KEY is a
    /// top-level key or a summary key (see docs/fleet.md).
    #[arg(long, value_name = "KEY", conflicts_with = "json")]
    pub result: Option<String>,
    /// Print only this user's part, as JSON (what root's inventory runs as each user).
    #[arg(long, hide = true, conflicts_with_all = ["json", "result"])]
    pub user_part: bool,
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
    Exec {
        #[command(flatten)]
        flag: StackFlag,
    },
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
        #[command(flatten)]
        flag: StackFlag,
    },
    /// Save a provider's command (Host Preferences): a full path makes it `manual`; an empty
    /// string disables it.
    Set {
        #[arg(value_parser = ProviderName)]
        provider: String,
        /// An absolute path (`~/` is expanded), or "" to disable the provider.
        #[arg(allow_hyphen_values = true)]
        command: OsString,
        #[command(flatten)]
        flag: StackFlag,
    },
    /// Hand a provider back to discovery (`auto`).
    Auto {
        #[arg(value_parser = ProviderName)]
        provider: String,
        #[command(flatten)]
        flag: StackFlag,
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

/// `oyster env`: the Host's declared environment (names and values the user declares; values
/// are never shown).
#[derive(Debug, Args)]
pub struct EnvArgs {
    #[command(subcommand)]
    pub command: Option<EnvCommand>,
    /// Print JSON (as `env list --json`).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub flag: StackFlag,
}

#[derive(Debug, Subcommand)]
pub enum EnvCommand {
    /// List the declared variables by name (never a value), marking those your organization
    /// forces; also what `oyster env` alone does.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: Target,
    },
    /// Declare a variable for the Host (a proxy, NODE_EXTRA_CA_CERTS, …): kept in the stack's
    /// 0600 env file, added by the launch program at every start, never in the plist or unit.
    Set {
        /// The variable's name (letters, digits, `_`; not PATH, HOME, USER, LOGNAME, SHELL,
        /// TMPDIR, OYSTERUN_* or OYSTER_*).
        #[arg(value_name = "NAME")]
        name: String,
        /// Its value (one line). A secret is better given with --value-stdin: a value on the
        /// command line stays in the shell's history.
        #[arg(
            value_name = "VALUE",
            allow_hyphen_values = true,
            required_unless_present = "value_stdin",
            conflicts_with = "value_stdin"
        )]
        value: Option<OsString>,
        /// Read the value from stdin (its first line), so it is never in argv or a history.
        #[arg(long)]
        value_stdin: bool,
        #[command(flatten)]
        restart: RestartChoice,
        #[command(flatten)]
        flag: StackFlag,
    },
    /// Remove a declared variable (the Host loses it at its next start).
    Unset {
        #[arg(value_name = "NAME")]
        name: String,
        #[command(flatten)]
        restart: RestartChoice,
        #[command(flatten)]
        flag: StackFlag,
    },
}

/// Whether `env set`/`unset` restart a running Host (asked on a terminal when neither).
#[derive(Debug, Args, Clone, Copy, Default)]
pub struct RestartChoice {
    /// Restart the running Host now, so it gets the change (and verify it).
    #[arg(long, conflicts_with = "no_restart")]
    pub restart: bool,
    /// Leave the running Host alone; it gets the change at its next start.
    #[arg(long)]
    pub no_restart: bool,
}

impl RestartChoice {
    /// `Some(true)` restart, `Some(false)` do not, `None` ask on a terminal.
    pub fn wanted(self) -> Option<bool> {
        match (self.restart, self.no_restart) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        }
    }
}
