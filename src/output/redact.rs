//! Redaction for everything oyster prints: `~` for the home directory, and no credential values.

use std::path::Path;

use serde_json::Value;

/// Replaces every occurrence of the home directory (as a whole leading path) in free text.
pub fn tilde_text(home: &Path, text: &str) -> String {
    let h = home.to_string_lossy();
    if h.is_empty() || h == "/" {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(h.as_ref()) {
        let after = &rest[i + h.len()..];
        out.push_str(&rest[..i]);
        let boundary = after.is_empty()
            || after.starts_with('/')
            || !after
                .starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '-' || c == '.');
        out.push_str(if boundary { "~" } else { &h });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The words that make a key secret (docs/behaviour.md §8), matched against whole words of the key.
const SECRET_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "credential",
    "credentials",
    "key",
    "apikey",
    "pin",
    "auth",
    "cookie",
    "hash",
    "otp",
    "private",
];

/// Splits a key into lowercase words at `_`, `-`, `.` and case changes (`relayKey` → relay,
/// key; `SSH_KEY` → ssh, key).
fn words(key: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if matches!(c, '_' | '-' | '.' | ' ') {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether a config key (or an environment variable's name) names a secret: one of its whole
/// words is a secret word, so `relay_key` and `pairing_pin` are secret and `pinned_node` is not.
pub fn is_secret_key(key: &str) -> bool {
    words(key)
        .iter()
        .any(|w| SECRET_WORDS.contains(&w.as_str()))
}

/// The placeholder printed instead of a secret value.
pub const REDACTED: &str = "<redacted>";

/// Secret values shorter than this are not searched for in free text (they would blank out
/// ordinary words); they are still redacted wherever they appear as a keyed value.
pub const MIN_SECRET_LEN: usize = 4;

/// Returns a copy of a JSON document with the values of secret keys replaced, at any depth,
/// and URL credentials removed from its strings.
pub fn redact_value(value: &Value) -> Value {
    redact_document(value, &[])
}

/// [`redact_value`], and every known secret value (see [`redact_known`]) replaced inside the
/// document's strings too: what every JSON document oyster prints goes through. Paths stay
/// absolute (documents never show `~`).
pub fn redact_document(value: &Value, secrets: &[String]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(k) && !v.is_null() {
                        Value::String(REDACTED.into())
                    } else {
                        redact_document(v, secrets)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| redact_document(v, secrets)).collect())
        }
        Value::String(s) => Value::String(redact_urls(&redact_known(s, secrets))),
        other => other.clone(),
    }
}

/// Replaces every occurrence of the known secret values in `text` (give them longest first, so
/// a secret that contains another is replaced whole). A secret made only of digits (a PIN) is
/// replaced only where it stands alone, never inside a longer number such as a pid or port.
pub fn redact_known(text: &str, secrets: &[String]) -> String {
    let mut s = text.to_owned();
    for secret in secrets {
        if secret.is_empty() || !s.contains(secret.as_str()) {
            continue;
        }
        if secret.bytes().all(|b| b.is_ascii_digit()) {
            s = replace_standalone_number(&s, secret);
        } else {
            s = s.replace(secret.as_str(), REDACTED);
        }
    }
    s
}

/// Replaces `digits` in `text` where neither neighbour is a digit.
fn replace_standalone_number(text: &str, digits: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(digits) {
        let before = rest[..i].chars().last().or_else(|| out.chars().last());
        let after = rest[i + digits.len()..].chars().next();
        out.push_str(&rest[..i]);
        let alone = !before.is_some_and(|c| c.is_ascii_digit())
            && !after.is_some_and(|c| c.is_ascii_digit());
        out.push_str(if alone { REDACTED } else { digits });
        rest = &rest[i + digits.len()..];
    }
    out.push_str(rest);
    out
}

/// A human line as it may be shown or logged: the home directory as `~` (when given), known
/// secret values replaced, URL credentials removed, control characters escaped. The printer and
/// the audit log both use it.
pub fn redact_text(text: &str, home: Option<&Path>, secrets: &[String]) -> String {
    let s = match home {
        Some(home) => tilde_text(home, text),
        None => text.to_owned(),
    };
    escape_controls(&redact_urls(&redact_known(&s, secrets)))
}

/// Every value held under a secret key, at any depth, as text (numbers included), and the
/// credentials and secret query values of every URL anywhere in the document, so free text
/// that quotes one (a log line, an error) can be redacted too.
pub fn secret_values(value: &Value) -> Vec<String> {
    fn walk(v: &Value, under_secret: bool, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    walk(v, under_secret || is_secret_key(k), out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, under_secret, out)),
            Value::String(s) if under_secret => out.push(s.clone()),
            Value::String(s) => out.extend(url_secrets(s)),
            Value::Number(n) if under_secret => out.push(n.to_string()),
            _ => {}
        }
    }
    let mut out = vec![];
    walk(value, false, &mut out);
    out
}

/// The secrets of a `config.json` that does not parse (a typo, or the Host half-way through
/// its own rewrite): every string or number held by a secret-named key, found leniently in the
/// text, and every URL's credentials. Values nested in an object under a secret key are found
/// only when their own key names a secret.
pub fn secret_values_in_text(text: &str) -> Vec<String> {
    use std::sync::OnceLock;
    static PAIR: OnceLock<regex_lite::Regex> = OnceLock::new();
    let pair = PAIR.get_or_init(|| {
        regex_lite::Regex::new(
            r#""((?:[^"\\]|\\.)*)"\s*:\s*(?:("(?:[^"\\]|\\.)*")|(-?[0-9][0-9.eE+\-]*))"#,
        )
        .expect("a fixed pattern")
    });
    let mut out: Vec<String> = pair
        .captures_iter(text)
        .filter(|c| is_secret_key(&c[1]))
        .filter_map(|c| match (c.get(2), c.get(3)) {
            (Some(quoted), _) => Some(
                serde_json::from_str::<String>(quoted.as_str())
                    .unwrap_or_else(|_| quoted.as_str().trim_matches('"').to_owned()),
            ),
            (None, Some(number)) => Some(number.as_str().to_owned()),
            _ => None,
        })
        .collect();
    out.extend(url_secrets(text));
    out
}

/// The pattern of `scheme://user:password@`.
fn userinfo_re() -> &'static regex_lite::Regex {
    use std::sync::OnceLock;
    static USERINFO: OnceLock<regex_lite::Regex> = OnceLock::new();
    USERINFO.get_or_init(|| {
        regex_lite::Regex::new(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/@\s:]+):([^/@\s]+)@")
            .expect("a fixed pattern")
    })
}

/// The pattern of one query parameter, `?name=value` or `&name=value`.
fn query_re() -> &'static regex_lite::Regex {
    use std::sync::OnceLock;
    static QUERY: OnceLock<regex_lite::Regex> = OnceLock::new();
    QUERY.get_or_init(|| {
        regex_lite::Regex::new(r#"([?&;])([A-Za-z0-9_.\-]+)=([^&;#\s"']+)"#)
            .expect("a fixed pattern")
    })
}

/// The password of every `user:password@` and the value of every secret-named query parameter
/// in `text`.
pub fn url_secrets(text: &str) -> Vec<String> {
    if !text.contains("://") && !text.contains('=') {
        return vec![];
    }
    let mut out: Vec<String> = userinfo_re()
        .captures_iter(text)
        .map(|c| c[3].to_owned())
        .collect();
    out.extend(
        query_re()
            .captures_iter(text)
            .filter(|c| is_secret_key(&c[2]))
            .map(|c| c[3].to_owned()),
    );
    out
}

/// Replaces `user:password@` in URLs and the values of secret-named query parameters
/// (`?token=…`, `&api_key=…`).
pub fn redact_urls(text: &str) -> String {
    if !text.contains("://") && !text.contains('=') {
        return text.to_owned();
    }
    let s = userinfo_re().replace_all(text, format!("${{1}}{REDACTED}@").as_str());
    query_re()
        .replace_all(&s, |c: &regex_lite::Captures<'_>| {
            if is_secret_key(&c[2]) {
                format!("{}{}={REDACTED}", &c[1], &c[2])
            } else {
                c[0].to_owned()
            }
        })
        .into_owned()
}

/// Escapes control characters (other than newline and tab) so text from paths, files and logs
/// can never drive the terminal: ESC becomes `\x1b`, form feed `\x0c`.
pub fn escape_controls(text: &str) -> String {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
