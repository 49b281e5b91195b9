//! The launch environment and the LaunchAgent plist through the binary (docs/behaviour.md §3, §4).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::common::{args, free_port, plistlib, real_node, TestContext};
use crate::common::{has_all, has_none};

fn ctx_with_root(home_name: &str) -> (TestContext, PathBuf) {
    let t = TestContext::with_home_name(home_name);
    let root = t.fixture_root("root");
    (t, root)
}

/// `agent regenerate --no-restart --root ROOT --node-bin NODE --port PORT`: production, on a
/// port from the allocator (8802 may be held on the machine running the tests).
fn regen_args(root: &Path, node: &Path, port: u16) -> Vec<String> {
    args(&["agent", "regenerate", "--no-restart"]).root(root).node(node).port(port).into()
}

fn print(t: &TestContext, root: &Path, extra: &[&str]) -> crate::common::Run {
    t.run(args(&["agent", "print"]).host(root).extra(extra))
}

#[test]
fn plistlib_agrees_on_every_value_with_hostile_paths() {
    let (mut t, root) = ctx_with_root("we & <they> \"q\" 'x' y");
    let claude = t.fake_exe(&t.home.join(".local/bin/claude"));
    let codex_dir = t.path("odd & <dir>");
    t.path_dirs.push(codex_dir.clone());
    t.fake_exe(&codex_dir.join("codex"));
    let out = print(&t, &root, &[]).ok();
    let v = plistlib(&out.0.stdout);
    let node = real_node();
    let node_dir = node.parent().unwrap().to_str().unwrap().to_owned();
    let path = crate::common::generated_path(vec![
        node_dir.clone(),
        claude.parent().unwrap().display().to_string(),
        codex_dir.display().to_string(),
    ]);
    let log = t.home.join(".oysterun/logs/oysterun-host.log");
    assert_eq!(
        v,
        json!({
            "Label": "com.oysterun.host",
            "LimitLoadToSessionType": ["Aqua", "Background", "LoginWindow", "StandardIO", "System"],
            // The launch program, by the path oyster was run as (the tests run the binary
            // itself; `launcher` covers links).
            "ProgramArguments": [crate::common::BIN, "host", "exec", "--stack", "production"],
            "WorkingDirectory": root.join("host-service"),
            "EnvironmentVariables": {
                "OYSTERUN_NODE_BIN": node,
                "PATH": path.join(":"),
                "OYSTERUN_CONFIG_DIR": t.home.join(".oysterun"),
                "OYSTERUN_PORT": "8802",
                "OYSTERUN_REPO_ROOT": root,
                "OYSTERUN_ROUTEC_STACK_NAME": "production",
                "OYSTERUN_ROUTEC_STACK_ROOT": t.home.join(".oysterun"),
                "OYSTERUN_ROUTEC_MATRIX_STORAGE_PATH": t.home.join(".oysterun/matrix/homeserver.db"),
            },
            "RunAtLoad": true,
            "KeepAlive": true,
            "ThrottleInterval": 10,
            "ProcessType": "Interactive",
            "StandardOutPath": log,
            "StandardErrorPath": log,
        })
    );
    let text = out.stdout();
    // The hostile HOME is in the text only escaped: `&` and `<` never appear raw (`>` and
    // quotes may, inside a string element).
    has_all(&text, &["/we &amp; &lt;they"]);
    has_none(&text, &["/we & ", "<they"]);
    assert!(text.ends_with("</plist>\n"));
    assert!(!t.home.join("Library").exists(), "print has no side effects");
    assert!(!t.config_path().exists(), "print writes no config");
    t.assert_nothing_executed();
}

#[test]
fn keys_are_sorted_and_same_inputs_give_same_bytes() {
    let (t, root) = ctx_with_root("home");
    let a = print(&t, &root, &[]).ok().0.stdout;
    let b = print(&t, &root, &[]).ok().0.stdout;
    assert_eq!(a, b);
    let text = String::from_utf8(a).unwrap();
    let keys: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("\t<key>"))
        .map(|l| l.trim().trim_start_matches("<key>").trim_end_matches("</key>"))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert!(text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist"));
}

#[test]
fn secrets_and_the_callers_environment_never_reach_the_plist() {
    let (mut t, root) = ctx_with_root("home");
    t.write_config(r#"{"auth_token": "SECRET-TOKEN", "password_hash": "SECRET-HASH"}"#);
    let secret_dir = t.path("SECRET-DIR");
    std::fs::create_dir_all(&secret_dir).unwrap();
    t.path_dirs.push(secret_dir);
    t.extra_env.push(("ANTHROPIC_API_KEY".into(), "SECRET-KEY".into()));
    t.extra_env.push(("NODE_OPTIONS".into(), "--require SECRET-HOOK".into()));
    let out = print(&t, &root, &[]).ok();
    let text = out.stdout() + &out.stderr();
    has_none(&text, &["SECRET"]);
    let node = real_node();
    let args = regen_args(&root, &node, free_port());
    let r = t.run(&args).ok();
    assert!(!(r.stdout() + &r.stderr()).contains("SECRET"));
    let plist =
        std::fs::read_to_string(t.home.join("Library/LaunchAgents/com.oysterun.host.plist"))
            .unwrap();
    has_none(&plist, &["SECRET"]);
}

#[test]
fn unsafe_path_entries_are_errors_never_written() {
    // `:` reaches the generator through a manual command, a line break through discovery on
    // PATH, and both through a HOME whose ~/.local/bin holds the provider.
    for (how, bad_dir) in
        [("manual", "has:colon"), ("path", "has\nnewline"), ("home", "home:colon")]
    {
        let (mut t, root) =
            if how == "home" { ctx_with_root(bad_dir) } else { ctx_with_root("home") };
        let dir = match how {
            "home" => t.home.join(".local/bin"),
            _ => t.path(bad_dir),
        };
        t.fake_exe(&dir.join("claude"));
        match how {
            "manual" => {
                // `providers set` refuses it where it enters (docs/behaviour.md §9)…
                t.set_provider("claude", &dir.join("claude"))
                    .fails_with(2)
                    .stderr_has_all(&["`:`", "PATH"]);
                assert!(!t.config_path().exists(), "nothing saved");
                // …and a hand-edited config that holds it is refused by the generator.
                t.write_config(
                    &serde_json::json!({
                        "claude_command": dir.join("claude"),
                        "provider_command_intent": {"claude": "manual"},
                    })
                    .to_string(),
                );
            }
            "path" => t.path_dirs.push(dir.clone()),
            _ => {}
        }
        let r = print(&t, &root, &[]).fails_with(2);
        assert!(r.stderr().contains("PATH"), "{how}: {}", r.stderr());
        let node = real_node();
        t.run(regen_args(&root, &node, free_port())).fails_with(2);
        assert!(!t.home.join("Library/LaunchAgents").join("com.oysterun.host.plist").exists());
    }
}

#[test]
fn provider_in_the_node_directory_appears_once() {
    let (t, root) = ctx_with_root("home");
    let nodedir = t.path("nodedir");
    std::fs::create_dir_all(&nodedir).unwrap();
    std::os::unix::fs::symlink(real_node(), nodedir.join("node")).unwrap();
    t.fake_exe(&nodedir.join("claude"));
    t.set_provider("claude", &nodedir.join("claude")).ok();
    let r = t.run(args(&["agent", "print"]).root(&root).node(nodedir.join("node"))).ok();
    let v = plistlib(&r.0.stdout);
    let path = v["EnvironmentVariables"]["PATH"].as_str().unwrap().to_owned();
    assert_eq!(path.matches(nodedir.to_str().unwrap()).count(), 1, "{path}");
    assert!(path.starts_with(nodedir.to_str().unwrap()));
}

/// PATH entries of the plist `agent print` writes now.
fn plist_path_entries(t: &TestContext, root: &Path) -> Vec<String> {
    let v = plistlib(&print(t, root, &[]).ok().0.stdout);
    v["EnvironmentVariables"]["PATH"].as_str().unwrap().split(':').map(str::to_owned).collect()
}

#[test]
fn disabled_and_broken_manual_providers_add_no_path_entry() {
    // Both providers sit on the caller's PATH, so discovery finds them: enabled, each one's
    // directory is a plist PATH entry. The caller's PATH itself never reaches the plist, so
    // these entries can only come from the providers.
    let (mut t, root) = ctx_with_root("home");
    let claude_dir = t.path("claude-dir");
    let codex_dir = t.path("codex-dir");
    t.fake_exe(&claude_dir.join("claude"));
    t.fake_exe(&codex_dir.join("codex"));
    t.path_dirs.push(claude_dir.clone());
    t.path_dirs.push(codex_dir.clone());
    let dir = |d: &Path| d.display().to_string();
    let path = plist_path_entries(&t, &root);
    assert!(
        path.contains(&dir(&claude_dir)) && path.contains(&dir(&codex_dir)),
        "enabled providers are on PATH: {path:?}"
    );

    // Disabled: its directory goes, although discovery would still find the binary there.
    t.run(["providers", "set", "claude", ""]).ok();
    let path = plist_path_entries(&t, &root);
    assert!(!path.contains(&dir(&claude_dir)), "{path:?}");
    assert!(path.contains(&dir(&codex_dir)), "only the disabled one goes");

    // A broken manual command: neither its own directory nor the binary discovery would have
    // found instead.
    t.run(["providers", "set", "codex", "/nowhere/codex"]).ok();
    let path = plist_path_entries(&t, &root);
    assert!(
        !path.contains(&dir(&codex_dir)) && !path.iter().any(|p| p.starts_with("/nowhere")),
        "{path:?}"
    );
    t.assert_nothing_executed();
}

fn fake_node(t: &TestContext, name: &str, version: &str, mode: u32) -> PathBuf {
    let p = t.path(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\necho ran >> '{}'\necho {version}\n",
            t.path(&format!("{name}.runs")).display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

#[test]
fn node_too_old_missing_or_not_executable_is_a_clear_error() {
    let (mut t, root) = ctx_with_root("home");
    let r = root.to_str().unwrap();
    let old = fake_node(&t, "old/node", "v18.19.0", 0o755);
    t.run(args(&["agent", "print"]).root(r).node(&old)).fails_with(2).stderr_has_all(&[
        "v18.19.0",
        old.to_str().unwrap(),
        "20",
    ]);
    let noexec = fake_node(&t, "noexec/node", "v20.0.0", 0o644);
    let garbage = fake_node(&t, "garbage/node", "hello", 0o755);
    for (node, expect) in [
        (noexec, "not executable"),
        (PathBuf::from("/nowhere/node"), "does not exist"),
        (garbage, "not a Node version"),
    ] {
        let n = node.to_str().unwrap();
        let e = t.run(args(&["agent", "print"]).root(r).node(n)).fails_with(2).stderr();
        assert!(e.contains(expect), "{n}: {e}");
    }
    // No node anywhere (PATH empty, nothing in the fallback dirs under this HOME).
    if !Path::new("/opt/homebrew/bin/node").exists() && !Path::new("/usr/local/bin/node").exists() {
        t.run(args(&["agent", "print"]).root(r))
            .fails_with(1)
            .stderr_has_all(&["no `node` was found", "--node-bin"]);
    }
    // OYSTERUN_NODE_BIN invalid: an error, never a silent fallback to the node on PATH.
    t.path_dirs.push(real_node().parent().unwrap().to_owned());
    t.extra_env.push(("OYSTERUN_NODE_BIN".into(), old.display().to_string()));
    t.run(args(&["agent", "print"]).root(r))
        .fails_with(2)
        .stderr_has_all(&["OYSTERUN_NODE_BIN", "v18.19.0"]);
}

/// A version-manager shim (asdf, nodenv: a `#!` script that runs whichever Node is selected)
/// never changes when the selected Node does, so its version is never cached: switched to
/// v18, the next regenerate refuses it, as `agent print` does.
#[test]
fn a_shim_node_is_asked_every_time_so_a_switch_to_an_old_node_is_refused() {
    let (t, root) = ctx_with_root("home");
    let selected = t.path("shim/selected-version");
    let runs = t.path("shim/node.runs");
    let node = t.path("shim/node");
    std::fs::create_dir_all(node.parent().unwrap()).unwrap();
    std::fs::write(&selected, "v22.1.0\n").unwrap();
    std::fs::write(
        &node,
        format!("#!/bin/sh\necho ran >> '{}'\ncat '{}'\n", runs.display(), selected.display()),
    )
    .unwrap();
    std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o755)).unwrap();
    let args = regen_args(&root, &node, free_port());
    t.run(&args).ok();
    t.run(&args).ok();
    let count = || std::fs::read_to_string(&runs).map(|s| s.lines().count()).unwrap_or(0);
    assert_eq!(count(), 2, "a script node is asked every time");
    std::fs::write(&selected, "v18.19.0\n").unwrap();
    t.run(&args).fails_with(2).stderr_has_all(&["v18.19.0", "20"]);
}

#[test]
fn regenerate_writes_only_on_change_atomically_0644() {
    let (t, root) = ctx_with_root("home");
    let node = real_node();
    let args = regen_args(&root, &node, free_port());
    let r = t.run(&args).ok();
    r.stdout_has("written");
    let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.plist");
    let m = std::fs::metadata(&plist).unwrap();
    assert_eq!(m.mode() & 0o777, 0o644);
    assert!(t.home.join(".oysterun/logs").is_dir(), "log dir created first");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let r = t.run(&args).ok();
    r.stdout_has("unchanged");
    let m2 = std::fs::metadata(&plist).unwrap();
    assert_eq!((m.ino(), m.mtime(), m.mtime_nsec()), (m2.ino(), m2.mtime(), m2.mtime_nsec()));
    // The file equals `agent print`.
    let printed = t.run(["agent", "print"]).ok().0.stdout;
    assert_eq!(
        printed,
        std::fs::read(&plist).unwrap(),
        "print uses the installed pins and matches the file"
    );
    // A new provider changes PATH: rewritten.
    t.fake_exe(&t.home.join("bin/codex"));
    let dry = t.run(["agent", "regenerate", "--dry-run"]).ok().stdout();
    has_all(&dry, &["-\t\t<string>", "+\t\t<string>", "/bin:"]);
    assert_eq!(std::fs::metadata(&plist).unwrap().ino(), m.ino(), "dry run writes nothing");
    t.run(["agent", "regenerate", "--no-restart"]).ok();
    assert!(std::fs::read_to_string(&plist)
        .unwrap()
        .contains(&t.home.join("bin").display().to_string()));
}

#[test]
fn an_unchanged_plist_with_a_mode_launchd_refuses_is_fixed() {
    let (t, root) = ctx_with_root("home");
    let args = regen_args(&root, &real_node(), free_port());
    t.run(&args).ok();
    let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.plist");
    std::fs::set_permissions(&plist, std::fs::Permissions::from_mode(0o666)).unwrap();
    let r = t.run(&args).ok();
    r.stdout_has("written");
    assert_eq!(std::fs::metadata(&plist).unwrap().mode() & 0o777, 0o644);
}

#[test]
fn a_symlinked_plist_is_refused() {
    let (t, root) = ctx_with_root("home");
    let agents = t.home.join("Library/LaunchAgents");
    std::fs::create_dir_all(&agents).unwrap();
    let target = t.path("elsewhere.plist");
    std::fs::write(&target, "keep").unwrap();
    std::os::unix::fs::symlink(&target, agents.join("com.oysterun.host.plist")).unwrap();
    let node = real_node();
    let r = t.run(regen_args(&root, &node, free_port()));
    assert_ne!(r.code(), 0);
    r.stderr_has("symlink");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
}

#[test]
fn root_discovery_and_its_errors() {
    let (mut t, root) = ctx_with_root("home");
    let node = real_node();
    let n = node.to_str().unwrap();
    t.run(args(&["agent", "print"]).node(n).root(t.path("nothing")))
        .fails_with(2)
        .stderr_has_all(&["host-service/server.mjs", "--root"]);
    // Not found on the machine: exit 1, as no `node` found is (docs/behaviour.md "Exit codes").
    t.run(args(&["agent", "print"]).node(n)).fails_with(1).stderr_has_all(&["OYSTERUN_ROOT"]);
    t.extra_env.push(("OYSTERUN_ROOT".into(), root.display().to_string()));
    let v = plistlib(&t.run(args(&["agent", "print"]).node(n)).ok().0.stdout);
    assert_eq!(v["EnvironmentVariables"]["OYSTERUN_REPO_ROOT"], json!(root));
}

#[test]
fn custom_stacks_need_a_port_once() {
    let (t, root) = ctx_with_root("home");
    let base = args(&["agent", "print"]).host(&root).stack("dev");
    t.run(base.clone()).fails_with(2).stderr_has_all(&["--port"]);
    t.run(args(&["config", "sync"]).stack("dev").port(18001)).ok();
    let v = plistlib(&t.run(base).ok().0.stdout);
    assert_eq!(v["Label"], "com.oysterun.host.dev");
    assert_eq!(v["EnvironmentVariables"]["OYSTERUN_PORT"], "18001");
    assert_eq!(
        v["ProgramArguments"],
        json!([crate::common::BIN, "host", "exec", "--stack", "dev"])
    );
    let stack_root = t.home.join(".oysterun-stacks/dev");
    assert_eq!(v["EnvironmentVariables"]["OYSTERUN_ROUTEC_STACK_NAME"], "dev");
    assert_eq!(v["EnvironmentVariables"]["OYSTERUN_ROUTEC_STACK_ROOT"], json!(stack_root));
    assert_eq!(
        v["EnvironmentVariables"]["OYSTERUN_ROUTEC_MATRIX_STORAGE_PATH"],
        json!(stack_root.join("matrix/homeserver.db"))
    );
}

/// Oysterun is installed with `npm install -g oysterun`: with no --root, OYSTERUN_ROOT or
/// installed plist, the root is the `oysterun` package in the pinned Node's global modules
/// (then under `npm_config_prefix`); when nothing holds the Host, every place looked is listed.
#[test]
fn the_root_is_found_in_the_pinned_nodes_global_npm_modules() {
    let mut t = TestContext::new();
    let prefix = t.path("node prefix");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    let node = prefix.join("bin/node");
    std::os::unix::fs::symlink(real_node(), &node).unwrap();
    let n = node.to_str().unwrap();
    let e = t.run(args(&["agent", "print"]).node(n)).fails_with(1).stderr();
    assert!(
        e.contains("node prefix/lib/node_modules/oysterun")
            && e.contains("npm install -g oysterun"),
        "every place looked is listed, with the fix: {e}"
    );
    // npm_config_prefix is searched too.
    let other = t.path("npm prefix");
    let other_root = other.join("lib/node_modules/oysterun");
    std::fs::create_dir_all(other_root.join("host-service")).unwrap();
    std::fs::write(other_root.join("host-service/server.mjs"), "").unwrap();
    t.extra_env.push(("npm_config_prefix".into(), other.display().to_string()));
    let v = plistlib(&t.run(args(&["agent", "print"]).node(n)).ok().0.stdout);
    assert_eq!(v["EnvironmentVariables"]["OYSTERUN_REPO_ROOT"], json!(other_root));
    // The pinned Node's own global modules come first.
    let root = prefix.join("lib/node_modules/oysterun");
    std::fs::create_dir_all(root.join("host-service")).unwrap();
    std::fs::write(root.join("host-service/server.mjs"), "").unwrap();
    let v = plistlib(&t.run(args(&["agent", "print"]).node(n)).ok().0.stdout);
    assert_eq!(v["EnvironmentVariables"]["OYSTERUN_REPO_ROOT"], json!(root));
    assert_eq!(v["WorkingDirectory"], json!(root.join("host-service")));
}
