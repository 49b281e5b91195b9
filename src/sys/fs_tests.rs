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
fn a_lock_taken_without_waiting_records_its_holder_and_says_whether_it_created_the_file() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("oyster.lock");
    let (held, created) = try_lock_creating(&p, "cleanup").unwrap().expect("free");
    assert!(created && p.exists());
    drop(held);
    // A record left by a holder that was killed: replaced by this one's.
    std::fs::write(&p, "pid 999999 (agent restart)\n").unwrap();
    let (held, created) = try_lock_creating(&p, "cleanup").unwrap().expect("free");
    assert!(!created);
    let me = format!("pid {} (cleanup)", std::process::id());
    assert_eq!(std::fs::read_to_string(&p).unwrap().trim(), me);
    // A second taker (another open file description) finds it held.
    assert!(try_lock_creating(&p, "cleanup").unwrap().is_none());
    drop(held);
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "",
        "emptied on release"
    );
    // A FIFO planted as the lock file is refused, without blocking.
    let fifo = t.path().join("fifo.lock");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    assert!(matches!(
        try_lock_creating(&fifo, "cleanup"),
        Err(FsError::NotRegular { .. })
    ));
}

/// A holder that unlinks the lock file before letting go (cleanup removing a stack) must not
/// let its waiter hold a lock on the orphaned inode while a newcomer locks a fresh file: the
/// waiter takes the lock at the path (its directory created again), and the newcomer waits.
#[test]
fn a_waiter_whose_lock_file_was_unlinked_takes_the_one_at_the_path() {
    let t = tempfile::tempdir().unwrap();
    let run = t.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let p = run.join("oyster.lock");
    let (first, _) = try_lock_creating(&p, "cleanup").unwrap().unwrap();
    let waiter = std::thread::spawn({
        let p = p.clone();
        move || {
            let l =
                lock_waiting(&p, "install", std::time::Duration::from_secs(10), |_| {}).unwrap();
            (l, std::time::Instant::now())
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(200));
    std::fs::remove_file(&p).unwrap();
    std::fs::remove_dir(&run).unwrap();
    drop(first);
    let (held, _) = waiter.join().unwrap();
    // The waiter's lock is the file at the path: a newcomer finds it busy.
    assert!(p.exists(), "the waiter created the lock file again");
    assert!(try_lock_creating(&p, "newcomer").unwrap().is_none());
    drop(held);
    assert!(try_lock_creating(&p, "newcomer").unwrap().is_some());
}

/// A lock file grown huge (8 GiB, sparse) while another holds it: the waiter reads only the
/// head of it for the holder's record, so it neither stalls nor grows its memory.
#[test]
fn a_waiter_reads_only_the_head_of_a_huge_lock_file() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("oyster.lock");
    let (held, _) = try_lock_creating(&p, "holder").unwrap().unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let t0 = std::time::Instant::now();
    let mut said = None;
    let r = lock_waiting(&p, "waiter", std::time::Duration::from_millis(400), |h| {
        said = Some(h.len())
    });
    assert!(matches!(r, Err(FsError::Busy { .. })));
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        t0.elapsed()
    );
    assert!(said.is_some_and(|n| n <= 4096), "{said:?}");
    drop(held);
}
