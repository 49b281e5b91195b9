//! A checkout in a folder macOS's privacy protection guards (here `~/Documents`): planning
//! names the path and the setting to change, and `doctor` has a check for it.

use std::path::{Path, PathBuf};

use crate::common::{free_port, real_node, TestContext};

/// The Host fixture copied to `dir/host-service/server.mjs`.
fn root_at(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oysterun/host-service");
    std::fs::create_dir_all(dir.join("host-service")).unwrap();
    std::fs::copy(src.join("server.mjs"), dir.join("host-service/server.mjs")).unwrap();
    dir.to_path_buf()
}

fn install(t: &TestContext, root: &Path, port: u16) -> crate::common::Run {
    t.run([
        "agent",
        "install",
        "--stack",
        "pv",
        "--root",
        root.to_str().unwrap(),
        "--node-bin",
        real_node().to_str().unwrap(),
        "--port",
        &port.to_string(),
        "--wait",
        "10",
        "--settle-ms",
        "200",
    ])
}

#[test]
fn a_root_in_documents_is_named_with_the_setting_to_change_and_doctor_checks_it() {
    let mut t = TestContext::new();
    t.use_sim();
    let root = root_at(&t.home.join("Documents/oysterun"));
    let r = install(&t, &root, free_port()).ok();
    let e = r.stderr();
    assert!(
        e.contains("warning: the Oysterun root ~/Documents/oysterun lies in the Documents folder")
            && e.contains("System Settings → Privacy & Security → Files and Folders"),
        "{e}"
    );
    assert_eq!(
        e.matches("lies in the Documents folder").count(),
        1,
        "said once: {e}"
    );
    let doc = t.run(["doctor", "--stack", "pv", "--json"]).json();
    let rows: Vec<&serde_json::Value> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"] == "privacy")
        .collect();
    assert_eq!(rows.len(), 1, "{doc}");
    assert_eq!(rows[0]["status"], "warn");
    assert!(
        rows[0]["detail"]
            .as_str()
            .unwrap()
            .contains(&root.display().to_string()),
        "{doc}"
    );
    t.run(["agent", "uninstall", "--stack", "pv"]).ok();

    // The same checkout outside the protected folders: nothing said.
    let elsewhere = root_at(&t.home.join("code/oysterun"));
    let r = install(&t, &elsewhere, free_port()).ok();
    assert!(!r.stderr().contains("Privacy"), "{}", r.stderr());
    let doc = t.run(["doctor", "--stack", "pv", "--json"]).json();
    assert!(
        !doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["check"] == "privacy"),
        "{doc}"
    );
}
