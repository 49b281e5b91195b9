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
mod tests {
    use super::*;

    #[test]
    fn a_developer_id_signature_gives_its_team() {
        let report = "Executable=/usr/local/bin/oyster\nIdentifier=oyster\n\
            Format=Mach-O universal (x86_64 arm64)\nCodeDirectory v=20500 size=9 flags=0x10000(runtime) hashes=1+2 location=embedded\n\
            Signature size=8986\nAuthority=Developer ID Application: Example Inc (ABCDE12345)\n\
            Authority=Developer ID Certification Authority\nAuthority=Apple Root CA\n\
            Timestamp=2 Dec 2026 at 10:00:00\nInfo.plist=not bound\nTeamIdentifier=ABCDE12345\n";
        let s = parse(report);
        assert_eq!(s.team_id.as_deref(), Some("ABCDE12345"));
    }

    #[test]
    fn ad_hoc_apple_and_odd_teams_give_none() {
        let adhoc = "Executable=/opt/homebrew/bin/oyster\nIdentifier=oyster-5cb0\n\
            Format=Mach-O thin (arm64)\nSignature=adhoc\nInfo.plist=not bound\nTeamIdentifier=not set\n";
        assert_eq!(parse(adhoc).team_id, None);
        assert!(parse(adhoc).about.contains("ad-hoc"));
        // The craftware.xyz capture (docs/fleet.md): Apple's own software has no team.
        let apple = "Signature size=4105\nAuthority=Software Signing\n\
            Authority=Apple Code Signing Certification Authority\nAuthority=Apple Root CA\n\
            Info.plist entries=24\nTeamIdentifier=not set\n";
        assert_eq!(parse(apple).team_id, None);
        let development =
            "Authority=Apple Development: me@example.com (ZZZZZZZZZZ)\nTeamIdentifier=ABCDE12345\n";
        assert_eq!(parse(development).team_id, None);
        let bad = "Authority=Developer ID Application: X (Y)\nTeamIdentifier=AB CD\n";
        assert_eq!(parse(bad).team_id, None);
    }
}
