//! Release Setup (docs/behaviour.md §7): the side-effect-free cancel through a real pseudo-terminal,
//! non-interactive runs, rollback after each kind of failure, and the merge in every mode.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use crate::common::{self, free_port, Entry, TestContext};
use crate::common::{has_all, has_none};

pub(crate) const CANCELLED: &str = "Installation cancelled; no changes were made.";

pub(crate) struct Setup {
    pub(crate) t: TestContext,
    root: PathBuf,
    node: PathBuf,
    port: u16,
}

impl Setup {
    /// A HOME with no provider installed, a node prefix whose npm is a recording fake.
    pub(crate) fn new(npm_exit: i32) -> Setup {
        Setup::with_npm(npm_exit, 0)
    }

    /// [`Setup::new`] whose npm takes `install_secs` seconds over each install.
    pub(crate) fn with_npm(npm_exit: i32, install_secs: u32) -> Setup {
        Setup::in_context(TestContext::new(), npm_exit, install_secs)
    }

    /// [`Setup::with_npm`] in `t` (a world with a real user manager, say).
    pub(crate) fn in_context(mut t: TestContext, npm_exit: i32, install_secs: u32) -> Setup {
        let root = t.fixture_root("root");
        let bin = t.node_prefix();
        let log = t.path("npm.log");
        let npm = format!(
            "#!/bin/sh\necho \"$*\" >> '{log}'\n[ {npm_exit} -ne 0 ] && {{ echo 'npm ERR! simulated failure' >&2; exit {npm_exit}; }}\n\
             [ \"$1\" = install ] && sleep {install_secs}\n\
             case \"$5\" in @anthropic-ai/claude-code) b=claude;; @openai/codex) b=codex;; *) exit 9;; esac\n\
             if [ \"$1\" = install ]; then echo \"added 1 package: $5\"; mkdir -p \"$4/bin\"; printf '#!/bin/sh\\necho executed >> {exec}\\n' > \"$4/bin/$b\"; chmod +x \"$4/bin/$b\";\n\
             else rm -f \"$4/bin/$b\"; fi\n",
            log = log.display(),
            exec = t.exec_log.display(),
        );
        std::fs::write(bin.join("npm"), npm).unwrap();
        std::fs::set_permissions(bin.join("npm"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(t.path("tmp")).unwrap();
        t.extra_env.push(("TMPDIR".into(), t.path("tmp").display().to_string()));
        Setup { t, root, node: bin.join("node"), port: free_port() }
    }

    pub(crate) fn args(&self, extra: &[&str]) -> Vec<String> {
        common::args(&["setup"])
            .stack("st")
            .port(self.port)
            .root(&self.root)
            .node(&self.node)
            .wait(10, 300)
            .extra(extra)
            .into()
    }

    /// The port every setup of this fixture asks for.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn npm_calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.t.path("npm.log"))
            .map(|s| s.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    pub(crate) fn config(&self) -> PathBuf {
        self.t.home.join(".oysterun-stacks/st/host/config.json")
    }

    /// Where a setup of stack `st` killed outright leaves its receipt.
    pub(crate) fn receipt(&self) -> PathBuf {
        self.t.home.join(".oysterun-stacks/st/run/setup-pending")
    }

    /// `oyster setup` with `extra`, in the background, no terminal and its output dropped (a
    /// setup the test kills).
    pub(crate) fn spawn_quiet(&self, extra: &[&str]) -> std::process::Child {
        use std::process::Stdio;
        let mut c = self.t.cmd();
        c.args(self.args(extra)).stdin(Stdio::null()).stdout(Stdio::null());
        c.stderr(Stdio::null()).spawn().unwrap()
    }

    /// Every path under HOME, TMPDIR and the node prefix with its type, mode and content, and
    /// (when `mtimes`) its mtime: a cancel must not even touch a file; a rollback restores
    /// content.
    fn snapshot(&self, mtimes: bool, skip_logs: bool) -> BTreeMap<PathBuf, Entry> {
        self.snapshot_of(mtimes, skip_logs, false)
    }

    /// [`Setup::snapshot`] without oyster's per-user lock directory (`~/.local/state/oyster`, outside
    /// every stack): a setup that took the stack's lock and rolled back leaves its lock file
    /// there, and only there (a lock file is never removed: one waiting on it would hold an
    /// unlinked file).
    pub(crate) fn snapshot_but_locks(&self, skip_logs: bool) -> BTreeMap<PathBuf, Entry> {
        self.snapshot_of(false, skip_logs, true)
    }

    fn snapshot_of(&self, mtimes: bool, skip_logs: bool, locks: bool) -> BTreeMap<PathBuf, Entry> {
        let mut out = BTreeMap::new();
        for base in [self.t.home.clone(), self.t.path("tmp"), self.t.path("nodepfx")] {
            out.extend(common::tree(&base));
        }
        if !mtimes {
            out.values_mut().for_each(|e| e.mtime_ns = 0);
        }
        if skip_logs {
            out.retain(|k, _| !k.to_string_lossy().contains("/logs"));
        }
        if locks {
            out.retain(|k, _| !self.t.is_lock_path(k));
        }
        out
    }

    /// Runs setup on a real pseudo-terminal, typing `answer` at the prompt.
    /// A setup that gets as far as the Host login is asked for its password, which this
    /// types (item 1 of issue 38: `host_login.rs`).
    pub(crate) fn pty(&self, answer: &[u8], extra: &[&str]) -> serde_json::Value {
        let mut c = self.t.pty_cmd(answer, self.args(extra));
        c.env("PTY_PASSWORD", "setup-test password");
        common::pty_report(&mut c)
    }

    /// [`Setup::pty`] of `--no-start`, answering `answer`, which must complete (exit 0): what
    /// the terminal showed.
    fn completes(&self, answer: &[u8]) -> String {
        let r = self.pty(answer, &["--no-start"]);
        let output = r["output"].as_str().unwrap().to_owned();
        assert_eq!(r["code"], 0, "{output}");
        has_all(&output, &["Setup complete"]);
        output
    }
}

#[test]
fn every_way_of_saying_no_at_a_real_terminal_changes_nothing() {
    for (name, answer) in [
        ("Enter", &b"\r"[..]),
        ("n", b"n\r"),
        ("no", b"no\r"),
        ("EOF", b"\x04"),
        ("Ctrl-C", b"\x03"),
    ] {
        // With and without an existing config.
        for existing in [false, true] {
            let s = Setup::new(0);
            if existing {
                std::fs::create_dir_all(s.config().parent().unwrap()).unwrap();
                std::fs::write(s.config(), "{\"keep\": 1}").unwrap();
            }
            let before = s.snapshot(true, false);
            let r = s.pty(answer, &[]);
            let output = r["output"].as_str().unwrap();
            assert_eq!(r["prompted"], true, "{name}: {output}");
            assert!(
                output.contains("Claude Code and Codex CLI are not installed"),
                "{name}: {output}"
            );
            assert!(output.contains("install -g --prefix"), "the exact command is named: {output}");
            // Before the question: how to go on without a provider one does not use.
            let q = output.find("[y/s/N]").unwrap();
            let hint = output.find("oyster providers set codex \"\"").expect(output);
            assert!(hint < q, "{output}");
            assert_eq!(r["code"], 0, "{name}: {output}");
            assert_eq!(output.matches(CANCELLED).count(), 1, "{name}: {output}");
            assert!(output.trim_end().ends_with(CANCELLED), "{name}: {output}");
            assert_eq!(
                s.snapshot(true, false),
                before,
                "{name} (existing config: {existing}) changed the tree"
            );
            assert!(s.npm_calls().is_empty(), "{name}");
            assert!(s.t.own_processes().is_empty(), "{name}: a process was left");
            s.t.assert_nothing_executed();
        }
    }
}

#[test]
fn yes_at_the_terminal_installs_through_the_pinned_npm_and_continues() {
    let s = Setup::new(0);
    let output = &s.completes(b"y\r");
    // npm's own output is streamed, indented (and dimmed on this terminal).
    has_all(output, &["    added 1 package: @openai/codex"]);
    has_all(output, &["\x1b[2m    added 1 package"]);
    let prefix = s.t.path("nodepfx");
    assert_eq!(
        s.npm_calls(),
        [
            format!("install -g --prefix {} @anthropic-ai/claude-code", prefix.display()),
            format!("install -g --prefix {} @openai/codex", prefix.display())
        ]
    );
    let cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.config()).unwrap()).unwrap();
    assert_eq!(cfg["claude_command"], json!(prefix.join("bin/claude")));
    assert_eq!(cfg["codex_command"], json!(prefix.join("bin/codex")));
    assert_eq!(cfg["provider_command_intent"], json!({"claude": "auto", "codex": "auto"}));
    assert_eq!(cfg["default_browse_path"], json!(s.t.home.join("OysterunAgents")));
    assert!(s.t.home.join("OysterunAgents").is_dir());
    s.t.assert_nothing_executed();
}

#[test]
fn skip_at_the_terminal_sets_the_host_up_without_installing_and_keeps_the_providers_auto() {
    let s = Setup::new(0);
    let output = &s.completes(b"s\r");
    has_none(output, &[CANCELLED]);
    has_all(output, &["it stays auto"]);
    // The URL the Host will answer on, at the end.
    has_all(output, &["url: http://127.0.0.1:"]);
    assert!(s.npm_calls().is_empty(), "skip installs nothing");
    let cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.config()).unwrap()).unwrap();
    assert_eq!(cfg["connection_mode"], "direct");
    assert_ne!(cfg["provider_command_intent"]["claude"], "disabled");
    assert_eq!(cfg.get("claude_command"), None);
    s.t.assert_nothing_executed();
}

#[test]
fn without_a_terminal_it_never_prompts_and_installs_only_when_told() {
    let s = Setup::new(0);
    let r = s.t.run(s.args(&["--no-start"])).ok();
    assert!(!r.stdout().contains("[y/s/N]"));
    r.stdout_has("--install-providers");
    assert!(s.npm_calls().is_empty());
    let cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.config()).unwrap()).unwrap();
    assert_eq!(cfg["connection_mode"], "direct");
    assert_eq!(cfg.get("claude_command"), None, "a detector null is never written");

    let s = Setup::new(0);
    s.t.run(s.args(&["--no-start", "--install-providers"])).ok();
    assert_eq!(s.npm_calls().len(), 2);
}

#[test]
fn a_failed_install_changes_nothing_else() {
    let s = Setup::new(1);
    let before = s.snapshot_but_locks(false);
    let e = s.t.run(s.args(&["--install-providers"])).fails_with(1).stderr();
    // The real cause first, then what was rolled back; nothing was installed, so nothing is
    // said to be uninstalled (and npm uninstall is not run).
    let cause = e.find("simulated failure").expect(&e);
    let rolled = e.find("rolled back").expect(&e);
    assert!(cause < rolled, "{e}");
    has_none(&e, &["uninstalled"]);
    assert_eq!(s.npm_calls().len(), 1, "{:?}", s.npm_calls());
    assert_eq!(s.npm_calls()[0].split(' ').next(), Some("install"));
    assert_eq!(s.snapshot_but_locks(false), before);
    // What the lock left is the lock file alone, outside the stack.
    let locks = common::tree(s.t.lock_dir().parent().unwrap());
    let files: Vec<_> = locks.iter().filter(|(_, e)| !e.dir).map(|(p, _)| p).collect();
    assert!(
        files.len() == 1 && files[0].ends_with("oyster/locks/com.oysterun.host.st.lock"),
        "{files:?}"
    );
}

#[test]
fn a_failure_at_the_agent_folder_undoes_the_install_and_the_config() {
    let s = Setup::new(0);
    std::fs::write(s.t.path("afile"), "").unwrap();
    let bad = s.t.path("afile/agents");
    let before = s.snapshot_but_locks(false);
    let e =
        s.t.run(s.args(&["--install-providers", "--agent-folder", bad.to_str().unwrap()]))
            .fails_with(1)
            .stderr();
    has_all(&e, &["rolled back", "uninstalled"]);
    let calls = s.npm_calls();
    assert_eq!(calls.iter().filter(|c| c.starts_with("uninstall")).count(), 2, "{calls:?}");
    assert_eq!(s.snapshot_but_locks(false), before, "config and directories are gone again");
}

#[test]
fn a_rolled_back_setup_records_each_revert_in_the_stacks_audit_log() {
    let s = Setup::new(0);
    // The stack has a log directory already: its audit log is where the reverts go.
    let logs = s.t.home.join(".oysterun-stacks/st/logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(s.t.path("afile"), "").unwrap();
    let bad = s.t.path("afile/agents");
    s.t.run(s.args(&["--install-providers", "--agent-folder", bad.to_str().unwrap()]))
        .fails_with(1);
    let log = std::fs::read_to_string(logs.join("service-control.jsonl")).unwrap();
    let reverts: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["action"] == "setup" && l["step"] == "rollback")
        .map(|l| {
            assert_eq!(l["outcome"], "done", "{l}");
            l["detail"].as_str().unwrap().to_owned()
        })
        .collect();
    // Newest first: the config setup wrote, then each provider it installed, then the files
    // and directories it created.
    assert_eq!(reverts.len(), 4, "{reverts:#?}");
    assert!(reverts[0].starts_with("removed ") && reverts[0].ends_with("config.json"));
    let mut uninstalled = reverts[1..3].to_vec();
    uninstalled.sort();
    assert_eq!(uninstalled, ["uninstalled @anthropic-ai/claude-code", "uninstalled @openai/codex"]);
    assert!(reverts[3].contains("it had created"), "{reverts:#?}");
}

#[test]
fn a_log_directory_that_is_a_file_is_refused_before_npm_runs() {
    let s = Setup::new(0);
    let logs = s.t.home.join(".oysterun-stacks/st/logs");
    std::fs::create_dir_all(logs.parent().unwrap()).unwrap();
    std::fs::write(&logs, "not a directory").unwrap();
    let before = s.snapshot(true, false);
    let e = s.t.run(s.args(&["--install-providers"])).fails_with(2).stderr();
    has_all(&e, &["the log directory ~/.oysterun-stacks/st/logs is not a directory"]);
    assert!(s.npm_calls().is_empty(), "{:?}", s.npm_calls());
    assert_eq!(s.snapshot(true, false), before, "nothing was touched");
}

#[test]
fn a_host_that_crashes_on_start_rolls_setup_back_to_the_old_config() {
    let s = Setup::new(0);
    std::fs::create_dir_all(s.config().parent().unwrap()).unwrap();
    let original = "{\"claude_command\": \"/x/claude\", \"history\": [1]}";
    std::fs::write(s.config(), original).unwrap();
    TestContext::fixture_flag(&s.root, "crash-on-start", "");
    let before = s.snapshot_but_locks(true);
    s.t.run(s.args(&[])).fails_with(1).stderr_has_all(&["crash-on-start", "restored"]);
    assert_eq!(std::fs::read_to_string(s.config()).unwrap(), original);
    assert!(!s.t.home.join("OysterunAgents").exists());
    assert_eq!(s.snapshot_but_locks(true), before);
    assert!(s.t.own_processes().is_empty());
}

#[test]
fn every_mode_keeps_a_manual_command_and_a_disabled_provider() {
    for mode in ["direct", "cloud-direct", "managed", "managed-pending"] {
        let mut s = Setup::new(0);
        // codex is installed on PATH, but disabled: it must stay disabled.
        let dir = s.t.path("onpath");
        s.t.fake_exe(&dir.join("codex"));
        s.t.path_dirs.push(dir);
        std::fs::create_dir_all(s.config().parent().unwrap()).unwrap();
        std::fs::write(s.config(), r#"{"claude_command": "/opt/mine/claude", "codex_command": null, "provider_command_intent": {"claude": "manual", "codex": "disabled"}}"#).unwrap();
        s.t.run(s.args(&["--no-start", "--mode", mode])).ok();
        let cfg: serde_json::Value =
            serde_json::from_slice(&std::fs::read(s.config()).unwrap()).unwrap();
        assert_eq!(cfg["claude_command"], "/opt/mine/claude", "{mode}");
        assert_eq!(cfg["codex_command"], json!(null), "{mode}");
        assert_eq!(
            cfg["provider_command_intent"],
            json!({"claude": "manual", "codex": "disabled"}),
            "{mode}"
        );
        assert_eq!(cfg["connection_mode"], mode);
        assert!(s.npm_calls().is_empty(), "{mode}: nothing to install");
        s.t.assert_nothing_executed();
    }
}

#[test]
fn with_launchd_setup_installs_and_verifies_the_agent() {
    let mut s = Setup::new(0);
    s.t.use_sim();
    let r = s.t.run(s.args(&[])).ok();
    assert!(
        r.stdout().contains("LaunchAgent") && r.stdout().contains("Host verified"),
        "{}",
        r.stdout()
    );
    let st = s.t.run(["agent", "status", "--stack", "st", "--json"]).ok().json();
    assert_eq!(st["verified"], true);
    s.t.run(["agent", "uninstall", "--stack", "st"]).ok();
    s.t.wait_no_processes();
}

#[test]
fn direct_setup_starts_and_verifies_the_host() {
    let s = Setup::new(0);
    let r = s.t.run(s.args(&[])).ok();
    assert!(
        r.stdout().contains("Host started directly") && r.stdout().contains("environment verified"),
        "{}",
        r.stdout()
    );
    s.t.run(["host", "stop", "--stack", "st"]).ok();
}

#[test]
fn the_question_offers_the_command_that_sets_the_host_up_without_providers() {
    let s = Setup::new(0);
    let before = s.snapshot(true, false);
    let r = s.pty(b"\r", &[]);
    let output = r["output"].as_str().unwrap();
    // The seed's rule is kept: Enter cancels everything, and says so.
    assert!(output.trim_end().ends_with(CANCELLED), "{output}");
    assert_eq!(s.snapshot(true, false), before);
    // Before the question: the exact command, in the form the stack was given.
    // Read as words: the terminal is 80 columns, so the line is wrapped.
    let output = output.split_whitespace().collect::<Vec<_>>().join(" ");
    let output = output.as_str();
    let q = output.find("[y/s/N]").unwrap();
    let offer = output
        .find("a script runs `oyster setup --no-install-providers --stack st --root ")
        .expect(output);
    assert!(offer < q, "{output}");
    // That command, on the same terminal: no question, no npm, the Host set up.
    let r = s.pty(b"", &["--no-install-providers", "--no-start"]);
    let output = r["output"].as_str().unwrap();
    assert_eq!((r["code"].as_i64(), r["prompted"].as_bool()), (Some(0), Some(false)), "{output}");
    has_all(output, &["not installed (--no-install-providers)"]);
    has_all(output, &["Setup complete."]);
    assert!(s.npm_calls().is_empty());
    assert!(s.config().exists());
    s.t.assert_nothing_executed();
}

#[test]
fn yes_consents_without_a_question_and_installs_only_when_told() {
    let s = Setup::new(0);
    let r = s.pty(b"", &["--yes", "--no-start"]);
    let output = r["output"].as_str().unwrap();
    assert_eq!((r["code"].as_i64(), r["prompted"].as_bool()), (Some(0), Some(false)), "{output}");
    has_all(output, &["Setup complete."]);
    assert!(s.npm_calls().is_empty(), "--yes alone installs nothing");
    let s = Setup::new(0);
    let r = s.pty(b"", &["--yes", "--install-providers", "--no-start"]);
    assert_eq!(r["prompted"], false, "{r}");
    assert_eq!(s.npm_calls().len(), 2, "{r}");
    // --install-providers and --no-install-providers contradict each other.
    s.t.run(s.args(&["--install-providers", "--no-install-providers"])).fails_with(2);
}

#[test]
fn dry_run_prints_the_plan_and_changes_nothing() {
    let s = Setup::new(0);
    let before = s.snapshot(true, false);
    for pty in [false, true] {
        let output = if pty {
            let r = s.pty(b"y\r", &["--dry-run"]);
            assert_eq!(
                (r["code"].as_i64(), r["prompted"].as_bool()),
                (Some(0), Some(false)),
                "{r}"
            );
            // Read as words: the terminal is 80 columns, so long lines are wrapped.
            let output = r["output"].as_str().unwrap();
            output.split_whitespace().collect::<Vec<_>>().join(" ")
        } else {
            s.t.run(s.args(&["--dry-run"])).ok().stdout()
        };
        has_all(&output, &["Oysterun setup for stack st"]);
        has_all(&output, &["AgentFolder:"]);
        has_all(&output, &["oyster setup --no-install-providers --stack st"]);
        has_all(&output, &["Dry run (--dry-run): nothing was changed."]);
        assert_eq!(s.snapshot(true, false), before, "pty {pty}");
    }
    assert!(s.npm_calls().is_empty());
    assert!(s.t.own_processes().is_empty());
}

#[test]
fn setup_prints_the_login_qr_after_its_start() {
    let mut s = Setup::new(0);
    s.t.use_sim();
    let qr = s.root.join("host-service/setup.mjs");
    std::fs::write(
        &qr,
        format!(
            "import fs from 'node:fs';\nfs.appendFileSync({:?}, process.argv.slice(2).join(' ') + ' ' + process.env.OYSTERUN_PORT + '\\n');\nconsole.log('LOGIN-QR');\n",
            s.t.path("qr.log").display().to_string()
        ),
    )
    .unwrap();
    // A Host somebody can log in to: setup is complete.
    std::fs::create_dir_all(s.config().parent().unwrap()).unwrap();
    std::fs::write(
        s.config(),
        r#"{"dashboard_user": "admin", "dashboard_password_hash": "scrypt$set"}"#,
    )
    .unwrap();
    let r = s.t.run(s.args(&["--no-install-providers", "--qr"])).ok();
    let out = r.stdout();
    assert!(out.find("Setup complete.").unwrap() < out.find("LOGIN-QR").expect(&out), "{out}");
    assert_eq!(
        std::fs::read_to_string(s.t.path("qr.log")).unwrap(),
        format!("--show-qr {}\n", s.port)
    );
    // --no-start starts nothing, so there is no QR.
    s.t.run(["uninstall", "st"]).ok();
    s.t.run(s.args(&["--no-install-providers", "--qr", "--no-start"])).ok();
    assert_eq!(std::fs::read_to_string(s.t.path("qr.log")).unwrap().lines().count(), 1);
    s.t.wait_no_processes();
}

/// A setup that waited for another one on the same stack decided on a state that is gone (the
/// first one wrote config.json meanwhile): it changes nothing, says so, and asks to be run
/// again. Nothing the first setup did is touched (the directly started Host's pid file: without
/// it `host status` and `host stop` lose the running Host; the providers it installed).
#[test]
fn a_setup_that_waited_for_another_changes_nothing() {
    use std::process::Stdio;
    let s = Setup::with_npm(0, 3);
    let spawn = |log: &str| {
        let out = std::fs::File::create(s.t.path(log)).unwrap();
        s.t.cmd()
            .args(s.args(&["--yes", "--install-providers"]))
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap()
    };
    let said = |log: &str| std::fs::read_to_string(s.t.path(log)).unwrap_or_default();
    let mut first = spawn("first.log");
    common::wait_until(Duration::from_secs(15), "the first npm install", || {
        !s.npm_calls().is_empty()
    });
    let mut second = spawn("second.log");
    common::wait_until(Duration::from_secs(15), "the second setup to wait", || {
        said("second.log").contains("waiting for another oyster")
    });
    assert!(first.wait().unwrap().success(), "{}", said("first.log"));
    let status = second.wait().unwrap();
    let output = said("second.log");
    assert_eq!(status.code(), Some(1), "{output}");
    has_all(
        &output,
        &[
            "while this setup waited for it",
            "so this setup changed nothing",
            "run `oyster setup --stack st` again",
        ],
    );
    has_none(&output, &["rolled back", "already running"]);
    let pid_file = s.t.home.join(".oysterun-stacks/st/run/oysterun-host-st.pid");
    assert!(pid_file.exists(), "the first setup's pid file was removed:\n{output}");
    let st = s.t.run(["host", "status", "--stack", "st"]);
    assert_eq!(st.code(), 0, "{}{}\n{output}", st.stdout(), st.stderr());
    let calls = s.npm_calls();
    assert_eq!(calls.len(), 2, "each provider installed once: {calls:?}\n{output}");
    assert!(calls.iter().all(|c| c.starts_with("install")), "{calls:?}");
    for b in ["claude", "codex"] {
        assert!(s.t.path("nodepfx/bin").join(b).exists(), "{b}\n{output}");
    }
    s.t.run(["host", "stop", "--stack", "st"]).ok();
}

/// Behind a proxy, setup's npm reaches the registry as the Host reaches the providers: it runs
/// with the declared network variables (`oyster env`: a proxy, `NO_PROXY`, a CA bundle), said
/// by name, never by value (npm's lines are shown, redacted); a declared variable that is not a
/// network one (`DEBUG`) is the Host's alone. Before, npm got none of them.
#[test]
fn setups_npm_gets_the_declared_proxy_and_no_other_declared_variable() {
    let s = Setup::new(0);
    let seen = s.t.path("npm-env.log");
    let npm = s.t.path("nodepfx/bin/npm");
    let recorded = std::fs::read_to_string(&npm).unwrap().replacen(
        "#!/bin/sh\n",
        &format!(
            "#!/bin/sh\necho \"proxy=$HTTPS_PROXY no=$NO_PROXY debug=$DEBUG\" >> '{}'\necho \"npm http fetch via $HTTPS_PROXY\"\n",
            seen.display()
        ),
        1,
    );
    std::fs::write(&npm, recorded).unwrap();
    let proxy = "http://alice:s3cret-pw@proxy.example:3128";
    s.t.run(["config", "sync", "--stack", "st", "--port", &s.port.to_string()]).ok();
    for (k, v) in [("HTTPS_PROXY", proxy), ("NO_PROXY", "127.0.0.1,localhost"), ("DEBUG", "1")] {
        s.t.run(["env", "set", k, v, "--stack", "st", "--no-restart"]).ok();
    }
    let r = s.t.run(s.args(&["--install-providers"])).ok();
    let out = format!("{}{}", r.stdout(), r.stderr());
    has_all(&out, &["npm runs with the declared HTTPS_PROXY, NO_PROXY (`oyster env`)"]);
    // npm's line naming the proxy is shown, the password in it redacted.
    has_all(&out, &["npm http fetch via"]);
    has_none(&out, &["s3cret-pw"]);
    let env = std::fs::read_to_string(&seen).unwrap();
    let first = env.lines().next().unwrap();
    assert_eq!(first, format!("proxy={proxy} no=127.0.0.1,localhost debug="), "{env}");
}
