//! Fleets of Macs (issue 32): the managed login-items profile (`oyster mdm profile`) read
//! back by an independent reader, and the one inventory document per Mac (`oyster inventory`).

use std::process::Command;

use crate::common::{args, plistlib, TestContext};
use crate::common::{has_all, has_none};

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
    has_all(&err, &["no TeamIdentifier", "not for macOS"]);
    has_all(&err, &["through your MDM", "double-click"]);
}

#[test]
fn mdm_profile_is_the_same_bytes_every_run_and_names_the_organization() {
    let t = TestContext::new();
    let file = t.path("oysterun.mobileconfig");
    let f = file.to_str().unwrap();
    let r = t.run(["mdm", "profile", "--output", f, "--organization", "Example & Söhne <IT>"]).ok();
    r.stdout_has("wrote ");
    let first = std::fs::read(&file).unwrap();
    let doc = plistlib(&first);
    assert_eq!(doc["PayloadOrganization"], "Example & Söhne <IT>");
    // Again, from another directory and HOME: the same bytes (a re-issued profile replaces
    // the installed one, since identifier and UUID are the same).
    let t2 = TestContext::new();
    t2.run(["mdm", "profile", "--output", f, "--organization", "Example & Söhne <IT>"]).ok();
    assert_eq!(std::fs::read(&file).unwrap(), first);
    // Another organization: the same identifier and UUIDs.
    let other = plistlib(&t.run(["mdm", "profile", "--organization", "Other"]).ok().0.stdout);
    assert_eq!(other["PayloadUUID"], doc["PayloadUUID"]);
    assert_eq!(other["PayloadContent"][0]["PayloadUUID"], doc["PayloadContent"][0]["PayloadUUID"]);
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
    let r = t.run(["mdm", "profile", "--output", missing.to_str().unwrap()]).fails_with(2);
    r.stderr_has("does not exist");
    let target = dir.join("p.mobileconfig");
    for org in ["", "bad\u{1b}[31m", "line\nbreak"] {
        let r = t
            .run(["mdm", "profile", "--output", target.to_str().unwrap(), "--organization", org])
            .fails_with(2);
        r.stderr_has("--organization");
    }
    // A symlink is not written through (its target stays as it was).
    let victim = dir.join("victim");
    std::fs::write(&victim, "mine").unwrap();
    let link = dir.join("link.mobileconfig");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    t.run(["mdm", "profile", "--output", link.to_str().unwrap()]).fails_with(2);
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

/// A Mac with three stacks: production verified, `two` stopped, `broken` whose config.json
/// does not parse; a secret in production's config.
fn three_stacks() -> TestContext {
    let t = TestContext::with_three_stacks("broken");
    // Production does without codex; two's codex is missing (a problem with its fix).
    t.run(["providers", "set", "codex", ""]).ok();
    std::fs::write(t.home.join(".oysterun-stacks/broken/host/config.json"), "{ \"port\": 12, oops")
        .unwrap();
    let mut config = t.read_config();
    config["remote_access_token"] = "tok-SECRET-4242-zz".into();
    config["dashboard_url"] = "https://admin:pw-SECRET-9@dash.example.com/".into();
    std::fs::write(t.config_path(), config.to_string()).unwrap();
    t
}

#[test]
fn inventory_describes_three_stacks_in_their_states_as_documented_and_holds_no_secret() {
    let t = three_stacks();
    let r = t.run(["inventory", "--json"]);
    assert_eq!(r.code(), 0, "exit 0 even with a broken stack: {}", r.stderr());
    let text = r.stdout();
    for secret in ["SECRET", "pw-", "admin:"] {
        assert!(!text.contains(secret), "{secret} in:\n{text}");
    }
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();

    // The documented schema (docs/json.md): exactly its keys and types, its enums and numbers.
    let example = crate::json_docs::examples()
        .into_iter()
        .find(|e| e.command == "oyster inventory --json")
        .expect("docs/json.md documents oyster inventory --json");
    let mut errors = vec![];
    crate::json_docs::compare(&example.value, &doc, "inventory", false, &mut errors);
    let (enums, numbers) = crate::json_docs::conventions();
    crate::json_docs::check_conventions(&doc, "inventory", &enums, &numbers, &mut errors);
    assert!(errors.is_empty(), "{}\n{text}", errors.join("\n"));
    assert!(!text.contains('~'));

    assert_eq!(doc["schema_version"], 1);
    let at = doc["generated_at"].as_str().unwrap();
    assert!(at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T', "{at}");
    assert_eq!(doc["oyster"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doc["oyster"]["path"], crate::common::BIN);
    assert_eq!(doc["oyster"]["team_id"], serde_json::Value::Null);
    assert_eq!(doc["login_items_profile"]["installed"], serde_json::Value::Null);
    let home = t.home.display().to_string();
    let users = doc["users"].as_array().unwrap();
    let me: Vec<_> = users.iter().filter(|u| u["home"] == home.as_str()).collect();
    assert_eq!(me.len(), 1, "{text}");
    let me = me[0];
    assert_eq!(me["uid"], nix::unistd::getuid().as_raw());
    let stacks: std::collections::BTreeMap<&str, &serde_json::Value> = me["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["stack"].as_str().unwrap(), s))
        .collect();
    assert_eq!(stacks.keys().copied().collect::<Vec<_>>(), ["broken", "production", "two"]);
    let codes = |s: &serde_json::Value| -> Vec<String> {
        s["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["code"].as_str().unwrap().to_owned())
            .collect()
    };

    let prod = stacks["production"];
    assert_eq!(prod["summary"], "verified", "{prod}");
    assert_eq!(prod["verified"], true);
    assert_eq!(prod["loaded"], true);
    assert!(prod["pid"].as_u64().is_some());
    assert_eq!(prod["plist_present"], true);
    assert_eq!(prod["plist_current"], true);
    assert_eq!(prod["node_bin"], crate::common::real_node().display().to_string());
    assert!(prod["node_version"].as_str().is_some_and(|v| v.starts_with('v')), "{prod}");
    assert!(prod["oysterun_root"].as_str().is_some(), "{prod}");
    assert_eq!(codes(prod), Vec::<String>::new(), "{prod}");
    let claude = &prod["providers"][0];
    assert_eq!((&claude["provider"], &claude["state"]), (&"claude".into(), &"available".into()));

    let two = stacks["two"];
    assert_eq!(two["summary"], "stopped", "{two}");
    assert_eq!((&two["loaded"], &two["disabled"]), (&false.into(), &true.into()));
    assert_eq!(two["pid"], serde_json::Value::Null);
    assert_eq!(codes(two), ["stopped", "provider_unavailable"]);
    assert_eq!(two["problems"][0]["fix"], "oyster start two");
    assert_eq!(two["problems"][1]["detail"], "codex");
    assert!(
        two["problems"][1]["fix"]
            .as_str()
            .unwrap()
            .contains("oyster providers set codex \"\" --stack two"),
        "{two}"
    );

    let broken = stacks["broken"];
    assert_eq!(broken["broken"], true, "{broken}");
    assert!(codes(broken).contains(&"broken_files".to_owned()), "{broken}");
    let fix = broken["problems"][0]["fix"].as_str().unwrap();
    has_all(fix, &["oyster doctor broken"]);

    // --result: one value, wrapped for a Jamf extension attribute.
    let one = |key: &str| t.run(["inventory", "--result", key]).ok().stdout();
    let problems = one("problems");
    assert!(problems.starts_with("<result>") && problems.ends_with("</result>\n"), "{problems}");
    let who = me["name"].as_str().unwrap();
    has_all(&problems, &[&format!("{who}/two:stopped")]);
    has_all(&problems, &[&format!("{who}/broken:broken_files")]);
    has_none(&problems, &["production"]);
    assert!(one("verified").contains("<result>1/3</result>") || users.len() > 1);
    assert_eq!(one("oyster_version"), format!("<result>{}</result>\n", env!("CARGO_PKG_VERSION")));
    assert_eq!(one("team_id"), "<result>none</result>\n");
    let r = t.run(["inventory", "--result", "password"]).fails_with(2);
    r.stderr_has("use one of: problems");
    assert!(r.stdout().is_empty());

    // People get a summary, also exit 0.
    let human = t.run(["inventory"]).ok().stdout();
    has_all(&human, &["stopped: oyster start two"]);
    has_none(&human, &["SECRET"]);
    t.run(["inventory", "--stack", "two"]).fails_with(2);
}

#[test]
fn inventory_without_launchd_or_stacks_still_prints_a_document() {
    let t = TestContext::new();
    let doc = t.run(["inventory", "--json"]).ok().json();
    let home = t.home.display().to_string();
    assert!(
        !doc["users"].as_array().unwrap().iter().any(|u| u["home"] == home.as_str()),
        "a HOME without stacks is no entry: {doc}"
    );
    assert_eq!(
        t.run(["inventory", "--result", "stacks"]).ok().stdout(),
        format!(
            "<result>{}</result>\n",
            doc["users"]
                .as_array()
                .unwrap()
                .iter()
                .map(|u| u["stacks"].as_array().unwrap().len())
                .sum::<usize>()
        )
    );
}

/// What root's inventory runs as each user (`inventory --user-part`, hidden) is that user's
/// entry of the whole document.
#[test]
fn inventory_user_part_is_the_users_entry_of_the_document() {
    use crate::common::free_port;
    let t = TestContext::new();
    for stack in ["alpha", "beta"] {
        t.run(args(&["config", "sync"]).stack(stack).port(free_port())).ok();
    }
    let part = t.run(["inventory", "--user-part"]).ok().json();
    let doc = t.run(["inventory", "--json"]).ok().json();
    let home = t.home.display().to_string();
    let entry = doc["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["home"] == home.as_str())
        .unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(&part, entry);
    let names = crate::common::column(&part["stacks"], "stack");
    assert_eq!(names, ["alpha", "beta"]);
    // Hidden, and only on its own.
    assert!(!t.run(["inventory", "--help"]).ok().stdout().contains("user-part"));
    t.run(["inventory", "--user-part", "--json"]).fails_with(2);
}
