//! `--dry-run` of the job verbs (`install`, `start`, `restart`, `stop`, `uninstall`): the run
//! observes and decides exactly as it would, then prints the steps it would take, in order,
//! and changes nothing — no lock, no config, no plist, no launchd call that changes state. A
//! refusal is said as the run would say it (and exits the same way).

use serde_json::json;

use super::preflight;
use crate::context::Context;
use crate::host::plan::{self, HostInputs, Plan};
use crate::invocation::Job;
use crate::service::{self, decide, Request, Step};
use crate::ExitStatus;

/// Prints what `verb` would do on the context's stack.
pub fn run(ctx: &Context, verb: &Job) -> anyhow::Result<ExitStatus> {
    // `install` creates a stack; every other verb is about one that exists.
    if !matches!(verb, Job::Install { .. }) {
        preflight::require_known(ctx)?;
    }
    // The run refuses a HOME or a stack another uid owns (exit 2) when it locks; so does its
    // dry run, which takes no lock.
    let purge = matches!(verb, Job::Uninstall { purge: true, .. });
    ctx.refuse_foreign(&format!(
        "agent {}{}",
        verb.word(),
        if purge { " --purge" } else { "" }
    ))?;
    let (port, steps) = match verb {
        Job::Install {
            host,
            no_start,
            timing,
        } => load(
            ctx,
            host,
            Request::Apply,
            *no_start,
            timing.ignore_login_items,
        )?,
        Job::Restart(s) => {
            super::restart::refuse_uninstalled(ctx)?;
            load(
                ctx,
                &s.host,
                Request::Restart,
                false,
                s.timing.ignore_login_items,
            )?
        }
        Job::Start(s) => {
            if !preflight::is_installed(ctx)? {
                return Err(preflight::not_installed_or_direct(ctx, "start").into());
            }
            load(
                ctx,
                &s.host,
                Request::Start,
                false,
                s.timing.ignore_login_items,
            )?
        }
        Job::Stop { keep, no_wait } => {
            super::stop::refuse_early(ctx, *keep)?;
            let mut agent = preflight::job(ctx, None)?;
            (
                None,
                decide::decide_stop(&agent.observe_job()?, *keep, !*no_wait),
            )
        }
        Job::Uninstall { purge, .. } => {
            if *purge {
                super::purge::say_would(ctx)?;
            }
            let plist = preflight::definition(ctx);
            let mut agent = preflight::job(ctx, None)?;
            let o = agent.observe_job()?;
            (None, decide::decide_uninstall(&o, plist.exists()))
        }
        other => anyhow::bail!("`{}` has no --dry-run", other.word()),
    };
    let kind = match ctx.manager() {
        Ok(crate::context::Manager::Systemd(_)) => service::ManagerKind::Systemd,
        _ => service::ManagerKind::Launchd,
    };
    show(ctx, verb.word(), port, kind, &steps);
    Ok(ExitStatus::Success)
}

/// The steps of a verb that loads: the refusals of its preflight, the plan, the decision.
fn load(
    ctx: &Context,
    host: &HostInputs,
    request: Request,
    write_only: bool,
    ignore_switch: bool,
) -> anyhow::Result<(Option<u16>, Vec<Step>)> {
    // The run's refusals in the run's order (preflight::run), so that the dry run says the one
    // the run would: the port, the log, the job and a directly started Host, then the plan.
    ctx.stack.refuse_unwritable_agents_dir()?;
    ctx.stack.refuse_unusable_lock_dir()?;
    if write_only {
        ctx.stack.refuse_special_log()?;
        let plan = plan::plan(ctx, host)?;
        crate::manager::refuse_definition_write(ctx)?;
        return Ok((Some(plan.port), writes(ctx, &plan)));
    }
    preflight::refuse_held_port(ctx, host)?;
    ctx.stack.refuse_special_log()?;
    let mut agent = preflight::job(ctx, None)?;
    preflight::refuse_direct_host(ctx)?;
    let plan = plan::plan(ctx, host)?;
    // `restart` of a job loaded nowhere starts it, as the run does.
    let request = match request {
        Request::Restart if !agent.was_loaded() => Request::Start,
        r => r,
    };
    agent.allow_switched_off(ignore_switch);
    let decision = agent.decide(&plan, request)?;
    Ok((Some(plan.port), decision.steps))
}

/// The steps of a run that only writes (`install --no-start`).
fn writes(ctx: &Context, plan: &Plan) -> Vec<Step> {
    let mut steps = vec![];
    if !plan.changes.is_empty() {
        steps.push(Step::WriteConfig {
            path: ctx.stack.config_path(),
            edits: plan.changes.iter().map(Into::into).collect(),
        });
    }
    if preflight::definition_changed(ctx, plan) {
        steps.push(Step::WriteDefinition {
            path: preflight::definition(ctx),
        });
    }
    steps
}

fn show(ctx: &Context, verb: &str, port: Option<u16>, kind: service::ManagerKind, steps: &[Step]) {
    let shown: Vec<Step> = steps
        .iter()
        .map(|s| match s {
            Step::WriteConfig { path, edits } => Step::WriteConfig {
                path: path.clone(),
                edits: edits.iter().map(|e| e.shown()).collect(),
            },
            other => other.clone(),
        })
        .collect();
    let doc = json!({
        "stack": ctx.stack.name,
        "port": port,
        "manager": kind.as_str(),
        "dry_run": true,
        "steps": shown,
    });
    ctx.out.show(&doc, || {
        let typed = ctx.hint_cmd(verb);
        if steps.is_empty() {
            ctx.out
                .out(&format!("Dry run: `{typed}` would change nothing."));
            return;
        }
        ctx.out.out(&format!(
            "Dry run: `{typed}` would take these steps (nothing was changed):"
        ));
        for (i, step) in steps.iter().enumerate() {
            ctx.out.out(&format!("  {}. {}", i + 1, describe(step)));
        }
    });
}

/// One step in words.
pub fn describe(step: &Step) -> String {
    let quote = |p: &std::path::Path| crate::output::one_line(p);
    match step {
        Step::WriteConfig { path, edits } => {
            let edits: Vec<String> = edits
                .iter()
                .map(|e| crate::config::Change::from(e).to_string())
                .collect();
            format!("write {}: {}", quote(path), edits.join("; "))
        }
        Step::WriteDefinition { path } => format!("write {}", quote(path)),
        Step::FinishStop { target } => {
            format!("finish booting out {target} (an interrupted stop left it draining)")
        }
        Step::Enable { targets } => format!("enable {}", targets.join(" and ")),
        Step::BootOut { target, pid, wait } => format!(
            "boot out {target}{}{}",
            pid.map_or(String::new(), |p| format!(" (pid {p})")),
            if *wait {
                ", waiting until it is gone"
            } else {
                ", not waiting for it (--no-wait)"
            }
        ),
        Step::Load { target } => format!("load {target} and start it"),
        Step::StopDirect { pid } => format!(
            "stop the Host `oyster host start` runs (pid {pid}); the service manager takes it over on the same port"
        ),
        Step::Restart { target, pid } => format!(
            "restart {target} gracefully{}",
            pid.map_or(String::new(), |p| format!(" (SIGTERM to pid {p}, then a start)"))
        ),
        Step::Verify { port } => format!(
            "verify the Host on 127.0.0.1:{port}: a new pid, /health from its socket, its environment, the settle (a failure rolls a changed definition back)"
        ),
        Step::Disable { targets } => format!(
            "disable {} (stays stopped at the next login)",
            targets.join(" and ")
        ),
        Step::RemoveDefinition { path } => format!("remove {}", quote(path)),
    }
}
