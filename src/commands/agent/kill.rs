//! `oyster agent kill`: SIGTERM to the running Host only; KeepAlive starts it again.

use super::preflight;
use crate::context::Context;
use crate::ExitStatus;

pub fn run(ctx: &Context) -> anyhow::Result<ExitStatus> {
    preflight::require_known(ctx)?;
    // Not installed: there is nothing `start` could start either; say how to set it up.
    if !preflight::is_installed(ctx)? {
        return Err(preflight::not_installed(ctx, "kill").into());
    }
    let lock = ctx.lock_stack("agent kill")?;
    let mut agent = preflight::job(ctx, Some(&lock))?;
    let k = agent.kill(&|verb| ctx.hint_cmd(verb))?;
    let again = match agent.kind() {
        crate::service::ManagerKind::Systemd => "systemd starts it again (Restart=always, after RestartSec=10)",
        _ => "launchd starts it again (KeepAlive; a Host that ran less than 10 s waits out the throttle)",
    };
    ctx.out.said(&format!(
        "Sent SIGTERM to the Host (pid {}){}; {again}. `{}` shows the new pid; `{} --keep` stops it until the next login (brew's `kill`).",
        k.pid,
        if k.exited { ", which exited" } else { ", which is still shutting down" },
        ctx.hint_cmd("status"),
        ctx.hint_cmd("stop")
    ));
    Ok(ExitStatus::Success)
}
