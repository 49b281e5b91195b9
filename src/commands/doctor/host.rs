//! Doctor's checks of the Host as a user meets it: whether anybody can log in to it.

use super::{check, Check, Level};
use crate::config::login::HostLogin;
use crate::config::ConfigDoc;
use crate::context::Context;

/// The login: `None` when the stack has no config yet (setup has not run).
pub(super) fn login_check(ctx: &Context, doc: Option<&ConfigDoc>) -> Option<(HostLogin, Check)> {
    let doc = doc.filter(|d| d.exists())?;
    let state = HostLogin::of(doc.value());
    let user = HostLogin::user(doc.value());
    Some(match state {
        HostLogin::Configured => (
            state,
            check(
                "host login",
                Level::Ok,
                format!("set: log in as {user}"),
                None,
            ),
        ),
        HostLogin::NotConfigured => (
            state,
            check(
                "host login",
                Level::Warn,
                "not set: the Host refuses every login (dashboard_user or dashboard_password_hash is empty)",
                Some(format!(
                    "`{}` on a terminal (it asks for the password), or `{}` with the password on stdin",
                    ctx.hints().cmd("setup"),
                    ctx.hints().cmd("setup --password-stdin")
                )),
            ),
        ),
    })
}

/// Who holds the stack's port when it is not this stack's Host (a stopped stack whose port
/// another program took): named with its pid and name, as `start` names it, since `start`
/// would be refused. `ours`: the pids the stack's manager has for it, as the status read saw.
pub(super) fn port_check(ctx: &Context, port: Option<u16>, mut ours: Vec<u32>) -> Option<Check> {
    let port = port?;
    if let Ok(crate::direct::Owner::Ours(rec, _)) = crate::direct::owner(&ctx.stack) {
        ours.push(rec.pid);
    }
    let holder = match crate::service::port::holder(port, &ours, ctx.reporter()) {
        crate::service::PortHolder::Foreign { pid, name, stack } => format!(
            "pid {pid} ({name}{})",
            stack.map_or(String::new(), |s| format!(", oyster stack {s}"))
        ),
        crate::service::PortHolder::Invisible => {
            "a process oyster cannot see (another user's)".to_owned()
        }
        _ => return None,
    };
    Some(check(
        "port",
        Level::Warn,
        format!(
            "port {port} is held by {holder}: the Host of stack {} cannot listen there, and `{}` would be refused",
            ctx.stack.name,
            ctx.hint_cmd("start")
        ),
        Some(format!(
            "stop that process, or give stack {} another port (`{}`)",
            ctx.stack.name,
            ctx.hints().cmd("setup --port N")
        )),
    ))
}

/// The Host log's last error line: the last of its final lines that says error, exception,
/// fatal or failed, else its last line; `None` without a log.
pub(super) fn last_error_line(ctx: &Context) -> Option<String> {
    let mut file = crate::sys::tail::open_log(&ctx.stack.log_path()).ok()??;
    let (lines, _) = crate::sys::tail::last_lines(&mut file, 50, false).ok()?;
    let said = |l: &&String| {
        let l = l.to_ascii_lowercase();
        ["error", "exception", "fatal", "failed", "exiting"]
            .iter()
            .any(|w| l.contains(w))
    };
    let last = lines
        .iter()
        .rev()
        .find(said)
        .or_else(|| lines.iter().rev().find(|l| !l.trim().is_empty()))?;
    Some(last.chars().take(300).collect())
}
