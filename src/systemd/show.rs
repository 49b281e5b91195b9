//! `systemctl --user show -p … UNIT` parsed by key: `KEY=value` lines, in systemd's order (not
//! the order asked), into a typed [`UnitShow`]. Success is judged by these fields
//! (`ActiveState`, `SubState`, `Result`, `LoadState`), never by an exit code: `show` of an
//! unknown unit exits 0 with `LoadState=not-found`, and a stop that had to SIGKILL exits 0
//! leaving `Result=timeout`.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The properties [`super::Systemctl::show`] asks for, in one call.
pub const PROPERTIES: [&str; 14] = [
    "MainPID",
    "ExecMainPID",
    "NRestarts",
    "Result",
    "ActiveState",
    "SubState",
    "InvocationID",
    "ExecMainCode",
    "ExecMainStatus",
    "NeedDaemonReload",
    "UnitFileState",
    "LoadState",
    "FragmentPath",
    "DropInPaths",
];

/// `LoadState`: whether the manager has the unit's definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadState {
    Loaded,
    /// No unit file by that name in the manager's search path.
    NotFound,
    /// The file is there but a setting in it is invalid.
    BadSetting,
    Error,
    Masked,
    Other(String),
}

/// `ActiveState`: the unit's high-level state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActiveState {
    Active,
    Reloading,
    Inactive,
    Failed,
    Activating,
    Deactivating,
    Other(String),
}

/// `Result`: how the unit's last run ended (`success` until something went wrong; kept
/// after a stop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnitResult {
    Success,
    /// The main process exited non-zero (also after a restart loop hit the start limit).
    ExitCode,
    Signal,
    CoreDump,
    /// A start or stop timed out (a stop that ended in SIGKILL).
    Timeout,
    StartLimitHit,
    Watchdog,
    Resources,
    OomKill,
    Other(String),
}

/// `ExecMainCode`: how the last main process ended, as `waitid(2)` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MainCode {
    /// Not ended (or never ran).
    None,
    /// `CLD_EXITED`: `ExecMainStatus` is its exit status.
    Exited,
    /// `CLD_KILLED`: `ExecMainStatus` is the signal.
    Killed,
    /// `CLD_DUMPED`: killed, with a core dump.
    Dumped,
    Other(i32),
}

/// One unit as `show` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitShow {
    pub load_state: LoadState,
    pub active_state: ActiveState,
    /// `SubState` (`running`, `dead`, `failed`, `auto-restart`, …).
    pub sub_state: String,
    pub result: UnitResult,
    /// `MainPID`; `None` for 0 (nothing running).
    pub main_pid: Option<u32>,
    /// `ExecMainPID`: the last main process, also after it ended (`None` for 0).
    pub exec_main_pid: Option<u32>,
    pub exec_main_code: MainCode,
    pub exec_main_status: i32,
    /// `NRestarts`: automatic restarts since the last manual start.
    pub n_restarts: u32,
    /// `InvocationID`: new for each start; `None` when empty.
    pub invocation_id: Option<String>,
    /// `NeedDaemonReload`: the file on disk changed since the manager read it.
    pub need_daemon_reload: bool,
    /// `UnitFileState` (`enabled`, `disabled`, `static`, …); `None` when empty.
    pub unit_file_state: Option<String>,
    /// `FragmentPath`: the unit file the manager read; `None` when empty.
    pub fragment_path: Option<PathBuf>,
    /// `DropInPaths`: drop-ins overriding it ([`split_words`]).
    pub drop_in_paths: Vec<PathBuf>,
    /// Every `KEY=value` line as given (the last one wins).
    pub raw: BTreeMap<String, String>,
}

/// An answer that is not a unit's properties.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShowError {
    #[error("`systemctl show` gave no {0}")]
    Missing(&'static str),
    #[error("`systemctl show` gave {key}={value:?}")]
    Bad { key: &'static str, value: String },
}

impl UnitShow {
    /// Parses `KEY=value` lines (in any order; a line without `=` is ignored). `LoadState`,
    /// `ActiveState` and `SubState` must be there; a missing number counts as 0, a missing
    /// text as empty.
    pub fn parse(text: &str) -> Result<UnitShow, ShowError> {
        let raw: BTreeMap<String, String> = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let get = |k: &str| raw.get(k).map(String::as_str).unwrap_or("");
        let need = |k: &'static str| {
            raw.get(k)
                .map(String::as_str)
                .filter(|v| !v.is_empty())
                .ok_or(ShowError::Missing(k))
        };
        let non_empty = |k: &str| Some(get(k).to_owned()).filter(|v| !v.is_empty());
        Ok(UnitShow {
            load_state: LoadState::from(need("LoadState")?),
            active_state: ActiveState::from(need("ActiveState")?),
            sub_state: need("SubState")?.to_owned(),
            result: UnitResult::from(get("Result")),
            main_pid: pid(&raw, "MainPID")?,
            exec_main_pid: pid(&raw, "ExecMainPID")?,
            exec_main_code: MainCode::from(number::<i32>(&raw, "ExecMainCode")?),
            exec_main_status: number(&raw, "ExecMainStatus")?,
            n_restarts: number(&raw, "NRestarts")?,
            invocation_id: non_empty("InvocationID"),
            need_daemon_reload: yes_no(&raw, "NeedDaemonReload")?,
            unit_file_state: non_empty("UnitFileState"),
            fragment_path: non_empty("FragmentPath").map(PathBuf::from),
            drop_in_paths: split_words(get("DropInPaths"))
                .into_iter()
                .map(PathBuf::from)
                .collect(),
            raw,
        })
    }

    /// Loaded, active and `running`, with a main process.
    pub fn is_running(&self) -> bool {
        self.load_state == LoadState::Loaded
            && self.active_state == ActiveState::Active
            && self.sub_state == "running"
            && self.main_pid.is_some()
    }

    /// The manager has no such unit.
    pub fn is_not_found(&self) -> bool {
        self.load_state == LoadState::NotFound
    }

    /// `ActiveState=failed` (a crash loop past its start limit, a failed start): nothing
    /// starts it again until `reset-failed` or a manual start.
    pub fn is_failed(&self) -> bool {
        self.active_state == ActiveState::Failed
    }

    /// `UnitFileState=enabled`: it starts with the manager (`default.target`).
    pub fn is_enabled(&self) -> bool {
        self.unit_file_state.as_deref() == Some("enabled")
    }
}

/// A list property's words: separated by blanks, a word with a blank (a path under `~/My
/// Files`) written in double quotes with `\` escapes (measured, systemd 252).
pub fn split_words(s: &str) -> Vec<String> {
    let mut words = vec![];
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut w = String::new();
        if c == '"' {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => w.extend(chars.next()),
                    c => w.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                w.push(c);
            }
        }
        words.push(w);
    }
    words
}

/// A number property; missing means 0. `[not set]` (what `show` prints for a property that
/// has no value) counts as 0 too.
fn number<T: std::str::FromStr + Default>(
    raw: &BTreeMap<String, String>,
    key: &'static str,
) -> Result<T, ShowError> {
    match raw.get(key).map(String::as_str) {
        None | Some("" | "[not set]") => Ok(T::default()),
        Some(v) => v.parse().map_err(|_| ShowError::Bad {
            key,
            value: v.to_owned(),
        }),
    }
}

fn pid(raw: &BTreeMap<String, String>, key: &'static str) -> Result<Option<u32>, ShowError> {
    Ok(Some(number::<u32>(raw, key)?).filter(|p| *p != 0))
}

fn yes_no(raw: &BTreeMap<String, String>, key: &'static str) -> Result<bool, ShowError> {
    match raw.get(key).map(String::as_str) {
        None | Some("" | "no") => Ok(false),
        Some("yes") => Ok(true),
        Some(v) => Err(ShowError::Bad {
            key,
            value: v.to_owned(),
        }),
    }
}

impl From<&str> for LoadState {
    fn from(s: &str) -> Self {
        match s {
            "loaded" => LoadState::Loaded,
            "not-found" => LoadState::NotFound,
            "bad-setting" => LoadState::BadSetting,
            "error" => LoadState::Error,
            "masked" => LoadState::Masked,
            other => LoadState::Other(other.to_owned()),
        }
    }
}

impl From<&str> for ActiveState {
    fn from(s: &str) -> Self {
        match s {
            "active" => ActiveState::Active,
            "reloading" => ActiveState::Reloading,
            "inactive" => ActiveState::Inactive,
            "failed" => ActiveState::Failed,
            "activating" => ActiveState::Activating,
            "deactivating" => ActiveState::Deactivating,
            other => ActiveState::Other(other.to_owned()),
        }
    }
}

impl From<&str> for UnitResult {
    fn from(s: &str) -> Self {
        match s {
            "success" | "" => UnitResult::Success,
            "exit-code" => UnitResult::ExitCode,
            "signal" => UnitResult::Signal,
            "core-dump" => UnitResult::CoreDump,
            "timeout" => UnitResult::Timeout,
            "start-limit-hit" => UnitResult::StartLimitHit,
            "watchdog" => UnitResult::Watchdog,
            "resources" => UnitResult::Resources,
            "oom-kill" => UnitResult::OomKill,
            other => UnitResult::Other(other.to_owned()),
        }
    }
}

impl From<i32> for MainCode {
    fn from(n: i32) -> Self {
        match n {
            0 => MainCode::None,
            1 => MainCode::Exited,
            2 => MainCode::Killed,
            3 => MainCode::Dumped,
            other => MainCode::Other(other),
        }
    }
}

impl std::fmt::Display for UnitResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UnitResult::Success => "success",
            UnitResult::ExitCode => "exit-code",
            UnitResult::Signal => "signal",
            UnitResult::CoreDump => "core-dump",
            UnitResult::Timeout => "timeout",
            UnitResult::StartLimitHit => "start-limit-hit",
            UnitResult::Watchdog => "watchdog",
            UnitResult::Resources => "resources",
            UnitResult::OomKill => "oom-kill",
            UnitResult::Other(s) => s,
        })
    }
}

#[cfg(test)]
#[path = "show_tests.rs"]
mod tests;
