//! Which path of oyster goes into the plist's `ProgramArguments` (docs/behaviour.md §4, §6a): the
//! stable path oyster was installed as, never a versioned Homebrew keg.
//!
//! Homebrew installs the binary in `<prefix>/Cellar/oyster/<version>/bin/oyster` and links it
//! from `<prefix>/bin/oyster`; `brew upgrade` deletes the old keg, so a plist naming the keg
//! would make launchd fail with exit 78 after every upgrade. `std::env::current_exe()` gives the
//! keg on Linux (the kernel resolves every link), and may on macOS, so the path is chosen from
//! what the user invoked, with the link kept:
//!
//! 1. `argv[0]`: as given when it holds a `/` (made absolute against the working directory),
//!    else the first `PATH` entry holding an `oyster` — its final symlink not followed;
//! 2. when that is missing or lies inside a `Cellar`, the Homebrew links that lead to the same
//!    binary: `<prefix>/bin/oyster` and `<prefix>/opt/oyster/bin/oyster` of the keg's prefix,
//!    then `/opt/homebrew/bin/oyster` and `/usr/local/bin/oyster`;
//! 3. else the running binary itself.
//!
//! A candidate counts only when it resolves to the running binary, so a stale link or an
//! `argv[0]` that lies never lands in a plist.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::provider::resolve::normalize;

/// The well-known links `make install`, the .pkg and Homebrew create.
pub const WELL_KNOWN: [&str; 2] = ["/opt/homebrew/bin/oyster", "/usr/local/bin/oyster"];

/// What oyster was started as.
pub struct Invocation<'a> {
    pub argv0: Option<&'a OsStr>,
    /// The caller's `PATH` (how a bare `oyster` was found).
    pub path_var: Option<&'a OsStr>,
    pub cwd: Option<&'a Path>,
    /// `std::env::current_exe()`.
    pub current_exe: &'a Path,
}

/// The stable absolute path of the running oyster (see the module documentation).
pub fn stable_path(inv: &Invocation<'_>) -> PathBuf {
    let real = std::fs::canonicalize(inv.current_exe).ok();
    let same = |p: &Path| match (&real, std::fs::canonicalize(p)) {
        (Some(real), Ok(p)) => *real == p,
        _ => false,
    };
    let invoked = invoked_path(inv).filter(|p| same(p));
    if let Some(p) = invoked.as_ref().filter(|p| !in_keg(p)) {
        return p.clone();
    }
    let keg = invoked
        .as_deref()
        .filter(|p| in_keg(p))
        .or_else(|| real.as_deref().filter(|p| in_keg(p)))
        .or_else(|| Some(inv.current_exe).filter(|p| in_keg(p)));
    let mut candidates: Vec<PathBuf> = keg.map(brew_links).unwrap_or_default();
    candidates.extend(WELL_KNOWN.iter().map(PathBuf::from));
    if let Some(link) = candidates.into_iter().find(|c| same(c)) {
        return link;
    }
    invoked.unwrap_or_else(|| normalize(inv.current_exe))
}

/// `argv[0]` as a path: absolute and normalized, or looked up on `PATH` (no link followed).
fn invoked_path(inv: &Invocation<'_>) -> Option<PathBuf> {
    let argv0 = Path::new(inv.argv0?);
    if argv0.as_os_str().is_empty() {
        return None;
    }
    if argv0.as_os_str().as_encoded_bytes().contains(&b'/') {
        let abs = if argv0.is_absolute() {
            argv0.to_path_buf()
        } else {
            inv.cwd?.join(argv0)
        };
        return Some(normalize(&abs));
    }
    std::env::split_paths(inv.path_var?)
        .filter(|d| d.is_absolute())
        .map(|d| normalize(&d.join(argv0)))
        .find(|p| p.is_file())
}

/// Whether `p` lies inside a versioned Homebrew keg (`…/Cellar/…`).
fn in_keg(p: &Path) -> bool {
    p.components().any(|c| c.as_os_str() == "Cellar")
}

/// `<prefix>/bin/oyster` and `<prefix>/opt/oyster/bin/oyster` for a keg under `<prefix>/Cellar`.
fn brew_links(keg_path: &Path) -> Vec<PathBuf> {
    let mut prefix = PathBuf::new();
    for c in keg_path.components() {
        if c.as_os_str() == "Cellar" {
            return vec![
                prefix.join("bin/oyster"),
                prefix.join("opt/oyster/bin/oyster"),
            ];
        }
        prefix.push(c);
    }
    vec![]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A fake Homebrew prefix: the binary in a keg, linked from bin/ and opt/.
    fn brew(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
        let keg = dir.join("brew/Cellar/oyster/0.1.0/bin/oyster");
        std::fs::create_dir_all(keg.parent().unwrap()).unwrap();
        std::fs::write(&keg, "").unwrap();
        let bin = dir.join("brew/bin/oyster");
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        symlink("../Cellar/oyster/0.1.0/bin/oyster", &bin).unwrap();
        let opt = dir.join("brew/opt/oyster");
        std::fs::create_dir_all(opt.parent().unwrap()).unwrap();
        symlink("../Cellar/oyster/0.1.0", &opt).unwrap();
        (keg, bin, opt.join("bin/oyster"))
    }

    #[test]
    fn a_link_on_path_is_kept_not_its_keg() {
        let t = tempfile::tempdir().unwrap();
        let (keg, bin, _) = brew(t.path());
        let path_var =
            std::env::join_paths([t.path().join("nothing"), t.path().join("brew/bin")]).unwrap();
        let got = stable_path(&Invocation {
            argv0: Some(OsStr::new("oyster")),
            path_var: Some(&path_var),
            cwd: None,
            current_exe: &keg,
        });
        assert_eq!(got, bin);
    }

    #[test]
    fn the_keg_itself_is_replaced_by_its_prefix_link() {
        let t = tempfile::tempdir().unwrap();
        let (keg, bin, _) = brew(t.path());
        let got = stable_path(&Invocation {
            argv0: Some(keg.as_os_str()),
            path_var: None,
            cwd: None,
            current_exe: &keg,
        });
        assert_eq!(got, bin);
        // Without the bin/ link, the opt/ link (also stable across upgrades).
        std::fs::remove_file(&bin).unwrap();
        let got = stable_path(&Invocation {
            argv0: Some(keg.as_os_str()),
            path_var: None,
            cwd: None,
            current_exe: &keg,
        });
        assert_eq!(got, t.path().join("brew/opt/oyster/bin/oyster"));
    }

    #[test]
    fn a_relative_argv0_is_made_absolute_and_a_lying_one_is_ignored() {
        let t = tempfile::tempdir().unwrap();
        let exe = t.path().join("a/oyster");
        std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
        std::fs::write(&exe, "").unwrap();
        let got = stable_path(&Invocation {
            argv0: Some(OsStr::new("./a/../a/oyster")),
            path_var: None,
            cwd: Some(t.path()),
            current_exe: &exe,
        });
        assert_eq!(got, exe);
        let other = t.path().join("other");
        std::fs::write(&other, "").unwrap();
        let got = stable_path(&Invocation {
            argv0: Some(other.as_os_str()),
            path_var: None,
            cwd: None,
            current_exe: &exe,
        });
        assert_eq!(got, exe, "argv[0] naming another file is not trusted");
    }
}
