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
                    // A secret that is not set (null, "") is shown as not set: `<redacted>`
                    // would read as set.
                    let unset = v.is_null() || v.as_str() == Some("");
                    let v = if is_secret_key(k) && !unset {
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
        Value::String(s) => Value::String(redact_shapes(&redact_urls(&redact_known(s, secrets)))),
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
    escape_controls(&redact_shapes(&redact_urls(&redact_known(&s, secrets))))
}

/// The credential shapes redacted in free text whatever their value (docs/behaviour.md §8,
/// README "What is redacted"): the whole token is replaced, or, where a name or header says
/// what follows (`Authorization: Bearer …`, `GITHUB_TOKEN=…`, `"device_token": "…"`), the value
/// after it. Each needs a distinctive prefix and a sensible length, so ordinary words (`task-list`,
/// `sk-learn`, `Bearer tokens`) are left alone.
///
/// Each comes with the literal text it cannot match without (regex-lite has
/// no prefilter of its own): a line without it is not searched, and a pattern is compiled only
/// the first time a line holds its literal (compiling all six cost a read-only command about a
/// tenth of its instructions, for documents that hold none).
const SHAPES: [(&[&str], &str); 6] = [
    // Anthropic (`sk-ant-api03-…`) and OpenAI project, service-account and admin keys.
    (
        &["sk-"],
        r"\bsk-(?:ant|proj|svcacct|admin)-[A-Za-z0-9_-]{8,}",
    ),
    // OpenAI's older keys: `sk-` and 20 or more letters and digits (theirs have 48); no
    // `-` or `_`, so a slug such as a stack named `sk-production-website` stays.
    (&["sk-"], r"\bsk-[A-Za-z0-9]{20,}"),
    // GitHub: classic (`ghp_`, and the OAuth/app/refresh kinds) and fine-grained tokens.
    (
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        r"\bgh[pousr]_[A-Za-z0-9]{20,}",
    ),
    (&["github_pat_"], r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    // Slack bot, user, app and config tokens.
    (&["xox"], r"\bxox[abprse]-[A-Za-z0-9-]{10,}"),
    // A JWT: two base64url JSON objects (both begin `{"`, so `eyJ`) and a signature.
    (
        &[".eyJ"],
        r"\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
    ),
];

/// The compiled pattern of `SHAPES[i]`, compiled on first use.
fn shape_re(i: usize) -> &'static regex_lite::Regex {
    use std::sync::OnceLock;
    static COMPILED: [OnceLock<regex_lite::Regex>; SHAPES.len()] =
        [const { OnceLock::new() }; SHAPES.len()];
    COMPILED[i].get_or_init(|| regex_lite::Regex::new(SHAPES[i].1).expect("a fixed pattern"))
}

fn authorization_re() -> &'static regex_lite::Regex {
    use std::sync::OnceLock;
    static AUTH: OnceLock<regex_lite::Regex> = OnceLock::new();
    AUTH.get_or_init(|| {
        regex_lite::Regex::new(
            r#"(?i)(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest|bot)\s+)?)([^\s"',;\[{]+)"#,
        )
        .expect("a fixed pattern")
    })
}

/// A command line's `--NAME VALUE` (a provider spawned with `--api-key …`, logged by the
/// Host): NAME and the value after the space (not after `--NAME-stdin`, a flag of its own).
fn flag_re() -> &'static regex_lite::Regex {
    use std::sync::OnceLock;
    static FLAG: OnceLock<regex_lite::Regex> = OnceLock::new();
    FLAG.get_or_init(|| {
        regex_lite::Regex::new(r"((?:^|\s)--([A-Za-z][A-Za-z0-9_-]*)[ \t]+)([^\s-][^\s]*)")
            .expect("a fixed pattern")
    })
}

/// `Bearer <token>` on its own: a token of 16 or more characters with a digit in it (prose
/// such as "Bearer authentication" has none).
fn bearer_re() -> &'static regex_lite::Regex {
    use std::sync::OnceLock;
    static BEARER: OnceLock<regex_lite::Regex> = OnceLock::new();
    BEARER.get_or_init(|| {
        regex_lite::Regex::new(r"(\b[Bb]earer\s+)([A-Za-z0-9._~+/-]{16,}=*)")
            .expect("a fixed pattern")
    })
}

/// Whether `name=value` is a secret assignment: the name names a secret, and is not only one
/// of the words ordinary text uses as a name, in any case (`key=name`, `hash=sha256`, `PIN=3`).
fn is_secret_assignment(name: &str) -> bool {
    const ORDINARY: &[&str] = &["key", "hash", "pin", "private", "auth", "cookie", "otp"];
    is_secret_key(name) && !ORDINARY.contains(&name.to_ascii_lowercase().as_str())
}

/// Redacts the credential shapes of [`SHAPES`], `Authorization` headers, `Bearer` tokens and
/// secret-named assignments in free text.
pub fn redact_shapes(text: &str) -> String {
    // Cheap refusals first: most log lines hold none of the markers.
    let lower = text.to_ascii_lowercase();
    let mut s = text.to_owned();
    for (i, (needles, _)) in SHAPES.iter().enumerate() {
        if needles.iter().any(|n| s.contains(n)) {
            s = shape_re(i).replace_all(&s, REDACTED).into_owned();
        }
    }
    if lower.contains("authorization") {
        s = authorization_re()
            .replace_all(&s, |c: &regex_lite::Captures<'_>| {
                format!("{}{REDACTED}", &c[1])
            })
            .into_owned();
    }
    if lower.contains("bearer") {
        s = bearer_re()
            .replace_all(&s, |c: &regex_lite::Captures<'_>| {
                if c[2].bytes().any(|b| b.is_ascii_digit()) {
                    format!("{}{REDACTED}", &c[1])
                } else {
                    c[0].to_owned()
                }
            })
            .into_owned();
    }
    if s.contains(['=', ':']) {
        s = redact_assignments(&s);
    }
    if s.contains("--") {
        s = flag_re()
            .replace_all(&s, |c: &regex_lite::Captures<'_>| {
                // `--password-stdin` says where the secret comes from; the word after it is
                // the next argument, never the secret.
                let from_stdin = c[2].to_ascii_lowercase().ends_with("-stdin");
                if is_secret_assignment(&c[2]) && !from_stdin && c[3] != *REDACTED {
                    format!("{}{REDACTED}", &c[1])
                } else {
                    c[0].to_owned()
                }
            })
            .into_owned();
    }
    if s.contains("PRIVATE KEY-----") {
        // Within a line (a JSON-logged string, `\n` escaped): to its END or the line's end.
        s = pem_re()
            .replace_all(&s, |c: &regex_lite::Captures<'_>| {
                let body = if c[2].is_empty() { "" } else { REDACTED };
                format!("{}{body}{}", &c[1], &c[3])
            })
            .into_owned();
        // Over lines (a log tail): as `logs` reads them, so the block ends at its END line or
        // at the first line that cannot be a key's (the message's own next step).
        if s.contains('\n') {
            let mut pem = PemLines::default();
            s = s
                .split('\n')
                .map(|l| pem.line(l.to_owned()))
                .collect::<Vec<_>>()
                .join("\n");
        }
    }
    s
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

/// Whether `c` is a Unicode bidirectional embedding, override or isolate control (U+202A–U+202E,
/// U+2066–U+2069): invisible, they reorder what a terminal shows after them ("Trojan Source").
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Rendered JSON with every bidirectional control written as its JSON escape (`\u202e`): the
/// document means the same to a reader, and a terminal showing it is not reordered. (They can
/// only be inside strings, where the escape is valid.)
pub fn escape_bidi_in_json(json: &str) -> String {
    if !json.chars().any(is_bidi_control) {
        return json.to_owned();
    }
    json.chars()
        .map(|c| {
            if is_bidi_control(c) {
                format!("\\u{:04x}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Escapes control characters (other than newline and tab) so text from paths, files and logs
/// can never drive the terminal: ESC becomes `\x1b`, form feed `\x0c`, and a bidirectional
/// control `\u{202e}`.
pub fn escape_controls(text: &str) -> String {
    let escaped = |c: char| (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c);
    if !text.chars().any(escaped) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_bidi_control(c) {
            out.push_str(&format!("\\u{{{:04x}}}", c as u32));
        } else if escaped(c) {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

mod assign;
mod pem;

use assign::redact_assignments;
use pem::pem_re;
pub use pem::PemLines;

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
