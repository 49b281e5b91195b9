//! docs/behaviour.md §8 (issue 12 item 5): secrets planted in `config.json`, in the Host log and by
//! hand in the installed plist never appear in any output of any command that prints (human and
//! `--json`, success and failure), in the audit log, in the written plist, or on the Host's PATH
//! and environment. A value that is not secret (`pinned_node`) still prints.

use std::path::Path;

use crate::common::{args, get, Run, Stack, TestContext};
use crate::common::{has_all, has_none};

const STACK: &str = "sec";

/// Every secret value planted, as it must never be seen.
const SECRETS: &[&str] = &[
    "HC-secret-9f1a2b77",
    "DT-secret-77c3d1aa",
    "$2b$10$PWHASHsecretQ5mZ8rT1",
    "OB-secret-4e8d0c19",
    "RK-secret-5a6b7c8d",
    "EK-secret-1122aabb",
    "SK-secret-9988ccdd",
    "AK-secret-4455eeff",
    "correct horse secret staple",
    "918273",
    "AAAASSHsecret5501",
    "URLPASS-secret-3141",
    "QTOKEN-secret-2718",
    "sk-ant-secret-API-0a1b2c3d",
    "ghp_secretGITHUB0z9y8x7w",
];

/// The config a user (and the real Host) would have: every kind of secret key §8 names, a
/// nested `SSH_KEY`, URLs with credentials, and `pinned_node`, which is not a secret.
fn planted_config() -> serde_json::Value {
    serde_json::json!({
        "host_credential": "HC-secret-9f1a2b77",
        "device_token": "DT-secret-77c3d1aa",
        "dashboard_password_hash": "$2b$10$PWHASHsecretQ5mZ8rT1",
        "onboarding_token": "OB-secret-4e8d0c19",
        "relay_key": "RK-secret-5a6b7c8d",
        "encryption_key": "EK-secret-1122aabb",
        "signing_key": "SK-secret-9988ccdd",
        "access_key": "AK-secret-4455eeff",
        "passphrase": "correct horse secret staple",
        "pairing_pin": 918273,
        "integrations": {"deploy": {"SSH_KEY": "ssh-ed25519 AAAASSHsecret5501 deploy@ci"}},
        "relay_url": "https://relayuser:URLPASS-secret-3141@relay.example.com/v1",
        "webhook_url": "https://hooks.example.com/notify?channel=ops&token=QTOKEN-secret-2718",
        "pinned_node": "/opt/pinned/node-v20.11.1",
        "history": {"s1": "keep"}
    })
}

/// `ARGS --stack sec`, but for `list`, which shows every stack and refuses --stack rather
/// than ignore it.
fn run(s: &Stack, args: &[&str]) -> Run {
    let mut a: Vec<&str> = args.to_vec();
    if !args.contains(&"list") {
        a.extend(["--stack", s.name]);
    }
    s.t.run(a)
}

/// Fails when any planted secret (or its JSON-escaped form) is in `text`.
#[track_caller]
fn assert_clean(what: &str, text: &str) {
    for s in SECRETS {
        let escaped = serde_json::to_string(s).unwrap();
        let escaped = &escaped[1..escaped.len() - 1];
        assert!(
            !text.contains(s) && !text.contains(escaped),
            "{what} shows the secret {s:?}:\n{text}"
        );
    }
    // The URL credentials as a pair, whatever the password.
    assert!(!text.contains("relayuser:"), "{what} shows URL credentials:\n{text}");
}

/// Runs `args` on the stack, asserts its exit code and that neither stdout nor stderr shows a
/// secret; returns the run.
#[track_caller]
fn clean(s: &Stack, args: &[&str], code: i32) -> Run {
    let r = run(s, args);
    assert_eq!(r.code(), code, "{args:?}\nstdout:\n{}\nstderr:\n{}", r.stdout(), r.stderr());
    assert_clean(&format!("{args:?} stdout"), &r.stdout());
    assert_clean(&format!("{args:?} stderr"), &r.stderr());
    if args.contains(&"--json") {
        // Still a document after redaction.
        r.json();
    }
    r
}

/// Percent-encodes a query value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Adds variables to the installed plist's `EnvironmentVariables`, as a user editing it by hand.
fn hand_add_env(plist: &Path, vars: &[(&str, &str)]) {
    let text = std::fs::read_to_string(plist).unwrap();
    let at = text.find("<key>EnvironmentVariables</key>").unwrap();
    let dict = at + text[at..].find("<dict>").unwrap() + "<dict>".len();
    let added: String = vars
        .iter()
        .map(|(k, v)| format!("\n\t\t<key>{k}</key>\n\t\t<string>{v}</string>"))
        .collect();
    let edited = format!("{}{added}{}", &text[..dict], &text[dict..]);
    std::fs::write(plist, edited).unwrap();
}

/// The plist as written holds no secret, and neither does PATH in it.
#[track_caller]
fn plist_clean(s: &Stack, when: &str) {
    if let Ok(text) = std::fs::read_to_string(s.plist()) {
        assert_clean(&format!("the plist after {when}"), &text);
    }
    let last_good = s.stack_dir().join("run/last-good.plist");
    if let Ok(text) = std::fs::read_to_string(&last_good) {
        assert_clean(&format!("last-good.plist after {when}"), &text);
    }
}

#[test]
fn planted_secrets_never_appear_in_any_output_log_or_plist() {
    let s = Stack::pinned(STACK);
    s.t.fake_exe(&s.t.home.join(".local/bin/claude"));
    let cfg = s.stack_dir().join("host/config.json");
    std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    std::fs::write(&cfg, serde_json::to_vec_pretty(&planted_config()).unwrap()).unwrap();
    let port = s.port.to_string();
    let timing = ["--wait", "10", "--settle-ms", "300"];

    // Setup and the read-only commands, before anything runs.
    clean(&s, &["setup", "--no-start", "--port", &port], 0);
    plist_clean(&s, "setup --no-start");
    for args in [
        &["providers", "resolve"][..],
        &["providers", "resolve", "--json"],
        &["providers", "status"],
        &["providers", "status", "--json"],
        &["config", "sync"],
        &["agent", "print"],
    ] {
        clean(&s, args, 0);
    }
    let claude = s.t.home.join(".local/bin/claude");
    clean(&s, &["providers", "set", "claude", claude.to_str().unwrap()], 0);
    // `pinned_node` is not a secret: it prints, in both forms.
    for args in [&["config", "show"][..], &["config", "show", "--json"]] {
        let out = clean(&s, args, 0).stdout();
        assert!(
            out.contains("/opt/pinned/node-v20.11.1") && out.contains("<redacted>"),
            "{args:?}: {out}"
        );
        assert!(
            out.contains("hooks.example.com") && out.contains("relay.example.com"),
            "{args:?} keeps the rest of the URLs: {out}"
        );
    }

    // Install: the Host runs; its environment and PATH hold no secret.
    clean(&s, &[&["agent", "install"][..], &timing].concat(), 0);
    plist_clean(&s, "agent install");
    let st = clean(&s, &["agent", "status", "--json"], 0).json();
    let pid = u32::try_from(st["pid"].as_u64().unwrap()).unwrap();
    let env = s.t.host_environ(pid);
    assert!(
        env.iter().any(|kv| kv.starts_with("PATH=")),
        "the Host's environment was read: {env:?}"
    );
    assert_clean("the Host's live environment", &env.join("\n"));

    // The Host logs a URL carrying the onboarding token (in its path and as a query value) and
    // a URL with credentials.
    let logged = [
        "pairing via https://relay.example.com/pair/OB-secret-4e8d0c19?onboarding_token=OB-secret-4e8d0c19&step=2",
        "relay https://relayuser:URLPASS-secret-3141@relay.example.com/v1 pin 918273",
    ];
    for line in logged {
        assert_eq!(get(s.port, &format!("/log?line={}", encode(line))), 200);
    }
    let log = s.stack_dir().join("logs/oysterun-host.log");
    let t0 = std::time::Instant::now();
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("pin 918273") {
        assert!(t0.elapsed().as_secs() < 10, "the Host never logged the line");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    clean(&s, &["logs"], 0).stdout_has_all(&[
        "pairing via https://relay.example.com/pair/<redacted>?onboarding_token=<redacted>&step=2",
    ]);

    // API keys a user added to the plist by hand: printed by no command, though the diff and
    // doctor name the variables.
    hand_add_env(
        &s.plist(),
        &[
            ("ANTHROPIC_API_KEY", "sk-ant-secret-API-0a1b2c3d"),
            ("GITHUB_TOKEN", "ghp_secretGITHUB0z9y8x7w"),
        ],
    );
    let dry = clean(&s, &["agent", "regenerate", "--dry-run"], 0).stdout();
    assert!(
        dry.contains("ANTHROPIC_API_KEY") && dry.contains("GITHUB_TOKEN"),
        "the dry run shows the change: {dry}"
    );
    let doctor = clean(&s, &["doctor"], 1).stdout();
    has_all(&doctor, &["ANTHROPIC_API_KEY"]);
    clean(&s, &["doctor", "--json"], 1);
    for (args, code) in [
        // The live Host lacks the hand-added variables: running, not verified (exit 1).
        (&["agent", "status"][..], 1),
        (&["agent", "status", "--json"], 1),
        (&["agent", "list"], 0),
        (&["agent", "list", "--json"], 0),
        // `host status` follows the same rule as `status`.
        (&["host", "status"], 1),
        (&["host", "status", "--json"], 1),
        (&["logs"], 0),
        (&["config", "show"], 0),
        (&["providers", "status", "--json"], 0),
    ] {
        clean(&s, args, code);
    }

    // The lifecycle verbs rewrite the plist: the hand-added keys go, nothing secret comes in.
    clean(&s, &[&["agent", "restart"][..], &timing].concat(), 0);
    plist_clean(&s, "agent restart");
    assert!(!std::fs::read_to_string(s.plist()).unwrap().contains("ANTHROPIC_API_KEY"));
    clean(&s, &["agent", "stop"], 0);
    clean(&s, &[&["agent", "start"][..], &timing].concat(), 0);
    plist_clean(&s, "agent start");
    clean(&s, &[&["agent", "regenerate"][..], &timing].concat(), 0);

    // Failures print the Host log's tail: redacted.
    // Stopped first, so install has to load it: the Host then crashes on start.
    clean(&s, &["agent", "stop"], 0);
    TestContext::fixture_flag(&s.root, "crash-on-start", "");
    let r = clean(&s, &["agent", "install", "--wait", "5", "--settle-ms", "300"], 1);
    assert!(
        // Only this attempt's lines (the earlier `pairing via` line is not this failure's
        // cause); `clean` checks no secret is in them.
        r.stderr().contains("last lines of") && r.stderr().contains("crash-on-start is set"),
        "the failure shows the log tail: {}",
        r.stderr()
    );
    plist_clean(&s, "a failed agent install");
    clean(&s, &["agent", "uninstall"], 0);
    let r = clean(&s, &["host", "start", "--wait", "3"], 1);
    assert!(
        r.stderr().contains("crash-on-start is set"),
        "the failure shows the log tail: {}",
        r.stderr()
    );
    assert!(
        r.stderr().contains("pairing via") || r.stderr().contains("<redacted>"),
        "the log tail reaches back to the planted lines: {}",
        r.stderr()
    );

    // A config.json that no longer parses (a typo, the Host half-way through its rewrite):
    // the commands that go on without it still know its secrets.
    let text = serde_json::to_string_pretty(&planted_config()).unwrap();
    std::fs::write(&cfg, &text[..text.len() - 3]).unwrap();
    clean(&s, &["logs"], 0).stdout_has_all(&["pair/<redacted>"]);
    clean(&s, &["doctor"], 1);
    clean(&s, &["doctor", "--json"], 1);
    clean(&s, &["config", "show"], 2);

    // The audit log of every step above.
    let audit = std::fs::read_to_string(s.stack_dir().join("logs/service-control.jsonl")).unwrap();
    has_all(&audit, &["\"action\":\"install\""]);
    assert_clean("the audit log", &audit);
    s.t.wait_no_processes();
}

/// The real Host writes its own secrets into `config.json` when it starts (an onboarding token)
/// and may log them at once. A Host that then fails verification has its log tail printed, and
/// `oyster logs -f` may already be following it: both learn the new secrets before printing.
#[test]
fn a_secret_the_host_writes_while_oyster_runs_is_redacted_too() {
    for verb in ["agent install", "host start"] {
        let s = Stack::pinned("new");
        TestContext::fixture_flag(&s.root, "unhealthy", "");
        let port = s.port;
        let cfg = s.stack_dir().join("host/config.json");
        let log = s.stack_dir().join("logs/oysterun-host.log");
        // What the Host does once it runs: add its token to the config, then log a URL with it.
        let host = std::thread::spawn({
            let (cfg, log) = (cfg.clone(), log.clone());
            move || {
                let t0 = std::time::Instant::now();
                while !std::fs::read_to_string(&log)
                    .unwrap_or_default()
                    .contains("fixture host listening")
                {
                    assert!(t0.elapsed().as_secs() < 20, "the Host never started");
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                let mut v: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&cfg).unwrap()).unwrap();
                v["onboarding_token"] = "OB-late-secret-6c5d4e".into();
                std::fs::write(&cfg, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
                let line = "open https://app.example.com/onboard/OB-late-secret-6c5d4e now";
                assert_eq!(get(port, &format!("/log?line={}", encode(line))), 200);
            }
        });
        let words: Vec<&str> = verb.split(' ').collect();
        let r = s.t.run(args(&words).stack(s.name).port(port).wait_secs(4)).fails_with(1);
        host.join().unwrap();
        let e = r.stderr();
        assert!(
            e.contains("open https://app.example.com/onboard/<redacted> now"),
            "{verb}: the tail shows the line, redacted: {e}"
        );
        assert!(!(r.stdout() + &e).contains("OB-late"), "{verb}: {e}");
        s.t.wait_no_processes();
    }
}

/// `oyster logs -f` started before the Host wrote its token still redacts it.
#[test]
fn logs_follow_learns_a_secret_the_host_writes_after_it_started() {
    let s = Stack::pinned("lf");
    let (t, port) = (&s.t, s.port);
    t.run(args(&["agent", "install"]).stack(s.name).port(port).settle(200)).ok();
    let cfg = s.stack_dir().join("host/config.json");
    let mut follow = t.follow_logs(&["--stack", "lf"]);
    // The follower has started (it printed the Host's first line) before the secret exists.
    follow.read_until("fixture host listening");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&cfg).unwrap()).unwrap();
    v["onboarding_token"] = "OB-late-secret-3b2a19".into();
    std::fs::write(&cfg, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let line = "open https://app.example.com/onboard/OB-late-secret-3b2a19 now";
    assert_eq!(get(port, &format!("/log?line={}", encode(line))), 200);
    assert_eq!(get(port, &format!("/log?line={}", encode("end-of-test"))), 200);
    follow.read_until("end-of-test");
    let (out, _) = follow.stop();
    has_all(&out, &["end-of-test"]);
    has_all(&out, &["open https://app.example.com/onboard/<redacted> now"]);
    has_none(&out, &["OB-late"]);
    t.run(["agent", "uninstall", "--stack", "lf"]).ok();
    t.wait_no_processes();
}
