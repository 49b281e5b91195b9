//! Whether a program root runs is one only root can replace (issue 40): the file and every
//! directory above it are root's and writable by nobody else. With Homebrew on an Intel Mac,
//! `/usr/local/bin` belongs to the user who installed Homebrew, who can put any program at
//! `/usr/local/bin/oyster` — which a Jamf policy or a LaunchDaemon then runs as root.
//!
//! Both the path as it was run (its directories: whoever can write one can swap the link or
//! file in it) and the file it resolves to (with every directory above it) are checked. A
//! symlink's own owner and mode are not (no one can write through them); the directory holding
//! it is. A directory that others may write but that has the sticky bit (`/tmp`) passes: in
//! it only an entry's owner — here root, or the next check fails — can rename or remove the
//! entry. ACLs are not read.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why a path is not root's alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaceable {
    /// The file or directory that someone other than root can change.
    pub path: PathBuf,
    /// What makes it so. Words ("belongs to uid 501 (alice)", "is writable by its group (mode
    /// 0775)"): `commands/words/sys.rs`.
    pub why: Why,
}

/// What makes a path changeable by someone other than root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    Unresolvable {
        cause: String,
    },
    Uninspectable {
        cause: String,
    },
    /// A symlink `uid` owns in a sticky directory others may write.
    LinkInSharedDir {
        uid: u32,
    },
    /// Owned by `uid`, not root.
    NotRoots {
        uid: u32,
    },
    /// Writable by `who` ("its group", "everyone", "its group and everyone").
    Writable {
        who: &'static str,
        mode: u32,
    },
}

/// `Ok` when `exe` (as run) and the file it resolves to can be changed by root alone; else
/// the first path (from `/` down) that someone else could change, and why.
pub fn only_root_can_replace(exe: &Path) -> Result<(), Replaceable> {
    let mut paths: Vec<PathBuf> = vec![];
    if exe.is_absolute() {
        // The path itself too: when it is a link, whoever may replace the link chooses.
        paths.extend(exe.ancestors().map(Path::to_path_buf));
    }
    match std::fs::canonicalize(exe) {
        Ok(real) => paths.extend(real.ancestors().map(Path::to_path_buf)),
        Err(e) => {
            return Err(Replaceable {
                path: exe.to_path_buf(),
                why: Why::Unresolvable {
                    cause: e.to_string(),
                },
            })
        }
    }
    // From `/` down, each once: the highest culprit is named.
    paths.sort_by_key(|p| p.components().count());
    paths.dedup();
    paths.iter().try_for_each(|p| check(p))
}

fn check(path: &Path) -> Result<(), Replaceable> {
    let bad = |why: Why| Replaceable {
        path: path.to_path_buf(),
        why,
    };
    let m = std::fs::symlink_metadata(path).map_err(|e| {
        bad(Why::Uninspectable {
            cause: e.to_string(),
        })
    })?;
    if m.file_type().is_symlink() {
        // In a sticky directory others may write (`/tmp`, `/Users/Shared`), an entry's owner
        // may remove and make it again: a link there that is not root's can be pointed at
        // another program (any program root may run, which no check of oyster's then sees).
        let sticky_parent = path
            .parent()
            .and_then(|d| std::fs::metadata(d).ok())
            .is_some_and(|d| d.mode() & 0o1000 != 0 && d.mode() & 0o022 != 0);
        if sticky_parent && m.uid() != 0 {
            return Err(bad(Why::LinkInSharedDir { uid: m.uid() }));
        }
        return Ok(());
    }
    if m.uid() != 0 {
        return Err(bad(Why::NotRoots { uid: m.uid() }));
    }
    let mode = m.mode() & 0o7777;
    let sticky_dir = m.is_dir() && mode & 0o1000 != 0;
    let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        _ if sticky_dir => return Ok(()),
        (true, true) => "its group and everyone",
        (true, false) => "its group",
        (false, true) => "everyone",
        (false, false) => return Ok(()),
    };
    Err(bad(Why::Writable { who, mode }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_writable_directory_or_file_is_named_and_a_sticky_one_passes() {
        if !nix::unistd::geteuid().is_root() {
            return; // the files made here must be root's
        }
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let exe = bin.join("oyster");
        std::fs::write(&exe, "x").unwrap();
        chmod(dir.path(), 0o755);
        chmod(&bin, 0o755);
        chmod(&exe, 0o755);
        assert_eq!(only_root_can_replace(&exe), Ok(()));
        chmod(&bin, 0o775);
        let e = only_root_can_replace(&exe).unwrap_err();
        assert_eq!(e.path, bin);
        assert!(
            e.why.to_string().contains("its group") && e.why.to_string().contains("0775"),
            "{e:?}"
        );
        chmod(&bin, 0o1777);
        assert_eq!(only_root_can_replace(&exe), Ok(()));
        chmod(&exe, 0o757);
        let e = only_root_can_replace(&exe).unwrap_err();
        assert_eq!(
            (e.path.as_path(), e.why.to_string().contains("everyone")),
            (exe.as_path(), true)
        );
        chmod(&exe, 0o755);
        // A link in a safe directory to a file in an unsafe one: the file's directory counts.
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::rename(&exe, other.join("oyster")).unwrap();
        std::os::unix::fs::symlink(other.join("oyster"), &exe).unwrap();
        chmod(&bin, 0o755);
        chmod(&other, 0o777);
        assert_eq!(only_root_can_replace(&exe).unwrap_err().path, other);
    }

    /// The path as run may pass through a link in a sticky directory others can write (`/tmp`,
    /// `/Users/Shared`): a link a user owns there is theirs to remove and make again, pointing
    /// at any program, so it is named; root's own link there passes.
    #[test]
    fn a_users_link_in_a_sticky_directory_is_named() {
        if !nix::unistd::geteuid().is_root() {
            return; // the files made here must be root's
        }
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let real = bin.join("oyster");
        std::fs::write(&real, "x").unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        chmod(dir.path(), 0o755);
        chmod(&bin, 0o755);
        chmod(&real, 0o755);
        chmod(&shared, 0o1777);
        let link = shared.join("oyster");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(only_root_can_replace(&link), Ok(()));
        nix::unistd::fchownat(
            nix::fcntl::AT_FDCWD,
            &link,
            Some(nix::unistd::Uid::from_raw(501)),
            None,
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .unwrap();
        let e = only_root_can_replace(&link).unwrap_err();
        assert_eq!(e.path, link, "{e:?}");
        assert!(e.why.to_string().contains("uid 501"), "{e:?}");
    }
}
