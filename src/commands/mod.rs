//! One module per command: the user interface. Each parses nothing (clap did), calls the domain
//! modules, prints through the printer, and returns an [`ExitStatus`].

pub mod agent;
pub mod config;
pub mod doctor;
pub mod host;
pub mod logs;
pub mod man;
pub mod providers;
pub mod setup;

use crate::cli::{AgentCommand, Cli, Command};
use crate::context::Context;
use crate::output::Mode;
use crate::ExitStatus;

/// The packaging helpers, which need no HOME and no stack; `None` for every other command.
pub fn packaging(cli: &Cli) -> Option<anyhow::Result<ExitStatus>> {
    let out = crate::output::printer();
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut bytes = vec![];
    match &cli.command {
        Command::Completions { shell } => {
            clap_complete::generate(*shell, &mut cmd, "oyster", &mut bytes);
        }
        Command::Man { dir } => {
            let result = match dir {
                Some(dir) => man::write_all(cmd, dir),
                None => man::render_main(cmd, &mut bytes),
            };
            if let Err(e) = result {
                return Some(Err(e));
            }
        }
        _ => return None,
    }
    out.raw(&bytes);
    Some(Ok(ExitStatus::Success))
}

/// Runs one command.
pub fn dispatch(ctx: &Context, command: Command) -> anyhow::Result<ExitStatus> {
    ctx.out.set_mode(output_mode(&command));
    match command {
        Command::Completions { .. } | Command::Man { .. } => {
            unreachable!("packaging helpers run before a context exists")
        }
        Command::Providers(cmd) => providers::run(ctx, cmd),
        Command::Config(cmd) => config::run(ctx, cmd),
        Command::Agent(cmd) => agent::run(ctx, cmd),
        Command::Host(cmd) => host::run(ctx, cmd),
        Command::Doctor { probe, .. } => {
            ctx.announce_overrides();
            doctor::run(ctx, probe)
        }
        Command::Setup(args) => {
            ctx.announce_overrides();
            setup::run(ctx, args)
        }
        Command::Logs(args) => {
            ctx.announce_overrides();
            logs::run(ctx, &args)
        }
        // The brew-services habits: the agent verbs at the top level.
        Command::Status { json } => agent::run(ctx, AgentCommand::Status { json }),
        Command::Start(args) => agent::run(ctx, AgentCommand::Start(args)),
        Command::Stop => agent::run(ctx, AgentCommand::Stop),
        Command::Restart { host, verify } => {
            agent::run(ctx, AgentCommand::Restart { host, verify })
        }
        Command::List { json } => agent::run(ctx, AgentCommand::List { json }),
    }
}

/// The output mode a command's `--json` asks for: the printer knows it, so no command passes
/// a `json` flag down.
fn output_mode(command: &Command) -> Mode {
    use crate::cli::{ConfigCommand, HostCommand, ProvidersCommand};
    let json = match command {
        Command::Doctor { json, .. } | Command::Status { json } | Command::List { json } => *json,
        Command::Agent(AgentCommand::Status { json } | AgentCommand::List { json }) => *json,
        Command::Host(HostCommand::Status { json }) => *json,
        Command::Providers(
            ProvidersCommand::Resolve { json, .. } | ProvidersCommand::Status { json },
        ) => *json,
        Command::Config(ConfigCommand::Show { json }) => *json,
        _ => false,
    };
    if json {
        Mode::Json
    } else {
        Mode::Human
    }
}
