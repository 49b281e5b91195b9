//! The run's receipt (`<run dir>/pending`, [`crate::service::journal`]): written before a
//! change, removed once it verified or was rolled back; found by the next run, it means a run
//! died before it knew. Its config step names the port change that run recorded in
//! config.json, so a run that recovers it and rolls back puts that port back too.

use super::*;
use crate::service::journal::{self, Receipt};

impl Agent<'_> {
    pub(super) fn pending_path(&self) -> std::path::PathBuf {
        self.stack.pending_path()
    }

    /// Whether a previous run was interrupted before its change verified.
    pub fn pending(&self) -> bool {
        self.pending_path().exists()
    }

    /// The port change a rollback puts back: this run's (`--port`), from the value before the
    /// first unfinished run when its receipt names one (the config held that value before
    /// either run).
    pub(super) fn port_change(&self, plan: &Plan, pending: bool) -> Option<crate::config::Change> {
        let now = plan
            .changes
            .iter()
            .find(|c| c.key == crate::config::PORT_KEY)
            .cloned();
        let earlier = pending
            .then(|| journal::read(&self.pending_path()))
            .flatten()
            .and_then(|r| r.port_edit());
        crate::service::journal::port_to_put_back(earlier, now, plan.port)
    }

    /// Writes the receipt of `action`'s decided steps, its config step naming the port change
    /// a rollback puts back.
    pub(super) fn mark_pending(
        &self,
        action: Action,
        d: &crate::service::Decision,
        port: Option<&crate::config::Change>,
    ) -> anyhow::Result<()> {
        use crate::service::step::{ConfigEdit, Step};
        // The receipt holds what a recovery needs: a config step keeps its port edit only (no
        // other value, a secret least of all, is copied out of config.json).
        let mut steps: Vec<Step> = d
            .steps
            .iter()
            .map(|s| match s {
                Step::WriteConfig { path, edits } => Step::WriteConfig {
                    path: path.clone(),
                    edits: edits
                        .iter()
                        .filter(|e| e.key == crate::config::PORT_KEY)
                        .cloned()
                        .collect(),
                },
                other => other.clone(),
            })
            .collect();
        if let Some(port) = port {
            let edit = ConfigEdit::from(port);
            match steps.iter_mut().find_map(|s| match s {
                Step::WriteConfig { edits, .. } => Some(edits),
                _ => None,
            }) {
                Some(edits) => {
                    edits.retain(|e| e.key != crate::config::PORT_KEY);
                    edits.push(edit);
                }
                None => steps.insert(
                    0,
                    Step::WriteConfig {
                        path: self.stack.config_path(),
                        edits: vec![edit],
                    },
                ),
            }
        }
        Receipt::new(action.to_string(), steps).write(self.lock()?, &self.pending_path())
    }
}
