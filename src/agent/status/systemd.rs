//! The systemd user manager's view of a stack's unit for `status`, `list` and `doctor`: one
//! `systemctl --user show`, and the probe of the Host it runs — the same model launchd's view
//! fills (`AgentStatus`), with `manager: "systemd"` and the unit's own facts.

use serde::Serialize;

use super::{record_probe, summarize, AgentStatus, Manager, StatusNote};
use crate::context::Context;
use crate::probe;
use crate::systemd::{ActiveState, MainCode, Systemctl, UnitShow};

/// The unit's facts (`status --json`'s `unit`).
#[derive(Debug, Clone, Serialize)]
pub struct UnitFacts {
    /// `com.oysterun.host.NAME.service`.
    pub unit: String,
    pub path: String,
    pub active_state: String,
    pub sub_state: String,
    pub main_pid: Option<u32>,
    /// `NRestarts`: how often the manager started it again since the last manual start.
    pub restarts: u32,
    /// `Result`: why it last stopped (`success`, `exit-code`, `signal`, …).
    pub result: String,
    pub unit_file_state: Option<String>,
    /// Drop-ins beside oyster's unit (`systemctl --user edit` writes them).
    pub drop_ins: Vec<String>,
}

/// Fills `st` from the unit; `false` when systemctl could not be asked (then a note says why).
pub(super) fn ask(ctx: &Context, sc: &Systemctl, st: &mut AgentStatus) -> bool {
    st.manager = Some("systemd");
    st.launchctl = None;
    let (name, path) = match (
        crate::systemd::unit_name(&ctx.stack.label),
        crate::unit::path_for(ctx),
    ) {
        (Ok(n), Ok(p)) => (n, p),
        (Err(e), _) => {
            st.notes.push(format!("{e}"));
            return false;
        }
        (_, Err(e)) => {
            st.notes.push(format!("{e:#}"));
            return false;
        }
    };
    let show = match sc.show(&name) {
        Ok(s) => s,
        Err(e) => {
            st.note(StatusNote::SystemctlFailed(format!("{e:#}")));
            return false;
        }
    };
    st.installed = path.exists();
    st.plist_path = path.display().to_string();
    let plan = crate::host::plan::plan(ctx, &Default::default()).ok();
    // A unit path that is a link or a special file is not compared (nor ever written): said,
    // with the fix, as the verbs that load refuse it.
    let special = crate::sys::fs::not_regular(&path);
    if let Some(kind) = special {
        st.note(StatusNote::UnitSpecial {
            path: path.clone(),
            kind,
            install: ctx.hint_cmd("install"),
        });
    }
    st.in_sync = plan
        .as_ref()
        .filter(|_| st.installed && special.is_none())
        .map(|p| !crate::unit::definition_changed(ctx, p));
    record(ctx, &show, plan.as_ref(), st);
    st.unit = Some(facts(name, &path, &show));
    st.summary = summarize(st);
    true
}

fn record(
    ctx: &Context,
    show: &UnitShow,
    plan: Option<&crate::host::plan::Plan>,
    st: &mut AgentStatus,
) {
    st.loaded = !show.is_not_found() && !matches!(show.active_state, ActiveState::Inactive);
    st.running = show.is_running();
    st.state = Some(format!("{:?} {}", show.active_state, show.sub_state).to_lowercase());
    st.pid = show.main_pid.filter(|_| st.running);
    st.seen.manager_pids = show.main_pid.into_iter().collect();
    st.runs = Some(show.n_restarts);
    st.disabled = st.installed.then(|| !show.is_enabled());
    st.crash_loop = show.is_failed() || (show.sub_state == "auto-restart" && show.n_restarts > 0);
    if show.exec_main_pid.is_some() && !st.running {
        // `ExecMainStatus` is the exit status only when the Host exited; killed, it is the
        // signal.
        match show.exec_main_code {
            MainCode::Killed | MainCode::Dumped => st.last_signal = Some(show.exec_main_status),
            _ => st.last_exit_code = Some(show.exec_main_status),
        }
    }
    if !show.drop_in_paths.is_empty() {
        st.note(StatusNote::DropIns(show.drop_in_paths.clone()));
    }
    if show.need_daemon_reload {
        st.note(StatusNote::NeedsDaemonReload {
            restart: ctx.hint_cmd("restart"),
        });
    }
    // The unit runs it, whether or not the plan can be made to prove it.
    if st.running {
        st.managed_by = Some(Manager::Systemd);
    }
    let (Some(pid), Some(plan)) = (st.pid, plan) else {
        return;
    };
    let p = probe::without_launchd(
        &ctx.stack,
        (pid, plan.port),
        &plan.env,
        ctx.env.proof_floor,
        None,
    );
    record_probe(st, &p);
}

fn facts(unit: String, path: &std::path::Path, s: &UnitShow) -> UnitFacts {
    UnitFacts {
        unit,
        path: path.display().to_string(),
        active_state: format!("{:?}", s.active_state).to_lowercase(),
        sub_state: s.sub_state.clone(),
        main_pid: s.main_pid,
        restarts: s.n_restarts,
        result: s.raw.get("Result").cloned().unwrap_or_default(),
        unit_file_state: s.unit_file_state.clone(),
        drop_ins: s
            .drop_in_paths
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    }
}

/// The Node and the Oysterun root an installed unit runs, from its `Environment=` lines and
/// those of its drop-ins (`st.unit`'s, in systemd's order), read as systemd reads them; `None`
/// for what the files cannot tell (an `EnvironmentFile=`, a specifier other than `%h`).
pub fn unit_runs(st: &AgentStatus, home: &std::path::Path) -> (Option<String>, Option<String>) {
    let read = |p: &std::path::Path| {
        let bytes = crate::sys::fs::read_regular(p, 1024 * 1024)
            .ok()
            .flatten()
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let mut texts = vec![read(std::path::Path::new(&st.plist_path))];
    // Drop-ins as systemd reads them: through a link (one to /dev/null masks it); one that
    // cannot be read leaves what it may set unknown.
    let drop_ins = st.unit.as_ref().map_or(&[][..], |u| &u.drop_ins[..]);
    for d in drop_ins.iter().map(std::path::Path::new) {
        let masked = std::fs::canonicalize(d).is_ok_and(|p| p == std::path::Path::new("/dev/null"));
        match crate::sys::fs::read_head(d, 1024 * 1024) {
            Some(bytes) => texts.push(String::from_utf8_lossy(&bytes).into_owned()),
            None if masked => {}
            None => return (None, None),
        }
    }
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let env = crate::systemd::environment_of(&texts, home);
    let get = |k: &str| {
        env.iter()
            .find(|(n, _)| n == k)
            .and_then(|(_, v)| v.clone())
    };
    (
        get(crate::host::launchenv::NODE_BIN),
        get(crate::host::launchenv::REPO_ROOT),
    )
}
