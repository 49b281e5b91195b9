//! Hostile round 3 over issues 29 and 30 as they stand on main: each test here failed before
//! its fix (docs/bad-input.md, "Hostile round 3").

use crate::common::TestContext;
use crate::common::{has_all, has_none};

/// The Host is Node: `console.log(req.headers)` or `console.log(process.env)` prints objects
/// the way `util.inspect` does — unquoted keys, single-quoted values. Those credentials reached
/// `logs` whole: `authorization: 'Basic …'`, `{ apiKey: '…', password: '…' }`, and
/// `authorization='Basic …'` although `authorization=` is one of the README's shapes; and a
/// session cookie, as Node prints it, as a `Cookie:` header, or as a JSON key; a command line's
/// `--api-key VALUE`; and an `Authorization` header given as an array was mangled at its `[`.
#[test]
fn logs_redacts_credentials_in_nodes_printed_objects() {
    let t = TestContext::new();
    let log = [
        "headers: { host: 'localhost', authorization: 'Basic dXNlcjpwYXNzd29yZDEyMw==' }",
        "{ apiKey: 'plainapikeyvalue1', password: 'hunter2hunter2', token: \"tok-quoted-123\" }",
        "env { HOME: '/Users/me', AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMIK7MDENG' }",
        "curl -H authorization='Basic c2Vjb25kOnBhc3N3b3Jk'",
        "headers: { host: 'x', cookie: 'connect.sid=s%3AinspectedSession.sig' }",
        "Cookie: connect.sid=s%3AheaderSession.sig; theme=dark",
        "{\"cookie\":\"sid=jsonSession\"}",
        "spawn codex --api-key plainflagvalue123 --password=hunter4hunter4 --model o3",
        "{\"headers\":{\"Authorization\":[\"Bearer arrayBearer1234567\"]}}",
        "{ key: 'name', error: 'file not found', device_token: null }",
    ]
    .map(|l| format!("{l}\n"))
    .concat();
    t.stack_with_log("h3", &log);
    let r = t.run(["logs", "--stack", "h3", "-n", "100"]).ok();
    let out = r.stdout() + &r.stderr();
    for secret in [
        "dXNlcjpwYXNzd29yZDEyMw",
        "plainapikeyvalue1",
        "hunter2hunter2",
        "tok-quoted-123",
        "wJalrXUtnFEMIK7MDENG",
        "c2Vjb25kOnBhc3N3b3Jk",
        "inspectedSession",
        "headerSession",
        "jsonSession",
        "plainflagvalue123",
        "hunter4hunter4",
        "arrayBearer1234567",
    ] {
        assert!(!out.contains(secret), "logs shows {secret:?}:\n{out}");
    }
    for kept in [
        "headers: { host: 'localhost', authorization: 'Basic <redacted>' }",
        "{ apiKey: '<redacted>', password: '<redacted>', token: \"<redacted>\" }",
        "env { HOME: '/Users/me', AWS_SECRET_ACCESS_KEY: '<redacted>' }",
        "curl -H authorization='Basic <redacted>'",
        "headers: { host: 'x', cookie: '<redacted>' }",
        "Cookie: <redacted>\n",
        "{\"cookie\":\"<redacted>\"}",
        "spawn codex --api-key <redacted> --password=<redacted> --model o3",
        "{\"headers\":{\"Authorization\":[\"Bearer <redacted>\"]}}",
        // Names that are not secrets, and a bare `key`, stay as written.
        "{ key: 'name', error: 'file not found', device_token: null }",
    ] {
        assert!(out.contains(kept), "{kept:?} not in:\n{out}");
    }
}

/// A private key the Host logs in PEM form (a device or relay key generated at first start):
/// its body lines are plain base64, no shape of their own, so each reached `logs` whole — on
/// lines of their own, and inside one JSON-logged string (`\n` escaped). Also when `-n` starts
/// inside the block, and with `-f` when the Host writes it line by line.
#[test]
fn logs_redacts_a_private_key_block_the_host_prints() {
    use std::io::Write;
    let t = TestContext::new();
    let body = ["MIIEowIBAAKCAQEAs3cr3tb0dyl1n3ZZ", "QQ8secretBodyLineNumberTwo+/xyz=="];
    let log = format!(
        "generated device key\n-----BEGIN RSA PRIVATE KEY-----\n{}\n{}\n-----END RSA PRIVATE KEY-----\n\
         {{\"msg\":\"key\",\"pem\":\"-----BEGIN PRIVATE KEY-----\\nMIIEvQjsonEscapedBody77\\n-----END PRIVATE KEY-----\\n\"}}\n\
         after the key\n",
        body[0], body[1]
    );
    let path = t.stack_with_log("h3", &log);
    let check = |what: &str, out: &str| {
        for secret in [body[0], body[1], "MIIEvQjsonEscapedBody77"] {
            assert!(!out.contains(secret), "{what} shows {secret:?}:\n{out}");
        }
    };
    let r = t.run(["logs", "--stack", "h3", "-n", "100"]).ok();
    let out = r.stdout();
    check("logs", &out);
    has_all(&out, &["-----BEGIN RSA PRIVATE KEY-----\n<redacted>\n", "after the key"]);
    // `-n` starting inside the block: the lines before the window still say where it began.
    let r = t.run(["logs", "--stack", "h3", "-n", "4"]).ok();
    check("logs -n 4", &r.stdout());

    let mut follow = t.follow_logs(&["--stack", "h3", "-n", "1"]);
    follow.read_until("after the key");
    let mut w = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    for line in [
        "-----BEGIN EC PRIVATE KEY-----",
        "MHcCAQEEIFollowedBodyLineOne0",
        "-----END EC PRIVATE KEY-----",
        "end-of-test",
    ] {
        w.write_all(format!("{line}\n").as_bytes()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    follow.read_until("end-of-test");
    let (out, _) = follow.stop();
    has_all(&out, &["end-of-test"]);
    assert!(!out.contains("MHcCAQEEIFollowedBodyLineOne0"), "logs -f shows the key:\n{out}");
}

/// The state oyster's own note warns about: installed over SSH into `user/<uid>` (a
/// `gui/<uid>` bootstrap answered 125), then a console login loads a second copy into
/// `gui/<uid>`, which launchd keeps respawning beside the first. `kill` asked
/// only the `gui/<uid>` copy: exit 1 "loaded but no Host is running" while the Host ran in
/// `user/<uid>`, or SIGTERM to the copy being respawned when it happened to run; `stop` booted both out but said "no Host was running" of the Host it stopped.
#[test]
fn kill_of_a_job_loaded_twice_signals_nothing_and_stop_names_the_host_it_stopped() {
    use crate::common::{Run, Stack};
    let s = Stack::new("twice");
    let uid = nix::unistd::getuid().as_raw();
    let mut c = s.t.cmd();
    c.env("LAUNCHD_SIM_FAIL_BOOTSTRAP", "125:1");
    Run(c.args(s.args("install")).output().unwrap()).ok();
    let pid = s.status()["pid"].as_u64().unwrap();
    // The next console login: a second copy in gui/<uid>, not running.
    s.t.sim(&["bootstrap", &format!("gui/{uid}"), s.plist().to_str().unwrap()]).ok();
    let st = s.status();
    assert_eq!(
        st["loaded_in"],
        serde_json::json!([format!("gui/{uid}"), format!("user/{uid}")]),
        "{st}"
    );
    // kill: which copy runs at this instant is luck; nothing is signalled, the fix is named.
    let r = s.t.run(["kill", "--stack", s.name]).fails_with(1);
    let e = r.stderr();
    has_all(&e, &["is loaded twice", "no Host was signalled"]);
    has_all(&e, &[&format!("boots the user/{uid} copy out")]);
    assert!(crate::common::get(s.port, "/health") == 200, "the Host still serves");
    let alive = |pid: u64| {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()), None)
            .is_ok()
    };
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(alive(pid), "the user/<uid> Host (pid {pid}) was signalled");
    let r = s.t.run(["stop", "--stack", s.name]).ok();
    let out = r.stdout();
    has_none(&out, &["no Host was running"]);
    has_all(&out, &[" booted out)"]);
    crate::common::wait_until(
        std::time::Duration::from_secs(10),
        "the user/<uid> Host to exit",
        || !alive(pid),
    );
    assert_eq!(s.status()["loaded_in"], serde_json::json!([]));
    s.t.run(["agent", "uninstall", "--stack", s.name]).ok();
    s.t.wait_no_processes();
}

/// The user empties the Host log while following it (`: > …/oysterun-host.log`, as one clears
/// any log) and the Host, appending, writes more than was read before before the next look:
/// the file never looked shorter, so the follower went on at its old offset, in the middle of
/// a line, and printed the rest of a credential without the name that made it one.
#[test]
fn logs_follow_notices_a_log_emptied_and_refilled_between_two_looks() {
    use std::io::Write;
    let t = TestContext::new();
    let first = "a line the Host wrote before\n".repeat(7);
    let path = t.stack_with_log("h3", &first);
    let mut follow = t.follow_logs(&["--stack", "h3"]);
    follow.read_until("before");
    std::thread::sleep(std::time::Duration::from_millis(400));
    // Emptied, then refilled at once: the old offset falls inside the value.
    let name = "ANTHROPIC_API_KEY=";
    let pad = "x".repeat(first.len() - name.len() - 4);
    let refill = format!("{pad} {name}value-after-truncation-0123456789\nend-of-test\n");
    let mut w = std::fs::OpenOptions::new().write(true).truncate(true).open(&path).unwrap();
    w.write_all(refill.as_bytes()).unwrap();
    drop(w);
    follow.read_until("end-of-test");
    let (out, err) = follow.stop();
    has_all(&out, &["end-of-test"]);
    has_all(&err, &["was truncated; reading it from the start"]);
    assert!(
        out.contains("ANTHROPIC_API_KEY=<redacted>"),
        "the refilled line is read from its start: {out}"
    );
    assert!(!out.contains("after-truncation"), "logs -f shows a credential's value:\n{out}");
}

/// The log tail a failed start prints holds the key's block whole: its body is redacted too.
#[test]
fn a_failed_starts_log_tail_redacts_a_private_keys_body() {
    let (t, r) = TestContext::crashing_host_start(
        "pem",
        "key:\n-----BEGIN PRIVATE KEY-----\nMIIEvQtailBodyLine0123\n-----END PRIVATE KEY-----\n",
    );
    let e = r.stderr();
    assert!(e.contains("-----BEGIN PRIVATE KEY-----"), "the tail is shown: {e}");
    has_none(&e, &["MIIEvQtailBodyLine0123"]);
    t.wait_no_processes();
}

/// A restart that fails shows "this attempt's last lines" of the Host log: the bytes written
/// since the run began. That window begins at a line's start, yet its first line was always
/// dropped as if cut — here the old Host's own last words, in a single-line attempt the cause.
#[test]
fn a_failed_restarts_log_tail_keeps_the_attempts_first_line() {
    let s = crate::common::Stack::installed("tail1");
    TestContext::fixture_flag(&s.root, "crash-on-start", "");
    let e = s.t.run(s.args("restart")).fails_with(1).stderr();
    let tail = &e[e.find("--- this attempt's last lines").expect(&e)..];
    // The old Host's reply to the restart's SIGTERM is this attempt's first line.
    assert!(tail.contains("fixture host: SIGTERM, exiting"), "the first line is shown: {tail}");
    has_all(tail, &["crash-on-start is set"]);
    s.t.run(["agent", "uninstall", "--stack", s.name]).ok();
    s.t.wait_no_processes();
}

/// A last line longer than the 4 MiB `logs` reads from the end (a Host that logged a whole
/// transcript on one line): it was shown from wherever the window began, which may be the
/// middle of a credential (`…KEY=mid|tokensecret`), and no shape matches half a token.
#[test]
fn logs_never_starts_a_line_longer_than_its_window_mid_token() {
    let t = TestContext::new();
    let window = 4 << 20;
    let head = format!("{}ANTHROPIC_API_KEY=mid", "x".repeat(100));
    let body = "tokensecret rest of it ";
    // Still being written: no newline yet.
    let text = format!("{head}{body}{}", "z".repeat(window - body.len()));
    t.stack_with_log("h3", &text);
    let r = t.run(["logs", "--stack", "h3"]).ok();
    let out = r.stdout();
    assert!(!out.contains("tokensecret"), "{}", &out[..200.min(out.len())]);
    assert!(
        out.starts_with("[line cut: it began more than 4194304 bytes back] … rest of it zzz"),
        "{}",
        &out[..200.min(out.len())]
    );
}
