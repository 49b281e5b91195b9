//! The syscall budget of discovery, measured with strace (ignored by default: `.ci/run`
//! installs strace and runs them; run explicitly, a missing strace or a refused ptrace fails
//! them): resolving a provider found at PATH
//! position k runs no program besides oyster itself and makes O(k) file lookups; an
//! unsupported name makes none at all.
//!
//! Linux only: strace is Linux's; macOS's equivalent (dtruss) needs System Integrity
//! Protection switched off, which no Mac a contributor or CI uses has.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;

use crate::common::{needed_tool, TestContext, BIN};

/// Runs oyster under `strace -f -e trace=%file,execve`, returning the trace lines.
fn traced(t: &TestContext, args: &[&str]) -> Option<Vec<String>> {
    let log = t.path("strace.log");
    let strace = needed_tool("strace", "apt-get install strace");
    let mut c = Command::new(strace);
    c.args(["-f", "-qq", "-e", "trace=%file,execve", "-o"]).arg(&log).arg(BIN).args(args);
    c.env_clear().env("HOME", &t.home).env("PATH", std::env::join_paths(&t.path_dirs).unwrap());
    let out = c.output().unwrap_or_else(|e| panic!("strace is not available ({e})"));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text.contains("execve("),
        "strace could not trace here (ptrace refused?): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(text.lines().map(str::to_owned).collect())
}

#[test]
#[ignore = "needs strace and ptrace (.ci/run installs and runs it)"]
fn resolution_at_path_position_k_is_one_exec_and_o_k_lookups() {
    let mut last = 0;
    for k in [1usize, 4, 8] {
        let mut t = TestContext::new();
        for i in 0..k {
            let d = t.path(&format!("d{i}"));
            std::fs::create_dir_all(&d).unwrap();
            t.path_dirs.push(d);
        }
        t.fake_exe(&t.path(&format!("d{}", k - 1)).join("claude"));
        let Some(lines) = traced(&t, &["providers", "resolve", "claude", "--json"]) else {
            return;
        };
        let execs: Vec<_> = lines.iter().filter(|l| l.contains("execve(")).collect();
        assert_eq!(execs.len(), 1, "only oyster's own exec: {execs:#?}");
        let lookups = lines.iter().filter(|l| l.contains("/claude\"")).count();
        assert!(lookups >= k, "each PATH dir is looked at: {lookups} for k={k}");
        assert!(lookups <= 3 * k + 2, "O(k) lookups: {lookups} for k={k}:\n{}", lines.join("\n"));
        assert!(lookups > last, "grows with k");
        last = lookups;
        t.assert_nothing_executed();
    }
}

#[test]
#[ignore = "needs strace and ptrace (.ci/run installs and runs it)"]
fn an_unsupported_name_touches_nothing() {
    let t = TestContext::new();
    let Some(lines) = traced(&t, &["providers", "resolve", "gemini"]) else {
        return;
    };
    let home = t.home.display().to_string();
    let touching: Vec<_> = lines
        .iter()
        .filter(|l| {
            !l.contains("execve(")
                && (l.contains(&home) || l.contains("gemini") || l.contains("/bin/"))
        })
        .collect();
    assert!(touching.is_empty(), "file syscalls after the name was refused: {touching:#?}");
    assert!(!Path::new(&t.home).join(".oysterun").exists());
}
