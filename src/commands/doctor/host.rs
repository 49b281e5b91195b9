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
