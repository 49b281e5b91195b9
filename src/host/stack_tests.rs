//! Unit tests of the stack table: paths, labels, ports and names.

use super::*;
use std::path::Path;

#[test]
fn a_typo_of_a_stack_finds_its_nearest_name_and_a_new_name_none() {
    let known = ["production", "staging", "snap", "dev"];
    assert_eq!(nearest("snp", &known), Some("snap"));
    assert_eq!(nearest("stagin", &known), Some("staging"));
    assert_eq!(nearest("prodution", &known), Some("production"));
    assert_eq!(nearest("qa", &known), None);
    assert_eq!(nearest("newstack", &known), None);
}

fn env() -> StackEnv {
    StackEnv {
        home: Some("/h".into()),
        ..Default::default()
    }
}

// One assertion per row of the stack table, in the table's order: production's row, a named
// stack's, and every per-stack file.
#[test]
fn table_row_of_production() {
    let p = Stack::new("production", &env()).unwrap();
    assert_eq!(p.config_path(), Path::new("/h/.oysterun/config.json"));
    assert_eq!(p.run_dir, Path::new("/h/.oysterun/run"));
    assert_eq!(
        p.log_path(),
        Path::new("/h/.oysterun/logs/oysterun-host.log")
    );
    assert_eq!(
        p.plist_path(),
        Path::new("/h/Library/LaunchAgents/com.oysterun.host.plist")
    );
    assert_eq!(p.default_port, Some(8802));
    assert_eq!(p.root, Path::new("/h/.oysterun"));
    assert_eq!(
        p.pid_path(),
        Path::new("/h/.oysterun/run/oysterun-host.pid")
    );
    assert_eq!(
        p.origin_path(),
        Path::new("/h/.oysterun/run/oysterun-host.origin.tsv")
    );
    assert_eq!(
        p.matrix_db_path(),
        Path::new("/h/.oysterun/matrix/homeserver.db")
    );
}

#[test]
fn table_rows_of_named_stacks() {
    let s = Stack::new("staging", &env()).unwrap();
    assert_eq!(s.root, Path::new("/h/.oysterun-stacks/staging"));
    assert_eq!(
        s.pid_path(),
        Path::new("/h/.oysterun-stacks/staging/run/oysterun-host.pid")
    );
    assert_eq!(s.config_dir, Path::new("/h/.oysterun-stacks/staging/host"));
    assert_eq!(s.label, "com.oysterun.host.staging");
    assert_eq!(s.default_port, Some(9902));

    let mut e = env();
    e.stacks_dir = Some("/s".into());
    let c = Stack::new("dev-2", &e).unwrap();
    assert_eq!(c.log_dir, Path::new("/s/dev-2/logs"));
    assert_eq!(c.root, Path::new("/s/dev-2"));
    assert_eq!(
        c.pid_path(),
        Path::new("/s/dev-2/run/oysterun-host-dev-2.pid")
    );
    assert_eq!(
        c.origin_path(),
        Path::new("/s/dev-2/run/oysterun-host-dev-2.origin.tsv")
    );
    assert_eq!(
        c.matrix_db_path(),
        Path::new("/s/dev-2/matrix/homeserver.db")
    );
    assert_eq!(c.default_port, None);
    // Oysterun's preset test stacks use the unsuffixed names its scripts wait for.
    let t1 = Stack::new("test1", &e).unwrap();
    assert_eq!(t1.pid_path(), Path::new("/s/test1/run/oysterun-host.pid"));
}

#[test]
fn table_rows_of_every_per_stack_file() {
    let mut e = env();
    e.stacks_dir = Some("/s".into());
    let c = Stack::new("dev-2", &e).unwrap();
    // Every per-stack file is named here, and only here.
    // The lifecycle lock is the one file outside the stack: taking it creates no stack.
    let locks = if cfg!(target_os = "macos") {
        "/h/Library/Application Support/oyster/locks"
    } else {
        "/h/.local/state/oyster/locks"
    };
    assert_eq!(
        c.lifecycle_lock_path(),
        Path::new(locks).join("com.oysterun.host.dev-2.lock")
    );
    assert_eq!(c.legacy_lock_path(), Path::new("/s/dev-2/run/oyster.lock"));
    assert_eq!(c.pending_path(), Path::new("/s/dev-2/run/pending"));
    assert_eq!(
        c.last_good_plist_path(),
        Path::new("/s/dev-2/run/last-good.plist")
    );
    assert_eq!(
        c.node_version_cache_path(),
        Path::new("/s/dev-2/run/node-version.cache")
    );
    assert_eq!(
        c.config_lock_path(),
        Path::new("/s/dev-2/host/config.json.lock")
    );
    assert_eq!(
        c.pid_lock_path(),
        Path::new("/s/dev-2/run/oysterun-host-dev-2.pid.lock")
    );
    assert_eq!(
        c.identity_paths(),
        [c.pid_path(), c.origin_path(), c.exec_record_path()]
    );
    assert_eq!(
        c.exec_record_path(),
        Path::new("/s/dev-2/run/oyster-exec.json")
    );
}

#[test]
fn config_dir_override_changes_only_the_config_dir() {
    let mut e = env();
    e.config_dir = Some("/cfg".into());
    let p = Stack::new("production", &e).unwrap();
    assert_eq!(p.config_path(), Path::new("/cfg/config.json"));
    assert!(p.config_dir_overridden);
    assert_eq!(p.run_dir, Path::new("/h/.oysterun/run"));
    assert_eq!(p.root, Path::new("/h/.oysterun"), "the stack root stays");
}

#[test]
fn names() {
    for ok in ["production", "staging", "a", "dev-2", &"a".repeat(32)] {
        assert!(validate_name(ok).is_ok(), "{ok}");
    }
    for bad in [
        "",
        "2a",
        "-a",
        "A",
        "a_b",
        "a/b",
        "..",
        &"a".repeat(33),
        "a b",
    ] {
        assert!(validate_name(bad).is_err(), "{bad}");
    }
}
