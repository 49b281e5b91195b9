//! doctor's launchd rows: launchctl itself, the domain, the job in both domains (a label loaded
//! twice is a failure with its fix), and the live Host's proofs, all from the one read `status`
//! makes (`agent::status::collect`), so doctor never describes another job than status does.

use super::{check, Check, Level};
use crate::agent::status::AgentStatus;
use crate::context::{Context, Worded};
use crate::launchctl::Domain;

/// launchctl, the domain, the job and the live Host, as `status` read them (`st`). A launchctl
/// that fails is one failed row.
pub(super) fn launchd_checks(ctx: &Context, st: &AgentStatus) -> Vec<Check> {
    let lc = match ctx.launchctl() {
        Err(e) => {
            let said = e.words(&ctx.hints());
            return vec![check("launchd", Level::Warn, said, None)];
        }
        Ok(lc) => lc,
    };
    let mut checks = vec![];
    if lc.overridden {
        checks.push(check(
            "launchctl",
            Level::Warn,
            format!("OYSTER_LAUNCHCTL override in effect: {}", lc.describe()),
            Some("unset OYSTER_LAUNCHCTL to use /bin/launchctl".into()),
        ));
    }
    if let Some(why) = &st.seen.launchctl_failed {
        checks.push(check(
            "launchd",
            Level::Fail,
            format!("launchctl failed: {why}"),
            Some(format!(
                "check {} (run it by hand to see its error)",
                lc.path.display()
            )),
        ));
        return checks;
    }
    if let Some(n) = &st.seen.domain_note {
        checks.push(check("domain", Level::Warn, n.clone(), None));
    }
    if st.installed {
        checks.push(login_item_check(st));
    }
    if st.loaded_in.len() > 1 {
        checks.push(loaded_twice_check(ctx, Domain::gui(), Domain::user()));
    }
    if st.loaded {
        checks.extend(loaded_job_checks(ctx, st));
    } else {
        checks.push(not_loaded_check(ctx, st));
    }
    checks
}

/// A job that is not loaded: stopped on purpose (`agent stop` disables the label) is not
/// broken.
fn not_loaded_check(ctx: &Context, st: &AgentStatus) -> Check {
    let label = &ctx.stack.label;
    let domain = st.domain.as_deref().unwrap_or_default();
    check(
        "launchd",
        Level::Warn,
        if st.installed && st.disabled == Some(true) {
            format!(
                "{label} is stopped (`oyster stop` disabled it in {domain}, so it stays stopped at login)"
            )
        } else {
            format!("{label} is not loaded in {domain} (nor in the user domain)")
        },
        st.installed.then(|| format!("`{}`", ctx.hint_cmd("start"))),
    )
}

/// The same probe as status and verification (`status` ran it): live, else the exec record,
/// else launchd's definition; and /health from the Host's own socket.
fn live_host_check(ctx: &Context, pid: u32, p: &crate::probe::Probe) -> Check {
    let ok = p.verified();
    let detail = match (&p.env, &p.listener) {
        (Err(e), _) | (Ok(_), Err(e)) => e.clone(),
        (Ok(proof), Ok(())) => format!(
            "/health {}; environment proven ({})",
            p.health.map_or("no answer".into(), |h| h.to_string()),
            proof.as_str()
        ),
    };
    check(
        "live host",
        if ok { Level::Ok } else { Level::Fail },
        format!("pid {pid}: {detail}"),
        (!ok).then(|| format!("`{}`", ctx.hint_cmd("restart"))),
    )
}

/// A label loaded in both domains: two Hosts for one port. The `gui/<uid>` copy is the one a
/// console login keeps loading, so the other goes (a restart at the console does it).
fn loaded_twice_check(ctx: &Context, first: Domain, second: Domain) -> Check {
    let st = &ctx.stack;
    check(
        "launchd",
        Level::Fail,
        format!(
            "{} is loaded twice, in {first} and in {second}: two Hosts for one port (a console login after an install over SSH loads the plist into {first} beside the {second} copy)",
            st.label
        ),
        Some(format!(
            "run `{}` (it boots the {second} copy out), or `launchctl bootout {}`",
            ctx.hint_cmd("restart"),
            second.target(&st.label)
        )),
    )
}

/// Login Items (macOS 13+): switched off is a failure naming System Settings → General → Login
/// Items and the item; a state that cannot be asked is a warning that says so (unknown is not
/// fine).
fn login_item_check(st: &AgentStatus) -> Check {
    use crate::agent::login_items::{Answer, LoginItem};
    if let Some(why) = &st.login_item_why {
        return check("login items", Level::Warn, format!("unknown: {why}"), None);
    }
    let state = st.login_item.unwrap_or(LoginItem::Unknown);
    if state == LoginItem::RequiresApproval {
        let cause = st
            .seen
            .switched_off
            .clone()
            .map(crate::agent::refusal::Cause::from);
        return check(
            "login items",
            Level::Fail,
            cause.as_ref().map_or_else(
                || "switched off in System Settings → General → Login Items".to_owned(),
                |c| c.what.clone(),
            ),
            cause.map(|c| c.fix),
        );
    }
    let raw = st.seen.login_item_raw;
    check(
        "login items",
        if state == LoginItem::NotFound {
            Level::Warn
        } else {
            Level::Ok
        },
        format!("Allow in the Background: {}", Answer { state, raw }.words()),
        None,
    )
}

/// The loaded job: launchd's state (a failure unless it runs), the Background session's locked
/// keychain, and the live Host.
fn loaded_job_checks(ctx: &Context, st: &AgentStatus) -> Vec<Check> {
    let stack = &ctx.stack;
    let mut checks = vec![];
    let running = st.running;
    let domain = st.domain.as_deref().unwrap_or_default();
    // A Host that keeps exiting: the log's last error line says why.
    let crashes = st.seen.crashes.filter(|n| *n > 0);
    let why = (!running || crashes.is_some())
        .then(|| super::host::last_error_line(ctx))
        .flatten()
        .map_or(String::new(), |l| format!("; the log's last error: {l}"));
    let looping = crashes.map_or(String::new(), |n| {
        format!(", crash loop ({n} crashes in a row)")
    });
    checks.push(check(
        "launchd",
        if running && crashes.is_none() {
            Level::Ok
        } else {
            Level::Fail
        },
        format!(
            "{} in {domain}: state = {}, last exit: {}{looping}{why}",
            stack.label,
            st.state.as_deref().unwrap_or("?"),
            st.seen
                .last_exit
                .map_or("unknown".into(), |e| e.to_string())
        ),
        (!running || crashes.is_some()).then(|| {
            format!(
                "see {} and run `{}`",
                stack.log_path().display(),
                ctx.hint_cmd("restart")
            )
        }),
    ));
    if running && domain == Domain::user().to_string() {
        checks.push(check(
            "keychain",
            Level::Warn,
            crate::agent::status::keychain_note(ctx),
            Some(format!("`{}` at the console", ctx.hint_cmd("restart"))),
        ));
    }
    if let (Some(pid), Some(p)) = (st.pid.filter(|_| running), &st.seen.probe) {
        checks.push(live_host_check(ctx, pid, p));
    }
    checks
}
