//! A checkout in a folder macOS's privacy protection guards (here `~/Documents`): planning
//! names the path and the setting to change, and `doctor` has a check for it.

use std::path::Path;

use crate::common::{args, fixture_root_at, free_port, real_node, Run, TestContext};
use crate::common::{has_all, has_none};

/// `agent install --stack pv` of `root` with `node`, verified for 10 s, settling 200 ms.
fn install_with(t: &TestContext, root: &Path, node: &Path, port: u16) -> Run {
    t.run(args(&["agent", "install"]).stack("pv").root(root).node(node).port(port).wait(10, 200))
}

fn install(t: &TestContext, root: &Path, port: u16) -> Run {
    install_with(t, root, &real_node(), port)
}

#[test]
fn a_root_in_documents_is_named_with_the_setting_to_change_and_doctor_checks_it() {
    let mut t = TestContext::new();
    t.use_sim();
    let root = fixture_root_at(&t.home.join("Documents/oysterun"));
    let r = install(&t, &root, free_port()).ok();
    let e = r.stderr();
    has_all(
        &e,
        &[
            "warning: the Oysterun root ~/Documents/oysterun lies in the Documents folder",
            "move it out (e.g. a checkout to ~/oysterun): that is the lasting fix",
        ],
    );
    // The grant names the program that asks (Node, resolved), the one place a user can add
    // it (Full Disk Access → +), and that an upgrade loses it (issue 29 item 4); and oyster
    // too, whose launch program reads the root through a Node child before it becomes Node,
    // each with what its signature means for upgrades (unreadable off macOS: said so; issue
    // 39 item 5).
    let node = std::fs::canonicalize(real_node()).unwrap();
    let oyster = std::fs::canonicalize(crate::common::BIN).unwrap();
    has_all(
        &e,
        &[
            &format!("Node ({};", node.display()),
            "System Settings → Privacy & Security → Full Disk Access → +",
            "again after every Node upgrade",
            &format!(
                "and oyster ({}), whose launch program runs Oysterun's dashboard-credentials step",
                oyster.display()
            ),
            "with only Node granted it fails with \"Operation not permitted\"",
            "again after every oyster upgrade",
        ],
    );
    has_none(&e, &["Files and Folders"]);
    if cfg!(not(target_os = "macos")) {
        has_all(
            &e,
            &["its signature could not be read: there are no code signatures to read off macOS"],
        );
    }
    assert_eq!(e.matches("lies in the Documents folder").count(), 1, "said once: {e}");
    let doc = t.run(["doctor", "--stack", "pv", "--json"]).json();
    let rows: Vec<&serde_json::Value> =
        doc["checks"].as_array().unwrap().iter().filter(|c| c["check"] == "privacy").collect();
    assert_eq!(rows.len(), 1, "{doc}");
    assert_eq!(rows[0]["status"], "warn");
    assert!(rows[0]["detail"].as_str().unwrap().contains(&root.display().to_string()), "{doc}");
    t.run(["agent", "uninstall", "--stack", "pv"]).ok();

    // The same checkout outside the protected folders: nothing said.
    let elsewhere = fixture_root_at(&t.home.join("code/oysterun"));
    let r = install(&t, &elsewhere, free_port()).ok();
    assert!(!r.stderr().contains("Privacy"), "{}", r.stderr());
    let doc = t.run(["doctor", "--stack", "pv", "--json"]).json();
    assert!(!doc["checks"].as_array().unwrap().iter().any(|c| c["check"] == "privacy"), "{doc}");
}

/// Issue 29 item 4: a Full Disk Access grant is given to one Node binary; Homebrew's
/// `brew upgrade node` puts a new one behind the same `bin/node` link. `doctor` says when the
/// pinned Node is not the one the last verified start ran, naming the new binary.
#[test]
fn doctor_notices_that_the_pinned_node_changed_since_the_last_verified_start() {
    use std::os::unix::fs::PermissionsExt;
    let mut t = TestContext::new();
    t.use_sim();
    let root = fixture_root_at(&t.home.join("Documents/oysterun"));
    // A Homebrew-like layout: bin/node links to the current build in the Cellar.
    let cellar = t.path("Cellar");
    for v in ["1", "2"] {
        let dir = cellar.join(v);
        std::fs::create_dir_all(&dir).unwrap();
        let node = dir.join("node");
        std::fs::write(&node, format!("#!/bin/sh\nexec {} \"$@\"\n", real_node().display()))
            .unwrap();
        std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let bin = t.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(cellar.join("1/node"), bin.join("node")).unwrap();
    install_with(&t, &root, &bin.join("node"), free_port()).ok();
    let changed = |t: &TestContext| -> Vec<String> {
        let doc = t.run(["doctor", "--stack", "pv", "--json"]).json();
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["check"] == "privacy")
            .map(|c| c["detail"].as_str().unwrap().to_owned())
            .filter(|d| d.contains("the pinned Node changed"))
            .collect()
    };
    assert!(changed(&t).is_empty(), "nothing changed yet");
    // `brew upgrade node`: the link now leads to another build.
    std::fs::remove_file(bin.join("node")).unwrap();
    std::os::unix::fs::symlink(cellar.join("2/node"), bin.join("node")).unwrap();
    let rows = changed(&t);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0].contains(&format!("now {}", cellar.join("2/node").display())), "{rows:?}");
    t.run(["agent", "uninstall", "--stack", "pv"]).ok();
    t.wait_no_processes();
}
