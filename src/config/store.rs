//! Writing `config.json`: read, merge, and (only when the value changed) an atomic replace
//! under the config's lock, bounded, with a re-check after the temp file's write and fsync,
//! right before the rename, that catches the Host's own unlocked rewrites (in place or by
//! rename) and merges again.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Map;

use super::{Change, ConfigDoc, ConfigError, MAX_CONFIG_BYTES};
use crate::sys::fs as fsutil;

/// How long a command waits for another writer's config lock before it fails, naming the
/// holder (a config write holds it for milliseconds; a holder past this is stuck or suspended).
pub const LOCK_WAIT: Duration = Duration::from_secs(10);
/// How long the Host's launch program tries for the config lock: it must never keep the Host
/// down, so past this it skips the sync, says so in the Host log, and starts the Host.
pub const LAUNCH_LOCK_WAIT: Duration = Duration::from_millis(50);
/// How many times a merge is redone when the file changed under it (the Host rewrites
/// `config.json` in place, without oyster's lock) before oyster gives up.
const MAX_MERGES: usize = 5;

/// What identifies the bytes a merge started from: the file's device, inode, size and mtime
/// in nanoseconds, and the bytes themselves. An in-place rewrite (Node's `writeFileSync`)
/// keeps the inode, and may keep the size and even the mtime on a coarse clock: the bytes
/// decide.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    meta: Option<(u64, u64, u64, i64, i64)>,
    bytes: Option<Vec<u8>>,
}

impl Seen {
    fn now(path: &Path) -> Result<Seen, ConfigError> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(path)
            .ok()
            .map(|m| (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec()));
        let bytes = fsutil::read_regular(path, MAX_CONFIG_BYTES)?;
        Ok(Seen { meta, bytes })
    }
}

/// Reads, edits and (only when it changed) atomically writes a config under its lock,
/// waiting at most [`LOCK_WAIT`] for another writer.
///
/// The directory is created 0700 when missing; a new file is 0600, an existing one keeps its
/// mode. Just before the rename the file is checked again: when someone rewrote it meanwhile
/// without the lock (the Host does), the merge is redone on what is there now, so neither side's
/// keys are lost; `edit` may therefore run more than once.
pub fn update<T>(
    path: &Path,
    reporter: &dyn crate::output::Reporter,
    edit: impl FnMut(&mut ConfigDoc, &mut Vec<Change>) -> anyhow::Result<T>,
) -> anyhow::Result<(T, Vec<Change>)> {
    update_waiting(path, LOCK_WAIT, reporter, edit)
}

/// [`update`], waiting at most `wait` for the lock ([`LAUNCH_LOCK_WAIT`] in the launch
/// program). A lock still held then is [`FsError::Busy`], naming the holder.
pub fn update_waiting<T>(
    path: &Path,
    wait: Duration,
    reporter: &dyn crate::output::Reporter,
    mut edit: impl FnMut(&mut ConfigDoc, &mut Vec<Change>) -> anyhow::Result<T>,
) -> anyhow::Result<(T, Vec<Change>)> {
    if let Some(dir) = path.parent() {
        fsutil::create_dir_all(dir, 0o700).map_err(ConfigError::from)?;
    }
    let lock = lock(path, wait, reporter)?;
    for _ in 0..MAX_MERGES {
        let seen = Seen::now(path)?;
        let mut doc = match &seen.bytes {
            Some(bytes) => ConfigDoc::parse(path, bytes)?,
            None => ConfigDoc {
                map: Map::new(),
                original: None,
            },
        };
        let mut changes = Vec::new();
        let out = edit(&mut doc, &mut changes)?;
        if !doc.changed() {
            return Ok((out, changes));
        }
        test_pause_before_rename();
        // Looked at again after the temp file is written and synced, right before the rename
        // (the sync is the long part of a write): a change by then means merging again.
        let mut current = || Seen::now(path).is_ok_and(|now| now == seen);
        let written = if current() {
            fsutil::write_atomic_checked(&lock, path, &doc.to_bytes(), None, &mut current)
                .map_err(ConfigError::from)?
        } else {
            fsutil::Checked::Raced
        };
        if written == fsutil::Checked::Raced {
            reporter.note(
                &StoreNote::Rewritten {
                    path: path.to_owned(),
                }
                .to_string(),
            );
            continue;
        }
        return Ok((out, changes));
    }
    Err(KeptChanging {
        path: path.to_owned(),
        attempts: MAX_MERGES,
    }
    .into())
}

/// What a merge says while it works. Words: `commands/words/config.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreNote {
    /// Another program rewrote the file between the read and the rename: merging again.
    Rewritten { path: PathBuf },
    /// Waiting for `holder` (empty: unknown) to release the config's lock.
    Waiting {
        holder: String,
        lock: PathBuf,
        secs: u64,
    },
}

/// The file changed under every merge (a failure, with the fix as `hint:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptChanging {
    pub path: PathBuf,
    pub attempts: usize,
}

impl std::error::Error for KeptChanging {}

/// The config's lock (`config.json.lock`), waited for at most `wait`; while waiting, one line
/// names the holder.
fn lock(
    path: &Path,
    wait: Duration,
    out: &dyn crate::output::Reporter,
) -> Result<fsutil::Lock, ConfigError> {
    let lock_path = fsutil::sidecar_lock_path(path);
    let quiet = wait < Duration::from_secs(1);
    Ok(fsutil::lock_waiting(
        &lock_path,
        "config write",
        wait,
        |holder| {
            if !quiet {
                let note = StoreNote::Waiting {
                    holder: holder.to_owned(),
                    lock: lock_path.clone(),
                    secs: wait.as_secs(),
                };
                out.progress(&note.to_string());
            }
        },
    )?)
}

/// A test hook: with `OYSTER_TEST_PAUSE_BEFORE_RENAME=<file>`, the first merge of this run
/// creates `<file>` and waits (at most 10 s) until it is removed, between its read and its
/// rename, so a test can rewrite the config there deterministically. Unset in every real run.
fn test_pause_before_rename() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static DONE: AtomicBool = AtomicBool::new(false);
    let Some(marker) = std::env::var_os("OYSTER_TEST_PAUSE_BEFORE_RENAME") else {
        return;
    };
    if DONE.swap(true, Ordering::SeqCst) {
        return;
    }
    let marker = PathBuf::from(marker);
    if std::fs::write(&marker, b"paused\n").is_err() {
        return;
    }
    let t0 = std::time::Instant::now();
    while marker.exists() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
}
