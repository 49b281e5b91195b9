//! oyster's own code signature: the Developer ID team that signed this binary, if any. The
//! managed login-items profile constrains its rule to that team, and the inventory reports it.
//!
//! Read with `/usr/bin/codesign -dvv <this binary>` (no shell, bounded). Its report goes to
//! stderr as `Key=Value` lines (docs/fleet.md cites a capture): a Developer ID signature has
//! `Authority=Developer ID Application: NAME (TEAMID)` and `TeamIdentifier=TEAMID`; an ad-hoc
//! one (what the Rust toolchain gives every Apple-silicon build, and so a Homebrew-built
//! oyster) has `Signature=adhoc` and `TeamIdentifier=not set`; an unsigned binary makes
//! codesign fail with "code object is not signed at all".

use std::path::Path;

/// What oyster knows about its own signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The Developer ID team, only when the binary is Developer-ID signed.
    pub team_id: Option<String>,
    /// Why there is no team (or which authority signed), in words for the output.
    pub about: String,
}

/// The signature of `exe` (oyster's own binary).
pub fn of(exe: &Path) -> Signature {
    read(exe)
}

#[cfg(target_os = "macos")]
fn read(exe: &Path) -> Signature {
    match crate::sys::process::Program::new(Path::new("/usr/bin/codesign"))
        .arg("-dvv")
        .arg(exe)
        .timeout(std::time::Duration::from_secs(10))
        .run()
    {
        Ok(f) if f.code == 0 => parse(&f.stderr),
        Ok(f) if f.stderr.contains("not signed at all") => none(About::Unsigned),
        Ok(f) => none(About::Unreadable {
            code: f.code,
            stderr: f.stderr.trim().to_owned(),
        }),
        Err(e) => none(About::NotRun { why: e.to_string() }),
    }
}

#[cfg(not(target_os = "macos"))]
fn read(_exe: &Path) -> Signature {
    none(About::NotMacos)
}

fn none(about: About) -> Signature {
    Signature {
        team_id: None,
        about: about.to_string(),
    }
}

/// What the signature is, or why there is no team. Words: `commands/words/fleet.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum About {
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))]
    Unsigned,
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))]
    Unreadable {
        code: i32,
        stderr: String,
    },
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))]
    NotRun {
        why: String,
    },
    #[cfg_attr(target_os = "macos", allow(dead_code))]
    NotMacos,
    AdHoc,
    NoAuthority,
    /// Signed by `leaf`; `developer_id` when it is a Developer ID Application certificate.
    SignedBy {
        leaf: String,
        developer_id: bool,
    },
}

/// The team of a `codesign -dvv` report, only when the leaf authority is a Developer ID
/// Application certificate and the team is a 10-character Team ID.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))] // read on macOS; unit-tested everywhere
pub fn parse(report: &str) -> Signature {
    let field = |key: &str| {
        report
            .lines()
            .find_map(|l| l.strip_prefix(key).map(str::trim))
    };
    if field("Signature=") == Some("adhoc") {
        return none(About::AdHoc);
    }
    let leaf = field("Authority=").unwrap_or_default();
    let team = field("TeamIdentifier=").unwrap_or_default();
    let team_ok = team.len() == 10 && team.bytes().all(|b| b.is_ascii_alphanumeric());
    if leaf.starts_with("Developer ID Application:") && team_ok {
        Signature {
            team_id: Some(team.to_owned()),
            about: About::SignedBy {
                leaf: leaf.to_owned(),
                developer_id: true,
            }
            .to_string(),
        }
    } else if leaf.is_empty() {
        none(About::NoAuthority)
    } else {
        none(About::SignedBy {
            leaf: leaf.to_owned(),
            developer_id: false,
        })
    }
}

#[cfg(test)]
#[path = "signature_tests.rs"]
mod tests;
