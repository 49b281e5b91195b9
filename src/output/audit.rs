//! The append-only audit log `<log dir>/service-control.jsonl`: one JSON line per lifecycle step
//! and outcome, rotated at 1 MiB (one old file, `service-control.jsonl.1`, kept). Operators
//! rely on it (Oysterun's scripts keep one). No secrets go in: actions, steps, outcomes, pids
//! and launchctl/verification messages only.

use std::io::Write;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;

/// The lifecycle command a record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Install,
    Regenerate,
    Restart,
    Start,
    Stop,
    Kill,
    Uninstall,
    Setup,
    /// The launch program (`host exec`), once per launch.
    Exec,
    /// `oyster env set|unset` (the name only, never the value).
    Env,
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The same words as in the log's JSON.
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(s)) => f.write_str(&s),
            _ => f.write_str("?"),
        }
    }
}

/// One step of an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    WritePlist,
    /// The systemd unit file written.
    WriteUnit,
    /// `systemctl --user daemon-reload`.
    DaemonReload,
    /// `systemctl --user start`.
    Start,
    /// `systemctl --user stop`.
    Stop,
    /// `systemctl --user restart`.
    Restart,
    Enable,
    Disable,
    Bootout,
    Bootstrap,
    Kickstart,
    /// `kickstart -k`: SIGKILL, when SIGTERM was not enough.
    KickstartK,
    Sigterm,
    Verify,
    Rollback,
    RemovePlist,
    Launch,
    /// The declared environment file written (`oyster env`).
    WriteEnv,
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepOutcome {
    Ok,
    Failed,
    Written,
    Unchanged,
    Done,
}

#[derive(Debug, Clone)]
pub struct Audit {
    path: PathBuf,
    stack: String,
    label: String,
}

/// The size at which the log is moved to `<name>.1` (replacing an older one) and started anew.
pub const ROTATE_AT: u64 = 1 << 20;

impl Audit {
    /// Moves a log that reached [`ROTATE_AT`] to `<name>.1`; one old file is kept. Only a
    /// regular file is moved (a symlink there is left for the append to refuse).
    fn rotate(&self) {
        let big = std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.file_type().is_file() && m.len() >= ROTATE_AT);
        if big {
            let mut old = self.path.clone().into_os_string();
            old.push(".1");
            let _ = std::fs::rename(&self.path, old);
        }
    }

    /// The audit log at `path` for one stack and its label.
    pub fn new(path: PathBuf, stack: &str, label: &str) -> Audit {
        Audit {
            path,
            stack: stack.to_owned(),
            label: label.to_owned(),
        }
    }

    /// Appends one line. Best effort: a log that cannot be written never fails the action, but
    /// says so on stderr.
    pub fn record(
        &self,
        action: Action,
        step: Step,
        outcome: StepOutcome,
        pid: Option<u32>,
        detail: &str,
    ) {
        #[allow(clippy::cast_possible_truncation, reason = "ms since 1970 fit a u64")]
        let ts_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let line = json!({
            "ts_ms": ts_ms,
            "stack": self.stack,
            "label": self.label,
            "action": action,
            "step": step,
            "outcome": outcome,
            "pid": pid,
            "detail": crate::output::printer().human(detail),
        });
        let result = (|| -> anyhow::Result<()> {
            if let Some(dir) = self.path.parent() {
                // A file (or a dangling symlink) where the log directory should be: said as
                // that, not as create_dir_all's bare "File exists".
                if let Err(e) = std::fs::create_dir_all(dir) {
                    if std::fs::symlink_metadata(dir).is_ok() && !dir.is_dir() {
                        anyhow::bail!("{} is not a directory", dir.display());
                    }
                    return Err(e.into());
                }
            }
            self.rotate();
            // Never through a symlink, never blocking on a FIFO (docs/behaviour.md §9).
            let mut f = crate::sys::fs::open_append(&self.path, 0o600)?;
            // One write per line, so concurrent writers never interleave within a line.
            f.write_all(format!("{line}\n").as_bytes())?;
            Ok(())
        })();
        if let Err(e) = result {
            crate::output::printer()
                .warn(&format!("could not append to {}: {e}", self.path.display()));
        }
    }
}
