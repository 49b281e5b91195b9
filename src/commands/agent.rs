//! `oyster agent …`: the LaunchAgent plist and the launchd job.

use serde::Serialize;

use crate::agent::launchctl::{JobState, LastExit, Launchctl, LocateError};
use crate::agent::lifecycle::{self, Agent, EnvProof, Outcome};
use crate::cli::AgentCommand;
use crate::context::Context;
use crate::error::Failed;
use crate::host::identity::ExecRecord;
use crate::host::plan::{self, Plan, Writes};
use crate::host::plist as agentplist;
use crate::output::audit::Action;
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
            // Before the config sync writes anything (CONTRACT.md §9).
            stack.refuse_special_log()?;
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
            let outcome = agent.apply(&plan, Action::Install, false, verify.timing())?;
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
            stack.refuse_special_log()?;
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
                    // A stopped agent is started again; one never loaded is installed.
                    let verb = if agent.lc.is_disabled_in(&agent.domain.name, &stack.label) {
                        "start"
                    } else {
                        "install"
                    };
                    crate::say!(
                        "The LaunchAgent is not loaded; `oyster agent {verb} --stack {}` loads it.",
                        stack.name
                    );
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
                    let outcome = agent.apply(&plan, Action::Regenerate, false, verify.timing())?;
                    report(ctx, &plan, &outcome);
                }
            }
            Ok(ExitStatus::Success)
        }
        AgentCommand::Restart { host, verify } => {
            let _guard = InterruptGuard::install();
            require_known(ctx)?;
            let lock = ctx.lock_stack("agent restart")?;
            // Said first: nothing about the root or node matters for a job that is not there.
            if !stack.plist_path().exists() {
                if let Some(direct) = direct_instead(ctx, "restart") {
                    return Err(direct.into());
                }
            }
            let lc = Launchctl::locate(&ctx.env)?;
            if !stack.plist_path().exists() && lc.find_loaded(&stack.label)?.is_none() {
                return Err(not_installed(ctx, "restart").into());
            }
            stack.refuse_special_log()?;
            refuse_direct_host(ctx)?;
            let plan = synced_plan(ctx, &host, &lock)?;
            let agent = Agent::new(ctx, &lock)?;
            let outcome = agent.apply(&plan, Action::Restart, true, verify.timing())?;
            report(ctx, &plan, &outcome);
            Ok(ExitStatus::Success)
        }
        AgentCommand::Status { json } => {
            require_known(ctx)?;
            status(ctx, json)
        }
        AgentCommand::Stop => stop(ctx),
        AgentCommand::Start(args) => start(ctx, &args),
        AgentCommand::Kill => kill(ctx),
        AgentCommand::List { json } => list(ctx, json),
        AgentCommand::Uninstall => {
            require_known(ctx)?;
            // A bad timeout is a typo, not a missing launchctl: removing the plist of a job
            // that stays loaded would leave it with no file behind it.
            if let Err(e @ LocateError::BadTimeout(_)) = Launchctl::locate(&ctx.env) {
                return Err(e.into());
            }
            let plist = stack.plist_path();
            let lc = Launchctl::locate(&ctx.env);
            let loaded = lc
                .as_ref()
                .ok()
                .and_then(|lc| lc.find_loaded(&stack.label).ok().flatten())
                .is_some();
            if !plist.exists() && !loaded {
                // Nothing to do, and nothing created (no lock, no log dir, no audit line).
                crate::say!(
                    "{} is not installed; nothing to uninstall.",
                    plist.display()
                );
                return Ok(ExitStatus::Success);
            }
            let lock = ctx.lock_stack("agent uninstall")?;
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

/// A custom stack with nothing on disk is a typo until proven otherwise (exit 2, naming the
/// stacks that exist); production and staging always exist.
fn require_known(ctx: &Context) -> Result<(), crate::error::Invalid> {
    crate::host::stack::require_known(&ctx.stack, &ctx.env.stack_env())
}

/// Whether the stack has a plist, or a job loaded in either domain (read-only).
fn is_installed(ctx: &Context) -> anyhow::Result<bool> {
    if ctx.stack.plist_path().exists() {
        return Ok(true);
    }
    let lc = Launchctl::locate(&ctx.env)?;
    Ok(lc.find_loaded(&ctx.stack.label)?.is_some())
}

/// For a stack whose Host was started directly (no LaunchAgent): the `host` command to use.
fn direct_instead(ctx: &Context, verb: &str) -> Option<Failed> {
    let crate::direct::Owner::Ours(rec, _) = crate::direct::owner(&ctx.stack).ok()? else {
        return None;
    };
    let host_verb = if verb == "stop" {
        "stop"
    } else {
        "stop` then `oyster host start"
    };
    Some(Failed::new(
        format!(
            "the Host of stack {} was started directly (pid {}, `oyster host start`), not by a LaunchAgent, so there is nothing to {verb} in launchd",
            ctx.stack.name, rec.pid
        ),
        format!("`oyster host {host_verb} --stack {}`", ctx.stack.name),
    ))
}

fn not_installed(ctx: &Context, verb: &str) -> Failed {
    Failed::new(
        format!(
            "the LaunchAgent {} is not installed ({} does not exist), so there is nothing to {verb}",
            ctx.stack.label,
            ctx.stack.plist_path().display()
        ),
        format!(
            "`oyster agent install --stack {}` installs it (or `oyster setup --stack {}`)",
            ctx.stack.name, ctx.stack.name
        ),
    )
}

/// `agent stop`: bootout, keep the plist, disable the label (it stays stopped at login).
fn stop(ctx: &Context) -> anyhow::Result<ExitStatus> {
    require_known(ctx)?;
    let stack = &ctx.stack;
    // Said before anything is created (no lock file for a stack that is not there).
    if !stack.plist_path().exists() {
        if let Some(direct) = direct_instead(ctx, "stop") {
            return Err(direct.into());
        }
    }
    if !is_installed(ctx)? {
        return Err(not_installed(ctx, "stop").into());
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

/// `agent start`: enable, regenerate the plist as install does, load, verify (undoes `stop`).
fn start(ctx: &Context, args: &crate::cli::StartArgs) -> anyhow::Result<ExitStatus> {
    let _guard = InterruptGuard::install();
    require_known(ctx)?;
    if !is_installed(ctx)? {
        return Err(not_installed(ctx, "start").into());
    }
    let lock = ctx.lock_stack("agent start")?;
    let agent = Agent::new(ctx, &lock)?;
    ctx.stack.refuse_special_log()?;
    refuse_direct_host(ctx)?;
    let plan = synced_plan(ctx, &args.host, &lock)?;
    agent.enable(Action::Start)?;
    let outcome = agent.apply(&plan, Action::Start, false, args.verify.timing())?;
    report(ctx, &plan, &outcome);
    Ok(ExitStatus::Success)
}

/// `agent kill`: SIGTERM to the running Host only; KeepAlive starts it again.
fn kill(ctx: &Context) -> anyhow::Result<ExitStatus> {
    require_known(ctx)?;
    let lock = ctx.lock_stack("agent kill")?;
    let agent = Agent::new(ctx, &lock)?;
    let k = agent.kill()?;
    crate::say!(
        "Sent SIGTERM to the Host (pid {}){}; launchd starts it again (KeepAlive; a Host that ran less than 10 s waits out the throttle). `oyster agent status --stack {}` shows the new pid.",
        k.pid,
        if k.exited { ", which exited" } else { ", which is still shutting down" },
        ctx.stack.name
    );
    Ok(ExitStatus::Success)
}

/// The state of a stack in one word, for people and scripts (docs/json.md `summary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Summary {
    /// Running, and verified against the installed plist.
    Verified,
    /// Running and verified, started directly (`oyster host start`), not by launchd.
    Direct,
    /// Running and verified, but against an installed plist that is not what oyster generates
    /// now (`oyster agent regenerate` brings it up to date).
    Stale,
    /// Running, but `/health` or the environment does not verify.
    Unverified,
    /// launchd keeps restarting a Host that dies.
    CrashLoop,
    /// Loaded, no Host running (and no crash loop seen).
    NotRunning,
    /// Stopped by `oyster agent stop`: not loaded, label disabled, plist kept.
    Disabled,
    /// Installed but not loaded (and not disabled).
    NotLoaded,
    /// No plist and nothing loaded.
    NotInstalled,
    /// launchctl is not usable here, so nothing about launchd is known.
    Unknown,
}

impl Summary {
    fn words(self) -> &'static str {
        match self {
            Summary::Verified => "running, verified",
            Summary::Direct => "running (started directly), verified",
            Summary::Stale => {
                "running, verified against a stale plist (run `oyster agent regenerate`)"
            }
            Summary::Unverified => "running, NOT verified",
            Summary::CrashLoop => "crash loop",
            Summary::NotRunning => "loaded, not running",
            Summary::Disabled => "stopped (disabled)",
            Summary::NotLoaded => "installed, not loaded",
            Summary::NotInstalled => "not installed",
            Summary::Unknown => "unknown (launchctl is not usable)",
        }
    }

    fn tone(self) -> Tone {
        match self {
            Summary::Verified | Summary::Direct => Tone::Ok,
            Summary::Stale | Summary::Disabled | Summary::NotInstalled | Summary::Unknown => {
                Tone::Warn
            }
            _ => Tone::Fail,
        }
    }
}

/// `agent status --json` and each row of `agent list --json` (docs/json.md): the four facts
/// stay separate; numbers are numbers, unknown is `null`, paths are absolute.
#[derive(Serialize)]
struct AgentStatus {
    stack: String,
    label: String,
    port: Option<u16>,
    url: Option<String>,
    summary: Summary,
    installed: bool,
    loaded: bool,
    running: bool,
    verified: bool,
    /// launchd has the label disabled (`agent stop`); `null` when launchctl is not usable.
    disabled: Option<bool>,
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
    /// Who runs the Host: `"launchd"` (the LaunchAgent), `"direct"` (`oyster host start`, where
    /// there is no launchd), or `null` when none runs.
    managed_by: Option<&'static str>,
    plist_path: String,
    log_path: String,
    launchctl: Option<String>,
    launchctl_overridden: bool,
    domain: Option<String>,
    notes: Vec<String>,
}

fn status(ctx: &Context, json: bool) -> anyhow::Result<ExitStatus> {
    let st = collect(ctx)?;
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

/// Everything `agent status` knows about the context's stack. Reads only.
fn collect(ctx: &Context) -> anyhow::Result<AgentStatus> {
    let stack = &ctx.stack;
    let plist = stack.plist_path();
    let installed = agentplist::read_installed(&plist);
    let plan = plan::plan(ctx, &Default::default(), Writes::None).ok();
    // The port the installed Host runs with; else what the config records (or the stack's
    // default) — never one that needs a root or a node to be found first.
    let port = installed
        .as_ref()
        .and_then(|i| i.env.port())
        .or_else(|| {
            crate::config::ConfigDoc::load(&stack.config_path())
                .ok()
                .and_then(|d| d.port())
        })
        .or(stack.default_port);
    let mut st = AgentStatus {
        stack: stack.name.clone(),
        label: stack.label.clone(),
        port,
        url: port.map(|p| format!("http://127.0.0.1:{p}")),
        summary: Summary::Unknown,
        installed: installed.is_some(),
        loaded: false,
        running: false,
        verified: false,
        disabled: None,
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
        managed_by: None,
        plist_path: plist.display().to_string(),
        log_path: stack.log_path().display().to_string(),
        launchctl: None,
        launchctl_overridden: false,
        domain: None,
        notes: vec![],
    };
    if stack.pending_path().exists() {
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
                // `print-disabled` failing leaves it unknown (`null`); it never fails the status.
                st.disabled = lc
                    .disabled(&domain.name, &stack.label)
                    .ok()
                    .map(|d| d.unwrap_or(false));
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
                // A clean exit (`agent kill`, the Host's own restart) is throttled too; only
                // a crash counts (CONTRACT.md §5: evidence, not the state alone).
                st.crash_loop = info.successive_crashes().is_some_and(|n| n > 0)
                    || (info.job_state() == JobState::SpawnScheduled
                        && last.is_some_and(LastExit::failed));
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
            match looked {
                Ok(()) => st.summary = summarize(&st),
                // Whether it is loaded is not known: the summary says so.
                Err(e) => st.notes.push(format!("launchctl failed: {e:#}")),
            }
        }
    }
    if st.running {
        st.managed_by = Some("launchd");
    } else {
        direct_host(ctx, &mut st);
    }
    Ok(st)
}

/// A Host `oyster host start` runs (where there is no launchd, or beside an unloaded agent):
/// the everyday status says so, with the same proofs as `host status`.
fn direct_host(ctx: &Context, st: &mut AgentStatus) {
    let Ok(crate::direct::Owner::Ours(rec, _)) = crate::direct::owner(&ctx.stack) else {
        return;
    };
    st.managed_by = Some("direct");
    st.running = true;
    st.pid = Some(rec.pid);
    st.port = Some(rec.port);
    st.url = Some(format!("http://127.0.0.1:{}", rec.port));
    st.health = verify::health(rec.port, std::time::Duration::from_secs(2));
    let args = plan::HostInputs {
        root: rec.root().map(Into::into),
        node_bin: Some(rec.node.clone()),
    };
    if let Ok(plan) = plan::plan(ctx, &args, Writes::None) {
        let floor = verify::ProofFloor::from_env(ctx.env.env_proof.as_deref());
        let record = ExecRecord::read(&ctx.stack.exec_record_path());
        match verify::prove_live_or_exec(rec.pid, &plan.env, record.as_ref(), floor) {
            Ok(Some(p)) => st.env_proof = Some(p.as_str()),
            Ok(None) => st.notes.push("the environment is unproven".into()),
            Err(why) => st.notes.push(why),
        }
    }
    let owned = verify::check_listener(rec.port, rec.pid).is_ok();
    st.verified = st.env_proof.is_some() && st.health == Some(200) && owned;
    st.summary = if st.verified {
        Summary::Direct
    } else {
        Summary::Unverified
    };
    st.notes.push(format!(
        "started directly (`oyster host start`): `oyster host stop --stack {}` stops it",
        ctx.stack.name
    ));
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

fn summarize(st: &AgentStatus) -> Summary {
    match (st.installed, st.loaded) {
        (_, true) if st.running && st.verified && st.in_sync == Some(false) => Summary::Stale,
        (_, true) if st.running && st.verified => Summary::Verified,
        (_, true) if st.running => Summary::Unverified,
        (_, true) if st.crash_loop => Summary::CrashLoop,
        (_, true) => Summary::NotRunning,
        (true, false) if st.disabled == Some(true) => Summary::Disabled,
        (true, false) => Summary::NotLoaded,
        (false, false) => Summary::NotInstalled,
    }
}

fn print_status(ctx: &Context, st: &AgentStatus) {
    let yn = |b: bool| if b { "yes" } else { "no" };
    ctx.out
        .out_toned(Tone::Heading, &format!("{} (stack {})", st.label, st.stack));
    ctx.out.out_toned(
        st.summary.tone(),
        &format!("  status:    {}", st.summary.words()),
    );
    if let Some(url) = &st.url {
        crate::say!("  url:       {url}");
    }
    crate::say!("  installed: {} ({})", yn(st.installed), st.plist_path);
    let loaded = match (st.loaded, st.summary) {
        (false, Summary::Disabled) => format!(
            "no: stopped, and disabled so it stays stopped at login; `oyster agent start --stack {}` starts it",
            st.stack
        ),
        (false, Summary::NotLoaded) => format!(
            "no; `oyster agent start --stack {}` loads it",
            st.stack
        ),
        (loaded, _) => format!(
            "{}{}",
            yn(loaded),
            st.domain
                .as_ref()
                .map_or(String::new(), |d| format!(" in {d}"))
        ),
    };
    crate::say!("  loaded:    {loaded}");
    let waiting = match st.state.as_deref() {
        Some("spawn scheduled") if !st.running && !st.crash_loop => {
            " (launchd starts it again after the throttle interval)"
        }
        _ => "",
    };
    crate::say!(
        "  running:   {}{}{}{waiting}",
        yn(st.running),
        st.pid.map_or(String::new(), |p| format!(" (pid {p})")),
        st.runs.map_or(String::new(), |r| format!(", runs {r}"))
    );
    let proof = st
        .env_proof
        .map_or(String::new(), |p| format!(" (environment proof: {p})"));
    let against = if st.verified && st.in_sync == Some(false) {
        ", against the installed plist, which is stale (below)"
    } else {
        ""
    };
    crate::say!("  verified:  {}{proof}{against}", yn(st.verified));
    if st.crash_loop {
        ctx.out.out_toned(
            Tone::Fail,
            &format!(
                "  crash loop: launchd keeps restarting the Host (state {}); see `oyster logs --stack {}`",
                st.state.as_deref().unwrap_or("?"),
                st.stack
            ),
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
        ctx.out.out_toned(Tone::Warn, &format!("  written by Oysterun's own installer (it runs {}): `oyster agent regenerate --stack {}` takes it over", agentplist::OYSTERUN_RUNNER, st.stack));
    } else if st.in_sync == Some(false) {
        ctx.out.out_toned(Tone::Warn, &format!("  stale:     the installed plist differs from what oyster generates now — run `oyster agent regenerate --stack {}`", st.stack));
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

/// `agent list --json`.
#[derive(Serialize)]
struct List {
    stacks: Vec<AgentStatus>,
}

/// `agent list`: one row per stack found on disk, like `brew services list`.
fn list(ctx: &Context, json: bool) -> anyhow::Result<ExitStatus> {
    let mut rows = vec![];
    for name in crate::host::stack::discover(&ctx.env.stack_env()) {
        let sub = if name == ctx.stack.name {
            None
        } else {
            Some(ctx.for_stack(&name)?)
        };
        rows.push(collect(sub.as_ref().unwrap_or(ctx))?);
    }
    if json {
        ctx.out.json(&List { stacks: rows });
        return Ok(ExitStatus::Success);
    }
    if rows.is_empty() {
        crate::say!("No Oysterun stack on this machine yet; `oyster setup` sets one up.");
        return Ok(ExitStatus::Success);
    }
    let yn = |b: bool| if b { "yes" } else { "no" }.to_owned();
    let table: Vec<[String; 10]> = rows
        .iter()
        .map(|r| {
            [
                r.stack.clone(),
                r.label.clone(),
                r.port.map_or_else(|| "-".into(), |p| p.to_string()),
                yn(r.installed),
                match (r.loaded, r.disabled) {
                    (true, _) => "yes".into(),
                    (false, Some(true)) => "disabled".into(),
                    (false, _) => "no".into(),
                },
                match (r.pid.filter(|_| r.running), r.crash_loop) {
                    (Some(pid), _) => format!("pid {pid}"),
                    (None, true) => "crash loop".into(),
                    (None, false) => "no".into(),
                },
                if r.summary == Summary::Stale {
                    "yes (stale)".to_owned()
                } else {
                    yn(r.verified)
                },
                r.env_proof.unwrap_or("-").to_owned(),
                match (r.last_exit_code, r.last_signal) {
                    (Some(c), _) => c.to_string(),
                    (_, Some(s)) => format!("signal {s}"),
                    _ => "-".into(),
                },
                r.log_path.clone(),
            ]
        })
        .collect();
    let head = [
        "STACK",
        "LABEL",
        "PORT",
        "INSTALLED",
        "LOADED",
        "RUNNING",
        "VERIFIED",
        "PROOF",
        "EXIT",
        "LOG",
    ];
    let mut widths = head.map(str::len);
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    ctx.out.out_toned(Tone::Heading, &line(head.to_vec()));
    for (row, r) in table.iter().zip(&rows) {
        let text = line(row.iter().map(String::as_str).collect());
        ctx.out.out_toned(r.summary.tone(), &text);
    }
    Ok(ExitStatus::Success)
}
