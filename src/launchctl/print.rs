//! The parsers for `launchctl print` and `print-disabled` output. Apple says `print` output
//! "is NOT API": the parsing stays in this one place, reads only what oyster acts on, and falls
//! back to "unknown" rather than "wrong".

use std::collections::BTreeMap;
use std::path::Path;

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
    /// instead (docs/launchd.md). `None` when launchd printed neither.
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
            // Between launchd's fork and the exec of the program (`xpcproxy` on recent
            // releases): starting, not a crash.
            Some("spawning" | "xpcproxy") => JobState::Spawning,
            Some(other) => JobState::Other(other.to_owned()),
            None => JobState::Other("unknown".into()),
        }
    }

    /// launchd runs an instance: `state = running` with a pid.
    pub fn running(&self) -> bool {
        self.job_state() == JobState::Running && self.pid().is_some()
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
    Spawning,
    Other(String),
}

impl std::fmt::Display for JobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            JobState::Running => "running",
            JobState::NotRunning => "not running",
            JobState::SpawnScheduled => "spawn scheduled",
            JobState::Waiting => "waiting",
            JobState::Spawning => "spawning",
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

/// Parses the job's own lines of a `launchctl print` block. launchd indents each level by one
/// tab, so the depth of a line is its leading tabs: the job's fields are the `key = value`
/// lines with exactly one, its `environment`/`arguments` blocks the two-tab lines under the
/// one-tab `environment = {` / `arguments = {` line. Nested blocks (coalitions, endpoints,
/// event triggers) carry their own `state` and `pid` at deeper levels and are never read. A
/// brace inside a value (a path or an environment value ending in `{`) is only text: nothing
/// here counts braces.
pub fn parse_print(text: &str) -> PrintInfo {
    #[derive(PartialEq)]
    enum Block {
        None,
        Environment,
        Arguments,
    }
    let mut fields = BTreeMap::new();
    let mut environment = BTreeMap::new();
    let mut arguments = vec![];
    let mut block = Block::None;
    for line in text.lines() {
        let tabs = line.len() - line.trim_start_matches('\t').len();
        let body = &line[tabs..];
        match tabs {
            1 => {
                block = Block::None;
                let Some((k, v)) = body.split_once(" = ") else {
                    continue;
                };
                if v == "{" {
                    block = match k {
                        "environment" => Block::Environment,
                        "arguments" => Block::Arguments,
                        _ => Block::None,
                    };
                } else {
                    fields.entry(k.to_owned()).or_insert_with(|| v.to_owned());
                }
            }
            // One argument per line, taken verbatim after the two tabs of indentation.
            2.. if block == Block::Arguments => arguments.push(line[2..].to_owned()),
            2 if block == Block::Environment => {
                if let Some((k, v)) = body.split_once(" => ") {
                    environment.insert(k.to_owned(), v.to_owned());
                }
            }
            _ => {}
        }
    }
    PrintInfo {
        fields,
        environment,
        arguments,
    }
}

/// Reads `"label" => disabled|enabled` (or `=> true|false` on older releases) for one label.
pub fn parse_disabled(text: &str, label: &str) -> Option<bool> {
    let quoted = format!("\"{label}\"");
    text.lines().find_map(|line| {
        let (k, v) = line.trim().rsplit_once("=>")?;
        (k.trim() == quoted).then(|| matches!(v.trim(), "disabled" | "true"))
    })
}

#[cfg(test)]
#[path = "print_tests.rs"]
mod tests;
