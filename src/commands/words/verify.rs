//! The words of `verify` and `probe`: what the live Host's proof found, and what it could not
//! prove.

use std::fmt::{self, Display, Formatter};

use crate::output::redact;
use crate::probe::Unproven;
use crate::sys::fs::FsError;
use crate::verify::{EnvCheck, HealthFailure, LogNotShown, NotTheListener};

impl EnvCheck {
    /// The check in words: every difference named, a secret-named variable's values never shown.
    pub fn describe(&self) -> String {
        match self {
            EnvCheck::Verified => "the live environment matches the generated one".into(),
            EnvCheck::Unreadable => {
                "the live environment could not be read from the kernel, so it is unverified".into()
            }
            EnvCheck::Mismatch(diffs) => diffs
                .iter()
                .map(|(k, want, got)| {
                    // A variable named like a secret (a key added to the plist by hand) is
                    // named, never shown (docs/behaviour.md §8).
                    let shown = |v: &str| {
                        if redact::is_secret_key(k) {
                            redact::REDACTED.to_owned()
                        } else {
                            format!("{v:?}")
                        }
                    };
                    format!(
                        "{k} is {} but should be {}",
                        got.as_deref().map_or("unset".to_owned(), shown),
                        shown(want)
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}

impl Display for NotTheListener {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            NotTheListener::Unknown { port, why } => {
                write!(f, "could not tell who listens on port {port}: {why}")
            }
            NotTheListener::None { port, pid } => write!(
                f,
                "no listening socket on port {port} could be found for pid {pid}"
            ),
            NotTheListener::Others { port, pid, holders } => {
                let who: Vec<String> = holders
                    .iter()
                    .map(|(p, name)| format!("pid {p} ({name})"))
                    .collect();
                write!(
                    f,
                    "/health on port {port} was answered by {}, not by the Host (pid {pid})",
                    who.join(", ")
                )
            }
        }
    }
}

impl Display for Unproven {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Unproven::NoRecord => write!(
                f,
                "the environment is unproven: the kernel hides it and `oyster host exec` left no record for this process"
            ),
            Unproven::NotLaunchdsPid { pid } => write!(
                f,
                "the kernel hides pid {pid}'s environment and launchd does not name it as the job's pid"
            ),
            Unproven::LaunchdDiffers { diffs } => write!(
                f,
                "the kernel hides the Host's environment, and launchd's loaded definition differs from the generated one in: {}",
                diffs.join(", ")
            ),
        }
    }
}

impl Display for HealthFailure {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            HealthFailure::Exited => f.write_str("the Host exited before answering /health"),
            HealthFailure::Interrupted(sig) => write!(f, "interrupted by {sig}"),
            HealthFailure::Timeout(None) => f.write_str("nothing answered GET /health"),
            HealthFailure::Timeout(Some(code)) => {
                write!(f, "GET /health answered {code}, never 200")
            }
        }
    }
}

impl Display for LogNotShown {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            LogNotShown::Missing(path) => write!(f, "(no log at {})", path.display()),
            LogNotShown::Refused(FsError::Symlink { path }) => write!(
                f,
                "(not shown: {} is a symlink, which oyster does not follow)",
                path.display()
            ),
            LogNotShown::Refused(FsError::NotRegular { path, kind }) => write!(
                f,
                "(not shown: {} is {kind}, not a regular file)",
                path.display()
            ),
            LogNotShown::Refused(e) => write!(f, "(not shown: {e})"),
        }
    }
}
