//! Why oyster's per-user lock directory ([`super::stack::lock_dir`]), where each stack's
//! lifecycle lock lives, cannot be used, when it cannot: said before anything is created, with
//! the fix, by every verb that takes the lock, its dry run, `status` and `doctor`.

use std::path::{Path, PathBuf};

use crate::error::Failed;

/// Why the lock file `lock` (in [`super::stack::lock_dir`] under `home`) cannot be taken, before anything is
/// created: a directory on its way that is not one (a file, a FIFO, a link to nothing), the
/// deepest one that exists not writable by this user (another uid's, left by a `sudo` run), or
/// a lock file this user cannot open for writing. The message ends "nothing was changed"; the
/// hint names the fix. `Ok` when the lock can be taken, or the failure is not one of these.
pub fn refuse_unusable(home: &Path, lock: &Path) -> Result<(), Failed> {
    let Some(dir) = lock.parent() else {
        return Ok(());
    };
    let Ok(below) = dir.strip_prefix(home) else {
        return Ok(());
    };
    let mut deepest = home.to_path_buf();
    let mut at = home.to_path_buf();
    for part in below.components() {
        at.push(part);
        let Ok(meta) = std::fs::symlink_metadata(&at) else {
            break;
        };
        if meta.file_type().is_symlink() {
            match std::fs::metadata(&at) {
                Ok(m) if m.is_dir() => {}
                Ok(m) => return Err(not_a_directory(home, &at, &kind_of(&m.file_type()), dir)),
                Err(_) => return Err(dangling(home, &at, dir)),
            }
        } else if !meta.is_dir() {
            return Err(not_a_directory(home, &at, &kind_of(&meta.file_type()), dir));
        }
        deepest = at.clone();
    }
    // The deepest directory that exists: the next one is created in it, or the lock file.
    if !writable(&deepest) {
        return Err(unwritable(home, &deepest, dir, false));
    }
    if std::fs::symlink_metadata(lock).is_ok_and(|m| m.is_file()) && !writable_file(lock) {
        return Err(unwritable(home, lock, dir, true));
    }
    Ok(())
}

fn kind_of(ft: &std::fs::FileType) -> String {
    crate::sys::fs::special_kind(ft)
        .unwrap_or("a file")
        .to_owned()
}

/// Why the lifecycle lock cannot be taken in `dir` (under `home`): `at` is the part of its path
/// that is wrong. Words and hint: `commands/words/host.rs` (said as a `Failed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockDirRefusal {
    pub home: PathBuf,
    pub dir: PathBuf,
    pub at: PathBuf,
    pub why: LockDirWhy,
}

/// What is wrong with [`LockDirRefusal::at`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockDirWhy {
    /// It is `what` (a file, a FIFO), not a directory.
    NotADirectory { what: String },
    /// A symlink to `to`, which does not exist.
    Dangling { to: PathBuf },
    /// Not writable by this user (`me`): `owner`'s, with `mode`; `file` when it is the lock file.
    Unwritable {
        owner: u32,
        me: u32,
        mode: u32,
        file: bool,
    },
}

fn refusal(home: &Path, at: &Path, dir: &Path, why: LockDirWhy) -> Failed {
    LockDirRefusal {
        home: home.to_owned(),
        dir: dir.to_owned(),
        at: at.to_owned(),
        why,
    }
    .into()
}

fn not_a_directory(home: &Path, at: &Path, what: &str, dir: &Path) -> Failed {
    let what = what.to_owned();
    refusal(home, at, dir, LockDirWhy::NotADirectory { what })
}

fn dangling(home: &Path, at: &Path, dir: &Path) -> Failed {
    let to = std::fs::read_link(at).unwrap_or_default();
    refusal(home, at, dir, LockDirWhy::Dangling { to })
}

fn unwritable(home: &Path, at: &Path, dir: &Path, file: bool) -> Failed {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let me = crate::sys::user::euid();
    let (owner, mode) = std::fs::metadata(at)
        .map(|m| (m.uid(), m.permissions().mode() & 0o7777))
        .unwrap_or((me, 0));
    let why = LockDirWhy::Unwritable {
        owner,
        me,
        mode,
        file,
    };
    refusal(home, at, dir, why)
}

/// Whether this user may create entries in `dir` (write and search), as `access(2)` answers
/// it (root may, but on a read-only file system).
fn writable(dir: &Path) -> bool {
    use nix::unistd::{access, AccessFlags};
    access(dir, AccessFlags::W_OK | AccessFlags::X_OK).is_ok()
}

fn writable_file(file: &Path) -> bool {
    use nix::unistd::{access, AccessFlags};
    access(file, AccessFlags::W_OK).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_on_the_way_is_named_and_a_missing_chain_is_fine() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        let lock = crate::host::stack::lock_dir(home).join("com.oysterun.host.lock");
        assert!(refuse_unusable(home, &lock).is_ok());
        let below = lock.strip_prefix(home).unwrap();
        let first = home.join(below.components().next().unwrap());
        std::fs::write(&first, "").unwrap();
        let e = refuse_unusable(home, &lock).unwrap_err();
        assert!(e.msg.contains("is a file, not a directory"), "{}", e.msg);
        std::fs::remove_file(&first).unwrap();
        std::os::unix::fs::symlink(home.join("gone"), &first).unwrap();
        let e = refuse_unusable(home, &lock).unwrap_err();
        assert!(e.msg.contains("which does not exist"), "{}", e.msg);
    }
}
