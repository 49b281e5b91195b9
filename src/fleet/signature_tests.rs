//! Unit tests of `signature`.

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
