//! `oyster host start|stop|status`: direct (pid-file) startup; `oyster host exec`: the Host's
//! launch program (`launch`).

use std::time::Duration;

use serde::Serialize;

use crate::agent::launchctl::Launchctl;
use crate::cli::HostCommand;
use crate::context::Context;
use crate::direct::{self, Owner, StartOptions, Stopped};
use crate::host::plan::{self, Writes};
use crate::verify;
use crate::ExitStatus;

pub fn run(ctx: &Context, cmd: HostCommand) -> anyhow::Result<ExitStatus> {
    if let HostCommand::Exec = cmd {
        // The Host's environment always sets OYSTERUN_CONFIG_DIR: no override note in its log.
        // It returns only when the Host could not be exec'd.
        let Err(e) = crate::launch::run(ctx);
        return Err(e);
    }
    ctx.announce_overrides();
    let stack = &ctx.stack;
    match cmd {
        HostCommand::Exec => unreachable!("handled above"),
        HostCommand::Start { host, verify } => {
            let lock = ctx.lock_stack("host start")?;
            // Before the config sync writes anything (CONTRACT.md §9).
            stack.refuse_special_log()?;
            refuse_if_agent_loaded(ctx)?;
            let plan = plan::plan(ctx, &host.inputs(), Writes::Sync(&lock))?;
            crate::config::report(&ctx.stack.config_path(), &plan.changes);
            crate::tell!(
                "Starting the Host (node {} {}) on 127.0.0.1:{}…",
                plan.node.version,
                plan.node.path.display(),
                plan.port
            );
            let started = direct::start(
                stack,
                &plan,
                &StartOptions {
                    wait: verify.timing().wait,
                    settle: verify.timing().settle,
                    floor: crate::verify::ProofFloor::from_env(ctx.env.env_proof.as_deref()),
                },
            )?;
            crate::say!(
                "Host started: pid {}, /health 200 after {} ms, environment verified; log {}",
                started.pid,
                started.health_after.as_millis(),
                stack.log_path().display()
            );
            Ok(ExitStatus::Success)
        }
        HostCommand::Stop => {
            let _lock = ctx.lock_stack("host stop")?;
            if let Some(job) = launchd_runs_it(ctx)? {
                return Err(job.refusal(stack).into());
            }
            match direct::stop_checked(stack, &|pid| launchd_job_of(&ctx.env, pid))? {
                Stopped::NotRunning => crate::say!("The Host is not running (no pid file)."),
                Stopped::StaleRemoved(rec) => crate::say!(
                    "The Host is not running (pid {} is gone); removed the stale pid file.",
                    rec.pid
                ),
                Stopped::ForeignLeftAlone(rec) => crate::say!(
                    "pid {} now belongs to another process, which was not signalled; removed the stale pid file.",
                    rec.pid
                ),
                Stopped::Signalled { pid, killed } => crate::say!(
                    "Host stopped (pid {pid}{}).",
                    if killed { ", needed SIGKILL after SIGTERM" } else { "" }
                ),
            }
            Ok(ExitStatus::Success)
        }
        HostCommand::Status { json } => {
            let (st, why) = status(ctx)?;
            if json {
                crate::output::printer().json(&st);
            } else {
                match st.pid {
                    Some(pid) if st.running => crate::say!(
                        "Host running{}: pid {pid}, port {}, /health {}, environment {}",
                        if st.managed_by == Some(Manager::Launchd) {
                            format!(" under launchd ({})", stack.label)
                        } else {
                            String::new()
                        },
                        st.port.map_or("?".into(), |p| p.to_string()),
                        st.health.map_or("no answer".into(), |h| h.to_string()),
                        if st.verified {
                            "verified"
                        } else {
                            "NOT verified"
                        }
                    ),
                    _ => crate::say!("Host not running ({why})"),
                }
                if st.managed_by == Some(Manager::Launchd) {
                    crate::say!(
                        "  launchd owns this Host: use `oyster agent status|stop|restart --stack {}` (`host stop` would only make KeepAlive start it again)",
                        stack.name
                    );
                } else if let Some(env) = &st.env_mismatch_text {
                    crate::say!("  {env}");
                }
            }
            Ok(if st.running {
                ExitStatus::Success
            } else {
                ExitStatus::Failure
            })
        }
    }
}

/// Who runs the Host (`host status --json` `managed_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Manager {
    /// `oyster host start` (the pid file).
    Direct,
    /// The LaunchAgent; `oyster agent …` manages it.
    Launchd,
}

/// What the pid file says (`host status --json` `pid_file`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum PidFile {
    Missing,
    /// It names a live Host of this stack.
    Current,
    /// Its pid is gone.
    Stale,
    /// Its pid belongs to another process now (never signalled).
    Foreign,
    /// It names a live Host of another stack (copied identity files; never signalled).
    OtherStack,
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
    env_proof: Option<&'static str>,
    env_mismatch: Vec<String>,
    pid_file: PidFile,
    pid_path: String,
    log_path: String,
    #[serde(skip)]
    env_mismatch_text: Option<String>,
}

/// The status, and in words why the Host is not running (for people).
fn status(ctx: &Context) -> anyhow::Result<(HostStatus, String)> {
    let stack = &ctx.stack;
    // The stack's port as recorded (the running Host's own, below, wins).
    let recorded = crate::config::ConfigDoc::load(&stack.config_path())
        .ok()
        .and_then(|d| d.port())
        .or(stack.default_port);
    let mut st = HostStatus {
        stack: stack.name.clone(),
        port: recorded,
        managed_by: None,
        running: false,
        pid: None,
        health: None,
        verified: false,
        env_proof: None,
        env_mismatch: vec![],
        pid_file: PidFile::Missing,
        pid_path: stack.pid_path().display().to_string(),
        log_path: stack.log_path().display().to_string(),
        env_mismatch_text: None,
    };
    let owner = direct::owner(stack)?;
    st.pid_file = match &owner {
        Owner::None => PidFile::Missing,
        Owner::Stale(_) => PidFile::Stale,
        Owner::Foreign(..) => PidFile::Foreign,
        Owner::OtherStack(..) => PidFile::OtherStack,
        Owner::Ours(..) => PidFile::Current,
    };
    if let Some(job) = launchd_runs_it(ctx)? {
        st.managed_by = Some(Manager::Launchd);
        let installed = crate::host::plist::read_installed(&stack.plist_path());
        st.port = installed.as_ref().and_then(|i| i.env.port()).or(recorded);
        if let (Some(pid), Some(inst)) = (job.pid, &installed) {
            st.running = true;
            st.pid = Some(pid);
            st.health = inst
                .env
                .port()
                .and_then(|p| verify::health(p, Duration::from_secs(2)));
            let floor = verify::ProofFloor::from_env(ctx.env.env_proof.as_deref());
            let record = crate::host::identity::ExecRecord::read(&stack.exec_record_path());
            let info = crate::agent::launchctl::Launchctl::locate(&ctx.env)
                .ok()
                .and_then(|lc| lc.find_loaded(&stack.label).ok().flatten());
            match info.map(|(_, info)| {
                crate::agent::lifecycle::prove_env(pid, &info, &inst.env, record.as_ref(), floor)
            }) {
                Some(Ok(proof)) => st.env_proof = Some(proof.as_str()),
                Some(Err(why)) => st.env_mismatch_text = Some(why),
                None => {}
            }
            st.verified = st.env_proof.is_some() && st.health == Some(200);
        }
        let why = format!("launchd has {} loaded, state {}", job.label, job.state);
        return Ok((st, why));
    }
    let why = match owner {
        Owner::None => "no pid file".to_owned(),
        Owner::Stale(rec) => format!("stale pid file: pid {} is gone", rec.pid),
        Owner::Foreign(rec, now) => {
            format!(
                "stale pid file: pid {} now belongs to another process ({})",
                rec.pid,
                now.command()
            )
        }
        Owner::OtherStack(why) => why,
        Owner::Ours(rec, live) => {
            st.managed_by = Some(Manager::Direct);
            st.running = true;
            st.pid = Some(rec.pid);
            st.port = Some(rec.port);
            st.health = verify::health(rec.port, Duration::from_secs(2));
            // Compare with what the generator produces now for the same root and node.
            let args = plan::HostInputs {
                root: rec.root().map(Into::into),
                node_bin: Some(rec.node.clone()),
            };
            match plan::plan(ctx, &args, Writes::None) {
                Ok(plan) => {
                    // The same proofs as `host start`: live, else the launch program's record.
                    let floor = verify::ProofFloor::from_env(ctx.env.env_proof.as_deref());
                    let record = crate::host::identity::ExecRecord::read(&stack.exec_record_path());
                    match verify::prove_live_or_exec(rec.pid, &plan.env, record.as_ref(), floor) {
                        Ok(Some(p)) => st.env_proof = Some(p.as_str()),
                        Ok(None) => {
                            st.env_mismatch_text = Some("the environment is unproven".into())
                        }
                        Err(why) => {
                            record_env(&mut st, Some(&verify::check_env(&live, &plan.env)));
                            st.env_mismatch_text = Some(why);
                        }
                    }
                    st.verified = st.env_proof.is_some() && st.health == Some(200);
                }
                Err(e) => {
                    st.env_mismatch_text =
                        Some(format!("could not compute the expected environment: {e:#}"))
                }
            }
            "running".to_owned()
        }
    };
    Ok((st, why))
}

fn record_env(st: &mut HostStatus, check: Option<&verify::EnvCheck>) {
    match check {
        Some(verify::EnvCheck::Verified) => st.env_proof = Some("live"),
        Some(c @ verify::EnvCheck::Mismatch(d)) => {
            st.env_mismatch = d.iter().map(|(k, _, _)| k.clone()).collect();
            st.env_mismatch_text = Some(c.describe());
        }
        Some(c) => st.env_mismatch_text = Some(c.describe()),
        None => {}
    }
}

/// The stack's LaunchAgent, loaded: launchd owns the Host (and the pid file `host exec`
/// writes), so `host stop` must not signal it and `host status` says so (CONTRACT.md §6).
struct LaunchdJob {
    label: String,
    domain: String,
    state: String,
    pid: Option<u32>,
}

impl LaunchdJob {
    fn refusal(&self, stack: &crate::host::stack::Stack) -> crate::error::Failed {
        crate::error::Failed::new(
            format!(
                "launchd runs this Host ({} in {}, {}); `host stop` would only make KeepAlive start it again, so it was not signalled",
                self.label,
                self.domain,
                self.pid.map_or(format!("state {}", self.state), |p| format!("pid {p}"))
            ),
            format!(
                "`oyster agent stop --stack {}` stops it and keeps it stopped; `oyster agent restart --stack {}` restarts it",
                stack.name, stack.name
            ),
        )
    }
}

/// Whether launchd has the stack's job loaded (no launchctl here: it has not).
fn launchd_runs_it(ctx: &Context) -> anyhow::Result<Option<LaunchdJob>> {
    let Ok(lc) = Launchctl::locate(&ctx.env) else {
        return Ok(None);
    };
    let domain = lc.domain()?;
    Ok(lc
        .print(&domain.target(&ctx.stack.label))?
        .map(|info| LaunchdJob {
            label: ctx.stack.label.clone(),
            domain: domain.name.clone(),
            state: info.state().unwrap_or("unknown").to_owned(),
            pid: info.pid().filter(|_| info.running()),
        }))
}

/// The launchd job that runs `pid`, under any label oyster can name: every stack's label on
/// this machine, in both per-user domains, and (where the kernel shows the environment) the
/// `XPC_SERVICE_NAME` launchd gives each job. `None` when none does or there is no launchctl.
fn launchd_job_of(env: &crate::context::EnvSnapshot, pid: u32) -> Option<String> {
    if let Some(name) = verify::inspect(pid)
        .and_then(|live| live.var("XPC_SERVICE_NAME"))
        .filter(|n| !n.is_empty() && n != "0")
    {
        return Some(name);
    }
    let lc = crate::agent::launchctl::Launchctl::locate(env).ok()?;
    let stack_env = env.stack_env();
    crate::host::stack::discover(&stack_env)
        .into_iter()
        .filter_map(|name| crate::host::stack::Stack::new(&name, &stack_env).ok())
        .find_map(|s| {
            let (domain, info) = lc.find_loaded(&s.label).ok()??;
            (info.pid() == Some(pid)).then(|| format!("{} in {domain}", s.label))
        })
}

/// Direct startup must not run a second Host beside a loaded LaunchAgent.
fn refuse_if_agent_loaded(ctx: &Context) -> anyhow::Result<()> {
    let Ok(lc) = Launchctl::locate(&ctx.env) else {
        // No launchctl: no LaunchAgent can be loaded (Linux, or launchd-less macOS).
        return Ok(());
    };
    let domain = lc.domain()?;
    if let Some(info) = lc.print(&domain.target(&ctx.stack.label))? {
        anyhow::bail!(
            "the LaunchAgent {} is loaded in {} (state {}); it owns the Host. Use `oyster agent restart`, \
             or `oyster agent uninstall` before starting the Host directly",
            ctx.stack.label,
            domain.name,
            info.state().unwrap_or("unknown")
        );
    }
    Ok(())
}
