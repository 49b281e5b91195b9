//! launchctl's exit codes, typed: each as real launchctl prints it, with its public source in
//! docs/launchd.md.

use super::NOT_LOADED;

/// What a launchctl exit code means, as far as oyster acts on it (the table in the project's
/// launchd reference: each code as real launchctl prints it, with its public source).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Ok,
    /// 3 (ESRCH): bootout of a label that is not loaded; `kill` of a loaded job with no process.
    NoSuchProcess,
    /// 5 (EIO): bootstrap of a label already loaded or still draining, disabled (as a normal
    /// user), switched off in Login Items, or refused for its session type.
    InputOutput,
    /// 36 (EINPROGRESS): a bootout still going on; keep polling.
    InProgress,
    /// 37 (EALREADY): kickstart of a job launchd counts as running; bootstrap racing a bootout.
    AlreadyRunning,
    /// 64: usage error.
    Usage,
    /// 112: no such domain (no console session for `gui/<uid>`).
    NoDomain,
    /// 113: the label is not loaded in that domain.
    NotLoaded,
    /// 119: `Service is disabled`.
    Disabled,
    /// 122: the plist has bad ownership or permissions.
    BadOwnership,
    /// 125: the domain does not support the action (no GUI session).
    DomainUnsupported,
    /// 134: the service cannot load in the requested session.
    WrongSession,
    Other(i32),
}

impl From<i32> for Code {
    fn from(c: i32) -> Code {
        match c {
            0 => Code::Ok,
            3 => Code::NoSuchProcess,
            5 => Code::InputOutput,
            36 => Code::InProgress,
            37 => Code::AlreadyRunning,
            64 => Code::Usage,
            112 => Code::NoDomain,
            NOT_LOADED => Code::NotLoaded,
            119 => Code::Disabled,
            122 => Code::BadOwnership,
            125 => Code::DomainUnsupported,
            134 => Code::WrongSession,
            other => Code::Other(other),
        }
    }
}

impl Code {
    /// The number launchctl exited with.
    pub fn number(self) -> i32 {
        match self {
            Code::Ok => 0,
            Code::NoSuchProcess => 3,
            Code::InputOutput => 5,
            Code::InProgress => 36,
            Code::AlreadyRunning => 37,
            Code::Usage => 64,
            Code::NoDomain => 112,
            Code::NotLoaded => NOT_LOADED,
            Code::Disabled => 119,
            Code::BadOwnership => 122,
            Code::DomainUnsupported => 125,
            Code::WrongSession => 134,
            Code::Other(c) => c,
        }
    }

    /// The domain itself is not there for this caller (no console session, over SSH).
    pub fn domain_missing(self) -> bool {
        matches!(self, Code::NoDomain | Code::DomainUnsupported)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.number())
    }
}
