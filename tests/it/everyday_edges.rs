//! The everyday commands at their seams: a stdout whose reader went away, broken stacks in
//! `list` and `status`, a refused install that must write nothing, `stop` beside a directly
//! started Host, status without launchctl, `host status` of a Host that does not verify, and a
//! `--dry-run` diff that shows real bytes.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use crate::common::{args, free_port, TestContext};
use crate::common::{has_all, has_none};

/// Runs oyster with a stdout pipe whose reading end is already closed (`oyster … | head -1`
/// after `head` exited): every write fails with EPIPE.
fn with_closed_stdout(t: &TestContext, args: &[&str]) -> (i32, String) {
    // nix's pipe(2), not `std::io::pipe` (Rust 1.87): `make check-macos` may type-check with
    // Debian's Rust 1.85.
    let (reader, writer) = nix::unistd::pipe().unwrap();
    drop(reader);
    let out = t.cmd().args(args).stdout(writer).stderr(Stdio::piped()).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_closed_stdout_keeps_the_commands_own_exit_status() {
    let t = TestContext::new();
    // No Host at all: `status` is not verified (exit 1), also when nobody reads its output.
    let (code, err) = with_closed_stdout(&t, &["status"]);
    assert_eq!(code, 1, "{err}");
    has_none(&err, &["panicked"]);
    let (code, err) = with_closed_stdout(&t, &["status", "--json"]);
    assert_eq!(code, 1, "{err}");
    // A read command that succeeded still ends quietly with 0.
    let (code, err) = with_closed_stdout(&t, &["providers", "status"]);
    assert_eq!((code, err.as_str()), (0, ""));
}

fn stack_dir(t: &TestContext, name: &str) -> PathBuf {
    t.home.join(".oysterun-stacks").join(name)
}

/// A stack directory with `host/config.json` holding `text`.
fn stack_with_config(t: &TestContext, name: &str, text: &str) -> PathBuf {
    let host = stack_dir(t, name).join("host");
    std::fs::create_dir_all(&host).unwrap();
    let config = host.join("config.json");
    std::fs::write(&config, text).unwrap();
    config
}

fn row<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["stack"] == name)
        .unwrap_or_else(|| panic!("no row for {name}: {list}"))
}

fn notes(row: &Value) -> Vec<String> {
    row["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_owned()).collect()
}

#[test]
fn list_names_each_broken_stack_with_the_fix_and_leaves_healthy_ones_alone() {
    let t = TestContext::new();
    stack_with_config(&t, "healthy", r#"{"port": 9101}"#);
    stack_with_config(&t, "notjson", "{ nope");
    stack_with_config(&t, "wrongtype", r#"{"port": "x"}"#);
    stack_with_config(&t, "bigport", r#"{"port": 70000}"#);
    let fifo = stack_with_config(&t, "fifo", "");
    std::fs::remove_file(&fifo).unwrap();
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let dir = stack_with_config(&t, "dirconf", "");
    std::fs::remove_file(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    // `host` (the config dir) a plain file, in a stack that has run state.
    let plain = stack_dir(&t, "plainhost");
    std::fs::create_dir_all(plain.join("run")).unwrap();
    std::fs::write(plain.join("run/pending"), "install\n").unwrap();
    std::fs::write(plain.join("host"), "not a dir").unwrap();
    // A FIFO where the plist is, and one where the pid file is (never opened blocking).
    stack_with_config(&t, "fifoplist", r#"{"port": 9102}"#);
    let agents = t.home.join("Library/LaunchAgents");
    std::fs::create_dir_all(&agents).unwrap();
    let fifo_mode = nix::sys::stat::Mode::from_bits_truncate(0o600);
    nix::unistd::mkfifo(&agents.join("com.oysterun.host.fifoplist.plist"), fifo_mode).unwrap();
    stack_with_config(&t, "fifopid", r#"{"port": 9103}"#);
    let run = stack_dir(&t, "fifopid").join("run");
    std::fs::create_dir_all(&run).unwrap();
    nix::unistd::mkfifo(&run.join("oysterun-host-fifopid.pid"), fifo_mode).unwrap();

    let list = t.run(["list", "--json"]).ok().json();
    let healthy = row(&list, "healthy");
    assert_eq!(
        (&healthy["broken"], &healthy["port"]),
        (&Value::Bool(false), &Value::from(9101)),
        "{healthy}"
    );
    assert!(!notes(healthy).iter().any(|n| n.contains("broken")), "{healthy}");
    for (name, why) in [
        ("notjson", "is not valid JSON"),
        ("wrongtype", "has the wrong type"),
        ("bigport", "`70000`"),
        ("fifo", "not a regular file"),
        ("dirconf", "not a regular file"),
        ("plainhost", "is not a directory"),
    ] {
        let r = row(&list, name);
        assert_eq!(r["broken"], true, "{name}: {r}");
        let broken: Vec<String> =
            notes(r).into_iter().filter(|n| n.starts_with("broken: ")).collect();
        assert_eq!(broken.len(), 1, "{name}: {r}");
        assert!(broken[0].contains(why), "{name}: {}", broken[0]);
        // The fix is named, and the file.
        assert!(
            broken[0].contains("Fix")
                || broken[0].contains("move it aside")
                || broken[0].contains("Replace"),
            "{name}: {}",
            broken[0]
        );
        assert!(broken[0].contains(&stack_dir(&t, name).display().to_string()));
        assert_eq!(r["port"], Value::Null, "no guessed port: {r}");
    }
    for (name, file) in [
        ("fifoplist", "com.oysterun.host.fifoplist.plist is a FIFO"),
        ("fifopid", "oysterun-host-fifopid.pid is a FIFO"),
    ] {
        let r = row(&list, name);
        assert_eq!(r["broken"], true, "{name}: {r}");
        assert!(
            notes(r)
                .iter()
                .any(|n| n.starts_with("broken: ") && n.contains(file) && n.contains("Replace it")),
            "{name}: {r}"
        );
    }
    let human = t.run(["list"]).ok().stdout();
    for name in ["notjson", "wrongtype", "bigport", "fifo", "dirconf", "plainhost"] {
        has_all(&human, &[&format!("{name} (broken)")]);
        has_all(&human, &[&format!("{name}: broken: ")]);
    }
    assert!(!human.contains("healthy (broken)") && !human.contains("healthy: broken"));
}

#[test]
fn status_with_a_corrupt_config_says_so_instead_of_using_the_default_port() {
    let t = TestContext::new();
    std::fs::create_dir_all(t.home.join(".oysterun")).unwrap();
    std::fs::write(t.home.join(".oysterun/config.json"), r#"{"port": 70000}"#).unwrap();
    let st = t.run(["status", "--json"]).fails_with(1).json();
    assert_eq!((&st["broken"], &st["port"]), (&Value::Bool(true), &Value::Null), "{st}");
    assert!(notes(&st).iter().any(|n| n.starts_with("broken: ") && n.contains("70000")), "{st}");
    let human = t.run(["status"]).fails_with(1).stdout();
    has_all(&human, &["broken: ~/.oysterun/config.json", "Fix the value"]);
    assert!(!human.contains("8802"), "the default port is not shown as the Host's: {human}");
}

/// `VERB --stack STACK --root ROOT --node-bin NODE --wait 10 --settle-ms 300 --port P`.
fn host_args(root: &Path, verb: &[&str], stack: &str, port: u16) -> Vec<String> {
    args(verb).stack(stack).host(root).wait(10, 300).port(port).into()
}

#[test]
fn an_install_or_host_start_refused_for_a_held_port_writes_nothing() {
    let (t, root, port) = TestContext::sim_root();
    t.run(host_args(&root, &["host", "start"], "a", port)).ok();
    let held = format!("port {port} is already held by pid");
    for (verb, stack) in [(&["agent", "install"][..], "b"), (&["host", "start"], "c")] {
        t.run(host_args(&root, verb, stack, port)).fails_with(1).stderr_has(&held);
        t.assert_no_stack(stack, "no stack dir, no config.json");
    }
    t.run(["host", "stop", "--stack", "a"]).ok();
}

#[test]
fn stop_beside_a_directly_started_host_never_claims_it_stopped() {
    let (t, root, port) = TestContext::sim_root();
    // A LaunchAgent installed but not loaded, and the Host started directly.
    t.run(host_args(&root, &["agent", "install", "--no-start"], "s", port)).ok();
    t.run(host_args(&root, &["host", "start"], "s", port)).ok();
    let r = t.run(["stop", "--stack", "s"]).fails_with(1);
    r.stderr_has_all(&["runs directly", "oyster host stop --stack s"]);
    assert!(!r.stdout().contains("stays stopped"), "{}", r.stdout());
    // It still answers, and nothing changed: the label is not disabled.
    let hs = t.run(["host", "status", "--stack", "s", "--json"]).ok().json();
    assert_eq!(hs["running"], true, "{hs}");
    let disabled = t.sim(&["print-disabled", &format!("gui/{}", nix::unistd::getuid())]).stdout();
    has_none(&disabled, &["\"com.oysterun.host.s\" => disabled"]);
    t.run(["host", "stop", "--stack", "s"]).ok();
}

#[test]
fn status_without_launchctl_does_not_call_launchds_host_direct() {
    let (mut t, root, port) = TestContext::sim_root();
    t.run(host_args(&root, &["agent", "install"], "l", port)).ok();
    // The same machine, asked with launchctl switched off.
    let sim = t.extra_env.clone();
    t.extra_env.retain(|(k, _)| k != "OYSTER_LAUNCHCTL");
    let off = &t;
    let st = off.run(["status", "--json", "--stack", "l"]).json();
    assert_eq!(
        (&st["managed_by"], &st["summary"]),
        (&Value::Null, &Value::from("unknown")),
        "{st}"
    );
    assert!(notes(&st).iter().any(|n| n.contains("launchctl could not be asked")), "{st}");
    let human = off.run(["status", "--stack", "l"]).stdout();
    has_all(&human, &["launchctl could not be asked"]);
    has_none(&human, &["host stop"]);
    // `host status` reads the same facts: who runs the Host is not known, never "direct".
    let hs = off.run(["host", "status", "--json", "--stack", "l"]).json();
    assert_eq!((&hs["managed_by"], &hs["running"]), (&Value::Null, &Value::Bool(true)), "{hs}");
    t.extra_env = sim;
    t.run(["agent", "uninstall", "--stack", "l"]).ok();
}

#[test]
fn host_status_exits_1_for_a_host_that_does_not_verify() {
    let t = TestContext::new();
    let root = t.fixture_root("root");
    let port = free_port();
    t.run(host_args(&root, &["host", "start"], "u", port)).ok();
    t.run(["host", "status", "--stack", "u"]).ok();
    TestContext::fixture_flag(&root, "unhealthy", "");
    let hs = t.run(["host", "status", "--stack", "u", "--json"]).fails_with(1).json();
    assert_eq!(
        (&hs["running"], &hs["verified"], &hs["health"]),
        (&Value::Bool(true), &Value::Bool(false), &Value::from(503)),
        "{hs}"
    );
    t.run(["host", "status", "--stack", "u"])
        .fails_with(1)
        .stdout_has_all(&["NOT verified", "503"]);
    std::fs::remove_file(root.join("host-service/unhealthy")).unwrap();
    t.run(["host", "stop", "--stack", "u"]).ok();
}

#[test]
fn a_dry_run_diff_shows_real_paths_and_bytes_and_says_what_it_redacted() {
    let (t, root, port) = TestContext::sim_root();
    t.run(host_args(&root, &["agent", "install", "--no-start"], "d", port)).ok();
    let plist = t.home.join("Library/LaunchAgents/com.oysterun.host.d.plist");
    let text = std::fs::read_to_string(&plist).unwrap();
    let at = text.find("<key>EnvironmentVariables</key>").unwrap();
    let dict = at + text[at..].find("<dict>").unwrap() + "<dict>".len();
    let edited = format!(
        "{}\n\t\t<key>RELAY_TOKEN</key>\n\t\t<string>tok-very-secret-0a1b2c3d</string>{}",
        &text[..dict],
        &text[dict..]
    );
    std::fs::write(&plist, edited).unwrap();
    let r = t.run(host_args(&root, &["agent", "regenerate", "--dry-run"], "d", port)).ok();
    let diff = r.stdout();
    let home = t.home.display().to_string();
    assert!(
        diff.starts_with(&format!("--- a{}\n+++ b{}\n", plist.display(), plist.display())),
        "{diff}"
    );
    assert!(!diff.contains('~'), "real bytes, no ~: {diff}");
    has_all(&diff, &[&format!("<string>{home}")]);
    has_none(&diff, &["tok-very-secret-0a1b2c3d"]);
    has_all(&diff, &["-\t\t<string><redacted></string>"]);
    r.stderr_has_all(&["1 line of this diff is not shown verbatim (secret values as <redacted>"]);
}

#[test]
fn a_start_refused_for_a_held_port_changes_nothing_the_stop_stays() {
    let (t, root, port) = TestContext::sim_root();
    t.run(host_args(&root, &["agent", "install"], "p", port)).ok();
    t.run(["stop", "--stack", "p"]).ok();
    // Someone else takes the port while the Host is stopped.
    let other = std::net::TcpListener::bind(("0.0.0.0", port)).unwrap();
    t.run(host_args(&root, &["start"], "p", port))
        .fails_with(1)
        .stderr_has_all(&[&format!("port {port} is already held by pid {}", std::process::id())]);
    let st = t.run(["status", "--json", "--stack", "p"]).json();
    assert_eq!(
        (&st["disabled"], &st["loaded"], &st["summary"]),
        (&Value::Bool(true), &Value::Bool(false), &Value::from("stopped")),
        "still stopped and disabled: {st}"
    );
    drop(other);
    t.run(host_args(&root, &["start"], "p", port)).ok();
    t.run(["agent", "uninstall", "--stack", "p"]).ok();
}
