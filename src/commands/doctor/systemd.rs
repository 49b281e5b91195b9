//! doctor under the systemd user manager: the manager, the unit on disk against what oyster
//! generates, what the manager does with it (running and verified, failed, stopped), drop-ins
//! beside it, and linger (without it the user manager, and the Host, stop at logout).

use super::{check, Check, Level};
use crate::agent::status::{self as model, Summary};
use crate::context::Context;
use crate::systemd::Systemctl;

pub(super) fn systemd_checks(ctx: &Context, sc: &Systemctl) -> (Vec<Check>, Vec<u32>) {
    let mut checks = vec![check(
        "service manager",
        Level::Ok,
        format!("systemd --user answers ({})", sc.describe()),
        None,
    )];
    let st = match model::collect(ctx) {
        Ok(st) => st,
        Err(e) => {
            checks.push(check("unit", Level::Fail, format!("{e:#}"), None));
            return (checks, vec![]);
        }
    };
    checks.push(unit_check(ctx, &st));
    let loaded: Vec<std::path::PathBuf> = st
        .unit
        .iter()
        .flat_map(|u| u.drop_ins.iter().map(Into::into))
        .collect();
    let overriding = crate::unit::overriding_drop_ins(ctx, &loaded);
    if !overriding.is_empty() {
        let said: Vec<String> = overriding
            .iter()
            .map(|(p, keys)| format!("{} sets {}=", crate::output::one_line(p), keys.join("=, ")))
            .collect();
        checks.push(check(
            "drop-ins",
            Level::Fail,
            format!(
                "{}: the Host would not run with the environment oyster generates, so install, start and restart refuse",
                said.join("; ")
            ),
            Some("remove it (`systemctl --user revert UNIT` removes every drop-in of the unit), or keep only other settings in it".into()),
        ));
    } else if let Some(u) = st.unit.as_ref().filter(|u| !u.drop_ins.is_empty()) {
        checks.push(check(
            "drop-ins",
            Level::Warn,
            format!(
                "drop-ins change {} beside oyster's unit: {}",
                u.unit,
                u.drop_ins.join(", ")
            ),
            Some("remove them (`systemctl --user revert UNIT`) unless you mean to override oyster's settings".into()),
        ));
    }
    checks.push(linger_check(sc));
    (checks, st.seen.manager_pids)
}

fn unit_check(ctx: &Context, st: &model::AgentStatus) -> Check {
    let path = &st.plist_path;
    if let Some(kind) = crate::sys::fs::not_regular(std::path::Path::new(path)) {
        return check(
            "unit",
            Level::Fail,
            format!(
                "{path} is {kind}, not a regular file: every verb that loads the Host refuses it"
            ),
            Some(format!(
                "replace it with the real file, or remove it and run `{}`",
                ctx.hint_cmd("install")
            )),
        );
    }
    let (level, detail, fix) = match st.summary {
        Summary::Verified => (
            Level::Ok,
            format!(
                "{path}: the Host runs (pid {}) and verified",
                st.pid.unwrap_or_default()
            ),
            None,
        ),
        Summary::Stale => (
            Level::Warn,
            format!("{path} is not what oyster generates now"),
            Some(format!(
                "`{}` rewrites and reloads it",
                ctx.hint_cmd("restart")
            )),
        ),
        Summary::Stopped => (
            Level::Ok,
            format!("{path}: stopped (disabled by `oyster stop`)"),
            Some(format!("`{}` starts it again", ctx.hint_cmd("start"))),
        ),
        Summary::NotInstalled => (
            Level::Warn,
            format!("{path} does not exist: no Host is installed for this stack"),
            Some(format!("`{}` installs it", ctx.hint_cmd("install"))),
        ),
        Summary::CrashLoop => (
            Level::Fail,
            format!(
                "{path}: the Host keeps exiting ({}; last exit status {})",
                st.state.as_deref().unwrap_or("unknown"),
                st.last_exit_code
                    .map_or("unknown".into(), |c| c.to_string())
            ),
            Some(format!(
                "`{} -f` shows why; `{}` once it is fixed",
                ctx.hint_cmd("logs"),
                ctx.hint_cmd("restart")
            )),
        ),
        other => (
            Level::Fail,
            format!(
                "{path}: {} ({})",
                model::word(other),
                st.state.as_deref().unwrap_or("unknown")
            ),
            Some(format!(
                "`{}` shows the facts; `{}` starts and verifies it",
                ctx.hint_cmd("status"),
                ctx.hint_cmd("restart")
            )),
        ),
    };
    check("unit", level, detail, fix)
}

/// Linger (logind): off, the user manager and every unit stop when the last session ends.
fn linger_check(sc: &Systemctl) -> Check {
    let user = crate::sys::user::name_of(crate::sys::user::uid()).unwrap_or_default();
    match sc.linger(&user) {
        Some(true) => check(
            "linger",
            Level::Ok,
            format!("linger is on for {user}: the Host keeps running after logout"),
            None,
        ),
        Some(false) => check(
            "linger",
            Level::Warn,
            format!("linger is off for {user}: the Host stops when you log out"),
            Some(format!("`loginctl enable-linger {user}` keeps it running")),
        ),
        None => check(
            "linger",
            Level::Ok,
            "logind could not be asked (no loginctl or no logind); not checked",
            None,
        ),
    }
}
