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

/// The words that make a key secret (CONTRACT.md §8), matched against whole words of the key.
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

/// Returns a copy of a JSON document with the values of secret keys replaced, at any depth.
pub fn redact_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(k) && !v.is_null() {
                        Value::String(REDACTED.into())
                    } else {
                        redact_value(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact_value).collect()),
        Value::String(s) => Value::String(redact_urls(s)),
        other => other.clone(),
    }
}

/// Every value held under a secret key, at any depth, as text (numbers included), so free
/// text that quotes one (a log line, an error) can be redacted too.
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
            Value::Number(n) if under_secret => out.push(n.to_string()),
            _ => {}
        }
    }
    let mut out = vec![];
    walk(value, false, &mut out);
    out
}

/// Replaces `user:password@` in URLs and the values of secret-named query parameters
/// (`?token=…`, `&api_key=…`).
pub fn redact_urls(text: &str) -> String {
    use std::sync::OnceLock;
    static USERINFO: OnceLock<regex_lite::Regex> = OnceLock::new();
    static QUERY: OnceLock<regex_lite::Regex> = OnceLock::new();
    if !text.contains("://") && !text.contains('=') {
        return text.to_owned();
    }
    let userinfo = USERINFO.get_or_init(|| {
        regex_lite::Regex::new(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s:]+:[^/@\s]+@")
            .expect("a fixed pattern")
    });
    let query = QUERY.get_or_init(|| {
        regex_lite::Regex::new(r#"([?&;])([A-Za-z0-9_.\-]+)=([^&;#\s"']+)"#)
            .expect("a fixed pattern")
    });
    let s = userinfo.replace_all(text, format!("${{1}}{REDACTED}@").as_str());
    query
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
    fn control_characters_are_escaped_but_lines_and_tabs_kept() {
        assert_eq!(
            escape_controls("a\x1b[31mb\x0c\x01\tc\nd"),
            "a\\x1b[31mb\\x0c\\x01\tc\nd"
        );
    }
}
