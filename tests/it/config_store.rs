//! The durable config through the binary (docs/behaviour.md §2): migration, byte stability, unknown
//! keys, corrupt input, modes, locking and crash safety.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use crate::common::{args, TestContext};

fn snapshot(t: &TestContext) -> (Vec<u8>, i64, i64, u64) {
    let m = std::fs::metadata(t.config_path()).unwrap();
    (std::fs::read(t.config_path()).unwrap(), m.mtime(), m.mtime_nsec(), m.ino())
}

#[test]
fn migration_cases() {
    // Both providers are on PATH, so an `auto` intent visibly takes the found path and a
    // `manual` one visibly keeps its command instead.
    let mut t = TestContext::new();
    let dir = t.path("bin");
    t.path_dirs.push(dir.clone());
    let found_claude = t.fake_exe(&dir.join("claude"));
    let found = t.fake_exe(&dir.join("codex"));
    for (claude, codex, want_claude, want_codex, claude_after, codex_after) in [
        (
            json!("/abs/claude"),
            json!("codex"),
            "manual",
            "auto",
            json!("/abs/claude"),
            json!(found),
        ),
        (json!("claude"), json!(null), "auto", "auto", json!(found_claude), json!(found)),
        (json!("  "), json!(""), "auto", "auto", json!(found_claude), json!(found)),
        (
            json!("~/bin/claude"),
            json!("my-codex --flag"),
            "manual",
            "manual",
            json!("~/bin/claude"),
            json!("my-codex --flag"),
        ),
    ] {
        t.write_config(&json!({"claude_command": claude, "codex_command": codex}).to_string());
        t.run(["config", "sync"]).ok();
        let cfg = t.read_config();
        assert_eq!(
            cfg["provider_command_intent"],
            json!({"claude": want_claude, "codex": want_codex})
        );
        assert_eq!(
            (&cfg["claude_command"], &cfg["codex_command"]),
            (&claude_after, &codex_after),
            "from {claude} and {codex}: manual kept verbatim, auto set to what was found"
        );
    }
    // Auto with nothing found: a detector null never overwrites what is there.
    std::fs::remove_file(&found_claude).unwrap();
    t.write_config(r#"{"claude_command": "claude"}"#);
    t.run(["config", "sync"]).ok();
    let cfg = t.read_config();
    assert_eq!(cfg["provider_command_intent"]["claude"], "auto");
    assert_eq!(cfg["claude_command"], "claude", "auto, nothing found: kept");
    // Missing keys entirely: auto for both, no command invented for the one not found.
    t.write_config("{}");
    t.run(["config", "sync"]).ok();
    let cfg = t.read_config();
    assert_eq!(cfg["provider_command_intent"], json!({"claude": "auto", "codex": "auto"}));
    assert_eq!(cfg.get("claude_command"), None);
    t.assert_nothing_executed();
}

#[test]
fn a_no_op_sync_leaves_bytes_mtime_and_inode_alone() {
    let t = TestContext::new();
    t.fake_exe(&t.home.join(".local/bin/claude"));
    t.run(["config", "sync"]).ok();
    let before = snapshot(&t);
    std::thread::sleep(Duration::from_millis(20));
    for _ in 0..3 {
        let r = t.run(["config", "sync"]).ok();
        r.stdout_has("unchanged");
        t.run(["providers", "auto", "claude"]).ok();
        t.run(["providers", "resolve", "--json"]).ok();
        t.run(["providers", "status"]).ok();
    }
    assert_eq!(snapshot(&t), before);
}

#[test]
fn hand_formatted_files_are_left_alone_when_nothing_changes() {
    let t = TestContext::new();
    let text = "{\"provider_command_intent\":{\"claude\":\"disabled\",\"codex\":\"manual\"},\n\
                \"claude_command\":null,   \"codex_command\":\"/x/codex\"}";
    t.write_config(text);
    t.run(["config", "sync"]).ok();
    assert_eq!(std::fs::read_to_string(t.config_path()).unwrap(), text);
}

#[test]
fn unknown_keys_history_and_order_survive_a_real_change() {
    let t = TestContext::new();
    t.write_config(
        r#"{"zeta": 1, "providers_history": {"claude": [{"session": "s1", "resume": "r"}]},
            "claude_command": "claude", "alpha": [3, 2, 1], "nested": {"b": 1, "a": 2}}"#,
    );
    let exe = t.fake_exe(&t.home.join("bin/claude"));
    t.run(["config", "sync"]).ok();
    let text = std::fs::read_to_string(t.config_path()).unwrap();
    let cfg: serde_json::Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<_> = cfg.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        [
            "zeta",
            "providers_history",
            "claude_command",
            "alpha",
            "nested",
            "provider_command_intent"
        ]
    );
    assert_eq!(cfg["claude_command"], json!(exe));
    assert_eq!(cfg["providers_history"]["claude"][0]["resume"], "r");
    let nested: Vec<_> = cfg["nested"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(nested, ["b", "a"]);
    assert!(text.ends_with("}\n"));
}

/// Regression (found by fuzzing): floats in keys oyster does not own were re-rounded on a real
/// change. Numbers now keep every digit (serde_json's arbitrary precision); only an exponent's
/// sign is normalized (`1e400` is written `1e+400`, the same number).
#[test]
fn numbers_in_unknown_keys_keep_every_digit_across_a_rewrite() {
    let t = TestContext::new();
    t.write_config(
        r#"{"ratio": -7.071105831100485e+102, "sum": 0.30000000000000004, "big": 123456789012345678901234567890, "money": 1.50, "huge": 1e400, "claude_command": "claude"}"#,
    );
    t.fake_exe(&t.home.join("bin/claude"));
    t.run(["config", "sync"]).ok();
    let text = std::fs::read_to_string(t.config_path()).unwrap();
    for kept in [
        "-7.071105831100485e+102",
        "0.30000000000000004",
        "123456789012345678901234567890",
        "1.50",
        "1e+400",
    ] {
        assert!(text.contains(kept), "{kept} was rewritten:\n{text}");
    }
    assert!(text.contains("/bin/claude"), "and the real change happened");
}

#[test]
fn corrupt_input_is_refused_with_position_and_never_rewritten() {
    let t = TestContext::new();
    for (text, expect) in [
        ("{\"claude_command\": \"/x\",\n  \"port\": 88", "line 2, column"),
        ("", "empty"),
        ("   \n", "empty"),
        ("\u{feff}{}", "byte-order mark"),
        ("[1, 2]", "line 1, column"),
        ("{\"claude_command\": 42}", "claude_command"),
        ("{\"codex_command\": [\"/x\"]}", "codex_command"),
        ("{\"provider_command_intent\": {\"claude\": \"always\"}}", "provider_command_intent"),
        ("{\"provider_command_intent\": \"auto\"}", "provider_command_intent"),
        ("{\"port\": \"8802\"}", "port"),
        ("{\"a\": 1} trailing", "line 1, column"),
    ] {
        t.write_config(text);
        let before = snapshot(&t);
        std::thread::sleep(Duration::from_millis(5));
        for args in [
            vec!["config", "sync"],
            vec!["providers", "set", "claude", "/bin/sh"],
            vec!["providers", "auto", "codex"],
            vec!["providers", "resolve"],
            vec!["providers", "status", "--json"],
        ] {
            let r = t.run(&args).fails_with(2);
            let err = r.stderr();
            assert!(
                err.contains("config.json") && err.contains(expect),
                "{text:?} {args:?}: {err}"
            );
            // Under --json the error is one document on stdout; else stdout stays empty.
            if args.contains(&"--json") {
                let doc: serde_json::Value = serde_json::from_str(&r.stdout()).unwrap();
                assert_eq!(doc["error"]["exit_code"], 2, "{args:?}");
                assert_eq!(doc["error"]["kind"], "invalid", "{args:?}");
            } else {
                assert!(r.stdout().is_empty(), "{args:?}: {}", r.stdout());
            }
            assert_eq!(snapshot(&t), before, "{text:?} {args:?} touched the file");
        }
    }
}

#[test]
fn a_symlinked_config_is_refused_and_its_target_untouched() {
    let t = TestContext::new();
    let target = t.path("dotfiles/config.json");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::write(&target, "{}").unwrap();
    std::fs::create_dir_all(t.home.join(".oysterun")).unwrap();
    std::os::unix::fs::symlink(&target, t.config_path()).unwrap();
    let r = t.run(["config", "sync"]).fails_with(2);
    r.stderr_has("symlink");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
}

#[test]
fn new_files_are_0600_in_a_0700_dir_and_existing_modes_are_kept() {
    let t = TestContext::new();
    t.run(["providers", "set", "claude", "/x/claude"]).ok();
    let m = std::fs::metadata(t.config_path()).unwrap();
    assert_eq!(m.mode() & 0o777, 0o600);
    let d = std::fs::metadata(t.home.join(".oysterun")).unwrap();
    assert_eq!(d.mode() & 0o777, 0o700);
    std::fs::set_permissions(t.config_path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    t.run(["providers", "set", "claude", "/y/claude"]).ok();
    assert_eq!(std::fs::metadata(t.config_path()).unwrap().mode() & 0o777, 0o644);
    let leftovers: Vec<_> = std::fs::read_dir(t.home.join(".oysterun"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn port_is_recorded_by_sync_and_stacks_are_separate() {
    let t = TestContext::new();
    t.run(args(&["config", "sync"]).stack("dev-1").port(7001)).ok();
    let dev = t.home.join(".oysterun-stacks/dev-1/host/config.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(dev).unwrap()).unwrap();
    assert_eq!(v["port"], 7001);
    assert!(!t.config_path().exists());
    t.run(["--stack", "staging", "config", "sync"]).ok();
    assert!(t.home.join(".oysterun-stacks/staging/host/config.json").exists());
    t.run(["config", "sync", "--stack", "Bad_Name"]).fails_with(2);
    t.run(args(&["config", "sync"]).port(0)).fails_with(2);
}

#[test]
fn config_dir_override_is_used_and_said() {
    let mut t = TestContext::new();
    let cfg_dir = t.path("elsewhere");
    t.extra_env.push(("OYSTERUN_CONFIG_DIR".into(), cfg_dir.display().to_string()));
    let r = t.run(["config", "sync"]).ok();
    r.stderr_has("OYSTERUN_CONFIG_DIR");
    assert!(cfg_dir.join("config.json").exists());
}

#[test]
fn show_redacts_secrets_and_home() {
    let t = TestContext::new();
    t.write_config(&format!(
        r#"{{"auth_token": "tok-SECRET-1", "password_hash": "$2b$SECRET", "nested": {{"api_key": "k-SECRET"}},
            "default_browse_path": "{}/OysterunAgents"}}"#,
        t.home.display()
    ));
    for (args, path) in [
        (vec!["config", "show"], "~/OysterunAgents".to_owned()),
        (vec!["config", "show", "--json"], format!("{}/OysterunAgents", t.home.display())),
    ] {
        let r = t.run(&args).ok();
        assert!(!r.stdout().contains("SECRET"), "{}", r.stdout());
        assert!(r.stdout().contains(&path), "{args:?}: {}", r.stdout());
    }
    let v = t.run(["config", "show", "--json"]).ok().json();
    assert_eq!(v["auth_token"], "<redacted>");
}

#[test]
fn concurrent_saves_of_different_providers_never_lose_an_update() {
    let t = TestContext::new();
    t.write_config(r#"{"keep": true}"#);
    for i in 0..25 {
        let a = format!("/a/{i}/claude");
        let b = format!("/b/{i}/codex");
        let mut c1 = t.cmd();
        let mut c2 = t.cmd();
        let h1 = c1.args(["providers", "set", "claude", &a]).stdout(Stdio::null()).spawn().unwrap();
        let h2 = c2.args(["providers", "set", "codex", &b]).stdout(Stdio::null()).spawn().unwrap();
        assert!(h1.wait_with_output().unwrap().status.success());
        assert!(h2.wait_with_output().unwrap().status.success());
        let cfg = t.read_config();
        assert_eq!(
            (cfg["claude_command"].as_str(), cfg["codex_command"].as_str()),
            (Some(a.as_str()), Some(b.as_str())),
            "round {i}"
        );
        assert_eq!(cfg["keep"], true);
    }
}

#[test]
fn sigkill_mid_write_leaves_the_old_or_the_new_document() {
    let t = TestContext::new();
    t.run(["providers", "set", "claude", "/old/claude"]).ok();
    let mut seen_new = 0;
    for i in 0..40u64 {
        let old = std::fs::read(t.config_path()).unwrap();
        let new_cmd = format!("/new/{i}/claude");
        let mut child = t
            .cmd()
            .args(["providers", "set", "claude", &new_cmd])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(200 + (i * 97) % 1800));
        let _ = child.kill();
        let _ = child.wait();
        let bytes = std::fs::read(t.config_path()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&bytes).expect("never a torn file");
        if v["claude_command"] == new_cmd.as_str() {
            seen_new += 1;
        } else {
            assert_eq!(bytes, old, "neither old nor new");
        }
    }
    // Either outcome is fine; the run exists to have landed between the two.
    eprintln!("{seen_new}/40 writes completed before the kill");
    // A later save still works and leaves no temp file behind.
    t.run(["providers", "set", "claude", "/final/claude"]).ok();
    let names: Vec<_> = std::fs::read_dir(t.home.join(".oysterun"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.contains("oyster-tmp")), "{names:?}");
}

/// Holds `path` locked (flock, as oyster takes it) with a holder record naming this process.
fn hold_lock(path: &std::path::Path) -> nix::fcntl::Flock<std::fs::File> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .unwrap();
    writeln!(f, "pid {} (a stuck writer)", std::process::id()).unwrap();
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| e)
        .unwrap()
}

#[test]
fn the_hosts_in_place_rewrite_between_read_and_rename_is_merged_not_lost() {
    crate::host_writes_and_refusals::a_host_write_while_oyster_waits_is_merged(
        "OYSTER_TEST_PAUSE_BEFORE_RENAME",
        "in place",
    );
}

#[test]
fn a_held_config_lock_makes_a_command_wait_bounded_naming_the_holder_then_exit_1() {
    let t = TestContext::new();
    t.write_config("{}\n");
    let before = snapshot(&t);
    let _held = hold_lock(&t.home.join(".oysterun/config.json.lock"));
    let id = crate::common::provider_ids()[0].clone();
    let t0 = std::time::Instant::now();
    let r = t.run(["providers", "set", &id, "/opt/tools/bin/tool"]).fails_with(1);
    r.stderr_has_all(&[&format!("pid {}", std::process::id()), "config.json.lock"]);
    assert!(t0.elapsed() < Duration::from_secs(30), "not bounded");
    assert_eq!(snapshot(&t), before, "the config was touched");
}
