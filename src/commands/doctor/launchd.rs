//! doctor's launchd rows: launchctl itself, the domain, the job in both domains (a label loaded
//! twice is a failure with its fix), and the live Host's proofs.

use super::*;
use crate::context::Worded;
use crate::launchctl::Domain;

/// launchctl, the domain, the job and the live Host. A launchctl that fails is one failed row.
pub(super) fn launchd_checks(ctx: &Context, installed: Option<&Installed>) -> Vec<Check> {
    let st = &ctx.stack;
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
    let result = (|| -> anyhow::Result<()> {
        // Both domains in two prints, which also say whether gui/<uid> exists.
        let both = lc.in_both_domains(&st.label)?;
        let domain = both.choice();
        if let Some(n) = &domain.fallback_note {
            checks.push(check("domain", Level::Warn, n.clone(), None));
        }
        let loaded = both.loaded();
        if installed.is_some() {
            checks.push(login_item_check(lc, &st.plist_path()));
        }
        if let [(first, _), (second, _), ..] = loaded.as_slice() {
            checks.push(loaded_twice_check(ctx, *first, *second));
        }
        let Some((loaded_in, info)) = loaded.first().map(|(d, i)| (*d, (*i).clone())) else {
            checks.push(not_loaded_check(ctx, lc, &domain.name, installed.is_some()));
            return Ok(());
        };
        let domain = crate::launchctl::DomainChoice {
            name: loaded_in,
            fallback_note: None,
        };
        checks.extend(loaded_job_checks(ctx, &domain.name, &info, installed));
        Ok(())
    })();
    if let Err(e) = result {
        checks.push(check(
            "launchd",
            Level::Fail,
            format!("launchctl failed: {e:#}"),
            Some(format!(
                "check {} (run it by hand to see its error)",
                lc.path.display()
            )),
        ));
    }
    checks
}

/// A job that is not loaded: stopped on purpose (`agent stop` disables the label) is not
/// broken.
fn not_loaded_check(
    ctx: &Context,
    lc: &Launchctl,
    domain: &crate::launchctl::Domain,
    installed: bool,
) -> Check {
    let st = &ctx.stack;
    let stopped = installed
        && lc
            .disabled(domain, &st.label)
            .ok()
            .flatten()
            .unwrap_or(false);
    check(
        "launchd",
        Level::Warn,
        if stopped {
            format!(
                "{} is stopped (`oyster stop` disabled it in {domain}, so it stays stopped at login)",
                st.label
            )
        } else {
            format!(
                "{} is not loaded in {domain} (nor in the user domain)",
                st.label
            )
        },
        installed.then(|| format!("`{}`", ctx.hint_cmd("start"))),
    )
}

/// The same probe as status and verification: live, else the exec record, else launchd's
/// definition; and /health from the Host's own socket.
fn live_host_check(
    ctx: &Context,
    pid: u32,
    info: &crate::launchctl::PrintInfo,
    inst: &crate::host::plist::Installed,
) -> Check {
    let st = &ctx.stack;
    let record = crate::host::identity::ExecRecord::read(&st.exec_record_path());
    let p = crate::probe::probe(&crate::probe::Target {
        pid,
        port: inst.env.port().unwrap_or(0),
        env: &inst.env,
        exec_record: record.as_ref(),
        launchd: Some(crate::probe::LaunchdView {
            pid: info.pid(),
            environment: &info.environment,
        }),
        floor: ctx.env.proof_floor,
        live: None,
    });
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
fn login_item_check(lc: &Launchctl, plist: &std::path::Path) -> Check {
    use crate::agent::login_items::{self, LoginItem};
    match login_items::ask(lc, plist) {
        Ok(a) if a.state == LoginItem::RequiresApproval => {
            let cause = crate::agent::refusal::login_item(lc, plist);
            check(
                "login items",
                Level::Fail,
                cause.as_ref().map_or_else(
                    || "switched off in System Settings → General → Login Items".to_owned(),
                    |c| c.what.clone(),
                ),
                cause.map(|c| c.fix),
            )
        }
        Ok(a) => check(
            "login items",
            if a.state == LoginItem::NotFound {
                Level::Warn
            } else {
                Level::Ok
            },
            format!("Allow in the Background: {}", a.words()),
            None,
        ),
        Err(why) => check("login items", Level::Warn, format!("unknown: {why}"), None),
    }
}

/// The loaded job: launchd's state (a failure unless it runs), the Background session's locked
/// keychain, and the live Host.
fn loaded_job_checks(
    ctx: &Context,
    domain: &Domain,
    info: &crate::launchctl::PrintInfo,
    installed: Option<&Installed>,
) -> Vec<Check> {
    let st = &ctx.stack;
    let mut checks = vec![];
    let running = info.running();
    // A Host that keeps exiting: the log's last error line says why.
    let crashes = info.successive_crashes().filter(|n| *n > 0);
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
            "{} in {}: state = {}, last exit: {}{looping}{why}",
            st.label,
            domain,
            info.state().unwrap_or("?"),
            info.last_exit().map_or("unknown".into(), |e| e.to_string())
        ),
        (!running || crashes.is_some()).then(|| {
            format!(
                "see {} and run `{}`",
                st.log_path().display(),
                ctx.hint_cmd("restart")
            )
        }),
    ));
    if running && matches!(domain, Domain::User(_)) {
        checks.push(check(
            "keychain",
            Level::Warn,
            crate::agent::status::keychain_note(ctx),
            Some(format!("`{}` at the console", ctx.hint_cmd("restart"))),
        ));
    }
    if let (Some(pid), Some(inst)) = (info.pid().filter(|_| running), installed) {
        checks.push(live_host_check(ctx, pid, info, inst));
    }
    checks
}
