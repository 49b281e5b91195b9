//! Unit tests of `signing`.

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
