//! One side effect of a run, typed: what `--dry-run` lists, what the runner executes in that
//! order, and what the journal records before each. A manager names its targets in its own
//! words (`gui/501/com.oysterun.host`, `com.oysterun.host.service`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A change `config.json` gets: the key, its value before and after (JSON values; secret keys
/// are redacted where they are shown, never here).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigEdit {
    /// The config key (spelt `setting` in JSON: a field named `key` reads as a secret).
    #[serde(rename = "setting")]
    pub key: String,
    pub from: serde_json::Value,
    pub to: serde_json::Value,
}

impl From<&crate::config::Change> for ConfigEdit {
    fn from(c: &crate::config::Change) -> ConfigEdit {
        ConfigEdit {
            key: c.key.clone(),
            from: c.from.clone(),
            to: c.to.clone(),
        }
    }
}

impl ConfigEdit {
    /// This edit as a document shows it: a secret setting's values are `<redacted>`.
    pub fn shown(&self) -> ConfigEdit {
        let hide = |v: &serde_json::Value| match v {
            serde_json::Value::Null => serde_json::Value::Null,
            _ => serde_json::Value::from(crate::output::redact::REDACTED),
        };
        match crate::output::redact::is_secret_key(&self.key) {
            true => ConfigEdit {
                key: self.key.clone(),
                from: hide(&self.from),
                to: hide(&self.to),
            },
            false => self.clone(),
        }
    }
}

impl From<&ConfigEdit> for crate::config::Change {
    fn from(e: &ConfigEdit) -> crate::config::Change {
        crate::config::Change {
            key: e.key.clone(),
            from: e.from.clone(),
            to: e.to.clone(),
        }
    }
}

/// One step, in the order a run takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// The stack config sync written into `config.json` (merged again with what is on disk).
    WriteConfig {
        path: PathBuf,
        edits: Vec<ConfigEdit>,
    },
    /// The job's definition (plist, unit) written with new bytes.
    WriteDefinition { path: PathBuf },
    /// A bootout an interrupted `stop` left draining, finished before the start.
    FinishStop { target: String },
    /// The job allowed to load (launchd `enable`, systemd `enable`) in each target.
    Enable { targets: Vec<String> },
    /// The job stopped and unloaded (launchd `bootout`, systemd `stop`).
    BootOut {
        target: String,
        pid: Option<u32>,
        /// Waited for until it is gone (`stop --no-wait` only issues it).
        wait: bool,
    },
    /// The definition loaded and started (launchd `bootstrap`, systemd `daemon-reload` +
    /// `start`).
    Load { target: String },
    /// A Host `oyster host start` started for this stack, stopped (identity-checked) so that
    /// the service manager's runs instead, on the same port.
    StopDirect { pid: u32 },
    /// The same definition restarted gracefully (SIGTERM, then a start).
    Restart { target: String, pid: Option<u32> },
    /// The new Host proven: a new pid, `/health` from its socket, its environment, the settle.
    Verify { port: u16 },
    /// The job kept from loading at the next login (launchd `disable`, systemd `disable`).
    Disable { targets: Vec<String> },
    /// The definition removed (`uninstall`).
    RemoveDefinition { path: PathBuf },
}

impl Step {
    /// The step's name as `--json` and the journal spell it.
    #[cfg(test)]
    pub fn name(&self) -> &'static str {
        match self {
            Step::WriteConfig { .. } => "write_config",
            Step::WriteDefinition { .. } => "write_definition",
            Step::FinishStop { .. } => "finish_stop",
            Step::Enable { .. } => "enable",
            Step::BootOut { .. } => "boot_out",
            Step::Load { .. } => "load",
            Step::StopDirect { .. } => "stop_direct",
            Step::Restart { .. } => "restart",
            Step::Verify { .. } => "verify",
            Step::Disable { .. } => "disable",
            Step::RemoveDefinition { .. } => "remove_definition",
        }
    }
}
