//! Exit statuses, and errors that carry their kind from where they are made.
//!
//! An input error (exit 2) is an [`Invalid`] when it is created, or a domain error whose type
//! says so (`ConfigError`, `FsError` for a file that is not a regular file; `lib.rs` asks each
//! type once, at the top); everything else is an operational failure (exit 1). [`Interrupted`]
//! ends a run that a signal stopped.

use std::process::ExitCode;

/// What a command ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Success, including a user's cancel.
    Success,
    /// The operation failed.
    Failure,
    /// Invalid input or usage.
    Invalid,
}

impl From<ExitStatus> for ExitCode {
    fn from(s: ExitStatus) -> ExitCode {
        match s {
            ExitStatus::Success => ExitCode::SUCCESS,
            ExitStatus::Failure => ExitCode::from(1),
            ExitStatus::Invalid => ExitCode::from(2),
        }
    }
}

/// Invalid input: what is wrong, and (when there is one) the fix, printed as `hint:`.
#[derive(Debug, thiserror::Error)]
#[error("{msg}")]
pub struct Invalid {
    pub msg: String,
    pub hint: Option<String>,
}

impl Invalid {
    pub fn new(msg: impl Into<String>) -> Invalid {
        Invalid {
            msg: msg.into(),
            hint: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Invalid {
        self.hint = Some(hint.into());
        self
    }
}

/// A failure with the fix to print as `hint:`.
#[derive(Debug, thiserror::Error)]
#[error("{msg}")]
pub struct Failed {
    pub msg: String,
    pub hint: Option<String>,
}

impl Failed {
    pub fn new(msg: impl Into<String>, hint: impl Into<String>) -> Failed {
        Failed {
            msg: msg.into(),
            hint: Some(hint.into()),
        }
    }
}

/// Context whose `lead` goes before the cause, as any context does, and whose `after` is said
/// after the whole message: setup says the real cause first, then what it rolled back.
#[derive(Debug, thiserror::Error)]
#[error("{lead}")]
pub struct Afterword {
    pub lead: String,
    pub after: String,
}

/// A run stopped by SIGINT, SIGTERM or SIGHUP, after its rollback (exit 128 + the signal).
#[derive(Debug, thiserror::Error)]
#[error("interrupted by {0}; {1}")]
pub struct Interrupted(pub crate::sys::signal::Signal, pub String);

/// The message (each cause once) and the hint of an error chain.
pub fn render(err: &anyhow::Error) -> (String, Option<String>) {
    let hint = err.chain().find_map(|c| {
        c.downcast_ref::<Invalid>()
            .and_then(|i| i.hint.clone())
            .or_else(|| c.downcast_ref::<Failed>().and_then(|f| f.hint.clone()))
    });
    // `{:#}` joins causes with ": "; a cause whose text the message already holds is dropped.
    let mut text = String::new();
    for cause in err.chain() {
        let s = cause.to_string();
        if text.contains(&s) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&s);
    }
    // std's io::Error appends " (os error 20)" to the system's words: a Rust detail.
    while let Some(i) = text.find(" (os error ") {
        match text[i..].find(')') {
            Some(j) => text.replace_range(i..i + j + 1, ""),
            None => break,
        }
    }
    if let Some(a) = err.downcast_ref::<Afterword>() {
        text.push('\n');
        text.push_str(&a.after);
    }
    (text, hint)
}
