//! The Host's login as setup leaves it (issue 38, item 1): a password from stdin or typed twice
//! at a hidden prompt, hashed by the root's own `dashboard-password.mjs` with the pinned Node,
//! stored where the Host reads it, and the fixture Host, which checks a login with that same
//! module as Oysterun's does, lets the user in. Without a password, setup never says "Setup
//! complete"; `status`, `doctor` and `--json` say whether anybody can log in.

use std::io::Write;

use crate::common::{self, free_port, TestContext};
use crate::common::{has_all, has_none};

const PASSWORD: &str = "tide-pool 42 oyster";

/// `POST /auth/login` on the Host: its status code.
fn login(port: u16, user: &str, password: &str) -> u16 {
    use std::io::Read;
    let body = serde_json::json!({"username": user, "password": password}).to_string();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST /auth/login HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.split(' ').nth(1).unwrap().parse().unwrap()
}

fn setup_args(port: u16, extra: &[&str]) -> Vec<String> {
    common::args(&["setup", "dev", "--no-install-providers"])
        .port(port)
        .wait(10, 300)
        .extra(extra)
        .into()
}

/// Runs oyster with `stdin` piped in.
fn run_with_stdin(t: &TestContext, args: &[String], stdin: &[u8]) -> common::Run {
    t.run_with_stdin(args, stdin)
}

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &std::path::Path, needle: &str) -> Vec<String> {
    common::tree(dir)
        .into_keys()
        .filter(|p| {
            std::fs::read(p).map(|b| String::from_utf8_lossy(&b).contains(needle)).unwrap_or(false)
        })
        .map(|p| p.display().to_string())
        .collect()
}

#[test]
fn a_password_on_stdin_becomes_a_login_the_host_accepts_and_is_never_written_or_shown() {
    let t = TestContext::with_pinned_host();
    let port = free_port();
    let r = run_with_stdin(
        &t,
        &setup_args(port, &["--password-stdin"]),
        format!("{PASSWORD}\n").as_bytes(),
    )
    .ok();
    let out = format!("{}{}", r.stdout(), r.stderr());
    assert!(r.stdout().contains("Setup complete."), "{out}");
    assert!(r.stdout().contains("login:       set from stdin"), "{out}");
    // Stored as Oysterun stores it: its own scrypt form, under the keys its Host reads.
    let config: serde_json::Value = serde_json::from_slice(
        &std::fs::read(t.stack_dir("dev").join("host/config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(config["dashboard_user"], "admin");
    let hash = config["dashboard_password_hash"].as_str().unwrap();
    assert!(hash.starts_with("scrypt$N=16384,r=8,p=1,keylen=32$"), "{hash}");
    // The Host lets the user in with it, and no one with another.
    assert_eq!(login(port, "admin", PASSWORD), 200);
    assert_eq!(login(port, "admin", "not it"), 401);
    // The password is nowhere: not in the output, any file (config, audit log, Host log,
    // plist), nor the hashing child's arguments or environment.
    has_none(&out, &[PASSWORD]);
    has_none(&out, &[hash]);
    assert_eq!(files_holding(&t.home, PASSWORD), Vec::<String>::new());
    let calls = std::fs::read_to_string(t.host_root().join("host-service/hash-calls.log")).unwrap();
    let call: serde_json::Value = serde_json::from_str(calls.lines().next().unwrap()).unwrap();
    has_none(&calls, &[PASSWORD]);
    assert_eq!(call["env"], serde_json::json!([]), "{calls}");
    // status, doctor and their documents say it as a fact of its own.
    let st = t.run(["status", "dev", "--json"]).ok().json();
    assert_eq!(st["host_login"], "configured");
    t.run(["status", "dev"]).ok().stdout_has("password:  set (log in as admin)");
    let doc = t.run(["doctor", "dev", "--json"]).json();
    assert_eq!(doc["host_login"], "configured");
    assert_eq!(common::doctor_check(&doc, "host login")["status"], "ok");
    // config show never shows the hash.
    let shown = t.run(["config", "show", "dev"]).ok();
    assert!(!shown.stdout().contains(hash));
    t.run(["uninstall", "dev"]).ok();
    t.wait_no_processes();
}

#[test]
fn without_a_password_setup_is_not_complete_and_says_the_exact_command() {
    let t = TestContext::with_pinned_host();
    let port = free_port();
    let r = t.run(setup_args(port, &[])).ok();
    let out = r.stdout();
    has_none(&out, &["Setup complete"]);
    has_all(
        &out,
        &[
            "Setup is not complete: the Host login is not set, so nobody can log in to the Host",
            "`oyster setup dev --port",
            "`oyster setup --password-stdin dev --port",
        ],
    );
    has_all(&out, &["login:       not set (no terminal to ask on"]);
    // What the Host answers then, and what oyster says of it.
    assert_eq!(login(port, "admin", "anything"), 503);
    let st = t.run(["status", "dev", "--json"]).ok().json();
    assert_eq!(st["host_login"], "not_configured");
    t.run(["status", "dev"]).ok().stdout_has(
        "password:  not set: nobody can log in to the Host; `oyster setup dev` sets it",
    );
    let doc = t.run(["doctor", "dev", "--json"]).json();
    assert_eq!(doc["host_login"], "not_configured");
    let row = common::doctor_check(&doc, "host login");
    assert_eq!(row["status"], "warn");
    assert!(row["fix"].as_str().unwrap().contains("oyster setup --password-stdin dev"), "{row}");
    // The fix as said: the password on stdin sets it, on the running stack.
    let again: Vec<String> = common::args(&["setup", "--password-stdin", "dev", "--port"])
        .arg(port.to_string())
        .wait(10, 300)
        .into();
    run_with_stdin(&t, &again, PASSWORD.as_bytes()).ok().stdout_has("Setup complete.");
    assert_eq!(login(port, "admin", PASSWORD), 200);
    t.run(["uninstall", "dev"]).ok();
    t.wait_no_processes();
}

#[test]
fn config_show_says_an_unset_secret_is_unset() {
    let t = TestContext::new();
    t.write_config(r#"{"dashboard_user": null, "dashboard_password_hash": null, "relay_key": ""}"#);
    let shown = t.run(["config", "show"]).ok();
    shown.stdout_has(r#""dashboard_password_hash": null"#);
    shown.stdout_has(r#""relay_key": """#);
    assert!(!shown.stdout().contains("<redacted>"), "{}", shown.stdout());
    let doc = t.run(["config", "show", "--json"]).ok().json();
    assert_eq!(doc["dashboard_password_hash"], serde_json::Value::Null);
    assert_eq!(doc["relay_key"], "");
    // A set one is still redacted.
    t.write_config(r#"{"dashboard_password_hash": "scrypt$N=1$abc$def"}"#);
    t.run(["config", "show"]).ok().stdout_has(r#""dashboard_password_hash": "<redacted>""#);
}

#[test]
fn an_empty_password_on_stdin_is_refused_before_anything_is_written() {
    let t = TestContext::with_pinned_host();
    for stdin in ["", "\n", "   \n"] {
        let r =
            run_with_stdin(&t, &setup_args(free_port(), &["--password-stdin"]), stdin.as_bytes())
                .fails_with(2);
        assert!(r.stderr().contains("password"), "{}", r.stderr());
    }
    t.assert_no_stack("dev", "an empty password is refused first");
}

#[test]
fn on_a_terminal_setup_asks_for_the_password_hidden_and_twice() {
    let t = TestContext::with_pinned_host();
    let port = free_port();
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    // A first pair that differs, then one that matches.
    let script = serde_json::json!([
        ["Host password: ", hex("first try\r")],
        ["Again, to confirm: ", hex("not the same\r")],
        ["Host password: ", hex(&format!("{PASSWORD}\r"))],
        ["Again, to confirm: ", hex(&format!("{PASSWORD}\r"))],
    ]);
    let mut c = t.pty_cmd(b"", setup_args(port, &[]));
    c.env("PTY_SCRIPT", script.to_string());
    let report = common::pty_report(&mut c);
    let shown = report["output"].as_str().unwrap();
    assert_eq!(report["code"], 0, "{shown}");
    assert_eq!(report["prompted"], true, "{shown}");
    has_all(shown, &["The two passwords differ; try again."]);
    has_all(shown, &["Setup complete."]);
    // Hidden: the terminal never showed what was typed.
    for typed in [PASSWORD, "first try", "not the same"] {
        assert!(!shown.contains(typed), "{typed} was shown:\n{shown}");
    }
    assert_eq!(login(port, "admin", PASSWORD), 200);
    t.run(["uninstall", "dev"]).ok();
    t.wait_no_processes();
}

#[test]
fn ctrl_d_at_the_password_prompt_cancels_and_changes_nothing() {
    let t = TestContext::with_pinned_host();
    let mut c = t.pty_cmd(b"", setup_args(free_port(), &[]));
    c.env("PTY_SCRIPT", serde_json::json!([["Host password: ", "04"]]).to_string());
    let report = common::pty_report(&mut c);
    let shown = report["output"].as_str().unwrap();
    assert_eq!(report["code"], 0, "{shown}");
    has_all(shown, &["Installation cancelled; no changes were made."]);
    t.assert_no_stack("dev", "a cancelled password prompt writes nothing");
}

/// `--password-stdin` with stdin a terminal: the terminal would echo every key typed (the
/// password on the screen and in the scrollback) and nothing says to end it with Ctrl-D. It is
/// refused at once (exit 2) naming both ways that work, before anything is written; before,
/// setup sat reading the terminal, showing what was typed.
#[test]
fn password_stdin_on_a_terminal_is_refused_before_anything_is_typed() {
    let t = TestContext::with_pinned_host();
    let t0 = std::time::Instant::now();
    let report = t.pty(b"", setup_args(free_port(), &["--password-stdin"]));
    let shown = report["output"].as_str().unwrap();
    assert_eq!(report["code"], 2, "{shown}");
    assert!(t0.elapsed().as_secs() < 30, "it waited for input: {shown}");
    // Wrapped at 80 columns: compared with its line breaks as spaces.
    let words = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("stdin is this terminal") && words.contains("run `oyster setup` without it"),
        "{shown}"
    );
    t.assert_no_stack("dev", "refused first");
}
