//! The no-id-branching guard (STYLE.md 7): `src/provider/registry.rs` is the only file that
//! may name a provider fact or pick a provider by position.
//!
//! Every string value of the registry's `Provider { … }` entries (ids, binaries, display names,
//! command keys, npm packages, version patterns, native dirs), read from the file itself, is
//! forbidden inside any string literal of another file under `src/` or `launchd/src/`. A
//! literal is what every comparison shape is made of (`==`, `!=`, `match` arms,
//! `.contains(..)`, `matches!`), and it also catches facts copied into tables or messages
//! elsewhere. `PROVIDERS[n]` and `ptr::eq` are forbidden too: both single out a provider by
//! position or identity instead of by a registry field. Comments are blanked first, so they
//! may explain. Unit tests inside `src/` are held to the same rule (a test that hard-codes a
//! fact goes stale with the registry just as product code does); the failure lists their hits
//! apart, so it is clear which is which.

use std::collections::BTreeSet;
use std::path::Path;

const REGISTRY: &str = "src/provider/registry.rs";

/// A string literal, with its value unescaped (raw strings taken verbatim).
#[derive(Debug)]
struct Lit {
    /// 1-based.
    line: usize,
    /// Char offset of the literal's opening quote (or `r`) in the source.
    at: usize,
    value: String,
}

/// A Rust source split into code and string literals.
struct Lexed {
    /// The source with comments and literal contents replaced by spaces (a literal keeps its
    /// two quotes, char literals become `' '`); one char per source char, newlines kept, so
    /// offsets and line numbers still match the file.
    code: Vec<char>,
    literals: Vec<Lit>,
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Splits `src` into code and literals: `//` and nested `/* */` comments (doc comments
/// included), `"…"` with escapes, `r"…"`/`r#"…"#` (and `b`/`c`/`br` prefixes), char literals
/// (`'"'`, `'\''`) and lifetimes (`'a`).
fn lex(src: &str) -> Lexed {
    let s: Vec<char> = src.chars().collect();
    let n = s.len();
    let mut code: Vec<char> = Vec::with_capacity(n);
    let mut literals = vec![];
    let mut line = 1;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < n {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < n && s[i] != '\n' {
                code.push(' ');
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < n {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    code.extend([' ', ' ']);
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    code.extend([' ', ' ']);
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(s[i] == '\n');
                    code.push(blank(s[i]));
                    i += 1;
                }
            }
            continue;
        }
        // A raw string: `r` (after a `b`/`c` prefix or a non-identifier char), `#`s, `"`.
        let raw_start = c == 'r' && {
            let before = |k: usize| i.checked_sub(k).map(|j| s[j]);
            match before(1) {
                Some('b' | 'c') => !before(2).is_some_and(is_ident),
                Some(p) => !is_ident(p),
                None => true,
            }
        };
        if raw_start {
            let mut j = i + 1;
            while j < n && s[j] == '#' {
                j += 1;
            }
            if j < n && s[j] == '"' {
                let hashes = j - i - 1;
                let close: Vec<char> = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                let body = j + 1;
                let mut k = body;
                while k < n && !s[k..].starts_with(&close) {
                    k += 1;
                }
                let value: String = s[body..k.min(n)].iter().collect();
                literals.push(Lit { line, at: i, value });
                let end = (k + close.len()).min(n);
                code.push('"');
                for &ch in &s[i + 1..end - 1] {
                    line += usize::from(ch == '\n');
                    code.push(blank(ch));
                }
                code.push('"');
                i = end;
                continue;
            }
        }
        if c == '"' {
            let (start_line, at) = (line, i);
            let mut value = String::new();
            code.push('"');
            i += 1;
            while i < n && s[i] != '"' {
                if s[i] == '\\' && i + 1 < n {
                    let (ch, used) = unescape(&s[i..]);
                    value.extend(ch);
                    for &raw in &s[i..i + used] {
                        line += usize::from(raw == '\n');
                        code.push(blank(raw));
                    }
                    i += used;
                } else {
                    value.push(s[i]);
                    line += usize::from(s[i] == '\n');
                    code.push(blank(s[i]));
                    i += 1;
                }
            }
            if i < n {
                code.push('"');
                i += 1;
            }
            literals.push(Lit {
                line: start_line,
                at,
                value,
            });
            continue;
        }
        if c == '\'' {
            // `'\…'` and `'x'` are char literals; anything else is a lifetime or a label.
            let end = if next == Some('\\') {
                // `'\''`, `'\\'`, `'\n'`, `'\u{…}'`: the first quote after the escaped char.
                (i + 3..n).find(|&k| s[k] == '\'')
            } else if s.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            if let Some(end) = end {
                code.push('\'');
                code.extend(std::iter::repeat_n(' ', end - i - 1));
                code.push('\'');
                i = end + 1;
                continue;
            }
        }
        line += usize::from(c == '\n');
        code.push(c);
        i += 1;
    }
    Lexed { code, literals }
}

/// One escape at the start of `s` (which begins with `\`): its value, and how many source
/// chars it used. A `\` before a newline swallows the following whitespace, as rustc does.
fn unescape(s: &[char]) -> (Option<char>, usize) {
    match s[1] {
        'n' => (Some('\n'), 2),
        'r' => (Some('\r'), 2),
        't' => (Some('\t'), 2),
        '0' => (Some('\0'), 2),
        'x' => {
            let hex: String = s[2..4.min(s.len())].iter().collect();
            (
                u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32),
                4,
            )
        }
        'u' => {
            let close = s.iter().position(|&c| c == '}').unwrap_or(s.len() - 1);
            let hex: String = s[3..close].iter().collect();
            (
                u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32),
                close + 1,
            )
        }
        '\n' => {
            let skip = s[2..].iter().take_while(|c| c.is_whitespace()).count();
            (None, 2 + skip)
        }
        other => (Some(other), 2),
    }
}

/// Where a `char` offset falls in the text: 1-based line.
fn line_of(code: &[char], at: usize) -> usize {
    1 + code[..at].iter().filter(|&&c| c == '\n').count()
}

/// The matching close of the `{` at `open`, in blanked code.
fn close_brace(code: &[char], open: usize) -> usize {
    let mut depth = 0;
    for (k, &c) in code.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// Offsets of `word` in code, as a whole identifier.
fn find_word(code: &[char], word: &str) -> Vec<usize> {
    let w: Vec<char> = word.chars().collect();
    (0..code.len().saturating_sub(w.len() - 1))
        .filter(|&k| {
            code[k..].starts_with(&w)
                && !(k > 0 && is_ident(code[k - 1]))
                && !code.get(k + w.len()).is_some_and(|&c| is_ident(c))
        })
        .collect()
}

/// A registry fact: one string value of one `Provider { … }` entry.
#[derive(Debug, Clone)]
struct Fact {
    /// `claude.display_name`, for messages.
    name: String,
    value: String,
}

/// Every string value of every `Provider { … }` entry in the registry source, with the
/// field it belongs to (the struct definition has no literals, so it adds nothing).
fn registry_facts(registry_src: &str) -> Vec<Fact> {
    let lexed = lex(registry_src);
    let code = &lexed.code;
    let mut facts = vec![];
    for at in find_word(code, "Provider") {
        let mut open = at + "Provider".len();
        while code.get(open).is_some_and(|c| c.is_whitespace()) {
            open += 1;
        }
        if code.get(open) != Some(&'{') {
            continue;
        }
        let close = close_brace(code, open);
        let field = |lit: &Lit| -> String {
            let before: String = code[open..lit.at].iter().collect();
            let colon = before
                .char_indices()
                .filter(|&(k, c)| {
                    c == ':' && !before[k + 1..].starts_with(':') && !before[..k].ends_with(':')
                })
                .map(|(k, _)| k)
                .next_back()
                .expect("a field name before every value");
            before[..colon]
                .trim_end()
                .rsplit(|c: char| !is_ident(c))
                .next()
                .unwrap()
                .to_owned()
        };
        let lits: Vec<&Lit> = lexed
            .literals
            .iter()
            .filter(|l| l.at > open && l.at < close)
            .collect();
        let id = lits
            .iter()
            .find(|l| field(l) == "id")
            .map(|l| l.value.clone())
            .unwrap_or_else(|| format!("entry at line {}", line_of(code, at)));
        for l in lits {
            facts.push(Fact {
                name: format!("{id}.{}", field(l)),
                value: l.value.clone(),
            });
        }
    }
    facts
}

/// Whether `hay` holds `needle` with no letter or digit glued to either side (`claude` is in
/// `claude_command` and `~/.claude/x`, not in `claudette`).
fn contains_fact(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(k, _)| {
        !hay[..k]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric)
            && !hay[k + needle.len()..]
                .chars()
                .next()
                .is_some_and(char::is_alphanumeric)
    })
}

/// `(line, offset)` spans of `#[cfg(test)] mod … { … }` blocks, to label hits as test code.
fn test_modules(code: &[char]) -> Vec<(usize, usize)> {
    let text: String = code.iter().collect();
    let mut spans = vec![];
    for (byte, _) in text.match_indices("#[cfg(test)]") {
        let at = text[..byte].chars().count();
        let rest: String = code[at..].iter().take(200).collect();
        let after = rest["#[cfg(test)]".len()..].trim_start();
        if after.starts_with("mod ") {
            // `mod tests;` (a file of its own) has no block here.
            let open = (at..code.len()).find(|&k| code[k] == '{' || code[k] == ';');
            if let Some(open) = open.filter(|&k| code[k] == '{') {
                spans.push((at, close_brace(code, open)));
            }
        }
    }
    spans
}

/// Every breach of the guard in one file's source: `(line, what, in test code)`.
fn violations(src: &str, facts: &[Fact]) -> Vec<(usize, String, bool)> {
    let lexed = lex(src);
    let tests = test_modules(&lexed.code);
    let in_tests = |at: usize| tests.iter().any(|&(a, b)| at > a && at < b);
    let mut out = vec![];
    for lit in &lexed.literals {
        let named: BTreeSet<String> = facts
            .iter()
            .filter(|f| contains_fact(&lit.value, &f.value))
            .map(|f| format!("{} {:?}", f.name, f.value))
            .collect();
        if !named.is_empty() {
            let names = named.into_iter().collect::<Vec<_>>().join(", ");
            out.push((
                lit.line,
                format!("literal {:?} holds {names}", lit.value),
                in_tests(lit.at),
            ));
        }
    }
    let code = &lexed.code;
    for at in find_word(code, "PROVIDERS") {
        let rest: String = code[at + "PROVIDERS".len()..]
            .iter()
            .take(40)
            .filter(|c| !c.is_whitespace())
            .collect();
        if rest.starts_with('[') {
            out.push((
                line_of(code, at),
                "`PROVIDERS[…]` picks a provider by position".into(),
                in_tests(at),
            ));
        }
    }
    for at in find_word(code, "ptr") {
        let rest: String = code[at + 3..]
            .iter()
            .take(40)
            .filter(|c| !c.is_whitespace())
            .collect();
        if rest.starts_with("::eq") && !rest[4..].starts_with(is_ident) {
            out.push((
                line_of(code, at),
                "`ptr::eq` tells providers apart by address".into(),
                in_tests(at),
            ));
        }
    }
    out.sort();
    out
}

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn real_registry_facts() -> Vec<Fact> {
    registry_facts(&std::fs::read_to_string(repo_root().join(REGISTRY)).unwrap())
}

#[test]
fn registry_facts_appear_only_in_the_registry() {
    let facts = real_registry_facts();
    let root = repo_root();
    let mut files = super::common::rust_files(&root.join("src"));
    files.extend(super::common::rust_files(&root.join("launchd/src")));
    assert!(files.len() > 10, "the sources were found: {files:?}");
    let (mut product, mut test_code) = (vec![], vec![]);
    for f in &files {
        if f.ends_with(REGISTRY) {
            continue;
        }
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        for (line, what, in_test) in violations(&std::fs::read_to_string(f).unwrap(), &facts) {
            let hit = format!("  {rel}:{line}: {what}");
            if in_test {
                test_code.push(hit);
            } else {
                product.push(hit);
            }
        }
    }
    let mut msg = String::new();
    if !product.is_empty() {
        msg += &format!(
            "registry facts in product code outside {REGISTRY} (read a registry field, \
             `lookup(id)` or iterate PROVIDERS instead):\n{}\n",
            product.join("\n")
        );
    }
    if !test_code.is_empty() {
        msg += &format!(
            "registry facts in #[cfg(test)] modules of src/ (tests too take their values from \
             the registry: `p.id` in a loop over PROVIDERS, not `PROVIDERS[0]` or a literal):\n{}\n",
            test_code.join("\n")
        );
    }
    assert!(msg.is_empty(), "{msg}");
}

#[test]
fn every_field_of_every_registry_entry_is_read() {
    let facts = real_registry_facts();
    // The ids parsed from the file are exactly the ones the binary reports: the parser reads
    // the real table, not an empty or stale one.
    let ids: Vec<String> = facts
        .iter()
        .filter(|f| f.name.ends_with(".id"))
        .map(|f| f.value.clone())
        .collect();
    assert_eq!(ids, super::common::provider_ids());
    let fields: BTreeSet<&str> = facts
        .iter()
        .map(|f| f.name.split_once('.').unwrap().1)
        .collect();
    for field in [
        "id",
        "binary",
        "display_name",
        "command_key",
        "npm_package",
        "version_pattern",
        "native_dirs",
    ] {
        assert!(fields.contains(field), "no {field} in {facts:?}");
    }
    assert!(facts.iter().all(|f| !f.value.is_empty()), "{facts:?}");
}

#[test]
fn the_guard_sees_every_shape() {
    let facts = real_registry_facts();
    let id = &facts
        .iter()
        .find(|f| f.name.ends_with(".id"))
        .unwrap()
        .value;
    let hits = |src: &str| violations(src, &facts);
    // Each registry value, in each literal shape: the real guard must flag them all.
    for f in &facts {
        let v = &f.value;
        let escaped = v.replace('\\', "\\\\");
        for src in [
            format!(r#"if x == "{escaped}" {{"#),
            format!(r#"if "{escaped}" != x {{"#),
            format!("    \"{escaped}\" => 1,"),
            format!(r#"["{escaped}", "x"].contains(&x)"#),
            format!(r#"matches!(x, "{escaped}")"#),
            format!(r##"let s = r#"{v}"#;"##),
            format!(r#"let s = br"{v}";"#),
            format!(r#"say!("install {escaped} now")"#),
            format!("let s = \"\n  {escaped}\";"),
        ] {
            assert_eq!(hits(&src).len(), 1, "{} missed in {src}", f.name);
        }
    }
    for src in [
        format!(r#"map.get("{id}_command")"#),
        format!(r#"home.join("~/.{id}/x")"#),
        format!(r#"let s = "\x{:02x}{}";"#, id.as_bytes()[0], &id[1..]),
        format!(r#"let s = "\u{{{:x}}}{}";"#, id.as_bytes()[0], &id[1..]),
        format!("let a = '\"'; let s = \"{id}\";"),
        format!(r#"let s = r"C:\"; let t = "{id}";"#),
        format!(r##"let s = r#"say "{id}" now"#;"##),
        format!("fn f<'a>(x: &'a str) -> bool {{ x == \"{id}\" }}"),
        "let p = &PROVIDERS[0];".into(),
        "let p = &registry::PROVIDERS [i];".into(),
        "if std::ptr::eq(a, b) {".into(),
        "core::ptr :: eq(a, b)".into(),
    ] {
        assert_eq!(hits(&src).len(), 1, "missed: {src}");
    }
    // Line numbers count lines inside comments and multi-line literals.
    let src = format!("/* a\nb */ let s = \"x\ny\";\n// \"{id}\"\nx == \"{id}\"");
    assert_eq!(hits(&src)[0].0, 5);
    // Prose and near misses are fine.
    for src in [
        format!(r#"x // "{id}" in a comment"#),
        format!("/// `{id}` in a doc comment"),
        format!("/* \"{id}\" /* nested */ \"{id}\" */ x"),
        format!(r#"let s = "a//b"; // "{id}""#),
        format!(r#"let s = "{id}ette";"#),
        format!("let a = '\"'; // \"{id}\""),
        format!("let a = '\\''; // \"{id}\""),
        format!("let {id} = 1; {id}_command(x);"),
        format!("let r#type = 1; // \"{id}\""),
        r#"let s = "PROVIDERS[0] and ptr::eq";"#.into(),
        "for p in PROVIDERS { if p.id == name {} }".into(),
        "// PROVIDERS[0], std::ptr::eq".into(),
        "std::ptr::eq_ignore(a)".into(),
    ] {
        assert_eq!(hits(&src), vec![], "{src}");
    }
    // Hits inside a `#[cfg(test)] mod` are labelled as test code.
    let src =
        format!("fn a() {{ \"{id}\"; }}\n#[cfg(test)]\nmod tests {{\n fn b() {{ \"{id}\"; }}\n}}");
    let labels: Vec<bool> = hits(&src).into_iter().map(|h| h.2).collect();
    assert_eq!(labels, [false, true]);
}
