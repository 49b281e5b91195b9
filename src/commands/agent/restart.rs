//! `oyster agent restart` (and `oyster restart`): regenerate as install does, then restart the
//! job gracefully (or reload it when the definition changed), and verify.

use super::preflight::{self, Launchd};
use crate::agent::lifecycle::Timing;
use crate::context::Context;
use crate::host::plan::HostInputs;
use crate::output::audit::Action;
use crate::ExitStatus;

pub fn run(ctx: &Context, host: &HostInputs, timing: Timing) -> anyhow::Result<ExitStatus> {
    preflight::require_known(ctx)?;
    // Said first, before anything is created: nothing about the root or node matters for a
    // job that is not there.
    if !ctx.stack.plist_path().exists() {
        if let Some(direct) = preflight::direct_instead(ctx, "restart") {
            return Err(direct.into());
        }
        let lc = ctx.launchctl()?;
        if lc.find_loaded(&ctx.stack.label)?.is_none() {
            return Err(preflight::not_installed(ctx, "restart").into());
        }
    }
    preflight::run(ctx, "agent restart", host, Launchd::Required, |p| {
        let Some(Ok(agent)) = p.agent else {
            unreachable!("Launchd::Required returns the agent or fails")
        };
        // Asked again under the lock: an `uninstall` this run waited for may have removed it,
        // and writing the plist now would install again what the user just uninstalled.
        if !preflight::is_installed(ctx)? {
            return Err(preflight::not_installed(ctx, "restart").into());
        }
        let outcome = if agent.was_loaded() {
            agent.apply(&p.plan, Action::Restart, true, timing)?
        } else {
            // Loaded in neither domain (stopped, or booted out behind oyster's back): the
            // restart starts it as `start` does (enabled in both domains, a failure leaving
            // a stopped stack stopped), as `brew services restart` starts a stopped service.
            agent.start(&p.plan, timing)?
        };
        preflight::report(ctx, &p.plan, &outcome);
        Ok(ExitStatus::Success)
    })
}
