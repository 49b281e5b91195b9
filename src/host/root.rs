//! The Oysterun install root: the directory holding `host-service/server.mjs`.
//!
//! Order: `--root`, `OYSTERUN_ROOT`, the installed plist's `OYSTERUN_REPO_ROOT` (passed over,
//! aloud, when it no longer holds the Host), the root remembered in the stack's config
//! (`oyster_root`; for a stack with none, the one every other stack remembers), the `oysterun`
//! npm package in the pinned Node's global modules, then `<bin dir>/../share/oysterun` (used only if a packager puts Oysterun
//! there; neither the formula nor the .pkg ships it).

use std::path::{Path, PathBuf};

use crate::error::{Failed, Invalid};

/// The Host entry point, relative to the root.
pub const SERVER: &str = "host-service/server.mjs";

/// Where oyster looks for the root, beyond the flag and the variable.
pub struct RootSearch<'a> {
    /// Where each candidate passed over is said.
    pub out: &'a dyn crate::output::Reporter,
    pub flag: Option<&'a Path>,
    pub env: Option<&'a Path>,
    /// The installed plist's `OYSTERUN_REPO_ROOT`.
    pub installed: Option<&'a str>,
    /// Roots remembered in stacks' configs (`oyster_root`), each with where it was read
    /// (this stack's first, then another stack's when all others agree).
    pub remembered: Vec<(PathBuf, String)>,
    /// The pinned Node: Oysterun is installed with `npm install -g oysterun`, which puts it in
    /// `<node prefix>/lib/node_modules/oysterun` (the prefix is the directory above `bin/`).
    pub node_bin: &'a Path,
    /// `npm_config_prefix`, when the user set one.
    pub npm_prefix: Option<&'a Path>,
}

/// A found root and why it was chosen.
#[derive(Debug, Clone)]
pub struct FoundRoot {
    pub path: PathBuf,
    pub origin: String,
}

/// The root the organization's profile forces (`root` in `file`): one without the Host is a
/// failure of the machine's setup (exit 1), whose fix is the administrator's.
pub fn find_managed(dir: &Path, file: &Path) -> Result<FoundRoot, crate::error::Failed> {
    let origin = "the managed root";
    check(dir, origin)
        .map(|path| FoundRoot {
            path,
            origin: origin.into(),
        })
        .map_err(|e| {
            RootProblem::Managed {
                problem: Box::new(e),
                file: file.to_owned(),
            }
            .into()
        })
}

/// Finds the root (docs/behaviour.md "Stacks, paths"): `--root`, `OYSTERUN_ROOT`, the installed
/// plist's root (passed over aloud when it no longer holds the Host), the `oysterun` npm
/// package in the pinned Node's global modules (and under `npm_config_prefix`), then the
/// packaged location next to the binary. Errors list every place looked.
///
/// Exit codes (docs/behaviour.md "Exit codes"): a `--root` or `OYSTERUN_ROOT` without the Host
/// is the user's input ([`Invalid`], 2); no root found on the machine is a failure ([`Failed`],
/// 1), as no `node` found is.
pub fn find(s: &RootSearch<'_>) -> anyhow::Result<FoundRoot> {
    if let Some(dir) = s.flag {
        return Ok(check(dir, "--root")
            .map(|path| FoundRoot {
                path,
                origin: "--root".into(),
            })
            .map_err(Invalid::from)?);
    }
    if let Some(dir) = s.env {
        return Ok(check(dir, "OYSTERUN_ROOT")
            .map(|path| FoundRoot {
                path,
                origin: "OYSTERUN_ROOT".into(),
            })
            .map_err(Invalid::from)?);
    }
    let mut looked = vec![];
    if let Some(dir) = s.installed {
        let origin = "the installed LaunchAgent's OYSTERUN_REPO_ROOT";
        match check(Path::new(dir), origin) {
            Ok(path) => {
                return Ok(FoundRoot {
                    path,
                    origin: origin.into(),
                })
            }
            Err(e) => {
                s.out.note(&RootNote::LookingFurther(e).to_string());
                looked.push(format!(
                    "{} ({origin})",
                    crate::output::one_line(Path::new(dir))
                ));
            }
        }
    }
    for (dir, origin) in &s.remembered {
        match check(dir, origin) {
            Ok(path) => {
                return Ok(FoundRoot {
                    path,
                    origin: origin.clone(),
                })
            }
            Err(e) => {
                s.out.note(&RootNote::LookingFurther(e).to_string());
                looked.push(format!("{} ({origin})", crate::output::one_line(dir)));
            }
        }
    }
    let node_prefix = s.node_bin.parent().and_then(Path::parent);
    let candidates = [
        (node_prefix, "the pinned Node's global npm modules"),
        (s.npm_prefix, "npm_config_prefix's global modules"),
    ];
    for (prefix, origin) in candidates {
        let Some(prefix) = prefix else { continue };
        let dir = prefix.join("lib/node_modules/oysterun");
        if dir.join(SERVER).is_file() {
            return Ok(FoundRoot {
                path: crate::provider::resolve::normalize(&dir),
                origin: format!("{origin} (npm install -g oysterun)"),
            });
        }
        looked.push(format!("{} ({origin})", crate::output::one_line(&dir)));
    }
    if let Some(dir) = packaged_root() {
        if dir.join(SERVER).is_file() {
            return Ok(FoundRoot {
                path: crate::provider::resolve::normalize(&dir),
                origin: "the packaged location next to oyster".into(),
            });
        }
        looked.push(format!(
            "{} (the packaged location)",
            crate::output::one_line(&dir)
        ));
    }
    Err(Failed::from(RootProblem::NotFound { looked }).into())
}

/// Why a root cannot be used, or none was found. Words (and hints): `commands/words/host.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootProblem {
    /// The root given by `origin` holds the control character `c`.
    Controls {
        origin: String,
        dir: PathBuf,
        c: char,
    },
    /// A relative root, and no current directory to make it absolute.
    NotAbsolute { dir: PathBuf, cause: String },
    /// The root from `origin` has no [`SERVER`].
    NoServer { origin: String, root: PathBuf },
    /// The root the profile in `file` forces cannot be used.
    Managed {
        problem: Box<RootProblem>,
        file: PathBuf,
    },
    /// No root anywhere oyster looked (`looked`: each place, with where it came from).
    NotFound { looked: Vec<String> },
}

impl std::error::Error for RootProblem {}

/// What the search says while it looks. Words: `commands/words/host.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootNote {
    /// A candidate passed over.
    LookingFurther(RootProblem),
}

/// Refuses a root given with a control character (it cannot go into a plist, and would reach
/// the terminal raw), naming where it came from (docs/behaviour.md §4: refused where it enters).
pub fn refuse_controls(dir: &Path, origin: &str) -> Result<(), Invalid> {
    controls(dir, origin).map_err(Invalid::from)
}

fn controls(dir: &Path, origin: &str) -> Result<(), RootProblem> {
    let text = dir.to_string_lossy();
    match text.chars().find(|c| c.is_control()) {
        Some(c) => Err(RootProblem::Controls {
            origin: origin.to_owned(),
            dir: dir.to_owned(),
            c,
        }),
        None => Ok(()),
    }
}

/// `<dir of this executable>/../share/oysterun`.
fn packaged_root() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join("share/oysterun"))
}

fn check(dir: &Path, origin: &str) -> Result<PathBuf, RootProblem> {
    controls(dir, origin)?;
    let abs = if dir.is_absolute() {
        dir.to_owned()
    } else {
        std::env::current_dir()
            .map_err(|e| RootProblem::NotAbsolute {
                dir: dir.to_owned(),
                cause: e.to_string(),
            })?
            .join(dir)
    };
    let root = crate::provider::resolve::normalize(&abs);
    if root.join(SERVER).is_file() {
        Ok(root)
    } else {
        Err(RootProblem::NoServer {
            origin: origin.to_owned(),
            root,
        })
    }
}

/// The most of a `package.json` that is read for a version.
const PACKAGE_JSON_CAP: u64 = 1 << 20;

/// The installed Oysterun's version where its own CLI finds it (1.5.3's `bin/oysterun.mjs`):
/// `version` in `<root>/package.json`, else in `<root>/host-service/package.json` (a checkout's
/// root `package.json` has none), through the one bounded reader.
pub fn oysterun_version(root: &Path) -> Option<String> {
    ["package.json", "host-service/package.json"]
        .iter()
        .find_map(|file| {
            let bytes = crate::sys::fs::read_regular(&root.join(file), PACKAGE_JSON_CAP)
                .ok()
                .flatten()?;
            let doc: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
            doc.get("version")?
                .as_str()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        })
}
