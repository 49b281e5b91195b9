//! The only module that runs `launchctl`: `/bin/launchctl`, or `$OYSTER_LAUNCHCTL` when set
//! (every status and doctor output then says so). Also the parser for `launchctl print`.
//!
//! # Platform
//! On macOS this drives the real launchd. Elsewhere it drives whatever `$OYSTER_LAUNCHCTL`
//! names — in this project's tests, the bundled simulator (`launchd/`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::context::EnvSnapshot;
use crate::sys::process::{self, ChildEnv, Finished, ProcessError};

/// The system launchctl.
pub const SYSTEM_LAUNCHCTL: &str = "/bin/launchctl";
/// The variable that points oyster at another launchctl.
pub const OVERRIDE_VAR: &str = "OYSTER_LAUNCHCTL";

/// The variable that changes how long one launchctl call may take (default 30 s).
pub const TIMEOUT_VAR: &str = "OYSTER_LAUNCHCTL_TIMEOUT_SECS";

/// `print`/`kickstart` of a label that is not loaded.
pub const NOT_LOADED: i32 = 113;

/// A launchctl call that failed, with everything needed to understand it.
#[derive(Debug, thiserror::Error)]
#[error("`{argv}` exited with {code}: {}", if stderr.trim().is_empty() { "(no output)" } else { stderr.trim() })]
pub struct LaunchctlError {
    pub argv: String,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A located launchctl.
#[derive(Debug, Clone)]
pub struct Launchctl {
    pub path: PathBuf,
    /// Set when `$OYSTER_LAUNCHCTL` chose it.
    pub overridden: bool,
    /// How long one call may take before it is killed.
    pub timeout: Duration,
}

/// Where `launchctl` is and why it is not usable.
#[derive(Debug, thiserror::Error)]
pub enum LocateError {
    #[error("launchctl is switched off ({OVERRIDE_VAR}=none): no LaunchAgent can be loaded here; `oyster host start` starts the Host directly")]
    Off,
    #[error("{TIMEOUT_VAR} is {0:?}; give a whole number of seconds from 1 to {MAX_TIMEOUT_SECS}, or unset it")]
    BadTimeout(String),
    #[error(
        "{OVERRIDE_VAR} is {0:?}, which is not an absolute path to an executable; fix or unset it"
    )]
    BadOverride(String),
    #[error("launchctl was not found at {SYSTEM_LAUNCHCTL}; launchd is macOS-only. Use `oyster host start` for direct startup, or set {OVERRIDE_VAR} to a launchctl-compatible program")]
    Missing,
}

impl LocateError {
    /// A variable the user set is wrong (exit 2); a missing launchctl is a failure (exit 1).
    pub fn is_invalid_input(&self) -> bool {
        !matches!(self, LocateError::Missing | LocateError::Off)
    }
}

impl crate::error::HasKind for LocateError {
    fn kind(&self) -> crate::error::Kind {
        if self.is_invalid_input() {
            crate::error::Kind::Invalid
        } else {
            crate::error::Kind::Failure
        }
    }
}

/// The longest one launchctl call may be allowed to take.
pub const MAX_TIMEOUT_SECS: u64 = 3600;

impl Launchctl {
    /// `$OYSTER_LAUNCHCTL` if set, else `/bin/launchctl` if present.
    pub fn locate(env: &EnvSnapshot) -> Result<Launchctl, LocateError> {
        let timeout = match env.launchctl_timeout.as_deref() {
            None => Duration::from_secs(30),
            Some(v) => match v.trim().parse::<u64>() {
                Ok(secs @ 1..=MAX_TIMEOUT_SECS) => Duration::from_secs(secs),
                _ => return Err(LocateError::BadTimeout(v.to_owned())),
            },
        };
        let (path, overridden) = match &env.launchctl {
            Some(v) if v == "none" => return Err(LocateError::Off),
            Some(v) => {
                let p = PathBuf::from(v);
                if !p.is_absolute() || crate::provider::resolve::check_executable(&p).is_err() {
                    return Err(LocateError::BadOverride(v.to_string_lossy().into_owned()));
                }
                (p, true)
            }
            None => {
                let p = PathBuf::from(SYSTEM_LAUNCHCTL);
                if crate::provider::resolve::check_executable(&p).is_err() {
                    return Err(LocateError::Missing);
                }
                (p, false)
            }
        };
        Ok(Launchctl {
            path,
            overridden,
            timeout,
        })
    }

    /// What output says about which launchctl is in use.
    pub fn describe(&self) -> String {
        let mut s = self.path.display().to_string();
        if self.overridden {
            s += &format!(" (from {OVERRIDE_VAR})");
        }
        if self.timeout != Duration::from_secs(30) {
            s += &format!(
                ", calls time out after {} s ({TIMEOUT_VAR})",
                self.timeout.as_secs()
            );
        }
        s
    }

    /// Runs one launchctl call; a non-zero exit is returned as data, not an error.
    pub fn call(&self, args: &[&str]) -> Result<Finished, ProcessError> {
        process::run(&self.path, args, ChildEnv::Inherit, self.timeout)
    }

    /// Runs one call and turns a non-zero exit into a [`LaunchctlError`].
    pub fn ok(&self, args: &[&str]) -> anyhow::Result<Finished> {
        let f = self.call(args)?;
        if f.code == 0 {
            Ok(f)
        } else {
            Err(failed(f).into())
        }
    }

    /// `print <target>`: `None` when the label is not loaded (113).
    pub fn print(&self, target: &str) -> anyhow::Result<Option<PrintInfo>> {
        let f = self.call(&["print", target])?;
        match f.code {
            0 => Ok(Some(parse_print(&f.stdout))),
            NOT_LOADED => Ok(None),
            _ => Err(failed(f).into()),
        }
    }

    /// Finds the per-user domain: `gui/<uid>`, or `user/<uid>` (said aloud) when there is no
    /// GUI session (SSH, nobody at the screen).
    pub fn domain(&self) -> anyhow::Result<Domain> {
        let uid = crate::sys::user::uid();
        let gui = format!("gui/{uid}");
        let f = self.call(&["print", &gui])?;
        if f.code == 0 {
            return Ok(Domain {
                name: gui,
                fallback_note: None,
            });
        }
        // Only "no such domain" (112) and "not supported here" (125) mean there is no GUI
        // session; any other failure is launchctl failing, and is said as such.
        if f.code != 112 && f.code != 125 {
            return Err(failed(f).into());
        }
        let user = format!("user/{uid}");
        Ok(Domain {
            fallback_note: Some(format!(
                "the GUI domain {gui} is not available (launchctl exit {}; no console session?), \
                 using {user}; the Host will run while this user has a session",
                f.code
            )),
            name: user,
        })
    }
}

impl Launchctl {
    /// Whether `label` is disabled in `domain` (`false` when launchctl cannot say).
    pub fn is_disabled_in(&self, domain: &str, label: &str) -> bool {
        self.disabled(domain, label).ok().flatten().unwrap_or(false)
    }
}

impl Launchctl {
    /// Looks for a loaded `label` in `gui/<uid>`, then `user/<uid>` (a job loaded in one is
    /// not visible in the other, LAUNCHD.md): the domain it is loaded in, and its `print`.
    pub fn find_loaded(&self, label: &str) -> anyhow::Result<Option<(String, PrintInfo)>> {
        let uid = crate::sys::user::uid();
        for domain in [format!("gui/{uid}"), format!("user/{uid}")] {
            let f = self.call(&["print", &format!("{domain}/{label}")])?;
            match f.code {
                0 => return Ok(Some((domain, parse_print(&f.stdout)))),
                // Not loaded there, or no such domain (no GUI session).
                NOT_LOADED | 112 | 125 => {}
                _ => return Err(failed(f).into()),
            }
        }
        Ok(None)
    }
}

/// A launchd domain chosen for this user.
#[derive(Debug, Clone)]
pub struct Domain {
    pub name: String,
    /// Set when oyster fell back from `gui/<uid>`.
    pub fallback_note: Option<String>,
}

impl Domain {
    pub fn target(&self, label: &str) -> String {
        format!("{}/{label}", self.name)
    }
}

fn failed(f: Finished) -> LaunchctlError {
    LaunchctlError {
        argv: f.argv.join(" "),
        code: f.code,
        stdout: f.stdout,
        stderr: f.stderr,
    }
}

/// The depth-one facts of a `launchctl print` block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrintInfo {
    pub fields: BTreeMap<String, String>,
    /// The job definition's `environment = { K => V }` block (what launchd will give the
    /// next instance; not proof of what the live process has).
    pub environment: BTreeMap<String, String>,
    /// The `arguments = { … }` block: the loaded definition's `ProgramArguments`, one per line.
    pub arguments: Vec<String>,
}

impl PrintInfo {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.get(key).map(String::as_str)
    }
    pub fn state(&self) -> Option<&str> {
        self.get("state")
    }
    pub fn pid(&self) -> Option<u32> {
        self.get("pid").and_then(|p| p.parse().ok())
    }
    pub fn path(&self) -> Option<&Path> {
        self.get("path").map(Path::new)
    }
    /// How the last instance ended, parsed once: `last exit code = 78: EX_CONFIG` or
    /// `(never exited)`, or, after a signal death, `last terminating signal = Killed: 9`
    /// instead (LAUNCHD.md). `None` when launchd printed neither.
    pub fn last_exit(&self) -> Option<LastExit> {
        if let Some(sig) = self.get("last terminating signal") {
            return Some(LastExit::Signal(leading_number(sig.rsplit(':').next()?)?));
        }
        let code = self.get("last exit code")?;
        if code.starts_with('(') {
            return Some(LastExit::Never);
        }
        Some(LastExit::Code(leading_number(code)?))
    }

    /// `exit timeout = N`: how long launchd waits after SIGTERM before SIGKILL.
    pub fn exit_timeout(&self) -> Option<u64> {
        self.get("exit timeout").and_then(|r| r.trim().parse().ok())
    }

    /// `runs = N`: how many times launchd has spawned this job.
    pub fn runs(&self) -> Option<u32> {
        self.get("runs").and_then(|r| r.trim().parse().ok())
    }

    /// `successive crashes = N`, printed while launchd throttles a crashing job.
    pub fn successive_crashes(&self) -> Option<u32> {
        self.get("successive crashes")
            .and_then(|r| r.trim().parse().ok())
    }

    /// The job's state.
    pub fn job_state(&self) -> JobState {
        match self.state() {
            Some("running") => JobState::Running,
            Some("not running") => JobState::NotRunning,
            Some("spawn scheduled") => JobState::SpawnScheduled,
            Some("waiting") => JobState::Waiting,
            Some(other) => JobState::Other(other.to_owned()),
            None => JobState::Other("unknown".into()),
        }
    }

    pub fn running(&self) -> bool {
        self.state() == Some("running") && self.pid().is_some()
    }
}

/// How the last instance of a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastExit {
    /// It has not exited since it was loaded.
    Never,
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

impl LastExit {
    /// The exit code, when it exited.
    pub fn code(self) -> Option<i32> {
        match self {
            LastExit::Code(c) => Some(c),
            _ => None,
        }
    }

    /// The signal, when one ended it.
    pub fn signal(self) -> Option<i32> {
        match self {
            LastExit::Signal(s) => Some(s),
            _ => None,
        }
    }

    /// Whether it ended badly: a non-zero code or a signal.
    pub fn failed(self) -> bool {
        matches!(self, LastExit::Code(c) if c != 0) || matches!(self, LastExit::Signal(_))
    }
}

impl std::fmt::Display for LastExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LastExit::Never => f.write_str("never exited"),
            LastExit::Code(c) => write!(f, "exit code {c}"),
            LastExit::Signal(s) => write!(f, "killed by signal {s}"),
        }
    }
}

/// launchd's `state` of a job, as far as oyster acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    Running,
    NotRunning,
    SpawnScheduled,
    Waiting,
    Other(String),
}

impl std::fmt::Display for JobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            JobState::Running => "running",
            JobState::NotRunning => "not running",
            JobState::SpawnScheduled => "spawn scheduled",
            JobState::Waiting => "waiting",
            JobState::Other(s) => s,
        })
    }
}

fn leading_number(s: &str) -> Option<i32> {
    let t = s.trim();
    let end = t
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || (*i == 0 && *c == '-')))
        .map_or(t.len(), |(i, _)| i);
    t[..end].parse().ok()
}

/// Parses `key = value` lines indented by exactly one tab; nested blocks (which carry their own
/// `state` and `pid`) are skipped whole.
pub fn parse_print(text: &str) -> PrintInfo {
    let mut fields = BTreeMap::new();
    let mut environment = BTreeMap::new();
    let mut arguments = vec![];
    let mut depth = 0usize;
    let mut in_env = false;
    let mut in_args = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if in_args {
            // One argument per line, taken verbatim (an argument may end in `{`); the block
            // ends at the line that closes it.
            if line == "\t}" {
                in_args = false;
                depth = depth.saturating_sub(1);
            } else {
                arguments.push(line.strip_prefix("\t\t").unwrap_or(trimmed).to_owned());
            }
            continue;
        }
        if depth == 1 && line.starts_with('\t') && !line.starts_with("\t\t") {
            in_env = trimmed == "environment = {";
            in_args = trimmed == "arguments = {";
            if let Some((k, v)) = trimmed.split_once(" = ") {
                if v != "{" {
                    fields.entry(k.to_owned()).or_insert_with(|| v.to_owned());
                }
            }
        } else if depth == 2 && in_env {
            if let Some((k, v)) = trimmed.split_once(" => ") {
                environment.insert(k.to_owned(), v.to_owned());
            }
        }
        if trimmed.ends_with('{') {
            depth += 1;
        } else if trimmed == "}" {
            depth = depth.saturating_sub(1);
        }
    }
    PrintInfo {
        fields,
        environment,
        arguments,
    }
}

impl Launchctl {
    /// Whether `label` is disabled in `domain` (`print-disabled`): `Some(true)` disabled,
    /// `Some(false)` explicitly enabled, `None` when launchd has no override for it. A disabled
    /// label does not load at login and makes `bootstrap` fail (LAUNCHD.md).
    pub fn disabled(&self, domain: &str, label: &str) -> anyhow::Result<Option<bool>> {
        let f = self.call(&["print-disabled", domain])?;
        if f.code != 0 {
            return Err(failed(f).into());
        }
        Ok(parse_disabled(&f.stdout, label))
    }
}

/// Reads `"label" => disabled|enabled` (or `=> true|false` on older releases) for one label.
pub fn parse_disabled(text: &str, label: &str) -> Option<bool> {
    let quoted = format!("\"{label}\"");
    text.lines().find_map(|line| {
        let (k, v) = line.trim().split_once("=>")?;
        (k.trim() == quoted).then(|| matches!(v.trim(), "disabled" | "true"))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn print_disabled_both_styles() {
        let text = "disabled services = {\n\t\"com.oysterun.host\" => disabled\n\t\"com.oysterun.host.dev\" => enabled\n\t\"x\" => true\n}\n";
        assert_eq!(super::parse_disabled(text, "com.oysterun.host"), Some(true));
        assert_eq!(
            super::parse_disabled(text, "com.oysterun.host.dev"),
            Some(false)
        );
        assert_eq!(super::parse_disabled(text, "x"), Some(true));
        assert_eq!(super::parse_disabled(text, "com.oysterun"), None);
    }

    use super::*;

    const SAMPLE: &str = "gui/501/com.oysterun.host = {\n\tactive count = 1\n\tpath = /Users/u/Library/LaunchAgents/com.oysterun.host.plist\n\ttype = LaunchAgent\n\tstate = running\n\tprogram = /opt/homebrew/bin/node\n\targuments = {\n\t\t/opt/homebrew/bin/node\n\t\t/opt/oysterun/host-service/server.mjs\n\t}\n\tdefault environment = {\n\t\tPATH => /default\n\t\tHOME => /h\n\t}\n\tenvironment = {\n\t\tPATH => /usr/bin\n\t}\n\tendpoints = {\n\t\t\"x\" = {\n\t\t\tstate = waiting\n\t\t\tpid = 9\n\t\t}\n\t}\n\tpid = 1076\n\tlast exit code = (never exited)\n}\n";

    #[test]
    fn parses_depth_one_only() {
        let p = parse_print(SAMPLE);
        assert_eq!(p.state(), Some("running"));
        assert_eq!(p.pid(), Some(1076));
        assert_eq!(
            p.path(),
            Some(Path::new(
                "/Users/u/Library/LaunchAgents/com.oysterun.host.plist"
            ))
        );
        assert_eq!(p.last_exit(), Some(LastExit::Never));
        assert!(p.running());
        assert_eq!(
            p.environment.get("PATH").map(String::as_str),
            Some("/usr/bin")
        );
        assert_eq!(
            p.environment.len(),
            1,
            "default environment is not the job's"
        );
        assert_eq!(
            p.arguments,
            [
                "/opt/homebrew/bin/node",
                "/opt/oysterun/host-service/server.mjs"
            ]
        );
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Fuzz: any text parses without panicking.
        #[test]
        fn print_parser_never_panics(text in r"(\PC|\t|\n|\{|\}| = | => ){0,200}") {
            let _ = parse_print(&text);
        }

        /// Generated print output with nested blocks (carrying their own state and pid) yields
        /// exactly the depth-one fields.
        #[test]
        fn depth_one_fields_are_recovered_exactly(
            fields in proptest::collection::btree_map("[a-z][a-z ]{0,10}[a-z]", "[ -~&&[^{}]]{1,20}", 0..8),
            nested in proptest::collection::vec(("[a-z]{1,8}", "[a-z0-9]{1,8}"), 0..4),
        ) {
            let mut text = String::from("gui/501/x = {\n");
            for (i, (k, v)) in fields.iter().enumerate() {
                let v = v.trim();
                if v.is_empty() || v.ends_with('{') { continue; }
                text += &format!("\t{k} = {v}\n");
                if i < nested.len() {
                    let (name, val) = &nested[i];
                    text += &format!("\t{name}block = {{\n\t\tstate = {val}\n\t\tpid = 1\n\t\tdeeper = {{\n\t\t\tpath = /x\n\t\t}}\n\t}}\n");
                }
            }
            text += "}\n";
            let p = parse_print(&text);
            for (k, v) in &fields {
                let v = v.trim();
                if v.is_empty() || v.ends_with('{') { continue; }
                prop_assert_eq!(p.get(k), Some(v));
            }
            if !fields.contains_key("pid") { prop_assert_eq!(p.pid(), None); }
            if !fields.contains_key("state") { prop_assert_eq!(p.state(), None); }
        }
    }

    #[test]
    fn nested_state_and_pid_never_leak_up() {
        let text = "x = {\n\tstate = not running\n\tsub = {\n\t\tstate = running\n\t\tpid = 5\n\t}\n\tlast exit code = 78: EX_CONFIG\n}\n";
        let p = parse_print(text);
        assert_eq!(p.state(), Some("not running"));
        assert_eq!(p.pid(), None);
        assert!(!p.running());
        assert_eq!(p.last_exit(), Some(LastExit::Code(78)));
        let killed = parse_print(
            "x = {\n\tstate = not running\n\tlast terminating signal = Killed: 9\n\truns = 3\n}\n",
        );
        assert_eq!(killed.last_exit(), Some(LastExit::Signal(9)));
        assert_eq!(killed.runs(), Some(3));
    }
}
