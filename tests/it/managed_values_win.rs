//! The seams, round 4 (issue 40), managed values: a forced value is what every command
//! resolves with at once (the plist, `providers status`, `status`, setup, `config show`), and
//! `--json` marks it; a managed value of the wrong type is said, never dropped silently.

use crate::common::{doctor_check, free_port, plistlib, TestContext};
use crate::common::{has_all, has_none};

fn dict(pairs: Vec<(&str, plist::Value)>) -> plist::Value {
    let mut d = plist::Dictionary::new();
    for (k, v) in pairs {
        d.insert(k.into(), v);
    }
    plist::Value::Dictionary(d)
}

fn settings(v: plist::Value) -> plist::Dictionary {
    v.into_dictionary().unwrap()
}

/// Item 4: a profile forcing `claude_command = ""` (the documented "`\"\"` to disable") and
/// `provider_command_intent.codex = disabled`, on a Mac where both providers are installed and
/// config.json (never synced since the profile came) still says `auto` for both: every
/// command resolves both as disabled, before any sync, and `--json` names the profile.
#[test]
fn a_forced_empty_command_and_a_forced_intent_disable_everywhere_at_once() {
    let mut t = TestContext::with_pinned_host();
    let claude = t.fake_exe(&t.home.join(".local/bin/claude"));
    let tools = t.path("tools");
    t.fake_exe(&tools.join("codex"));
    t.path_dirs.push(tools.clone());
    let port = free_port();
    t.write_config(&format!(
        "{{\"port\": {port}, \"provider_command_intent\": {{\"claude\": \"auto\", \"codex\": \"auto\"}}}}\n"
    ));
    let before = std::fs::read(t.config_path()).unwrap();
    let file = t.managed_preferences(
        "Managed Preferences",
        settings(dict(vec![
            ("claude_command", "".into()),
            ("provider_command_intent", dict(vec![("codex", "disabled".into())])),
        ])),
    );
    let file_s = file.display().to_string();

    // providers status, --json and human: disabled, by the organization, the profile named.
    let doc = t.run(["providers", "status", "--json"]).ok().json();
    for row in doc["providers"].as_array().unwrap() {
        let id = row["provider"].as_str().unwrap();
        assert_eq!(
            (row["intent"].as_str(), row["state"].as_str()),
            (Some("disabled"), Some("disabled")),
            "{id}: {row}"
        );
        assert_eq!(row["managed"], file_s, "{id}: {row}");
        assert!(row["reason"].as_str().unwrap().contains("disabled by your organization"), "{row}");
    }
    let human = t.run(["providers", "status"]).ok().stdout();
    has_all(&human, &["claude (disabled)", "codex (disabled)"]);
    has_none(&human, &["available"]);
    let resolve = t.run(["providers", "resolve", "--json"]).ok().json();
    assert_eq!(resolve["providers"][0]["state"], "disabled", "{resolve}");

    // config show: what every command uses, each forced value marked with the profile.
    let show = t.run(["config", "show", "--json"]).ok().json();
    assert_eq!(show["claude_command"], "");
    assert_eq!(show["provider_command_intent"]["claude"], "disabled");
    assert_eq!(show["provider_command_intent"]["codex"], "disabled");
    for key in ["claude_command", "provider_command_intent.claude", "provider_command_intent.codex"]
    {
        assert_eq!(show["$managed"][key], file_s, "{key}: {show}");
    }
    t.run(["config", "show"]).ok().stdout_has_all(&[
        "with the organization's forced values",
        "# managed: provider_command_intent.claude = \"disabled\"",
    ]);
    assert_eq!(std::fs::read(t.config_path()).unwrap(), before, "a reader wrote");

    // The plist: neither provider's directory goes on the Host's PATH.
    let plist = t.run(["agent", "print"]).ok();
    let env = plistlib(plist.stdout().as_bytes())["EnvironmentVariables"].clone();
    let path = env["PATH"].as_str().unwrap().to_owned();
    let local_bin = claude.parent().unwrap().display().to_string();
    assert!(
        !path.split(':').any(|d| d == local_bin || d == tools.to_str().unwrap()),
        "a disabled provider's directory is on the Host's PATH: {path}"
    );

    // status --json lists what is forced, the derived intent too.
    let status = t.run(["status", "--json"]).json();
    let managed = status["managed"].as_array().unwrap();
    assert!(
        managed.iter().any(|e| e["setting"] == "provider_command_intent.claude"
            && e["value"] == "disabled"
            && e["file"] == file_s),
        "{status}"
    );

    // setup would not install a provider the organization disabled (here: none is found).
    std::fs::remove_file(&claude).unwrap();
    std::fs::remove_file(tools.join("codex")).unwrap();
    let plan = t.run(["setup", "--dry-run", "--install-providers"]).ok().stdout();
    has_all(&plan, &["disabled (kept disabled)"]);
    has_none(&plan, &["npm install"]);

    // And a sync writes it, so the Host reads it too.
    t.run(["config", "sync"]).ok();
    let v = t.read_config();
    assert_eq!(v["provider_command_intent"]["claude"], "disabled");
    assert_eq!(v["provider_command_intent"]["codex"], "disabled");
    assert_eq!(v["claude_command"], "");
}

/// Item 4, the rest of the rule: a forced absolute command is `manual` (the profile's path,
/// never one discovery finds instead); a forced intent that contradicts a forced `""` is
/// left out, said, and the provider stays disabled.
#[test]
fn a_forced_command_is_manual_and_a_contradicting_intent_is_left_out_and_said() {
    let mut t = TestContext::new();
    t.fake_exe(&t.home.join(".local/bin/claude"));
    t.managed_preferences(
        "mp",
        settings(dict(vec![
            ("claude_command", "/opt/org/bin/claude".into()),
            ("codex_command", "".into()),
            ("provider_command_intent", dict(vec![("codex", "auto".into())])),
        ])),
    );
    let doc = t.run(["providers", "status", "--json"]).ok().json();
    let rows = doc["providers"].as_array().unwrap();
    let row = |id: &str| rows.iter().find(|r| r["provider"] == id).unwrap().clone();
    let claude = row("claude");
    assert_eq!(claude["intent"], "manual", "{claude}");
    assert_eq!(claude["state"], "unavailable", "{claude}");
    assert!(
        claude["reason"].as_str().unwrap().contains("/opt/org/bin/claude does not exist"),
        "{claude}"
    );
    assert_eq!(row("codex")["state"], "disabled");
    t.run(["config", "show"]).ok().stdout_has_all(&[
        "# managed value left out:",
        "provider_command_intent.codex = \"auto\" is left out",
        "which disables codex",
    ]);
}

/// Item 5: a managed payload whose `stacks` is an array (a profile editor's slip) holds every
/// per-stack value out of reach: said, with why, in `doctor` (a warning) and `config show`
/// (human and `--json`), as is a top-level value of the wrong type.
#[test]
fn a_managed_payload_of_the_wrong_type_is_said_in_doctor_and_config_show() {
    let mut t = TestContext::with_stack_config("dev");
    let file = t.managed_preferences(
        "mp",
        settings(dict(vec![
            (
                "stacks",
                plist::Value::Array(vec![dict(vec![("dev", dict(vec![("port", 8810.into())]))])]),
            ),
            ("connection_mode", 42.into()),
        ])),
    );
    let check = doctor_check(&t.run(["doctor", "dev", "--json"]).json(), "managed preferences");
    assert_eq!(check["status"], "warn", "{check}");
    let said = format!("{} {}", check["detail"], check["fix"]);
    assert!(
        said.contains("stacks is an array, not a dictionary")
            && said.contains("every per-stack value in it is left out")
            && said.contains("connection_mode"),
        "{check}"
    );
    t.run(["config", "show", "dev"]).ok().stdout_has_all(&[
        &format!("# managed value left out: {}: stacks is an array", file.display()),
        "connection_mode: not direct",
    ]);
    let json = t.run(["config", "show", "dev", "--json"]).ok().json();
    let left_out = json["$managed_left_out"].as_array().unwrap();
    assert_eq!(left_out.len(), 2, "{json}");
    assert!(json.get("$managed").is_none(), "nothing is forced: {json}");
}
