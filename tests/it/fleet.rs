//! Fleets of Macs (issue 32): the managed login-items profile (`oyster mdm profile`) read
//! back by an independent reader, and the one inventory document per Mac (`oyster inventory`).

use std::process::Command;

use crate::common::{plistlib, TestContext};

/// Python's own UUIDv5 of `name` in the DNS namespace, upper-case (an independent derivation).
fn python_uuid5(name: &str) -> String {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, uuid; print(str(uuid.uuid5(uuid.NAMESPACE_DNS, sys.argv[1])).upper())",
            name,
        ])
        .output()
        .expect("python3");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn mdm_profile_is_a_device_servicemanagement_profile_matching_every_stack_label() {
    let t = TestContext::new();
    let r = t.run(["mdm", "profile"]).ok();
    let doc = plistlib(r.0.stdout.as_slice());
    assert_eq!(doc["PayloadType"], "Configuration");
    assert_eq!(doc["PayloadScope"], "System", "device scope");
    assert_eq!(doc["PayloadVersion"], 1);
    let id = doc["PayloadIdentifier"].as_str().unwrap();
    assert_eq!(doc["PayloadUUID"], python_uuid5(id).as_str());
    assert!(doc.get("PayloadOrganization").is_none(), "{doc}");
    let content = doc["PayloadContent"].as_array().unwrap();
    assert_eq!(content.len(), 1, "{doc}");
    let payload = &content[0];
    assert_eq!(payload["PayloadType"], "com.apple.servicemanagement");
    let pid = payload["PayloadIdentifier"].as_str().unwrap();
    assert!(pid.starts_with(id) && pid != id, "{pid}");
    assert_eq!(payload["PayloadUUID"], python_uuid5(pid).as_str());
    assert_ne!(payload["PayloadUUID"], doc["PayloadUUID"]);
    let rules = payload["Rules"].as_array().unwrap();
    assert_eq!(rules.len(), 2, "{rules:?}");
    assert_eq!(rules[0]["RuleType"], "LabelPrefix");
    // The prefix of every label oyster writes: production's and every NAME's.
    assert_eq!(rules[0]["RuleValue"], "com.oysterun.host");
    // This Linux build has no Developer ID signature: the label rule alone, and said so.
    assert!(rules[0].get("TeamIdentifier").is_none(), "{rules:?}");
    // The .pkg's login step (tests/it/fleet_pkg.rs), by its exact label, never with a team
    // (it runs /bin/sh).
    let login = crate::common::plistlib(
        &std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("packaging/pkg/com.oysterun.oyster.login.plist"),
        )
        .unwrap(),
    );
    assert_eq!(rules[1]["RuleType"], "Label");
    assert_eq!(rules[1]["RuleValue"], login["Label"]);
    assert!(rules[1].get("TeamIdentifier").is_none(), "{rules:?}");
    let err = r.stderr();
    assert!(
        err.contains("no TeamIdentifier") && err.contains("not for macOS"),
        "{err}"
    );
    assert!(
        err.contains("through your MDM") && err.contains("double-click"),
        "{err}"
    );
}

#[test]
fn mdm_profile_is_the_same_bytes_every_run_and_names_the_organization() {
    let t = TestContext::new();
    let file = t.path("oysterun.mobileconfig");
    let f = file.to_str().unwrap();
    let r = t
        .run([
            "mdm",
            "profile",
            "--output",
            f,
            "--organization",
            "Example & Söhne <IT>",
        ])
        .ok();
    assert!(r.stdout().contains("wrote "), "{}", r.stdout());
    let first = std::fs::read(&file).unwrap();
    let doc = plistlib(&first);
    assert_eq!(doc["PayloadOrganization"], "Example & Söhne <IT>");
    // Again, from another directory and HOME: the same bytes (a re-issued profile replaces
    // the installed one, since identifier and UUID are the same).
    let t2 = TestContext::new();
    t2.run([
        "mdm",
        "profile",
        "--output",
        f,
        "--organization",
        "Example & Söhne <IT>",
    ])
    .ok();
    assert_eq!(std::fs::read(&file).unwrap(), first);
    // Another organization: the same identifier and UUIDs.
    let other = plistlib(
        &t.run(["mdm", "profile", "--organization", "Other"])
            .ok()
            .0
            .stdout,
    );
    assert_eq!(other["PayloadUUID"], doc["PayloadUUID"]);
    assert_eq!(
        other["PayloadContent"][0]["PayloadUUID"],
        doc["PayloadContent"][0]["PayloadUUID"]
    );
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o644);
}

#[test]
fn mdm_profile_refuses_bad_output_and_organization_writing_nothing() {
    let t = TestContext::new();
    let dir = t.path("out");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let r = t.run(["mdm", "profile", "--output", d]).fails_with(2);
    assert!(
        r.stderr().contains("is a directory") && r.stderr().contains("hint:"),
        "{}",
        r.stderr()
    );
    let missing = dir.join("no/such/p.mobileconfig");
    let r = t
        .run(["mdm", "profile", "--output", missing.to_str().unwrap()])
        .fails_with(2);
    assert!(r.stderr().contains("does not exist"), "{}", r.stderr());
    let target = dir.join("p.mobileconfig");
    for org in ["", "bad\u{1b}[31m", "line\nbreak"] {
        let r = t
            .run([
                "mdm",
                "profile",
                "--output",
                target.to_str().unwrap(),
                "--organization",
                org,
            ])
            .fails_with(2);
        assert!(r.stderr().contains("--organization"), "{}", r.stderr());
    }
    // A symlink is not written through (its target stays as it was).
    let victim = dir.join("victim");
    std::fs::write(&victim, "mine").unwrap();
    let link = dir.join("link.mobileconfig");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    t.run(["mdm", "profile", "--output", link.to_str().unwrap()])
        .fails_with(2);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
    let mut left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["link.mobileconfig", "victim"], "nothing written");
    // --stack means nothing here: refused rather than ignored.
    t.run(["mdm", "profile", "--stack", "dev"]).fails_with(2);
}
