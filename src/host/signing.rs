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
mod tests {
    use super::*;

    /// `codesign -dvv` as it reports Homebrew's Node (ad-hoc, no team) and a nodejs.org build
    /// (Developer ID, the Node.js Foundation's team), in the `Key=Value` shape of
    /// docs/launchd.md's capture.
    #[test]
    fn ad_hoc_and_developer_id_signings_are_told_apart() {
        let brew = "Executable=/opt/homebrew/Cellar/node/22.11.0/bin/node\nIdentifier=node\nFormat=Mach-O thin (arm64)\nCodeDirectory v=20400 size=1 flags=0x20002(adhoc,linker-signed) hashes=1+0 location=embedded\nSignature=adhoc\nInfo.plist=not bound\nTeamIdentifier=not set\n";
        assert_eq!(parse(brew), Signing::AdHoc);
        let official = "Executable=/usr/local/bin/node\nIdentifier=node\nFormat=Mach-O thin (arm64)\nCodeDirectory v=20500 size=1 flags=0x10000(runtime) hashes=1+7 location=embedded\nSignature size=8985\nAuthority=Developer ID Application: Node.js Foundation (HX7739G8FX)\nAuthority=Developer ID Certification Authority\nAuthority=Apple Root CA\nTeamIdentifier=HX7739G8FX\n";
        assert_eq!(parse(official), Signing::DeveloperId("HX7739G8FX".into()));
        let apple = "Authority=Software Signing\nAuthority=Apple Root CA\nTeamIdentifier=not set\n";
        assert_eq!(parse(apple), Signing::Other("Software Signing".into()));
    }

    #[test]
    fn a_grant_outlives_an_upgrade_only_for_a_developer_id_build_at_a_stable_path() {
        let id = Signing::DeveloperId("HX7739G8FX".into());
        let stable = grant_lifetime("Node", Path::new("/usr/local/bin/node"), &id).to_string();
        assert!(
            stable.starts_with("a grant holds across Node upgrades"),
            "{stable}"
        );
        let nvm = Path::new("/Users/u/.nvm/versions/node/v22.11.0/bin/node");
        assert!(versioned_path(nvm));
        assert!(grant_lifetime("Node", nvm, &id)
            .to_string()
            .contains("its path changes with the version"));
        let cellar = Path::new("/opt/homebrew/Cellar/node/22.11.0/bin/node");
        let adhoc = grant_lifetime("Node", cellar, &Signing::AdHoc).to_string();
        assert!(adhoc.starts_with("add it again after every Node upgrade: it is ad-hoc signed"));
        assert!(!versioned_path(Path::new("/usr/local/bin/node")));
        assert!(!versioned_path(Path::new("/opt/homebrew/bin/oyster")));
        let unknown =
            grant_lifetime("oyster", Path::new("/x"), &Signing::Unknown("why".into())).to_string();
        assert!(unknown.contains("if it is ad-hoc signed"), "{unknown}");
    }
}
