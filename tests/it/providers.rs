//! Provider resolution through the binary (docs/behaviour.md §1) and the intent table (§2).

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::PathBuf;

use serde_json::json;

use crate::common::{args, TestContext};

const P: &str = "claude";
const Q: &str = "codex";

fn resolve_one(t: &TestContext, p: &str) -> serde_json::Value {
    let v = t.run(["providers", "resolve", p, "--json"]).ok().json();
    v["providers"][0].clone()
}

#[test]
fn installed_in_local_bin_resolves_with_source_fallback() {
    let t = TestContext::new();
    let exe = t.fake_exe(&t.home.join(".local/bin").join(P));
    let row = resolve_one(&t, P);
    assert_eq!(row["resolved"], json!(exe));
    assert_eq!(row["source"], "fallback");
    assert_eq!(row["state"], "available");
    assert_eq!(row["intent"], "auto");
    assert_eq!(row["authentication"], "not_checked");
    assert!(!t.config_path().exists(), "resolve is read-only");
    t.assert_nothing_executed();
}

#[test]
fn steps_win_in_contract_order() {
    let mut t = TestContext::new();
    let path_dir = t.path("pathdir");
    t.path_dirs.push(path_dir.clone());
    let bin6 = t.fake_exe(&t.home.join("bin").join(P));
    assert_eq!(resolve_one(&t, P)["resolved"], json!(bin6));
    let bin5 = t.fake_exe(&t.home.join(".local/bin").join(P));
    assert_eq!(resolve_one(&t, P)["resolved"], json!(bin5));
    let on_path = t.fake_exe(&path_dir.join(P));
    let row = resolve_one(&t, P);
    assert_eq!((row["resolved"].clone(), row["source"].clone()), (json!(on_path), json!("path")));
    // Step 1: an executable configured command beats everything, under auto too.
    let configured = t.fake_exe(&t.path("custom/my-claude"));
    t.write_config(&format!(
        r#"{{"claude_command": "{}", "provider_command_intent": {{"claude": "auto"}}}}"#,
        configured.display()
    ));
    let row = resolve_one(&t, P);
    assert_eq!(
        (row["resolved"].clone(), row["source"].clone()),
        (json!(configured), json!("configured"))
    );
    t.assert_nothing_executed();
}

/// Makes a bad candidate of the given kind at `path`.
fn make_bad(t: &TestContext, kind: &str, path: &PathBuf) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    match kind {
        "directory" => std::fs::create_dir_all(path).unwrap(),
        "broken symlink" => symlink(t.path("nowhere"), path).unwrap(),
        "symlink loop" => symlink(path, path).unwrap(),
        "not executable" => {
            std::fs::write(path, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        "symlink to a directory" => {
            std::fs::create_dir_all(t.path("adir")).unwrap();
            symlink(t.path("adir"), path).unwrap()
        }
        _ => unreachable!(),
    }
}

const BAD: [&str; 5] =
    ["directory", "broken symlink", "symlink loop", "not executable", "symlink to a directory"];

#[test]
fn bad_candidates_are_skipped_at_every_step() {
    for kind in BAD {
        // Steps 2 (PATH) and 5 (~/.local/bin) hold a bad candidate; step 6 a good one.
        let mut t = TestContext::new();
        let path_dir = t.path("pathdir");
        t.path_dirs.push(path_dir.clone());
        make_bad(&t, kind, &path_dir.join(P));
        make_bad(&t, kind, &t.home.join(".local/bin").join(P));
        let good = t.fake_exe(&t.home.join("bin").join(P));
        let row = resolve_one(&t, P);
        assert_eq!(row["resolved"], json!(good), "{kind}");

        // Step 6 bad too: nothing found, and the reason says where oyster looked.
        std::fs::remove_file(&good).unwrap();
        make_bad(&t, kind, &good);
        let row = resolve_one(&t, P);
        assert_eq!(row["resolved"], json!(null), "{kind}");
        assert_eq!(row["state"], "unavailable", "{kind}");
        assert!(row["reason"].as_str().unwrap().contains("not found"), "{kind}: {row}");

        // Step 1 (manual) bad: unavailable with the reason and the fix, never replaced by the
        // good binary discovery finds on PATH, neither in the answer nor in the config.
        let cfg = t.path("cfg-bad");
        make_bad(&t, kind, &cfg);
        t.write_config(&format!(r#"{{"claude_command": "{}"}}"#, cfg.display()));
        let good_dir = t.path("gooddir");
        let good_on_path = t.fake_exe(&good_dir.join(P));
        t.path_dirs.push(good_dir);
        let row = resolve_one(&t, P);
        assert_eq!(
            (row["intent"].as_str(), row["state"].as_str()),
            (Some("manual"), Some("unavailable")),
            "{kind}"
        );
        assert_eq!(
            (&row["command"], &row["resolved"], &row["source"]),
            (&json!(cfg), &json!(null), &json!(null)),
            "{kind}: the manual command is kept and nothing else is picked"
        );
        let reason = row["reason"].as_str().unwrap();
        assert!(reason.contains("oyster providers set"), "{kind}: {reason}");
        t.run(["config", "sync"]).ok();
        let saved = t.read_config();
        assert_eq!(
            (&saved["claude_command"], &saved["provider_command_intent"]["claude"]),
            (&json!(cfg), &json!("manual")),
            "{kind}: a sync keeps the manual command"
        );
        // The premise: handed back to discovery, that good binary is what it finds.
        t.run(["providers", "auto", P]).ok();
        assert_eq!(resolve_one(&t, P)["resolved"], json!(good_on_path), "{kind}");
        t.assert_nothing_executed();
    }
}

#[test]
fn a_symlink_is_kept_as_the_link_path_not_its_target() {
    let mut t = TestContext::new();
    let real = t.fake_exe(&t.path("Cellar/claude/1.0/bin/claude"));
    let link_dir = t.path("prefix/bin");
    std::fs::create_dir_all(&link_dir).unwrap();
    symlink(&real, link_dir.join(P)).unwrap();
    t.path_dirs.push(t.path("prefix/./bin/../bin"));
    let row = resolve_one(&t, P);
    assert_eq!(row["resolved"], json!(link_dir.join(P)), "normalized link path");
    t.run(["config", "sync"]).ok();
    assert_eq!(t.read_config()["claude_command"], json!(link_dir.join(P)));
}

#[test]
fn relative_and_empty_path_entries_are_never_the_working_directory() {
    let mut t = TestContext::new();
    // The working directory of the run holds an executable claude, and so does ./rel.
    t.fake_exe(&t.path(P));
    t.fake_exe(&t.path("rel").join(P));
    let mut c = t.cmd();
    c.env("PATH", format!("::rel:.:./rel:{}", t.path("empty").display()));
    let out = c.args(["providers", "resolve", P, "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["providers"][0]["resolved"], json!(null), "{v}");
    t.path_dirs.clear();
    t.assert_nothing_executed();
}

#[test]
fn unsupported_names_fail_closed_with_the_supported_list() {
    let t = TestContext::new();
    for args in [
        vec!["providers", "resolve", "gemini"],
        vec!["providers", "resolve", P, "../claude"],
        vec!["providers", "set", "CLAUDE", "/usr/bin/true"],
        vec!["providers", "auto", "claude;rm"],
    ] {
        let r = t.run(&args).fails_with(2);
        r.stderr_has("supported providers are: claude, codex");
        assert!(r.stdout().is_empty());
    }
    assert!(!t.home.join(".oysterun").exists(), "nothing was created");
}

#[test]
fn intent_table_auto_manual_disabled() {
    let mut t = TestContext::new();
    let path_dir = t.path("pathdir");
    t.path_dirs.push(path_dir.clone());
    let found = t.fake_exe(&path_dir.join(P));

    // auto: populate the resolved path.
    t.run(["config", "sync"]).ok();
    let cfg = t.read_config();
    assert_eq!(cfg["claude_command"], json!(found));
    assert_eq!(cfg["provider_command_intent"], json!({"claude": "auto", "codex": "auto"}));
    // auto, not found: unavailable but not disabled, and nothing written over.
    assert_eq!(cfg.get("codex_command"), None);
    let row = resolve_one(&t, Q);
    assert_eq!(row["state"], "unavailable");

    // manual: a broken path is kept verbatim and shown as actionable.
    t.run(["providers", "set", P, "/opt/gone/claude"]).ok();
    t.run(["config", "sync"]).ok();
    let cfg = t.read_config();
    assert_eq!(cfg["claude_command"], "/opt/gone/claude");
    assert_eq!(cfg["provider_command_intent"]["claude"], "manual");
    let status = t.run(["providers", "status", "--json"]).ok().json();
    let row = &status["providers"][0];
    assert_eq!(
        (row["state"].as_str(), row["command"].as_str()),
        (Some("unavailable"), Some("/opt/gone/claude"))
    );
    assert!(row["reason"].as_str().unwrap().contains("does not exist"));

    // disabled: null, and never auto-enabled although claude is on PATH.
    t.run(["providers", "set", P, ""]).ok();
    t.run(["config", "sync"]).ok();
    let cfg = t.read_config();
    assert_eq!(cfg["claude_command"], json!(null));
    assert_eq!(cfg["provider_command_intent"]["claude"], "disabled");
    assert_eq!(resolve_one(&t, P)["state"], "disabled");

    // auto again hands it back to discovery.
    t.run(["providers", "auto", P]).ok();
    assert_eq!(t.read_config()["claude_command"], json!(found));
    t.assert_nothing_executed();
}

#[test]
fn set_expands_home_normalizes_and_refuses_bare_or_relative() {
    let t = TestContext::new();
    t.run(["providers", "set", P, "~/tools/./x/../claude"]).ok();
    let cfg = t.read_config();
    assert_eq!(cfg["claude_command"], json!(t.home.join("tools/claude")));
    assert_eq!(cfg["provider_command_intent"]["claude"], "manual");
    let before = std::fs::read(t.config_path()).unwrap();
    for bad in ["claude", "bin/claude", "./claude", "line\nbreak"] {
        let r = t.run(["providers", "set", P, bad]).fails_with(2);
        assert!(r.stderr().contains("full path"), "{bad}: {}", r.stderr());
    }
    assert_eq!(std::fs::read(t.config_path()).unwrap(), before);
    // Blank (spaces) disables.
    t.run(["providers", "set", Q, "   "]).ok();
    assert_eq!(t.read_config()["provider_command_intent"]["codex"], "disabled");
}

#[test]
fn status_prints_home_as_tilde_and_resolve_prints_real_paths() {
    let t = TestContext::with_home_name("we & <they> \"q\"");
    let exe = t.fake_exe(&t.home.join(".local/bin").join(P));
    let status = t.run(["providers", "status", "--json"]).ok();
    let row = &status.json()["providers"][0];
    assert_eq!(row["resolved"], json!(exe), "documents carry real paths");
    assert!(!status.stdout().contains('~'));
    assert_eq!(resolve_one(&t, P)["resolved"], json!(exe));
    t.run(["providers", "status"]).ok().stdout_has_all(&["~/.local/bin/claude", "available"]);
}

#[test]
fn set_says_whether_the_host_needs_a_refresh_and_warns_about_a_path_that_cannot_run() {
    let mut t = TestContext::new();
    // Nothing set up yet: the next setup uses it.
    let r = t.run(["providers", "set", Q, ""]).ok();
    r.stdout_has("No Host is set up");
    r.stdout_has("disabled");

    t.use_sim();
    t.pin_host_env();
    let port = crate::common::free_port().to_string();
    t.run(args(&["agent", "install"]).port(&port).settle(200)).ok();
    // A new directory on the Host's PATH: the running Host must be refreshed, and it is said how.
    let exe = t.fake_exe(&t.path("tools/q"));
    let r = t.run(["providers", "set", Q, exe.to_str().unwrap()]).ok();
    r.stdout_has("run `oyster agent regenerate` to give it the change");
    t.run(["agent", "regenerate", "--settle-ms", "200"]).ok();
    // The same again changes nothing, and says nothing about refreshing.
    let r = t.run(["providers", "set", Q, exe.to_str().unwrap()]).ok();
    r.stdout_has("unchanged");
    assert!(!r.stdout().contains("regenerate"), "{}", r.stdout());

    // A path that does not exist, or a directory: saved as manual (seed 000), and warned.
    for (bad, words) in [(t.path("gone/q"), "does not exist"), (t.path("tools"), "is a directory")]
    {
        let r = t.run(["providers", "set", Q, bad.to_str().unwrap()]).ok();
        r.stderr_has_all(&["warning:", words, "saved"]);
        let v = t.read_config();
        assert_eq!(v["provider_command_intent"][Q], "manual");
        assert_eq!(v[format!("{Q}_command")], json!(bad));
    }
    t.assert_nothing_executed();
}
