//! What status says beside the facts: the Background session's locked keychain, Login
//! Items, the label's override, a label loaded twice.

use std::path::PathBuf;

use super::*;
use crate::agent::refusal::Found;

/// A note of `status`, as facts; in words (`AgentStatus::notes` holds them so) in
/// `commands/words/agent.rs`. Commands are spelled as the user typed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusNote {
    /// A LaunchAgents or lock directory every verb that writes would refuse: why, and the fix.
    Unusable { why: String, fix: String },
    /// An earlier change was interrupted before it verified; `regenerate` re-verifies it.
    Pending { regenerate: String },
    /// The plist was deleted while the job is loaded; `restart` writes it again.
    PlistDeleted { plist: PathBuf, restart: String },
    /// Nothing is set up for `stack` yet: the setup commands.
    Newcomer {
        stack: String,
        setup: String,
        setup_root: String,
    },
    /// The config dir is not a directory; `setup` after moving it aside.
    ConfigDirNotDir { dir: PathBuf, setup: String },
    /// A file of the stack cannot be used (why).
    Broken(String),
    /// launchctl failed (why).
    LaunchctlFailed(String),
    /// systemctl failed (why).
    SystemctlFailed(String),
    /// launchd still calls `pid` running, but it exited; `status` again shows what follows.
    PidExited { pid: u32, status: String },
    /// A signal death after `oyster kill`'s SIGTERM is launchd's throttle, not a crash loop.
    ThrottleAfterKill,
    /// The Host runs in the Background session `user`: the providers that keep their login in
    /// the keychain, and `restart` at the console that moves it to `gui`.
    Keychain {
        user: Domain,
        keeping: Vec<&'static str>,
        restart: String,
        gui: Domain,
    },
    /// Switched off in Login Items (`found`), said for a job that is `loaded` or not.
    SwitchedOff { found: Found, loaded: bool },
    /// `label` loaded in two domains (each copy's pid, if any); `restart` boots `second` out.
    LoadedTwice {
        label: String,
        first: (Domain, Option<u32>),
        second: (Domain, Option<u32>),
        restart: String,
    },
    /// Without the manager's answer, who runs `pid` is not known (`systemd`: under systemd).
    WhoRunsUnknown { systemd: bool, pid: u32 },
    /// Started by `oyster host start`; `stop` stops it.
    StartedDirectly { stop: String },
    /// These declared variables changed since the Host started; `restart` applies them.
    DeclaredStale { names: Vec<String>, restart: String },
    /// The unit path is `kind`, not a regular file; `install` after replacing it.
    UnitSpecial {
        path: PathBuf,
        kind: &'static str,
        install: String,
    },
    /// Drop-ins beside oyster's unit file.
    DropIns(Vec<PathBuf>),
    /// The unit file changed since systemd read it; `restart` reloads it.
    NeedsDaemonReload { restart: String },
}

impl AgentStatus {
    /// Adds a note, in words.
    pub(super) fn note(&mut self, note: StatusNote) {
        self.notes.push(note.to_string());
    }
}

/// What a Host in `user/<uid>` means for providers, with the fix (docs/launchd.md, "Domains").
pub fn keychain_note(ctx: &Context) -> String {
    let keeping: Vec<&str> = crate::provider::registry::PROVIDERS
        .iter()
        .filter(|p| p.login_in_keychain)
        .map(|p| p.display_name)
        .collect();
    StatusNote::Keychain {
        user: Domain::user(),
        keeping,
        restart: ctx.hint_cmd("restart"),
        gui: Domain::gui(),
    }
    .to_string()
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
    match crate::agent::login_items::ask(lc, &plist) {
        Ok(answer) => {
            if answer.state == LoginItem::RequiresApproval {
                if let Some(found) = crate::agent::refusal::login_item_found(lc, &plist) {
                    // Loaded, it is not "a job launchd will not load", and status ran no
                    // command to run again.
                    st.seen.switched_off = Some(found.clone());
                    st.note(StatusNote::SwitchedOff { found, loaded });
                }
            }
            st.login_item = Some(answer.state);
            st.seen.login_item_raw = answer.raw;
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
) -> StatusNote {
    StatusNote::LoadedTwice {
        label: ctx.stack.label.clone(),
        first: (first, a.pid()),
        second: (second, b.pid()),
        restart: ctx.hint_cmd("restart"),
    }
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
