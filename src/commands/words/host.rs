//! The words of `host/`: the stack's refusals, the lock directory's, the plist's, planning's and
//! the launch environment's (the root, the pinned Node and the privacy grant: `pinned.rs`).

use std::fmt::{self, Display, Formatter};

use super::Hint;
use std::path::{Path, PathBuf};

use crate::host::declared::DeclaredNote;
use crate::host::launchenv::{NotInEnvironment, NotOnPath};
use crate::host::lock_dir::{LockDirRefusal, LockDirWhy};
use crate::host::plan::PlanWords;
use crate::host::plist::{InstalledNote, PlistRefusal};
use crate::host::stack::StackRefusal;

said_as_invalid_or_failed!(StackRefusal);

/// `name (uid N)`, or `uid N` for a uid without a name.
fn who(uid: u32) -> String {
    crate::sys::user::name_of(uid).map_or(format!("uid {uid}"), |n| format!("{n} (uid {uid})"))
}

impl Display for StackRefusal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            StackRefusal::All => write!(
                f,
                "`all` is not a stack name: every stack is `--all` (start, stop, restart, uninstall, status)"
            ),
            StackRefusal::Reserved { name } => write!(
                f,
                "{name:?} is reserved by Oysterun (1.5.3 keeps local, phone, daily and shared for itself), so it cannot be a stack name"
            ),
            StackRefusal::BadName { name } => write!(
                f,
                "invalid stack name {name:?}: use `production`, `staging`, or a name matching \
                 [a-z][a-z0-9-]{{0,31}} (a lowercase letter, then up to 31 lowercase letters, digits or dashes)"
            ),
            StackRefusal::NoHome => {
                write!(f, "HOME is not set; oyster needs it to find the stack's files")
            }
            StackRefusal::RelativeHome { home } => write!(
                f,
                "HOME is {}, which is not an absolute path",
                home.display()
            ),
            StackRefusal::RelativeDir { var, value } => write!(
                f,
                "{var} is {:?}, not an absolute path; launchd and the Host expand nothing, so \
                 `~` or a relative path would mean a directory relative to wherever they run",
                value.display().to_string()
            ),
            StackRefusal::LogDir { dir, what } => write!(
                f,
                "the log directory {} is {what}; the Host's log cannot be written in it",
                dir.display()
            ),
            StackRefusal::SpecialLog { log, kind } => {
                let why = match *kind {
                    "a symlink" => "the Host's output would go wherever it points",
                    "a FIFO (named pipe)" => {
                        "opening it blocks until someone reads it, so the Host would never start"
                    }
                    _ => "the Host's output cannot be appended to it",
                };
                write!(
                    f,
                    "the Host log {} is {kind}, not a regular file; {why}",
                    log.display()
                )
            }
            StackRefusal::AgentsDir {
                dir,
                owner,
                me,
                mode,
            } => {
                write!(
                    f,
                    "oyster cannot write the LaunchAgent into {}: ",
                    dir.display()
                )?;
                if owner != me {
                    write!(
                        f,
                        "it is owned by {} (mode {mode:04o}), not by you ({})",
                        who(*owner),
                        who(*me)
                    )?;
                } else {
                    write!(
                        f,
                        "its mode is {mode:04o}, so even you, its owner, cannot create files in it"
                    )?;
                }
                f.write_str(crate::error::NOTHING_CHANGED)
            }
            StackRefusal::Unknown { name, list, .. } => write!(
                f,
                "there is no stack named {name:?} on this machine (known stacks: {list})"
            ),
        }
    }
}

impl Hint for StackRefusal {
    fn hint(&self) -> Option<String> {
        Some(match self {
            StackRefusal::All => "`oyster restart --all`, or `oyster list` to see the stacks".into(),
            StackRefusal::Reserved { .. } => {
                "choose another name; `--all` acts on every stack".into()
            }
            StackRefusal::BadName { .. }
            | StackRefusal::NoHome
            | StackRefusal::RelativeHome { .. } => return None,
            StackRefusal::RelativeDir { var, .. } => {
                format!("set {var} to a full path, e.g. {var}=\"$HOME/…\"")
            }
            StackRefusal::LogDir { dir, .. } => format!(
                "move it aside (`mv {0} {0}.old`); oyster creates the directory",
                dir.display()
            ),
            StackRefusal::SpecialLog { log, .. } => format!(
                "remove it (`rm {}`); a regular Host log is created there when the Host starts",
                log.display()
            ),
            StackRefusal::AgentsDir {
                dir, owner, me, ..
            } => {
                let fix = if owner != me {
                    format!(
                        "`sudo chown $USER {}` (a `sudo` run of an installer or of oyster left it so)",
                        dir.display()
                    )
                } else {
                    format!("`chmod u+wx {}`", dir.display())
                };
                format!("{fix}, then run the command again")
            }
            StackRefusal::Unknown {
                near: Some(near), ..
            } => format!("did you mean `{near}`? (`oyster list` shows every stack)"),
            StackRefusal::Unknown { name, near: None, .. } => format!(
                "check the name with `oyster list`; a new stack is created by `oyster setup {name}` (or `oyster install {name} --port N`)"
            ),
        })
    }
}

said_as_invalid_or_failed!(LockDirRefusal);

/// `at` as one shell word for a command in a hint: `~/…` under `home` (the rest quoted when it
/// needs it, as macOS's `Library/Application Support` does), else the whole path.
fn word(home: &Path, at: &Path) -> String {
    let quoted = |s: &str| {
        let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:,@%".contains(c);
        if !s.is_empty() && s.chars().all(plain) {
            s.to_owned()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    match at.strip_prefix(home) {
        Ok(rel) if !rel.as_os_str().is_empty() => format!("~/{}", quoted(&rel.to_string_lossy())),
        _ => quoted(&at.to_string_lossy()),
    }
}

impl Display for LockDirRefusal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let (dir, at) = (self.dir.display(), self.at.display());
        match &self.why {
            LockDirWhy::NotADirectory { what } => write!(
                f,
                "oyster keeps each stack's lifecycle lock in {dir}, but {at} is {what}, not a directory; nothing was changed"
            ),
            LockDirWhy::Dangling { to } => write!(
                f,
                "oyster keeps each stack's lifecycle lock in {dir}, but {at} is a symlink to {}, which does not exist; nothing was changed",
                to.display()
            ),
            LockDirWhy::Unwritable {
                owner,
                me,
                mode,
                file,
            } => {
                write!(f, "oyster cannot take the stack's lifecycle lock in {dir}: ")?;
                if owner == me {
                    write!(
                        f,
                        "{at} has mode {mode:04o}, so even you, its owner, cannot write {}",
                        if *file { "it" } else { "in it" }
                    )?;
                } else {
                    write!(
                        f,
                        "{at} is owned by {} (mode {mode:04o}), not by you ({})",
                        who(*owner),
                        who(*me)
                    )?;
                }
                f.write_str(crate::error::NOTHING_CHANGED)
            }
        }
    }
}

impl Hint for LockDirRefusal {
    fn hint(&self) -> Option<String> {
        let (home, at) = (&self.home, &self.at);
        Some(match &self.why {
            LockDirWhy::NotADirectory { .. } => format!(
                "move it aside (`mv {0} {1}`) or make it a directory, then run the command again",
                word(home, at),
                word(home, &PathBuf::from(format!("{}.moved", at.display())))
            ),
            LockDirWhy::Dangling { .. } => format!(
                "remove the link (`rm {}`) or restore its target, then run the command again",
                word(home, at)
            ),
            LockDirWhy::Unwritable {
                owner, me, file, ..
            } => {
                let fix = if owner == me {
                    format!(
                        "`chmod u+w{} {}`",
                        if *file { "" } else { "x" },
                        at.display()
                    )
                } else {
                    format!(
                        "`sudo chown $USER {}` (a `sudo` run of an installer or of oyster left it so)",
                        word(home, at)
                    )
                };
                format!("{fix}, then run the command again")
            }
        })
    }
}

said_as_invalid_or_failed!(PlanWords);

impl Display for PlanWords {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            PlanWords::NoPort { stack, config } => write!(
                f,
                "stack {stack} has no port yet; pass --port N once and it is recorded in {}",
                config.display()
            ),
            PlanWords::PortChangedMeanwhile => write!(
                f,
                "config.json's port was changed by another command meanwhile: left as it is"
            ),
            PlanWords::PortBack(None) => write!(f, "config.json has no port again"),
            PlanWords::PortBack(Some(from)) => write!(f, "config.json's port is {from} again"),
        }
    }
}

impl Hint for PlanWords {
    fn hint(&self) -> Option<String> {
        None
    }
}

said_as_invalid_or_failed!(NotInEnvironment);

impl Display for NotInEnvironment {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            NotInEnvironment::NodeWithoutDir(node) => {
                write!(f, "node path {} has no directory", node.display())
            }
            NotInEnvironment::PathEntryNotUtf8(dir) => {
                write!(f, "PATH entry {} is not valid UTF-8", dir.display())
            }
            NotInEnvironment::NotOnPath { entry, why } => {
                let why = match why {
                    NotOnPath::Relative => "is not an absolute path",
                    NotOnPath::Colon => "contains `:`, the PATH separator",
                    NotOnPath::LineBreak => "contains a line break",
                    NotOnPath::Nul => "contains a NUL byte",
                };
                write!(
                    f,
                    "cannot put {entry:?} on the Host's PATH: it {why}. Move the executable to a \
                     directory whose path is plain (or point the provider at one with \
                     `oyster providers set`)"
                )
            }
            NotInEnvironment::NotUtf8 { name, path } => {
                write!(f, "{name} ({}) is not valid UTF-8", path.display())
            }
            NotInEnvironment::Control { name, value } => {
                write!(f, "{name} ({value:?}) contains a line break or NUL")
            }
        }
    }
}

impl Hint for NotInEnvironment {
    fn hint(&self) -> Option<String> {
        None
    }
}

impl Display for InstalledNote {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            InstalledNote::Unreadable(e) => write!(f, "ignoring the installed plist: {e}"),
            InstalledNote::NotAPlist { path, problem } => write!(
                f,
                "the installed {} does not parse ({problem}); ignoring its pins",
                path.display()
            ),
        }
    }
}

said_as_invalid_or_failed!(PlistRefusal);

impl Display for PlistRefusal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            PlistRefusal::Control { what, c, value } => write!(
                f,
                "{what} holds the control character U+{:04X}, which cannot go into a plist: {}",
                *c as u32,
                crate::output::redact::escape_controls(value)
            ),
            PlistRefusal::ForeignOwner { path, owner, me } => write!(
                f,
                "{} is owned by {}, not by you ({}): launchd refuses to load it, and oyster will not replace a file someone else owns",
                path.display(),
                user_name(*owner),
                user_name(*me)
            ),
        }
    }
}

/// A uid's name, or `uid N`.
fn user_name(uid: u32) -> String {
    crate::sys::user::name_of(uid).unwrap_or_else(|| format!("uid {uid}"))
}

impl Hint for PlistRefusal {
    fn hint(&self) -> Option<String> {
        Some(match self {
            PlistRefusal::Control { .. } => "use a path without control characters".into(),
            PlistRefusal::ForeignOwner { path, me, .. } => {
                let (p, mine) = (path.display(), user_name(*me));
                format!(
                    "remove it with `sudo rm {p}` (or take it over with `sudo chown {mine} {p}`), then run again"
                )
            }
        })
    }
}

impl Display for DeclaredNote {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            DeclaredNote::NotUsed(r) => write!(
                f,
                "the declared environment is not used: {r}; the Host starts without it (fix: {})",
                r.fix()
            ),
            DeclaredNote::Shadowed { name, forced, file } => write!(
                f,
                "{name}: your organization forces {forced} ({}), the same variable in another case; left out",
                file.display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_in_a_hint_quotes_a_path_with_a_space_after_the_tilde() {
        let home = Path::new("/Users/a b");
        let at = home.join("Library/Application Support");
        assert_eq!(word(home, &at), "~/'Library/Application Support'");
        assert_eq!(word(home, &home.join(".local")), "~/.local");
        assert_eq!(word(home, Path::new("/o'k")), "'/o'\\''k'");
    }
}
