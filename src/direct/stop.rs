//! `host stop`: signal only this stack's own Host, after proving it is (never a pid launchd
//! or another stack owns), and say what was done.

use super::*;
use crate::context::Hints;

/// SIGTERM one pid, wait up to `grace`, then SIGKILL. Returns whether it had to escalate.
pub fn terminate(pid: u32, grace: Duration, out: &dyn crate::output::Reporter) -> bool {
    let _ = signal::kill(pid, Signal::SIGTERM);
    out.waiting(&Wait::Exit { pid }.to_string(), grace);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if verify::inspect(pid).is_none() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = signal::kill(pid, Signal::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(2);
    while verify::inspect(pid).is_some() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// What happened on `stop`.
pub enum Stopped {
    NotRunning,
    StaleRemoved(PidRecord),
    ForeignLeftAlone(PidRecord),
    Signalled { pid: u32, killed: bool },
}

/// The refusal for identity files that describe another stack's Host: named, with the fix;
/// nothing was signalled or removed.
pub(super) fn other_stack_refusal(stack: &Stack, why: &NotThisStacks) -> Failed {
    Refusal::OtherStack {
        why: why.clone(),
        stack: stack.name.clone(),
        files: stack
            .identity_paths()
            .into_iter()
            .filter(|p| p.exists())
            .collect(),
    }
    .into()
}

/// The refusal for a live process that runs the recorded server but is not provably the
/// recorded one (an older oyster's record, from before a clock step): it may be this stack's
/// Host, so it is neither signalled nor are its files removed.
pub(super) fn unproven_refusal(stack: &Stack, rec: &PidRecord, hints: &Hints) -> Failed {
    Refusal::Unproven {
        pid: rec.pid,
        server: rec.server.clone(),
        recorded: rec.exec.is_some() || rec.start_time != 0,
        exec_record: stack.exec_record_path(),
        stack: stack.name.clone(),
        start: hints.cmd("host start"),
    }
    .into()
}

/// Stops the recorded Host after proving the pid is still this stack's Host; never by name,
/// never a Host of another stack, never a pid a launchd job runs (`launchd_job` names the job
/// that runs a pid, under any label; KeepAlive would only start it again).
///
/// SIGINT, SIGTERM and SIGHUP are caught meanwhile: the stop that began is finished (the Host
/// gone, its files removed, never a half-stopped state) and the run then ends with
/// [`crate::error::Interrupted`] saying so (exit 128 + N).
pub fn stop_checked(
    stack: &Stack,
    hints: &Hints,
    out: &dyn crate::output::Reporter,
    launchd_job: &dyn Fn(u32) -> Option<String>,
) -> anyhow::Result<Stopped> {
    let _guard = signal::InterruptGuard::install();
    let stopped = stop_inner(stack, hints, out, launchd_job)?;
    match (signal::received(), &stopped) {
        (Some(sig), Stopped::Signalled { pid, .. }) => Err(crate::error::Interrupted(
            sig,
            Finished::StopFinished { pid: *pid }.to_string(),
        )
        .into()),
        _ => Ok(stopped),
    }
}

fn stop_inner(
    stack: &Stack,
    hints: &Hints,
    out: &dyn crate::output::Reporter,
    launchd_job: &dyn Fn(u32) -> Option<String>,
) -> anyhow::Result<Stopped> {
    let pid_path = stack.pid_path();
    // Without a pid file, an exec record may still name a live Host ([`owner`]).
    if std::fs::symlink_metadata(&pid_path).is_err()
        && std::fs::symlink_metadata(stack.exec_record_path()).is_err()
    {
        return Ok(Stopped::NotRunning);
    }
    let _lock = fsutil::lock_sidecar(&pid_path)?;
    match owner(stack)? {
        Owner::None => Ok(Stopped::NotRunning),
        Owner::Stale(rec) => {
            remove_identity(stack)?;
            Ok(Stopped::StaleRemoved(rec))
        }
        Owner::Foreign(rec, live) => {
            // A process that still runs the recorded server may be this Host with an identity
            // oyster cannot prove (a record of an older oyster, from before a clock step): it
            // is not signalled and its files stay (whoever waits for them still finds them).
            if live.runs(&rec.server) {
                return Err(unproven_refusal(stack, &rec, hints).into());
            }
            remove_identity(stack)?;
            Ok(Stopped::ForeignLeftAlone(rec))
        }
        Owner::OtherStack(why) => Err(other_stack_refusal(stack, &why).into()),
        Owner::Ours(rec, _) => {
            if let Some(job) = launchd_job(rec.pid) {
                return Err(Failed::from(Refusal::LaunchdRuns {
                    pid: rec.pid,
                    job,
                    stop: hints.agent("stop"),
                })
                .into());
            }
            let killed = terminate(rec.pid, Duration::from_secs(10), out);
            if verify::inspect(rec.pid).is_some() {
                return Err(DirectError::Outlived { pid: rec.pid }.into());
            }
            remove_identity(stack)?;
            Ok(Stopped::Signalled {
                pid: rec.pid,
                killed,
            })
        }
    }
}

/// [`stop_checked`] for a Host this run started itself (setup's rollback): no launchd job can
/// own it.
pub fn stop(
    stack: &Stack,
    hints: &Hints,
    out: &dyn crate::output::Reporter,
) -> anyhow::Result<Stopped> {
    stop_checked(stack, hints, out, &|_| None)
}
