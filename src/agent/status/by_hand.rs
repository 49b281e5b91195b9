//! Who runs a stack's Host when the manager does not: a Host `oyster host start` started, as
//! the pid file names it.

use super::{declared, url, AgentStatus, Manager, StatusNote, Summary};
use crate::context::Context;
use crate::direct::{self, Owner, PidRecord};
use crate::verify::LiveProcess;

/// Who runs the Host: the manager asked, or a directly started Host the pid file names (only
/// known to be direct when the manager could be asked, or nothing is installed).
pub(super) fn who_runs_it(ctx: &Context, asked: bool, installed: bool, st: &mut AgentStatus) {
    if st.running && st.managed_by.is_none() {
        st.managed_by = Some(Manager::Launchd);
    } else if st.loaded {
        // A loaded job that is between instances (throttled, spawning): a live Host the pid
        // file names is launchd's next one (`host exec` writes it under launchd too), never a
        // direct one — `host start` refuses while the job is loaded, and install the reverse.
    } else {
        match direct::owner(&ctx.stack) {
            Ok(Owner::Ours(rec, live)) => {
                let known = asked || !installed;
                direct_host(ctx, (&rec, &live), known, st);
            }
            Ok(_) => {}
            // A pid file that cannot be read (a FIFO, a directory) hides whether a Host runs.
            Err(e) => {
                st.broken = true;
                st.note(StatusNote::Broken(format!("{e:#}")));
            }
        }
    }
}

/// A Host the pid file names as this stack's: started by `oyster host start`, or — under
/// launchd — by the launch program launchd ran. `known` says whether launchd was asked (or
/// the stack has no LaunchAgent): only then is such a Host known to be direct.
fn direct_host(
    ctx: &Context,
    (rec, live): (&PidRecord, &LiveProcess),
    known: bool,
    st: &mut AgentStatus,
) {
    let host = direct::status::probe(ctx, rec, live);
    st.running = true;
    st.pid = Some(host.pid);
    st.port = Some(host.port);
    st.url = Some(url(host.port));
    st.health = host.health;
    st.env_proof = host.env_proof;
    st.env_mismatch = host.env_mismatch;
    st.verified = host.verified;
    st.problem = host.problem;
    st.notes.extend(host.env_note);
    declared::stale(st, host.declared_stale);
    if !known {
        // launchd's own Host writes the same pid file (`host exec` writes it): without
        // launchctl, who runs it is not known, and the advice must not be `host stop`.
        st.summary = Summary::Unknown;
        st.note(StatusNote::WhoRunsUnknown {
            systemd: st.manager == Some("systemd"),
            pid: rec.pid,
        });
        return;
    }
    st.managed_by = Some(Manager::Direct);
    st.summary = if st.verified && !st.declared_stale.is_empty() {
        Summary::Stale
    } else if st.verified {
        Summary::Direct
    } else {
        Summary::Unverified
    };
    st.note(StatusNote::StartedDirectly {
        stop: ctx.hints().cmd("host stop"),
    });
}
