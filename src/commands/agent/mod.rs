//! `oyster agent …`: the LaunchAgent plist and the launchd job, one module per verb. The
//! verbs that write and load the plist share one preflight chain ([`preflight`]); the status
//! model and its collection are the domain's (`agent::status`), only rendering is here.

mod install;
mod kill;
mod list;
pub mod preflight;
mod print;
mod regenerate;
mod restart;
mod start;
mod status;
mod stop;
mod uninstall;

use crate::cli::AgentCommand;
use crate::context::Context;
use crate::output::Mode;
use crate::ExitStatus;

pub fn run(ctx: &Context, cmd: AgentCommand) -> anyhow::Result<ExitStatus> {
    ctx.announce_overrides();
    // The top-level aliases arrive here as agent verbs: their `--json` decides the mode too.
    if let AgentCommand::Status { json: true, .. } | AgentCommand::List { json: true, .. } = cmd {
        ctx.out.set_mode(Mode::Json);
    }
    match cmd {
        AgentCommand::Print { host, .. } => print::run(ctx, &host),
        AgentCommand::Install {
            host,
            no_start,
            verify,
            ..
        } => install::run(ctx, &host, no_start, verify),
        AgentCommand::Regenerate {
            host,
            no_restart,
            dry_run,
            verify,
            ..
        } => regenerate::run(ctx, &host, no_restart, dry_run, verify),
        AgentCommand::Restart { host, verify, .. } => restart::run(ctx, &host, verify),
        AgentCommand::Status { .. } => status::run(ctx),
        AgentCommand::Stop { .. } => stop::run(ctx),
        AgentCommand::Start(args) => start::run(ctx, &args),
        AgentCommand::Kill { .. } => kill::run(ctx),
        AgentCommand::List { .. } => list::run(ctx),
        AgentCommand::Uninstall { .. } => uninstall::run(ctx),
    }
}
