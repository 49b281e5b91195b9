//! The receipt of a run that changes a job (in the spirit of nix-installer's receipt): the
//! action and its decided steps, with how many are done, written to `<run dir>/pending`
//! (atomically, mode 0600) before each step and removed once the change verified or was
//! rolled back. A run killed outright leaves it: the next run finds it, verifies the change
//! and rolls back to the last good definition when it does not — putting back the port the
//! receipt's config step recorded.
//!
//! The receipt is JSON read by serde into typed steps, never a line format a value could
//! break; a file an older oyster wrote (`ACTION\nport FROM TO`), or one that does not parse,
//! still means "a run died" but names no port.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::step::{ConfigEdit, Step};
use crate::sys::fs::{self as fsutil, Lock};

/// The most of a receipt that is read.
const MAX_RECEIPT_BYTES: u64 = 256 * 1024;

/// What a run in progress has decided and done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// The action that wrote it (`restart`, `install`, …).
    pub action: String,
    /// The steps it decided, in order.
    pub steps: Vec<Step>,
    /// How many of them had been taken when it was last written.
    pub done: usize,
    /// Steps the receipt holds before the decided ones (a port an earlier run changed).
    #[serde(skip)]
    shift: usize,
}

impl Receipt {
    pub fn new(action: impl Into<String>, steps: Vec<Step>) -> Receipt {
        Receipt {
            action: action.into(),
            steps,
            done: 0,
            shift: 0,
        }
    }

    /// The port change the run's config step records, when it is one a run could have made
    /// (a port 1–65535, or none, on each side): a hand-edited value never reaches config.json.
    pub fn port_edit(&self) -> Option<ConfigEdit> {
        let ok = |v: &serde_json::Value| {
            v.is_null() || v.as_u64().is_some_and(|p| (1..=65535).contains(&p))
        };
        self.steps.iter().find_map(|s| match s {
            Step::WriteConfig { edits, .. } => edits
                .iter()
                .find(|e| e.key == crate::config::PORT_KEY && ok(&e.from) && ok(&e.to))
                .cloned(),
            _ => None,
        })
    }

    /// Writes the receipt before the next step.
    pub fn write(&self, lock: &Lock, path: &Path) -> anyhow::Result<()> {
        if let Some(dir) = path.parent() {
            fsutil::create_dir_all(dir, 0o700)?;
        }
        let mut bytes = serde_json::to_vec_pretty(self)?;
        bytes.push(b'\n');
        fsutil::write_atomic(lock, path, &bytes, Some(0o600))?;
        Ok(())
    }
}

/// The port change a rollback of this run puts back: this run's own (`now`), reaching back to
/// the value before an unfinished earlier run (the port edit of its receipt, `earlier`) — but
/// only when that run's config step was taken, i.e. config.json holds what it wrote (`port`,
/// the stack's port as this run planned it: a run killed before its config step left nothing
/// to put back, and saying "changed by another command" for it would be wrong).
pub fn port_to_put_back(
    earlier: Option<ConfigEdit>,
    now: Option<crate::config::Change>,
    port: u16,
) -> Option<crate::config::Change> {
    let on_disk = now
        .as_ref()
        .map_or_else(|| serde_json::Value::from(port), |n| n.from.clone());
    let earlier = earlier
        .filter(|e| e.to == on_disk)
        .map(|e| crate::config::Change::from(&e));
    match (earlier, now) {
        (Some(e), Some(n)) => Some(crate::config::Change { to: n.to, ..e }),
        (e, n) => n.or(e),
    }
}

impl Receipt {
    /// The receipt of `action`'s decided steps: its config step keeps only the port edit a
    /// rollback puts back (no other value, a secret least of all, is copied out of
    /// config.json).
    pub fn of(
        action: &str,
        d: &super::Decision,
        port: Option<&crate::config::Change>,
        config: &Path,
    ) -> Receipt {
        let port_only = |path: &Path| Step::WriteConfig {
            path: path.to_path_buf(),
            edits: port.map(Into::into).into_iter().collect(),
        };
        let mut steps: Vec<Step> = d
            .steps
            .iter()
            .map(|s| match s {
                Step::WriteConfig { path, .. } => port_only(path),
                other => other.clone(),
            })
            .collect();
        let mut receipt = Receipt::new(action, vec![]);
        if port.is_some() && !steps.iter().any(|s| matches!(s, Step::WriteConfig { .. })) {
            steps.insert(0, port_only(config));
            receipt.shift = 1;
        }
        receipt.steps = steps;
        receipt
    }

    /// Records, before the decided step `index` is taken, that the ones before it were.
    pub fn advance(&mut self, index: usize, lock: &Lock, path: &Path) -> anyhow::Result<()> {
        self.done = index + self.shift;
        self.write(lock, path)?;
        step_boundary();
        Ok(())
    }
}

/// Where a run stands between two of its steps: after the receipt names the next step (a run
/// with a receipt), or right before the next step of `stop` and `uninstall` (which take none).
///
/// A test hook, compiled into debug builds only (inert in every release build, whatever the
/// environment): with `OYSTER_TEST_KILL_AT_STEP=<n>`, the run SIGKILLs itself at its boundary
/// number `n` (from 0), which is step `n` as `--dry-run --json` lists the steps — the crash
/// matrix of `tests/it/killed_at_every_step.rs`.
pub fn step_boundary() {
    #[cfg(debug_assertions)]
    {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static PASSED: AtomicUsize = AtomicUsize::new(0);
        let n = PASSED.fetch_add(1, Ordering::SeqCst);
        let at = std::env::var("OYSTER_TEST_KILL_AT_STEP").ok();
        if at.and_then(|v| v.parse::<usize>().ok()) == Some(n) {
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// After a config or definition write that failed, before the manager was asked to load
/// anything (`manager` names it): the port this run wrote into config.json put back (so it
/// does not name a port no Host listens on) and this run's receipt removed — an unfinished
/// earlier run's (`pending`) is kept for the next run. The error says what was put back.
pub fn undo_writes(
    e: anyhow::Error,
    paths: (&Path, &Path),
    port: Option<&crate::config::Change>,
    pending: bool,
    manager: &str,
    out: &dyn crate::output::Reporter,
) -> anyhow::Error {
    let (config, receipt) = paths;
    let _quiet = crate::sys::signal::Suspended::new();
    if !pending {
        let _ = remove(receipt);
    }
    let Some(change) = port else { return e };
    let said = crate::host::plan::put_back_port(config, change, out)
        .unwrap_or_else(|e| format!("config.json's port could not be put back: {e:#}"));
    e.context(crate::error::Afterword {
        lead: format!("the change stopped before {manager} was asked to load it"),
        after: said,
    })
}

/// What is on disk at `path`: `None` when no run is unfinished; a receipt that cannot be read
/// or parsed is an unfinished run that names no steps.
pub fn read(path: &Path) -> Option<Receipt> {
    if std::fs::symlink_metadata(path).is_err() {
        return None;
    }
    let parsed = fsutil::read_regular(path, MAX_RECEIPT_BYTES)
        .ok()
        .flatten()
        .and_then(|bytes| serde_json::from_slice::<Receipt>(&bytes).ok());
    Some(parsed.unwrap_or_else(|| Receipt::new("unknown", vec![])))
}

/// Removes the receipt: the change verified, or was rolled back.
pub fn remove(path: &Path) -> Result<(), fsutil::FsError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(fsutil::FsError::Io {
            action: "remove",
            path: path.to_owned(),
            cause: e,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(from: serde_json::Value, to: serde_json::Value) -> Step {
        Step::WriteConfig {
            path: "/c/config.json".into(),
            edits: vec![ConfigEdit {
                key: "port".into(),
                from,
                to,
            }],
        }
    }

    #[test]
    fn a_receipt_reads_back_as_written_and_names_its_port_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/pending");
        let lock = fsutil::lock_sidecar(&dir.path().join("l")).unwrap();
        let steps = vec![edit(8802.into(), 8810.into()), Step::Verify { port: 8810 }];
        let mut r = Receipt::new("restart", steps);
        r.done = 1;
        r.write(&lock, &path).unwrap();
        let back = read(&path).unwrap();
        assert_eq!(back, r);
        let port = back.port_edit().unwrap();
        assert_eq!((port.from, port.to), (8802.into(), 8810.into()));
        remove(&path).unwrap();
        assert!(read(&path).is_none());
        remove(&path).unwrap();
    }

    #[test]
    fn a_receipt_counts_the_decided_steps_taken_and_keeps_no_config_value_but_the_port() {
        use crate::service::decide::{Change, Decision};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pending");
        let lock = fsutil::lock_sidecar(&dir.path().join("l")).unwrap();
        let secret = ConfigEdit {
            key: "relay_key".into(),
            from: "a".into(),
            to: "b".into(),
        };
        let port = crate::config::Change {
            key: "port".into(),
            from: 8802.into(),
            to: 8810.into(),
        };
        let decided = |steps| Decision {
            change: Change::Reload,
            keep_stopped: false,
            reload: true,
            stale: false,
            switched_off: false,
            steps,
        };
        let with_config = vec![
            Step::WriteConfig {
                path: "/c".into(),
                edits: vec![secret],
            },
            Step::Verify { port: 8810 },
        ];
        let mut r = Receipt::of(
            "restart",
            &decided(with_config),
            Some(&port),
            Path::new("/c"),
        );
        assert_eq!(r.steps.len(), 2, "the config step stays in its place");
        let text = serde_json::to_string(&r).unwrap();
        assert!(
            !text.contains("relay_key") && text.contains("8810"),
            "{text}"
        );
        r.advance(1, &lock, &path).unwrap();
        assert_eq!(read(&path).unwrap().done, 1);
        // A port only an earlier run changed: its step comes first, and counts.
        let mut r = Receipt::of(
            "restart",
            &decided(vec![Step::Verify { port: 8810 }]),
            Some(&port),
            Path::new("/c"),
        );
        assert_eq!(r.steps.len(), 2);
        r.advance(1, &lock, &path).unwrap();
        assert_eq!(read(&path).unwrap().done, 2);
    }

    #[test]
    fn an_old_or_broken_receipt_is_an_unfinished_run_that_names_no_port() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pending");
        for text in [
            "restart\nport 8802 8810\n",
            "restart\nport \"x\" 8810\n",
            "restart\nport 70000 8810\n",
            "restart\nport {\"a\":1} 8810\n",
            "restart\nport -5 8810\n",
            "restart\nport 80.5 8810\n",
            "{\"action\": 3}",
            "",
        ] {
            std::fs::write(&path, text).unwrap();
            let r = read(&path).unwrap();
            assert!(r.steps.is_empty() && r.port_edit().is_none(), "{text:?}");
        }
    }

    #[test]
    fn an_earlier_port_is_put_back_only_when_its_config_step_was_taken() {
        let edit = |from: u16, to: u16| ConfigEdit {
            key: "port".into(),
            from: from.into(),
            to: to.into(),
        };
        let change = |from: u16, to: u16| crate::config::Change::from(&edit(from, to));
        // Killed after its config step: config holds 8810; this run changes nothing.
        assert_eq!(
            port_to_put_back(Some(edit(8802, 8810)), None, 8810),
            Some(change(8802, 8810))
        );
        // …or moves on to 8820: the rollback goes back to 8802.
        assert_eq!(
            port_to_put_back(Some(edit(8802, 8810)), Some(change(8810, 8820)), 8820),
            Some(change(8802, 8820))
        );
        // Killed before its config step: config still holds 8802; nothing of it to put back.
        assert_eq!(port_to_put_back(Some(edit(8802, 8810)), None, 8802), None);
        assert_eq!(
            port_to_put_back(Some(edit(8802, 8810)), Some(change(8802, 8830)), 8830),
            Some(change(8802, 8830))
        );
        assert_eq!(port_to_put_back(None, None, 8802), None);
    }

    #[test]
    fn a_port_no_run_could_record_is_not_taken() {
        for (from, to) in [
            (serde_json::json!(0), serde_json::json!(8810)),
            (serde_json::json!(8802), serde_json::json!(70000)),
            (serde_json::json!("8802"), serde_json::json!(8810)),
        ] {
            let r = Receipt::new("restart", vec![edit(from, to)]);
            assert!(r.port_edit().is_none(), "{r:?}");
        }
        let r = Receipt::new("restart", vec![edit(serde_json::Value::Null, 8810.into())]);
        assert!(r.port_edit().is_some());
    }
}
