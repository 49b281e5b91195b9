//! The words of `sys/`: the file reader's refusals, locks, users, processes, a log's cut line.

use std::fmt::{self, Display, Formatter};

use crate::sys::fs::{FsError, MovedAway};
use crate::sys::process::ProcessError;
use crate::sys::tail::LineCut;
use crate::sys::trusted::Why;
use crate::sys::user::AccountError;

impl Display for LineCut {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            LineCut::Began { max, rest } => {
                write!(f, "[line cut: it began more than {max} bytes back] …{rest}")
            }
            LineCut::NotShown { max } => write!(
                f,
                "[one line longer than {max} bytes, with no space in its last {max}; not shown]"
            ),
        }
    }
}

impl Display for Why {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        // `uid 501 (alice)`, or `uid 501` without a name.
        let uid_named = |uid: u32| {
            let name = crate::sys::user::name_of(uid)
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            format!("uid {uid}{name}")
        };
        match self {
            Why::Unresolvable { cause } => write!(f, "cannot be resolved ({cause})"),
            Why::Uninspectable { cause } => write!(f, "cannot be inspected ({cause})"),
            Why::LinkInSharedDir { uid } => write!(
                f,
                "is a symlink that {} owns in a directory others may write, so it can point it at another program",
                uid_named(*uid)
            ),
            Why::NotRoots { uid } => write!(f, "belongs to {}, not root", uid_named(*uid)),
            Why::Writable { who, mode } => write!(f, "is writable by {who} (mode {mode:04o})"),
        }
    }
}

impl Display for FsError {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            FsError::Symlink { path } => write!(
                f,
                "{} is a symlink; oyster replaces files atomically and will not write through a link. Replace the link with a regular file (or remove it) and run again",
                path.display()
            ),
            FsError::Io {
                action,
                path,
                cause,
            } => write!(f, "could not {action} {}: {cause}", path.display()),
            FsError::NotRegular { path, kind } => write!(
                f,
                "{} is {kind}, not a regular file; oyster reads only regular files. Replace it with the real file (or remove it) and run again",
                path.display()
            ),
            FsError::Busy { path, holder, secs } => {
                // The holder's record; none written (another program's `flock`, or an oyster
                // that has not written its own yet) is said as unknown.
                if holder.is_empty() {
                    write!(f, "another process (it left no record of its pid)")?;
                } else {
                    write!(f, "another oyster ({holder})")?;
                }
                write!(
                    f,
                    " has held {} for {secs} s; wait for it to finish (or stop it), then run again",
                    path.display()
                )
            }
            FsError::TooLarge { path, cap } => write!(
                f,
                "{} is larger than {cap} bytes, more than this file can reasonably hold; check what wrote it, or move it aside and run again",
                path.display()
            ),
        }
    }
}

impl Display for MovedAway {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the lock file was removed or replaced each time oyster took it; check what removes it, then run again"
        )
    }
}

impl Display for ProcessError {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            ProcessError::Spawn { argv, source } => {
                write!(f, "`{argv}` could not be started: {source}")
            }
            ProcessError::Timeout { argv, secs } => {
                write!(f, "`{argv}` did not finish within {secs} s and was killed")
            }
            ProcessError::Signaled { argv, signal } => {
                write!(f, "`{argv}` was killed by signal {signal}")
            }
            ProcessError::Interrupted { argv, signal } => write!(
                f,
                "`{argv}` was stopped (with its process group) because oyster was interrupted by {signal}"
            ),
        }
    }
}

impl Display for AccountError {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            AccountError::Missing(uid) => write!(
                f,
                "uid {uid} has no entry in the user database, so USER, LOGNAME and SHELL for the Host are unknown; add the user (or run oyster as a user that has one)"
            ),
            AccountError::Lookup { uid, errno } => write!(
                f,
                "could not read the user database entry of uid {uid}: {errno}"
            ),
        }
    }
}
