//! The launch environment generator (docs/behaviour.md §3): the one place that decides what the Host
//! process sees, for the LaunchAgent, direct startup and any installer oyster runs.
//!
//! Exactly eight variables (the five oyster always gave, and the three `OYSTERUN_ROUTEC_*` that
//! Oysterun's own runner gives: the Host reads its stack from them), and a PATH built only from
//! the pinned Node's directory, the resolved provider directories and fixed system directories. Nothing is taken from the caller's
//! environment, no profile is sourced, and an unusable entry is an error, never written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::Invalid;

/// The fixed directories that end every generated PATH, in order.
pub const SYSTEM_PATH: [&str; 6] = [
    "/opt/homebrew/bin",
    "/usr/local/bin",
    "/usr/bin",
    "/bin",
    "/usr/sbin",
    "/sbin",
];

pub const NODE_BIN: &str = "OYSTERUN_NODE_BIN";
pub const PATH: &str = "PATH";
pub const CONFIG_DIR: &str = "OYSTERUN_CONFIG_DIR";
pub const PORT: &str = "OYSTERUN_PORT";
pub const REPO_ROOT: &str = "OYSTERUN_REPO_ROOT";
/// The stack's name: without it the real Host refuses its own restart and in-app update.
pub const STACK_NAME: &str = "OYSTERUN_ROUTEC_STACK_NAME";
/// The stack root (`~/.oysterun`, or `$STACKS/NAME`).
pub const STACK_ROOT: &str = "OYSTERUN_ROUTEC_STACK_ROOT";
/// `<stack root>/matrix/homeserver.db`.
pub const MATRIX_STORAGE_PATH: &str = "OYSTERUN_ROUTEC_MATRIX_STORAGE_PATH";

/// The generated Host environment, sorted by name (as the plist stores it), and the declared
/// variables the launch program adds to it at exec.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchEnv {
    /// What the plist (or the unit) sets: the generated variables.
    pub vars: BTreeMap<String, String>,
    /// The declared variables (`oyster env`, and the organization's forced ones;
    /// [`crate::host::declared`]): never in the plist or the unit, added by the launch program
    /// when it execs the Host, expected by every proof. Values are secrets.
    pub declared: BTreeMap<String, String>,
}

impl LaunchEnv {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(String::as_str)
    }

    /// `OYSTERUN_PORT`, when it is a port.
    pub fn port(&self) -> Option<u16> {
        self.get(PORT).and_then(|p| p.parse().ok())
    }
}

/// The whole environment a started Host gets: what launchd gives every job from the user
/// database (`HOME`, `USER`, `LOGNAME`, `SHELL`, `TMPDIR`; never the caller's environment),
/// overridden by the generated variables, as launchd lets a plist's `EnvironmentVariables`
/// override its defaults. Direct startup, setup's npm and doctor's probe run with exactly
/// this; the plist carries the generated part and launchd adds the rest.
pub fn host_environment(
    generated: &LaunchEnv,
    home: &Path,
) -> Result<Vec<(String, String)>, crate::sys::user::AccountError> {
    let account = crate::sys::user::account()?;
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    vars.insert("HOME".into(), home.to_string_lossy().into_owned());
    vars.insert("USER".into(), account.name.clone());
    vars.insert("LOGNAME".into(), account.name);
    vars.insert("SHELL".into(), account.shell);
    vars.insert("TMPDIR".into(), crate::sys::user::tmpdir());
    vars.extend(generated.vars.clone());
    Ok(vars.into_iter().collect())
}

/// Inputs to the generator.
pub struct EnvInputs<'a> {
    pub node_bin: &'a Path,
    /// Directories of resolved, non-disabled providers, in registry order.
    pub provider_dirs: &'a [PathBuf],
    pub config_dir: &'a Path,
    pub port: u16,
    pub root: &'a Path,
    pub stack_name: &'a str,
    pub stack_root: &'a Path,
}

/// Builds the Host environment.
pub fn generate(inputs: &EnvInputs<'_>) -> Result<LaunchEnv, Invalid> {
    let node_dir = inputs
        .node_bin
        .parent()
        .ok_or_else(|| NotInEnvironment::NodeWithoutDir(inputs.node_bin.to_owned()))?;
    let entries = std::iter::once(node_dir)
        .chain(inputs.provider_dirs.iter().map(PathBuf::as_path))
        .chain(SYSTEM_PATH.iter().map(Path::new));
    let path = build_path(entries)?;
    let mut vars = BTreeMap::new();
    vars.insert(NODE_BIN.to_owned(), value(NODE_BIN, inputs.node_bin)?);
    vars.insert(PATH.to_owned(), path);
    vars.insert(CONFIG_DIR.to_owned(), value(CONFIG_DIR, inputs.config_dir)?);
    vars.insert(PORT.to_owned(), inputs.port.to_string());
    vars.insert(REPO_ROOT.to_owned(), value(REPO_ROOT, inputs.root)?);
    vars.insert(STACK_NAME.to_owned(), inputs.stack_name.to_owned());
    vars.insert(STACK_ROOT.to_owned(), value(STACK_ROOT, inputs.stack_root)?);
    let matrix = inputs.stack_root.join("matrix").join("homeserver.db");
    vars.insert(
        MATRIX_STORAGE_PATH.to_owned(),
        value(MATRIX_STORAGE_PATH, &matrix)?,
    );
    Ok(LaunchEnv {
        vars,
        declared: BTreeMap::new(),
    })
}

/// Joins directories into a PATH: each once, in first-seen order; every entry must be an
/// absolute UTF-8 path without `:`, a line break or NUL.
pub fn build_path<'a>(entries: impl IntoIterator<Item = &'a Path>) -> Result<String, Invalid> {
    let mut seen: Vec<String> = Vec::new();
    for dir in entries {
        let s = dir
            .to_str()
            .ok_or_else(|| NotInEnvironment::PathEntryNotUtf8(dir.to_owned()))?;
        let why = if !dir.is_absolute() {
            Some(NotOnPath::Relative)
        } else if s.contains(':') {
            Some(NotOnPath::Colon)
        } else if s.contains(['\n', '\r']) {
            Some(NotOnPath::LineBreak)
        } else if s.contains('\0') {
            Some(NotOnPath::Nul)
        } else {
            None
        };
        if let Some(why) = why {
            return Err(NotInEnvironment::NotOnPath {
                entry: s.to_owned(),
                why,
            }
            .into());
        }
        let normalized = crate::provider::resolve::normalize(dir)
            .to_string_lossy()
            .into_owned();
        if !seen.contains(&normalized) {
            seen.push(normalized);
        }
    }
    Ok(seen.join(":"))
}

fn value(name: &str, path: &Path) -> Result<String, Invalid> {
    let s = path.to_str().ok_or_else(|| NotInEnvironment::NotUtf8 {
        name: name.to_owned(),
        path: path.to_owned(),
    })?;
    if s.contains(['\n', '\r', '\0']) {
        return Err(NotInEnvironment::Control {
            name: name.to_owned(),
            value: s.to_owned(),
        }
        .into());
    }
    Ok(s.to_owned())
}

/// Why a path cannot go into the Host's environment. Words: `commands/words/host.rs` (said as
/// an [`Invalid`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotInEnvironment {
    NodeWithoutDir(PathBuf),
    PathEntryNotUtf8(PathBuf),
    NotOnPath {
        entry: String,
        why: NotOnPath,
    },
    /// The variable `name`'s path is not UTF-8.
    NotUtf8 {
        name: String,
        path: PathBuf,
    },
    /// The variable `name`'s value holds a line break or NUL.
    Control {
        name: String,
        value: String,
    },
}

/// What keeps a directory off PATH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotOnPath {
    Relative,
    Colon,
    LineBreak,
    Nul,
}

#[cfg(test)]
#[path = "launchenv_tests.rs"]
mod tests;
