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

/// `at` as one shell word for a command in a hint: `~/…` under `home` (the rest quoted when it
/// needs it, as macOS's `Library/Application Support` does), else the whole path.
fn word(home: &Path, at: &Path) -> String {
    let quoted = |s: &str| {
        let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:,@%".contains(c);
        if !s.is_empty() && s.chars().all(plain) {
            s.to_owned()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    match at.strip_prefix(home) {
        Ok(rel) if !rel.as_os_str().is_empty() => format!("~/{}", quoted(&rel.to_string_lossy())),
        _ => quoted(&at.to_string_lossy()),
    }
}

fn not_a_directory(home: &Path, at: &Path, what: &str, dir: &Path) -> Failed {
    Failed::new(
        format!(
            "oyster keeps each stack's lifecycle lock in {}, but {} is {what}, not a directory; nothing was changed",
            dir.display(),
            at.display()
        ),
        format!(
            "move it aside (`mv {0} {1}`) or make it a directory, then run the command again",
            word(home, at),
            word(home, &PathBuf::from(format!("{}.moved", at.display())))
        ),
    )
}

fn dangling(home: &Path, at: &Path, dir: &Path) -> Failed {
    let to = std::fs::read_link(at).unwrap_or_default();
    Failed::new(
        format!(
            "oyster keeps each stack's lifecycle lock in {}, but {} is a symlink to {}, which does not exist; nothing was changed",
            dir.display(),
            at.display(),
            to.display()
        ),
        format!(
            "remove the link (`rm {}`) or restore its target, then run the command again",
            word(home, at)
        ),
    )
}

fn unwritable(home: &Path, at: &Path, dir: &Path, file: bool) -> Failed {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let who = |uid: u32| {
        crate::sys::user::name_of(uid).map_or(format!("uid {uid}"), |n| format!("{n} (uid {uid})"))
    };
    let me = crate::sys::user::euid();
    let (owner, mode) = std::fs::metadata(at)
        .map(|m| (m.uid(), m.permissions().mode() & 0o7777))
        .unwrap_or((me, 0));
    let why = if owner == me {
        format!(
            "{} has mode {mode:04o}, so even you, its owner, cannot write {}",
            at.display(),
            if file { "it" } else { "in it" }
        )
    } else {
        format!(
            "{} is owned by {} (mode {mode:04o}), not by you ({})",
            at.display(),
            who(owner),
            who(me)
        )
    };
    let fix = if owner == me {
        format!(
            "`chmod u+w{} {}`",
            if file { "" } else { "x" },
            at.display()
        )
    } else {
        format!(
            "`sudo chown $USER {}` (a `sudo` run of an installer or of oyster left it so)",
            word(home, at)
        )
    };
    Failed::new(
        format!(
            "oyster cannot take the stack's lifecycle lock in {}: {why}; nothing was changed",
            dir.display()
        ),
        format!("{fix}, then run the command again"),
    )
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

    #[test]
    fn a_command_in_a_hint_quotes_a_path_with_a_space_after_the_tilde() {
        let home = Path::new("/Users/a b");
        let at = home.join("Library/Application Support");
        assert_eq!(word(home, &at), "~/'Library/Application Support'");
        assert_eq!(word(home, &home.join(".local")), "~/.local");
        assert_eq!(word(home, Path::new("/o'k")), "'/o'\\''k'");
    }
}
