//! What one run does to launchd's job, decided once.

use super::Written;

/// What one run does to launchd's job: decided once in [`Agent::apply`], from the definition
/// written, whether a restart was asked for, and whether an earlier run died before its change
/// verified. Every later step (the change itself, and what a failed verification does) reads
/// this one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Change {
    /// The loaded job already runs this definition and nothing asks for more: verify only.
    Unchanged,
    /// The same definition, restarted gracefully (`restart`); a failure has nothing to roll
    /// back to.
    Restart,
    /// A new or changed definition: boot out, bootstrap; a failure rolls back.
    Reload,
    /// An earlier run died before its change verified: this one takes the step the change
    /// still needs, verifies, and rolls back to the last good plist when it does not.
    Recover(Then),
}

/// The step a [`Change::Recover`] still takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Then {
    Verify,
    Restart,
    Reload,
}

impl Change {
    pub(super) fn decide(written: &Written, force_restart: bool, pending: bool) -> Change {
        let then = match (written.reload, force_restart) {
            (true, _) => Then::Reload,
            (false, true) => Then::Restart,
            (false, false) => Then::Verify,
        };
        match (pending, then) {
            (true, then) => Change::Recover(then),
            (false, Then::Reload) => Change::Reload,
            (false, Then::Restart) => Change::Restart,
            (false, Then::Verify) => Change::Unchanged,
        }
    }

    /// The step this change takes on launchd before verifying.
    pub(super) fn then(self) -> Then {
        match self {
            Change::Unchanged => Then::Verify,
            Change::Restart => Then::Restart,
            Change::Reload => Then::Reload,
            Change::Recover(then) => then,
        }
    }

    /// Whether a failed verification rolls the definition back (else it is said, and the job
    /// stays as it is: nothing about the definition changed).
    pub(super) fn rolls_back(self) -> bool {
        matches!(self, Change::Reload | Change::Recover(_))
    }
}
