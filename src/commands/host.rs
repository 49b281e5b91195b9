//! `oyster host start|stop|status`: direct (pid-file) startup; `oyster host exec`: the Host's
//! launch program (`launch`).

use serde::Serialize;

use crate::agent::status::Manager;
use crate::context::Context;
use crate::direct::status::PidFile;
use crate::direct::{self, StartOptions, Stopped};
use crate::host::plan;
use crate::invocation::HostVerb;
use crate::ExitStatus;

pub fn run(ctx: &Context, cmd: HostVerb) -> anyhow::Result<ExitStatus> {
    if !matches!(cmd, HostVerb::Exec) {
        ctx.announce_overrides();
    }
    match cmd {
        // The Host's environment always sets OYSTERUN_CONFIG_DIR: no override note in its log.
        // It returns only when the Host could not be exec'd.
        HostVerb::Exec => {
            let Err(e) = crate::launch::run(ctx);
            Err(e)
        }
        HostVerb::Start { host, timing } => start(ctx, &host, timing),
        // Only what exists is stopped or examined: a typo is refused with the nearest name
        // (exit 2), as by every verb, and creates nothing.
        HostVerb::Stop => {
            crate::host::stack::require_known(&ctx.stack, &ctx.env.stack_env())?;
            // The Host of a unit whose manager does not answer writes the same pid file:
            // signalling it would only make Restart=always start it again.
            crate::unit::refuse_unreachable(ctx)?;
            stop(ctx)
        }
        HostVerb::Status => {
            crate::host::stack::require_known(&ctx.stack, &ctx.env.stack_env())?;
            show_status(ctx)
        }
    }
}

/// `host start` with the definition it was given, as a refusal's hint repeats it.
fn start_as_typed(host: &crate::host::plan::HostInputs) -> String {
    let path = |p: &std::path::Path| crate::output::shell_word(&p.display().to_string());
    let mut words = vec!["host start".to_owned()];
    if let Some(root) = &host.root {
        words.push(format!("--root {}", path(root)));
    }
    if let Some(node) = &host.node_bin {
        words.push(format!("--node-bin {}", path(node)));
    }
    if let Some(port) = host.port {
        words.push(format!("--port {port}"));
    }
    words.join(" ")
}

/// `host start`: start the Host directly (pid file), verify it, or stop it again.
fn start(
    ctx: &Context,
    host: &crate::host::plan::HostInputs,
    timing: crate::agent::lifecycle::Timing,
) -> anyhow::Result<ExitStatus> {
    let stack = &ctx.stack;
    // A unit whose manager does not answer may be running the Host: not started beside it.
    crate::unit::refuse_unreachable(ctx)?;
    // Before anything is created or written: a port another process holds.
    super::agent::preflight::refuse_held_port(ctx, host)?;
    // A port another stack's installed job owns, running or stopped (issue 38 item 4).
    if let Some(port) = super::agent::preflight::intended_port(ctx, host) {
        crate::manager::refuse_claimed_port(ctx, port)?;
    }
    let lock = ctx.lock_stack(&start_as_typed(host))?;
    // A refused first start (a bad or managed --root) leaves no stack behind, as a refused
    // first install does (`list` and `cleanup` would meet it): decided under the lock, so a
    // stack another oyster created while this one waited is never taken for this run's.
    let first = std::fs::symlink_metadata(&stack.root).is_err();
    let started = start_locked(ctx, host, timing, &lock);
    if first && started.is_err() {
        super::cleanup::forget_refused_first(ctx, "host start");
    }
    started
}

/// [`start`] once it holds the stack's lock.
fn start_locked(
    ctx: &Context,
    host: &crate::host::plan::HostInputs,
    timing: crate::agent::lifecycle::Timing,
    lock: &crate::sys::fs::Lock,
) -> anyhow::Result<ExitStatus> {
    let stack = &ctx.stack;
    // Before the config sync writes anything.
    stack.refuse_special_log()?;
    refuse_if_agent_loaded(ctx)?;
    // A Host already running is refused before the sync writes `--port`/`--root`.
    direct::refuse_running(stack, &ctx.hints(), ctx.reporter())?;
    let plan = plan::plan(ctx, host)?;
    let changes = plan::write_config(ctx, &plan, lock)?;
    crate::config::report(&ctx.stack.config_path(), &changes, ctx.reporter());
    // Oysterun's own restart of a directly started Host takes production to 8802 too.
    super::agent::preflight::warn_production_port(ctx, plan.port);
    ctx.out.err(&format!(
        "Starting the Host (node {} {}) on 127.0.0.1:{}…",
        plan.node.version,
        plan.node.path.display(),
        plan.port
    ));
    let started = direct::start(
        stack,
        &plan,
        &StartOptions {
            wait: timing.wait,
            settle: timing.settle,
            floor: ctx.env.proof_floor,
            hints: ctx.hints(),
            out: ctx.reporter(),
        },
    )?;
    ctx.out.out(&format!(
        "Host started: pid {}, /health 200 after {} ms, environment verified; log {}",
        started.pid,
        started.health_after.as_millis(),
        stack.log_path().display()
    ));
    Ok(ExitStatus::Success)
}

/// `host stop`: stop the directly started Host (identity-checked); never launchd's.
fn stop(ctx: &Context) -> anyhow::Result<ExitStatus> {
    let stack = &ctx.stack;
    // No stack directory, so no pid file: nothing to stop, and nothing (not even the lock) is
    // created to say so.
    if std::fs::symlink_metadata(&stack.root).is_err() {
        if let Some(job) = managed_job(ctx)? {
            return Err(job.refusal(&ctx.hints()).into());
        }
        ctx.out.out("The Host is not running (no pid file).");
        return Ok(ExitStatus::Success);
    }
    let _lock = ctx.lock_stack("host stop")?;
    if let Some(job) = managed_job(ctx)? {
        return Err(job.refusal(&ctx.hints()).into());
    }
    let said = match direct::stop_checked(stack, &ctx.hints(), ctx.reporter(), &|pid| launchd_job_of(ctx, pid))? {
        Stopped::NotRunning => "The Host is not running (no pid file).".to_owned(),
        Stopped::StaleRemoved(rec) => format!(
            "The Host is not running (pid {} is gone); removed the stale pid file.",
            rec.pid
        ),
        Stopped::ForeignLeftAlone(rec) => format!(
            "pid {} now belongs to another process, which was not signalled; removed the stale pid file.",
            rec.pid
        ),
        Stopped::Signalled { pid, killed } => format!(
            "Host stopped (pid {pid}{}).",
            if killed { ", needed SIGKILL after SIGTERM" } else { "" }
        ),
    };
    ctx.out.out(&said);
    Ok(ExitStatus::Success)
}

/// `host status`: exits 0 only for a running Host that verifies, as `status` does.
fn show_status(ctx: &Context) -> anyhow::Result<ExitStatus> {
    let (st, why) = status(ctx)?;
    ctx.out.show(&st, || print_status(ctx, &st, &why));
    Ok(if st.running && st.verified {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

fn print_status(ctx: &Context, st: &HostStatus, why: &str) {
    let stack = &ctx.stack;
    // The service manager that owns the Host, its name for the job, and what restarts it.
    let manager = match st.managed_by {
        Some(Manager::Launchd) => Some(("launchd", stack.label.clone(), "KeepAlive")),
        Some(Manager::Systemd) => Some((
            "systemd",
            crate::systemd::unit_name(&stack.label).unwrap_or_else(|_| stack.label.clone()),
            "Restart=always",
        )),
        _ => None,
    };
    match st.pid {
        Some(pid) if st.running => ctx.out.out(&format!(
            "Host running{}: pid {pid}, port {}, /health {}, environment {}",
            manager
                .as_ref()
                .map_or(String::new(), |(m, job, _)| format!(" under {m} ({job})")),
            st.port.map_or("?".into(), |p| p.to_string()),
            st.health.map_or("no answer".into(), |h| h.to_string()),
            if st.verified {
                "verified"
            } else {
                "NOT verified"
            }
        )),
        _ => ctx.out.out(&format!("Host not running ({why})")),
    }
    if let Some((m, _, restarts)) = manager {
        ctx.out.out(&format!(
            "  {m} owns this Host: use `oyster status|stop|restart{}` (`host stop` would only make {restarts} start it again)",
            ctx.stack_suffix()
        ));
    }
    if let Some(problem) = st.env_mismatch_text.as_ref().filter(|_| st.running) {
        ctx.out.out(&format!("  not verified: {problem}"));
    }
}

/// `host status --json` (docs/json.md): the same keys as `agent status` where they mean the
/// same; no prose values.
#[derive(Serialize)]
struct HostStatus {
    stack: String,
    port: Option<u16>,
    managed_by: Option<Manager>,
    running: bool,
    pid: Option<u32>,
    health: Option<u16>,
    verified: bool,
    env_proof: Option<crate::verify::EnvProof>,
    env_mismatch: Vec<String>,
    pid_file: PidFile,
    pid_path: String,
    log_path: String,
    #[serde(skip)]
    env_mismatch_text: Option<String>,
}

/// The status, and in words why the Host is not running (for people): the job as `status`
/// observes it (`agent::status::collect`: launchd's, the unit's, or a directly started Host),
/// with what the pid file says.
fn status(ctx: &Context) -> anyhow::Result<(HostStatus, String)> {
    let stack = &ctx.stack;
    // A config that cannot be read leaves the port unknown, said, rather than the default
    // (another Host's port).
    if let Err(e) = crate::config::ConfigDoc::load(&stack.config_path()) {
        ctx.out.warn(&format!("the stack's config is broken: {e}"));
    }
    let owner = direct::owner(stack)?;
    let a = crate::agent::status::collect(ctx)?;
    // A loaded job owns the Host, running or not (and the pid file `host exec` writes).
    let (managed_by, why) = match (a.loaded, &a.unit) {
        (true, Some(u)) => (
            Some(Manager::Systemd),
            format!("systemd --user has {}, state {}", u.unit, u.sub_state),
        ),
        (true, None) => (
            Some(Manager::Launchd),
            format!(
                "launchd has {} loaded, state {}",
                a.label,
                a.state.as_deref().unwrap_or("unknown")
            ),
        ),
        (false, _) => (
            a.managed_by,
            direct::status::not_running_why(&owner).unwrap_or_else(|| "running".to_owned()),
        ),
    };
    let st = HostStatus {
        stack: a.stack,
        port: a.port,
        managed_by,
        running: a.running,
        pid: a.pid.filter(|_| a.running),
        health: a.health,
        verified: a.verified,
        env_proof: a.env_proof,
        env_mismatch: a.env_mismatch,
        pid_file: PidFile::of(&owner),
        pid_path: stack.pid_path().display().to_string(),
        log_path: a.log_path,
        env_mismatch_text: a.problem,
    };
    Ok((st, why))
}

/// The stack's job its manager keeps (a loaded LaunchAgent, an active unit): it owns the Host
/// (and the pid file `host exec` writes), so `host stop` must not signal it nor `host start`
/// run a second Host beside it (docs/behaviour.md §6). The refusals' own read, not `status`'s
/// observation: asked before anything is signalled or written, it probes no Host, and a
/// launchctl or systemctl that fails refuses rather than becoming a note.
struct ManagedJob {
    label: String,
    domain: String,
    state: String,
    pid: Option<u32>,
    /// launchd's LaunchAgent (else the systemd unit).
    launchd: bool,
}

impl ManagedJob {
    fn refusal(&self, hints: &crate::context::Hints) -> crate::error::Failed {
        crate::error::Failed::new(
            format!(
                "{} runs this Host ({} in {}, {}); `host stop` would only make {} start it again, so it was not signalled",
                if self.launchd { "launchd" } else { "systemd" },
                self.label,
                self.domain,
                self.pid.map_or(format!("state {}", self.state), |p| format!("pid {p}")),
                if self.launchd { "KeepAlive" } else { "Restart=always" }
            ),
            format!(
                "`{}` stops it and keeps it stopped; `{}` restarts it",
                hints.agent("stop"),
                hints.agent("restart")
            ),
        )
    }
}

/// The stack's job, when its manager keeps it (no launchctl here: launchd does not).
fn managed_job(ctx: &Context) -> anyhow::Result<Option<ManagedJob>> {
    if let Some(job) = systemd_runs_it(ctx)? {
        return Ok(Some(job));
    }
    let Ok(lc) = ctx.launchctl() else {
        return Ok(None);
    };
    // Both domains: a job loaded in user/<uid> while gui/<uid> exists (oyster's own 125
    // fallback, a console stop then an SSH start) is launchd's Host all the same.
    Ok(lc
        .find_loaded(&ctx.stack.label)?
        .map(|(domain, info)| ManagedJob {
            label: ctx.stack.label.clone(),
            domain: domain.to_string(),
            state: info.state().unwrap_or("unknown").to_owned(),
            pid: info.pid().filter(|_| info.running()),
            launchd: true,
        }))
}

/// The stack's systemd unit, when the user manager keeps it going (active, starting,
/// restarting, failed): it owns the Host, as a loaded LaunchAgent does.
fn systemd_runs_it(ctx: &Context) -> anyhow::Result<Option<ManagedJob>> {
    let Ok(crate::context::Manager::Systemd(sc)) = ctx.manager() else {
        return Ok(None);
    };
    let unit = crate::systemd::unit_name(&ctx.stack.label)?;
    let show = sc.show(&unit)?;
    let active =
        !show.is_not_found() && !matches!(show.active_state, crate::systemd::ActiveState::Inactive);
    Ok(active.then(|| ManagedJob {
        label: unit,
        domain: "systemd --user".to_owned(),
        state: show.sub_state.clone(),
        pid: show.main_pid.filter(|_| show.is_running()),
        launchd: false,
    }))
}

/// The launchd job that runs `pid`, under any label oyster can name: every stack's label on
/// this machine, in both per-user domains, and (where the kernel shows the environment) the
/// `XPC_SERVICE_NAME` launchd gives each job. `None` when none does or there is no launchctl.
fn launchd_job_of(ctx: &Context, pid: u32) -> Option<String> {
    if let Some(name) = crate::verify::inspect(pid)
        .and_then(|live| live.var("XPC_SERVICE_NAME"))
        .filter(|n| !n.is_empty() && n != "0")
    {
        return Some(name);
    }
    let lc = ctx.launchctl().ok()?;
    let stack_env = ctx.env.stack_env();
    crate::host::stack::discover(&stack_env)
        .into_iter()
        .filter_map(|name| crate::host::stack::Stack::new(&name, &stack_env).ok())
        .find_map(|s| {
            let (domain, info) = lc.find_loaded(&s.label).ok()??;
            (info.pid() == Some(pid)).then(|| format!("{} in {domain}", s.label))
        })
}

/// Direct startup must not run a second Host beside a loaded LaunchAgent or an active unit.
fn refuse_if_agent_loaded(ctx: &Context) -> anyhow::Result<()> {
    let Some(job) = managed_job(ctx)? else {
        return Ok(());
    };
    let what = if job.launchd {
        format!(
            "the LaunchAgent {} is loaded in {} (state {})",
            job.label, job.domain, job.state
        )
    } else {
        format!(
            "the systemd unit {} is active under {} ({})",
            job.label, job.domain, job.state
        )
    };
    anyhow::bail!(
        "{what}; it owns the Host. Use `{}`, or `{}` before starting the Host directly",
        ctx.hint_cmd("restart"),
        ctx.hint_cmd("uninstall")
    )
}
