//! The words of setup's typed sentences ([`crate::setup::Said`]).

use std::fmt;

use crate::setup::hooks::{PREPARE_RESTORE, SHOW_QR};
use crate::setup::login::MODULE;
use crate::setup::Said;

impl fmt::Display for Said {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Said::UnreadableReceipt { path, why } => write!(
                f,
                "an earlier setup left {}, which oyster cannot take back ({why}); nothing was changed",
                path.display()
            ),
            Said::RemoveReceipt { path } => write!(
                f,
                "look at what it lists, put back by hand what needs it, then remove it: `rm {}`",
                path.display()
            ),
            Said::PartlyTakenBack { said, path } => write!(
                f,
                "an earlier setup, cut short, was taken back only in part ({}); {} is kept for the next setup",
                said.join("; "),
                path.display()
            ),
            Said::TookBackWhileWaiting { said } => write!(
                f,
                "an earlier setup, cut short, was taken back while this one waited ({}); this setup's plan was made before that, so it changed nothing else",
                said.join("; ")
            ),
            Said::ChangedWhileWaiting { stack } => write!(
                f,
                "another oyster changed stack {stack} while this setup waited for it (its config.json is not the one this setup's plan was made from), so this setup changed nothing"
            ),
            Said::HostChangedWhileWaiting { stack, record } => write!(
                f,
                "another oyster started, stopped or installed the Host of stack {stack} while this setup waited for it ({} is not the one this setup's plan was made from), so this setup changed nothing",
                record.display()
            ),
            Said::RunAgain { setup } => write!(f, "run `{setup}` again"),
            Said::JobPutBack { pid, port } => write!(
                f,
                "put the job back on the config it had: Host verified on port {port} (pid {pid})"
            ),
            Said::RemovedCreated { removed } => write!(
                f,
                "removed {removed} file(s) and empty director(ies) it had created"
            ),
            Said::AgentFolderNotAbsolute { given } => write!(
                f,
                "--agent-folder {given:?} is not a full path; give an absolute path or one starting with ~/"
            ),
            Said::StartedDirectly { pid, health_ms } => write!(
                f,
                "Host started directly: pid {pid}, /health 200 after {health_ms} ms, environment verified."
            ),
            Said::PasswordTooLong { .. } | Said::StdinIsTerminal | Said::PipeItInOrAsk | Said::PasswordNotUtf8 | Said::StdinEmpty | Said::PipeItIn | Said::NoPasswordModule { .. } | Said::HashFailed { .. } | Said::CheckInstall => login(self, f),
            Said::NoQrEntry { .. } | Said::QrUnavailable { .. } | Said::NoRestoreEntry { .. } | Said::PreparingRestore { .. } | Said::RestoreFailed { .. } => hooks(self, f),
        }
    }
}

/// The Host login's words (`setup/login.rs`).
fn login(said: &Said, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match said {
            Said::PasswordTooLong { cap } => write!(
                f,
                "the Host password is longer than {cap} bytes; nothing was changed"
            ),
            Said::StdinIsTerminal => f.write_str(
                "--password-stdin reads the password from a pipe, and stdin is this terminal, where what you type would show; nothing was changed",
            ),
            Said::PipeItInOrAsk => write!(
                f,
                "{}, or run `oyster setup` without it on a terminal: it asks for the password hidden, twice, while none is set",
                Said::PipeItIn
            ),
            Said::PasswordNotUtf8 => {
                f.write_str("--password-stdin: the password is not UTF-8; nothing was changed")
            }
            Said::StdinEmpty => {
                f.write_str("--password-stdin: stdin held no password; nothing was changed")
            }
            Said::PipeItIn => f.write_str(
                "pipe it in: `printf '%s\\n' \"$PASSWORD\" | oyster setup --password-stdin`",
            ),
            Said::NoPasswordModule { root } => write!(
                f,
                "this Oysterun ({}) has no {MODULE}, so oyster cannot hash a password the way it does",
                root.display()
            ),
            Said::HashFailed { module, code, said } => write!(
                f,
                "{} could not hash the Host password (exit {code}): {said}; nothing was changed",
                module.display()
            ),
            Said::CheckInstall => f.write_str(
                "check that the Oysterun install is complete (`npm install -g oysterun`)",
            ),
        _ => Ok(()),
    }
}

/// The service hooks' words (`setup/hooks.rs`).
fn hooks(said: &Said, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match said {
        Said::NoQrEntry { root } => write!(
            f,
            "no login QR: {} has no {SHOW_QR} (this Oysterun is older than 1.5)",
            root.display()
        ),
        Said::QrUnavailable { why, port } => write!(
            f,
            "no login QR for this Host ({why}); log in at http://127.0.0.1:{port} instead"
        ),
        Said::NoRestoreEntry { root } => write!(
            f,
            "sessions not prepared for restore: {} has no {PREPARE_RESTORE}; restarting without it",
            root.display()
        ),
        Said::PreparingRestore { secs } => write!(
            f,
            "Preparing the Host's sessions for restore ({PREPARE_RESTORE}, up to {secs} s)…"
        ),
        Said::RestoreFailed { why } => write!(
            f,
            "preparing the restart restore failed: {why}; restarting without restored sessions"
        ),
        _ => Ok(()),
    }
}
