//! `oyster agent stop` (and `oyster stop`): boot the job out, keep the plist, disable the label
//! so it stays stopped at the next login.

use super::preflight;
use crate::agent::lifecycle::Agent;
use crate::context::Context;
use crate::output::Tone;
use crate::ExitStatus;

pub fn run(ctx: &Context) -> anyhow::Result<ExitStatus> {
    preflight::require_known(ctx)?;
    let stack = &ctx.stack;
    // Said before anything is created (no lock file for a stack that is not there).
    if !stack.plist_path().exists() {
        if let Some(direct) = preflight::direct_instead(ctx, "stop") {
            return Err(direct.into());
        }
    }
    if !preflight::is_installed(ctx)? {
        return Err(preflight::not_installed(ctx, "stop").into());
    }
    let lock = ctx.lock_stack("agent stop")?;
    let agent = Agent::new(ctx, &lock)?;
    let done = agent.stop()?;
    let what = match (done.was_loaded, done.pid) {
        (true, Some(pid)) => format!("Stopped {} (pid {pid} booted out)", stack.label),
        (true, None) => format!("Stopped {} (booted out; no Host was running)", stack.label),
        (false, _) => format!("{} was not loaded", stack.label),
    };
    ctx.out.out_toned(
        Tone::Ok,
        &format!(
            "{what}; disabled, so it stays stopped at the next login. Kept {}; `oyster agent start --stack {}` starts it again.",
            stack.plist_path().display(),
            stack.name
        ),
    );
    Ok(ExitStatus::Success)
}
