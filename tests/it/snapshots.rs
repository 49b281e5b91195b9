//! The human output people read, as insta snapshots: `doctor`, `agent status`,
//! `providers status`, the setup plan, and the main errors, from the real binary.
//!
//! What differs between runs or machines is filtered by insta's filters: the test's temp dir
//! and HOME, the real `node` (its path and version), the simulator's path, ports, pids, the
//! uid in launchd domains and durations. Review a changed `.snap` like code: it is the
//! contract people see.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::{args, free_port, real_node, sim_bin, Run, TestContext, BIN};

/// The version the real node reports (`v22.1.0`), to filter it out.
fn real_node_version() -> String {
    let out = std::process::Command::new(real_node()).arg("--version").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The fixed system directories of a generated PATH (`src/host/launchenv.rs`), in order,
/// without `node_dir`, which the PATH already starts with.
fn system_dirs_but(node_dir: &str) -> Vec<&'static str> {
    crate::common::SYSTEM_DIRS.into_iter().filter(|d| *d != node_dir).collect()
}

/// insta settings whose filters replace the machine- and run-specific parts of a snapshot by
/// stable placeholders (insta's `filters` feature; applied in order, so a path is replaced
/// before a prefix of it).
pub fn settings(t: &TestContext, ports: &[u16]) -> insta::Settings {
    let node = real_node();
    let mut literal: Vec<(String, &str)> = vec![
        (t.home.display().to_string(), "[HOME]"),
        (t.dir.path().display().to_string(), "[TMP]"),
        (sim_bin().display().to_string(), "[LAUNCHCTL_SIM]"),
        (BIN.to_owned(), "[OYSTER]"),
        (node.display().to_string(), "[NODE]"),
        (real_node_version(), "[NODE_VERSION]"),
    ];
    // Longest first, so a path is replaced before a prefix of it.
    literal.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    for (from, to) in literal {
        s.add_filter(&regex_lite::escape(&from), to);
    }
    for port in ports {
        s.add_filter(&format!(r"\b{port}\b"), "[PORT]");
    }
    // The generated PATH starts with the real node's directory, which the fixed system
    // directories then leave out (`src/host/launchenv.rs`): both differ between machines.
    let node_dir = node.parent().unwrap().display().to_string();
    let system_rest = system_dirs_but(&node_dir);
    s.add_filter(
        &format!(
            r#"(PATH=|PATH": "|PATH is "|should be "|<string>){}:"#,
            regex_lite::escape(&node_dir)
        ),
        "${1}[NODE_DIR]:",
    );
    s.add_filter(&format!(r":{}\b", regex_lite::escape(&system_rest.join(":"))), ":[SYSTEM_DIRS]");
    // What the user database says of whoever runs the tests, in the Host's whole environment
    // (`doctor --json`).
    for key in ["USER", "LOGNAME", "SHELL", "TMPDIR"] {
        s.add_filter(&format!(r#""{key}": "[^"]*""#), format!(r#""{key}": "[{key}]""#));
    }
    // Where the kernel hides Node's environment (macOS, an official Node build:
    // docs/launchd.md) the strongest proof is the launch program's record; which proof a Host
    // got is checked elsewhere (`common::strongest_proof`), so the snapshots keep `live`'s words.
    if !crate::common::kernel_shows_nodes_environment() {
        for (re, to) in [
            (
                r"environment proven by the launch program's own record \(the kernel hides the live one\)",
                "live environment matches (read from the kernel)",
            ),
            (r"(env_proof: |environment proof: )exec\b", "${1}live"),
            (r"environment proven \(exec\)", "environment proven (live)"),
            (r#""env_proof": "exec""#, r#""env_proof": "live""#),
        ] {
            s.add_filter(re, to);
        }
    }
    for (re, to) in [
        (r"\bpid \d+", "pid [PID]"),
        (r"\bpid:(\s+)\d+", "pid:${1}[PID]"),
        // `oyster list`'s PID column, after the PORT column.
        (r"\[PORT\](\s+)\d+\b", "[PORT]${1}[PID]"),
        (r"\b(gui|user)/\d+", "$1/[UID]"),
        (r"\b\d+(\.\d+)? ?(ms|s)\b", "[DURATION]"),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?", "[TIME]"),
    ] {
        s.add_filter(re, to);
    }
    s
}

#[test]
fn the_filters_hide_what_changes_between_runs_and_keep_the_rest() {
    let t = TestContext::new();
    let text = format!(
        "{home}/x {tmp}/y {node} {version} 127.0.0.1:{port} pid 4242, pid:   77 gui/501 user/0 \
         after 123 ms, within 1.5 s, at 2025-01-02T03:04:05.678Z; keep 8802 and v18.19.0",
        home = t.home.display(),
        tmp = t.dir.path().display(),
        node = real_node().display(),
        version = real_node_version(),
        port = 43210,
    );
    settings(&t, &[43210]).bind(|| {
        insta::assert_snapshot!(text, @"[HOME]/x [TMP]/y [NODE] [NODE_VERSION] 127.0.0.1:[PORT] pid [PID], pid:   [PID] gui/[UID] user/[UID] after [DURATION], within [DURATION], at [TIME]; keep 8802 and v18.19.0");
    });
}

#[test]
fn the_filters_hide_the_machines_node_directory_and_user_in_a_generated_environment() {
    let t = TestContext::new();
    let node_dir = real_node().parent().unwrap().display().to_string();
    let system = system_dirs_but(&node_dir);
    let path = format!("{node_dir}:{}/.local/bin:{}", t.home.display(), system.join(":"));
    let text = format!(
        "PATH={path}\n<string>{path}</string>\n\"PATH\": \"{path}\", \"USER\": \"ann\", \"SHELL\": \"/bin/zsh\"\n\
         searched /opt/homebrew/bin, /usr/local/bin; kept /usr/bin:/bin"
    );
    settings(&t, &[]).bind(|| {
        insta::assert_snapshot!(text, @r#"
        PATH=[NODE_DIR]:[HOME]/.local/bin:[SYSTEM_DIRS]
        <string>[NODE_DIR]:[HOME]/.local/bin:[SYSTEM_DIRS]</string>
        "PATH": "[NODE_DIR]:[HOME]/.local/bin:[SYSTEM_DIRS]", "USER": "[USER]", "SHELL": "[SHELL]"
        searched /opt/homebrew/bin, /usr/local/bin; kept /usr/bin:/bin
        "#);
    });
}

/// One run as a snapshot: the command line, the exit code, stdout and stderr.
pub fn shown(args: &[&str], r: &Run) -> String {
    format!(
        "$ oyster {}\nexit: {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        r.code(),
        r.stdout(),
        r.stderr()
    )
}

/// Runs `oyster args` and snapshots it under `name`, filtered.
#[track_caller]
pub fn snap(name: &str, t: &TestContext, args: &[&str], ports: &[u16]) -> Run {
    let r = t.run(args);
    settings(t, ports).bind(|| insta::assert_snapshot!(name, shown(args, &r)));
    r
}

/// [`TestContext::with_claude`], plus the agent installed and verified for stack `snap` on a
/// free port: the context and that port.
pub fn installed() -> (TestContext, u16) {
    let port = free_port();
    let t = TestContext::with_claude();
    t.run(args(&["agent", "install"]).stack("snap").port(port).settle(200)).ok();
    (t, port)
}

/// Runs each `(name, args, exit code)` row as [`snap`] on `t`, each run's code checked.
#[track_caller]
pub fn snaps(t: &TestContext, ports: &[u16], rows: &[(&str, &[&str], i32)]) {
    for (name, args, code) in rows {
        snap(name, t, args, ports).fails_with(*code);
    }
}

/// One verified agent as each read-only view shows it (doctor, status, print, host status),
/// then the refused `host stop` and `kill`: one install serves every view.
#[test]
fn every_view_of_one_verified_agent() {
    let (t, port) = installed();
    snaps(
        &t,
        &[port],
        &[
            ("doctor_verified", &["doctor", "--stack", "snap"], 0),
            ("agent_status_verified", &["agent", "status", "--stack", "snap"], 0),
            ("agent_print", &["agent", "print", "--stack", "snap"], 0),
        ],
    );
    crate::snapshots_more::snap_docs(
        &t,
        &[port],
        &[
            ("doctor_verified_json", &["doctor", "--stack", "snap", "--json"], 0),
            ("host_status_json_launchd", &["host", "status", "snap", "--json"], 0),
        ],
    );
    t.assert_nothing_executed();
    // The JSON a script reads, as the binary printed it: every key, its order and each value's
    // type are pinned; the run-specific numbers are filtered like the human output. (The text,
    // not insta's `assert_json_snapshot!`: that re-serializes through serde, and with
    // serde_json's `arbitrary_precision`, which this crate uses, a number would come out as a
    // private struct.)
    let r = t.run(["agent", "status", "--stack", "snap", "--json"]).ok();
    let mut s = settings(&t, &[port]);
    s.add_filter(r#""pid": \d+"#, r#""pid": [PID]"#);
    s.bind(|| insta::assert_snapshot!("agent_status_verified_json", r.stdout()));
    snaps(
        &t,
        &[port],
        &[
            ("error_host_stop_under_launchd", &["host", "stop", "--stack", "snap"], 1),
            ("kill", &["kill", "snap"], 0),
        ],
    );
}

/// What a HOME with claude and nothing installed shows (doctor, status, a refused restart),
/// and how `providers status` shows a provider disabled, broken or missing.
#[test]
fn a_home_with_nothing_installed() {
    let t = TestContext::with_claude();
    snap("doctor_fresh_home", &t, &["doctor"], &[]);
    snap("agent_status_not_installed", &t, &["agent", "status"], &[]);
    snaps(&t, &[], &[("error_restart_not_installed", &["restart"], 1)]);
    for (set, name) in [
        (["codex", ""], "providers_status_available_disabled"),
        (["claude", "/gone/claude"], "providers_status_broken_manual_not_found"),
    ] {
        let t = TestContext::with_claude();
        t.run(["providers", "set", set[0], set[1]]).ok();
        snaps(&t, &[], &[(name, &["providers", "status"], 0)]);
    }
}

#[test]
fn setup_plan_without_a_terminal() {
    // The pinned node lives in a prefix of the test's own, so the npm that the plan names is
    // the same on every machine (nothing runs it: no terminal, no --install-providers).
    let port = free_port();
    let t = TestContext::with_claude();
    let bin = t.node_prefix();
    let (p, node) = (port.to_string(), bin.join("node"));
    let args = ["setup", "--stack", "snap", "--port", &p, "--node-bin", node.to_str().unwrap()];
    snap("setup_no_start", &t, &[&args[..], &["--no-start"]].concat(), &[port]).ok();
    t.assert_nothing_executed();
}

#[test]
fn errors_of_a_fresh_home() {
    let t = TestContext::new();
    let nothing = t.path("nothing");
    let node = real_node();
    snaps(
        &t,
        &[],
        &[
            ("error_unsupported_provider", &["providers", "resolve", "gemini"], 2),
            ("error_invalid_stack_name", &["config", "sync", "--stack", "Bad_Name"], 2),
            (
                "error_missing_root",
                &[
                    "agent",
                    "print",
                    "--root",
                    nothing.to_str().unwrap(),
                    "--node-bin",
                    node.to_str().unwrap(),
                ],
                2,
            ),
        ],
    );
    t.write_config("{\"claude_command\": \"/x\",\n  \"port\": 88");
    snaps(&t, &[], &[("error_corrupt_config", &["providers", "status"], 2)]);
}

/// A bad `--port` and an unknown subcommand: clap's errors, in oyster's words
/// (docs/bad-input.md names this test).
#[test]
fn error_clap_bad_port_and_unknown_command() {
    let t = TestContext::new();
    snaps(
        &t,
        &[],
        &[
            ("error_bad_port", &["config", "sync", "--port", "80000"], 2),
            ("error_unknown_command", &["kil"], 2),
        ],
    );
}

/// A `node` that only prints `version`.
fn fake_node(t: &TestContext, version: &str) -> PathBuf {
    let p = t.path("oldnode/node");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, format!("#!/bin/sh\necho {version}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// `agent print` refused for the Node it was given: too old, missing, none anywhere (this
/// last only where no system node sits in the fallback directories, as on CI's Linux).
#[test]
fn errors_of_the_node_given() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    let old = fake_node(&t, "v18.19.0");
    let print = ["agent", "print", "--root", root.to_str().unwrap()];
    let old = old.to_str().unwrap();
    let with_node = |node| [&print[..], &["--node-bin", node]].concat();
    snaps(
        &t,
        &[],
        &[
            ("error_node_too_old", &with_node(old), 2),
            ("error_node_bin_missing", &with_node("/nowhere/node"), 2),
        ],
    );
    if !system_node() {
        snaps(&t, &[], &[("error_no_node_anywhere", &print, 1)]);
    }
}

/// Whether a system node sits in the fallback directories (a Mac's Homebrew, /usr/local).
fn system_node() -> bool {
    ["/opt/homebrew/bin/node", "/usr/local/bin/node"].iter().any(|p| Path::new(p).exists())
}

/// A `node` in `<test dir>/<dir>/node` that only prints `version`, its directory on PATH.
fn node_on_path(t: &mut TestContext, dir: &str, version: &str) {
    let p = t.path(&format!("{dir}/node"));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, format!("#!/bin/sh\necho {version}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    t.path_dirs.push(p.parent().unwrap().to_owned());
}

#[test]
fn note_older_nodes_passed_over() {
    let mut t = TestContext::new();
    let root = t.fixture_root("root");
    node_on_path(&mut t, "old", "v18.19.0");
    node_on_path(&mut t, "new", "v22.1.0");
    let r = t.run(args(&["agent", "print"]).root(&root));
    settings(&t, &[]).bind(|| {
        insta::assert_snapshot!("note_older_nodes_passed_over", r.stderr());
    });
    r.ok();
}

#[test]
fn error_only_older_nodes_found() {
    if system_node() {
        return;
    }
    let mut t = TestContext::new();
    let root = t.fixture_root("root");
    node_on_path(&mut t, "old", "v18.19.0");
    node_on_path(&mut t, "older", "v16.20.2");
    let print: &[&str] = &["agent", "print", "--root", root.to_str().unwrap()];
    snaps(&t, &[], &[("error_only_older_nodes_found", print, 1)]);
}

#[test]
fn error_unknown_stack() {
    let t = TestContext::with_claude();
    t.run(args(&["config", "sync"]).stack("real").port(18999)).ok();
    snaps(&t, &[], &[("error_unknown_stack", &["status", "--stack", "nope"], 2)]);
}

#[test]
fn errors_of_a_custom_stack_without_a_port_and_of_a_relative_config_dir() {
    let mut t = TestContext::new();
    t.pin_host_env();
    let dev: &[&str] = &["agent", "print", "--stack", "dev"];
    snaps(&t, &[], &[("error_custom_stack_without_port", dev, 2)]);
    let mut t = TestContext::new();
    t.extra_env.push(("OYSTERUN_CONFIG_DIR".into(), "relative/dir".into()));
    snaps(&t, &[], &[("error_relative_config_dir", &["config", "sync"], 2)]);
}

/// `snap`, with runs of spaces collapsed: a table's padding follows the width of pids and
/// ports, which differ between runs.
#[track_caller]
pub fn snap_table(name: &str, t: &TestContext, args: &[&str], ports: &[u16]) -> Run {
    let r = t.run(args);
    let mut s = settings(t, ports);
    s.add_filter(" {2,}", "  ");
    s.bind(|| insta::assert_snapshot!(name, shown(args, &r)));
    r
}

#[test]
fn list_of_three_stacks() {
    let (t, p1) = installed();
    let (p2, p3) = (free_port(), free_port());
    t.run(args(&["agent", "install"]).stack("snap2").port(p2).settle(200)).ok();
    t.run(["agent", "stop", "--stack", "snap2"]).ok();
    t.run(args(&["config", "sync"]).stack("snap3").port(p3)).ok();
    snap_table("list_three_stacks", &t, &["list"], &[p1, p2, p3]).ok();
}

/// `agent stop`, the status of the stopped stack, and `agent start`.
#[test]
fn agent_stop_status_and_start() {
    let (t, port) = installed();
    snaps(
        &t,
        &[port],
        &[
            ("agent_stop", &["agent", "stop", "--stack", "snap"], 0),
            ("agent_status_stopped", &["status", "--stack", "snap"], 1),
            ("agent_start", &["agent", "start", "--stack", "snap", "--settle-ms", "200"], 0),
        ],
    )
}
