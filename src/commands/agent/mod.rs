//! `oyster agent …`: the LaunchAgent plist and the launchd job, one module per verb. The
//! verbs that write and load the plist share one preflight chain ([`preflight`]); the status
//! model and its collection are the domain's (`agent::status`), only rendering is here.

mod install;
mod kill;
pub mod list;
pub mod preflight;
pub mod preview;
mod print;
pub mod purge;
mod regenerate;
pub mod restart;
mod start;
pub mod status;
pub mod stop;
mod uninstall;

use crate::context::Context;
use crate::invocation::Job;
use crate::ExitStatus;

pub fn run(ctx: &Context, verb: &Job) -> anyhow::Result<ExitStatus> {
    ctx.announce_overrides();
    match verb {
        Job::Print(host) => print::run(ctx, host),
        Job::Install {
            host,
            no_start,
            timing,
        } => install::run(ctx, host, *no_start, *timing),
        Job::Regenerate {
            host,
            no_restart,
            dry_run,
            timing,
        } => regenerate::run(ctx, host, *no_restart, *dry_run, *timing),
        Job::Restart(s) => restart::run(ctx, &s.host, s.timing, s.restore_sessions),
        Job::Status => status::run(ctx),
        Job::Stop { keep, no_wait } => stop::run(ctx, *keep, *no_wait),
        Job::Start(s) => start::run(ctx, s),
        Job::Kill => kill::run(ctx),
        Job::List { wide } => list::run(ctx, *wide),
        Job::Uninstall { purge, yes } => uninstall::run(ctx, *purge, *yes),
    }
}
