//! The words of the service verbs' run (`service::said`): a proof's failure, where a rollback
//! left the Host, the steps' progress and notes, and the refusals decided before anything is
//! written — in each manager's terms where launchd and systemd differ.

use std::fmt;

use crate::service::said::{Failure, Left, Refused, Restored, Rollback, Said};
use crate::service::{ManagerKind, Refusal};

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::ExitedBeforeHealth { pid, port } => write!(
                f,
                "the Host (pid {pid}) exited before answering /health on 127.0.0.1:{port}"
            ),
            Failure::HealthTimeout { last, port } => write!(
                f,
                "{} on 127.0.0.1:{port}",
                crate::verify::HealthFailure::Timeout(*last)
            ),
            Failure::NoNewInstance { secs, state } => {
                write!(
                    f,
                    "no new running instance within {secs} s (state = {state})"
                )
            }
            Failure::NotRunning { state } => write!(f, "the Host is not running ({state})"),
            Failure::DidNotStayUp {
                pid,
                became,
                settle_ms,
                respawned,
            } => {
                let became = became.map_or("none".into(), |p| p.to_string());
                let respawned = respawned.map_or(String::new(), |n| {
                    format!(", and launchd spawned it {n} more time(s)")
                });
                write!(
                    f,
                    "the Host did not stay up: pid {pid} became {became} within {settle_ms} ms of \
                     answering /health{respawned} (a crash loop?)"
                )
            }
            Failure::WrongPath { running, plist } => write!(
                f,
                "launchd runs the job from {}, not {}",
                running
                    .as_ref()
                    .map_or("(no path)".into(), |p| p.display().to_string()),
                plist.display()
            ),
            Failure::Unproven => f.write_str(
                "the environment is unproven: the kernel hides it and `oyster host exec` left no \
                 record for this process",
            ),
            Failure::Other(s) => f.write_str(s),
        }
    }
}

impl fmt::Display for Rollback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let launchd = self.manager == ManagerKind::Launchd;
        let (what, run, again) = match launchd {
            true => ("plist", "reloaded", "loads it again"),
            false => ("unit", "started", "starts it again"),
        };
        match &self.restored {
            Restored::KeptStopped { start } if launchd => write!(
                f,
                "the job was booted out and the plist `stop` left restored, not loaded: the Host \
                 stays stopped; `{start}` loads it again once the cause is fixed"
            ),
            Restored::KeptStopped { start } => write!(
                f,
                "the unit `stop` left was restored, not started: the Host stays stopped; \
                 `{start}` starts it once the cause is fixed"
            ),
            Restored::Runs { pid } => write!(
                f,
                "restored the last good {what}; the previous Host runs again (pid {pid})"
            ),
            Restored::NotVerified { failure } => write!(
                f,
                "restored and {run} the last good {what}, but it did not verify either: {failure}"
            ),
            Restored::Started => write!(f, "restored and {run} the last good {what}"),
            Restored::KeptGood { path, start } => {
                let (verified, stopped) = match launchd {
                    true => ("this definition", "the job was booted out"),
                    false => ("this unit", "it was stopped"),
                };
                write!(
                    f,
                    "{verified} verified before, so the failure is not the {what}'s: {stopped} \
                     and {} kept; `{start}` {again} once the cause is fixed",
                    path.display()
                )
            }
            Restored::Removed => {
                let stopped = if launchd { "booted out" } else { "stopped" };
                write!(
                    f,
                    "there was no earlier good {what}; the new one was {stopped} and removed"
                )
            }
        }
    }
}

impl fmt::Display for Said {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Said::Recovering { manager } => write!(
                f,
                "A previous oyster run stopped before its change verified; verifying now (and \
                 rolling back to the last good {} if it does not).",
                definition(*manager)
            ),
            Said::DirectTakenOver { pid } => write!(
                f,
                "the Host `oyster host start` ran (pid {pid}) was stopped; the systemd unit runs \
                 it from now on, on the same port"
            ),
            Said::DropIns { unit, paths } => {
                let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                write!(
                    f,
                    "drop-ins change {unit} beside oyster's unit ({}); the Host's environment is \
                     still the generated one",
                    shown.join(", ")
                )
            }
            Said::LingerOff { user } => write!(
                f,
                "linger is off for {user}: the Host stops when you log out; `loginctl \
                 enable-linger {user}` keeps it running"
            ),
            Said::DisabledAgain { job } => write!(
                f,
                "{job} is disabled again, as `stop` left it: the Host stays stopped at login"
            ),
            Said::NotDisabledAgain {
                manager,
                job,
                error,
                stop,
            } => {
                let login = match manager {
                    ManagerKind::Launchd => ": a login may load it;",
                    _ => ";",
                };
                write!(
                    f,
                    "the start failed and {job} could not be disabled again ({error}){login} \
                     `{stop}` keeps it stopped"
                )
            }
            launchd => said_by_launchd(launchd, f),
        }
    }
}

/// The lines only launchd's job says (its reloads, restarts and bootstraps).
fn said_by_launchd(said: &Said, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match said {
        Said::StaleDefinition => f.write_str(
            "launchd runs another definition than the plist on disk, which is what oyster \
             generates (written by `regenerate --no-restart`, or the loaded job was changed \
             behind oyster's back); reloading it.",
        ),
        Said::SwitchedOffAnyway { label, ignored } => {
            let why = match ignored {
                true => "--ignore-login-items was given",
                false => {
                    "it runs, so that answer alone is not taken as proof (for a plist a \
                     command-line tool wrote it is undocumented, and has been seen for a \
                     running job)"
                }
            };
            write!(
                f,
                "ServiceManagement says {label} is switched off in System Settings → General \
                 → Login Items (\"requires approval\"), but {why}: reloading it anyway; if \
                 launchd refuses the new definition, the Host stays down until it is \
                 switched on there"
            )
        }
        Said::FinishingStop { target } => write!(
            f,
            "{target} is still being booted out (a stop was interrupted); finishing that \
             first…"
        ),
        Said::OtherCopy {
            label,
            other,
            pid,
            here,
        } => write!(
            f,
            "{label} is also loaded in {other}{}; booting that copy out so that only the one \
             in {here} runs.",
            pid.map_or(String::new(), |p| format!(" (pid {p})"))
        ),
        restart => said_by_restart(restart, f),
    }
}

/// The lines of launchd's graceful restart and of its bootstraps.
fn said_by_restart(said: &Said, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match said {
        Said::Restarting {
            target,
            pid,
            grace_secs,
        } => write!(
            f,
            "Restarting {target}: SIGTERM to pid {pid}, waiting up to {grace_secs} s for it \
             to exit…"
        ),
        Said::Outlived { pid, grace_secs } => write!(
            f,
            "pid {pid} outlived SIGTERM by {grace_secs} s; killing it with `launchctl \
             kickstart -k` (SIGKILL)."
        ),
        Said::BootstrapRetrying {
            code,
            said,
            draining,
            secs,
        } => {
            let why = match draining {
                true => format!("the old job is still draining, retrying for up to {secs} s"),
                false => format!(
                    "the label is not loaded, retrying for up to {secs} s before looking for \
                     the cause"
                ),
            };
            write!(f, "launchctl bootstrap exited {code} ({said}); {why}…")
        }
        Said::FallingBack {
            gui,
            code,
            said,
            user,
        } => write!(
            f,
            "launchctl bootstrap {gui} exited {code} ({said}); retrying once in {user}."
        ),
        Said::InterruptedRestart { sig, old } => write!(
            f,
            "Interrupted by {sig}; the old Host (pid {old}) is already stopped, so oyster \
             finishes verifying the new one first…"
        ),
        _ => Ok(()),
    }
}

impl fmt::Display for Left {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Left::RestartVerified { old, new } => write!(
                f,
                "the restart had stopped the old Host (pid {old}); the new Host (pid {new}) runs \
                 and verified"
            ),
            Left::RestartUnverified {
                manager,
                old,
                failure,
                status,
            } => {
                let runs = match manager {
                    ManagerKind::Systemd => "systemd runs the same unit",
                    _ => "launchd runs the same definition",
                };
                write!(
                    f,
                    "the restart had stopped the old Host (pid {old}); {runs} again, but the new \
                     Host did not verify: {failure}; `{status}` shows it"
                )
            }
            Left::Uninstalled { label, plist } => write!(
                f,
                "{label} was booted out (launchd finishes stopping the Host) and {} removed; \
                 config and logs are kept",
                plist.display()
            ),
        }
    }
}

/// The definition a manager runs, as a rollback names it.
fn definition(manager: ManagerKind) -> &'static str {
    match manager {
        ManagerKind::Systemd => "unit",
        _ => "plist",
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = &self.stack;
        match &self.refusal {
            Refusal::PortHeld {
                port,
                pid,
                name: holder,
                stack,
            } => write!(
                f,
                "port {port} is already held by pid {pid} ({holder}{}); the Host of stack {name} \
                 could not listen there",
                stack
                    .as_ref()
                    .map_or(String::new(), |s| format!(", oyster stack {s}"))
            ),
            Refusal::PortInvisible { port } => {
                let sep = match self.manager {
                    ManagerKind::Launchd => {
                        ": no socket this user may inspect listens there, yet it cannot be bound;"
                    }
                    _ => ";",
                };
                write!(
                    f,
                    "port {port} is held by a process oyster cannot see (another user's?){sep} \
                     the Host of stack {name} could not listen there"
                )
            }
            Refusal::SwitchedOff { target } if self.manager != ManagerKind::Launchd => {
                write!(f, "{target} will not be loaded again by its manager")
            }
            Refusal::SwitchedOff { .. } => write!(
                f,
                "{} is loaded (it was loaded before it was switched off in System Settings → \
                 General → Login Items), and launchd will not load it again: this change would \
                 reload it and leave it unloaded, so launchd, the plist and config.json were \
                 left as they are",
                self.label
            ),
        }
    }
}

impl Refused {
    /// The fix.
    pub fn hint(&self) -> Option<String> {
        let name = &self.stack;
        Some(match &self.refusal {
            Refusal::PortHeld { .. } => format!(
                "stop that process (or give stack {name} another port with --port), then run again"
            ),
            Refusal::PortInvisible { port } => {
                let find = match self.manager {
                    ManagerKind::Launchd => format!("sudo lsof -nP -iTCP:{port} -sTCP:LISTEN"),
                    _ => format!("sudo ss -ltnp sport = :{port}"),
                };
                format!(
                    "find the holder as an administrator (`{find}`), or give stack {name} another \
                     port with --port"
                )
            }
            Refusal::SwitchedOff { .. } if self.manager != ManagerKind::Launchd => return None,
            Refusal::SwitchedOff { .. } => format!(
                "{}; or, if it is switched on there already, run the command again with \
                 --ignore-login-items",
                self.switch_on.clone().unwrap_or_default()
            ),
        })
    }
}

impl From<Refused> for crate::error::Failed {
    fn from(r: Refused) -> Self {
        crate::error::Failed {
            msg: r.to_string(),
            hint: r.hint(),
        }
    }
}

impl fmt::Display for crate::service::said::NotVerified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tail = self
            .tail
            .as_deref()
            .unwrap_or("(the Host wrote nothing to its log during this attempt)");
        let mut next = format!("`{} -f` follows the Host log", self.logs);
        if let Some(restart) = &self.restart {
            next.push_str(&format!(
                "; `{restart} --wait 60` gives the Host longer to answer"
            ));
        }
        if let Some(status) = &self.status {
            next.push_str(&format!("; `{status}` shows the unit"));
        }
        write!(
            f,
            "the Host did not verify: {}\n--- this attempt's last lines of {} ---\n{}\nnext: {next}",
            self.failure,
            self.log.display(),
            tail.trim_end()
        )
    }
}

impl fmt::Display for crate::service::said::Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::service::said::{Declined, RefusedBecause};
        match self {
            Declined::Root { manager } => {
                let why = match manager {
                    ManagerKind::Systemd => {
                        "a systemd user unit for root would run the Host as root"
                    }
                    _ => {
                        "root has no gui/0 session, and a job loaded in user/0 would run the Host \
                         as root"
                    }
                };
                write!(f, "oyster runs as root: {why}")
            }
            Declined::LinkedUnit { path, .. } => write!(
                f,
                "{} is a symlink: the disable that keeps the Host stopped at the next login \
                 (`systemctl --user disable`) would remove it; nothing was stopped",
                crate::output::one_line(path)
            ),
            Declined::DropIns { unit, found, .. } => {
                let said: Vec<String> = found
                    .iter()
                    .map(|(p, keys)| {
                        let keys: Vec<String> = keys.iter().map(|k| format!("{k}=")).collect();
                        format!("{} sets {}", crate::output::one_line(p), keys.join(", "))
                    })
                    .collect();
                write!(
                    f,
                    "a drop-in overrides {unit}: {}; the Host would run with what it says, not \
                     the environment oyster generates, and could not be verified (nothing was \
                     changed)",
                    said.join("; ")
                )
            }
            Declined::Unreachable(u) => write!(f, "{u}; nothing was changed"),
            Declined::StillDisabled { target } => write!(
                f,
                "launchd says {target} is disabled (bootstrap exit 119) even after `launchctl \
                 enable`"
            ),
            Declined::Bootstrap(b) => {
                write!(
                    f,
                    "`launchctl bootstrap {} {}` exited {}: {}",
                    b.domain,
                    b.plist.display(),
                    b.code,
                    b.stderr.trim()
                )?;
                if let Some(secs) = b.retried_secs {
                    write!(f, " (after {secs:.1} s of retries)")?;
                }
                match &b.why {
                    RefusedBecause::StillDraining => write!(
                        f,
                        "; {} is still loaded: launchd did not finish booting the old job out",
                        b.target
                    ),
                    RefusedBecause::Cause { what, .. } => {
                        write!(f, "; launchd refused it because {what}")
                    }
                    RefusedBecause::NoReason { .. } => f.write_str(
                        "; launchd refused it and gave no reason (it is not disabled, not \
                         switched off in Login Items, its session types, owner and mode and its \
                         log directory are right)",
                    ),
                    RefusedBecause::LoadedElsewhere | RefusedBecause::Other { .. } => Ok(()),
                }
            }
            Declined::NoNewInstance { target, secs } => write!(
                f,
                "launchd did not start a new instance of {target} within {secs} s of the old \
                 one's exit (kickstart kept answering 37, already running)"
            ),
        }
    }
}

impl fmt::Display for crate::service::said::Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stack {} has a systemd unit ({}), but no systemd user manager answers `{} --user` \
             ({}): whether it runs the Host cannot be told, and the unit cannot be changed from \
             here",
            self.stack,
            crate::output::one_line(&self.unit),
            self.systemctl.display(),
            self.why
        )
    }
}

impl crate::service::said::Declined {
    /// The fix.
    pub fn hint(&self) -> Option<String> {
        use crate::service::said::{Declined, RefusedBecause};
        Some(match self {
            Declined::Root { manager } => match manager {
                ManagerKind::Systemd => {
                    "run oyster as the user whose Host it is, without sudo".into()
                }
                _ => "run oyster as the user whose Host it is, without sudo (a .pkg runs it with \
                      `sudo -u <user>`)"
                    .into(),
            },
            Declined::LinkedUnit { keep, .. } => format!(
                "`{keep}` stops it until the next login without disabling it; or replace the link \
                 with the file it points to, then stop again"
            ),
            Declined::DropIns { unit, keys, .. } => format!(
                "remove it (`systemctl --user revert {unit}` removes every drop-in of the unit), \
                 or keep only settings other than {}, then run again",
                keys.iter()
                    .map(|k| format!("{k}="))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Declined::Unreachable(u) => format!(
                "run oyster in {user}'s login session, where systemd --user runs \
                 (`XDG_RUNTIME_DIR=/run/user/{uid}`); `loginctl enable-linger {user}` keeps the \
                 manager running without one",
                user = u.user,
                uid = u.uid
            ),
            Declined::StillDisabled { target } => {
                format!("run `launchctl enable {target}` yourself and try again")
            }
            Declined::Bootstrap(b) => match &b.why {
                RefusedBecause::LoadedElsewhere => {
                    "the label is loaded from another plist: `launchctl bootout` it, then run again"
                        .into()
                }
                RefusedBecause::StillDraining => format!(
                    "`launchctl print {}` shows its state; run the command again once it is gone",
                    b.target
                ),
                RefusedBecause::Cause { fix, .. } => fix.clone(),
                RefusedBecause::NoReason { hint } => hint.clone(),
                RefusedBecause::Other { doctor } => {
                    format!("run `{doctor}` to see what launchd refuses")
                }
            },
            Declined::NoNewInstance { .. } => return None,
        })
    }
}

impl From<crate::service::said::Declined> for crate::error::Failed {
    fn from(d: crate::service::said::Declined) -> Self {
        crate::error::Failed {
            msg: d.to_string(),
            hint: d.hint(),
        }
    }
}

impl From<crate::service::said::Declined> for crate::error::Invalid {
    fn from(d: crate::service::said::Declined) -> Self {
        crate::error::Invalid {
            msg: d.to_string(),
            hint: d.hint(),
        }
    }
}
