//! `oyster agent …`: the LaunchAgent plist and the launchd job.

use serde::Serialize;

use crate::agent::launchctl::{JobState, LastExit, Launchctl, LocateError};
use crate::agent::lifecycle::{Agent, EnvProof, Outcome};
use crate::cli::AgentCommand;
use crate::context::Context;
use crate::host::plan::{self, Plan, Writes};
use crate::host::plist as agentplist;
use crate::sys::signal::InterruptGuard;
use crate::verify;
use crate::ExitStatus;

pub fn run(ctx: &Context, cmd: AgentCommand) -> anyhow::Result<ExitStatus> {
    ctx.announce_overrides();
    let stack = &ctx.stack;
    match cmd {
        AgentCommand::Print { host } => {
            let plan = plan::plan(ctx, &host.inputs(), Writes::None)?;
            ctx.out.raw(&plan.plist);
            Ok(ExitStatus::Success)
        }
        AgentCommand::Regenerate {
            host,
            dry_run: true,
            ..
        } => {
            let plan = plan::plan(ctx, &host.inputs(), Writes::None)?;
            dry_run(ctx, &plan)
        }
        AgentCommand::Install {
            host,
            no_start,
            verify,
        } => {
            let _guard = InterruptGuard::install();
            let lock = ctx.lock_stack("agent install")?;
            if !no_start {
                // An unusable launchctl is said before the config sync writes anything.
                Launchctl::locate(&ctx.env)?;
            }
            refuse_direct_host(ctx)?;
            let plan = synced_plan(ctx, &host, &lock)?;
            if no_start {
                write_only(ctx, &plan, &lock)?;
                crate::say!("Not started (--no-start): launchd starts it at the next login, or run `oyster agent restart --stack {}`.", stack.name);
                return Ok(ExitStatus::Success);
            }
            let agent = Agent::new(ctx, &lock)?;
            let outcome = agent.apply(&plan, "install", false, verify.timing())?;
            report(ctx, &plan, &outcome);
            Ok(ExitStatus::Success)
        }
        AgentCommand::Regenerate {
            host,
            no_restart,
            verify,
            ..
        } => {
            let _guard = InterruptGuard::install();
            let lock = ctx.lock_stack("agent regenerate")?;
            if !no_restart {
                // A launchctl variable set wrong is invalid input (exit 2), refused before
                // anything is written; only a launchctl that is absent or switched off falls
                // back to writing the plist without reloading.
                refuse_invalid_launchctl(ctx)?;
            }
            let plan = synced_plan(ctx, &host, &lock)?;
            if no_restart {
                write_only(ctx, &plan, &lock)?;
                return Ok(ExitStatus::Success);
            }
            let agent = match Agent::new(ctx, &lock) {
                Ok(a) => a,
                Err(e) => {
                    write_only(ctx, &plan, &lock)?;
                    crate::say!("Not reloaded: {e:#}");
                    return Ok(ExitStatus::Success);
                }
            };
            match agent.print()? {
                // Not loaded and no run pending: nothing to restart. A pending marker means a
                // run was killed between bootout and bootstrap: finish (or roll back) its change.
                None if !agent.pending() => {
                    write_only(ctx, &plan, &lock)?;
                    crate::say!("The LaunchAgent is not loaded; `oyster agent install --stack {}` loads it.", stack.name);
                }
                Some(info)
                    if !plan.plist_changed()
                        && agent.loaded_matches(&info, &plan)
                        && !agent.pending() =>
                {
                    crate::say!(
                        "{}: unchanged; the running Host is left alone.",
                        stack.plist_path().display()
                    );
                }
                _ => {
                    refuse_direct_host(ctx)?;
                    let outcome = agent.apply(&plan, "regenerate", false, verify.timing())?;
                    report(ctx, &plan, &outcome);
                }
            }
            Ok(ExitStatus::Success)
        }
        AgentCommand::Restart { host, verify } => {
            let _guard = InterruptGuard::install();
            let lock = ctx.lock_stack("agent restart")?;
            // Said first: nothing about the root or node matters for a job that is not there.
            let lc = Launchctl::locate(&ctx.env)?;
            if !stack.plist_path().exists() && lc.find_loaded(&stack.label)?.is_none() {
                return Err(crate::error::Failed::new(
                    format!("the LaunchAgent {} is not installed", stack.label),
                    format!("run `oyster agent install --stack {}`", stack.name),
                )
                .into());
            }
            refuse_direct_host(ctx)?;
            let plan = synced_plan(ctx, &host, &lock)?;
            let agent = Agent::new(ctx, &lock)?;
            let outcome = agent.apply(&plan, "restart", true, verify.timing())?;
            report(ctx, &plan, &outcome);
            Ok(ExitStatus::Success)
        }
        AgentCommand::Status { json } => status(ctx, json),
        AgentCommand::Uninstall => {
            let lock = ctx.lock_stack("agent uninstall")?;
            // A bad timeout is a typo, not a missing launchctl: removing the plist of a job
            // that stays loaded would leave it with no file behind it.
            if let Err(e @ LocateError::BadTimeout(_)) = Launchctl::locate(&ctx.env) {
                return Err(e.into());
            }
            let plist = stack.plist_path();
            let agent = match Agent::new(ctx, &lock) {
                Ok(agent) => agent,
                Err(e) => {
                    // No launchctl: nothing can be booted out, but the file can still go.
                    let removed = match std::fs::remove_file(&plist) {
                        Ok(()) => true,
                        Err(err) if err.kind() == std::io::ErrorKind::NotFound => false,
                        Err(err) => anyhow::bail!("could not remove {}: {err}", plist.display()),
                    };
                    ctx.out
                        .warn(&format!("the job could not be booted out: {e:#}"));
                    crate::say!(
                        "{} {}. Kept: config {}, logs {}.",
                        plist.display(),
                        if removed { "removed" } else { "was not there" },
                        stack.config_path().display(),
                        stack.log_dir.display()
                    );
                    return Ok(ExitStatus::Success);
                }
            };
            let was_loaded = agent.uninstall()?;
            crate::say!(
                "{}{} removed. Kept: config {}, logs {}.",
                if was_loaded {
                    "Booted out the job; "
                } else {
                    ""
                },
                plist.display(),
                stack.config_path().display(),
                stack.log_dir.display()
            );
            Ok(ExitStatus::Success)
        }
    }
}

/// Refuses a launchctl variable that is set wrong (exit 2); a launchctl that is missing or
/// switched off is not refused here.
fn refuse_invalid_launchctl(ctx: &Context) -> anyhow::Result<()> {
    match Launchctl::locate(&ctx.env) {
        Err(e) if e.is_invalid_input() => Err(e.into()),
        _ => Ok(()),
    }
}

/// The LaunchAgent must not start a second Host beside a directly started one of the same
/// stack (as `host start` refuses the other way round).
fn refuse_direct_host(ctx: &Context) -> anyhow::Result<()> {
    if let crate::direct::Owner::Ours(rec, _) = crate::direct::owner(&ctx.stack)? {
        return Err(crate::error::Failed::new(
            format!(
                "the Host of stack {} runs directly (pid {}, from `oyster host start`)",
                ctx.stack.name, rec.pid
            ),
            format!(
                "stop it with `oyster host stop --stack {}` first",
                ctx.stack.name
            ),
        )
        .into());
    }
    Ok(())
}

fn synced_plan(
    ctx: &Context,
    host: &crate::cli::HostArgs,
    lock: &crate::sys::fs::Lock,
) -> anyhow::Result<Plan> {
    let plan = plan::plan(ctx, &host.inputs(), Writes::Sync(lock))?;
    crate::config::report(&ctx.stack.config_path(), &plan.changes);
    Ok(plan)
}

fn write_only(ctx: &Context, plan: &Plan, lock: &crate::sys::fs::Lock) -> anyhow::Result<()> {
    let path = ctx.stack.plist_path();
    let wrote = agentplist::write(lock, &path, &plan.plist, &ctx.stack.log_dir)?;
    crate::say!(
        "{}: {}",
        path.display(),
        if wrote { "written" } else { "unchanged" }
    );
    Ok(())
}

fn report(ctx: &Context, plan: &Plan, outcome: &Outcome) {
    let how = match (outcome.reloaded, outcome.was_loaded) {
        (true, true) => "reloaded (bootout, bootstrap)",
        (true, false) => "loaded (bootstrap)",
        (false, _) => "running",
    };
    let proof = match outcome.verified.env_proof {
        EnvProof::Live => "live environment matches (read from the kernel)",
        EnvProof::Launchd => {
            "environment proven by launchd's loaded definition (the kernel hides the live one)"
        }
    };
    ctx.out.out_toned(
        crate::output::Tone::Ok,
        &format!(
            "Host verified: {} {how}, pid {}, /health 200 after {} ms, {proof}.",
            ctx.stack.label,
            outcome.verified.pid,
            outcome.verified.health_after.as_millis()
        ),
    );
    crate::say!(
        "  url: http://127.0.0.1:{}  env_proof: {}",
        plan.port,
        outcome.verified.env_proof.as_str()
    );
    crate::say!(
        "  PATH={}",
        plan.env.get(crate::host::launchenv::PATH).unwrap_or("")
    );
}

fn dry_run(ctx: &Context, plan: &Plan) -> anyhow::Result<ExitStatus> {
    let path = ctx.stack.plist_path();
    for c in &plan.changes {
        crate::tell!("would change config: {c}");
    }
    if !plan.plist_changed() {
        crate::say!("{}: unchanged", path.display());
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
    // Through the printer: a key a user added to the plist by hand is redacted here too.
    ctx.out.out(text.trim_end_matches('\n'));
    Ok(ExitStatus::Success)
}

/// `agent status --json` (docs/json.md): the four facts stay separate; numbers are numbers,
/// unknown is `null`, paths are absolute.
#[derive(Serialize)]
struct AgentStatus {
    stack: String,
    label: String,
    port: Option<u16>,
    url: Option<String>,
    installed: bool,
    loaded: bool,
    running: bool,
    verified: bool,
    state: Option<String>,
    pid: Option<u32>,
    last_exit_code: Option<i32>,
    last_signal: Option<i32>,
    runs: Option<u32>,
    crash_loop: bool,
    health: Option<u16>,
    /// How the environment was proven: `"live"` (read from the kernel), or `null`.
    env_proof: Option<&'static str>,
    /// Generated variables the live process does not have as generated.
    env_mismatch: Vec<String>,
    in_sync: Option<bool>,
    plist_path: String,
    log_path: String,
    launchctl: Option<String>,
    launchctl_overridden: bool,
    domain: Option<String>,
    notes: Vec<String>,
}

fn status(ctx: &Context, json: bool) -> anyhow::Result<ExitStatus> {
    let stack = &ctx.stack;
    let plist = stack.plist_path();
    let installed = agentplist::read_installed(&plist);
    let plan = plan::plan(ctx, &Default::default(), Writes::None).ok();
    let port = plan
        .as_ref()
        .map(|p| p.port)
        .or_else(|| installed.as_ref().and_then(|i| i.env.port()));
    let mut st = AgentStatus {
        stack: stack.name.clone(),
        label: stack.label.clone(),
        port,
        url: port.map(|p| format!("http://127.0.0.1:{p}")),
        installed: installed.is_some(),
        loaded: false,
        running: false,
        verified: false,
        state: None,
        pid: None,
        last_exit_code: None,
        last_signal: None,
        runs: None,
        crash_loop: false,
        health: None,
        env_proof: None,
        env_mismatch: vec![],
        // Only an installed plist can be stale.
        in_sync: plan
            .as_ref()
            .filter(|_| installed.is_some())
            .map(|p| !p.plist_changed()),
        plist_path: plist.display().to_string(),
        log_path: stack.log_path().display().to_string(),
        launchctl: None,
        launchctl_overridden: false,
        domain: None,
        notes: vec![],
    };
    match Launchctl::locate(&ctx.env) {
        Err(e) => st.notes.push(e.to_string()),
        Ok(lc) => {
            st.launchctl = Some(lc.path.display().to_string());
            st.launchctl_overridden = lc.overridden;
            let domain = lc.domain()?;
            if let Some(n) = &domain.fallback_note {
                st.notes.push(n.clone());
            }
            if let Some(info) = lc.print(&domain.target(&stack.label))? {
                st.loaded = true;
                st.running = info.running();
                st.state = info.state().map(str::to_owned);
                st.pid = info.pid();
                let last = info.last_exit();
                st.last_exit_code = last.and_then(LastExit::code);
                st.last_signal = last.and_then(LastExit::signal);
                st.runs = info.runs();
                st.crash_loop = info.job_state() == JobState::SpawnScheduled
                    || info.successive_crashes().is_some_and(|n| n > 0);
                if let (Some(pid), Some(inst)) = (info.pid().filter(|_| st.running), &installed) {
                    let live = verify::check_live(pid, &inst.env);
                    st.health = live.health;
                    st.verified = live.verified();
                    match &live.env {
                        Some(verify::EnvCheck::Verified) => st.env_proof = Some("live"),
                        Some(verify::EnvCheck::Mismatch(d)) => {
                            st.env_mismatch = d.iter().map(|(k, _, _)| k.clone()).collect()
                        }
                        _ => {}
                    }
                }
            }
            st.domain = Some(domain.name);
        }
    }
    if json {
        ctx.out.json(&st);
    } else {
        print_status(&st);
    }
    Ok(if st.verified {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

fn print_status(st: &AgentStatus) {
    let yn = |b: bool| if b { "yes" } else { "no" };
    crate::say!("{} (stack {})", st.label, st.stack);
    if let Some(url) = &st.url {
        crate::say!("  url:       {url}");
    }
    crate::say!("  installed: {} ({})", yn(st.installed), st.plist_path);
    crate::say!(
        "  loaded:    {}{}",
        yn(st.loaded),
        st.domain
            .as_ref()
            .map_or(String::new(), |d| format!(" in {d}"))
    );
    crate::say!(
        "  running:   {}{}{}",
        yn(st.running),
        st.pid.map_or(String::new(), |p| format!(" (pid {p})")),
        st.runs.map_or(String::new(), |r| format!(", runs {r}"))
    );
    let proof = st
        .env_proof
        .map_or(String::new(), |p| format!(" (environment proof: {p})"));
    crate::say!("  verified:  {}{proof}", yn(st.verified));
    if st.crash_loop {
        crate::say!(
            "  crash loop: launchd keeps restarting the Host (state {}); see the log",
            st.state.as_deref().unwrap_or("?")
        );
    }
    match (st.last_exit_code, st.last_signal) {
        (Some(code), _) => crate::say!("  last exit: code {code}"),
        (_, Some(sig)) => crate::say!("  last exit: killed by signal {sig}"),
        _ => {}
    }
    if !st.env_mismatch.is_empty() {
        crate::say!(
            "  environment differs from the plist in: {}",
            st.env_mismatch.join(", ")
        );
    }
    if st.in_sync == Some(false) {
        crate::say!("  stale: the installed plist differs from what oyster generates now — run `oyster agent regenerate --stack {}`", st.stack);
    }
    crate::say!("  log:       {}", st.log_path);
    if let Some(lc) = &st.launchctl {
        let how = if st.launchctl_overridden {
            " (from OYSTER_LAUNCHCTL)"
        } else {
            ""
        };
        crate::say!("  launchctl: {lc}{how}");
    }
    for n in &st.notes {
        crate::say!("  note: {n}");
    }
}
