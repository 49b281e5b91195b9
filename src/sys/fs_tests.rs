//! Unit tests of the file helpers: atomic writes, temp sweeps, locks, bounded reads.

use super::*;
use std::os::unix::fs::MetadataExt;

#[test]
fn unchanged_bytes_touch_nothing_and_changes_keep_the_mode() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("f.json");
    let l = lock_sidecar(&p).unwrap();
    assert!(write_atomic(&l, &p, b"one", None).unwrap());
    assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o7777, 0o600);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    let ino = std::fs::metadata(&p).unwrap().ino();
    assert!(!write_atomic(&l, &p, b"one", None).unwrap());
    assert_eq!(std::fs::metadata(&p).unwrap().ino(), ino);
    assert!(write_atomic(&l, &p, b"two", None).unwrap());
    let m = std::fs::metadata(&p).unwrap();
    assert_eq!(
        (m.mode() & 0o7777, std::fs::read(&p).unwrap()),
        (0o640, b"two".to_vec())
    );
    assert!(!temp_path(&p).exists());
}

#[test]
fn an_unchanged_write_still_removes_a_killed_writers_temp_file() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("f.plist");
    let l = lock_sidecar(&p).unwrap();
    assert!(write_atomic(&l, &p, b"same", None).unwrap());
    // A writer that died between creating its temp file and the rename.
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let stale = p.with_file_name(format!(".f.plist.oyster-tmp.{dead_pid}"));
    std::fs::write(&stale, b"half").unwrap();
    // A live writer's temp file (this test's parent, which outlives us) is not touched.
    let live = p.with_file_name(format!(
        ".f.plist.oyster-tmp.{}",
        std::os::unix::process::parent_id()
    ));
    std::fs::write(&live, b"busy").unwrap();
    assert!(!write_atomic(&l, &p, b"same", None).unwrap());
    assert!(!stale.exists(), "the dead writer's temp file survived");
    assert!(live.exists(), "a live writer's temp file was removed");
}

#[test]
fn replace_atomic_sets_the_mode_and_leaves_no_temp_file() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("x.pid");
    replace_atomic(&p, b"1\n", 0o644).unwrap();
    replace_atomic(&p, b"2\n", 0o600).unwrap();
    let m = std::fs::metadata(&p).unwrap();
    assert_eq!(
        (m.mode() & 0o7777, std::fs::read(&p).unwrap()),
        (0o600, b"2\n".to_vec())
    );
    assert!(!temp_path(&p).exists());
    let link = t.path().join("link");
    std::os::unix::fs::symlink(&p, &link).unwrap();
    assert!(matches!(
        replace_atomic(&link, b"x", 0o644),
        Err(FsError::Symlink { .. })
    ));
}

#[test]
fn never_writes_through_a_symlink() {
    let t = tempfile::tempdir().unwrap();
    let target = t.path().join("target");
    std::fs::write(&target, "keep").unwrap();
    let link = t.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let l = lock_sidecar(&t.path().join("x")).unwrap();
    assert!(matches!(
        write_atomic(&l, &link, b"x", None),
        Err(FsError::Symlink { .. })
    ));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
}

#[test]
fn a_lock_taken_without_waiting_records_its_holder_and_creates_nothing() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("oyster.lock");
    assert!(try_lock_existing(&p, "cleanup").unwrap().is_none());
    assert!(!p.exists(), "no lock file is created");
    // A record left by a holder that was killed: replaced by this one's.
    std::fs::write(&p, "pid 999999 (agent restart)\n").unwrap();
    let held = try_lock_existing(&p, "cleanup").unwrap().expect("free");
    let me = format!("pid {} (cleanup)", std::process::id());
    assert_eq!(std::fs::read_to_string(&p).unwrap().trim(), me);
    // A second taker (another open file description) finds it held.
    assert!(try_lock_existing(&p, "cleanup").unwrap().is_none());
    drop(held);
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "",
        "emptied on release"
    );
}
