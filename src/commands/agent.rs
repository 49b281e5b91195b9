//! `oyster agent …`: the LaunchAgent plist and the launchd job.

use serde::Serialize;

use crate::agent::launchctl::{JobState, LastExit, Launchctl};
use crate::agent::lifecycle::{self, Agent, EnvProof, Outcome};
use crate::cli::AgentCommand;
use crate::context::Context;
use crate::host::identity::ExecRecord;
use crate::host::plan::{self, Plan, Writes};
use crate::host::plist as agentplist;
use crate::output::Tone;
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
                None => {
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
                Some(_) => {
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

/// The LaunchAgent must not start a second Host beside a directly started one of the same
/// stack (as `host start` refuses the other way round).
fn refuse_direct_host(ctx: &Context) -> anyhow::Result<()> {
    if let crate::direct::Owner::Ours(rec, _) = crate::direct::owner(&ctx.stack)? {
        // `host exec` writes the pid file under launchd too: launchd's own Host is not direct.
        let launchd_pid = Launchctl::locate(&ctx.env)
            .ok()
            .and_then(|lc| lc.find_loaded(&ctx.stack.label).ok().flatten())
            .and_then(|(_, info)| info.pid());
        if launchd_pid == Some(rec.pid) {
            return Ok(());
        }
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
        EnvProof::Exec => {
            "environment proven by the launch program's own record (the kernel hides the live one)"
        }
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
    if stack.run_dir.join("pending").exists() {
        st.notes.push(format!(
            "an earlier change was interrupted before it verified; `oyster agent regenerate --stack {}` re-verifies it (and rolls back if it fails)",
            stack.name
        ));
    }
    match Launchctl::locate(&ctx.env) {
        Err(e) => st.notes.push(e.to_string()),
        Ok(lc) => {
            st.launchctl = Some(lc.path.display().to_string());
            st.launchctl_overridden = lc.overridden;
            // A launchctl that fails is one note: the document is printed either way.
            let looked = (|| -> anyhow::Result<()> {
                let domain = lc.domain()?;
                if let Some(n) = &domain.fallback_note {
                    st.notes.push(n.clone());
                }
                // A job loaded in user/<uid> is not visible in gui/<uid>: look in both.
                let found = lc.find_loaded(&stack.label)?;
                st.domain = Some(found.as_ref().map_or(domain.name, |(d, _)| d.clone()));
                let Some((_, info)) = found else {
                    return Ok(());
                };
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
                    st.health = inst
                        .env
                        .port()
                        .and_then(|p| verify::health(p, std::time::Duration::from_secs(2)));
                    let floor = lifecycle::ProofFloor::from_env(ctx.env.env_proof.as_deref());
                    let record = ExecRecord::read(&stack.exec_record_path());
                    match lifecycle::prove_env(pid, &info, &inst.env, record.as_ref(), floor) {
                        Ok(proof) => st.env_proof = Some(proof.as_str()),
                        Err(why) => st.notes.push(why),
                    }
                    let owned = inst
                        .env
                        .port()
                        .is_some_and(|p| verify::check_listener(p, pid).is_ok());
                    st.verified = st.env_proof.is_some() && st.health == Some(200) && owned;
                    if let Some(live) = verify::inspect(pid) {
                        if let verify::EnvCheck::Mismatch(d) = verify::check_env(&live, &inst.env) {
                            st.env_mismatch = d.iter().map(|(k, _, _)| k.clone()).collect();
                        }
                    }
                }
                Ok(())
            })();
            if let Err(e) = looked {
                st.notes.push(format!("launchctl failed: {e:#}"));
            }
        }
    }
    if json {
        ctx.out.json(&st);
    } else {
        print_status(ctx, &st);
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

fn print_status(ctx: &Context, st: &AgentStatus) {
    let yn = |b: bool| if b { "yes" } else { "no" };
    ctx.out
        .out_toned(Tone::Heading, &format!("{} (stack {})", st.label, st.stack));
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
