//! `oyster agent install`: write the plist and load it (or, with `--no-start`, only write it).

use super::preflight::{self, Launchd};
use crate::agent::lifecycle::Timing;
use crate::context::Context;
use crate::host::plan::HostInputs;
use crate::output::audit::Action;
use crate::ExitStatus;

pub fn run(
    ctx: &Context,
    host: &HostInputs,
    no_start: bool,
    timing: Timing,
) -> anyhow::Result<ExitStatus> {
    let launchd = if no_start {
        Launchd::NotNeeded
    } else {
        Launchd::Required
    };
    preflight::run(ctx, "agent install", host, launchd, |p| {
        let Some(Ok(mut agent)) = p.agent else {
            preflight::write_only(ctx, &p.plan, p.lock)?;
            ctx.out.out(&match ctx.manager() {
                // A unit is started at login only once enabled, which --no-start does not do.
                Ok(crate::context::Manager::Systemd(_)) => format!(
                    "Not started (--no-start): the unit is written but not enabled, so nothing starts it at login; `{}` starts it, now and at every login.",
                    ctx.hint_cmd("start")
                ),
                _ => format!(
                    "Not started (--no-start): launchd starts it at the next login, or run `{}`.",
                    ctx.hint_cmd("restart")
                ),
            });
            return Ok(ExitStatus::Success);
        };
        let outcome = agent.apply(
            &p.plan,
            Action::Install,
            crate::service::Request::Apply,
            timing,
        )?;
        preflight::report(ctx, agent.kind(), &p.plan, &outcome);
        Ok(ExitStatus::Success)
    })
}
