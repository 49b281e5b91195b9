//! The pinned Node (docs/behaviour.md §3): which `node` runs the Host, and proof that it is ≥ 20.
//!
//! Order: `--node-bin`, `OYSTERUN_NODE_BIN` (invalid → error, never a silent fallback), the
//! installed plist's pin while still valid (said aloud when it is not), then resolution with the
//! provider search order. The version comes from `node --version`, cached by the binary's
//! identity (path, size, mtime, inode) so an unchanged pin costs no Node start.

use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::Invalid;
use crate::provider::resolve::{self, Search};
use crate::sys::process::{self, ChildEnv};

/// The largest version cache oyster reads (one line: the binary's identity and its version).
const MAX_CACHE_BYTES: u64 = 64 << 10;

/// The oldest Node major the Host supports.
pub const MIN_MAJOR: u32 = 20;

/// Where the pin came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Flag,
    Env,
    InstalledPlist,
    Resolved,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Flag => "--node-bin",
            Origin::Env => "OYSTERUN_NODE_BIN",
            Origin::InstalledPlist => "the installed LaunchAgent",
            Origin::Resolved => "resolution",
        })
    }
}

/// A Node binary proven usable.
#[derive(Debug, Clone)]
pub struct NodePin {
    pub path: PathBuf,
    pub version: String,
    pub origin: Origin,
}

/// The inputs to pinning, gathered by the caller.
pub struct PinRequest<'a> {
    pub flag: Option<&'a Path>,
    pub env: Option<&'a str>,
    pub installed: Option<&'a str>,
    pub search: &'a Search,
    /// Where the version cache lives, and the lock that guards writing it; `None` writes
    /// nothing (planning, dry runs).
    pub cache: Option<(&'a Path, &'a crate::sys::fs::Lock)>,
}

/// Pins Node, printing a note when it passes over the installed plist's stale pin.
pub fn pin(req: &PinRequest<'_>) -> anyhow::Result<NodePin> {
    if let Some(flag) = req.flag {
        return check(flag, Origin::Flag, req.cache).map_err(|e| Invalid::new(e).into());
    }
    if let Some(env) = req.env {
        return check(Path::new(env), Origin::Env, req.cache).map_err(|e| Invalid::new(e).into());
    }
    if let Some(installed) = req.installed {
        match check(Path::new(installed), Origin::InstalledPlist, req.cache) {
            Ok(pin) => return Ok(pin),
            Err(why) => crate::tell!("oyster: note: {why}; resolving node again"),
        }
    }
    let Some((path, _)) = resolve::search_binary("node", req.search) else {
        let dirs: Vec<String> = req
            .search
            .fallback_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        return Err(anyhow::anyhow!(
            "no `node` was found on PATH or in {}; install Node {MIN_MAJOR} or newer, or pass \
             --node-bin /full/path/to/node",
            dirs.join(", ")
        ));
    };
    check(&path, Origin::Resolved, req.cache).map_err(anyhow::Error::msg)
}

/// Checks one candidate: absolute, executable, `--version` ≥ [`MIN_MAJOR`].
fn check(
    path: &Path,
    origin: Origin,
    cache: Option<(&Path, &crate::sys::fs::Lock)>,
) -> Result<NodePin, String> {
    if !path.is_absolute() {
        return Err(format!(
            "node from {origin} ({}) is not an absolute path; give the full path to node",
            path.display()
        ));
    }
    let path = resolve::normalize(path);
    resolve::check_executable(&path)
        .map_err(|why| format!("node from {origin} ({}) {why}", path.display()))?;
    let version = version_of(&path, cache)
        .map_err(|why| format!("node from {origin} ({}): {why}", path.display()))?;
    let major = parse_major(&version).ok_or_else(|| {
        format!(
            "node from {origin} ({}) printed {version:?} for --version, which is not a Node version",
            path.display()
        )
    })?;
    if major < MIN_MAJOR {
        return Err(format!(
            "node from {origin} ({}) is {version}; the Host needs Node {MIN_MAJOR} or newer. \
             Install a newer Node or pass --node-bin",
            path.display()
        ));
    }
    Ok(NodePin {
        path,
        version,
        origin,
    })
}

/// `v20.1.0` → 20.
pub fn parse_major(version: &str) -> Option<u32> {
    let rest = version.trim().strip_prefix('v')?;
    let mut parts = rest.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor_ok = parts.next().is_some_and(|m| m.parse::<u32>().is_ok());
    minor_ok.then_some(major)
}

/// The cache key: what changes when the binary at `path` is replaced or upgraded. `None` for
/// a script (a version-manager shim such as asdf's or nodenv's `#!` wrapper): the script never
/// changes when the Node it runs does, so its version is asked every time.
fn identity(path: &Path) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    // Through the one reader: a FIFO planted as `node` must not block the command.
    let is_script = crate::sys::fs::read_head(path, 2).is_some_and(|head| head == b"#!");
    if is_script {
        return None;
    }
    Some(format!(
        "{}\t{}\t{}.{}\t{}\t{}",
        path.display(),
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ino(),
        m.dev()
    ))
}

fn version_of(
    path: &Path,
    cache: Option<(&Path, &crate::sys::fs::Lock)>,
) -> Result<String, String> {
    let id = identity(path);
    if let (Some((cache, _)), Some(id)) = (cache, &id) {
        // Through the one regular-file reader: a FIFO or device planted there must never
        // block the command (it is then only not a cache).
        let cached = crate::sys::fs::read_regular(cache, MAX_CACHE_BYTES)
            .ok()
            .flatten();
        if let Some(text) = cached.map(|b| String::from_utf8_lossy(&b).into_owned()) {
            if let Some((key, version)) = text.trim_end().rsplit_once('\t') {
                if key == id {
                    return Ok(version.to_owned());
                }
            }
        }
    }
    let out = process::run(
        path,
        &["--version"],
        ChildEnv::Exactly(&[]),
        Duration::from_secs(15),
    )
    .map_err(|e| e.to_string())?;
    if out.code != 0 {
        return Err(format!(
            "`--version` exited with {}: {}",
            out.code,
            out.stderr.trim()
        ));
    }
    let version = out.stdout.lines().next().unwrap_or("").trim().to_owned();
    if let (Some((cache, lock)), Some(id)) = (cache, id) {
        if parse_major(&version).is_some() {
            // Best effort: a cache that cannot be written only costs a Node start next time.
            if let Some(dir) = cache.parent() {
                let _ = crate::sys::fs::create_dir_all(dir, 0o700);
            }
            let _ = crate::sys::fs::write_atomic(
                lock,
                cache,
                format!("{id}\t{version}\n").as_bytes(),
                Some(0o600),
            );
        }
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_is_cached_by_identity_but_a_script_never() {
        let exe = std::env::current_exe().unwrap();
        assert!(identity(&exe).is_some(), "a binary has a cache key");
        let t = tempfile::tempdir().unwrap();
        let shim = t.path().join("node");
        std::fs::write(&shim, "#!/bin/sh\nexec real-node \"$@\"\n").unwrap();
        assert!(identity(&shim).is_none(), "a script is never cached");
    }

    #[test]
    fn versions() {
        assert_eq!(parse_major("v20.20.2\n"), Some(20));
        assert_eq!(parse_major("v18.0.0"), Some(18));
        assert_eq!(parse_major("20.1.0"), None);
        assert_eq!(parse_major("vx.1"), None);
        assert_eq!(parse_major("v22"), None);
    }
}
