//! The `.pkg`'s uninstall story: `sudo oyster-uninstall`, against the recording fakes of
//! `common::pkg`: every stack booted out, the payload removed, the receipt forgotten, and
//! nothing of the user's (their config, another installer's plist, their symlink) touched.

use crate::common::pkg::{Pkg, PKG_FILES};

#[test]
fn oyster_uninstall_boots_out_every_stack_removes_the_payload_and_forgets_the_receipt() {
    let p = Pkg::new();
    p.install_payload();
    let oyster = "/usr/local/bin/oyster";
    let prod = p.agent_running("asmith", "com.oysterun.host", oyster);
    let dev = p.agent_running("asmith", "com.oysterun.host.dev", "/opt/homebrew/bin/oyster");
    // Oysterun's own installer's plist is not oyster's to remove.
    let theirs = p.agent_running("asmith", "com.oysterun.host.legacy", "/bin/bash");
    let config = p.home("asmith").join(".oysterun/config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "{}").unwrap();

    // Not as root: refused, nothing touched.
    let o = p.uninstall(Some("asmith"), &[("FAKE_EUID", "501")]);
    assert_eq!(o.code, 1, "{}", o.out);
    assert!(o.out.contains("sudo oyster-uninstall"), "{}", o.out);
    assert_eq!(o.calls, vec!["id -u as=root".to_owned()]);
    assert!(prod.exists() && p.sys.join("usr/local/bin/oyster").exists());

    let o = p.uninstall(Some("asmith"), &[]);
    o.exits_0_saying(&["done: oyster is uninstalled.", "kept asmith's Oysterun config"]);
    let uid = p.account("asmith").uid;
    for job in ["com.oysterun.host", "com.oysterun.host.dev"] {
        assert!(
            o.calls.contains(&format!("launchctl bootout gui/{uid}/{job} as=root")),
            "{:#?}",
            o.calls
        );
    }
    assert!(!o.calls.iter().any(|c| c.contains("legacy") && c.starts_with("launchctl")));
    assert!(!prod.exists() && !dev.exists(), "{}", o.out);
    assert!(theirs.exists() && o.out.contains("another installer wrote it"), "{}", o.out);
    assert!(config.exists(), "the user's config stays");
    for rel in PKG_FILES {
        let path = p.sys.join(rel);
        if rel.contains('.') || rel.ends_with("oyster") || rel.ends_with("uninstall") {
            assert!(!path.exists(), "{rel} is still there");
        } else if rel.starts_with("Library/Oysterun") {
            // The package's own directory goes once empty; no other directory does.
            assert!(!path.exists(), "{rel} is still there");
        } else {
            assert!(path.is_dir(), "a directory ({rel}) was removed");
        }
    }
    let pkgutil: Vec<&String> = o.calls.iter().filter(|c| c.starts_with("pkgutil")).collect();
    assert_eq!(
        pkgutil,
        [
            "pkgutil --files com.oysterun.oyster as=root",
            "pkgutil --forget com.oysterun.oyster as=root"
        ]
    );

    // Again: nothing left to remove, and pkgutil no longer knows the package: named, exit 1.
    let o = p.uninstall(Some("asmith"), &[]);
    assert_eq!(o.code, 1, "{}", o.out);
    assert!(o.out.contains("pkgutil knows no package com.oysterun.oyster"), "{}", o.out);
}

#[test]
fn oyster_uninstall_with_nobody_logged_in_still_removes_the_payload() {
    let p = Pkg::new();
    p.install_payload();
    let prod = p.agent_running("alice", "com.oysterun.host", "/usr/local/bin/oyster");
    // Not loaded (bootout fails): the plist goes anyway.
    let o = p.uninstall(None, &[("FAKE_BOOTOUT_EXIT", "3")]);
    o.exits_0_saying(&["nobody is logged in", "oyster agent uninstall --all", "done"]);
    assert!(prod.exists(), "another user's agent is theirs");
    assert!(!p.sys.join("usr/local/bin/oyster").exists());
    let o = {
        p.install_payload();
        p.uninstall(Some("alice"), &[("FAKE_BOOTOUT_EXIT", "3")])
    };
    o.exits_0_saying(&["removed"]);
    assert!(!prod.exists(), "{}", o.out);
}

#[test]
fn oyster_uninstall_keeps_a_listed_directory_that_is_the_users_symlink() {
    let p = Pkg::new();
    // The user keeps /usr/local/bin as a symlink to a directory of their own; the package
    // installed into it, and pkgutil lists `usr/local/bin` as one of its directories.
    let mine = p.sys.join("opt/mybin");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("their-tool"), "theirs").unwrap();
    std::fs::create_dir_all(p.sys.join("usr/local")).unwrap();
    std::os::unix::fs::symlink(&mine, p.sys.join("usr/local/bin")).unwrap();
    p.install_payload();
    let o = p.uninstall(None, &[]);
    assert_eq!(o.code, 0, "{}", o.out);
    let link = p.sys.join("usr/local/bin");
    assert!(
        std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()),
        "the user's symlink /usr/local/bin was removed: {}",
        o.out
    );
    assert!(mine.join("their-tool").exists());
    assert!(!mine.join("oyster").exists(), "{}", o.out);
}
