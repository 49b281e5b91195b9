//! Exit statuses and the classification of errors into them.
//!
//! Domain modules return their own `thiserror` types; [`exit_status_of`] walks an `anyhow`
//! chain once, at the top, to decide between 1 (the operation failed) and 2 (the input was
//! invalid: bad flag, unsupported provider, corrupt config).

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

/// Invalid input described in a sentence that says what is wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

/// Decides the exit status for an error: 2 when any cause is an input error, else 1.
pub fn exit_status_of(err: &anyhow::Error) -> ExitStatus {
    let invalid = err.chain().any(|cause| {
        cause.is::<Invalid>()
            || cause.is::<crate::provider::registry::UnsupportedProvider>()
            || cause
                .downcast_ref::<crate::config::ConfigError>()
                .is_some_and(|e| e.is_invalid_input())
    });
    if invalid {
        ExitStatus::Invalid
    } else {
        ExitStatus::Failure
    }
}
