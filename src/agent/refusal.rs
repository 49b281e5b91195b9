//! Why launchd refused a `bootstrap` with a bare 5 ("Input/output error") while the label is
//! not loaded. For a non-root user launchd says 5 for many causes (docs/launchd.md, "Exit
//! codes"): the cheap discriminators run in this order, and the first that holds is named
//! with its fix: the label's disabled override (`print-disabled`), the Login Items switch, the
//! plist's `LimitLoadToSessionType` against the domain's session, the owner and mode of the
//! plist and of its directory, the log directory. `None` means none holds: launchd refused it
//! and gave no reason.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::login_items::{self, LoginItem};
use crate::launchctl::{Domain, Launchctl};
use crate::output::shell_word;

/// One cause of a refusal, with its fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// What holds, as a clause: "launchd has … disabled".
    pub what: String,
    /// What to do, as an imperative sentence.
    pub fix: String,
}

/// The first cause that holds for `label` refused in `domain` from `plist`. `regenerate` is
/// the command that writes the plist again, as the user would type it.
pub fn first_cause(
    lc: &Launchctl,
    domain: Domain,
    label: &str,
    plist: &Path,
    regenerate: &str,
) -> Option<Cause> {
    disabled(lc, domain, label)
        .or_else(|| login_item(lc, plist))
        .or_else(|| session_type(domain, plist, regenerate))
        .or_else(|| ownership(plist))
        .or_else(|| log_dir(plist, regenerate))
}

/// What launchctl says when a richer error is to be had as root (to a caller that is not).
const ROOT_ADVICE: &str = "re-running the command as root for richer errors";

/// The hint when launchd refused a bootstrap and gave no reason (issue 39 item 7), in a form
/// this user can follow. `log show` refuses a user who is not an administrator, so one who
/// is not is told an administrator's `sudo` command; launchctl's own advice (`Try re-running
/// the command as root for richer errors.`), when its `stderr` gave it, is kept as the command
/// it means. `doctor` is how the user types `oyster doctor`.
pub fn no_reason_hint(
    stderr: &str,
    domain: Domain,
    plist: &Path,
    doctor: &str,
    admin: bool,
) -> String {
    let log = "log show --last 5m --predicate 'process == \"launchd\"'";
    let mut hint = if admin {
        format!("`{log}` shows launchd's own reason")
    } else {
        format!("an administrator can see launchd's own reason with `sudo {log}` (`log show` refuses a user who is not one)")
    };
    if stderr.contains(ROOT_ADVICE) {
        hint += &format!(
            "; launchctl's own advice, re-running it as root for a richer error, is `sudo launchctl bootstrap {domain} {}`{}",
            shell_word(&plist.to_string_lossy()),
            if admin { "" } else { " (also an administrator's)" }
        );
    }
    hint + &format!("; `{doctor}` checks the rest")
}

fn disabled(lc: &Launchctl, domain: Domain, label: &str) -> Option<Cause> {
    let target = domain.target(label);
    let off = lc.disabled(&domain, label).ok().flatten()?;
    off.then(|| Cause {
        what: format!("launchd has {target} disabled (`launchctl print-disabled {domain}`), although oyster enabled it just before"),
        fix: format!("run `launchctl enable {target}` and try again; if it is disabled again, a configuration profile (MDM) disables it"),
    })
}

/// The Login Items state, when it is "switched off" (a state that is unknown is no cause).
pub fn login_item(lc: &Launchctl, plist: &Path) -> Option<Cause> {
    if login_items::status(lc, plist) != Ok(LoginItem::RequiresApproval) {
        return None;
    }
    Some(Cause {
        what: "the agent is switched off in System Settings → General → Login Items (\"Allow in the Background\"), or was never approved, so launchd will not load it; `launchctl enable` does not change that".to_owned(),
        fix: login_items::fix(&program(plist)),
    })
}

/// The program the installed plist runs (its `ProgramArguments[0]`), for naming the item.
fn program(plist: &Path) -> String {
    read(plist)
        .and_then(|a| a.program_arguments.first().cloned())
        .unwrap_or_else(|| "oyster".to_owned())
}

fn read(plist: &Path) -> Option<crate::host::plist::LaunchAgent> {
    let bytes = crate::sys::fs::read_regular(plist, crate::host::plist::MAX_PLIST_BYTES).ok()??;
    crate::host::plist::LaunchAgent::parse(&bytes).ok()
}

fn session_type(domain: Domain, plist: &Path, regenerate: &str) -> Option<Cause> {
    let agent = read(plist)?;
    let mut types = agent.limit_load_to_session_type.clone();
    if types.is_empty() {
        // A one-string value is kept as found; none at all means Aqua only (TN2083).
        match agent
            .other
            .get("LimitLoadToSessionType")
            .and_then(plist::Value::as_string)
        {
            Some(t) => types.push(t.to_owned()),
            None => types.push("Aqua".to_owned()),
        }
    }
    let session = match domain {
        Domain::Gui(_) => "Aqua",
        Domain::User(_) => "Background",
    };
    (!types.iter().any(|t| t == session)).then(|| Cause {
        what: format!(
            "the plist's LimitLoadToSessionType ({}) does not include {session}, the session of {domain}",
            types.join(", ")
        ),
        fix: format!("run `{regenerate}`, which writes it with every session type"),
    })
}

/// launchd refuses a plist that is a symlink, is not the user's, or that group or others may
/// write (launchctl(1)); the directory that holds it by the same rule **[unverified]**.
fn ownership(plist: &Path) -> Option<Cause> {
    let me = crate::sys::user::uid();
    let meta = std::fs::symlink_metadata(plist).ok()?;
    let shown = plist.display();
    if meta.file_type().is_symlink() {
        return Some(Cause {
            what: format!("{shown} is a symbolic link, which launchd refuses"),
            fix:
                "replace it by the file itself (`oyster agent regenerate` writes one) and try again"
                    .to_owned(),
        });
    }
    let bad = |m: &std::fs::Metadata| m.uid() != me || m.mode() & 0o022 != 0;
    let describe =
        |m: &std::fs::Metadata| format!("owner uid {}, mode {:o}", m.uid(), m.mode() & 0o7777);
    if bad(&meta) {
        return Some(Cause {
            what: format!(
                "{shown} has an owner or mode launchd refuses ({}): it must be yours (uid {me}) and not writable by group or others",
                describe(&meta)
            ),
            fix: format!("run `chmod go-w {shown}` (and `chown` it to yourself if it is not yours), then try again"),
        });
    }
    let dir = plist.parent()?;
    let dmeta = std::fs::metadata(dir).ok()?;
    bad(&dmeta).then(|| Cause {
        what: format!(
            "{}, the plist's directory, has an owner or mode launchd refuses ({}): it must be yours (uid {me}) and not writable by group or others",
            dir.display(),
            describe(&dmeta)
        ),
        fix: format!(
            "run `chmod go-w {}` (and `chown` it to yourself if it is not yours), then try again",
            dir.display()
        ),
    })
}

fn log_dir(plist: &Path, regenerate: &str) -> Option<Cause> {
    let agent = read(plist)?;
    let logs: Vec<String> = [agent.standard_out_path, agent.standard_error_path]
        .into_iter()
        .flatten()
        .collect();
    logs.iter().find_map(|log| {
        let dir = Path::new(log).parent()?;
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => None,
            Ok(_) => Some(Cause {
                what: format!("the log directory {} is not a directory", dir.display()),
                fix: format!(
                    "move what is at {} away, then run `{regenerate}` (it creates the directory)",
                    dir.display()
                ),
            }),
            Err(_) => Some(Cause {
                what: format!(
                    "the log directory {} of the plist's {log} does not exist",
                    dir.display()
                ),
                fix: format!(
                    "run `{regenerate}` (it creates the directory) or `mkdir -p {}`",
                    dir.display()
                ),
            }),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plist(dir: &Path, extra: &str) -> std::path::PathBuf {
        let p = dir.join("com.oysterun.host.t.plist");
        let xml = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict><key>Label</key><string>com.oysterun.host.t</string><key>ProgramArguments</key><array><string>/usr/local/bin/oyster</string></array>{extra}</dict></plist>\n"
        );
        std::fs::write(&p, xml).unwrap();
        p
    }

    /// Issue 39 item 7: `log show` needs an administrator, so a user who is not one gets the
    /// `sudo` form as an administrator's command; launchctl's advice to retry as root, when it
    /// gave it, is kept as the command it means (the plist quoted as one word).
    #[test]
    fn the_no_reason_hint_is_one_a_standard_user_can_follow() {
        let plist = Path::new("/Users/a b/Library/LaunchAgents/com.oysterun.host.plist");
        let five = "Bootstrap failed: 5: Input/output error\nTry re-running the command as root for richer errors.\n";
        let standard = no_reason_hint(five, Domain::Gui(501), plist, "oyster doctor", false);
        assert!(
            standard.starts_with(
                "an administrator can see launchd's own reason with `sudo log show --last 5m"
            ),
            "{standard}"
        );
        assert!(standard.contains("`sudo launchctl bootstrap gui/501 '/Users/a b/Library/LaunchAgents/com.oysterun.host.plist'` (also an administrator's)"), "{standard}");
        assert!(
            standard.ends_with("; `oyster doctor` checks the rest"),
            "{standard}"
        );
        let admin = no_reason_hint(five, Domain::Gui(501), plist, "oyster doctor", true);
        assert!(admin.starts_with("`log show --last 5m"), "{admin}");
        assert!(!admin.contains("also an administrator's"), "{admin}");
        // As root launchctl gives no such advice, and none is made up.
        let root = no_reason_hint(
            "Bootstrap failed: 5: Input/output error\n",
            Domain::Gui(501),
            plist,
            "oyster doctor",
            true,
        );
        assert!(!root.contains("launchctl bootstrap"), "{root}");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
    }

    #[test]
    fn session_types_are_read_as_launchd_reads_them() {
        let d = tempfile::tempdir().unwrap();
        let gui = Domain::Gui(501);
        let user = Domain::User(501);
        // None: Aqua only, refused in user/<uid>.
        let p = plist(d.path(), "");
        assert!(session_type(gui, &p, "R").is_none());
        let c = session_type(user, &p, "R").unwrap();
        assert!(
            c.what.contains("(Aqua) does not include Background"),
            "{c:?}"
        );
        assert!(c.fix.contains("`R`"));
        // A one-string value, and an array.
        let p = plist(
            d.path(),
            "<key>LimitLoadToSessionType</key><string>Background</string>",
        );
        assert!(session_type(gui, &p, "R").is_some());
        assert!(session_type(user, &p, "R").is_none());
        let p = plist(d.path(), "<key>LimitLoadToSessionType</key><array><string>Aqua</string><string>Background</string></array>");
        assert!(session_type(gui, &p, "R").is_none() && session_type(user, &p, "R").is_none());
    }

    #[test]
    fn a_missing_log_directory_is_named_with_its_fix() {
        let d = tempfile::tempdir().unwrap();
        let logs = d.path().join("logs");
        let p = plist(
            d.path(),
            &format!(
                "<key>StandardOutPath</key><string>{}/host.log</string>",
                logs.display()
            ),
        );
        let c = log_dir(&p, "R").unwrap();
        assert!(c.what.contains("does not exist"), "{c:?}");
        assert!(c.fix.contains("mkdir -p"), "{c:?}");
        std::fs::write(&logs, "").unwrap();
        assert!(log_dir(&p, "R")
            .unwrap()
            .what
            .contains("is not a directory"));
        std::fs::remove_file(&logs).unwrap();
        std::fs::create_dir(&logs).unwrap();
        assert!(log_dir(&p, "R").is_none());
    }

    #[test]
    fn a_group_writable_plist_or_directory_is_named() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = plist(d.path(), "");
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(ownership(&p).is_none());
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o664)).unwrap();
        assert!(ownership(&p).unwrap().what.contains("mode 664"));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(ownership(&p)
            .unwrap()
            .what
            .contains("the plist's directory"));
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    }
}
