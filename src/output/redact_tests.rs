//! Unit tests of redaction: secret keys, known values, URL credentials and credentials by shape.

use super::*;
use serde_json::json;

#[test]
fn an_open_quote_ends_its_value_at_the_end_of_its_line() {
    assert_eq!(
        redact_shapes("{ apiKey: 'cut-here\nnext: `oyster logs -f` follows the Host log"),
        "{ apiKey: '<redacted>\nnext: `oyster logs -f` follows the Host log"
    );
    assert_eq!(
        redact_shapes("\"token\": \"abc\" and \"password\": \"x\\\"y\" ok"),
        "\"token\": \"<redacted>\" and \"password\": \"<redacted>\" ok"
    );
}

#[test]
fn a_private_keys_body_is_redacted_in_one_text_and_line_by_line() {
    let tail = "x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\ny";
    assert_eq!(
        redact_shapes(tail),
        "x\n-----BEGIN OPENSSH PRIVATE KEY-----\n<redacted>\n-----END OPENSSH PRIVATE KEY-----\ny"
    );
    // A tail that ends inside the block, and the message's next step after it.
    assert_eq!(
        redact_shapes("-----BEGIN PRIVATE KEY-----\nMIIEvQ\nnext: `oyster logs -f`"),
        "-----BEGIN PRIVATE KEY-----\n<redacted>\nnext: `oyster logs -f`"
    );
    // Escaped in one line, to its END or the line's end.
    assert_eq!(
        redact_shapes("pem=\"-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----\" ok\nx -----BEGIN RSA PRIVATE KEY-----\\nAAA"),
        "pem=\"-----BEGIN PRIVATE KEY-----<redacted>-----END PRIVATE KEY-----\" ok\nx -----BEGIN RSA PRIVATE KEY-----<redacted>"
    );
    // A public key is not a secret.
    let public = "-----BEGIN PUBLIC KEY-----\nMFkwEwYH\n-----END PUBLIC KEY-----";
    assert_eq!(redact_shapes(public), public);
    let mut pem = PemLines::default();
    let shown: Vec<String> = [
        "-----BEGIN ENCRYPTED PRIVATE KEY-----",
        "Proc-Type: 4,ENCRYPTED",
        "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI",
        "",
        "-----END ENCRYPTED PRIVATE KEY-----",
        "MIIE after the block",
        "-----BEGIN PRIVATE KEY-----",
        "MIIEvQ",
        "the Host crashed before the END line",
        "AAAA",
    ]
    .into_iter()
    .map(|l| pem.line(l.to_owned()))
    .collect();
    assert_eq!(
        shown,
        [
            "-----BEGIN ENCRYPTED PRIVATE KEY-----",
            REDACTED,
            REDACTED,
            REDACTED,
            "-----END ENCRYPTED PRIVATE KEY-----",
            "MIIE after the block",
            "-----BEGIN PRIVATE KEY-----",
            REDACTED,
            "the Host crashed before the END line",
            "AAAA",
        ]
    );
}

#[test]
fn tilde_only_replaces_a_whole_leading_component() {
    let h = Path::new("/Users/a");
    assert_eq!(tilde_text(h, "/Users/a/.local/bin/x"), "~/.local/bin/x");
    assert_eq!(tilde_text(h, "/Users/a"), "~");
    assert_eq!(tilde_text(h, "/Users/ab/x"), "/Users/ab/x");
    assert_eq!(tilde_text(h, "/usr/bin"), "/usr/bin");
    assert_eq!(
        tilde_text(h, "in /Users/a/x, /Users/a and /Users/a.bak"),
        "in ~/x, ~ and /Users/a.bak"
    );
}

#[test]
fn secrets_are_replaced_at_any_depth() {
    let v = json!({"auth_token": "s3cret", "nested": {"password_hash": "x", "name": "/h/y",
                   "deeper": {"SSH_KEY": "ssh-ed25519 AAA"}},
                   "list": [{"api_key": "k"}], "some_command": "/h/bin/c", "token_null": null,
                   "relay_key": "r", "pairing_pin": 123456, "pinned_node": "/n",
                   "url": "https://u:pw@x.example/a?token=t0k&page=2"});
    let r = redact_value(&v);
    let text = r.to_string();
    for leaked in [
        "s3cret", "\"x\"", "\"k\"", "AAA", "\"r\"", "123456", ":pw@", "t0k",
    ] {
        assert!(!text.contains(leaked), "{leaked} leaked: {text}");
    }
    assert_eq!(
        r["nested"]["name"], "/h/y",
        "paths stay absolute in documents"
    );
    assert_eq!(r["pinned_node"], "/n", "pinned is not pin");
    assert!(r["url"].as_str().unwrap().ends_with("page=2"));
    assert!(r["token_null"].is_null());
    let values = secret_values(&v);
    assert!(
        values.contains(&"123456".to_owned()) && values.contains(&"ssh-ed25519 AAA".to_owned())
    );
}

#[test]
fn key_words_split_at_separators_and_case() {
    for secret in [
        "relay_key",
        "relayKey",
        "encryption-key",
        "signing.key",
        "access_key",
        "passphrase",
        "pairing_pin",
        "SSH_KEY",
        "ANTHROPIC_API_KEY",
        "GITHUB_TOKEN",
        "host_credential",
        "device_token",
        "dashboard_password_hash",
        "onboarding_token",
        "otp",
    ] {
        assert!(is_secret_key(secret), "{secret}");
    }
    for plain in [
        "pinned_node",
        "node_command",
        "port",
        "keyboard",
        "monkey",
        "authentication_state",
        "OYSTERUN_NODE_BIN",
        "PATH",
    ] {
        assert!(!is_secret_key(plain), "{plain}");
    }
}

#[test]
fn known_values_are_replaced_in_text_and_documents_and_a_pin_only_standing_alone() {
    let secrets = vec!["OB-token-1234".to_owned(), "918273".to_owned()];
    assert_eq!(
        redact_known(
            "pair/OB-token-1234?x pin 918273, pid 9182731, port 1918273",
            &secrets
        ),
        "pair/<redacted>?x pin <redacted>, pid 9182731, port 1918273"
    );
    assert_eq!(redact_known("918273918273", &secrets), "918273918273");
    let doc = json!({"checks": [{"detail": "should be OB-token-1234", "pid": 918273}],
                     "GITHUB_TOKEN": "ghp_x", "url": "https://u:pw@h/x?api_key=k1&n=2",
                     "path": "/home/a/x"});
    let r = redact_document(&doc, &secrets);
    assert_eq!(r["checks"][0]["detail"], "should be <redacted>");
    assert_eq!(
        r["checks"][0]["pid"], 918273,
        "numbers that are not under a secret key stay"
    );
    assert_eq!(r["GITHUB_TOKEN"], REDACTED);
    assert_eq!(r["url"], "https://<redacted>@h/x?api_key=<redacted>&n=2");
    assert_eq!(r["path"], "/home/a/x", "documents keep absolute paths");
    assert_eq!(
        redact_text(
            "/home/a/x OB-token-1234 \x1b",
            Some(Path::new("/home/a")),
            &secrets
        ),
        "~/x <redacted> \\x1b"
    );
}

#[test]
fn url_credentials_are_secret_values_wherever_they_sit() {
    let v = json!({"relay_url": "https://bob:pw-99@relay.example/v1",
                   "hooks": ["https://h.example/n?channel=ops&token=tk-77"],
                   "site": "https://example.com/?page=2"});
    let mut found = secret_values(&v);
    found.sort();
    assert_eq!(found, ["pw-99", "tk-77"]);
}

#[test]
fn a_config_that_does_not_parse_still_gives_up_its_secrets() {
    let text = r#"{"device_token": "dt-\"q\"-1", "pairing_pin": 4821, "name": "x",
                   "nested": {"relay_key": "rk-2"}, "url": "https://u:pw-3@h/", "broken": "#;
    let mut found = secret_values_in_text(text);
    found.sort();
    assert_eq!(found, ["4821", "dt-\"q\"-1", "pw-3", "rk-2"]);
}

#[test]
fn control_characters_are_escaped_but_lines_and_tabs_kept() {
    assert_eq!(
        escape_controls("a\x1b[31mb\x0c\x01\tc\nd"),
        "a\\x1b[31mb\\x0c\\x01\tc\nd"
    );
}

/// Each line of `cases` redacted by shape to what is wanted.
fn assert_redacted(cases: &[(&str, &str)]) {
    for (line, want) in cases {
        assert_eq!(redact_shapes(line), *want, "{line}");
    }
}

#[test]
fn authorization_headers_and_bearer_tokens_are_redacted() {
    assert_redacted(&[
        (
            "curl -H 'Authorization: Bearer abc.DEF-123_x'",
            "curl -H 'Authorization: Bearer <redacted>'",
        ),
        (
            "authorization=Basic dXNlcjpwYXNz; next",
            "authorization=Basic <redacted>; next",
        ),
        (
            r#"{"Authorization":"Bearer t0k3n-value"}"#,
            r#"{"Authorization":"Bearer <redacted>"}"#,
        ),
        (
            "proxy-authorization: Digest abc123",
            "proxy-authorization: Digest <redacted>",
        ),
        ("sent Bearer 0123456789abcdefXYZ", "sent Bearer <redacted>"),
        ("x-api-key: abc123 next", "x-api-key: <redacted> next"),
        (
            "X-Auth-Token: t0k; Set-Cookie: sid=42",
            "X-Auth-Token: <redacted>; Set-Cookie: <redacted>",
        ),
    ]);
}

#[test]
fn provider_tokens_are_redacted_by_their_shape() {
    let jwt =
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
    assert_redacted(&[
        (
            "key sk-ant-api03-AbCdEf0123456789_xyz-AA done",
            "key <redacted> done",
        ),
        ("key=sk-proj-AbCdEf0123456789", "key=<redacted>"),
        (
            "old sk-0123456789abcdefghijABCDEFGHIJ0123456789abcdefgh",
            "old <redacted>",
        ),
        (
            "gh token ghp_0123456789abcdefghijABCDEFGHIJ0123 ok",
            "gh token <redacted> ok",
        ),
        (
            "github_pat_11ABCDEFG0123456789_abcdefGHIJKLMNOP",
            "<redacted>",
        ),
        (
            "slack xoxb-1234567890-0987654321-AbCdEf",
            "slack <redacted>",
        ),
        (
            "xoxp-12345-67890-abcdef and xoxa-2-abcdefghij",
            "<redacted> and <redacted>",
        ),
        (&format!("jwt={jwt}&x=1"), "jwt=<redacted>&x=1"),
        (&format!("id {jwt}"), "id <redacted>"),
    ]);
}

#[test]
fn secret_named_assignments_are_redacted_and_comparisons_are_not() {
    assert_redacted(&[
        (
            "ANTHROPIC_API_KEY=whatever-it-is x",
            "ANTHROPIC_API_KEY=<redacted> x",
        ),
        (
            "OPENAI_API_KEY=\"q w\" x",
            "OPENAI_API_KEY=\"<redacted>\" x",
        ),
        (
            r#"{"relay_key":"a\"b c","n":1}"#,
            r#"{"relay_key":"<redacted>","n":1}"#,
        ),
        (r#"{"pairing_pin": 4821}"#, r#"{"pairing_pin": <redacted>}"#),
        (
            "export SLACK_BOT_TOKEN='abc'",
            "export SLACK_BOT_TOKEN='<redacted>'",
        ),
        (
            "OYSTERUN_SERVICE_CONTROL_TOKEN = s3",
            "OYSTERUN_SERVICE_CONTROL_TOKEN = <redacted>",
        ),
        (
            r#"{"device_token": "dt-1", "name": "n"}"#,
            r#"{"device_token": "<redacted>", "name": "n"}"#,
        ),
        (
            "a == b, token == 3, x != y, OTHER_KEY==v",
            "a == b, token == 3, x != y, OTHER_KEY==v",
        ),
        ("PASSWORD='p w' done", "PASSWORD='<redacted>' done"),
    ]);
}

#[test]
fn ordinary_words_are_not_redacted() {
    // Ordinary log words stay.
    for line in [
        "task-list sk-learn risk-assessment desk-0123456789abcdefghijklmnop",
        "Bearer authentication is required; bearer tokens expire",
        "sort key=name, hash=sha256 pin=3 private=yes auth=none",
        "the token expired: renew it",
        "fixture host listening on 127.0.0.1:8803",
        "ghost_town gh_pages xoxo-hugs sk-short",
        "eyJhbGciOiJIUzI1NiJ9 alone is only a header",
        "relay_url: null -> \"https://<redacted>@h/\"",
        "device_token: null -> \"<redacted>\"",
        "content-type: application/json; x-request-id: 42",
        "path=/Users/a/.oysterun-stacks/sk-projects/logs",
        "stack sk-production-website-2024-eu in ~/.oysterun-stacks/sk-production-website-2024-eu",
    ] {
        assert_eq!(redact_shapes(line), line, "a false positive");
    }
}

#[test]
fn shapes_are_redacted_through_the_one_door_every_human_line_takes() {
    assert_eq!(
        redact_text(
            "GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ0123",
            None,
            &[]
        ),
        "GITHUB_TOKEN=<redacted>"
    );
    let doc = redact_document(&json!({"detail": "Authorization: Bearer abc123"}), &[]);
    assert_eq!(doc["detail"], "Authorization: Bearer <redacted>");
}

#[test]
fn bidirectional_controls_in_json_become_escapes_of_the_same_string() {
    let doc = serde_json::to_string(&json!({"name": "a\u{202e}b\u{2067}c"})).unwrap();
    let shown = escape_bidi_in_json(&doc);
    assert_eq!(shown, r#"{"name":"a\u202eb\u2067c"}"#);
    let back: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(back["name"], "a\u{202e}b\u{2067}c");
}

#[test]
fn bidirectional_controls_are_escaped_like_other_controls() {
    assert_eq!(
        escape_controls("a\u{202e}b\u{2066}c\u{2069}d\u{202a}e\u{200f}"),
        "a\\u{202e}b\\u{2066}c\\u{2069}d\\u{202a}e\u{200f}"
    );
}

proptest::proptest! {
    /// Any text, ASCII or not, with or without the markers: redaction never panics, and
    /// running it twice changes nothing more.
    #[test]
    fn shape_redaction_never_panics_and_is_stable(
        text in "(\\PC|[=:\"'\\\\ ]|TOKEN|sk-|ghp_|Bearer |eyJ|xoxb-|é|\u{202e}){0,40}"
    ) {
        let once = redact_text(&text, None, &[]);
        proptest::prop_assert_eq!(redact_text(&once, None, &[]), once);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::proptest_cases(128)))]
    /// `logs -f`: however the Host's writes split a stream of credential lines (lines cut
    /// at the 1 MiB cap or a small one included), no line the follower gives out shows a
    /// secret once redacted. The lines come from `sys::tail::Lines`, the follower's own
    /// assembly.
    #[test]
    fn a_credential_split_across_writes_is_never_printed(
        picks in proptest::collection::vec(0usize..8, 1..24),
        cuts in proptest::collection::vec(1usize..40, 1..64),
        max in proptest::prop_oneof![
            proptest::strategy::Just(crate::sys::tail::MAX_LINE),
            24usize..120
        ],
    ) {
        const SECRET_LINES: &[&str] = &[
            "GET /v1 Authorization: Bearer 9f8e7d6c5b4a39281706",
            "using sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3_Lk2-Ji1AA",
            "OPENAI_API_KEY=sk-proj-Qa1Ws2Ed3Rf4Tg5Yh6Uj7",
            "cloned with ghp_Aa0Bb1Cc2Dd3Ee4Ff5Gg6Hh7Ii8Jj9Kk0L",
            "posted xoxb-2048-4096-SlAcKsEcReTvAlUe",
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MiJ9.c2lnbmF0dXJlLXNlY3JldA",
            "GITHUB_TOKEN=github_pat_11AAAAAAA0BBBBBBBBBBBB_CCCCCCCCCCCCCC",
            "an ordinary line with task-list and sk-learn",
        ];
        const SECRETS: &[&str] = &[
            "9f8e7d6c5b4a39281706", "Zx9Yw8Vu7Ts6Rq5Po4Nm3", "Qa1Ws2Ed3Rf4Tg5Yh6Uj7",
            "Aa0Bb1Cc2Dd3Ee4Ff5Gg6", "SlAcKsEcReTvAlUe", "c2lnbmF0dXJlLXNlY3JldA",
            "github_pat_11AAAAAAA0", "CCCCCCCCCCCCCC",
        ];
        let text: String = picks.iter().map(|i| format!("{}\n", SECRET_LINES[*i])).collect();
        let bytes = text.as_bytes();
        let mut lines = crate::sys::tail::Lines::new(max);
        let mut printed = vec![];
        let (mut at, mut k) = (0, 0);
        while at < bytes.len() {
            let n = cuts[k % cuts.len()].min(bytes.len() - at);
            printed.extend(lines.push(&bytes[at..at + n]));
            at += n;
            k += 1;
        }
        printed.extend(lines.finish());
        proptest::prop_assert_eq!(printed.len(), picks.len());
        for line in &printed {
            let shown = redact_text(line, None, &[]);
            for secret in SECRETS {
                proptest::prop_assert!(!shown.contains(secret), "{} in {}", secret, shown);
            }
        }
    }
}

#[test]
fn an_unset_secret_and_a_flag_that_reads_one_from_stdin_are_shown_as_they_are() {
    // A secret that is not set reads as not set.
    assert_eq!(
        redact_shapes(r#""dashboard_password_hash": null,"#),
        r#""dashboard_password_hash": null,"#
    );
    assert_eq!(
        redact_shapes(r#""dashboard_password_hash": "null""#),
        r#""dashboard_password_hash": "<redacted>""#
    );
    // `--password-stdin` takes no value: the next word is the next argument.
    assert_eq!(
        redact_shapes("`oyster setup --password-stdin dev --port 8810`"),
        "`oyster setup --password-stdin dev --port 8810`"
    );
    assert_eq!(
        redact_shapes("--password hunter22"),
        "--password <redacted>"
    );
}
