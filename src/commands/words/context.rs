//! The words of `context`: where a writing command refuses to write, the context's notes, no
//! service manager.

use std::fmt::{self, Display, Formatter};

use super::Hint;
use crate::context::{ContextNote, Hints, NoManager, Unreachable, WhereRefusal, Worded};
use crate::manager::PortTaken;

said_as_invalid_or_failed!(WhereRefusal, ContextNote);

/// A uid's name and how `sudo -u` takes it: a uid without an account is `#UID` (quoted: `#`
/// starts a shell comment).
fn names(owner: u32) -> (String, String) {
    match crate::sys::user::name_of(owner) {
        Some(n) => (n.clone(), n),
        None => (format!("uid {owner}"), format!("'#{owner}'")),
    }
}

impl Display for WhereRefusal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            WhereRefusal::DanglingRoot { root, to } => write!(
                f,
                "the stack directory {} is a symlink to {}, which does not exist; nothing was changed",
                root.display(),
                to.display()
            ),
            WhereRefusal::ForeignHome {
                home,
                owner,
                euid,
                what,
                ..
            } => {
                let (name, _) = names(*owner);
                write!(
                    f,
                    "HOME ({}) belongs to {name}, but oyster runs as uid {euid}; `{what}` would leave files there that {name} cannot use",
                    home.display()
                )
            }
            WhereRefusal::ForeignStack {
                dir,
                owner,
                euid,
                what,
                ..
            } => {
                let (name, _) = names(*owner);
                write!(
                    f,
                    "{} belongs to {name}, but oyster runs as uid {euid}; `{what}` would write there, and {name}'s own oyster would not wait for it",
                    dir.display()
                )
            }
        }
    }
}

impl Hint for WhereRefusal {
    fn hint(&self) -> Option<String> {
        Some(match self {
            WhereRefusal::DanglingRoot { root, .. } => format!(
                "remove the link (`rm {}`) or restore its target, then run the command again",
                root.display()
            ),
            WhereRefusal::ForeignHome {
                owner, what, stack, ..
            } => {
                let (name, sudo_user) = names(*owner);
                format!(
                    "run it as {name}, without sudo: `oyster {what}{stack}`, or `sudo -u {sudo_user} -H oyster {what}{stack}`"
                )
            }
            WhereRefusal::ForeignStack {
                owner, what, stack, ..
            } => {
                let (name, sudo_user) = names(*owner);
                format!(
                    "run it as {name}, with the same OYSTERUN_STACKS_DIR: `sudo -u {sudo_user} -H oyster {what}{stack}`"
                )
            }
        })
    }
}

impl Display for ContextNote {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            ContextNote::Waiting {
                holder,
                stack,
                secs,
            } => write!(
                f,
                "waiting for another oyster ({}) to finish with stack {stack} (up to {secs} s)…",
                if holder.is_empty() {
                    "starting"
                } else {
                    holder
                }
            ),
            ContextNote::ManagedDir(dir) => write!(
                f,
                "OYSTER_MANAGED_PREFERENCES_DIR is set; managed preferences are read from {} instead of /Library/Managed Preferences",
                dir.display()
            ),
            ContextNote::ConfigDir(dir) => write!(
                f,
                "OYSTERUN_CONFIG_DIR is set; using {} as the config dir",
                dir.display()
            ),
            ContextNote::NotAUid { var, value } => write!(
                f,
                "{var} is {value:?}, which is not a uid; give the uid that owns the console (0: nobody is logged in) or unset it"
            ),
        }
    }
}

impl Hint for ContextNote {
    fn hint(&self) -> Option<String> {
        None
    }
}

impl Display for Unreachable {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&self.said_with(&self.launchd.to_string()))
    }
}

impl Unreachable {
    fn said_with(&self, launchd: &str) -> String {
        format!(
            "{launchd}; and no systemd user manager answers `{} --user` ({})",
            self.systemctl.display(),
            self.why
        )
    }
}

impl Worded for NoManager {
    /// launchd's absence with `oyster host start` for this stack.
    fn words(&self, hints: &Hints) -> String {
        match self {
            NoManager::Launchd(e) => e.words(hints),
            NoManager::Systemctl(e) => e.to_string(),
            NoManager::Unreachable(u) => u.said_with(&u.launchd.words(hints)),
        }
    }
}

said_as_invalid_or_failed!(PortTaken);

impl Display for PortTaken {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let c = &self.claimed;
        write!(
            f,
            "port {} is stack {}'s (its job is installed there, running or not); two stacks on one port cannot both run, so stack {} was not given it and nothing was changed",
            c.port, c.stack, self.this
        )
    }
}

impl Hint for PortTaken {
    fn hint(&self) -> Option<String> {
        let (this, other) = (&self.this, &self.claimed.stack);
        Some(format!(
            "give stack {this} another port with --port, or remove stack {other} first (`oyster uninstall {other}`)"
        ))
    }
}
