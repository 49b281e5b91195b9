//! One module per command: the user interface. Each parses nothing (clap did), calls the domain
//! modules, prints through the printer, and returns an [`ExitStatus`].

pub mod agent;
pub mod config;
pub mod doctor;
pub mod host;
pub mod providers;
pub mod setup;

use crate::cli::{Cli, Command};
use crate::context::Context;
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
        Command::Man => {
            if let Err(e) = clap_mangen::Man::new(cmd).render(&mut bytes) {
                return Some(Err(e.into()));
            }
        }
        _ => return None,
    }
    out.raw(&bytes);
    Some(Ok(ExitStatus::Success))
}

/// Runs one command.
pub fn dispatch(ctx: &Context, command: Command) -> anyhow::Result<ExitStatus> {
    match command {
        Command::Completions { .. } | Command::Man => {
            unreachable!("packaging helpers run before a context exists")
        }
        Command::Providers(cmd) => providers::run(ctx, cmd),
        Command::Config(cmd) => config::run(ctx, cmd),
        Command::Agent(cmd) => agent::run(ctx, cmd),
        Command::Host(cmd) => host::run(ctx, cmd),
        Command::Doctor { json, probe } => {
            ctx.announce_overrides();
            doctor::run(ctx, json, probe)
        }
        Command::Setup(args) => {
            ctx.announce_overrides();
            setup::run(ctx, args)
        }
    }
}
