//! Issue 30 items 8 and 9: credentials the Host (or the restore step) prints are redacted by
//! their shape, not only when `config.json` names them — in `logs`, `logs -f` (however the
//! Host's writes split them), the log tails of failures, and the restore step's stdout. Only the
//! login QR's stdout is shown as written. Unicode bidirectional controls are escaped.

use std::io::Write;
use std::time::Duration;

use crate::common::has_all;
use crate::common::{free_port, real_node, TestContext};

/// Lines as a Host might log them: each holds a credential no config names.
const SHAPED: &[&str] = &[
    "GET /v1/messages Authorization: Bearer 9f8e7d6c5b4a39281706",
    "using key sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3_Lk2-Ji1AA for claude",
    "openai sk-proj-Qa1Ws2Ed3Rf4Tg5Yh6Uj7 and legacy sk-0123456789abcdefghijKLMNOP",
    "env ANTHROPIC_API_KEY=plain-anthropic-value OPENAI_API_KEY=plain-openai-value",
    "env OYSTERUN_SERVICE_CONTROL_TOKEN=svc-ctl-31415926",
    "cloned with ghp_Aa0Bb1Cc2Dd3Ee4Ff5Gg6Hh7Ii8Jj9Kk0L and github_pat_11AAAAAAA0BBBBBBBBBBBB_CCCC",
    "slack xoxb-2048-4096-SlAcKsEcReTvAlUe posted",
    "session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MiJ9.c2lnbmF0dXJlLXNlY3JldA ok",
];

/// What must never be printed (the secret part of each line above).
const SECRETS: &[&str] = &[
    "9f8e7d6c5b4a39281706",
    "Zx9Yw8Vu7Ts6Rq5Po4Nm3",
    "Qa1Ws2Ed3Rf4Tg5Yh6Uj7",
    "0123456789abcdefghijKLMNOP",
    "plain-anthropic-value",
    "plain-openai-value",
    "svc-ctl-31415926",
    "Aa0Bb1Cc2Dd3Ee4Ff5Gg6",
    "AAAAAAA0BBBB",
    "SlAcKsEcReTvAlUe",
    "c2lnbmF0dXJlLXNlY3JldA",
];

#[track_caller]
fn assert_no_secret(what: &str, text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{what} shows {s:?}:\n{text}");
    }
}

#[test]
fn logs_redacts_credentials_by_shape_and_escapes_bidi_controls() {
    let t = TestContext::new();
    let mut log: String = SHAPED.iter().map(|l| format!("{l}\n")).collect();
    log.push_str("an ordinary line: task-list, sk-learn, Bearer authentication\n");
    log.push_str("file \u{202e}gnp.exe\u{2066}x\u{2069}\n");
    t.stack_with_log("shape", &log);
    let r = t.run(["logs", "--stack", "shape", "-n", "100"]).ok();
    let out = r.stdout();
    assert_no_secret("logs", &out);
    assert_no_secret("logs (stderr)", &r.stderr());
    for kept in [
        "GET /v1/messages Authorization: Bearer <redacted>",
        "using key <redacted> for claude",
        "env ANTHROPIC_API_KEY=<redacted> OPENAI_API_KEY=<redacted>",
        "slack <redacted> posted",
        "an ordinary line: task-list, sk-learn, Bearer authentication",
        "file \\u{202e}gnp.exe\\u{2066}x\\u{2069}",
    ] {
        assert!(out.contains(kept), "{kept:?} not in:\n{out}");
    }
    assert!(!out.contains('\u{202e}') && !out.contains('\u{2066}'), "{out}");
}

/// `logs -f` with the Host writing each credential in two writes, the follower polling between
/// them, and one line already half written when the follower starts.
#[test]
fn logs_follow_redacts_a_credential_split_across_the_hosts_writes() {
    let t = TestContext::new();
    let path = t.stack_with_log("shape", "earlier line\nexport GITHUB_TOKEN=ghp_Aa0Bb1Cc2D");
    let mut follow = t.follow_logs(&["--stack", "shape"]);
    follow.read_until("earlier line");
    let mut w = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    // The rest of the half-written line, then each shaped line cut in two, a pause (longer
    // than the follower's poll) between the halves.
    w.write_all(b"d3Ee4Ff5Gg6Hh7Ii8Jj9Kk0L\n").unwrap();
    for line in SHAPED {
        let cut = line.len() * 2 / 3;
        w.write_all(&line.as_bytes()[..cut]).unwrap();
        std::thread::sleep(Duration::from_millis(350));
        w.write_all(&line.as_bytes()[cut..]).unwrap();
        w.write_all(b"\n").unwrap();
    }
    w.write_all(b"end-of-test\n").unwrap();
    follow.read_until("end-of-test");
    let (out, _) = follow.stop();
    has_all(&out, &["end-of-test"]);
    assert_no_secret("logs -f", &out);
    assert!(
        out.contains("export GITHUB_TOKEN=<redacted>\n")
            && out.contains("Authorization: Bearer <redacted>\n")
            && out.contains("slack <redacted> posted\n"),
        "each line whole, redacted: {out}"
    );
}

/// The log tail a failed start prints is redacted by shape too.
#[test]
fn a_failed_starts_log_tail_redacts_credentials_by_shape() {
    let planted: String = SHAPED.iter().map(|l| format!("{l}\n")).collect();
    let (t, r) = TestContext::crashing_host_start("tail", &planted);
    let e = r.stderr();
    assert!(e.contains("crash-on-start is set"), "the tail is shown: {e}");
    assert!(
        e.contains("Authorization: Bearer <redacted>"),
        "the planted lines are in the tail: {e}"
    );
    assert_no_secret("host start's failure", &(r.stdout() + &e));
    t.wait_no_processes();
}

/// The restore step (`prepare-restart-restore.mjs`) prints a credential and a device token:
/// redacted, with `--all` too. The login QR's stdout is exempt (the user's own login).
#[test]
fn the_restore_steps_stdout_is_redacted_and_only_the_qr_is_shown_as_written() {
    let mut t = TestContext::new();
    t.use_sim();
    let root = t.fixture_root("root");
    let step = |rel: &str, said: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("console.log({said:?});\n")).unwrap();
    };
    step(
        "host-service/cli/prepare-restart-restore.mjs",
        "prepared; device_token=\"dt-RESTORE-7f6e5d\" auth Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MiJ9.c2lnbmF0dXJlLXNlY3JldA \u{1b}[2J",
    );
    step("host-service/setup.mjs", "QR sk-ant-api03-QRisTheUsersOwnLogin0 \u{1b}[7m");
    let port = free_port().to_string();
    let base = |verb: &str| -> Vec<String> {
        [verb, "rs", "--port", &port, "--root", root.to_str().unwrap()]
            .iter()
            .map(|s| (*s).to_owned())
            .chain(["--node-bin".to_owned(), real_node().display().to_string()])
            .chain(["--settle-ms".to_owned(), "200".to_owned()])
            .collect()
    };
    t.run(base("install")).ok();
    for args in [
        vec!["restart", "rs", "--restore-sessions", "--settle-ms", "200"],
        vec!["restart", "--all", "--restore-sessions", "--settle-ms", "200"],
    ] {
        let r = t.run(&args).ok();
        let all = r.stdout() + &r.stderr();
        assert!(
            all.contains("prepared; device_token=\"<redacted>\" auth Bearer <redacted> \\x1b[2J"),
            "{args:?}: {all}"
        );
        assert!(
            !all.contains("dt-RESTORE") && !all.contains("c2lnbmF0dXJl") && !all.contains('\u{1b}'),
            "{args:?}: {all}"
        );
    }
    // The QR as its entry point wrote it.
    let r = t.run(["restart", "rs", "--qr", "--settle-ms", "200"]).ok();
    r.stdout_has("QR sk-ant-api03-QRisTheUsersOwnLogin0 \u{1b}[7m");
    t.run(["uninstall", "rs"]).ok();
    t.wait_no_processes();
}

/// A bidirectional control in a value oyster shows (here the config's, as `config show` and
/// `config show --json` print it) never reaches the terminal raw: escaped in human output, and
/// written as its JSON escape in a document, which still parses to the same string.
#[test]
fn bidi_controls_never_reach_the_terminal_raw_in_human_or_json_output() {
    let t = TestContext::new();
    t.stack_with_log("shape", "x\n");
    std::fs::write(
        t.home.join(".oysterun-stacks/shape/host/config.json"),
        "{\"label\": \"invoice\u{202e}fdp.exe\u{2066}\"}\n",
    )
    .unwrap();
    let human = t.run(["config", "show", "--stack", "shape"]).ok().stdout();
    has_all(&human, &["invoice\\u{202e}fdp.exe\\u{2066}"]);
    let json = t.run(["config", "show", "--json", "--stack", "shape"]).ok().stdout();
    for out in [&human, &json] {
        assert!(!out.contains('\u{202e}') && !out.contains('\u{2066}'), "{out}");
    }
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["label"], "invoice\u{202e}fdp.exe\u{2066}", "{json}");
}
