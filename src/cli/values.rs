//! Values as people type them on the command line, checked with messages in plain words.

use std::path::PathBuf;

use clap::ValueEnum;

/// A port as people type it: a whole number from 1 to 65535 (said in those words, not Rust's).
pub fn port_number(s: &str) -> Result<u16, String> {
    match s.trim().parse::<u64>() {
        #[allow(clippy::cast_possible_truncation)] // the pattern bounds n to a u16
        Ok(n @ 1..=65535) => Ok(n as u16),
        _ => Err("a port is a whole number from 1 to 65535".into()),
    }
}

/// A count or duration as people type it: a whole number, 0 or more.
pub fn whole_number(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| "give a whole number (0, 1, 2, …)".into())
}

/// A wait: a whole number no larger than a day (a longer one is a typo, and would overflow a
/// deadline).
pub fn bounded_wait(s: &str) -> Result<u64, String> {
    const MAX: u64 = 86_400;
    match whole_number(s)? {
        n if n <= MAX => Ok(n),
        _ => Err(format!(
            "give a whole number up to {MAX} (a day in seconds)"
        )),
    }
}

/// A settle period in milliseconds: a whole number up to ten minutes.
pub fn bounded_settle(s: &str) -> Result<u64, String> {
    const MAX: u64 = 600_000;
    match whole_number(s)? {
        n if n <= MAX => Ok(n),
        _ => Err(format!("give a whole number of milliseconds up to {MAX}")),
    }
}

impl super::SetupArgs {
    /// The choices the user typed that a re-run needs to plan the same Host (`--root`,
    /// `--node-bin`, `--port`, `--mode`, `--agent-folder`, `--no-start`), as shell words: a
    /// suggested `oyster setup …` without them would plan another one, or find no root.
    pub fn retyped(&self) -> String {
        let mut words = vec![];
        let mut path = |flag: &str, p: &Option<PathBuf>| {
            if let Some(p) = p {
                words.push(format!("{flag} {}", shell_word(&p.display().to_string())));
            }
        };
        path("--root", &self.host.root);
        path("--node-bin", &self.host.node_bin);
        path("--agent-folder", &self.agent_folder);
        if let Some(port) = self.host.port {
            words.push(format!("--port {port}"));
        }
        if let Some(v) = self.mode.and_then(|m| m.to_possible_value()) {
            words.push(format!("--mode {}", v.get_name()));
        }
        if self.no_start {
            words.push("--no-start".to_owned());
        }
        words.iter().map(|w| format!(" {w}")).collect()
    }
}

pub(crate) use crate::output::shell_word;
