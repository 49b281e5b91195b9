//! Stacks that go away (issue 38, item 5): `uninstall STACK --purge` deletes the stack's data
//! after a question naming what goes (`--yes` without a terminal, `--dry-run` names it), and a
//! rolled-back first setup leaves no stack behind.

use crate::common::has_all;
use crate::common::{self, free_port, TestContext};

/// `dev` installed and verified, with the Host's history beside its config (what a Host that
/// ran leaves: `cleanup --purge` keeps such a stack).
fn dev_with_history() -> TestContext {
    let t = TestContext::with_pinned_host();
    t.run(common::args(&["install", "dev"]).port(free_port()).settle(200)).ok();
    std::fs::write(t.stack_dir("dev").join("host/oysterun.sqlite"), b"history").unwrap();
    t
}

#[test]
fn purge_names_what_goes_and_needs_yes_without_a_terminal() {
    let t = dev_with_history();
    let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.dev.plist");
    let before = common::tree(&t.home);
    // Without a terminal and without --yes: refused, nothing changed.
    let r = t.run(["uninstall", "dev", "--purge"]).fails_with(2);
    r.stderr_has("--purge deletes ");
    r.stderr_has("pass --yes");
    // --dry-run names every file that would go, and changes nothing.
    let r = t.run(["uninstall", "dev", "--purge", "--dry-run"]).ok();
    r.stdout_has("--purge would also delete:");
    r.stdout_has("host/oysterun.sqlite");
    r.stdout_has("host/config.json");
    assert_eq!(common::tree(&t.home), before, "nothing changed");
    // Uninstalled without --purge, the data stays: cleanup keeps it, and says how it goes.
    t.run(["uninstall", "dev"]).ok();
    assert!(!plist.exists());
    t.run(["cleanup", "--dry-run", "--purge"])
        .ok()
        .stdout_has("`oyster uninstall dev --purge` deletes the stack with it");
    // --yes: every file of the stack goes (the job went above; on a terminal below, both at
    // once); the AgentFolder stays.
    std::fs::create_dir_all(t.home.join("OysterunAgents/mine")).unwrap();
    let r = t.run(["uninstall", "dev", "--purge", "--yes"]).ok();
    r.stdout_has("only the stack's data goes.");
    r.stdout_has("Deleted ");
    assert!(!t.stack_dir("dev").exists());
    assert!(t.home.join("OysterunAgents/mine").is_dir(), "the AgentFolder is the user's");
    let list = t.run(["list", "--json"]).ok().json();
    assert!(!list.to_string().contains("\"dev\""), "{list}");
    t.wait_no_processes();
}

#[test]
fn on_a_terminal_purge_asks_naming_the_files_and_no_keeps_everything() {
    let t = dev_with_history();
    let before = common::tree(&t.home);
    let r = t.pty(b"\r", ["uninstall", "dev", "--purge"]);
    let shown = r["output"].as_str().unwrap();
    assert_eq!((r["prompted"].as_bool(), r["code"].as_i64()), (Some(true), Some(0)), "{shown}");
    has_all(shown, &["oysterun.sqlite", "[y/N]"]);
    has_all(shown, &["Cancelled; nothing was changed."]);
    assert_eq!(common::tree(&t.home), before, "Enter keeps everything");
    let r = t.pty(b"y\r", ["uninstall", "dev", "--purge"]);
    assert_eq!(r["code"], 0, "{r}");
    assert!(!t.stack_dir("dev").exists());
    t.wait_no_processes();
}

#[test]
fn a_rolled_back_first_setup_leaves_no_stack_behind() {
    let t = TestContext::with_pinned_host();
    TestContext::fixture_flag(&t.host_root(), "crash-on-start", "");
    let r = t
        .run(
            common::args(&["setup", "qa", "--no-install-providers"]).port(free_port()).wait(3, 200),
        )
        .fails_with(1);
    r.stderr_has("removed the stack directory");
    assert!(!t.stack_dir("qa").exists());
    assert!(!t.home.join(".oysterun-stacks").exists());
    t.run(["list"]).ok().stdout_has("No Oysterun stack on this machine");
    t.wait_no_processes();
}

/// A purge holds the stack's lock from its uninstall to its deletion: while another oyster
/// holds it (here: this test, as an install would), the purge waits, naming it, and deletes
/// nothing; once it is free, the purge goes on. Before, a purge deleted without the lock, so an
/// install meanwhile lost the stack it was writing.
#[test]
fn a_purge_waits_for_the_stacks_lock_before_it_deletes() {
    use std::io::Read;
    let t = TestContext::new();
    let dir = t.stack_dir("dev");
    std::fs::create_dir_all(dir.join("host")).unwrap();
    std::fs::write(dir.join("host/config.json"), "{\"port\": 4242}").unwrap();
    let lock = t.lock_file("dev");
    std::fs::write(&lock, "").unwrap();
    let held = std::fs::File::open(&lock).unwrap();
    held.lock().unwrap();
    let piped = std::process::Stdio::piped;
    let mut purge = t.spawn(["uninstall", "dev", "--purge", "--yes"], piped(), piped(), piped());
    let mut err = purge.stderr.take().unwrap();
    let mut said = vec![0u8; 4096];
    let n = err.read(&mut said).unwrap();
    let said = String::from_utf8_lossy(&said[..n]).into_owned();
    has_all(&said, &["waiting for another oyster"]);
    assert!(dir.join("host/config.json").exists(), "deleted under another oyster's lock");
    drop(held);
    let out = purge.wait_with_output().unwrap();
    assert!(out.status.success(), "{said}");
    assert!(!dir.exists());
}
