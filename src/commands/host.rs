//! `oyster host start|stop|status`: direct (pid-file) startup; `oyster host exec`: the Host's
//! launch program (`host::runner`).

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
        let Err(e) = crate::host::runner::run(ctx);
        return Err(e);
    }
    ctx.announce_overrides();
    let stack = &ctx.stack;
    match cmd {
        HostCommand::Exec => unreachable!("handled above"),
        HostCommand::Start { host, wait } => {
            let lock = ctx.lock_stack("host start")?;
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
                    wait: Duration::from_secs(wait),
                    settle: Duration::from_millis(1000),
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
            // `host exec` writes the pid file under launchd too; that Host is launchd's, and
            // KeepAlive would only start it again.
            if let Some(pid) = launchd_owns_pid_file(ctx) {
                anyhow::bail!(
                    "the Host (pid {pid}) is run by launchd ({}), not started directly; it was not \
                     signalled. Use `oyster agent stop --stack {}` (or `oyster agent uninstall`)",
                    stack.label,
                    stack.name
                );
            }
            match direct::stop(stack)? {
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
            let st = status(ctx)?;
            if json {
                crate::output::printer().json(&st);
            } else if st.managed_by == Some("launchd") {
                crate::say!(
                    "Host running under launchd: pid {} ({}); see `oyster agent status --stack {}`",
                    st.pid.unwrap_or_default(),
                    stack.label,
                    stack.name
                );
            } else {
                match st.pid {
                    Some(pid) if st.running => crate::say!(
                        "Host running: pid {pid}, port {}, /health {}, environment {}",
                        st.port.map_or("?".into(), |p| p.to_string()),
                        st.health.map_or("no answer".into(), |h| h.to_string()),
                        if st.verified {
                            "verified"
                        } else {
                            "NOT verified"
                        }
                    ),
                    _ => crate::say!("Host not running ({})", st.detail),
                }
                if let Some(why) = &st.env {
                    crate::say!("  {why}");
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

/// `host status --json`.
#[derive(Serialize)]
struct HostStatus {
    running: bool,
    pid: Option<u32>,
    port: Option<u16>,
    health: Option<u16>,
    verified: bool,
    env: Option<String>,
    detail: String,
    /// `"launchd"` when the pid file names the pid launchd runs for the stack's label (then
    /// `oyster agent status` is the command that describes it), `"direct"` for a Host `host
    /// start` started, `null` when none runs.
    managed_by: Option<&'static str>,
    pid_file: String,
    log: String,
}

fn status(ctx: &Context) -> anyhow::Result<HostStatus> {
    let stack = &ctx.stack;
    let mut st = HostStatus {
        running: false,
        pid: None,
        port: None,
        health: None,
        verified: false,
        env: None,
        detail: String::new(),
        managed_by: None,
        pid_file: stack.pid_path().display().to_string(),
        log: stack.log_path().display().to_string(),
    };
    if let Some(pid) = launchd_owns_pid_file(ctx) {
        st.running = true;
        st.pid = Some(pid);
        st.managed_by = Some("launchd");
        st.detail = format!("run by launchd ({})", stack.label);
        return Ok(st);
    }
    match direct::owner(stack)? {
        Owner::None => st.detail = "no pid file".into(),
        Owner::Stale(rec) => {
            st.detail = format!("stale pid file: pid {} is gone", rec.pid);
        }
        Owner::Foreign(rec, now) => {
            st.detail = format!(
                "stale pid file: pid {} now belongs to another process ({})",
                rec.pid,
                now.command()
            );
        }
        Owner::Ours(rec, live) => {
            st.running = true;
            st.managed_by = Some("direct");
            st.pid = Some(rec.pid);
            st.port = Some(rec.port);
            st.health = verify::health(rec.port, Duration::from_secs(2));
            st.detail = "running".into();
            // Compare with what the generator produces now for the same root and node.
            let args = plan::HostInputs {
                root: rec.root().map(Into::into),
                node_bin: Some(rec.node.clone()),
            };
            match plan::plan(ctx, &args, Writes::None) {
                Ok(plan) => {
                    let check = verify::check_env(&live, &plan.env);
                    st.verified = check == verify::EnvCheck::Verified;
                    st.env = Some(check.describe());
                }
                Err(e) => {
                    st.env = Some(format!("could not compute the expected environment: {e:#}"))
                }
            }
        }
    }
    Ok(st)
}

/// The pid in the stack's pid file, when launchd runs exactly that pid for the stack's label
/// (`None` without a launchctl, a loaded job or a pid file).
fn launchd_owns_pid_file(ctx: &Context) -> Option<u32> {
    let rec = direct::read_record(&ctx.stack).ok()??;
    let lc = Launchctl::locate(&ctx.env).ok()?;
    let domain = lc.domain().ok()?;
    let info = lc.print(&domain.target(&ctx.stack.label)).ok()??;
    (info.pid() == Some(rec.pid)).then_some(rec.pid)
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
