//! `oyster agent regenerate`: rewrite the plist from what oyster generates now and reload the
//! job when it changed (`--no-restart`: write only; `--dry-run`: show the diff, write nothing).

use super::preflight::{self, Launchd, Prepared};
use crate::agent::lifecycle::Timing;
use crate::context::Context;
use crate::host::plan::{self, HostInputs, Plan};
use crate::output::audit::Action;
use crate::service::Standing;
use crate::ExitStatus;

pub fn run(
    ctx: &Context,
    host: &HostInputs,
    no_restart: bool,
    dry_run: bool,
    timing: Timing,
) -> anyhow::Result<ExitStatus> {
    if dry_run {
        let plan = plan::plan(ctx, host)?;
        return show_diff(ctx, &plan);
    }
    let launchd = if no_restart {
        Launchd::NotNeeded
    } else {
        Launchd::Optional
    };
    preflight::run(ctx, "agent regenerate", host, launchd, |p| {
        if no_restart {
            return write_without_reload(ctx, &p);
        }
        reload_if_needed(ctx, p, timing)
    })
}

/// `--no-restart`: the plist written, launchd not asked; a new definition is said not to reach
/// a loaded job until it is reloaded.
fn write_without_reload(ctx: &Context, p: &Prepared<'_>) -> anyhow::Result<ExitStatus> {
    let changed = preflight::definition_changed(ctx, &p.plan);
    preflight::write_only(ctx, &p.plan, p.lock)?;
    if changed {
        ctx.out.out(&format!(
            "Not reloaded (--no-restart): a loaded job runs its old definition until `{}` gives the Host the change.",
            ctx.hint_cmd("restart")
        ));
    }
    Ok(ExitStatus::Success)
}

/// Reloads the job when the definition changed (or an earlier run is pending); leaves an
/// unchanged running Host alone; only writes the plist when launchd is not there.
fn reload_if_needed(ctx: &Context, p: Prepared<'_>, timing: Timing) -> anyhow::Result<ExitStatus> {
    let mut agent = match p.agent {
        None => return preflight::write_only(ctx, &p.plan, p.lock).map(|()| ExitStatus::Success),
        Some(Err(e)) => {
            preflight::write_only(ctx, &p.plan, p.lock)?;
            ctx.out.out(&format!("Not reloaded: {e:#}"));
            return Ok(ExitStatus::Success);
        }
        Some(Ok(agent)) => agent,
    };
    match agent.standing(&p.plan)? {
        // Not loaded and no run pending: nothing to restart. An unfinished run's receipt means
        // a run was killed between unload and load: its change is finished (or rolled back).
        Standing::NotLoaded { stopped } => {
            preflight::write_only(ctx, &p.plan, p.lock)?;
            // A stopped agent is started again; one never loaded is installed.
            let verb = if stopped { "start" } else { "install" };
            ctx.out.out(&format!(
                "The {} is not loaded; `{}` loads it.",
                match agent.kind() {
                    crate::service::ManagerKind::Systemd => "systemd unit",
                    _ => "LaunchAgent",
                },
                ctx.hint_cmd(verb)
            ));
        }
        Standing::Current => {
            agent.write_config(&p.plan)?;
            ctx.out.out(&format!(
                "{}: unchanged; the running Host is left alone.",
                preflight::definition(ctx).display()
            ));
        }
        Standing::Behind => {
            let outcome = agent.apply(
                &p.plan,
                Action::Regenerate,
                crate::service::Request::Apply,
                timing,
            )?;
            preflight::report(ctx, agent.kind(), &p.plan, &outcome);
        }
    }
    Ok(ExitStatus::Success)
}

/// `--dry-run`: what would change in the config, and the plist diff.
fn show_diff(ctx: &Context, plan: &Plan) -> anyhow::Result<ExitStatus> {
    let path = ctx.stack.plist_path();
    for c in &plan.changes {
        ctx.out.err(&format!("would change config: {c}"));
    }
    if !plan.plist_changed() {
        ctx.out.out(&format!("{}: unchanged", path.display()));
        return Ok(ExitStatus::Success);
    }
    let old = plan
        .installed
        .as_ref()
        .map(|i| String::from_utf8_lossy(&i.bytes).into_owned())
        .unwrap_or_default();
    let new = String::from_utf8_lossy(&plan.plist);
    let shown = path.display().to_string();
    let diff = similar::TextDiff::from_lines(old.as_str(), new.as_ref());
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a{shown}"), &format!("b{shown}"))
        .to_string();
    // Real paths and bytes, so the diff can be compared and applied; through the printer all
    // the same, so a secret a user added to the plist by hand is redacted here too — and said.
    let redacted = ctx.out.verbatim(text.trim_end_matches('\n'));
    if !redacted.is_empty() {
        let lines: Vec<String> = redacted.iter().map(usize::to_string).collect();
        ctx.out.note(&format!(
            "{} line{} of this diff {} not shown verbatim (secret values as <redacted>, control characters escaped): line {}; the diff cannot be applied as it is",
            redacted.len(),
            if redacted.len() == 1 { "" } else { "s" },
            if redacted.len() == 1 { "is" } else { "are" },
            lines.join(", ")
        ));
    }
    // What running it for real would do to the Host.
    let loaded = ctx
        .launchctl()
        .ok()
        .and_then(|lc| lc.find_loaded(&ctx.stack.label).ok().flatten())
        .is_some();
    ctx.out.err(&if loaded {
        format!(
            "Dry run: nothing was written. `{}` would write this plist and reload the running Host with it (then verify it, rolling back if it does not verify).",
            ctx.hint_cmd("regenerate")
        )
    } else {
        format!(
            "Dry run: nothing was written. `{}` would write this plist; the job is not loaded, so no Host would be restarted.",
            ctx.hint_cmd("regenerate")
        )
    });
    Ok(ExitStatus::Success)
}
