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

    /// The port change a rollback puts back ([`journal::port_change`]).
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

    /// Writes the receipt of `action`'s decided steps ([`Receipt::of`]).
    pub(super) fn mark_pending(
        &self,
        action: Action,
        d: &crate::service::Decision,
        port: Option<&crate::config::Change>,
    ) -> anyhow::Result<Receipt> {
        let receipt = Receipt::of(&action.to_string(), d, port, &self.stack.config_path());
        receipt.write(self.lock()?, &self.pending_path())?;
        Ok(receipt)
    }
}
