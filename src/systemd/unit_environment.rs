//! What the `Environment=` lines of a unit file and its drop-ins set, read as systemd reads
//! them (`config_parse_environ`), so that a unit edited by hand is described as it runs:
//! lines joined at a trailing `\`, `Key = value` with blanks around `=`, only the `[Service]`
//! section, several quoted or unquoted assignments on one line, C escapes (`\x41`, `\n`), a
//! later assignment replacing an earlier one, an empty `Environment=` clearing them all, and
//! `%%` and `%h` specifiers, `UnsetEnvironment=` applied last. A value this cannot know (another specifier, an
//! `EnvironmentFile=` whose lines override every `Environment=`) is `None`, never a guess.

use std::path::Path;

/// The variables `files` (the unit file, then its drop-ins in systemd's order) set, in the
/// order systemd keeps them (a replaced one stays in its place). `home` is what `%h` means.
pub fn environment_of(files: &[&str], home: &Path) -> Vec<(String, Option<String>)> {
    let mut env: Vec<(String, Option<String>)> = vec![];
    let mut env_files = false;
    let mut unset: Vec<String> = vec![];
    for text in files {
        let mut section = String::new();
        for line in logical_lines(text) {
            let line = line.trim();
            if line.is_empty() || line.starts_with(['#', ';']) {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                name.clone_into(&mut section);
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            if section != "Service" {
                continue;
            }
            match key.trim() {
                "Environment" => assign(&mut env, value.trim(), home),
                "EnvironmentFile" => env_files = !value.trim().is_empty(),
                "UnsetEnvironment" => unset_words(&mut unset, value.trim()),
                _ => {}
            }
        }
    }
    // Applied last, to whatever set them: `NAME`, or `NAME=value` only while it has that value.
    env.retain(|(k, v)| {
        !unset.iter().any(|u| match u.split_once('=') {
            None => u == k,
            Some((n, val)) => n == k && v.as_deref() == Some(val),
        })
    });
    if env_files {
        // Its lines override every `Environment=`, and are read when the unit starts.
        env.iter_mut().for_each(|(_, v)| *v = None);
    }
    env
}

/// The file's lines, a line ending in an unescaped `\` joined to the next with a blank
/// (comment lines inside such a run are skipped, as systemd skips them).
fn logical_lines(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut pending: Option<String> = None;
    for raw in text.lines() {
        if pending.is_some() && raw.trim_start().starts_with(['#', ';']) {
            continue;
        }
        let mut line = pending.take().unwrap_or_default();
        line.push_str(raw);
        let trailing = line.bytes().rev().take_while(|b| *b == b'\\').count();
        if trailing % 2 == 1 {
            line.pop();
            line.push(' ');
            pending = Some(line);
        } else {
            out.push(line);
        }
    }
    out.extend(pending);
    out
}

/// One `Environment=` value: an empty one clears every assignment; else each word is an
/// assignment (`KEY=value`), a word systemd would not take skipped, as it skips them.
fn assign(env: &mut Vec<(String, Option<String>)>, value: &str, home: &Path) {
    if value.is_empty() {
        env.clear();
        return;
    }
    let mut rest = value;
    loop {
        // Invalid syntax (an unknown escape, an open quote) ends the line: what came before
        // it stays assigned.
        let Ok(Some((word, after))) = first_word(rest) else {
            return;
        };
        rest = after;
        let Some((key, val)) = word.split_once('=') else {
            continue;
        };
        // systemd skips a name that is not one, and a value with a control character.
        let control = val
            .chars()
            .any(|c| c.is_control() && c != '\t' && c != '\n');
        if !super::unit::is_env_name(key) || control {
            continue;
        }
        let val = specifiers(val, home);
        match env.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = val,
            None => env.push((key.to_owned(), val)),
        }
    }
}

/// One `UnsetEnvironment=` value: an empty one clears the list; else each word is added.
fn unset_words(unset: &mut Vec<String>, value: &str) {
    if value.is_empty() {
        unset.clear();
        return;
    }
    let mut rest = value;
    while let Ok(Some((word, after))) = first_word(rest) {
        unset.push(word);
        rest = after;
    }
}

/// `%%` as `%` and `%h` as `home`; `None` for any other specifier, whose value is the
/// manager's to know (or which it refuses, keeping an earlier value).
fn specifiers(s: &str, home: &Path) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('h') => out.push_str(home.to_str()?),
            _ => return None,
        }
    }
    Some(out)
}

/// The first word of `s` and what follows it, as systemd's `extract_first_word` with
/// `EXTRACT_UNQUOTE | EXTRACT_CUNESCAPE` takes it; `Ok(None)` when only blanks are left, `Err`
/// for what systemd calls invalid syntax.
fn first_word(s: &str) -> Result<Option<(String, &str)>, ()> {
    let s = s.trim_start_matches([' ', '\t', '\n', '\r']);
    if s.is_empty() {
        return Ok(None);
    }
    let mut word: Vec<u8> = vec![];
    let mut quote: Option<u8> = None;
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match (quote, c) {
            (_, b'\\') => {
                let (bytes, used) = unescape_one(&b[i + 1..]).ok_or(())?;
                word.extend_from_slice(&bytes);
                i += 1 + used;
                continue;
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, b'"' | b'\'') => quote = Some(c),
            (None, b' ' | b'\t' | b'\n' | b'\r') => break,
            (None, c) => word.push(c),
        }
        i += 1;
    }
    if quote.is_some() {
        return Err(());
    }
    Ok(Some((String::from_utf8_lossy(&word).into_owned(), &s[i..])))
}

/// One C escape after a `\` (systemd's `cunescape_one`): its bytes and how many bytes of `b`
/// it took; `None` for one systemd refuses.
fn unescape_one(b: &[u8]) -> Option<(Vec<u8>, usize)> {
    let simple = |c: u8| Some((vec![c], 1));
    match *b.first()? {
        b'a' => simple(0x07),
        b'b' => simple(0x08),
        b'f' => simple(0x0c),
        b'n' => simple(b'\n'),
        b'r' => simple(b'\r'),
        b't' => simple(b'\t'),
        b'v' => simple(0x0b),
        b's' => simple(b' '),
        c @ (b'\\' | b'"' | b'\'') => simple(c),
        b'x' => {
            let v = u8::from_str_radix(std::str::from_utf8(b.get(1..3)?).ok()?, 16).ok()?;
            (v != 0).then(|| (vec![v], 3))
        }
        b'u' | b'U' => {
            let n = if b[0] == b'u' { 4 } else { 8 };
            let hex = std::str::from_utf8(b.get(1..=n)?).ok()?;
            let ch = char::from_u32(u32::from_str_radix(hex, 16).ok()?).filter(|c| *c != '\0')?;
            Some((ch.to_string().into_bytes(), 1 + n))
        }
        b'0'..=b'7' => {
            let oct = std::str::from_utf8(b.get(0..3)?).ok()?;
            let v = u8::from_str_radix(oct, 8).ok()?;
            (v != 0).then(|| (vec![v], 3))
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "unit_environment_tests.rs"]
mod tests;
