//! The append-only audit log `<log dir>/service-control.jsonl`: one JSON line per lifecycle step
//! and outcome. Operators rely on it (Oysterun's scripts keep one). No secrets go in: actions,
//! steps, outcomes, pids and launchctl/verification messages only.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;

pub struct Audit {
    path: PathBuf,
    stack: String,
    label: String,
}

impl Audit {
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
    pub fn record(&self, action: &str, step: &str, outcome: &str, pid: Option<u32>, detail: &str) {
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
        let result = (|| -> std::io::Result<()> {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(&self.path)?;
            // One write per line, so concurrent writers never interleave within a line.
            f.write_all(format!("{line}\n").as_bytes())
        })();
        if let Err(e) = result {
            crate::output::printer()
                .warn(&format!("could not append to {}: {e}", self.path.display()));
        }
    }
}
