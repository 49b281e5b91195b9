//! Redaction for everything oyster prints: `~` for the home directory, and no credential values.

use std::path::Path;

use serde_json::Value;

/// Renders `path` with a leading home directory replaced by `~`.
pub fn tilde(home: &Path, path: &Path) -> String {
    match path.strip_prefix(home) {
        Ok(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
        Ok(rest) if !home.as_os_str().is_empty() && home != Path::new("/") => {
            format!("~/{}", rest.display())
        }
        _ => path.display().to_string(),
    }
}

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

/// Marks a config key whose value may be a secret (credentials, tokens, password hashes).
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    [
        "token",
        "secret",
        "password",
        "passwd",
        "credential",
        "hash",
        "api_key",
        "apikey",
        "auth",
        "cookie",
        "session_key",
        "private",
    ]
    .iter()
    .any(|needle| k.contains(needle))
}

/// The placeholder printed instead of a secret value.
pub const REDACTED: &str = "<redacted>";

/// Returns a copy of a JSON document with secret values replaced and home paths shortened.
pub fn redact_value(home: &Path, value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(k) && !v.is_null() {
                        Value::String(REDACTED.into())
                    } else {
                        redact_value(home, v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact_value(home, v)).collect()),
        Value::String(s) if s.starts_with('/') => Value::String(tilde(home, Path::new(s))),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tilde_only_replaces_a_whole_leading_component() {
        let h = Path::new("/Users/a");
        assert_eq!(
            tilde(h, Path::new("/Users/a/.local/bin/x")),
            "~/.local/bin/x"
        );
        assert_eq!(tilde(h, Path::new("/Users/a")), "~");
        assert_eq!(tilde(h, Path::new("/Users/ab/x")), "/Users/ab/x");
        assert_eq!(tilde(h, Path::new("/usr/bin")), "/usr/bin");
    }

    #[test]
    fn secrets_are_replaced_at_any_depth() {
        let v = json!({"auth_token": "s3cret", "nested": {"password_hash": "x", "name": "/h/y"},
                       "list": [{"api_key": "k"}], "some_command": "/h/bin/c", "token_null": null});
        let r = redact_value(Path::new("/h"), &v);
        let text = r.to_string();
        assert!(!text.contains("s3cret") && !text.contains("\"x\"") && !text.contains("\"k\""));
        assert_eq!(r["nested"]["name"], "~/y");
        assert_eq!(r["some_command"], "~/bin/c");
        assert!(r["token_null"].is_null());
    }
}
