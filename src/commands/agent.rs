//! `oyster agent …`: the LaunchAgent plist and the launchd job.

use serde::Serialize;

use crate::agent::launchctl::{JobState, LastExit, Launchctl};
use crate::agent::lifecycle::{Agent, Outcome};
use crate::cli::AgentCommand;
use crate::context::Context;
use crate::host::plan::{self, Plan, Writes};
use crate::host::plist as agentplist;
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
            let plan = synced_plan(ctx, &host)?;
            if no_start {
                write_only(ctx, &plan)?;
                crate::say!("Not started (--no-start): launchd starts it at the next login, or run `oyster agent restart --stack {}`.", stack.name);
                return Ok(ExitStatus::Success);
            }
            let agent = Agent::new(ctx)?;
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
            let plan = synced_plan(ctx, &host)?;
            if no_restart {
                write_only(ctx, &plan)?;
                return Ok(ExitStatus::Success);
            }
            let agent = match Agent::new(ctx) {
                Ok(a) => a,
                Err(e) => {
                    write_only(ctx, &plan)?;
                    crate::say!("Not reloaded: {e:#}");
                    return Ok(ExitStatus::Success);
                }
            };
            match agent.print()? {
                None => {
                    write_only(ctx, &plan)?;
                    crate::say!("The LaunchAgent is not loaded; `oyster agent install --stack {}` loads it.", stack.name);
                }
                Some(info) if !plan.plist_changed() && agent.loaded_matches(&info, &plan) => {
                    crate::say!(
                        "{}: unchanged; the running Host is left alone.",
                        stack.plist_path().display()
                    );
                }
                Some(_) => {
                    let outcome = agent.apply(&plan, "regenerate", false, verify.timing())?;
                    report(ctx, &plan, &outcome);
                }
            }
            Ok(ExitStatus::Success)
        }
        AgentCommand::Restart { host, verify } => {
            let plan = synced_plan(ctx, &host)?;
            let agent = Agent::new(ctx)?;
            if plan.installed.is_none() && agent.print()?.is_none() {
                anyhow::bail!(
                    "the LaunchAgent {} is not installed; run `oyster agent install --stack {}`",
                    stack.label,
                    stack.name
                );
            }
            let outcome = agent.apply(&plan, "restart", true, verify.timing())?;
            report(ctx, &plan, &outcome);
            Ok(ExitStatus::Success)
        }
        AgentCommand::Status { json } => status(ctx, json),
        AgentCommand::Uninstall => {
            let agent = Agent::new(ctx)?;
            let was_loaded = agent.uninstall()?;
            crate::say!(
                "{}{} removed. Kept: config {}, logs {}.",
                if was_loaded {
                    "Booted out the job; "
                } else {
                    ""
                },
                stack.plist_path().display(),
                stack.config_path().display(),
                stack.log_dir.display()
            );
            Ok(ExitStatus::Success)
        }
    }
}

fn synced_plan(ctx: &Context, host: &crate::cli::HostArgs) -> anyhow::Result<Plan> {
    let plan = plan::plan(ctx, &host.inputs(), Writes::Sync)?;
    crate::config::report(&ctx.stack.config_path(), &plan.changes);
    Ok(plan)
}

fn write_only(ctx: &Context, plan: &Plan) -> anyhow::Result<()> {
    let path = ctx.stack.plist_path();
    let wrote = agentplist::write(&path, &plan.plist, &ctx.stack.log_dir)?;
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
    crate::say!(
        "Host verified: {} {how}, pid {}, /health 200 after {} ms, live environment matches.",
        ctx.stack.label,
        outcome.verified.pid,
        outcome.verified.health_after.as_millis()
    );
    crate::say!(
        "  PATH={}",
        (plan.env.get(crate::host::launchenv::PATH).unwrap_or("")).to_string()
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
    /// Who wrote the installed plist: `"oyster"` (it runs `oyster host exec`), `"oysterun"`
    /// (Oysterun's own installer: it runs `run_oysterun_host.sh`), `"other"`, or `null` when
    /// none is installed.
    installed_by: Option<&'static str>,
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
        installed_by: installed.as_ref().map(installed_by),
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

/// Who wrote an installed plist, from what it runs.
fn installed_by(inst: &agentplist::Installed) -> &'static str {
    let args: Vec<&str> = inst.program_arguments.iter().map(String::as_str).collect();
    if inst.oysterun_runner().is_some() {
        "oysterun"
    } else if args.len() == 5 && args[1..4] == ["host", "exec", "--stack"] {
        "oyster"
    } else {
        "other"
    }
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
    if st.installed_by == Some("oysterun") {
        crate::say!("  written by Oysterun's own installer (it runs {}): `oyster agent regenerate --stack {}` takes it over", agentplist::OYSTERUN_RUNNER, st.stack);
    } else if st.in_sync == Some(false) {
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
