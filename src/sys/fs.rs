//! The one atomic-write helper and the sidecar lock every read-modify-write takes.
//!
//! A write goes to a temp file in the same directory with an explicit mode, is `fsync`ed,
//! renamed over the target, and the directory is `fsync`ed; an unchanged file is not touched
//! at all (same bytes, same mtime, same inode). Never through a symlink.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A failed filesystem step, naming the file. Words: `commands/words/sys.rs`.
#[derive(Debug)]
pub enum FsError {
    Symlink {
        path: PathBuf,
    },
    Io {
        action: &'static str,
        path: PathBuf,
        // Not a `#[source]`: the message already says it, and `{:#}` would say it twice.
        cause: io::Error,
    },
    NotRegular {
        path: PathBuf,
        kind: &'static str,
    },
    /// `holder` (empty: one that left no record of its pid) has held the lock `secs`.
    Busy {
        path: PathBuf,
        holder: String,
        secs: u64,
    },
    TooLarge {
        path: PathBuf,
        cap: u64,
    },
}

impl std::error::Error for FsError {}

impl FsError {
    /// Whether the file itself is wrong (exit 2) rather than the system failing (exit 1).
    pub fn is_invalid_input(&self) -> bool {
        !matches!(self, FsError::Io { .. } | FsError::Busy { .. })
    }
}

fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> FsError + 'a {
    move |cause| FsError::Io {
        action,
        path: path.to_owned(),
        cause,
    }
}

/// Reads a regular file of at most `cap` bytes, never through a symlink and never blocking on
/// a FIFO or device (opened non-blocking, checked with `fstat` before any read). `None` when
/// there is no such file.
pub fn read_regular(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, FsError> {
    use std::io::Read;
    let Some(file) = open_regular(path)? else {
        return Ok(None);
    };
    let meta = file.metadata().map_err(io_err("inspect", path))?;
    if meta.len() > cap {
        return Err(FsError::TooLarge {
            path: path.to_owned(),
            cap,
        });
    }
    #[allow(clippy::cast_possible_truncation)] // a capacity hint; the read is capped
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err("read", path))?;
    if bytes.len() as u64 > cap {
        return Err(FsError::TooLarge {
            path: path.to_owned(),
            cap,
        });
    }
    Ok(Some(bytes))
}

/// The first `n` bytes (fewer when the file is shorter) of a regular file that may be reached
/// through symlinks (an executable such as Homebrew's `node` link): opened non-blocking and
/// checked with `fstat` before any read, so a FIFO or device there never blocks and is never
/// read. `None` when there is no such file or it is not a regular file.
pub fn read_head(path: &Path, n: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if special_kind(&file.metadata().ok()?.file_type()).is_some() {
        return None;
    }
    let mut head = Vec::with_capacity(n);
    file.take(n as u64).read_to_end(&mut head).ok()?;
    Some(head)
}

/// Opens a regular file for reading: never through a symlink, never blocking on a FIFO or
/// device (opened non-blocking, checked with `fstat` before any read). `None` when there is no
/// such file; anything else that is not a regular file is refused, naming what it is.
pub fn open_regular(path: &Path) -> Result<Option<File>, FsError> {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err(FsError::Symlink {
                path: path.to_owned(),
            })
        }
        Err(e) => return Err(io_err("open", path)(e)),
    };
    let meta = file.metadata().map_err(io_err("inspect", path))?;
    if let Some(kind) = special_kind(&meta.file_type()) {
        return Err(FsError::NotRegular {
            path: path.to_owned(),
            kind,
        });
    }
    Ok(Some(file))
}

/// What is at `path` when it exists and is not a regular file (a symlink, whatever it points
/// to, a FIFO, a socket, a device, a directory), in words; `None` for a regular file or nothing.
/// Never follows a link and never opens the file, so it cannot block.
pub fn not_regular(path: &Path) -> Option<&'static str> {
    std::fs::symlink_metadata(path)
        .ok()
        .and_then(|m| special_kind(&m.file_type()))
}

/// What a file that is not a regular file is, in words; `None` for a regular file.
pub fn special_kind(ft: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_file() {
        None
    } else if ft.is_dir() {
        Some("a directory")
    } else if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_socket() {
        Some("a socket")
    } else if ft.is_char_device() || ft.is_block_device() {
        Some("a device")
    } else if ft.is_symlink() {
        Some("a symlink")
    } else {
        Some("a special file")
    }
}

/// Opens a log for appending (created with `mode`), never through a symlink and never blocking
/// on a FIFO: the file must be a regular file (docs/behaviour.md §9).
pub fn open_append(path: &Path, mode: u32) -> Result<File, FsError> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(mode)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ELOOP) => FsError::Symlink {
                path: path.to_owned(),
            },
            // A FIFO nobody reads: opening it for writing would have blocked.
            Some(nix::libc::ENXIO) => FsError::NotRegular {
                path: path.to_owned(),
                kind: "a FIFO (named pipe)",
            },
            _ => io_err("open", path)(e),
        })?;
    let meta = file.metadata().map_err(io_err("inspect", path))?;
    if let Some(kind) = special_kind(&meta.file_type()) {
        return Err(FsError::NotRegular {
            path: path.to_owned(),
            kind,
        });
    }
    // A regular file: back to ordinary blocking writes for whoever inherits the descriptor.
    nix::fcntl::fcntl(
        &file,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_APPEND),
    )
    .map_err(|e| io_err("set the flags of", path)(e.into()))?;
    Ok(file)
}

/// Refuses when `path` itself is a symlink (a dangling one included).
pub fn refuse_symlink(path: &Path) -> Result<(), FsError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(FsError::Symlink {
            path: path.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// The prefix of every temp file written next to `path`: `.<name>.oyster-tmp.`.
fn temp_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    format!(".{name}.oyster-tmp.")
}

/// This writer's temp file next to `path`: the prefix plus our pid, so two writers never share
/// one and a stale one names the writer that left it.
pub fn temp_path(path: &Path) -> PathBuf {
    path.with_file_name(format!("{}{}", temp_prefix(path), std::process::id()))
}

/// Removes temp files for `path` left by writers that are gone (killed half-way through a
/// write). A live writer's temp file is left alone. Runs on every write, changed or not, so a
/// run that finds the bytes already in place still cleans up after a killed one.
fn sweep_stale_temps(path: &Path) {
    let (Some(dir), prefix) = (path.parent(), temp_prefix(path)) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        // Ours (a pid reused since an earlier run) or a writer that no longer exists.
        let stale = match pid.parse::<u32>() {
            Ok(p) if p != std::process::id() => !super::signal::exists(p),
            _ => true,
        };
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes `bytes` to `path` atomically with `mode` (kept from an existing file when `None`,
/// else 0600). Returns `false`, touching nothing, when the file already holds these bytes.
///
/// `held` proves the caller holds the lock that guards `path` (its sidecar, or the stack's
/// lifecycle lock). A file owned by someone else (root rewriting a user's file) keeps its
/// owner as well as its mode (docs/behaviour.md §9).
pub fn write_atomic(
    held: &Lock,
    path: &Path,
    bytes: &[u8],
    mode: Option<u32>,
) -> Result<bool, FsError> {
    write_atomic_checked(held, path, bytes, mode, &mut || true).map(|c| c == Checked::Written)
}

/// What [`write_atomic_checked`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Checked {
    /// The file already held these bytes; nothing was touched.
    Unchanged,
    Written,
    /// `still_current` said no right before the rename: nothing was replaced (the temp file is
    /// gone), and the caller reads the file again.
    Raced,
}

/// [`write_atomic`] for a file another program rewrites without oyster's lock (the Host and
/// its `config.json`): `still_current` is asked after the temp file is written and synced —
/// a full fsync takes tens of milliseconds on macOS — right before the rename, and when it
/// says no, nothing is replaced ([`Checked::Raced`]). What is left is the window between that
/// look and the rename, not the whole write.
pub fn write_atomic_checked(
    _held: &Lock,
    path: &Path,
    bytes: &[u8],
    mode: Option<u32>,
    still_current: &mut dyn FnMut() -> bool,
) -> Result<Checked, FsError> {
    refuse_symlink(path)?;
    sweep_stale_temps(path);
    let mut owner = None;
    let existing_mode = match std::fs::metadata(path) {
        Ok(m) => {
            if let Some(kind) = special_kind(&m.file_type()) {
                return Err(FsError::NotRegular {
                    path: path.to_owned(),
                    kind,
                });
            }
            if m.len() == bytes.len() as u64
                && read_regular(path, m.len()).is_ok_and(|old| old.as_deref() == Some(bytes))
            {
                return Ok(Checked::Unchanged);
            }
            use std::os::unix::fs::MetadataExt;
            owner = Some((m.uid(), m.gid()));
            Some(m.permissions().mode() & 0o7777)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err("read", path)(e)),
    };
    let mode = mode.or(existing_mode).unwrap_or(0o600);
    let renamed = replace_via_temp(path, bytes, mode, owner, Durability::Synced, still_current)?;
    Ok(if renamed {
        Checked::Written
    } else {
        Checked::Raced
    })
}

/// Whether a replacement is `fsync`ed (file and directory) before it counts as done.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Durability {
    /// Config, plist: must survive a power cut.
    Synced,
    /// Runtime files that describe a live process: atomic for readers, and a power cut leaves
    /// nothing to describe.
    Volatile,
}

/// The one replace step: this writer's temp file in the same directory with exactly `mode`
/// (and `owner`, when given), then a rename over `path`; the temp file never outlives a
/// failure.
fn replace_via_temp(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    owner: Option<(u32, u32)>,
    durability: Durability,
    still_current: &mut dyn FnMut() -> bool,
) -> Result<bool, FsError> {
    let tmp = temp_path(path);
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)
            .map_err(io_err("write", path))?;
        f.write_all(bytes).map_err(io_err("write", path))?;
        if let Some((uid, gid)) = owner {
            use std::os::unix::fs::MetadataExt;
            let ours = f.metadata().map_err(io_err("write", path))?;
            if (ours.uid(), ours.gid()) != (uid, gid) {
                std::os::unix::fs::fchown(&f, Some(uid), Some(gid))
                    .map_err(io_err("keep the owner of", path))?;
            }
        }
        // The umask may have narrowed the mode given to open; set it exactly.
        f.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(io_err("set the mode of", path))?;
        if durability == Durability::Synced {
            f.sync_all().map_err(io_err("sync", path))?;
            test_slow_fsync();
        }
        if !still_current() {
            return Ok(false);
        }
        std::fs::rename(&tmp, path).map_err(io_err("rename into place", path))?;
        if durability == Durability::Synced {
            sync_dir(path)?;
        }
        Ok(true)
    })();
    if !matches!(result, Ok(true)) {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A test hook, compiled into debug builds only (inert in every release build, whatever the
/// environment): with `OYSTER_TEST_SLOW_FSYNC=<file>`, the first synced write of this run
/// creates `<file>` after its fsync and waits (at most 10 s) until it is removed, standing in
/// for macOS's full fsync (tens of milliseconds) so a test can rewrite the target in that
/// window deterministically.
fn test_slow_fsync() {
    #[cfg(debug_assertions)]
    {
        use std::sync::atomic::{AtomicBool, Ordering};
        static DONE: AtomicBool = AtomicBool::new(false);
        let Some(marker) = std::env::var_os("OYSTER_TEST_SLOW_FSYNC") else {
            return;
        };
        if DONE.swap(true, Ordering::SeqCst) {
            return;
        }
        let marker = PathBuf::from(marker);
        if std::fs::write(&marker, b"in fsync\n").is_err() {
            return;
        }
        let t0 = std::time::Instant::now();
        while marker.exists() && t0.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// Replaces `path` with `bytes` through a temp file and a rename, with exactly `mode`, but
/// without `fsync`: for runtime files that describe a live process (the Host's identity files),
/// where readers need atomicity and a power cut leaves nothing to describe. Never through a
/// symlink; temp files of dead writers are swept first. (No lock: the launch program writes
/// them while `host start` holds the pid lock; per-writer temp names keep writers apart.)
pub fn replace_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), FsError> {
    refuse_symlink(path)?;
    // A launch killed between its temp file and the rename leaves one behind (the exec
    // record's holds the launch environment): the next writer of the file removes it.
    sweep_stale_temps(path);
    replace_via_temp(path, bytes, mode, None, Durability::Volatile, &mut || true).map(|_| ())
}

/// `fsync`s the directory holding `path`, so the rename survives a power cut.
fn sync_dir(path: &Path) -> Result<(), FsError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("sync the directory", dir))
}

/// Creates a directory and its parents with `mode` for the ones created.
pub fn create_dir_all(dir: &Path, mode: u32) -> Result<(), FsError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(dir)
        .map_err(io_err("create the directory", dir))
}

mod lock;

pub use lock::*;

#[cfg(test)]
#[path = "fs_tests.rs"]
mod tests;
