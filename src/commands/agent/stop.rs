//! `oyster agent stop` (and `oyster stop`): boot the job out, keep the plist, disable the label
//! so it stays stopped at the next login.

use super::preflight;
use crate::context::Context;
use crate::direct::Owner;
use crate::error::Failed;
use crate::output::Tone;
use crate::ExitStatus;

/// `keep`: `--keep` (boot out, stay registered for the next login); `no_wait`: `--no-wait`.
pub fn run(ctx: &Context, keep: bool, no_wait: bool) -> anyhow::Result<ExitStatus> {
    preflight::require_known(ctx)?;
    let stack = &ctx.stack;
    refuse_early(ctx, keep)?;
    let lock = ctx.lock_stack("agent stop")?;
    let mut agent = preflight::job(ctx, Some(&lock))?;
    let done = agent.stop(keep, !no_wait)?;
    let (manager, out) = match agent.kind() {
        crate::service::ManagerKind::Systemd => ("systemd", "stopped"),
        _ => ("launchd", "booted out"),
    };
    let what = match (done.was_loaded, done.pid, done.still_stopping) {
        (true, Some(pid), true) => format!(
            "Stopping {} (pid {pid} {out}; {manager} finishes stopping it, not waited for: --no-wait)",
            stack.label
        ),
        (true, Some(pid), false) => format!("Stopped {} (pid {pid} {out})", stack.label),
        (true, None, _) => format!("Stopped {} ({out}; no Host was running)", stack.label),
        (false, _, _) => format!("{} was not loaded", stack.label),
    };
    // launchd's overrides are per user: the disable holds at the next console login, also
    // when it was set over SSH (docs/launchd.md, "Domains").
    let stays = if keep {
        format!("left enabled (--keep), so {manager} starts it again at the next login")
    } else {
        "disabled, so it stays stopped at the next login".to_owned()
    };
    // A definition deleted under the loaded job: booted out by label all the same (as brew
    // does), and said, since there is none to keep.
    let kept = if preflight::definition(ctx).exists() {
        format!(
            "Kept {}; `{}` starts it again.",
            preflight::definition(ctx).display(),
            ctx.hint_cmd("start")
        )
    } else {
        format!(
            "{} was already deleted; `{}` writes it again and starts it.",
            preflight::definition(ctx).display(),
            // Not `start`: with no definition it refuses ("not installed").
            ctx.hint_cmd("install")
        )
    };
    ctx.out
        .outcome(Tone::Ok, &format!("{what}; {stays}. {kept}"));
    Ok(ExitStatus::Success)
}

/// Every refusal of `stop`, said before anything is created (no lock file for a stack that is
/// not there).
pub fn refuse_early(ctx: &Context, keep: bool) -> anyhow::Result<()> {
    if !preflight::definition(ctx).exists() {
        if let Some(direct) = preflight::direct_instead(ctx, "stop") {
            return Err(direct.into());
        }
    }
    if !preflight::is_installed(ctx)? {
        return Err(preflight::not_installed(ctx, "stop").into());
    }
    crate::manager::refuse_stop(ctx, keep)?;
    refuse_direct_host(ctx)
}

/// `stop` never claims stopped while this stack's Host answers: a Host `oyster host start`
/// runs is not launchd's to stop, and stopping it here would be a second, hidden meaning of
/// `agent stop`. Refused (exit 1) before anything changes, naming it and the command.
fn refuse_direct_host(ctx: &Context) -> anyhow::Result<()> {
    let owner = match crate::direct::owner(&ctx.stack) {
        Ok(owner) => owner,
        // A pid file that cannot be read (a FIFO, a directory) names no Host to refuse for:
        // launchd's job is stopped all the same, and `status` names the file as broken.
        Err(e) => {
            ctx.out
                .note(&format!("{e:#}; not checked for a directly started Host"));
            return Ok(());
        }
    };
    let Owner::Ours(rec, _) = owner else {
        return Ok(());
    };
    // launchd's own Host (in either domain) is what `stop` stops.
    if preflight::launchd_runs(ctx, rec.pid) {
        return Ok(());
    }
    Err(Failed::new(
        format!(
            "the Host of stack {} runs directly (pid {}, started by `oyster host start`), not by launchd; `agent stop` would leave it serving, so nothing was changed",
            ctx.stack.name, rec.pid
        ),
        format!(
            "`{}` stops it; then `{}` if the LaunchAgent should stay stopped too",
            ctx.hints().cmd("host stop"),
            ctx.hint_cmd("stop")
        ),
    )
    .into())
}
