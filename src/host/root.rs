//! The Oysterun install root: the directory holding `host-service/server.mjs`.
//!
//! Order: `--root`, `OYSTERUN_ROOT`, the installed plist's `OYSTERUN_REPO_ROOT` (passed over,
//! aloud, when it no longer holds the Host), then the packaged location next to the binary
//! (`<bin dir>/../share/oysterun`, the Homebrew and .pkg layout).

use std::path::{Path, PathBuf};

use crate::error::Invalid;

/// The Host entry point, relative to the root.
pub const SERVER: &str = "host-service/server.mjs";

/// Finds the root, erroring with every place tried when none holds the Host.
pub fn find(
    flag: Option<&Path>,
    env: Option<&Path>,
    installed: Option<&str>,
) -> Result<PathBuf, Invalid> {
    if let Some(dir) = flag {
        return check(dir, "--root");
    }
    if let Some(dir) = env {
        return check(dir, "OYSTERUN_ROOT");
    }
    if let Some(dir) = installed {
        match check(
            Path::new(dir),
            "the installed LaunchAgent's OYSTERUN_REPO_ROOT",
        ) {
            Ok(root) => return Ok(root),
            Err(e) => crate::tell!("oyster: note: {e}; looking for the packaged root"),
        }
    }
    let packaged = packaged_root();
    match &packaged {
        Some(dir) => check(dir, "the packaged location").map_err(|e| {
            Invalid::new(format!(
                "{e}. Point oyster at your Oysterun install with --root DIR or OYSTERUN_ROOT"
            ))
        }),
        None => Err(Invalid::new(
            "could not find the Oysterun install root; pass --root DIR or set OYSTERUN_ROOT",
        )),
    }
}

/// `<dir of this executable>/../share/oysterun`.
fn packaged_root() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join("share/oysterun"))
}

fn check(dir: &Path, origin: &str) -> Result<PathBuf, Invalid> {
    let abs = if dir.is_absolute() {
        dir.to_owned()
    } else {
        std::env::current_dir()
            .map_err(|e| Invalid::new(format!("cannot make {} absolute: {e}", dir.display())))?
            .join(dir)
    };
    let root = crate::provider::resolve::normalize(&abs);
    if root.join(SERVER).is_file() {
        Ok(root)
    } else {
        Err(Invalid::new(format!(
            "the Oysterun root from {origin} ({}) has no {SERVER}",
            root.display()
        )))
    }
}
