//! Which service manager runs a stack's Host on this machine, and its job: the one place that
//! names both launchd's agent and the systemd unit (every command and setup hold a
//! [`Job`] and ask it through the seam, `service::ServiceManager`).

use std::path::PathBuf;

use crate::agent::lifecycle::Agent;
use crate::context::{Context, Manager};
use crate::host::plan::Plan;
use crate::service::ServiceManager;
use crate::sys::fs::Lock;

/// A service manager of this run, for one stack.
pub type Job<'a> = Box<dyn ServiceManager + 'a>;

/// The stack's job under this machine's service manager (launchd, or the systemd user
/// manager), observed once; `lock` is the stack's lifecycle lock (`None`: a `--dry-run`,
/// which takes no step).
pub fn job<'a>(ctx: &'a Context, lock: Option<&'a Lock>) -> anyhow::Result<Job<'a>> {
    Ok(match ctx.manager()? {
        Manager::Launchd => Box::new(match lock {
            Some(lock) => Agent::new(ctx, lock)?,
            None => Agent::observer(ctx)?,
        }),
        Manager::Systemd(sc) => Box::new(crate::unit::Unit::new(ctx, sc, lock)?),
    })
}

/// Whether the definition on disk differs from what `plan` generates for this machine's
/// manager.
pub fn definition_changed(ctx: &Context, plan: &Plan) -> bool {
    match ctx.manager() {
        Ok(Manager::Systemd(_)) => crate::unit::definition_changed(ctx, plan),
        _ => plan.plist_changed(),
    }
}

/// Where the stack's job definition lives under this machine's manager: the unit file under
/// systemd, the plist otherwise.
pub fn definition(ctx: &Context) -> PathBuf {
    match ctx.manager() {
        Ok(Manager::Systemd(_)) => crate::systemd::unit_path(
            &ctx.stack.home,
            ctx.env.config_home.as_deref(),
            &ctx.stack.label,
        )
        .unwrap_or_else(|_| ctx.stack.plist_path()),
        _ => ctx.stack.plist_path(),
    }
}

/// What refuses writing the definition, said before the config is written: under systemd, a
/// unit for root's own manager, or a unit path that is not a regular file.
pub fn refuse_definition_write(ctx: &Context) -> anyhow::Result<()> {
    if let Ok(Manager::Systemd(_)) = ctx.manager() {
        crate::unit::refuse_write(ctx)?;
    }
    Ok(())
}

/// What refuses `stop` (`keep`: `--keep`) before anything is stopped: under systemd, a unit
/// file that is a symlink, which the disable would remove.
pub fn refuse_stop(ctx: &Context, keep: bool) -> anyhow::Result<()> {
    match ctx.manager() {
        Ok(Manager::Systemd(_)) => crate::unit::refuse_stop(ctx, keep),
        _ => Ok(()),
    }
}

/// Writes the job's definition for `plan` (plist or unit) without loading it; says whether it
/// wrote.
pub fn write_definition(ctx: &Context, plan: &Plan, lock: &Lock) -> anyhow::Result<bool> {
    match ctx.manager() {
        Ok(Manager::Systemd(_)) => crate::unit::write_definition(ctx, plan, lock),
        _ => crate::host::plist::write(
            lock,
            &ctx.stack.plist_path(),
            &plan.plist,
            &ctx.stack.log_dir,
        ),
    }
}

/// Another stack's installed job claims the port stack `this` asked for. Words (and hint):
/// `commands/words/context.rs`, said as a `Failed`.
#[derive(Debug, Clone)]
pub struct PortTaken {
    pub claimed: crate::service::decide::PortClaimed,
    pub this: String,
}

/// Refuses `port` for this stack when another stack's installed job (running or stopped)
/// runs on it: said before anything is written, naming the stack that owns the port.
pub fn refuse_claimed_port(ctx: &Context, port: u16) -> Result<(), crate::error::Failed> {
    let unit_of = |stack: &crate::host::stack::Stack| match ctx.manager() {
        Ok(Manager::Systemd(_)) => {
            crate::systemd::unit_path(&stack.home, ctx.env.config_home.as_deref(), &stack.label)
                .ok()
        }
        _ => None,
    };
    let claims: Vec<crate::service::decide::Claim> = crate::host::claims::ports(
        &ctx.env.stack_env(),
        &ctx.stack.name,
        &unit_of,
        ctx.reporter(),
    )
    .into_iter()
    .map(|(stack, port)| crate::service::decide::Claim { stack, port })
    .collect();
    crate::service::decide::port_claimed(&ctx.stack.name, port, &claims).map_err(|claimed| {
        PortTaken {
            claimed,
            this: ctx.stack.name.clone(),
        }
        .into()
    })
}
