//! The one preflight chain of the verbs that write and load the plist (`install`,
//! `regenerate`, `restart`, `start`), in one order:
//!
//! interrupt guard → refuse a port another process holds (before anything is created) → the
//! stack's lifecycle lock → refuse a special Host log → locate launchd (`Agent::new`) → refuse
//! a directly started Host → the plan (which writes nothing) → the verb's own step: the job's
//! refusals, then the config, the plist and launchd (apply) → report.
//!
//! Everything that can refuse does so before the config step writes anything: a refused verb
//! leaves `config.json` and the plist byte-identical, and no stack directory behind.

use crate::agent::lifecycle::{EnvProof, Outcome};
use crate::context::{Context, Manager};
use crate::direct::Owner;
use crate::error::Failed;
use crate::host::plan::{self, HostInputs, Plan};
use crate::host::plist as agentplist;
pub use crate::manager::{definition, definition_changed, job, Job};
use crate::output::Tone;
use crate::service::ManagerKind;
use crate::sys::fs::Lock;
use crate::sys::signal::InterruptGuard;

/// How much of launchd a verb needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launchd {
    /// It loads the job: launchctl must be usable (said before anything is written).
    Required,
    /// It reloads when it can (`regenerate`): a launchctl variable set wrong is refused, one
    /// that is missing or switched off leaves the verb to write the plist only.
    Optional,
    /// It only writes the plist (`install --no-start`, `regenerate --no-restart`).
    NotNeeded,
}

/// What the chain hands the verb's own step.
pub struct Prepared<'a> {
    pub lock: &'a Lock,
    pub plan: Plan,
    /// The service manager's side; `Err` (why) when [`Launchd::Optional`] found none, `None`
    /// for [`Launchd::NotNeeded`].
    pub agent: Option<anyhow::Result<Job<'a>>>,
}

impl<'a> Prepared<'a> {
    /// The job a verb that loads was prepared with ([`Launchd::Required`] fails before its
    /// step when there is none).
    pub fn job(&mut self) -> anyhow::Result<Job<'a>> {
        match self.agent.take() {
            Some(job) => job,
            None => anyhow::bail!("no service manager was asked for this step"),
        }
    }
}

/// Runs the preflight chain for `verb` (as the user typed it, for the lock's holder line),
/// then `step` with what it prepared.
pub fn run<T>(
    ctx: &Context,
    verb: &str,
    host: &HostInputs,
    launchd: Launchd,
    step: impl FnOnce(Prepared<'_>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let _guard = InterruptGuard::install();
    // Before the lock or the config sync: a LaunchAgents directory this user cannot write
    // (one stat, so before the port's probe too).
    ctx.stack.refuse_unwritable_agents_dir()?;
    let lock = ctx.lock_stack(verb)?;
    // Looked at under the lock: no stack directory now means nothing of it is another oyster's.
    let first = std::fs::symlink_metadata(&ctx.stack.root).is_err();
    let done = locked(ctx, host, launchd, &lock, step);
    if first && done.is_err() {
        // A refused first command leaves no stack behind (`list` would show it); the lock is
        // still held, so what is there is this run's alone.
        super::super::cleanup::forget_refused_first(ctx, verb.trim_start_matches("agent "));
    }
    done
}

/// [`run`]'s chain once it holds the stack's lock.
fn locked<'a, T>(
    ctx: &'a Context,
    host: &HostInputs,
    launchd: Launchd,
    lock: &'a Lock,
    step: impl FnOnce(Prepared<'a>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    // Only a verb that may load or start a Host asks who holds its port: one that writes the
    // plist only (`install --no-start`, `regenerate --no-restart`) starts nothing that could
    // fail to listen, and the verb that later loads it asks then. Asked under the lock: a run
    // this one waited for may have moved the stack's Host onto this port, and before the lock
    // its new Host could look like another's (its manager not yet showing its pid).
    if launchd != Launchd::NotNeeded {
        refuse_held_port(ctx, host)?;
    }
    ctx.stack.refuse_special_log()?;
    let agent = match launchd {
        Launchd::Required => Some(Ok(job(ctx, Some(lock))?)),
        Launchd::Optional => {
            // A launchctl or systemctl variable set wrong is invalid input (exit 2), refused
            // before anything is written; only a manager that is absent or switched off falls
            // back.
            if let Err(e) = ctx.manager() {
                if e.is_invalid_input() {
                    return Err(e.into());
                }
            }
            Some(job(ctx, Some(lock)))
        }
        Launchd::NotNeeded => None,
    };
    // Only a verb that can load the job could start a second Host.
    if matches!(agent, Some(Ok(_))) {
        refuse_direct_host(ctx)?;
    }
    let plan = plan::plan(ctx, host)?;
    // Two stacks on one port: refused before anything is written, naming the owner.
    crate::manager::refuse_claimed_port(ctx, plan.port)?;
    warn_production_port(ctx, plan.port);
    step(Prepared { lock, plan, agent })
}

/// The port the verb will load the Host on, by the one rule ([`HostInputs::effective_port`]).
/// `None` when it is not known yet (the plan then says why).
pub fn intended_port(ctx: &Context, host: &HostInputs) -> Option<u16> {
    // A config that cannot be read is the plan's to report (with its fix), not a port check's.
    let doc = match host.port {
        Some(_) => None,
        None => Some(crate::config::ConfigDoc::load(&ctx.stack.config_path()).ok()?),
    };
    // The plist is read only when it decides (the plan reads it again and says what is wrong
    // with it).
    let needed = host.port.is_none()
        && ctx.stack.default_port.is_none()
        && doc.as_ref().and_then(|d| d.port()).is_none();
    let installed = needed
        .then(|| agentplist::read_installed(&ctx.stack.plist_path(), ctx.reporter()))
        .flatten();
    host.effective_port(&ctx.stack, doc.as_ref(), installed.as_ref())
        .map(|p| p.port)
}

/// This stack's own running Hosts, whoever runs them: the port they hold is not "another's".
/// launchd's copies in both domains count (a label loaded twice holds its port with the other
/// copy, and the verb is what boots that copy out).
fn current_host_pids(ctx: &Context) -> Vec<u32> {
    let mut pids: Vec<u32> = manager_pids(ctx);
    if let Ok(Owner::Ours(rec, _)) = crate::direct::owner(&ctx.stack) {
        pids.push(rec.pid);
    }
    pids
}

/// Refuses, before anything is written or created, a port held by a process that is not this
/// stack's current Host, naming it (and its stack, when it is another oyster stack). The
/// lifecycle checks again under the lock, just before it loads. A port that can be bound is
/// answered by two binds; only a held one makes it read the socket table and launchd.
pub fn refuse_held_port(ctx: &Context, host: &HostInputs) -> anyhow::Result<()> {
    let Some(port) = intended_port(ctx, host) else {
        return Ok(());
    };
    let holder = match crate::probe::foreign_listener(port, || current_host_pids(ctx)) {
        Ok(h) => h,
        Err(e) => {
            ctx.out
                .note(&format!("could not list who listens on port {port}: {e}"));
            return Ok(());
        }
    };
    let Some(h) = holder else {
        return Ok(());
    };
    let stack = h
        .stack
        .map_or(String::new(), |s| format!(", oyster stack {s}"));
    Err(Failed::new(
        format!(
            "port {port} is already held by pid {} ({}{stack}); the Host of stack {} could not listen there. Nothing was written",
            h.pid, h.name, ctx.stack.name
        ),
        format!(
            "stop that process (or give stack {} another port with --port), then run again",
            ctx.stack.name
        ),
    )
    .into())
}

/// Whether launchd runs `pid` for this stack's label, in either domain: `host exec` writes the
/// pid file under launchd too, so a pid file alone does not make a Host direct (and a copy in
/// `user/<uid>` beside one in `gui/<uid>` is launchd's too).
pub fn launchd_runs(ctx: &Context, pid: u32) -> bool {
    manager_pids(ctx).contains(&pid)
}

/// The pids this stack's service manager runs for it now: launchd's copies in both domains,
/// or the unit's `MainPID`.
pub fn manager_pids(ctx: &Context) -> Vec<u32> {
    match ctx.manager() {
        Ok(Manager::Launchd) => ctx
            .launchctl()
            .ok()
            .and_then(|lc| lc.in_both_domains(&ctx.stack.label).ok())
            .map(|b| b.loaded().iter().filter_map(|(_, i)| i.pid()).collect())
            .unwrap_or_default(),
        Ok(Manager::Systemd(sc)) => crate::systemd::unit_name(&ctx.stack.label)
            .ok()
            .and_then(|u| sc.show(&u).ok())
            .and_then(|s| s.main_pid)
            .into_iter()
            .collect(),
        Err(_) => vec![],
    }
}

/// The LaunchAgent must not start a second Host beside a directly started one of the same
/// stack (as `host start` refuses the other way round).
pub fn refuse_direct_host(ctx: &Context) -> anyhow::Result<()> {
    // systemd's job takes a direct Host over (its decision stops it first).
    if let Ok(Manager::Systemd(_)) = ctx.manager() {
        return Ok(());
    }
    let Owner::Ours(rec, _) = crate::direct::owner(&ctx.stack)? else {
        return Ok(());
    };
    if launchd_runs(ctx, rec.pid) {
        return Ok(());
    }
    Err(Failed::new(
        format!(
            "the Host of stack {} runs directly (pid {}, from `oyster host start`)",
            ctx.stack.name, rec.pid
        ),
        format!("stop it with `{}` first", ctx.hints().cmd("host stop")),
    )
    .into())
}

/// Writes the config and the plist without loading it, and says so.
pub fn write_only(ctx: &Context, plan: &Plan, lock: &Lock) -> anyhow::Result<()> {
    crate::manager::refuse_definition_write(ctx)?;
    let changes = plan::write_config(ctx, plan, lock)?;
    crate::config::report(&ctx.stack.config_path(), &changes, ctx.reporter());
    let path = definition(ctx);
    let wrote = crate::manager::write_definition(ctx, plan, lock)?;
    ctx.reporter().line(&format!(
        "{}: {}",
        path.display(),
        if wrote { "written" } else { "unchanged" }
    ));
    Ok(())
}

/// The report of a verified load or restart.
pub fn report(ctx: &Context, kind: ManagerKind, plan: &Plan, outcome: &Outcome) {
    let how = match (kind, outcome.reloaded, outcome.was_loaded) {
        (ManagerKind::Systemd, true, true) => "reloaded (daemon-reload, start)",
        (ManagerKind::Systemd, true, false) => "started (daemon-reload, start)",
        (_, true, true) => "reloaded (bootout, bootstrap)",
        (_, true, false) => "loaded (bootstrap)",
        (_, false, _) => "running",
    };
    let label = match kind {
        ManagerKind::Systemd => {
            crate::systemd::unit_name(&ctx.stack.label).unwrap_or_else(|_| ctx.stack.label.clone())
        }
        _ => ctx.stack.label.clone(),
    };
    let proof = match outcome.verified.env_proof {
        EnvProof::Live => "live environment matches (read from the kernel)",
        EnvProof::Exec => {
            "environment proven by the launch program's own record (the kernel hides the live one)"
        }
        EnvProof::Launchd => {
            "environment proven by launchd's loaded definition (the kernel hides the live one)"
        }
    };
    // How it was proven, and the Host's PATH: said with -v/--verbose (every restart would
    // otherwise repeat them); the URL always.
    let out = ctx.out;
    let proof = if out.verbose() {
        format!(", {proof}")
    } else {
        String::new()
    };
    out.outcome(
        Tone::Ok,
        &format!(
            "Host verified: {label} {how}, pid {}, /health 200 after {} ms{proof}.",
            outcome.verified.pid,
            outcome.verified.health_after.as_millis()
        ),
    );
    if out.verbose() {
        out.out(&format!(
            "  url: http://127.0.0.1:{}  env_proof: {}",
            plan.port,
            outcome.verified.env_proof.as_str()
        ));
        // On a terminal, broken after a `:` to fit it; piped, one `PATH=` line.
        let path = plan.env.get(crate::host::launchenv::PATH).unwrap_or("");
        out.out_list("  PATH=", path, ':');
    } else {
        out.said(&format!("  url: http://127.0.0.1:{}", plan.port));
    }
}

/// A custom stack with nothing on disk is a typo until proven otherwise (exit 2, naming the
/// stacks that exist); production and staging always exist.
/// The stack exists, and (under systemd) its unit's manager answers: a verb that acts on the
/// job never takes a unit it cannot reach for a stack without one.
pub fn require_known(ctx: &Context) -> anyhow::Result<()> {
    crate::host::stack::require_known(&ctx.stack, &ctx.env.stack_env())?;
    crate::unit::refuse_unreachable(ctx)?;
    Ok(())
}

/// Whether the stack's job is loaded (launchd: in either domain; systemd: kept going).
pub fn is_loaded(ctx: &Context) -> anyhow::Result<bool> {
    match ctx.manager()? {
        Manager::Launchd => Ok(ctx.launchctl()?.find_loaded(&ctx.stack.label)?.is_some()),
        Manager::Systemd(sc) => {
            let show = sc.show(&crate::systemd::unit_name(&ctx.stack.label)?)?;
            Ok(!show.is_not_found() && show.active_state != crate::systemd::ActiveState::Inactive)
        }
    }
}

/// Whether the stack has a definition (plist, unit), or a job its manager runs (read-only).
pub fn is_installed(ctx: &Context) -> anyhow::Result<bool> {
    if definition(ctx).exists() {
        return Ok(true);
    }
    is_loaded(ctx)
}

/// For a stack whose Host was started directly (no LaunchAgent): the `host` command to use.
pub fn direct_instead(ctx: &Context, verb: &str) -> Option<Failed> {
    let Owner::Ours(rec, _) = crate::direct::owner(&ctx.stack).ok()? else {
        return None;
    };
    // The launch program writes the same pid file under launchd: a Host launchd runs (its
    // plist deleted under the loaded job) is the job's, never a direct one.
    if launchd_runs(ctx, rec.pid) {
        return None;
    }
    let h = ctx.hints();
    let by = match ctx.manager() {
        Ok(Manager::Systemd(_)) => ("a systemd unit", "systemd"),
        _ => ("a LaunchAgent", "launchd"),
    };
    let fix = if verb == "stop" {
        format!("`{}`", h.cmd("host stop"))
    } else {
        format!("`{}` then `{}`", h.cmd("host stop"), h.cmd("host start"))
    };
    Some(Failed::new(
        format!(
            "the Host of stack {} was started directly (pid {}, `oyster host start`), not by {}, so there is nothing to {verb} in {}",
            ctx.stack.name,
            rec.pid,
            by.0,
            by.1
        ),
        fix,
    ))
}

/// Why `verb` has nothing to act on: a Host started directly (named with its own commands),
/// else the job not installed.
pub fn not_installed_or_direct(ctx: &Context, verb: &str) -> Failed {
    direct_instead(ctx, verb).unwrap_or_else(|| not_installed(ctx, verb))
}

pub fn not_installed(ctx: &Context, verb: &str) -> Failed {
    let what = match ctx.manager() {
        Ok(Manager::Systemd(_)) => "systemd unit",
        _ => "LaunchAgent",
    };
    Failed::new(
        format!(
            "the {what} {} is not installed ({} does not exist), so there is nothing to {verb}",
            ctx.stack.label,
            definition(ctx).display()
        ),
        format!(
            "`{}` installs it (or `oyster setup{}`)",
            ctx.hint_cmd("install"),
            ctx.stack_suffix()
        ),
    )
}

/// Production on a port other than 8802: Oysterun 1.5.3's own restart (the Host's in-app
/// restart and update run `restart_oysterun.sh` → `start_oysterun.sh`) takes production's port
/// to be 8802 — `--port` is refused for it, the stack config sync writes 8802 into config.json
/// and 8802 must be free before it relaunches — so it is said, with the way out: a custom stack.
pub fn warn_production_port(ctx: &Context, port: u16) {
    let default = ctx.stack.default_port;
    if ctx.stack.name != "production" || default.is_none_or(|d| d == port) {
        return;
    }
    ctx.out.warn(&format!(
        "production on port {port}: Oysterun's own in-app restart assumes production is on {} (it writes that port into config.json and needs it free before it relaunches); a custom stack keeps another port (`oyster setup NAME --port {port}`)",
        default.unwrap_or(8802)
    ));
}
