//! The `pending` marker: written before a change, removed once it verified or was rolled
//! back; found by the next run, it means a run died before it knew. It names the action and
//! the port change that run recorded in config.json (`port FROM TO`, JSON values), so a run
//! that recovers it and rolls back puts that port back too.

use super::*;

/// The most of a marker that is read.
const MAX_MARKER_BYTES: u64 = 4096;

impl Agent<'_> {
    pub(super) fn pending_path(&self) -> std::path::PathBuf {
        self.stack.pending_path()
    }

    /// Whether a previous run was interrupted before its change verified.
    pub fn pending(&self) -> bool {
        self.pending_path().exists()
    }

    /// The port change a rollback puts back: this run's (`--port`), from the value before the
    /// first unfinished run when a marker names one (the config held that value before either
    /// run).
    pub(super) fn port_change(&self, plan: &Plan, pending: bool) -> Option<crate::config::Change> {
        let now = plan
            .changes
            .iter()
            .find(|c| c.key == crate::config::PORT_KEY)
            .cloned();
        let earlier = if pending { self.marked_port() } else { None };
        match (earlier, now) {
            (Some(e), Some(n)) => Some(crate::config::Change { to: n.to, ..e }),
            (e, n) => n.or(e),
        }
    }

    /// Writes the marker for `action` and the port change it records.
    pub(super) fn mark_pending(
        &self,
        action: Action,
        port: Option<&crate::config::Change>,
    ) -> anyhow::Result<()> {
        let mut text = format!("{action}\n");
        if let Some(c) = port {
            text.push_str(&format!("port {} {}\n", c.from, c.to));
        }
        fsutil::write_atomic(
            self.lock,
            &self.pending_path(),
            text.as_bytes(),
            Some(0o600),
        )?;
        Ok(())
    }

    /// The port change an unfinished run's marker records, if any (a marker it cannot read
    /// names none: the recovery goes on without it). Only what a run could have recorded is
    /// taken, a port (1–65535) or none on each side: a hand-edited or corrupt value would
    /// otherwise be put into config.json by the rollback.
    fn marked_port(&self) -> Option<crate::config::Change> {
        let bytes = fsutil::read_regular(&self.pending_path(), MAX_MARKER_BYTES)
            .ok()
            .flatten()?;
        let text = String::from_utf8(bytes).ok()?;
        text.lines().find_map(|line| {
            let mut words = line.strip_prefix("port ")?.split(' ');
            let from = port_value(words.next()?)?;
            let to = port_value(words.next()?)?;
            Some(crate::config::Change {
                key: crate::config::PORT_KEY.to_owned(),
                from,
                to,
            })
        })
    }
}

/// A marker's side of a port change: JSON `null` (no port) or a port 1–65535.
fn port_value(word: &str) -> Option<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(word).ok()?;
    let ok = v.is_null() || v.as_u64().is_some_and(|p| (1..=65535).contains(&p));
    ok.then_some(v)
}
