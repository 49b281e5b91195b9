//! The pinned Node (docs/behaviour.md §3): which `node` runs the Host, and proof that it is ≥ 20.
//!
//! Order: `--node-bin`, `OYSTERUN_NODE_BIN` (invalid → error, never a silent fallback), the
//! installed plist's pin while still valid (said aloud when it is not), then resolution with the
//! provider search order: the first `node` there that is new enough, each older or broken one
//! before it said aloud. The version comes from `node --version` (the only thing discovery
//! runs), cached by the binary's identity (path, size, mtime, inode) so an unchanged pin costs
//! no Node start.

use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::provider::resolve::{self, Search};
use crate::sys::process::{self, ChildEnv};

/// The largest version cache oyster reads (a line per binary: its identity and its version).
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
    /// The organization's profile (`node_bin`, docs/fleet.md).
    Managed,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Flag => "--node-bin",
            Origin::Env => "OYSTERUN_NODE_BIN",
            Origin::InstalledPlist => "the installed LaunchAgent",
            Origin::Resolved => "resolution",
            Origin::Managed => "the managed node_bin",
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
    /// Where a stale pin passed over is said.
    pub out: &'a dyn crate::output::Reporter,
    pub flag: Option<&'a Path>,
    pub env: Option<&'a str>,
    pub installed: Option<&'a str>,
    pub search: &'a Search,
    /// Where the version cache lives: read here, never written (planning writes nothing;
    /// the run records a version asked afresh with [`record_version`] once it acts).
    pub cache: Option<&'a Path>,
}

/// Pins the Node the organization's profile forces (`node_bin` in `file`): it is what runs,
/// and one that does not work is a failure of the machine's setup (exit 1), whose fix is the
/// administrator's, not a `--node-bin` (which a forced value refuses).
pub fn pin_managed(path: &Path, file: &Path, cache: Option<&Path>) -> anyhow::Result<NodePin> {
    check(path, cache)
        .map(|pin| pin.from(Origin::Managed))
        .map_err(|candidate| {
            // A `Failed`, as the managed root's is: doctor tells the administrator's fix by it.
            crate::error::Failed::from(NodeProblem::Managed {
                candidate,
                file: file.to_owned(),
            })
            .into()
        })
}

/// Pins Node, printing a note when it passes over the installed plist's stale pin, or (in the
/// search) a `node` that is too old or broken before the first that is new enough.
///
/// Exit codes (docs/behaviour.md "Exit codes"): a `--node-bin` or `OYSTERUN_NODE_BIN` that
/// does not work is the user's input (2); no usable `node` found on the machine is a failure
/// (1), whether none was found or only older ones were.
pub fn pin(req: &PinRequest<'_>) -> anyhow::Result<NodePin> {
    if let Some(flag) = req.flag {
        return check(flag, req.cache)
            .map(|pin| pin.from(Origin::Flag))
            .map_err(|candidate| NodeProblem::Given {
                origin: Origin::Flag,
                candidate,
            })
            .map_err(Into::into);
    }
    if let Some(env) = req.env {
        return check(Path::new(env), req.cache)
            .map(|pin| pin.from(Origin::Env))
            .map_err(|candidate| NodeProblem::Given {
                origin: Origin::Env,
                candidate,
            })
            .map_err(Into::into);
    }
    // The installed pin passed over is not asked again if the search meets it.
    let mut stale: Option<Unusable> = None;
    if let Some(installed) = req.installed {
        match check(Path::new(installed), req.cache) {
            Ok(pin) => return Ok(pin.from(Origin::InstalledPlist)),
            Err(why) => {
                req.out.note(&NodeNote::Stale(why.clone()).to_string());
                stale = Some(why);
            }
        }
    }
    // The first `node` in the search order that is new enough; each one before it is asked
    // only `--version` (through the cache), and said when passed over.
    let mut passed: Vec<Unusable> = vec![];
    for (path, _) in resolve::search_binaries("node", req.search) {
        let checked = match &stale {
            Some(why) if why.path == path => Err(why.clone()),
            _ => check(&path, req.cache),
        };
        match checked {
            Ok(pin) => {
                if !passed.is_empty() {
                    let note = NodeNote::PassedOver {
                        path: pin.path.clone(),
                        version: pin.version.clone(),
                        passed,
                    };
                    req.out.note(&note.to_string());
                }
                return Ok(pin.from(Origin::Resolved));
            }
            Err(why) => passed.push(why),
        }
    }
    let dirs: Vec<String> = req
        .search
        .fallback_dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    if !passed.is_empty() {
        return Err(NodeProblem::NoneNewEnough { passed, dirs }.into());
    }
    Err(NodeProblem::NoneFound { dirs }.into())
}

/// Why no Node is pinned. Words (and hints): `commands/words/host.rs`.
#[derive(Debug, Clone)]
pub enum NodeProblem {
    /// The Node given (`--node-bin`, `OYSTERUN_NODE_BIN`) cannot run the Host: invalid input.
    Given { origin: Origin, candidate: Unusable },
    /// The Node the profile in `file` forces cannot: a failure whose fix is the administrator's.
    Managed { candidate: Unusable, file: PathBuf },
    /// Every `node` found is too old or broken (searched on PATH and in `dirs`).
    NoneNewEnough {
        passed: Vec<Unusable>,
        dirs: Vec<String>,
    },
    /// No `node` at all on PATH or in `dirs`.
    NoneFound { dirs: Vec<String> },
}

impl std::error::Error for NodeProblem {}

impl crate::error::HasKind for NodeProblem {
    fn kind(&self) -> crate::error::Kind {
        match self {
            NodeProblem::Given { .. } => crate::error::Kind::Invalid,
            _ => crate::error::Kind::Failure,
        }
    }
}

/// What pinning says while it looks. Words: `commands/words/host.rs`.
#[derive(Debug, Clone)]
pub enum NodeNote {
    /// The installed LaunchAgent's Node no longer works: resolving again.
    Stale(Unusable),
    /// The Node pinned (`path`, `version`) came after these, too old or broken.
    PassedOver {
        path: PathBuf,
        version: String,
        passed: Vec<Unusable>,
    },
}

/// A candidate that cannot run the Host, and why.
#[derive(Debug, Clone)]
pub struct Unusable {
    pub path: PathBuf,
    pub why: Why,
}

#[derive(Debug, Clone)]
pub enum Why {
    NotAbsolute,
    NotExecutable(resolve::NotExecutable),
    /// `--version` could not be run, or failed.
    Version(String),
    /// `--version` printed something that is not a Node version.
    NotAVersion(String),
    /// A Node older than [`MIN_MAJOR`], with the version it printed.
    TooOld(String),
}

/// A usable Node before its origin is known.
struct Checked {
    path: PathBuf,
    version: String,
}

impl Checked {
    fn from(self, origin: Origin) -> NodePin {
        NodePin {
            path: self.path,
            version: self.version,
            origin,
        }
    }
}

/// Checks one candidate: absolute, executable, `--version` ≥ [`MIN_MAJOR`].
fn check(path: &Path, cache: Option<&Path>) -> Result<Checked, Unusable> {
    let fail = |path: &Path, why| Unusable {
        path: path.to_owned(),
        why,
    };
    if !path.is_absolute() {
        return Err(fail(path, Why::NotAbsolute));
    }
    let path = resolve::normalize(path);
    resolve::check_executable(&path).map_err(|why| fail(&path, Why::NotExecutable(why)))?;
    let version = version_of(&path, cache).map_err(|why| fail(&path, Why::Version(why)))?;
    let Some(major) = parse_major(&version) else {
        return Err(fail(&path, Why::NotAVersion(version)));
    };
    if major < MIN_MAJOR {
        return Err(fail(&path, Why::TooOld(version)));
    }
    Ok(Checked { path, version })
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
    // A path a line cannot hold is only not cached.
    if is_script || path.as_os_str().as_encoded_bytes().contains(&b'\n') {
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

/// The most binaries the version cache remembers: the search may ask a few before it finds
/// one new enough, and each is then asked once, not on every run.
const MAX_CACHE_ENTRIES: usize = 8;

/// The version cached for the binary whose identity is `id`: one `identity\tversion` line per
/// binary.
fn cached_version(text: &str, id: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, version) = line.rsplit_once('\t')?;
        (key == id).then(|| version.to_owned())
    })
}

/// The cache with `path`'s line (any older identity of the same path dropped) last, keeping
/// the newest [`MAX_CACHE_ENTRIES`] lines.
fn with_entry(text: &str, path: &Path, id: &str, version: &str) -> String {
    let own = format!("{}\t", path.display());
    let new = format!("{id}\t{version}");
    let mut lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains('\t') && !l.starts_with(&own))
        .collect();
    lines.push(&new);
    let skip = lines.len().saturating_sub(MAX_CACHE_ENTRIES);
    lines[skip..].join("\n") + "\n"
}

/// The version the stack's cache records for the Node at `path`, only when the cache's key
/// is still that binary's identity (a replaced or upgraded Node is not answered from it); never
/// runs Node (`oyster inventory` stays read-only and bounded).
pub fn recorded_version(path: &Path, cache: &Path) -> Option<String> {
    let id = identity(path)?;
    let bytes = crate::sys::fs::read_regular(cache, MAX_CACHE_BYTES)
        .ok()
        .flatten()?;
    cached_version(&String::from_utf8_lossy(&bytes), &id)
}

fn version_of(path: &Path, cache: Option<&Path>) -> Result<String, String> {
    let id = identity(path);
    // Through the one regular-file reader: a FIFO or device planted there must never block
    // the command (it is then only not a cache).
    let cached = match (cache, &id) {
        (Some(cache), Some(_)) => read_cache(cache),
        _ => String::new(),
    };
    if let Some(version) = id.as_deref().and_then(|id| cached_version(&cached, id)) {
        return Ok(version);
    }
    let out = process::Program::new(path)
        .arg("--version")
        .env(ChildEnv::Exactly(&[]))
        .timeout(Duration::from_secs(15))
        .run()
        .map_err(|e| e.to_string())?;
    if out.code != 0 {
        return Err(format!(
            "`--version` exited with {}: {}",
            out.code,
            out.stderr.trim()
        ));
    }
    Ok(out.stdout.lines().next().unwrap_or("").trim().to_owned())
}

fn read_cache(cache: &Path) -> String {
    crate::sys::fs::read_regular(cache, MAX_CACHE_BYTES)
        .ok()
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// Records the pinned Node's version in the stack's cache when it is not there yet (a run that
/// acts, under the stack's lock, after every refusal). Best effort: a cache that cannot be
/// written only costs a Node start next time.
pub fn record_version(cache: &Path, lock: &crate::sys::fs::Lock, pin: &NodePin) {
    let Some(id) = identity(&pin.path) else {
        return;
    };
    let cached = read_cache(cache);
    let version = &pin.version;
    if cached_version(&cached, &id).as_deref() == Some(version.as_str())
        || parse_major(version).is_none()
        || version.contains(|c: char| c.is_control())
    {
        return;
    }
    if let Some(dir) = cache.parent() {
        let _ = crate::sys::fs::create_dir_all(dir, 0o700);
    }
    let _ = crate::sys::fs::write_atomic(
        lock,
        cache,
        with_entry(&cached, &pin.path, &id, version).as_bytes(),
        Some(0o600),
    );
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
    fn the_cache_keeps_a_line_per_binary_and_replaces_an_upgraded_one() {
        let a = Path::new("/a/node");
        let b = Path::new("/b/node");
        let text = with_entry("", a, "/a/node\t1\t2", "v18.19.0");
        let text = with_entry(&text, b, "/b/node\t3\t4", "v22.1.0");
        assert_eq!(
            cached_version(&text, "/a/node\t1\t2").as_deref(),
            Some("v18.19.0")
        );
        assert_eq!(
            cached_version(&text, "/b/node\t3\t4").as_deref(),
            Some("v22.1.0")
        );
        // /a/node upgraded in place: a new identity replaces its line.
        let text = with_entry(&text, a, "/a/node\t9\t9", "v24.0.0");
        assert_eq!(text, "/b/node\t3\t4\tv22.1.0\n/a/node\t9\t9\tv24.0.0\n");
        assert_eq!(cached_version(&text, "/a/node\t1\t2"), None);
        // The one-line cache of earlier versions reads as it did; junk lines are dropped.
        assert_eq!(
            cached_version("/x\t1\tv20.1.0\n", "/x\t1").as_deref(),
            Some("v20.1.0")
        );
        let mut text = "junk without a tab\n".to_owned();
        for i in 0..(MAX_CACHE_ENTRIES + 3) {
            let p = PathBuf::from(format!("/n{i}/node"));
            text = with_entry(&text, &p, &format!("/n{i}/node\t{i}"), "v20.0.0");
        }
        assert_eq!(text.lines().count(), MAX_CACHE_ENTRIES, "{text}");
        assert!(
            !text.contains("junk") && !text.contains("/n0/node"),
            "{text}"
        );
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
