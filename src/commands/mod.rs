//! One module per command; each returns an [`ExitStatus`].

pub mod agent;
pub mod config;
pub mod doctor;
pub mod host;
pub mod providers;

use std::io::Write;

use crate::cli::{Cli, Command};
use crate::host::stack::{Stack, StackEnv};
use crate::provider::resolve::Search;
use crate::ExitStatus;

/// What every command starts from: the stack, and where resolution searches.
pub struct Ctx {
    pub stack: Stack,
    pub search: Search,
    pub port: Option<u16>,
}

impl Ctx {
    pub fn from_process(global: &crate::cli::GlobalArgs) -> anyhow::Result<Ctx> {
        let stack = Stack::new(&global.stack, &StackEnv::from_process())?;
        let search = Search::from_process(&stack.home);
        Ok(Ctx {
            stack,
            search,
            port: global.port,
        })
    }

    /// Notes printed on stderr whenever an override or fallback is in effect.
    pub fn announce_overrides(&self) {
        if self.stack.config_dir_overridden {
            eprintln!(
                "oyster: note: OYSTERUN_CONFIG_DIR is set; using {} as the config dir",
                self.stack.tilde(&self.stack.config_dir)
            );
        }
    }
}

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitStatus> {
    // Packaging helpers need no HOME and no stack.
    match &cli.command {
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cmd, "oyster", &mut std::io::stdout());
            return Ok(ExitStatus::Success);
        }
        Command::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?;
            return Ok(ExitStatus::Success);
        }
        _ => {}
    }
    let ctx = Ctx::from_process(&cli.global)?;
    match cli.command {
        Command::Completions { .. } | Command::Man => unreachable!("handled above"),
        Command::Providers(cmd) => providers::run(&ctx, cmd),
        Command::Config(cmd) => config::run(&ctx, cmd),
        Command::Agent(cmd) => agent::run(&ctx, cmd),
        Command::Host(cmd) => host::run(&ctx, cmd),
        Command::Doctor { json, probe } => {
            ctx.announce_overrides();
            doctor::run(&ctx, json, probe)
        }
        Command::Setup(args) => {
            ctx.announce_overrides();
            crate::setup::run(
                &ctx,
                &crate::setup::SetupOptions {
                    mode: args.mode,
                    agent_folder: args.agent_folder,
                    install_providers: args.install_providers,
                    no_start: args.no_start,
                    host: args.host,
                    timing: args.verify.timing(),
                },
            )?;
            Ok(ExitStatus::Success)
        }
    }
}

/// Writes a JSON document and a newline to stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}
