//! `oyster agent uninstall`: boot the job out and remove the plist; the config and logs stay
//! (`--purge`: they go too, after a question naming them: `purge.rs`).

use super::preflight;
use crate::context::Context;
use crate::launchctl::LocateError;
use crate::ExitStatus;

pub fn run(ctx: &Context, purge: bool, yes: bool) -> anyhow::Result<ExitStatus> {
    preflight::require_known(ctx)?;
    // Refused before the question: an uninstalled stack's purge deletes without taking the
    // lock (which does the refusing), so root with OYSTERUN_STACKS_DIR at another user's stacks
    // deleted their stack.
    if purge {
        ctx.refuse_foreign("agent uninstall --purge")?;
    }
    // Asked before anything changes: a No changes nothing.
    let purging = if purge {
        match super::purge::ask(ctx, yes)? {
            super::purge::Asked::Go(p) => Some(p),
            super::purge::Asked::Cancelled => {
                ctx.out.out("Cancelled; nothing was changed.");
                return Ok(ExitStatus::Success);
            }
        }
    } else {
        None
    };
    // A purge holds the stack's lock from the uninstall to the deletion: an install started
    // meanwhile waits, instead of writing a stack the deletion then takes from under it.
    let held = match purging {
        Some(_) => Some(ctx.lock_stack("agent uninstall --purge")?),
        None => None,
    };
    let status = uninstall(ctx, purging.is_some(), held.as_ref())?;
    if let Some(p) = &purging {
        super::purge::delete(ctx, p)?;
    }
    Ok(status)
}

/// `held`: the stack's lock, when the caller holds it already (a purge); else taken here.
fn uninstall(
    ctx: &Context,
    purging: bool,
    held: Option<&crate::sys::fs::Lock>,
) -> anyhow::Result<ExitStatus> {
    let stack = &ctx.stack;
    // A bad timeout is a typo, not a missing launchctl: removing the plist of a job that stays
    // loaded would leave it with no file behind it.
    let lc = ctx.launchctl();
    if let Err(e @ LocateError::BadTimeout(_)) = lc {
        return Err(e.into());
    }
    let plist = preflight::definition(ctx);
    let loaded = preflight::is_installed(ctx).unwrap_or(false);
    if !plist.exists() && !loaded {
        return not_installed(ctx, &plist, purging, held);
    }
    let owned;
    let lock = match held {
        Some(lock) => lock,
        None => {
            owned = ctx.lock_stack("agent uninstall")?;
            &owned
        }
    };
    // A stack directory removed by hand while its plist stayed: the audit line would create it
    // again, and `list`/`cleanup` would then show a stack of nothing. Looked at under the lock:
    // a stack another oyster created while this one waited (an install) is not this run's.
    let root_was_there = std::fs::symlink_metadata(&stack.root).is_ok();
    let kept = kept_words(stack, purging, root_was_there);
    let mut agent = match preflight::job(ctx, Some(lock)) {
        Ok(agent) => agent,
        Err(e) => {
            // No launchctl: nothing can be booted out, but the file can still go.
            let removed = match std::fs::remove_file(&plist) {
                Ok(()) => true,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => false,
                Err(err) => anyhow::bail!("could not remove {}: {err}", plist.display()),
            };
            ctx.reporter()
                .warn(&format!("the job could not be booted out: {e:#}"));
            if !root_was_there {
                remove_what_this_run_created(stack);
            }
            ctx.out.said(&format!(
                "Uninstalled stack {} ({}): {} {}.{kept}",
                stack.name,
                stack.label,
                plist.display(),
                if removed { "removed" } else { "was not there" },
            ));
            return Ok(ExitStatus::Success);
        }
    };
    let was_loaded = agent.uninstall()?;
    if !root_was_there {
        remove_what_this_run_created(stack);
    }
    ctx.out.said(&format!(
        "Uninstalled stack {} ({}): {}{} removed.{kept}",
        stack.name,
        stack.label,
        if was_loaded {
            "booted out the job; "
        } else {
            ""
        },
        plist.display(),
    ));
    Ok(ExitStatus::Success)
}

/// Enables the label in each domain where it is disabled, under the lock; says so (` (its
/// label, left disabled by `stop`, is enabled again)`), or nothing when none was disabled or
/// launchd cannot be asked.
/// What the uninstall keeps, in words (nothing when purging: the purge says what went).
fn kept_words(stack: &crate::host::stack::Stack, purging: bool, root_was_there: bool) -> String {
    if purging {
        String::new()
    } else if root_was_there {
        format!(
            " Kept: config {}, logs {}.",
            stack.config_path().display(),
            stack.log_dir.display()
        )
    } else {
        format!(" {} was already gone.", stack.root.display())
    }
}

/// Nothing loaded and no definition: nothing to uninstall, and nothing created (no log dir,
/// no audit line). A label `stop` disabled whose plist went since (removed by hand, or by an
/// older oyster's uninstall, which removed it before enabling) is enabled again, or the next
/// installer (Oysterun's own, which never enables) gets a bare 5 from bootstrap.
fn not_installed(
    ctx: &Context,
    plist: &std::path::Path,
    purging: bool,
    held: Option<&crate::sys::fs::Lock>,
) -> anyhow::Result<ExitStatus> {
    let enabled = enable_left_disabled(ctx, held)?;
    ctx.out.said(&format!(
        "{} is not installed{enabled}; {}",
        plist.display(),
        if purging {
            "only the stack's data goes."
        } else {
            "nothing to uninstall."
        }
    ));
    Ok(ExitStatus::Success)
}

fn enable_left_disabled(
    ctx: &Context,
    held: Option<&crate::sys::fs::Lock>,
) -> anyhow::Result<&'static str> {
    if !matches!(ctx.manager(), Ok(crate::context::Manager::Launchd)) {
        return Ok("");
    }
    let Ok(lc) = ctx.launchctl() else {
        return Ok("");
    };
    let label = &ctx.stack.label;
    let disabled: Vec<_> = crate::launchctl::Domain::both()
        .into_iter()
        .filter(|d| lc.is_disabled_in(d, label))
        .collect();
    if disabled.is_empty() {
        return Ok("");
    }
    let _lock = match held {
        Some(_) => None,
        None => Some(ctx.lock_stack("agent uninstall")?),
    };
    for d in disabled {
        lc.enable(d, label)?;
    }
    Ok(" (its label, left disabled by `stop`, is enabled again)")
}

/// The file this run created in a stack directory that did not exist before it (the audit
/// line), then those directories while empty: nothing else can be there, since the lock was
/// held all along.
fn remove_what_this_run_created(stack: &crate::host::stack::Stack) {
    let _ = std::fs::remove_file(stack.audit_path());
    for dir in [&stack.run_dir, &stack.log_dir, &stack.root] {
        let _ = std::fs::remove_dir(dir);
    }
}
