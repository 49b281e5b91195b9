//! How a program is signed, as far as privacy protection (TCC) cares (issue 39 item 5): a
//! grant is keyed to the program's code identity. An ad-hoc signed build (Homebrew's Node and
//! oyster: `Signature=adhoc`) is pinned to its cdhash, so every upgrade is a new program and
//! the grant is lost (docs/launchd.md, "Privacy protection"); a Developer ID signed one (the
//! nodejs.org build) is matched by its signer, so the grant holds across upgrades that keep its
//! path, and a path that names the version (nvm, fnm, volta, a Homebrew Cellar) does not.
//!
//! Read with `/usr/bin/codesign -dvv <path>` (no shell, bounded), whose report goes to stderr
//! as `Key=Value` lines (docs/launchd.md, "oyster's own signature").
//!
//! # Platform
//! macOS only; elsewhere there are no code signatures and the signing is unknown.

use std::path::{Component, Path};

/// A program's signing, as its grant's lifetime depends on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signing {
    /// `Signature=adhoc`: pinned to this build.
    AdHoc,
    /// A Developer ID Application certificate of this team.
    DeveloperId(String),
    /// Signed by someone else (the leaf authority, in words), or not signed.
    Other(String),
    /// Not known: why.
    Unknown(String),
}

/// The signing of the program at `path`.
pub fn of(path: &Path) -> Signing {
    read(path)
}

#[cfg(target_os = "macos")]
fn read(path: &Path) -> Signing {
    match crate::sys::process::Program::new(Path::new("/usr/bin/codesign"))
        .arg("-dvv")
        .arg(path)
        .timeout(std::time::Duration::from_secs(10))
        .run()
    {
        Ok(f) if f.code == 0 => parse(&f.stderr),
        Ok(f) if f.stderr.contains("not signed at all") => {
            Signing::Other("nobody (unsigned)".into())
        }
        Ok(f) => Signing::Unknown(format!("codesign exited {}", f.code)),
        Err(e) => Signing::Unknown(format!("codesign could not be run: {e}")),
    }
}

#[cfg(not(target_os = "macos"))]
fn read(_path: &Path) -> Signing {
    Signing::Unknown("there are no code signatures to read off macOS".into())
}

/// A `codesign -dvv` report's signing.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))] // read on macOS; unit-tested everywhere
pub fn parse(report: &str) -> Signing {
    let field = |key: &str| {
        report
            .lines()
            .find_map(|l| l.strip_prefix(key).map(str::trim))
    };
    if field("Signature=") == Some("adhoc") {
        return Signing::AdHoc;
    }
    let leaf = field("Authority=").unwrap_or_default();
    let team = field("TeamIdentifier=").unwrap_or_default();
    if leaf.starts_with("Developer ID Application:") && !team.is_empty() && team != "not set" {
        Signing::DeveloperId(team.to_owned())
    } else if leaf.is_empty() {
        Signing::Unknown("the signature names no authority".into())
    } else {
        Signing::Other(leaf.to_owned())
    }
}

/// Whether `path` names a version: a version manager's or Homebrew's layout (`.nvm`, `fnm`,
/// `.volta`, `Cellar`, `versions`), or a component such as `v22.11.0` or `22.11.0`.
pub fn versioned_path(path: &Path) -> bool {
    path.components().any(|c| {
        let Component::Normal(part) = c else {
            return false;
        };
        let part = part.to_string_lossy();
        let digits = part.strip_prefix('v').unwrap_or(&part);
        matches!(
            part.as_ref(),
            ".nvm" | "fnm" | ".fnm" | ".volta" | "Cellar" | "versions" | "node-versions"
        ) || (digits.starts_with(|c: char| c.is_ascii_digit()) && digits.contains('.'))
    })
}

/// Whether a Full Disk Access grant to `name` at `path`, signed as `signing`, outlives an
/// upgrade of it. Words: `commands/words/host.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantLifetime {
    pub name: String,
    pub signing: Signing,
    /// The path names a version ([`versioned_path`]).
    pub versioned: bool,
}

/// Whether a Full Disk Access grant to `name` at `path`, signed as `signing`, outlives an
/// upgrade of it.
pub fn grant_lifetime(name: &str, path: &Path, signing: &Signing) -> GrantLifetime {
    GrantLifetime {
        name: name.to_owned(),
        signing: signing.clone(),
        versioned: versioned_path(path),
    }
}

#[cfg(test)]
#[path = "signing_tests.rs"]
mod tests;
