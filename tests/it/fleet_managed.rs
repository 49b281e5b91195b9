//! Fleets of Macs (issue 32), managed defaults: values an organization forces through a
//! `com.apple.ManagedClient.preferences` payload (on disk in /Library/Managed Preferences; here
//! through `OYSTER_MANAGED_PREFERENCES_DIR`) win over config.json, a command that would change
//! one is refused without writing anything, and status, config show, doctor, providers status
//! and inventory say what is managed.

use std::path::{Path, PathBuf};

use crate::common::{args, free_port, write_binary_plist, TestContext};
use crate::common::{has_all, has_none};

fn dict(pairs: Vec<(&str, plist::Value)>) -> plist::Value {
    let mut d = plist::Dictionary::new();
    for (k, v) in pairs {
        d.insert(k.into(), v);
    }
    plist::Value::Dictionary(d)
}

/// The managed preferences file's name, in the all-users directory and in each user's.
const FILE: &str = "com.oysterun.oyster.plist";

/// This user's login name: the folder of their own managed file.
fn user_name() -> String {
    nix::unistd::User::from_uid(nix::unistd::getuid()).unwrap().unwrap().name
}

/// The `managed preferences` check of `doctor dev --json`.
fn managed_check(t: &TestContext) -> serde_json::Value {
    let doctor = t.run(["doctor", "dev", "--json"]).json();
    crate::common::doctor_check(&doctor, "managed preferences")
}

/// The element of the JSON array `list` whose `key` is `want`; fails showing the list if none.
fn find<'a>(list: &'a serde_json::Value, key: &str, want: &str) -> &'a serde_json::Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|e| e[key] == want)
        .unwrap_or_else(|| panic!("no {key} {want:?} in {list}"))
}

struct Managed {
    t: TestContext,
    dir: PathBuf,
    forced: u16,
    mine: u16,
    dev_config: PathBuf,
}

/// A HOME whose `dev` stack records port `mine`; the all-users managed file forces dev's
/// port and disables codex; this user's own file forces the agent folder.
impl Managed {
    /// Writes this user's own managed file.
    fn write_mine(&self, settings: plist::Value) {
        write_binary_plist(&self.dir.join(user_name()).join(FILE), settings);
    }
}

fn managed() -> Managed {
    let mut t = TestContext::new();
    let dir = t.path("Managed Preferences");
    t.extra_env.push(("OYSTER_MANAGED_PREFERENCES_DIR".into(), dir.display().to_string()));
    let (forced, mine) = (free_port(), free_port());
    write_binary_plist(
        &dir.join(FILE),
        dict(vec![
            ("provider_command_intent", dict(vec![("codex", "disabled".into())])),
            ("stacks", dict(vec![("dev", dict(vec![("port", u64::from(forced).into())]))])),
            ("default_browse_path", "/Shared/Everyone".into()),
        ]),
    );
    write_binary_plist(
        &dir.join(user_name()).join(FILE),
        dict(vec![("default_browse_path", "/Shared/Mine".into())]),
    );
    let dev_config = t.home.join(".oysterun-stacks/dev/host/config.json");
    std::fs::create_dir_all(dev_config.parent().unwrap()).unwrap();
    std::fs::write(&dev_config, format!("{{\"port\": {mine}, \"history\": [\"kept\"]}}\n"))
        .unwrap();
    Managed { t, dir, forced, mine, dev_config }
}

#[test]
fn a_forced_value_is_refused_without_writing_and_wins_over_config_json() {
    let m = managed();
    let t = &m.t;
    let before = std::fs::read(&m.dev_config).unwrap();
    let file = m.dir.join("com.oysterun.oyster.plist").display().to_string();
    // Each would change a forced value: exit 1, naming the profile's file, nothing written.
    for args in [
        vec!["config", "sync", "--stack", "dev", "--port", &m.mine.to_string()],
        vec!["providers", "set", "codex", "/usr/bin/true", "--stack", "dev"],
        vec!["providers", "auto", "codex", "--stack", "dev"],
        vec!["setup", "dev", "--port", &m.mine.to_string(), "--dry-run", "--no-install-providers"],
        vec![
            "setup",
            "dev",
            "--agent-folder",
            "/tmp/elsewhere",
            "--dry-run",
            "--no-install-providers",
        ],
    ] {
        let r = t.run(&args).fails_with(1);
        let err = r.stderr();
        assert!(
            err.contains("is managed by your organization") && err.contains("nothing was changed"),
            "{args:?}: {err}"
        );
        assert!(err.contains("com.oysterun.oyster.plist"), "{args:?}: {err}");
        assert!(err.contains("OYSTER_MANAGED_PREFERENCES_DIR is set"), "said: {err}");
        assert_eq!(std::fs::read(&m.dev_config).unwrap(), before, "{args:?} wrote");
    }
    let r = t.run(args(&["config", "sync"]).stack("dev").port(m.mine)).fails_with(1);
    assert!(r.stderr().contains(&file) || r.stderr().contains("Managed Preferences"));

    // The sync writes what is forced into config.json (the Host reads it), the rest kept.
    t.run(["config", "sync", "--stack", "dev"]).ok();
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&m.dev_config).unwrap()).unwrap();
    assert_eq!(doc["port"], m.forced);
    assert_eq!(doc["provider_command_intent"]["codex"], "disabled");
    // The user's own file wins over the all-users file.
    assert_eq!(doc["default_browse_path"], "/Shared/Mine");
    assert_eq!(doc["history"][0], "kept");
    // The forced port itself is no change: accepted.
    t.run(args(&["config", "sync"]).stack("dev").port(m.forced)).ok();
    // Production has no port forced: its --port is the user's.
    t.run(args(&["config", "sync"]).port(m.mine)).ok();
    assert_eq!(t.read_config()["port"], m.mine);
    assert_eq!(t.read_config()["provider_command_intent"]["codex"], "disabled");

    // A forced Oysterun root or Node: a different --root / --node-bin is refused too.
    m.write_mine(dict(vec![
        ("root", "/opt/oysterun".into()),
        ("node_bin", "/opt/node/bin/node".into()),
    ]));
    for flag in ["--root", "--node-bin"] {
        let r = t.run(["agent", "print", "--stack", "dev", flag, "/tmp/elsewhere"]).fails_with(1);
        r.stderr_has(&format!("{flag} /tmp/elsewhere is managed by your organization"));
    }
}

#[test]
fn status_config_show_doctor_providers_and_inventory_mark_managed_values() {
    let m = managed();
    let t = &m.t;
    let show = t.run(["config", "show", "--stack", "dev"]).ok().stdout();
    has_all(&show, &[&format!("# managed: port = {} (forced by ", m.forced)]);
    has_all(&show, &["# managed: provider_command_intent.codex = \"disabled\""]);
    let status = t.run(["status", "dev"]).stdout();
    has_all(&status, &[&format!("managed: port = {}", m.forced)]);
    // `status --json` carries them as data: setting, value, and the file that forces it.
    let st = t.run(["status", "dev", "--json"]).json();
    let port = st["managed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["setting"] == "port")
        .unwrap_or_else(|| panic!("{st}"));
    assert_eq!(port["value"], m.forced, "{st}");
    assert!(port["file"].as_str().unwrap().ends_with("com.oysterun.oyster.plist"), "{st}");
    t.run(["providers", "status", "--stack", "dev"])
        .ok()
        .stdout_has_all(&["managed: provider_command_intent.codex"]);
    let check = managed_check(t);
    assert_eq!(check["status"], "ok");
    assert!(check["detail"].as_str().unwrap().contains("port"), "{check}");

    t.run(["config", "sync", "--stack", "dev"]).ok();
    let inv = t.run(["inventory", "--json"]).ok().json();
    assert_eq!(inv["managed_preferences"]["directory"], m.dir.display().to_string());
    let everyone = crate::common::column(&inv["managed_preferences"]["keys"], "setting");
    assert_eq!(
        everyone,
        ["provider_command_intent.codex", "default_browse_path"],
        "the all-users file's top-level keys: {inv}"
    );
    let home = t.home.display().to_string();
    let me = find(&inv["users"], "home", &home);
    let dev = find(&me["stacks"], "stack", "dev");
    let port = find(&dev["managed"], "setting", "port");
    assert_eq!(port["value"], m.forced);
    assert!(port["file"].as_str().unwrap().ends_with("com.oysterun.oyster.plist"));
    assert_eq!(dev["port"], m.forced);

    // A value oyster cannot use is left out and said; the others still apply.
    write_binary_plist(
        &m.dir.join(FILE),
        dict(vec![
            ("stacks", dict(vec![("dev", dict(vec![("port", "8810".into())]))])),
            ("connection_mode", "sideways".into()),
            ("codex_command", "codex".into()),
            ("provider_command_intent", dict(vec![("codex", "disabled".into())])),
        ]),
    );
    let show = t.run(["config", "show", "--stack", "dev"]).ok().stdout();
    for left_out in [
        "stacks.dev.port: not a port",
        "connection_mode: not direct, cloud-direct, managed or managed-pending",
        "codex_command: not an absolute path",
    ] {
        assert!(show.contains(left_out), "{left_out}: {show}");
    }
    has_all(&show, &["# managed: provider_command_intent.codex"]);
    let check = managed_check(t);
    assert_eq!(check["status"], "warn", "{check}");
}

#[test]
fn the_sample_payload_is_a_managed_preferences_profile_whose_every_key_oyster_applies() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("packaging/mdm/com.oysterun.oyster.mobileconfig");
    let profile = crate::common::plistlib(&std::fs::read(&path).unwrap());
    assert_eq!(profile["PayloadType"], "Configuration");
    let payload = &profile["PayloadContent"][0];
    assert_eq!(payload["PayloadType"], "com.apple.ManagedClient.preferences");
    let settings =
        &payload["PayloadContent"]["com.oysterun.oyster"]["Forced"][0]["mcx_preference_settings"];
    assert!(settings.is_object(), "{profile}");
    // What macOS writes to /Library/Managed Preferences/com.oysterun.oyster.plist.
    let t = {
        let mut t = TestContext::new();
        t.extra_env
            .push(("OYSTER_MANAGED_PREFERENCES_DIR".into(), t.path("mp").display().to_string()));
        t
    };
    // Extracted by Python's plistlib (integers stay integers), written binary as macOS does.
    crate::common::output_ok(
        std::process::Command::new("python3")
            .args([
                "-c",
                "import plistlib, sys, os; p = plistlib.load(open(sys.argv[1], 'rb')); \
                 s = p['PayloadContent'][0]['PayloadContent']['com.oysterun.oyster']['Forced'][0]['mcx_preference_settings']; \
                 os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True); \
                 plistlib.dump(s, open(sys.argv[2], 'wb'), fmt=plistlib.FMT_BINARY)",
            ])
            .arg(&path)
            .arg(t.path("mp/com.oysterun.oyster.plist")),
    );
    let show = t.run(["config", "show", "--stack", "staging"]).ok().stdout();
    has_none(&show, &["left out"]);
    for key in [
        "connection_mode",
        "default_browse_path",
        "provider_command_intent.codex",
        "node_bin",
        "port = 9912",
    ] {
        assert!(show.contains(&format!("# managed: {key}")), "{key}: {show}");
    }
}

#[test]
fn a_forced_root_and_node_are_what_the_plan_runs() {
    let m = managed();
    let t = &m.t;
    let root = t.fixture_root("root");
    let node = crate::common::real_node();
    // Without them (no OYSTERUN_ROOT, no --root, nothing installed) there is no root to plan.
    assert_ne!(t.run(["agent", "print", "--stack", "dev"]).code(), 0);
    m.write_mine(dict(vec![
        ("root", root.display().to_string().into()),
        ("node_bin", node.display().to_string().into()),
    ]));
    let plist = t.run(["agent", "print", "--stack", "dev"]).ok().stdout();
    let doc = crate::common::plistlib(plist.as_bytes());
    let env = &doc["EnvironmentVariables"];
    assert_eq!(env["OYSTERUN_REPO_ROOT"], root.display().to_string(), "{doc}");
    assert_eq!(env["OYSTERUN_NODE_BIN"], node.display().to_string(), "{doc}");
    assert_eq!(env["OYSTERUN_PORT"], m.forced.to_string(), "{doc}");
}

/// A managed-preferences directory whose name is not UTF-8 (the profile's user folder, or the
/// stand-in directory) does not break the JSON documents that name the forcing file: the
/// file is named lossily, the rest of each document is there.
#[test]
fn a_managed_file_whose_path_is_not_utf8_is_named_lossily_in_every_json_document() {
    use std::os::unix::ffi::OsStrExt;
    let t = TestContext::new();
    let dir = t.path("").join(std::ffi::OsStr::from_bytes(b"Managed \xff Prefs"));
    write_binary_plist(&dir.join(FILE), dict(vec![("default_browse_path", "/srv/agents".into())]));
    let run = |args: &[&str]| {
        let out = t.cmd().env("OYSTER_MANAGED_PREFERENCES_DIR", &dir).args(args).output().unwrap();
        serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}\n{}", String::from_utf8_lossy(&out.stderr)))
    };
    let port = free_port().to_string();
    t.run(["config", "sync", "--stack", "dev", "--port", &port]).ok();
    for (args, managed) in [
        (&["agent", "status", "--json", "--stack", "dev"][..], "/managed"),
        (&["list", "--json"][..], "/stacks/0/managed"),
        (&["inventory", "--json"][..], "/managed_preferences/keys"),
    ] {
        let v = run(args);
        let entries = v.pointer(managed).unwrap_or_else(|| panic!("{args:?}: {v}"));
        let e = find(entries, "setting", "default_browse_path");
        assert_eq!(e["value"], "/srv/agents", "{args:?}: {v}");
        assert!(
            e["file"].as_str().unwrap().ends_with("Prefs/com.oysterun.oyster.plist"),
            "{args:?}: {e}"
        );
    }
}
