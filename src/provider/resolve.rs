//! The canonical command resolver (docs/behaviour.md §1, seed 000 "Canonical Resolver").
//!
//! Resolution is a pure walk over file metadata: no shell, no `which`, no subprocess, and never
//! an execution of the thing found. The same walk finds `node` for the launch environment.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::provider::registry::Provider;

/// Who owns a provider's command (docs/behaviour.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Intent {
    /// Oysterun owns discovery.
    Auto,
    /// The user owns a non-empty command.
    Manual,
    /// The user disabled the provider.
    Disabled,
}

impl Intent {
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Auto => "auto",
            Intent::Manual => "manual",
            Intent::Disabled => "disabled",
        }
    }
}

impl std::fmt::Display for Intent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which resolution step found a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Step 1: the persisted configured command.
    Configured,
    /// Step 2: the current `PATH`.
    Path,
    /// Steps 3–6: the fixed fallback directories.
    Fallback,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Configured => "configured",
            Source::Path => "path",
            Source::Fallback => "fallback",
        }
    }
}

/// Where to look, captured once so that tests can inject their own directories.
#[derive(Debug, Clone)]
pub struct Search {
    /// The `PATH` to walk (the caller's, for discovery only; it never reaches the Host).
    pub path_var: Option<OsString>,
    /// Steps 3–6, in order.
    pub fallback_dirs: Vec<PathBuf>,
}

/// The system fallback directories of steps 3 and 4.
pub const SYSTEM_FALLBACK_DIRS: [&str; 2] = ["/opt/homebrew/bin", "/usr/local/bin"];

impl Search {
    pub fn new(path_var: Option<OsString>, home: &Path) -> Search {
        let mut fallback_dirs: Vec<PathBuf> =
            SYSTEM_FALLBACK_DIRS.iter().map(PathBuf::from).collect();
        fallback_dirs.push(home.join(".local/bin"));
        fallback_dirs.push(home.join("bin"));
        Search {
            path_var,
            fallback_dirs,
        }
    }

    /// The absolute `PATH` entries, in order; empty and relative ones are skipped, never
    /// taken to mean the working directory.
    pub fn path_dirs(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.path_var
            .iter()
            .flat_map(std::env::split_paths)
            .filter(|d| d.is_absolute())
    }
}

/// The outcome of resolving one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// A usable command: the normalized absolute path (a symlink's own path, never its
    /// target) and the step that found it.
    Found { path: PathBuf, source: Source },
    /// Nothing usable, and why, with the fix.
    Missing { reason: Unresolved },
}

/// Why a provider resolves to nothing; its words carry the fix. Words:
/// `commands/words/provider.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// Disabled by the user.
    Disabled { id: String },
    /// `manual`, and the configured command cannot be used.
    Configured {
        id: String,
        bin: &'static str,
        why: NotConfigured,
    },
    /// `auto`, and `bin` is nowhere on PATH or in `dirs`.
    NotFound {
        id: String,
        bin: &'static str,
        name: &'static str,
        dirs: Vec<PathBuf>,
    },
}

/// Why a configured command does not count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotConfigured {
    Empty,
    Relative { command: String },
    NotExecutable { command: String, why: NotExecutable },
}

impl Resolution {
    /// The path found, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Resolution::Found { path, .. } => Some(path),
            Resolution::Missing { .. } => None,
        }
    }

    /// The step that found it, if any.
    pub fn source(&self) -> Option<Source> {
        match self {
            Resolution::Found { source, .. } => Some(*source),
            Resolution::Missing { .. } => None,
        }
    }

    /// Why nothing was found, if nothing was.
    pub fn unresolved(&self) -> Option<&Unresolved> {
        match self {
            Resolution::Found { .. } => None,
            Resolution::Missing { reason } => Some(reason),
        }
    }
}

/// Why a path is not a usable executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotExecutable {
    Missing,
    BrokenSymlink,
    SymlinkLoop,
    Directory,
    NotRegularFile,
    NoExecutePermission(u32),
    Unreadable(String),
}

/// Checks that `path`, after following symlinks, is a regular file this user may execute.
pub fn check_executable(path: &Path) -> Result<(), NotExecutable> {
    use std::os::unix::fs::PermissionsExt;
    let target = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            return Err(match e.raw_os_error() {
                Some(nix::libc::ELOOP) => NotExecutable::SymlinkLoop,
                _ if e.kind() == io::ErrorKind::NotFound => {
                    if std::fs::symlink_metadata(path).is_ok() {
                        NotExecutable::BrokenSymlink
                    } else {
                        NotExecutable::Missing
                    }
                }
                _ if e.kind() == io::ErrorKind::NotADirectory => NotExecutable::Missing,
                _ => NotExecutable::Unreadable(e.to_string()),
            })
        }
    };
    if target.is_dir() {
        return Err(NotExecutable::Directory);
    }
    if !target.is_file() {
        return Err(NotExecutable::NotRegularFile);
    }
    if nix::unistd::access(path, nix::unistd::AccessFlags::X_OK).is_err() {
        return Err(NotExecutable::NoExecutePermission(
            target.permissions().mode(),
        ));
    }
    Ok(())
}

/// Lexically normalizes an absolute path: drops `.` and empty components, folds `..`.
///
/// Lexical on purpose: a symlink's own path is what gets persisted (seed 000), so nothing here
/// consults the filesystem.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if out.parent().is_some() {
                    out.pop();
                }
            }
            Component::Normal(s) => out.push(s),
        }
    }
    out
}

/// Finds `binary` on `PATH`, then in the fallback directories (steps 2–6).
pub fn search_binary(binary: &str, search: &Search) -> Option<(PathBuf, Source)> {
    search_binaries(binary, search).next()
}

/// Every executable `binary` on `PATH`, then in the fallback directories (steps 2–6), in that
/// order, each path once (a directory listed twice yields its binary once). Lazy: the walk
/// stops where the caller stops asking, and nothing found is executed.
pub fn search_binaries<'a>(
    binary: &'a str,
    search: &'a Search,
) -> impl Iterator<Item = (PathBuf, Source)> + 'a {
    let path_hits = search.path_dirs().map(|d| (d, Source::Path));
    let fallback_hits = search
        .fallback_dirs
        .iter()
        .cloned()
        .map(|d| (d, Source::Fallback));
    let mut seen: Vec<PathBuf> = vec![];
    path_hits
        .chain(fallback_hits)
        .filter_map(move |(dir, source)| {
            let candidate = normalize(&dir.join(binary));
            // Normalized paths are equal exactly when their bytes are: compared as bytes, not
            // component by component (which parses both paths again for every pair).
            if seen.iter().any(|s| s.as_os_str() == candidate.as_os_str()) {
                return None;
            }
            seen.push(candidate.clone());
            check_executable(&candidate)
                .ok()
                .map(|()| (candidate, source))
        })
}

/// Step 1: a configured command counts only when it is an absolute executable path.
pub fn check_configured(command: &str) -> Result<PathBuf, NotConfigured> {
    let path = Path::new(command);
    if command.trim().is_empty() {
        return Err(NotConfigured::Empty);
    }
    if !path.is_absolute() {
        return Err(NotConfigured::Relative {
            command: command.to_owned(),
        });
    }
    let normalized = normalize(path);
    check_executable(&normalized)
        .map(|()| normalized)
        .map_err(|why| NotConfigured::NotExecutable {
            command: command.to_owned(),
            why,
        })
}

/// Resolves one provider under its intent.
pub fn resolve(
    provider: &Provider,
    intent: Intent,
    configured: Option<&str>,
    search: &Search,
) -> Resolution {
    let id = provider.id.to_string();
    match intent {
        Intent::Disabled => Resolution::Missing {
            reason: Unresolved::Disabled { id },
        },
        Intent::Manual => match check_configured(configured.unwrap_or("")) {
            Ok(path) => found(path, Source::Configured),
            Err(why) => Resolution::Missing {
                reason: Unresolved::Configured {
                    id,
                    bin: provider.binary,
                    why,
                },
            },
        },
        Intent::Auto => {
            if let Some(path) = configured.and_then(|c| check_configured(c).ok()) {
                return found(path, Source::Configured);
            }
            match search_binary(provider.binary, search) {
                Some((path, source)) => found(path, source),
                None => Resolution::Missing {
                    reason: Unresolved::NotFound {
                        id,
                        bin: provider.binary,
                        name: provider.display_name,
                        dirs: search.fallback_dirs.clone(),
                    },
                },
            }
        }
    }
}

fn found(path: PathBuf, source: Source) -> Resolution {
    Resolution::Found { path, source }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn exe(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn provider() -> &'static Provider {
        crate::provider::registry::PROVIDERS
            .iter()
            .next()
            .expect("a provider")
    }

    #[test]
    fn normalize_is_lexical() {
        assert_eq!(normalize(Path::new("/a/./b//c/../d")), Path::new("/a/b/d"));
        assert_eq!(normalize(Path::new("/../a")), Path::new("/a"));
        assert_eq!(normalize(Path::new("/")), Path::new("/"));
    }

    #[test]
    fn each_fallback_step_in_order() {
        let t = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = (3..=6).map(|i| t.path().join(format!("step{i}"))).collect();
        let search = Search {
            path_var: None,
            fallback_dirs: dirs.clone(),
        };
        let bin = provider().binary;
        for d in dirs.iter().rev() {
            exe(&d.join(bin));
            let r = resolve(provider(), Intent::Auto, None, &search);
            assert_eq!(r.path(), Some(d.join(bin).as_path()));
            assert_eq!(r.source(), Some(Source::Fallback));
        }
    }

    #[test]
    fn rejected_candidates_fall_through_to_the_next_step() {
        let t = tempfile::tempdir().unwrap();
        let [a, b, c, d, e] = ["a", "b", "c", "d", "e"].map(|n| t.path().join(n));
        let bin = provider().binary;
        std::fs::create_dir_all(a.join(bin)).unwrap(); // a directory
        std::fs::create_dir_all(&b).unwrap();
        symlink(b.join("gone"), b.join(bin)).unwrap(); // broken link
        std::fs::create_dir_all(&c).unwrap();
        symlink(c.join(bin), c.join(bin)).unwrap(); // loop
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(bin), "").unwrap(); // not executable
        exe(&e.join("real"));
        symlink(e.join("real"), e.join(bin)).unwrap(); // good link
        let search = Search {
            path_var: Some(std::env::join_paths([&a, &b, &c, &d, &e]).unwrap()),
            fallback_dirs: vec![],
        };
        let r = resolve(provider(), Intent::Auto, None, &search);
        assert_eq!(
            r.path(),
            Some(e.join(bin).as_path()),
            "link path kept, not target"
        );
        assert_eq!(r.source(), Some(Source::Path));
        assert_eq!(
            check_executable(&a.join(bin)),
            Err(NotExecutable::Directory)
        );
        assert_eq!(
            check_executable(&b.join(bin)),
            Err(NotExecutable::BrokenSymlink)
        );
        assert_eq!(
            check_executable(&c.join(bin)),
            Err(NotExecutable::SymlinkLoop)
        );
        assert!(matches!(
            check_executable(&d.join(bin)),
            Err(NotExecutable::NoExecutePermission(_))
        ));
    }

    #[test]
    fn manual_never_searches_and_disabled_looks_nothing_up() {
        let t = tempfile::tempdir().unwrap();
        exe(&t.path().join(provider().binary));
        let search = Search {
            path_var: Some(t.path().as_os_str().to_owned()),
            fallback_dirs: vec![],
        };
        let why = |r: &Resolution| match r.unresolved() {
            Some(Unresolved::Configured { why, .. }) => why.to_string(),
            _ => String::new(),
        };
        let m = resolve(provider(), Intent::Manual, Some("/nope/x"), &search);
        assert_eq!(m.path(), None);
        assert!(why(&m).contains("does not exist"));
        let m = resolve(provider(), Intent::Manual, Some("relative/x"), &search);
        assert!(why(&m).contains("not an absolute path"));
        let d = resolve(provider(), Intent::Disabled, None, &search);
        assert_eq!(d.path(), None);
        assert!(matches!(d.unresolved(), Some(Unresolved::Disabled { .. })));
        let a = resolve(provider(), Intent::Auto, Some("/nope/x"), &search);
        assert_eq!(a.source(), Some(Source::Path));
    }
}
