//! Secret-named assignments in free text: `NAME=value`, `NAME = "value"`, `"NAME": "value"`
//! and `'NAME': 'value'`, HTTP headers (`x-api-key: …`) and objects as Node prints them
//! (`{ apiKey: 'sk-…' }`). One pass over the text, no regex: every log line with a `=` or `:`
//! goes through it.

use super::{is_secret_assignment, REDACTED};

/// `NAME=value`, `NAME = "value"`, `"NAME": "value"` and `'NAME': 'value'` where NAME names a
/// secret ([`is_secret_assignment`]): the value (a quoted one whole) becomes `<redacted>`,
/// quotes kept. `NAME == value` is a comparison, left alone.
pub(super) fn redact_assignments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'=' && b[i] != b':' {
            i += 1;
            continue;
        }
        let key = key_before(text, i);
        if !assigns_secret(b, i, &key) {
            i += 1;
            continue;
        }
        let (from, to, q) = value_after(text, i + 1, key.cookie);
        let value = &text[from..to];
        // A bare `null` is a secret that is not set (`"dashboard_password_hash": null`):
        // shown as such, since `<redacted>` would read as set.
        let quoted = from > 0 && matches!(b[from - 1], b'"' | b'\'');
        let unset = value == "null" && !quoted;
        if value.is_empty() || value == REDACTED || unset {
            i = to.max(i + 1);
            continue;
        }
        out.push_str(&text[copied..from]);
        out.push_str(REDACTED);
        copied = to;
        i = to + usize::from(q.is_some());
    }
    out.push_str(&text[copied..]);
    out
}

/// The name before a `=` or `:` separator: `NAME =`, `"NAME":`, `'NAME' :`.
struct Key<'t> {
    name: &'t str,
    /// Where the name starts in the text.
    start: usize,
    /// The quote right after the name, when it is quoted.
    quote: Option<u8>,
    /// Whether the name (or its closing quote) touches the separator, no space between.
    touching: bool,
    /// A `Cookie` header or key is a session's credential whatever its case (a bare `cookie=`
    /// in prose is not: see [`is_secret_assignment`]).
    cookie: bool,
}

/// The key before the separator at `sep`.
fn key_before(text: &str, sep: usize) -> Key<'_> {
    let b = text.as_bytes();
    let is_name = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-');
    let mut k = sep;
    while k > 0 && b[k - 1] == b' ' {
        k -= 1;
    }
    let quote = (k > 0 && matches!(b[k - 1], b'"' | b'\'')).then(|| b[k - 1]);
    let end = k - usize::from(quote.is_some());
    let mut start = end;
    while start > 0 && is_name(b[start - 1]) {
        start -= 1;
    }
    while start < end && !b[start].is_ascii_alphabetic() {
        start += 1;
    }
    let name = &text[start..end];
    Key {
        name,
        start,
        quote,
        touching: k == sep,
        cookie: b[sep] == b':' && name.eq_ignore_ascii_case("cookie"),
    }
}

/// Whether the separator at `sep` after `key` gives a secret its value.
fn assigns_secret(b: &[u8], sep: usize, key: &Key<'_>) -> bool {
    let colon = b[sep] == b':';
    let bare = key.quote.is_none() && key.touching;
    // `:` counts after a quoted key (JSON, Python), or as an HTTP header: a hyphenated name
    // right before it and a space after (`x-api-key: …`, `X-Auth-Token: …`), not oyster's own
    // `device_token: null -> …`.
    let header = bare && (key.name.contains('-') || key.cookie) && b.get(sep + 1) == Some(&b' ');
    // Or as Node prints an object (`util.inspect`, so `console.log(req.headers)` or
    // `console.log(process.env)`): an unquoted key right before it and a quoted value after
    // (`{ apiKey: 'sk-…' }`); `device_token: null` has no quote.
    let inspected = bare && matches!(b.get(after_spaces(b, sep + 1)), Some(b'\'' | b'"'));
    if colon && key.quote.is_none() && !header && !inspected {
        return false;
    }
    let opening = key
        .quote
        .is_none_or(|q| key.start > 0 && b[key.start - 1] == q);
    let comparison = !colon
        && (b.get(sep + 1) == Some(&b'=')
            || (sep > 0 && matches!(b[sep - 1], b'=' | b'!' | b'<' | b'>')));
    !key.name.is_empty() && opening && !comparison && (key.cookie || is_secret_assignment(key.name))
}

/// The first byte at or after `i` that is not a space.
fn after_spaces(b: &[u8], mut i: usize) -> usize {
    while b.get(i) == Some(&b' ') {
        i += 1;
    }
    i
}

/// The value after a secret's separator (spaces from `v` on skipped), as `(from, to, closing
/// quote)`: quoted whole, a `Cookie:` header's to the end of its line, or a run of value
/// characters.
fn value_after(text: &str, v: usize, cookie: bool) -> (usize, usize, Option<u8>) {
    let b = text.as_bytes();
    let v = after_spaces(b, v);
    match b.get(v) {
        Some(&q @ (b'"' | b'\'')) => {
            // To its closing quote, or the end of its line: a quote left open (a cut line, an
            // apostrophe) must not take the rest of a multi-line message with it (a failure's
            // log tail and its `next:` step are one text).
            let mut e = v + 1;
            while e < b.len() && b[e] != q && b[e] != b'\n' {
                e += if b[e] == b'\\' { 2 } else { 1 };
            }
            let e = e.min(b.len());
            (v + 1, e, (b.get(e) == Some(&q)).then_some(q))
        }
        // A `Cookie:` header's value is every cookie to the end of its line.
        _ if cookie => {
            let e = text[v..].find('\n').map_or(b.len(), |n| v + n);
            (v, e, None)
        }
        _ => {
            let mut e = v;
            while e < b.len()
                && !b[e].is_ascii_whitespace()
                && !matches!(b[e], b'"' | b'\'' | b'`' | b',' | b';' | b'&' | b'}' | b']')
            {
                e += 1;
            }
            (v, e, None)
        }
    }
}
