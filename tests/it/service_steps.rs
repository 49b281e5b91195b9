//! The steps Oysterun 1.5.3's `oysterun_release_service.sh` ran around a service start, kept
//! by oyster (issue 22, item 2): the login QR after a verified start/restart (and setup's
//! start) — on a terminal or with `--qr`, never with `--no-qr` — and, for `restart
//! --restore-sessions`, the restore preparation before the restart. Both through the process
//! door: the pinned Node, the root as working directory, the stack's generated environment
//! (nothing of the caller's), no shell. Tested with a fixture root whose entry points record
//! how they were called.

use std::path::{Path, PathBuf};

use crate::common::has_none;
use crate::common::{install_args, real_node, Stack};

const QR: &str = "host-service/setup.mjs";
const RESTORE: &str = "host-service/cli/prepare-restart-restore.mjs";

/// A recording entry point: appends one JSON line (script, argv, node, cwd, env, the pid file
/// the running Host wrote) to `<root>/calls.jsonl`; exits 3 when `<root>/<name>.fail` exists.
fn recorder(root: &Path, rel: &str, pid_file: &Path) {
    let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
    let js = format!(
        r#"import fs from "node:fs";
let pid = null;
try {{ pid = fs.readFileSync({pid:?}, "utf8").trim(); }} catch {{}}
fs.appendFileSync({log:?}, JSON.stringify({{
  script: {name:?}, argv: process.argv.slice(2), node: process.execPath,
  cwd: process.cwd(), env: process.env, pid_file: pid }}) + "\n");
if (fs.existsSync({fail:?})) {{ console.error("simulated failure"); process.exit(3); }}
console.log("QR for port " + process.env.OYSTERUN_PORT);
"#,
        pid = pid_file.display().to_string(),
        log = root.join("calls.jsonl").display().to_string(),
        fail = root.join(format!("{name}.fail")).display().to_string(),
    );
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, js).unwrap();
}

fn calls(root: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(root.join("calls.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Stack `qr` installed through the simulator from a root with both recording entry points;
/// the caller's environment holds a variable the steps must not see.
fn installed() -> Stack {
    let mut s = Stack::new("qr");
    s.t.extra_env.push(("CALLER_SECRET_ENV".into(), "from-the-caller".into()));
    let pid_file = s.stack_dir().join("run/oysterun-host-qr.pid");
    recorder(&s.root, QR, &pid_file);
    recorder(&s.root, RESTORE, &pid_file);
    s.t.run(install_args("qr", s.port, &s.root).node(real_node()).settle(200)).ok();
    s
}

/// The Host's pid, from `status qr --json`.
fn pid(s: &Stack) -> u64 {
    s.t.run(["status", "qr", "--json"]).json()["pid"].as_u64().unwrap()
}

/// The call was made as the 1.5.3 script made it, through oyster's door.
#[track_caller]
fn as_the_script_did(s: &Stack, call: &serde_json::Value) {
    let env = &call["env"];
    assert_eq!(
        env["OYSTERUN_CONFIG_DIR"].as_str(),
        Some(s.t.home.join(".oysterun-stacks/qr/host").to_str().unwrap()),
        "{call}"
    );
    assert_eq!(env["OYSTERUN_PORT"], s.port.to_string(), "{call}");
    assert!(env.get("CALLER_SECRET_ENV").is_none(), "the caller's environment leaked: {call}");
    assert_eq!(call["cwd"], s.root.to_str().unwrap(), "{call}");
    assert_eq!(
        PathBuf::from(call["node"].as_str().unwrap()),
        real_node().canonicalize().unwrap(),
        "the pinned Node: {call}"
    );
}

#[test]
fn the_login_qr_follows_a_verified_restart_only_when_wanted() {
    let s = installed();
    // Piped, no flag: no QR (a script's output stays the restart's).
    s.t.run(["restart", "qr", "--settle-ms", "200"]).ok();
    assert!(calls(&s.root).is_empty(), "{:?}", calls(&s.root));
    // --qr: printed after the Host verified.
    let r = s.t.run(["restart", "qr", "--qr", "--settle-ms", "200"]).ok();
    let out = r.stdout();
    let verified = out.find("Host verified").unwrap();
    let qr = out.find(&format!("QR for port {}", s.port)).expect(&out);
    assert!(verified < qr, "{out}");
    // Its wait is said before it begins, with its bound.
    assert!(
        r.stderr()
            .contains("waiting for the login QR (host-service/setup.mjs --show-qr) (up to 30 s)"),
        "{}",
        r.stderr()
    );
    let c = calls(&s.root);
    assert_eq!(c.len(), 1);
    assert_eq!(
        (c[0]["script"].as_str(), &c[0]["argv"]),
        (Some("setup.mjs"), &serde_json::json!(["--show-qr"]))
    );
    as_the_script_did(&s, &c[0]);
    // On a terminal by default, and --no-qr turns it off there (the last of the two wins).
    let r = s.t.pty(b"", ["start", "qr", "--settle-ms", "200"]);
    assert_eq!(r["code"], 0, "{r}");
    assert!(r["output"].as_str().unwrap().contains("QR for port"), "{r}");
    assert_eq!(calls(&s.root).len(), 2);
    let r = s.t.pty(b"", ["restart", "qr", "--no-qr", "--settle-ms", "200"]);
    assert_eq!(r["code"], 0, "{r}");
    let r2 = s.t.pty(b"", ["restart", "qr", "--qr", "--no-qr", "--settle-ms", "200"]);
    assert_eq!(r2["code"], 0, "{r2}");
    assert_eq!(calls(&s.root).len(), 2, "{r}");

    // A root that shows no QR: one line in oyster's words (never the entry point's advice
    // about its own flags, nor `oyster qr`, which would fail the same way); the verified
    // restart still succeeds.
    std::fs::write(s.root.join("setup.mjs.fail"), "").unwrap();
    let r = s.t.run(["restart", "qr", "--qr", "--settle-ms", "200"]).ok();
    let err = r.stderr();
    let qr_lines: Vec<&str> =
        err.lines().filter(|l| l.contains("QR") && !l.contains("waiting for")).collect();
    has_none(&err, &["simulated failure"]);
    assert_eq!(qr_lines.len(), 1, "{err}");
    assert!(
        qr_lines[0].contains("no login QR for this Host (host-service/setup.mjs --show-qr shows none: it exited 3); log in at http://127.0.0.1:"),
        "{err}"
    );
    // A root without the entry point: skipped with one note.
    std::fs::remove_file(s.root.join(QR)).unwrap();
    let r = s.t.run(["restart", "qr", "--qr", "--settle-ms", "200"]).ok();
    let err = r.stderr();
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("no login QR")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    s.t.run(["uninstall", "qr"]).ok();
}

#[test]
fn restore_sessions_is_prepared_before_the_restart_and_never_fails_it() {
    let s = installed();
    let old = pid(&s);
    let r = s.t.run(["restart", "qr", "--restore-sessions", "--settle-ms", "200"]).ok();
    let new = pid(&s);
    assert_ne!(old, new);
    let c = calls(&s.root);
    assert_eq!(c.len(), 1, "no QR without a terminal: {c:?}");
    assert_eq!(c[0]["script"], "prepare-restart-restore.mjs");
    assert_eq!(c[0]["argv"], serde_json::json!([]));
    assert_eq!(
        c[0]["env"]["OYSTERUN_RESTART_RESTORE_TRIGGER"],
        "cli_service_restart_restore_sessions"
    );
    as_the_script_did(&s, &c[0]);
    // Before the restart: it saw the old Host's pid file.
    assert_eq!(c[0]["pid_file"], old.to_string(), "{}", r.stdout());
    // Without the flag it does not run.
    s.t.run(["restart", "qr", "--settle-ms", "200"]).ok();
    assert_eq!(calls(&s.root).len(), 1);
    // A failing preparation is named, and the restart still goes on and verifies.
    std::fs::write(s.root.join("prepare-restart-restore.mjs.fail"), "").unwrap();
    let before = pid(&s);
    let r = s.t.run(["restart", "qr", "--restore-sessions", "--settle-ms", "200"]).ok();
    r.stderr_has("preparing the restart restore failed");
    r.stdout_has("Host verified");
    assert_ne!(before, pid(&s));
    // A root without it: one note, the restart goes on.
    std::fs::remove_file(s.root.join(RESTORE)).unwrap();
    let r = s.t.run(["restart", "qr", "--restore-sessions", "--settle-ms", "200"]).ok();
    r.stderr_has("sessions not prepared for restore");
    s.t.run(["uninstall", "qr"]).ok();
}

#[test]
fn restore_sessions_runs_only_after_every_refusal_and_only_for_this_stacks_own_host() {
    let s = installed();
    let port = s.port;
    // 1. A symlinked Host log refuses the restart: the running Host is not prepared for a
    //    restart that never comes.
    let log = s.t.home.join(".oysterun-stacks/qr/logs/oysterun-host.log");
    let saved = s.t.path("saved.log");
    std::fs::rename(&log, &saved).unwrap();
    std::os::unix::fs::symlink(&saved, &log).unwrap();
    s.t.run(["restart", "qr", "--restore-sessions", "--settle-ms", "200"]).fails_with(2);
    assert!(calls(&s.root).is_empty(), "prepared before a refusal");
    std::fs::remove_file(&log).unwrap();
    std::fs::rename(&saved, &log).unwrap();
    // 2. Stopped, with another program on its port: refused, and that program is never
    //    sent the Host's token.
    s.t.run(["stop", "qr"]).ok();
    let squatter = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let r = s.t.run(["restart", "qr", "--restore-sessions", "--settle-ms", "200"]).fails_with(1);
    r.stderr_has(&format!("port {port}"));
    assert!(calls(&s.root).is_empty(), "the step ran for a port another holds");
    drop(squatter);
    s.t.run(["uninstall", "qr"]).ok();
}
