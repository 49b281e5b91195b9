//! `oyster agent restart` (and `oyster restart`): regenerate as install does, then restart the
//! job gracefully (or reload it when the definition changed), and verify.

use super::preflight::{self, Launchd};
use crate::agent::lifecycle::Timing;
use crate::context::Context;
use crate::host::plan::HostInputs;
use crate::output::audit::Action;
use crate::ExitStatus;

pub fn run(
    ctx: &Context,
    host: &HostInputs,
    timing: Timing,
    restore_sessions: bool,
) -> anyhow::Result<ExitStatus> {
    preflight::require_known(ctx)?;
    refuse_uninstalled(ctx)?;
    preflight::run(ctx, "agent restart", host, Launchd::Required, |mut p| {
        let mut agent = p.job()?;
        // Asked again under the lock: an `uninstall` this run waited for may have removed it,
        // and writing the plist now would install again what the user just uninstalled.
        if !preflight::is_installed(ctx)? {
            return Err(preflight::not_installed(ctx, "restart").into());
        }
        let outcome = if agent.was_loaded() {
            // Every refusal is behind us: only now, right before the restart, may the Host be
            // asked to save its sessions — and only the stack's own Host, on the port the
            // restart keeps (the step hands it the local service-control token).
            if restore_sessions {
                prepare_restore(ctx, &agent, &p.plan)?;
            }
            agent.apply(
                &p.plan,
                Action::Restart,
                crate::service::Request::Restart,
                timing,
            )?
        } else {
            // Loaded in neither domain (stopped, or booted out behind oyster's back): the
            // restart starts it as `start` does (enabled in both domains, a failure leaving
            // a stopped stack stopped), as `brew services restart` starts a stopped service.
            agent.start(&p.plan, timing)?
        };
        preflight::report(ctx, agent.kind(), &p.plan, &outcome);
        Ok(ExitStatus::Success)
    })
}

/// Said first, before anything is created: nothing about the root or node matters for a job
/// that is not there (a directly started Host is named with its own command).
pub fn refuse_uninstalled(ctx: &Context) -> anyhow::Result<()> {
    if !preflight::definition(ctx).exists() {
        if let Some(direct) = preflight::direct_instead(ctx, "restart") {
            return Err(direct.into());
        }
        if !preflight::is_installed(ctx)? {
            return Err(preflight::not_installed(ctx, "restart").into());
        }
    }
    Ok(())
}

/// `restart --restore-sessions`: the root's restore preparation, run only when the port the
/// restart keeps is held by this stack's own running Host answering `/health`; otherwise said
/// and skipped (the restart goes on without restored sessions).
fn prepare_restore(
    ctx: &Context,
    agent: &preflight::Job<'_>,
    plan: &crate::host::plan::Plan,
) -> anyhow::Result<()> {
    use crate::setup::hooks::{self, Ran};
    let pid = agent.running_pid();
    let ours = pid.is_some_and(|pid| {
        crate::verify::health(plan.port, std::time::Duration::from_secs(2)) == Some(200)
            && crate::verify::check_listener(plan.port, pid).is_ok()
    });
    if !ours {
        ctx.out.note(&format!(
            "sessions not prepared for restore: port {} is not held by this stack's running Host, so it is not asked (its token goes to nobody else); restarting without it",
            plan.port
        ));
        return Ok(());
    }
    if let Ran::Interrupted(sig) = hooks::prepare_restore(ctx, plan) {
        return Err(crate::error::Interrupted(
            sig,
            "the restore preparation was stopped; nothing was restarted".into(),
        )
        .into());
    }
    Ok(())
}
