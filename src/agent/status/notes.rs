//! What status says beside the facts: the Background session's locked keychain, Login
//! Items, the label's override, a label loaded twice.

use super::*;
use crate::agent::login_items;

/// What a Host in `user/<uid>` means for providers, with the fix (docs/launchd.md, "Domains").
pub fn keychain_note(ctx: &Context) -> String {
    let keeping: Vec<&str> = crate::provider::registry::PROVIDERS
        .iter()
        .filter(|p| p.login_in_keychain)
        .map(|p| p.display_name)
        .collect();
    format!(
        "the Host runs in {}, a Background session, where the login keychain is locked: a provider that keeps its login there ({}) can fail to authenticate although the Host looks healthy; `{}` at the console moves it to {}, or log in at the console once",
        Domain::user(),
        keeping.join(", "),
        ctx.hint_cmd("restart"),
        Domain::gui()
    )
}

/// Whether this stack's Host runs in `user/<uid>` now (the login keychain is locked there):
/// `false` when launchctl cannot be asked.
pub fn runs_in_background_session(ctx: &Context) -> bool {
    let Ok(lc) = ctx.launchctl() else {
        return false;
    };
    lc.in_both_domains(&ctx.stack.label).is_ok_and(|both| {
        let loaded = both.loaded();
        // Of two copies the running one is the Host (as `status` shows it).
        loaded
            .iter()
            .find(|(_, i)| i.running())
            .is_some_and(|(d, _)| matches!(d, Domain::User(_)))
    })
}

/// The Login Items state of the installed plist, with a note (and its fix) when the user
/// switched it off; unknown, never "fine", when it cannot be asked.
/// A job loaded before it was switched off keeps running: said as such (it is not loaded again
/// at the next login), not as a job launchd will not load.
pub(super) fn login_item(ctx: &Context, lc: &Launchctl, st: &mut AgentStatus, loaded: bool) {
    let plist = ctx.stack.plist_path();
    match crate::agent::login_items::status(lc, &plist) {
        Ok(state) => {
            if state == LoginItem::RequiresApproval {
                if let Some(c) = crate::agent::refusal::login_item(lc, &plist) {
                    // Loaded, it is not "a job launchd will not load", and status ran no
                    // command to run again.
                    st.notes.push(if loaded {
                        let fix = c.fix.strip_suffix(login_items::THEN_AGAIN).unwrap_or(&c.fix);
                        format!("the agent is switched off in System Settings → General → Login Items (\"Allow in the Background\"): it is loaded now (it was loaded before), but will not be loaded again at the next login, and a change that reloads it (made with a note, since this answer can be wrong for a Host that runs) would leave it down: {fix}")
                    } else {
                        format!("{}: {}", c.what, c.fix)
                    });
                }
            }
            st.login_item = Some(state);
        }
        Err(why) => {
            st.login_item = Some(LoginItem::Unknown);
            st.login_item_why = Some(why);
        }
    }
}

/// launchd's disabled override for `label`: asked only for a job that is not loaded (it only
/// matters for loading), from the listing when there is one; `None` when unknown.
pub(super) fn disabled_override(
    lc: &Launchctl,
    listings: Option<&Listings>,
    domain: Domain,
    label: &str,
    not_loaded: bool,
) -> Option<bool> {
    match (not_loaded, listings) {
        (false, _) => None,
        (true, Some(l)) => Some(l.disabled(domain, label).unwrap_or(false)),
        (true, None) => lc.disabled(&domain, label).ok().map(|d| d.unwrap_or(false)),
    }
}

/// What a label loaded in two domains means, and the fix: the `gui/<uid>` copy is the one a
/// console login keeps loading, so the `user/<uid>` copy goes (a restart does it).
pub(super) fn loaded_twice_note(
    ctx: &Context,
    (first, a): (Domain, &PrintInfo),
    (second, b): (Domain, &PrintInfo),
) -> String {
    let pid = |i: &PrintInfo| i.pid().map_or("not running".into(), |p| format!("pid {p}"));
    format!(
        "loaded twice: {} is loaded in {first} ({}) and in {second} ({}), two Hosts for one port; `{}` boots the {second} copy out (or `launchctl bootout {}`)",
        ctx.stack.label,
        pid(a),
        pid(b),
        ctx.hint_cmd("restart"),
        second.target(&ctx.stack.label),
    )
}

/// Whether this stack's last audit record is `kill`'s SIGTERM, at most 15 s ago (launchd's
/// ThrottleInterval of 10 s, and a margin): then a signal death in `spawn scheduled` is the
/// one oyster sent.
pub(super) fn sent_sigterm_lately(ctx: &Context) -> bool {
    let Ok(Some(bytes)) = crate::sys::fs::read_regular(&ctx.stack.audit_path(), 2 << 20) else {
        return false;
    };
    let text = String::from_utf8_lossy(&bytes);
    // The launch program's own records (`exec`: launchd starting the next instance) come
    // after the kill; the last thing oyster *did* is what counts.
    let Some(last) = text
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| r["action"] != "exec")
    else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let at = last["ts_ms"].as_u64().map_or(0, u128::from);
    last["action"] == "kill" && last["step"] == "sigterm" && now.saturating_sub(at) < 15_000
}
