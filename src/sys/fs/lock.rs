//! Locks: the stack's lifecycle lock and a file's sidecar lock, taken with flock(2), holding
//! a record of who holds them, and counted only while their path still names the locked file.

use super::*;

/// An exclusive lock, released on drop. Writers take one as proof: [`write_atomic`] needs a
/// `&Lock`, so an unlocked write does not compile.
pub struct Lock {
    // flock(2) through nix, released when the descriptor closes (on drop, or process exit).
    _held: nix::fcntl::Flock<File>,
    waited: bool,
    /// Whether this holder wrote its record (`pid N (what)`) into the lock file.
    recorded: bool,
    /// The record the lock file held when this holder took it.
    found: String,
}

impl Drop for Lock {
    /// The record is emptied while the lock is still held: left behind, it would name this
    /// process to the next waiter even after it let go — for the launch program, whose pid
    /// becomes the Host's, a waiter would then name the Host as the stuck writer to stop.
    fn drop(&mut self) {
        if self.recorded {
            let _ = self._held.set_len(0);
        }
    }
}

impl Lock {
    /// Whether another holder had it first, so whatever this run saw before it got the lock
    /// (a launchd job's pid, a file) may have changed meanwhile.
    pub fn waited(&self) -> bool {
        self.waited
    }

    /// The record the lock file held when this holder took it: a holder killed outright left
    /// its own there (`pid N (what)`), one that let go emptied it. So a killed holder's record
    /// says nobody held the lock since it was killed.
    pub fn found(&self) -> &str {
        &self.found
    }
}

/// The record the lock file at `lock_path` holds now, read without taking the lock (empty
/// when there is none, or its last holder let go): what [`Lock::found`] will be, for a run
/// that only previews.
pub fn lock_record(lock_path: &Path) -> String {
    match read_regular(lock_path, MAX_RECORD) {
        Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        _ => String::new(),
    }
}

/// The record a lock file holds (`pid N (what)`, empty when its last holder let go).
fn record_in(file: &mut File) -> String {
    use std::io::{Read, Seek};
    let mut record = vec![];
    let _ = file
        .rewind()
        .and_then(|()| Read::by_ref(file).take(MAX_RECORD).read_to_end(&mut record));
    String::from_utf8_lossy(&record).trim().to_owned()
}

/// `flock` in `mode` on `file`: `Ok(None)` when a non-blocking request finds it held.
fn flock(
    file: File,
    mode: nix::fcntl::FlockArg,
    lock_path: &Path,
) -> Result<Result<nix::fcntl::Flock<File>, File>, FsError> {
    match nix::fcntl::Flock::lock(file, mode) {
        Ok(held) => Ok(Ok(held)),
        Err((file, nix::errno::Errno::EWOULDBLOCK)) => Ok(Err(file)),
        Err((_, e)) => Err(io_err("lock", lock_path)(io::Error::from(e))),
    }
}

/// Opens (creating) a lock file: never through a symlink, never blocking on a FIFO or device
/// planted there (opened non-blocking and refused unless it is a regular file: reading the
/// holder's record from a FIFO would wait forever).
fn open_lock_file(lock_path: &Path) -> Result<File, FsError> {
    refuse_symlink(lock_path)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(lock_path)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ENXIO) => FsError::NotRegular {
                path: lock_path.to_owned(),
                kind: "a FIFO (named pipe)",
            },
            _ => io_err("open the lock file", lock_path)(e),
        })?;
    let meta = file.metadata().map_err(io_err("inspect", lock_path))?;
    if let Some(kind) = special_kind(&meta.file_type()) {
        return Err(FsError::NotRegular {
            path: lock_path.to_owned(),
            kind,
        });
    }
    Ok(file)
}

/// The sidecar lock of `path`: `<path>.lock`.
pub fn sidecar_lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes an exclusive lock on the sidecar `<path>.lock` (not the file being renamed, whose
/// inode changes on every write), creating it 0600 if needed. Blocks until it is free.
pub fn lock_sidecar(path: &Path) -> Result<Lock, FsError> {
    let lock_path = sidecar_lock_path(path);
    let mut file = open_lock_file(&lock_path)?;
    for _ in 0..RELOCK_TRIES {
        match flock(file, nix::fcntl::FlockArg::LockExclusive, &lock_path)? {
            Ok(held) if still_at(&held, &lock_path) => {
                return Ok(Lock {
                    _held: held,
                    waited: false,
                    recorded: false,
                    found: String::new(),
                })
            }
            // Unlinked (or replaced) while this one waited for it: lock the file there now.
            Ok(_) => file = reopen_lock_file(&lock_path)?,
            Err(_) => unreachable!("a blocking flock does not answer EWOULDBLOCK"),
        }
    }
    Err(moved_away(&lock_path))
}

/// How many times a lock whose file was unlinked under it is taken again before giving up
/// (each retry means another process removed the lock file meanwhile; more than a few is a
/// program doing it on purpose).
const RELOCK_TRIES: usize = 20;

/// The error when the lock file kept being replaced under every attempt.
fn moved_away(lock_path: &Path) -> FsError {
    io_err("lock", lock_path)(io::Error::other(MovedAway))
}

/// The lock file was removed or replaced under every attempt to take it. Words:
/// `commands/words/sys.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MovedAway;

impl std::error::Error for MovedAway {}

/// Whether the file a lock is held on is still the file at `lock_path` (same device and
/// inode). oyster never removes a lock file, but something else may (a user clearing oyster's
/// lock directory; an older oyster whose lock lived in the stack, which `cleanup` removed): a
/// waiter would then lock the orphaned inode while a newcomer creates a fresh file and locks
/// that: two writers. So a lock counts only while the path names it.
fn still_at(held: &File, lock_path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(ours) = held.metadata() else {
        return false;
    };
    std::fs::symlink_metadata(lock_path)
        .is_ok_and(|m| (m.dev(), m.ino()) == (ours.dev(), ours.ino()))
}

/// Opens the lock file again after it was unlinked under a waiter: its directory, removed with
/// it, is created again (0700), as the command that waited needs it anyway.
fn reopen_lock_file(lock_path: &Path) -> Result<File, FsError> {
    if let Some(dir) = lock_path.parent().filter(|d| !d.exists()) {
        if std::fs::symlink_metadata(dir).is_err() {
            create_dir_all(dir, 0o700)?;
        }
    }
    open_lock_file(lock_path)
}

/// Takes the exclusive lock at `lock_path` without waiting, creating the file (0600) when
/// there is none; its directory must exist. `Ok(None)` when another process holds it; else the
/// lock and whether this call created the file. `cleanup` takes each stack's lock this way
/// before it looks, so no oyster starts on a stack it is about to remove, even one whose lock
/// file does not exist yet (the run directory Oysterun's own runner leaves). Lock files are
/// never removed: they live outside the stacks, in oyster's lock directory.
pub fn try_lock_creating(lock_path: &Path, what: &str) -> Result<Option<(Lock, bool)>, FsError> {
    refuse_symlink(lock_path)?;
    for _ in 0..RELOCK_TRIES {
        let created = match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(lock_path)
        {
            Ok(_) => true,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
            Err(e) => return Err(io_err("create the lock file", lock_path)(e)),
        };
        match try_lock_once(lock_path, what)? {
            Locked::Held(lock) => return Ok(Some((lock, created))),
            Locked::Busy => return Ok(None),
            // Removed between the two opens: create it again.
            Locked::Absent | Locked::Moved => {}
        }
    }
    Err(moved_away(lock_path))
}

/// One non-blocking attempt at an existing lock file.
enum Locked {
    Held(Lock),
    Busy,
    Absent,
    /// Locked, but the path no longer names the locked file.
    Moved,
}

fn try_lock_once(lock_path: &Path, what: &str) -> Result<Locked, FsError> {
    refuse_symlink(lock_path)?;
    let open = |write: bool| {
        OpenOptions::new()
            .read(true)
            .write(write)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(lock_path)
    };
    let (file, writable) = match open(true) {
        Ok(f) => (f, true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Locked::Absent),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => match open(false) {
            Ok(f) => (f, false),
            Err(e) => return Err(io_err("open the lock file", lock_path)(e)),
        },
        // A FIFO nobody reads, opened for writing.
        Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) => {
            return Err(FsError::NotRegular {
                path: lock_path.to_owned(),
                kind: "a FIFO (named pipe)",
            })
        }
        Err(e) => return Err(io_err("open the lock file", lock_path)(e)),
    };
    let meta = file.metadata().map_err(io_err("inspect", lock_path))?;
    if let Some(kind) = special_kind(&meta.file_type()) {
        return Err(FsError::NotRegular {
            path: lock_path.to_owned(),
            kind,
        });
    }
    let Ok(mut held) = flock(file, nix::fcntl::FlockArg::LockExclusiveNonblock, lock_path)? else {
        return Ok(Locked::Busy);
    };
    if !still_at(&held, lock_path) {
        return Ok(Locked::Moved);
    }
    let found = record_in(&mut held);
    let recorded = writable && write_record(&mut held, what);
    Ok(Locked::Held(Lock {
        _held: held,
        waited: false,
        recorded,
        found,
    }))
}

/// Writes this holder's record (`pid N (what)`) into a lock file it holds.
fn write_record(held: &mut nix::fcntl::Flock<File>, what: &str) -> bool {
    use std::io::{Seek, Write};
    let record = format!("pid {} ({what})\n", std::process::id());
    held.set_len(0)
        .and_then(|()| held.rewind())
        .and_then(|()| held.write_all(record.as_bytes()))
        .is_ok()
}

/// Takes the exclusive lock at `lock_path`, waiting at most `bound`. While another process
/// holds it, `waiting` is called once with what the holder wrote into the file (its pid and
/// command); the wait also ends early when a signal arrives (`sys::signal::received`). The
/// holder's record is this process's pid and `what`.
pub fn lock_waiting(
    lock_path: &Path,
    what: &str,
    bound: std::time::Duration,
    waiting: impl FnOnce(&str),
) -> Result<Lock, FsError> {
    use std::io::{Read, Seek};
    let mut file = open_lock_file(lock_path)?;
    let t0 = std::time::Instant::now();
    let mut waiting = Some(waiting);
    let mut waited = false;
    // A holder's record is one short line: read no more than that, whatever the file grew to.
    let holder_of = |f: &mut File| {
        let mut holder = vec![];
        let _ = f
            .rewind()
            .and_then(|()| Read::by_ref(f).take(MAX_RECORD).read_to_end(&mut holder));
        String::from_utf8_lossy(&holder).trim().to_owned()
    };
    let mut relocks = 0;
    let mut held = loop {
        match flock(file, nix::fcntl::FlockArg::LockExclusiveNonblock, lock_path)? {
            Ok(held) if still_at(&held, lock_path) => break held,
            // The holder unlinked the file before letting go (cleanup removing the stack):
            // this is a lock on nothing. Take the one at the path now, created again if need be.
            Ok(_) => {
                relocks += 1;
                if relocks > RELOCK_TRIES {
                    return Err(moved_away(lock_path));
                }
                waited = true;
                file = reopen_lock_file(lock_path)?;
            }
            Err(mut busy) => {
                waited = true;
                if waiting.is_some() {
                    let holder = holder_of(&mut busy);
                    // The record may still be the previous holder's (the new one writes its own
                    // just after it locks): name a holder only once the record is a live one's,
                    // or after a short while, whatever is there.
                    if record_is_live(&holder)
                        || t0.elapsed() >= std::time::Duration::from_millis(300)
                    {
                        if let Some(say) = waiting.take() {
                            say(&holder);
                        }
                    }
                }
                let interrupted =
                    || crate::sys::signal::pause(std::time::Duration::from_millis(50)).is_err();
                if t0.elapsed() >= bound || interrupted() {
                    // A record naming no live process is not the holder's (a killed holder's
                    // lock went with it): whoever holds it wrote none.
                    let holder = Some(holder_of(&mut busy)).filter(|h| record_is_live(h));
                    return Err(FsError::Busy {
                        path: lock_path.to_owned(),
                        holder: holder.unwrap_or_default(),
                        secs: t0.elapsed().as_secs(),
                    });
                }
                file = busy;
            }
        }
    };
    // Say who holds it, for the next one to wait.
    let found = record_in(&mut held);
    let recorded = write_record(&mut held, what);
    Ok(Lock {
        _held: held,
        waited,
        recorded,
        found,
    })
}

/// The most of a lock file read for its holder's record (`pid N (what)`).
const MAX_RECORD: u64 = 4096;

/// Whether a lock record (`pid N (what)`) names a live process other than this one.
#[allow(clippy::cast_possible_wrap, reason = "pids fit an i32 (pid_t)")]
fn record_is_live(record: &str) -> bool {
    record
        .strip_prefix("pid ")
        .and_then(|r| r.split(' ').next())
        .and_then(|p| p.parse::<u32>().ok())
        .filter(|p| *p != std::process::id())
        .is_some_and(crate::sys::signal::exists)
}
