//! The words of `provider/`: why a provider resolves to nothing (with the fix), why a path is
//! not executable, a name that is no provider.

use std::fmt::{self, Display, Formatter};

use crate::context::{Hints, Worded};
use crate::provider::registry::{supported_names, UnsupportedProvider};
use crate::provider::resolve::{NotConfigured, NotExecutable, Unresolved};

impl Display for NotExecutable {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            NotExecutable::Missing => f.write_str("does not exist"),
            NotExecutable::BrokenSymlink => {
                f.write_str("is a broken symlink (its target does not exist)")
            }
            NotExecutable::SymlinkLoop => f.write_str("is a symlink loop"),
            NotExecutable::Directory => f.write_str("is a directory"),
            NotExecutable::NotRegularFile => f.write_str("is not a regular file"),
            NotExecutable::NoExecutePermission(mode) => write!(
                f,
                "is not executable by this user (mode {:04o}; `chmod +x` it)",
                mode & 0o7777
            ),
            NotExecutable::Unreadable(e) => write!(f, "cannot be inspected: {e}"),
        }
    }
}

impl Display for NotConfigured {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            NotConfigured::Empty => f.write_str("no command is configured"),
            NotConfigured::Relative { command } => write!(
                f,
                "the configured command {command:?} is not an absolute path"
            ),
            NotConfigured::NotExecutable { command, why } => {
                write!(f, "the configured command {command} {why}")
            }
        }
    }
}

impl Worded for Unresolved {
    /// Why, and the fix: its `providers set|auto` (which take no plain STACK) with `--stack
    /// NAME` for a stack.
    fn words(&self, hints: &Hints) -> String {
        let cmd = |words: String| hints.flag_cmd(&words);
        let fix = match self {
            Unresolved::Disabled { id } => format!(
                "re-enable it with `{}` or `{}`",
                cmd(format!("providers set {id} /full/path")),
                cmd(format!("providers auto {id}"))
            ),
            Unresolved::Configured { id, bin, .. } => format!(
                "give a full path with `{}`, or hand it back to discovery with `{}`",
                cmd(format!("providers set {id} /full/path/to/{bin}")),
                cmd(format!("providers auto {id}"))
            ),
            // No "hand it back to discovery": it is already `auto`. Someone who does not use
            // this provider needs to hear how to stop being told.
            Unresolved::NotFound { id, bin, name, .. } => format!(
                "install it, give a full path with `{}`, or, if you do not use {name}, disable it \
                 with `{}`",
                cmd(format!("providers set {id} /full/path/to/{bin}")),
                cmd(format!("providers set {id} \"\""))
            ),
        };
        format!("{}; {fix}", self.why())
    }
}

impl Unresolved {
    /// Why, without the fix.
    pub fn why(&self) -> String {
        match self {
            Unresolved::Disabled { .. } => "disabled by the user".into(),
            Unresolved::Configured { why, .. } => why.to_string(),
            Unresolved::NotFound { bin, dirs, .. } => format!(
                "`{bin}` was not found on PATH or in {}",
                dirs.iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

impl Display for UnsupportedProvider {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unsupported provider {:?}; supported providers are: {}",
            self.0,
            supported_names()
        )
    }
}
