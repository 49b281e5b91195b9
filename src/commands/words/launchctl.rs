//! The words of `launchctl/` (a failed call, a launchctl that cannot be used, a Host going to
//! `user/<uid>`) and of a `systemctl` that cannot be used.

use std::fmt::{self, Display, Formatter};

use crate::context::{Hints, Worded};
use crate::launchctl::{
    LaunchctlError, LocateError, NoGui, UserDomain, CONSOLE_VAR, MAX_TIMEOUT_SECS, OVERRIDE_VAR,
    SYSTEM_LAUNCHCTL, TIMEOUT_VAR,
};

impl Display for LaunchctlError {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let stderr = self.stderr.trim();
        write!(
            f,
            "`{}` exited with {}: {}",
            self.argv,
            self.code,
            if stderr.is_empty() {
                "(no output)"
            } else {
                stderr
            }
        )
    }
}

impl Display for LocateError {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(&self.said_with("oyster host start"))
    }
}

impl Worded for LocateError {
    fn words(&self, hints: &Hints) -> String {
        self.said_with(&hints.cmd("host start"))
    }
}

impl LocateError {
    /// Why launchctl cannot be used; `host_start` starts the Host directly instead.
    fn said_with(&self, host_start: &str) -> String {
        match self {
            LocateError::Off => format!(
                "launchctl is switched off ({OVERRIDE_VAR}=none): no LaunchAgent can be loaded here; `{host_start}` starts the Host directly"
            ),
            LocateError::BadTimeout(v) => format!(
                "{TIMEOUT_VAR} is {v:?}; give a whole number of seconds from 1 to {MAX_TIMEOUT_SECS}, or unset it"
            ),
            LocateError::BadOverride(v) => format!(
                "{OVERRIDE_VAR} is {v:?}, which is not an absolute path to an executable; fix or unset it"
            ),
            LocateError::Missing => format!(
                "launchctl was not found at {SYSTEM_LAUNCHCTL}; launchd is macOS-only. Use `{host_start}` for direct startup, or set {OVERRIDE_VAR} to a launchctl-compatible program"
            ),
        }
    }
}

impl Display for UserDomain {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let gui = self.gui;
        match self.why {
            NoGui::Code(code) => write!(
                f,
                "the GUI domain {gui} is not available (launchctl exit {code}; no console session?)"
            )?,
            NoGui::NotMine { owner, overridden } => {
                match owner {
                    0 => write!(f, "nobody is logged in at the console (it belongs to root)")?,
                    o => write!(
                        f,
                        "the console belongs to another user ({})",
                        crate::sys::user::name_of(o)
                            .map_or(format!("uid {o}"), |n| format!("{n}, uid {o}"))
                    )?,
                }
                if overridden {
                    write!(f, " ({CONSOLE_VAR}={owner})")?;
                }
                write!(
                    f,
                    ", so {gui} has no login session of this user to load the Host into (launchd would answer its bootstrap with a bare 5)"
                )?;
            }
        }
        write!(
            f,
            ", so using {user}: a Background session, where the login keychain is not \
             unlocked (a provider that keeps its credentials there fails), which launchd does not \
             load again after a reboot until this user logs in; the next console login does not \
             move it but loads a second copy into {gui} beside it (two Hosts for one port) until \
             `oyster restart` at the console boots this one out",
            user = gui.other()
        )
    }
}

impl Display for crate::systemd::LocateError {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        use crate::systemd::{LocateError, OVERRIDE_VAR, SYSTEM_SYSTEMCTL};
        match self {
            LocateError::Off => write!(f, "systemctl is switched off ({OVERRIDE_VAR}=none)"),
            LocateError::BadOverride(v) => write!(
                f,
                "{OVERRIDE_VAR} is {v:?}, not an absolute path to an executable"
            ),
            LocateError::Missing => write!(
                f,
                "systemctl was not found at {}",
                SYSTEM_SYSTEMCTL.join(" or ")
            ),
        }
    }
}
