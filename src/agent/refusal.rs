//! Why launchd refused a `bootstrap` with a bare 5 ("Input/output error") while the label is
//! not loaded. For a non-root user launchd says 5 for many causes (docs/launchd.md, "Exit
//! codes"): the cheap discriminators run in this order, and the first that holds is named
//! with its fix: the label's disabled override (`print-disabled`), the Login Items switch, the
//! plist's `LimitLoadToSessionType` against the domain's session, the owner and mode of the
//! plist and of its directory, the log directory. `None` means none holds: launchd refused it
//! and gave no reason.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::login_items::{self, LoginItem};
use crate::launchctl::{Domain, Launchctl};

/// One cause of a refusal, with its fix, in words (from a [`Found`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// What holds, as a clause: "launchd has … disabled".
    pub what: String,
    /// What to do, as an imperative sentence.
    pub fix: String,
}

/// One cause of a refusal, as facts: what holds is its `Display`, the fix its `fix()` (both in
/// `commands/words/agent.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// launchd has the label disabled in `domain` (`target` is `domain/label`).
    Disabled { target: String, domain: Domain },
    /// Switched off in Login Items; `program` is what the plist runs (the item's name).
    SwitchedOff { program: String },
    /// The plist's session types do not include the domain's `session`.
    SessionType {
        types: Vec<String>,
        session: &'static str,
        domain: Domain,
        regenerate: String,
    },
    /// The plist is a symbolic link.
    Symlink { path: PathBuf },
    /// The plist (or, `dir`, its directory) has an owner or mode launchd refuses.
    Ownership {
        path: PathBuf,
        dir: bool,
        uid: u32,
        mode: u32,
        me: u32,
    },
    /// A log directory the plist names is not a directory.
    LogDirNotDir { dir: PathBuf, regenerate: String },
    /// A log directory the plist names (for `log`) does not exist.
    LogDirMissing {
        dir: PathBuf,
        log: String,
        regenerate: String,
    },
}

impl From<Found> for Cause {
    fn from(f: Found) -> Cause {
        Cause {
            what: f.to_string(),
            fix: f.fix(),
        }
    }
}

/// The hint when launchd refused a bootstrap and gave no reason, as facts (in words in
/// `commands/words/agent.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoReason {
    /// launchctl's `stderr` gave its advice to retry as root.
    pub root_advice: bool,
    pub domain: Domain,
    pub plist: PathBuf,
    /// How the user types `oyster doctor`.
    pub doctor: String,
    /// The user is an administrator.
    pub admin: bool,
}

/// The first cause that holds for `label` refused in `domain` from `plist`. `regenerate` is
/// the command that writes the plist again, as the user would type it.
pub fn first_cause(
    lc: &Launchctl,
    domain: Domain,
    label: &str,
    plist: &Path,
    regenerate: &str,
) -> Option<Cause> {
    first_found(lc, domain, label, plist, regenerate).map(Cause::from)
}

/// [`first_cause`] as facts.
pub fn first_found(
    lc: &Launchctl,
    domain: Domain,
    label: &str,
    plist: &Path,
    regenerate: &str,
) -> Option<Found> {
    disabled(lc, domain, label)
        .or_else(|| login_item_found(lc, plist))
        .or_else(|| session_type(domain, plist, regenerate))
        .or_else(|| ownership(plist))
        .or_else(|| log_dir(plist, regenerate))
}

/// What launchctl says when a richer error is to be had as root (to a caller that is not).
const ROOT_ADVICE: &str = "re-running the command as root for richer errors";

/// The hint when launchd refused a bootstrap and gave no reason (issue 39 item 7), in a form
/// this user can follow. `log show` refuses a user who is not an administrator, so one who
/// is not is told an administrator's `sudo` command; launchctl's own advice (`Try re-running
/// the command as root for richer errors.`), when its `stderr` gave it, is kept as the command
/// it means. `doctor` is how the user types `oyster doctor`.
pub fn no_reason_hint(
    stderr: &str,
    domain: Domain,
    plist: &Path,
    doctor: &str,
    admin: bool,
) -> String {
    NoReason {
        root_advice: stderr.contains(ROOT_ADVICE),
        domain,
        plist: plist.to_owned(),
        doctor: doctor.to_owned(),
        admin,
    }
    .to_string()
}

fn disabled(lc: &Launchctl, domain: Domain, label: &str) -> Option<Found> {
    let off = lc.disabled(&domain, label).ok().flatten()?;
    off.then(|| Found::Disabled {
        target: domain.target(label),
        domain,
    })
}

/// The Login Items state, when it is "switched off" (a state that is unknown is no cause).
pub fn login_item(lc: &Launchctl, plist: &Path) -> Option<Cause> {
    login_item_found(lc, plist).map(Cause::from)
}

/// [`login_item`] as facts.
pub fn login_item_found(lc: &Launchctl, plist: &Path) -> Option<Found> {
    if login_items::status(lc, plist) != Ok(LoginItem::RequiresApproval) {
        return None;
    }
    Some(Found::SwitchedOff {
        program: program(plist),
    })
}

/// The program the installed plist runs (its `ProgramArguments[0]`), for naming the item.
fn program(plist: &Path) -> String {
    read(plist)
        .and_then(|a| a.program_arguments.first().cloned())
        .unwrap_or_else(|| "oyster".to_owned())
}

fn read(plist: &Path) -> Option<crate::host::plist::LaunchAgent> {
    let bytes = crate::sys::fs::read_regular(plist, crate::host::plist::MAX_PLIST_BYTES).ok()??;
    crate::host::plist::LaunchAgent::parse(&bytes).ok()
}

fn session_type(domain: Domain, plist: &Path, regenerate: &str) -> Option<Found> {
    let agent = read(plist)?;
    let mut types = agent.limit_load_to_session_type.clone();
    if types.is_empty() {
        // A one-string value is kept as found; none at all means Aqua only (TN2083).
        match agent
            .other
            .get("LimitLoadToSessionType")
            .and_then(plist::Value::as_string)
        {
            Some(t) => types.push(t.to_owned()),
            None => types.push("Aqua".to_owned()),
        }
    }
    let session = match domain {
        Domain::Gui(_) => "Aqua",
        Domain::User(_) => "Background",
    };
    (!types.iter().any(|t| t == session)).then(|| Found::SessionType {
        types,
        session,
        domain,
        regenerate: regenerate.to_owned(),
    })
}

/// launchd refuses a plist that is a symlink, is not the user's, or that group or others may
/// write (launchctl(1)); the directory that holds it by the same rule **[unverified]**.
fn ownership(plist: &Path) -> Option<Found> {
    let me = crate::sys::user::uid();
    let meta = std::fs::symlink_metadata(plist).ok()?;
    if meta.file_type().is_symlink() {
        return Some(Found::Symlink {
            path: plist.to_owned(),
        });
    }
    let refused = |path: &Path, dir: bool, m: &std::fs::Metadata| {
        (m.uid() != me || m.mode() & 0o022 != 0).then(|| Found::Ownership {
            path: path.to_owned(),
            dir,
            uid: m.uid(),
            mode: m.mode() & 0o7777,
            me,
        })
    };
    if let Some(found) = refused(plist, false, &meta) {
        return Some(found);
    }
    let dir = plist.parent()?;
    refused(dir, true, &std::fs::metadata(dir).ok()?)
}

fn log_dir(plist: &Path, regenerate: &str) -> Option<Found> {
    let agent = read(plist)?;
    let logs: Vec<String> = [agent.standard_out_path, agent.standard_error_path]
        .into_iter()
        .flatten()
        .collect();
    let regenerate = regenerate.to_owned();
    logs.iter().find_map(|log| {
        let dir = Path::new(log).parent()?.to_owned();
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => None,
            Ok(_) => Some(Found::LogDirNotDir {
                dir,
                regenerate: regenerate.clone(),
            }),
            Err(_) => Some(Found::LogDirMissing {
                dir,
                log: log.clone(),
                regenerate: regenerate.clone(),
            }),
        }
    })
}

#[cfg(test)]
#[path = "refusal_tests.rs"]
mod tests;
