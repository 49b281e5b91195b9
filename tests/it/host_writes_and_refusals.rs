//! Issue 30 items 4 and 7: the Host's own writes to `config.json` during oyster's write are
//! merged, not lost; and a refused verb writes nothing, settings included.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use crate::common::{args, TestContext};

/// The Host rewrites `config.json` (in place as Node's `writeFileSync` does, or by a rename)
/// while oyster's temp file is being synced (slowed by the debug-build hook, standing in for
/// macOS's full fsync): oyster looks again right before its rename and merges again, so both
/// the Host's key and oyster's change are kept.
#[test]
fn a_hosts_config_write_during_oysters_fsync_is_merged_not_lost() {
    for how in ["in place", "by rename"] {
        a_host_write_while_oyster_waits_is_merged("OYSTER_TEST_SLOW_FSYNC", how);
    }
}

/// `providers set` held at the debug-build hook `hook` (which waits while its marker file
/// exists) while the Host rewrites `config.json` `how` (`in place`, keeping the inode as
/// Node's `writeFileSync` does, or `by rename`): oyster merges again, keeping both the Host's
/// key and its own change, says so, and leaves no temp file.
pub(crate) fn a_host_write_while_oyster_waits_is_merged(hook: &str, how: &str) {
    let mut t = TestContext::new();
    t.write_config("{\n  \"port\": 8802\n}\n");
    let marker = t.path("in-hook");
    t.extra_env.push((hook.into(), marker.display().to_string()));
    let id = crate::common::provider_ids()[0].clone();
    let child = t
        .cmd()
        .args(["providers", "set", &id, "/opt/tools/bin/tool"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !marker.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{hook} {how}: oyster never reached the hook"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let host = b"{\n  \"port\": 8802,\n  \"host_key\": \"written by the Host\"\n}\n";
    let cfg_path = t.config_path();
    if how == "in place" {
        let ino = std::fs::metadata(&cfg_path).unwrap().ino();
        let mut f = std::fs::OpenOptions::new().write(true).truncate(true).open(&cfg_path).unwrap();
        f.write_all(host).unwrap();
        drop(f);
        assert_eq!(std::fs::metadata(&cfg_path).unwrap().ino(), ino);
    } else {
        let tmp = cfg_path.with_file_name("config.json.host-tmp");
        std::fs::write(&tmp, host).unwrap();
        std::fs::rename(&tmp, &cfg_path).unwrap();
    }
    std::fs::remove_file(&marker).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{hook} {how}: {stderr}");
    let cfg = t.read_config();
    assert_eq!(
        cfg["host_key"],
        json!("written by the Host"),
        "{hook} {how}: the Host's write was lost: {cfg}"
    );
    assert_eq!(cfg[format!("{id}_command")], json!("/opt/tools/bin/tool"), "{hook} {how}: {cfg}");
    assert!(stderr.contains("merging again"), "{hook} {how}: {stderr}");
    // No temp file of oyster's is left.
    let names: Vec<String> = std::fs::read_dir(cfg_path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.contains("oyster-tmp")), "{names:?}");
}

/// Every regular file and symlink under HOME with its bytes (or target), and every directory,
/// except what a running Host or the audit trail appends to (`logs/`).
fn files(home: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    crate::common::tree(home)
        .into_iter()
        .filter(|(p, _)| !p.components().any(|c| c.as_os_str() == "logs"))
        .map(|(p, e)| (p, e.content))
        .collect()
}

/// Issue 30 item 7: a verb that takes `--port` (or `--root`, `--node-bin`) and is refused writes
/// nothing — the config keeps its port, so the next plain `host start` does not move the Host
/// to the refused port. Each verb against each refusal it has, every file byte-identical.
#[test]
fn a_refused_verb_with_a_setting_leaves_every_file_byte_identical() {
    use crate::common::{free_port, real_node};
    let mut t = TestContext::new();
    t.use_sim();
    let root = t.fixture_root("root");
    let other_root = t.fixture_root("other-root");
    let node = real_node().display().to_string();
    let (p0, pl, pi, q) = (
        free_port().to_string(),
        free_port().to_string(),
        free_port().to_string(),
        free_port().to_string(),
    );
    let base = |verb: &[&str], stack: &str| -> Vec<String> {
        verb.iter().chain(&["--stack", stack]).map(|s| (*s).to_owned()).collect()
    };
    let node_arg = ["--node-bin", node.as_str()];
    let root_arg = ["--root", root.to_str().unwrap()];
    let with = |mut v: Vec<String>, extra: &[&str]| {
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v
    };
    // The settings each verb is given: another port, another root, and the port the direct
    // Host holds (refused as held by another process, for the other stacks).
    let other_node = t.path("other-bin/node");
    std::fs::create_dir_all(other_node.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(real_node(), &other_node).unwrap();
    let settings: [&[&str]; 4] = [
        &["--port", &q],
        &["--root", other_root.to_str().unwrap()],
        &["--node-bin", other_node.to_str().unwrap()],
        &["--port", &p0],
    ];
    let verbs: [&[&str]; 6] = [
        &["setup", "--yes", "--no-install-providers"],
        &["host", "start"],
        &["start"],
        &["restart"],
        &["install"],
        &["agent", "regenerate"],
    ];

    // Refusal 1: a Host started directly runs ("already running" for host start; a direct
    // Host for the launchd verbs).
    t.run(with(
        base(&["host", "start"], "direct"),
        &[&root_arg[..], &node_arg, &["--port", &p0]].concat(),
    ))
    .ok();
    // Refusal 2: the Host log is a symlink.
    t.run(args(&["config", "sync"]).stack("linked").port(&pl)).ok();
    let linked_logs = t.home.join(".oysterun-stacks/linked/logs");
    std::fs::create_dir_all(&linked_logs).unwrap();
    std::fs::write(t.path("elsewhere.log"), "x\n").unwrap();
    std::os::unix::fs::symlink(t.path("elsewhere.log"), linked_logs.join("oysterun-host.log"))
        .unwrap();
    // Refusal 3: the LaunchAgent is loaded (for host start) — an installed stack.
    t.run(with(
        base(&["install"], "loaded"),
        &[&root_arg[..], &node_arg, &["--port", &pi, "--settle-ms", "200"]].concat(),
    ))
    .ok();

    let mut failures = vec![];
    for stack in ["direct", "linked", "loaded"] {
        for verb in verbs {
            for setting in settings {
                // The launchd verbs on the installed stack are not refused: they apply it.
                if stack == "loaded" && verb != ["host", "start"] && setting[1] != p0 {
                    continue;
                }
                let mut args = with(base(verb, stack), setting);
                if setting[0] != "--root" {
                    args.extend(root_arg.map(String::from));
                }
                if setting[0] != "--node-bin" {
                    args.extend(node_arg.map(String::from));
                }
                let before = files(&t.home);
                let r = t.run(&args);
                let after = files(&t.home);
                if r.code() == 0 || r.stderr().contains("Usage: oyster") {
                    failures.push(format!(
                        "{args:?} was not refused by the verb (exit {}):\n{}{}",
                        r.code(),
                        r.stdout(),
                        r.stderr()
                    ));
                    continue;
                }
                if before != after {
                    let changed: Vec<_> = after
                        .iter()
                        .filter(|(p, c)| before.get(*p) != Some(c))
                        .map(|(p, c)| format!("{}: {}", p.display(), String::from_utf8_lossy(c)))
                        .chain(
                            before
                                .keys()
                                .filter(|p| !after.contains_key(*p))
                                .map(|p| format!("{} removed", p.display())),
                        )
                        .collect();
                    failures.push(format!(
                        "{stack}: {args:?} (exit {}) changed {changed:#?}\nstderr: {}",
                        r.code(),
                        r.stderr()
                    ));
                }
            }
        }
    }
    // The direct Host still runs on its port.
    let cfg: serde_json::Value = serde_json::from_slice(
        &std::fs::read(t.home.join(".oysterun-stacks/direct/host/config.json")).unwrap(),
    )
    .unwrap();
    t.run(["host", "stop", "direct"]).ok();
    t.run(["uninstall", "loaded"]).ok();
    t.wait_no_processes();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert_eq!(cfg["port"].to_string(), p0, "{cfg}");
}
