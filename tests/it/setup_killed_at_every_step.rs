//! Setup in the crash matrix (issue 36, items 3 and 8): `oyster setup` SIGKILLed right after its
//! receipt (`<run dir>/setup-pending`) names step n as the next, for every n, through
//! `OYSTER_TEST_KILL_AT_STEP` (a hook compiled into debug builds only). Whatever n: the run was
//! killed there, its receipt is on disk (mode 0600, no secret in it), and the next setup —
//! cancelled at its question — takes back what the killed one did and leaves no trace: the
//! tree under HOME, the node prefix and TMPDIR as before (config.json byte for byte), no
//! provider the killed run installed, no Host running, no receipt. Past the last step, setup
//! just completes, which ends the loop.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;

use crate::common::{has_all, has_none};
use crate::setup::{Setup, CANCELLED};

/// How a setup cancelled at its question ends: "nothing else" once it took an earlier one back
/// (that much changed, and was said on its own lines).
fn cancelled_as_said(output: &str) {
    match output.contains("took back:") {
        true => has_all(output, &["Installation cancelled; nothing else was changed."]),
        false => has_all(output, &[CANCELLED]),
    }
}

/// Runs setup with `first` killed at each step in turn, each time settled by a setup cancelled
/// at its question; returns how many steps the setup has (the first n it completed at).
/// `skip_logs`: the stack's logs are left out of the comparison (a stack that was there keeps
/// its log directory, where the reverts are recorded); `secrets`: what no receipt may hold.
/// Every process of the test's is waited for, but a user manager's (`manager`).
fn matrix(
    s: &Setup,
    first: &[&str],
    (skip_logs, manager): (bool, bool),
    secrets: &[&str],
) -> usize {
    let before = s.snapshot_but_locks(skip_logs);
    let config_before = std::fs::read(s.config()).ok();
    for n in 0..40 {
        let out =
            s.t.cmd()
                .env("OYSTER_TEST_KILL_AT_STEP", n.to_string())
                .args(s.args(first))
                .stdin(Stdio::null())
                .output()
                .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.signal() != Some(9) {
            assert!(out.status.success(), "past its last step ({n}), setup failed: {said}");
            assert!(!s.receipt().exists(), "a finished setup left its receipt");
            return n;
        }
        let path = s.receipt();
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("killed at step {n}: no receipt ({e}): {said}"));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "step {n}: the receipt's mode");
        has_none(&text, secrets);
        let r = s.pty(b"\r", &[]);
        let output = r["output"].as_str().unwrap().to_owned();
        assert_eq!(r["code"], 0, "step {n}: the next setup failed:\n{output}\nreceipt: {text}");
        cancelled_as_said(&output);
        if !manager {
            s.t.wait_no_processes();
        }
        assert!(!path.exists(), "step {n}: the receipt is left:\n{output}");
        assert_eq!(
            std::fs::read(s.config()).ok(),
            config_before,
            "step {n}: config.json\n{output}"
        );
        for b in ["claude", "codex"] {
            assert!(!s.t.path("nodepfx/bin").join(b).exists(), "step {n}: {b} is left\n{output}");
        }
        let now = s.snapshot_but_locks(skip_logs);
        assert!(now == before, "step {n}: a trace is left: {}\n{output}", differ(&before, &now));
    }
    panic!("setup never completed: its steps do not end");
}

/// The paths two trees differ at: added, gone, or changed.
fn differ(before: &Tree, now: &Tree) -> String {
    let mut out: Vec<String> = vec![];
    for (k, v) in now {
        match before.get(k) {
            None => out.push(format!("added {}", k.display())),
            Some(b) if b != v => out.push(format!("changed {}", k.display())),
            Some(_) => {}
        }
    }
    out.extend(
        before.keys().filter(|k| !now.contains_key(*k)).map(|k| format!("gone {}", k.display())),
    );
    out.join(", ")
}

type Tree = std::collections::BTreeMap<std::path::PathBuf, crate::common::Entry>;

#[test]
fn a_first_direct_setup_killed_at_any_step_leaves_no_trace_after_the_next_one() {
    let s = Setup::new(0);
    let steps = matrix(&s, &["--install-providers"], (false, false), &[]);
    // The stack, what it may create, two installs, the config, the AgentFolder, the Host.
    assert!(steps >= 7, "{steps} steps");
    s.t.run(["host", "stop", "--stack", "st"]).ok();
}

#[test]
fn a_first_launchd_setup_killed_at_any_step_leaves_no_trace_after_the_next_one() {
    let mut s = Setup::new(0);
    s.t.use_sim();
    let steps = matrix(&s, &["--install-providers"], (false, false), &[]);
    // Setup's own steps, and the lifecycle's within its start.
    assert!(steps >= 8, "{steps} steps");
    s.t.run(["agent", "uninstall", "--stack", "st"]).ok();
    s.t.wait_no_processes();
}

/// The same under a real `systemd --user`: the unit a killed first setup installed is
/// uninstalled by the next one (`systemctl --user` finds no unit of the stack's after).
#[cfg(target_os = "linux")]
#[test]
fn under_systemd_a_first_setup_killed_at_any_step_leaves_no_trace_after_the_next_one() {
    let Some((m, t)) = crate::common::user_manager::world() else {
        return;
    };
    let s = Setup::in_context(t, 0, 0);
    let steps = matrix(&s, &["--install-providers"], (false, true), &[]);
    assert!(steps >= 8, "{steps} steps");
    let state = crate::systemd_job::prop(&m, "st", "LoadState");
    assert_eq!(state, "loaded", "the completed setup's unit");
    s.t.run(["uninstall", "st", "--purge", "--yes"]).ok();
}

/// A stack set up before (`--no-start`: a config and a plist), whose config holds secrets:
/// a second setup that installs providers and switches the mode, killed at any step, is taken
/// back to the same config.json byte for byte and the same plist, and no receipt holds a
/// secret (the config's values that hold one are taken as the file holds them then).
#[test]
fn a_second_setup_killed_at_any_step_puts_a_config_with_secrets_back_and_writes_none() {
    let mut s = Setup::new(0);
    s.t.use_sim();
    s.t.run(s.args(&["--no-start"])).ok();
    let mut cfg: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&std::fs::read(s.config()).unwrap()).unwrap();
    let (key, url) = ("s3cret-relay-key-value", "https://alice:pw-in-url-99@relay.example/x");
    cfg.insert("relay_key".into(), key.into());
    cfg.insert("relay_url".into(), url.into());
    let mut bytes = serde_json::to_vec_pretty(&cfg).unwrap();
    bytes.push(b'\n');
    std::fs::write(s.config(), bytes).unwrap();
    let args = ["--no-start", "--install-providers", "--mode", "managed"];
    let steps = matrix(&s, &args, (true, false), &[key, "pw-in-url-99"]);
    assert!(steps >= 5, "{steps} steps");
    let cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.config()).unwrap()).unwrap();
    assert_eq!(cfg["connection_mode"], "managed");
    assert_eq!(cfg["relay_key"], key);
}

/// A stack set up and running under launchd: a second setup onto another port, killed at any
/// step (its lifecycle's among them), is taken back by the next setup (cancelled): the same
/// config.json and plist, byte for byte, and the job verified on the old port again.
#[test]
fn a_setup_of_a_running_stack_killed_at_any_step_is_put_back_on_its_old_port() {
    let mut s = Setup::new(0);
    s.t.use_sim();
    s.t.run(s.args(&["--no-install-providers"])).ok();
    let plist = s.t.home.join("Library/LaunchAgents/com.oysterun.host.st.plist");
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap();
    let (config, definition) = (read(&s.config()), read(&plist));
    let old = s.t.run(["status", "st", "--json"]).json()["port"].to_string();
    let new = crate::common::free_port().to_string();
    for n in 0..40 {
        let mut args = s.args(&["--no-install-providers"]);
        let at = args.iter().position(|a| a == "--port").unwrap();
        args[at + 1] = new.clone();
        let out = s.t.cmd().env("OYSTER_TEST_KILL_AT_STEP", n.to_string()).args(&args).output();
        let out = out.unwrap();
        if out.status.signal() != Some(9) {
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert!(n >= 4, "{n} steps");
            break;
        }
        assert!(s.receipt().exists(), "step {n}: no receipt");
        let r = s.pty(b"\r", &[]);
        let output = r["output"].as_str().unwrap().to_owned();
        assert_eq!(r["code"], 0, "step {n}:\n{output}");
        cancelled_as_said(&output);
        assert!(!s.receipt().exists(), "step {n}: the receipt is left:\n{output}");
        assert_eq!(read(&s.config()), config, "step {n}: config.json\n{output}");
        assert_eq!(read(&plist), definition, "step {n}: the plist\n{output}");
        let st = s.t.run(["status", "st", "--json"]).json();
        assert_eq!(st["summary"], "verified", "step {n}: {st}\n{output}");
        assert_eq!(st["port"].to_string(), old, "step {n}: {st}\n{output}");
    }
    s.t.run(["agent", "uninstall", "--stack", "st"]).ok();
    s.t.wait_no_processes();
}

/// Two setups at once, the first killed outright while the second waits for the stack's lock:
/// the second takes back what the first did once it holds the lock, and stops there (its plan
/// was made before), asking to be run again; nothing of the first is left, and the next setup
/// finds nothing to take back.
#[test]
fn a_setup_that_waited_for_one_killed_outright_takes_it_back_and_stops() {
    let s = Setup::with_npm(0, 2);
    let before = s.snapshot_but_locks(false);
    let spawn = |log: &str| {
        let out = std::fs::File::create(s.t.path(log)).unwrap();
        let args = s.args(&["--yes", "--install-providers"]);
        let mut c = s.t.cmd();
        c.args(args).stdin(Stdio::null()).stdout(out.try_clone().unwrap());
        c.stderr(out).spawn().unwrap()
    };
    let said = |log: &str| std::fs::read_to_string(s.t.path(log)).unwrap_or_default();
    let mut first = spawn("first.log");
    let bound = std::time::Duration::from_secs(15);
    crate::common::wait_until(bound, "the first npm", || !s.npm_calls().is_empty());
    let mut second = spawn("second.log");
    crate::common::wait_until(bound, "the second to wait", || {
        said("second.log").contains("waiting for another oyster")
    });
    first.kill().unwrap();
    first.wait().unwrap();
    let status = second.wait().unwrap();
    let output = said("second.log");
    assert_eq!(status.code(), Some(1), "{output}");
    has_all(
        &output,
        &["was taken back while this one waited", "uninstalled @anthropic-ai/claude-code"],
    );
    has_all(&output, &["run `oyster setup --stack st` again"]);
    s.t.wait_no_processes();
    assert_eq!(s.snapshot_but_locks(false), before, "{output}");
    let r = s.pty(b"\r", &[]);
    let next = r["output"].as_str().unwrap();
    assert_eq!(r["code"], 0, "{next}");
    has_none(next, &["took back"]);
}

/// Killed inside its first receipt write (the temp file written, or only created, and not yet
/// renamed): the next setup finds the temp file of a writer that is gone, takes back what it
/// lists when it holds it whole, else removes the empty directories made for it — no stack
/// directory is left with nothing but a temp file in it.
#[test]
fn a_setup_killed_inside_its_first_receipt_write_leaves_no_trace_after_the_next_one() {
    let s = Setup::new(0);
    let before = s.snapshot_but_locks(false);
    let mut killed = s.t.cmd();
    killed.env("OYSTER_TEST_KILL_AT_STEP", "1").args(s.args(&["--install-providers"]));
    assert_eq!(killed.output().unwrap().status.signal(), Some(9));
    let whole = std::fs::read(s.receipt()).unwrap();
    let dead = std::process::Command::new("true").spawn().unwrap();
    let pid = dead.id();
    dead.wait_with_output().unwrap();
    for temp in [whole, vec![]] {
        std::fs::remove_file(s.receipt()).unwrap_or_default();
        let run = s.receipt().parent().unwrap().to_owned();
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join(format!(".setup-pending.oyster-tmp.{pid}")), &temp).unwrap();
        let r = s.pty(b"\r", &[]);
        let output = r["output"].as_str().unwrap();
        assert_eq!(r["code"], 0, "{output}");
        cancelled_as_said(output);
        has_all(output, &["it had created"]);
        assert_eq!(s.snapshot_but_locks(false), before, "a {}-byte temp:\n{output}", temp.len());
    }
}

/// A stack used since the setup was killed (here `oyster install` settled it): the next setup
/// takes nothing back — it would uninstall a job and remove a stack in use — says so, drops
/// the receipt, and goes on as usual.
#[test]
fn a_killed_setup_is_not_taken_back_once_another_command_used_the_stack() {
    let mut s = Setup::new(0);
    s.t.use_sim();
    let mut killed = s.t.cmd();
    killed.env("OYSTER_TEST_KILL_AT_STEP", "6").args(s.args(&["--install-providers"]));
    assert_eq!(killed.output().unwrap().status.signal(), Some(9));
    assert!(s.receipt().exists());
    // The same stack, root, node and port: `install` instead of `setup`.
    let mut install = s.args(&[]);
    install[0] = "install".into();
    s.t.run(install).ok();
    // The next setup (no terminal): it goes on as usual over the stack as it is.
    let r = s.t.run(s.args(&[])).ok();
    let output = format!("{}{}", r.stdout(), r.stderr());
    has_all(&output, &["nothing of it is taken back", "Host verified"]);
    has_none(&output, &["took back"]);
    assert!(!s.receipt().exists(), "{output}");
    let st = s.t.run(["status", "st", "--json"]).json();
    assert_eq!(st["summary"], "verified", "{st}");
    s.t.run(["agent", "uninstall", "--stack", "st"]).ok();
    s.t.wait_no_processes();
}
