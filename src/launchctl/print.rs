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
        #![proptest_config(ProptestConfig::with_cases(crate::proptest_cases(2000)))]

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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::proptest_cases(1000)))]

        /// Braces, ` = {` and ` => {` inside values (an environment value, a path, an
        /// argument) open no block: the job's pid and state are read whatever the values hold.
        #[test]
        fn values_with_braces_never_open_a_block(
            env_values in proptest::collection::vec(r"[ -~]{0,16}(\{| = \{| => \{|\}|)", 1..5),
            path_tail in r"[ -~]{0,10}(\{| = \{|)",
            arg in r"[ -~]{0,10}(\{| => \{|\}|)",
        ) {
            let mut text = String::from("gui/501/x = {\n\tactive count = 1\n");
            text += &format!("\tpath = /Users/u/{path_tail}\n\targuments = {{\n\t\t/bin/node\n\t\t{arg}\n\t}}\n");
            text += "\tenvironment = {\n";
            for (i, v) in env_values.iter().enumerate() {
                text += &format!("\t\tK{i} => {v}\n");
            }
            text += "\t}\n\n\tstate = running\n\tpid = 4242\n\tresource coalition = {\n\t\tstate = active\n\t}\n}\n";
            let p = parse_print(&text);
            prop_assert_eq!(p.pid(), Some(4242));
            prop_assert_eq!(p.state(), Some("running"));
            prop_assert!(p.running());
            let want_path = format!("/Users/u/{path_tail}");
            prop_assert_eq!(p.get("path"), Some(want_path.as_str()));
            prop_assert_eq!(p.arguments.clone(), vec!["/bin/node".to_owned(), arg.clone()]);
            for (i, v) in env_values.iter().enumerate() {
                prop_assert_eq!(p.environment.get(&format!("K{i}")), Some(v));
            }
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
