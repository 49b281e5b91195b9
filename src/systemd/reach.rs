//! Whether a user manager answers, and what else decides whether a user service is worth
//! installing: linger, WSL.
//!
//! The probe is `systemctl --user show -p SystemState --value` (`running` or `degraded` =
//! usable, as home-manager decides): `is-system-running` prints `offline` against a running
//! manager when the caller's mount namespace lacks `/run/systemd/system` (measured). A
//! failure is typed by what systemctl said ([`Cause`]); the sentence is the caller's.

use std::path::Path;

use super::Systemctl;
use crate::sys::process::{ChildEnv, Program};

/// A user manager that can take a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManagerState {
    Running,
    /// Running, with some unit failed.
    Degraded,
}

/// Why no user manager can be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// Neither `$XDG_RUNTIME_DIR/systemd/private` nor a user bus answers ("Failed to connect
    /// to bus": no manager, `XDG_RUNTIME_DIR` stripped, a container).
    NoBus,
    /// `XDG_RUNTIME_DIR` (given or defaulted) is not a directory (no login session: `su`,
    /// `sudo`, cron).
    NoRuntimeDir,
    /// The manager is another user's ("Permission denied", "Operation not permitted").
    PermissionDenied,
    /// WSL, where systemd runs only with `[boot] systemd=true` in `/etc/wsl.conf`.
    WslWithoutSystemd,
    /// A manager answered with this state (`starting`, `stopping`, `maintenance`, …).
    NotRunning(String),
    /// systemctl failed otherwise (could not be run, timed out, said something unknown).
    Failed,
}

/// How long a manager that is still coming up is waited for.
pub const STARTING_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cause::NoBus => f.write_str("no user manager bus"),
            Cause::NoRuntimeDir => f.write_str("no runtime directory"),
            Cause::PermissionDenied => f.write_str("permission denied"),
            Cause::WslWithoutSystemd => f.write_str("WSL without systemd"),
            Cause::NotRunning(state) => write!(f, "the user manager is {state}"),
            Cause::Failed => f.write_str("systemctl failed"),
        }
    }
}

/// No usable user manager: why, and what systemctl (or the check) said, for the caller to
/// quote.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("systemd --user is unreachable: {cause}")]
pub struct Unreachable {
    pub cause: Cause,
    /// systemctl's own words (its stderr, trimmed), or the runtime directory checked.
    pub detail: String,
}

impl Systemctl {
    /// Whether a user manager answers at [`Systemctl::runtime_dir`], in one call (none when
    /// the runtime directory is missing): `running`/`degraded` is a usable manager;
    /// `initializing` or `starting` (a login a moment ago) is asked again for up to
    /// [`STARTING_WAIT`].
    pub fn manager_state(&self) -> Result<ManagerState, Unreachable> {
        let unreachable = |cause: Cause, detail: String| {
            let cause = match cause {
                Cause::NoBus | Cause::NoRuntimeDir if is_wsl() => Cause::WslWithoutSystemd,
                c => c,
            };
            Unreachable { cause, detail }
        };
        if !self.runtime_dir.is_dir() {
            return Err(unreachable(
                Cause::NoRuntimeDir,
                self.runtime_dir.display().to_string(),
            ));
        }
        let args = ["show", "--property=SystemState", "--value"];
        // A manager that is still coming up (a login a moment ago) is waited for, bounded.
        let until = std::time::Instant::now() + STARTING_WAIT;
        loop {
            let f = self
                .call(&args, self.query_timeout)
                .map_err(|e| unreachable(Cause::Failed, e.to_string()))?;
            if f.code != 0 {
                let said = f.stderr.trim().to_owned();
                return Err(unreachable(classify(&said), said));
            }
            match f.stdout.trim() {
                "running" => return Ok(ManagerState::Running),
                "degraded" => return Ok(ManagerState::Degraded),
                "initializing" | "starting" if std::time::Instant::now() < until => {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                other => {
                    return Err(unreachable(
                        Cause::NotRunning(other.to_owned()),
                        other.to_owned(),
                    ))
                }
            }
        }
    }

    /// `loginctl show-user USER -p Linger --value`: whether `user`'s manager outlives their
    /// last session. `None` when loginctl is missing, fails (no logind) or says something else.
    pub fn linger(&self, user: &str) -> Option<bool> {
        let loginctl = self.loginctl()?;
        if user.is_empty() || user.starts_with('-') {
            return None;
        }
        let f = Program::new(loginctl)
            .args(["show-user", user, "--property=Linger", "--value"])
            .env(ChildEnv::Inherit)
            .timeout(self.query_timeout)
            .run()
            .ok()?;
        match (f.code, f.stdout.trim()) {
            (0, "yes") => Some(true),
            (0, "no") => Some(false),
            _ => None,
        }
    }
}

/// The cause systemctl's stderr names.
pub fn classify(stderr: &str) -> Cause {
    if stderr.contains("Permission denied") || stderr.contains("Operation not permitted") {
        Cause::PermissionDenied
    } else if stderr.contains("Failed to connect to bus")
        || stderr.contains("Transport endpoint is not connected")
    {
        Cause::NoBus
    } else {
        Cause::Failed
    }
}

/// Running under WSL: the kernel release (`/proc/sys/kernel/osrelease`, what `uname -r`
/// prints) names Microsoft (`4.4.0-19041-Microsoft` on WSL1, `…-microsoft-standard-WSL2`).
pub fn is_wsl() -> bool {
    crate::sys::fs::read_regular(Path::new("/proc/sys/kernel/osrelease"), 256)
        .ok()
        .flatten()
        .is_some_and(|b| is_wsl_release(&String::from_utf8_lossy(&b)))
}

/// Whether a kernel release string is WSL's.
pub fn is_wsl_release(release: &str) -> bool {
    release.to_ascii_lowercase().contains("microsoft")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systemctl_failures_are_typed_by_what_it_said() {
        // Measured against systemd 252 (the test manager of tests/it/common/user_manager.rs).
        let cases = [
            (
                "Failed to connect to bus: No such file or directory",
                Cause::NoBus,
            ),
            ("Failed to connect to bus: No medium found", Cause::NoBus),
            (
                "Failed to connect to bus: Permission denied",
                Cause::PermissionDenied,
            ),
            (
                "Failed to get properties: Transport endpoint is not connected",
                Cause::NoBus,
            ),
            (
                "Failed to connect to bus: Operation not permitted",
                Cause::PermissionDenied,
            ),
            ("something new", Cause::Failed),
        ];
        for (said, want) in cases {
            assert_eq!(classify(said), want, "{said}");
        }
    }

    #[test]
    fn wsl_is_recognised_by_its_kernel_release() {
        assert!(is_wsl_release("4.4.0-19041-Microsoft"));
        assert!(is_wsl_release("5.15.153.1-microsoft-standard-WSL2\n"));
        assert!(!is_wsl_release("6.1.0-18-amd64"));
    }
}
