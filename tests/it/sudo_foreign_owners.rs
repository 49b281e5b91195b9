//! sudo and files of other users, through the binary (docs/behaviour.md §5, §9): a root run
//! against another user's HOME (a `sudo` that keeps HOME) refuses and changes nothing, and a
//! root rewrite of a config another uid owns keeps its owner and mode. Both need root (ignored
//! by default; `.ci/run` runs them). Every run is bounded (`bounded.rs`).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use crate::bounded::{bounded, snapshot};
use crate::common::{free_port, real_node, TestContext};

fn chown_tree(dir: &Path, uid: u32) {
    let (u, g) = (Some(nix::unistd::Uid::from_raw(uid)), Some(nix::unistd::Gid::from_raw(uid)));
    nix::unistd::chown(dir, u, g).unwrap();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if std::fs::symlink_metadata(&p).unwrap().is_dir() {
            chown_tree(&p, uid);
        } else {
            nix::unistd::fchownat(
                nix::fcntl::AT_FDCWD,
                &p,
                u,
                g,
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .unwrap();
        }
    }
}

const NOBODY: u32 = 65534;

/// §5: run as root against a HOME owned by another uid (what `sudo -E oyster …` does), every
/// command that writes or loads refuses with exit 2 naming the owner, and HOME is untouched:
/// no new file, the config's bytes, owner and mode as they were.
#[test]
#[ignore = "needs root: chowns HOME to another uid (.ci/run runs it)"]
fn a_root_run_against_another_users_home_refuses_and_changes_nothing() {
    crate::common::need_root();
    let mut t = TestContext::new();
    t.use_sim();
    let root = t.fixture_root("root");
    t.write_config(r#"{"history": {"s1": "keep"}, "claude_command": "/opt/claude"}"#);
    std::fs::set_permissions(t.config_path(), std::fs::Permissions::from_mode(0o600)).unwrap();
    chown_tree(&t.home, NOBODY);
    let before = snapshot(&t.home, false);
    let (root_s, node) = (root.display().to_string(), real_node().display().to_string());
    let port = free_port().to_string();
    let host = ["--root", &root_s, "--node-bin", &node, "--port", &port];
    let cases: Vec<Vec<&str>> = vec![
        vec!["providers", "set", "claude", "/x/claude"],
        vec!["config", "sync"],
        [&["agent", "install"][..], &host].concat(),
        [&["host", "start"][..], &host].concat(),
        [&["setup", "--no-start"][..], &host].concat(),
    ];
    for args in cases {
        let r = bounded(&t, &args, &[], Duration::from_secs(20));
        let e = r.stderr();
        assert_eq!(r.code, Some(2), "{args:?}: {e}");
        assert!(
            e.contains("belongs to nobody") || e.contains("belongs to uid 65534"),
            "{args:?} names the owner: {e}"
        );
        assert!(e.contains("sudo -u"), "{args:?} names the command to run instead: {e}");
        assert_eq!(snapshot(&t.home, false), before, "{args:?} changed HOME");
    }
    assert_eq!(t.own_processes(), Vec::<u32>::new());
}

/// §9 ownership: root with its own HOME (allowed with the simulator, as in CI) rewriting a
/// config.json that belongs to another uid keeps that file's owner and mode.
#[test]
#[ignore = "needs root: chowns the config to another uid (.ci/run runs it)"]
fn a_root_rewrite_keeps_a_foreign_owned_configs_owner_and_mode() {
    crate::common::need_root();
    let t = TestContext::new();
    t.write_config(r#"{"history": {"s1": "keep"}}"#);
    let cfg = t.config_path();
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o640)).unwrap();
    nix::unistd::chown(
        &cfg,
        Some(nix::unistd::Uid::from_raw(NOBODY)),
        Some(nix::unistd::Gid::from_raw(NOBODY)),
    )
    .unwrap();
    assert_eq!(std::fs::metadata(&t.home).unwrap().uid(), 0, "HOME is root's own");
    for args in [
        vec!["providers", "set", "claude", "/x/claude"],
        vec!["providers", "set", "codex", "/y/codex"],
        vec!["config", "sync"],
    ] {
        t.run(&args).ok();
        let m = std::fs::metadata(&cfg).unwrap();
        assert_eq!(
            (m.uid(), m.gid(), m.mode() & 0o7777),
            (NOBODY, NOBODY, 0o640),
            "{args:?} changed the owner or mode"
        );
    }
    let v = t.read_config();
    assert_eq!(
        (v["claude_command"].as_str(), v["history"]["s1"].as_str()),
        (Some("/x/claude"), Some("keep"))
    );
    let dir = cfg.parent().unwrap();
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("oyster-tmp"))
        .collect();
    assert!(left.is_empty(), "temp files left: {left:?}");
}
