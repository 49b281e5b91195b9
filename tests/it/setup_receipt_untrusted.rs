//! Setup's receipt (`<run dir>/setup-pending`) attacked: the next setup deletes things and runs
//! npm from what it lists, so a receipt planted or edited by hand, or one another uid could
//! write, is refused and kept (nothing runs, nothing goes); one the user's own later changes
//! made stale takes nothing back. The npm is the tests' recording fake.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::json;

use crate::common::{has_all, has_none};
use crate::setup::Setup;

/// A stack set up without a start (nothing runs), its receipt's path.
fn set_up() -> (Setup, PathBuf) {
    let s = Setup::new(0);
    s.t.run(s.args(&["--no-start"])).ok();
    let receipt = s.t.home.join(".oysterun-stacks/st/run/setup-pending");
    (s, receipt)
}

/// Writes `steps` as a receipt, mode 0600.
fn plant(receipt: &Path, steps: &serde_json::Value) {
    make_run_dir(receipt);
    let text = json!({ "action": "setup", "steps": steps }).to_string();
    std::fs::write(receipt, text).unwrap();
    std::fs::set_permissions(receipt, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// The run directory a finished setup removed, made again (0700) for a receipt.
fn make_run_dir(receipt: &Path) {
    let run = receipt.parent().unwrap();
    std::fs::create_dir_all(run).unwrap();
    std::fs::set_permissions(run, std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// The next setup refuses the receipt: it fails, says so, keeps the receipt.
fn refused(s: &Setup, receipt: &Path, what: &str) {
    let r = s.t.run(s.args(&["--no-start"]));
    let said = format!("{}{}", r.stdout(), r.stderr());
    assert_ne!(r.code(), 0, "{what}: taken back:\n{said}");
    has_all(&said, &["cannot take back"]);
    has_none(&said, &["took back"]);
    assert!(receipt.exists(), "{what}: the receipt went");
}

/// A receipt naming another npm, or another prefix, never runs it: a file on disk does not
/// choose a program to run.
#[test]
fn a_planted_npm_or_prefix_is_never_run() {
    let (s, receipt) = set_up();
    let ran = s.t.path("ran");
    let evil = s.t.path("evil");
    std::fs::write(&evil, format!("#!/bin/sh\ntouch '{}'\n", ran.display())).unwrap();
    std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = s.t.path("nodepfx/bin");
    for (npm, prefix) in
        [(evil.clone(), s.t.path("nodepfx")), (bin.join("npm"), s.t.path("elsewhere"))]
    {
        let step =
            json!({"npm_uninstall": {"npm": npm, "prefix": prefix, "package": "@openai/codex"}});
        plant(&receipt, &json!([step]));
        refused(&s, &receipt, &format!("npm {}", npm.display()));
    }
    assert!(!ran.exists(), "the planted npm ran");
    assert!(!s.npm_calls().iter().any(|c| c.starts_with("uninstall")), "{:?}", s.npm_calls());
}

/// Directories a receipt lists that setup never makes — outside HOME (as the stacks directory
/// above, or the AgentFolder), under HOME but off setup's chains, or reached through a symlink
/// — are never removed, even empty.
#[test]
fn directories_setup_never_makes_are_never_removed() {
    let (s, receipt) = set_up();
    let home = &s.t.home;
    let outside = s.t.path("outside-empty");
    let documents = home.join("Documents");
    let elsewhere = s.t.path("elsewhere");
    for d in [&outside, &documents, &elsewhere.join("LaunchAgents")] {
        std::fs::create_dir_all(d).unwrap();
    }
    let library = home.join("Library");
    if library.exists() {
        std::fs::remove_dir_all(&library).unwrap();
    }
    std::os::unix::fs::symlink(&elsewhere, &library).unwrap();
    let root = home.join(".oysterun-stacks/st");
    for step in [
        json!({"stack": {"root": root, "above": outside}}),
        json!({"agent_folder": outside}),
        json!({"created": {"files": [], "dirs": [documents]}}),
        json!({"created": {"files": [], "dirs": [library.join("LaunchAgents")]}}),
        json!({"created": {"files": [], "dirs": [home.join(".oysterun-stacks/st/../../Documents")]}}),
    ] {
        plant(&receipt, &json!([step]));
        refused(&s, &receipt, &step.to_string());
    }
    for d in [&outside, &documents, &elsewhere.join("LaunchAgents")] {
        assert!(d.is_dir(), "{} was removed", d.display());
    }
    assert!(root.join("host/config.json").exists(), "the stack was removed");
}

/// A receipt saying setup created the stack, on a stack that holds a config it did not write
/// (a planted receipt, or one left on a stack set up since by hand), never removes the stack.
#[test]
fn a_planted_stack_step_never_removes_a_stack_in_use() {
    let (s, receipt) = set_up();
    let root = s.t.home.join(".oysterun-stacks/st");
    plant(&receipt, &json!([{"stack": {"root": root, "above": null}}]));
    refused(&s, &receipt, "the stack");
    assert!(root.join("host/config.json").exists(), "the stack was removed");
}

/// A receipt another uid owns, or others may write, is not acted on; the same receipt, the
/// user's own at 0600, is (the AgentFolder setup made, still empty, goes).
#[test]
fn a_receipt_another_uid_could_write_is_refused() {
    let (s, receipt) = set_up();
    let folder = s.t.home.join("OysterunAgents");
    assert!(folder.is_dir());
    plant(&receipt, &json!([{ "agent_folder": folder }]));
    std::fs::set_permissions(&receipt, std::fs::Permissions::from_mode(0o622)).unwrap();
    refused(&s, &receipt, "mode 0622");
    std::fs::set_permissions(&receipt, std::fs::Permissions::from_mode(0o600)).unwrap();
    if nix::unistd::geteuid().is_root() {
        std::os::unix::fs::chown(&receipt, Some(65534), Some(65534)).unwrap();
        refused(&s, &receipt, "owned by nobody");
        std::os::unix::fs::chown(&receipt, Some(0), Some(0)).unwrap();
    }
    assert!(folder.is_dir(), "the AgentFolder went on a refused receipt");
    let r = s.t.run(s.args(&["--no-start"])).ok();
    has_all(&format!("{}{}", r.stdout(), r.stderr()), &["removed the AgentFolder"]);
    assert!(!receipt.exists());
}

/// The job's definition is never written from a receipt's bytes (it would be loaded at the
/// next login), and config.json only with a JSON object.
#[test]
fn a_definition_or_a_config_of_the_receipts_is_never_written() {
    let mut s = Setup::new(0);
    s.t.use_sim();
    s.t.run(s.args(&["--no-start"])).ok();
    let receipt = s.t.home.join(".oysterun-stacks/st/run/setup-pending");
    let agents = s.t.home.join("Library/LaunchAgents");
    let plist = std::fs::read_dir(&agents).unwrap().flatten().next().unwrap().path();
    let config = s.config();
    let (plist_before, config_before) =
        (std::fs::read(&plist).unwrap(), std::fs::read(&config).unwrap());
    for (path, mode) in [(&plist, 0o644), (&config, 0o600)] {
        let step = json!({"file": {"path": path, "mode": mode, "before": {"text": "<evil/>"}}});
        plant(&receipt, &json!([step]));
        refused(&s, &receipt, &path.display().to_string());
    }
    assert_eq!(std::fs::read(&plist).unwrap(), plist_before);
    assert_eq!(std::fs::read(&config).unwrap(), config_before);
}

/// A FIFO or a huge file where the receipt lives: refused at once, never waited on or read.
#[test]
fn a_fifo_or_a_huge_receipt_is_refused_at_once() {
    let (s, receipt) = set_up();
    make_run_dir(&receipt);
    nix::unistd::mkfifo(&receipt, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let mut child = s.t.cmd();
    child.args(s.args(&["--no-start"])).stdin(Stdio::null());
    let out = child.output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    let kind = std::fs::symlink_metadata(&receipt).unwrap().file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&kind));
    std::fs::remove_file(&receipt).unwrap();
    std::fs::write(&receipt, vec![b' '; 2 * 1024 * 1024]).unwrap();
    std::fs::set_permissions(&receipt, std::fs::Permissions::from_mode(0o600)).unwrap();
    let r = s.t.run(s.args(&["--no-start"]));
    assert_ne!(r.code(), 0, "{}", r.stderr());
    assert!(receipt.exists());
}

/// A change made to a stack in a test.
type Edit = dyn Fn(&Setup);

/// A second setup killed after it wrote config.json; then the user changes the config — by
/// hand, or with `providers set`, which writes no audit line. The next setup takes nothing
/// back: the user's change is kept, not overwritten with the config from before the kill.
#[test]
fn a_config_changed_after_the_kill_is_kept() {
    use std::os::unix::process::ExitStatusExt;
    let edits: [(&str, &Edit); 2] = [
        ("by hand", &|s: &Setup| {
            let mut v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(s.config()).unwrap()).unwrap();
            v["mine"] = json!("kept");
            std::fs::write(s.config(), serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        }),
        ("providers set", &|s: &Setup| {
            s.t.run(["providers", "set", "codex", "", "--stack", "st"]).ok();
        }),
    ];
    for (how, edit) in edits {
        let (s, receipt) = set_up();
        let other = s.t.home.join("Other");
        let mut killed = s.t.cmd();
        killed
            .env("OYSTER_TEST_KILL_AT_STEP", "2")
            .args(s.args(&["--agent-folder", &other.display().to_string()]));
        assert_eq!(killed.output().unwrap().status.signal(), Some(9), "{how}");
        // Killed once the config was written (it names the new AgentFolder).
        let written = std::fs::read_to_string(s.config()).unwrap();
        assert!(receipt.exists() && written.contains("/Other"), "{how}: {written}");
        edit(&s);
        let edited = std::fs::read(s.config()).unwrap();
        let r = s.t.run(s.args(&["--no-start"])).ok();
        let said = format!("{}{}", r.stdout(), r.stderr());
        has_all(&said, &["nothing of it is taken back"]);
        has_none(&said, &["took back"]);
        let now: serde_json::Value =
            serde_json::from_slice(&std::fs::read(s.config()).unwrap()).unwrap();
        let edited: serde_json::Value = serde_json::from_slice(&edited).unwrap();
        for key in ["mine", "codex_command"] {
            assert_eq!(now.get(key), edited.get(key), "{how}: {key}\n{said}");
        }
        assert!(!receipt.exists(), "{how}");
    }
}

/// A first setup (direct: no service manager) killed after it wrote the config; the user then
/// starts the Host directly (`host start`, which writes no audit line). The next setup takes
/// nothing back: the stack a running Host uses is not removed, nor its Host stopped.
#[test]
fn a_host_started_directly_after_the_kill_keeps_its_stack() {
    use std::os::unix::process::ExitStatusExt;
    let s = Setup::new(0);
    let mut killed = s.t.cmd();
    killed.env("OYSTER_TEST_KILL_AT_STEP", "3").args(s.args(&[]));
    assert_eq!(killed.output().unwrap().status.signal(), Some(9));
    let receipt = s.t.home.join(".oysterun-stacks/st/run/setup-pending");
    let text = std::fs::read_to_string(&receipt).unwrap();
    assert!(s.config().exists() && !text.contains("stop_host"), "{text}");
    // The same stack, root, node and port: `host start` instead of `setup`.
    let mut start = s.args(&[]);
    start.splice(0..1, ["host".to_owned(), "start".to_owned()]);
    s.t.run(start).ok();
    let r = s.t.run(s.args(&["--no-start"])).ok();
    let said = format!("{}{}", r.stdout(), r.stderr());
    has_all(&said, &["nothing of it is taken back"]);
    has_none(&said, &["took back"]);
    assert!(s.config().exists(), "{said}");
    let st = s.t.run(["status", "st", "--json"]).json();
    s.t.run(["host", "stop", "--stack", "st"]).ok();
    assert_eq!(st["verified"], true, "{st}\n{said}");
}

/// A first setup killed once it wrote the config; the next one SIGKILLed while it takes that
/// back (config.json put back — removed — and npm uninstalling). The setup after goes on from
/// the same receipt — its predecessor's changes are not the user's — and leaves no trace.
#[test]
fn a_setup_killed_while_it_takes_back_is_finished_by_the_next() {
    use std::os::unix::process::ExitStatusExt;
    let s = Setup::new(0);
    let receipt = s.t.home.join(".oysterun-stacks/st/run/setup-pending");
    let mut killed = s.t.cmd();
    killed.env("OYSTER_TEST_KILL_AT_STEP", "5").args(s.args(&["--install-providers"]));
    assert_eq!(killed.output().unwrap().status.signal(), Some(9));
    assert!(s.config().exists() && s.t.path("nodepfx/bin/codex").exists());
    // npm's uninstalls wait: the recovery is caught between its config and its npm steps.
    let bin = s.t.path("nodepfx/bin");
    std::fs::rename(bin.join("npm"), bin.join("npm.real")).unwrap();
    let slow = format!("#!/bin/sh\nsleep 30\nexec '{}' \"$@\"\n", bin.join("npm.real").display());
    std::fs::write(bin.join("npm"), slow).unwrap();
    std::fs::set_permissions(bin.join("npm"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut child = s.t.cmd().args(s.args(&[])).stdin(Stdio::null()).spawn().unwrap();
    let t0 = std::time::Instant::now();
    while s.config().exists() && t0.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!s.config().exists() && receipt.exists(), "not caught while taking back");
    std::fs::rename(bin.join("npm.real"), bin.join("npm")).unwrap();
    let r = s.t.run(s.args(&["--no-start"])).ok();
    let said = format!("{}{}", r.stdout(), r.stderr());
    has_all(&said, &["took back: uninstalled @openai/codex", "it had created"]);
    has_none(&said, &["nothing of it is taken back"]);
    for b in ["claude", "codex"] {
        assert!(!bin.join(b).exists(), "{b} is left\n{said}");
    }
}

/// `setup --dry-run` with a receipt waiting says the next setup takes it back, and takes
/// nothing back itself: the receipt and the AgentFolder it names stay.
#[test]
fn a_dry_run_with_a_receipt_waiting_takes_nothing_back() {
    let (s, receipt) = set_up();
    let folder = s.t.home.join("OysterunAgents");
    plant(&receipt, &json!([{ "agent_folder": folder }]));
    let r = s.t.run(s.args(&["--dry-run"])).ok();
    let said = format!("{}{}", r.stdout(), r.stderr());
    has_all(&said, &["first takes back what", "nothing was changed"]);
    has_none(&said, &["took back"]);
    assert!(receipt.exists() && folder.is_dir(), "{said}");
}

/// `setup --dry-run` asks of a receipt what the run will: one the run would refuse is refused
/// the same way (and kept), one whose stack was used since is said to be left alone.
#[test]
fn a_dry_run_says_what_the_run_will_do_with_a_receipt() {
    let (s, receipt) = set_up();
    plant(
        &receipt,
        &json!([{ "npm_uninstall": {
        "npm": s.t.path("evil"), "prefix": s.t.path("nodepfx"), "package": "@openai/codex" } }]),
    );
    let r = s.t.run(s.args(&["--dry-run"]));
    let said = format!("{}{}", r.stdout(), r.stderr());
    assert_ne!(r.code(), 0, "{said}");
    has_all(&said, &["cannot take back"]);
    assert!(receipt.exists(), "{said}");
    // config.json written since the killed run stamped it: the stack is in use.
    let config = s.config();
    let stamp = json!({ "dev": 0, "ino": 0, "size": 0, "mtime_ns": 0 });
    plant(
        &receipt,
        &json!([{ "file": {
        "path": config, "mode": null, "before": "absent", "written": stamp } }]),
    );
    let r = s.t.run(s.args(&["--dry-run"])).ok();
    let said = format!("{}{}", r.stdout(), r.stderr());
    has_all(&said, &["was changed since by another oyster command", "takes nothing of it back"]);
    has_none(&said, &["first takes back"]);
    assert!(receipt.exists(), "{said}");
}
