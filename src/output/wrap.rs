//! Prose laid out for the terminal it is read on: a line longer than the terminal is broken
//! at spaces, its continuation indented under its text. Only on a terminal — piped output and
//! JSON keep their lines whole, for the programs that read them.

/// The width lines are wrapped to on `stream`: the terminal's, or `COLUMNS`, or 80 when
/// neither says; `None` when the stream is not a terminal (never wrapped).
pub fn width_of(stream: &impl std::os::fd::AsFd, is_terminal: bool) -> Option<usize> {
    if !is_terminal {
        return None;
    }
    let from_terminal = terminal_size::terminal_size_of(stream).map(|(w, _)| usize::from(w.0));
    let from_env = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok());
    Some(
        from_terminal
            .or(from_env)
            .filter(|w| *w >= 20)
            .unwrap_or(80),
    )
}

/// Where a line's text starts: after a leading `[tag] ` (the column `doctor`'s checks and
/// their `fix:` lines share), under the value of a `key:   value` line (the columns `status`
/// prints), else after the line's own indentation. Returns (the prefix kept as it is, the
/// indentation of continuation lines).
fn layout(line: &str, width: usize) -> (usize, usize) {
    let lead = line.len() - line.trim_start().len();
    let rest = &line[lead..];
    // `[ok  ]`, `[warn]`, `[FAIL]`: a short word in brackets, then a space.
    let tag = rest.strip_prefix('[').and_then(|r| {
        let i = r.find("] ")?;
        (i <= 6 && r[..i].chars().all(|c| c.is_ascii_alphabetic() || c == ' ')).then_some(i)
    });
    if let Some(i) = tag {
        let start = lead + 1 + i + 2;
        if start <= width / 2 {
            return (start, start);
        }
    }
    let key = rest
        .find(": ")
        .filter(|&i| {
            i <= 16
                && rest[..i]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || " -_".contains(c))
        })
        .map(|i| {
            let after = &rest[i + 1..];
            lead + i + 1 + (after.len() - after.trim_start().len())
        });
    match key {
        Some(start) if start <= width / 2 => (start, start),
        _ => (lead, (lead + 2).min(width / 2)),
    }
}

/// `text` (one or more lines) with every line longer than `width` characters broken at
/// spaces, continuations indented under the text. A word longer than the room is never cut (a
/// path or a command stays whole): it starts a line of its own, as far left as the
/// indentation allows.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        if columns(line) <= width {
            out.push_str(line);
            continue;
        }
        let (start, indent) = layout(line, width);
        let mut current = line[..start].to_owned();
        let mut used = columns(&current);
        let mut empty = true;
        // Each word with the run of spaces before it, kept as it is within a line (aligned
        // columns stay aligned); a break drops the run.
        for (gap, word) in words_with_gaps(&line[start..]) {
            let len = columns(word);
            if !empty && used + gap.len() + len > width {
                out.push_str(&current);
                out.push('\n');
                current = " ".repeat(indent);
                used = indent;
                empty = true;
            }
            if !empty {
                current.push_str(gap);
                used += gap.len();
            }
            current.push_str(word);
            used += len;
            empty = false;
        }
        out.push_str(&current);
    }
    out
}

/// A line whose text after `head` is one list joined by `sep` (a PATH): longer than `width`,
/// it breaks after a separator, each continuation indented under the list's first item. An
/// item longer than the room is never cut.
pub fn wrap_list(head: &str, list: &str, sep: char, width: usize) -> String {
    let indent = columns(head);
    let mut out = head.to_owned();
    let mut used = indent;
    let mut empty = true;
    for item in list.split_inclusive(sep) {
        let len = columns(item);
        if !empty && used + len > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            used = indent;
        }
        out.push_str(item);
        used += len;
        empty = false;
    }
    out
}

/// The words of `text`, each with the run of spaces before it (the first word's is empty).
fn words_with_gaps(text: &str) -> Vec<(&str, &str)> {
    let mut out = vec![];
    let mut rest = text.trim_start_matches(' ');
    let mut gap = "";
    while !rest.is_empty() {
        let end = rest.find(' ').unwrap_or(rest.len());
        out.push((gap, &rest[..end]));
        let after = &rest[end..];
        let next = after.trim_start_matches(' ');
        gap = &after[..after.len() - next.len()];
        rest = next;
    }
    out
}

/// The columns `text` takes on a terminal: a CJK ideograph, a Hangul syllable, a fullwidth
/// form or an emoji takes two, a combining mark none, anything else one (the East Asian Wide
/// and Fullwidth ranges of Unicode's EastAsianWidth.txt, as `wcwidth` counts them).
pub fn columns(text: &str) -> usize {
    text.chars().map(char_columns).sum()
}

fn char_columns(c: char) -> usize {
    match u32::from(c) {
        0x0300..=0x036F | 0x200B..=0x200F | 0xFE00..=0xFE0F => 0,
        0x1100..=0x115F
        | 0x2E80..=0x303E
        | 0x3041..=0x33FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1F64F
        | 0x1F900..=0x1F9FF
        | 0x20000..=0x2FFFD
        | 0x30000..=0x3FFFD => 2,
        _ => 1,
    }
}

/// `path` shortened to `max` characters by cutting its middle (`/Users/…/logs/host.log`), for
/// a table column that must stay aligned.
pub fn cut_middle(path: &str, max: usize) -> String {
    let chars: Vec<char> = path.chars().collect();
    if chars.len() <= max || max < 5 {
        return path.to_owned();
    }
    let keep = max - 1;
    let head = keep / 3;
    let tail = keep - head;
    let mut s: String = chars[..head].iter().collect();
    s.push('…');
    s.extend(&chars[chars.len() - tail..]);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn runs_of_spaces_are_kept_within_a_line_and_dropped_at_a_break() {
        let line = format!("{:<10}{:<10}{}", "dev", "running", "word ".repeat(20));
        let w = wrap(&line, 40);
        assert!(w.starts_with("dev       running   word"), "{w}");
        assert!(w.lines().all(|l| columns(l) <= 40), "{w}");
        assert!(!w.lines().skip(1).any(|l| l.trim_start().starts_with(' ')));
    }

    #[test]
    fn a_long_line_breaks_at_spaces_under_its_value() {
        let line = "  installed: no (~/Library/LaunchAgents/com.oysterun.host.plist); `oyster setup` sets the Host up (`oyster install` installs the LaunchAgent alone)";
        let w = wrap(line, 80);
        let lines: Vec<&str> = w.lines().collect();
        assert!(lines.len() > 1, "{w}");
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{w}");
        // The key's column is kept, and the continuation starts under the value.
        assert!(lines[0].starts_with("  installed: no ("), "{w}");
        assert!(lines[1].starts_with(&" ".repeat(13)), "{w}");
        assert!(!lines[1].starts_with(&" ".repeat(14)), "{w}");
        let aligned = wrap(&format!("  log:       {}", "word ".repeat(30)), 80);
        assert!(aligned.starts_with("  log:       word"), "{aligned}");
        // A short line and several lines keep their shape.
        assert_eq!(wrap("a\nb c", 80), "a\nb c");
    }

    #[test]
    fn wide_characters_take_two_columns_when_a_line_is_fitted() {
        let cjk = "数据".repeat(12);
        let w = wrap(&format!("error: the root ({cjk} {cjk} {cjk}) has none"), 80);
        assert!(w.lines().all(|l| columns(l) <= 80), "{w}");
        assert_eq!(columns("数据a"), 5);
        assert_eq!(columns("e\u{301}"), 1);
    }

    #[test]
    fn a_doctor_line_continues_under_its_text_where_its_fix_starts() {
        let line = format!("[warn] host login: {}", "not set ".repeat(12));
        let w = wrap(&line, 80);
        let lines: Vec<&str> = w.lines().collect();
        assert!(
            lines.len() > 1 && lines[0].starts_with("[warn] host login: not"),
            "{w}"
        );
        assert!(
            lines[1..]
                .iter()
                .all(|l| l.starts_with("       ") && !l.starts_with("        ")),
            "{w}"
        );
        // Brackets that are no tag keep the ordinary rule.
        let other = wrap(&format!("[a long bracket] {}", "word ".repeat(20)), 40);
        assert!(
            other.lines().nth(1).unwrap().starts_with("  word"),
            "{other}"
        );
    }

    #[test]
    fn a_long_path_list_breaks_after_a_colon_under_its_first_directory() {
        let dirs = [
            "/Users/someone/.nvm/versions/node/v22.11.0/bin",
            "/Users/someone/.local/bin",
            "/opt/homebrew/bin",
            "/usr/local/bin",
            "/usr/bin",
            "/bin",
            "/usr/sbin",
            "/sbin",
        ];
        let list = dirs.join(":");
        let w = wrap_list("  PATH=", &list, ':', 80);
        let lines: Vec<&str> = w.lines().collect();
        assert!(lines.len() > 1, "{w}");
        assert!(lines.iter().all(|l| columns(l) <= 80), "{w}");
        assert!(
            lines[0].starts_with("  PATH=/Users/") && lines[0].ends_with(':'),
            "{w}"
        );
        assert!(lines[1].starts_with("       /"), "{w}");
        // Joined back, it is the same list.
        let back: String = lines
            .iter()
            .map(|l| l.trim_start().trim_start_matches("PATH="))
            .collect();
        assert_eq!(back, list);
        // Short enough, one line.
        assert_eq!(wrap_list("  PATH=", "/a:/b", ':', 80), "  PATH=/a:/b");
    }

    #[test]
    fn a_word_longer_than_the_line_is_never_cut() {
        let long = format!("see {}", "x".repeat(100));
        let w = wrap(&long, 40);
        assert_eq!(w, format!("see\n  {}", "x".repeat(100)));
    }

    #[test]
    fn a_long_path_is_cut_in_its_middle_to_the_room_it_has() {
        let p = "/Users/someone/.oysterun-stacks/a-long-stack-name/logs/oysterun-host.log";
        let cut = cut_middle(p, 40);
        assert_eq!(cut.chars().count(), 40);
        assert!(
            cut.starts_with("/Users/") && cut.ends_with("oysterun-host.log"),
            "{cut}"
        );
        assert_eq!(cut_middle("/short", 40), "/short");
    }

    proptest! {
        /// Wrapping keeps every word, in order, and no line is wider than the width unless it
        /// is one word.
        #[test]
        fn wrapping_keeps_every_word_and_the_width(words in proptest::collection::vec("[a-z/`~.]{1,30}", 1..40), width in 20usize..120) {
            let text = words.join(" ");
            let w = wrap(&text, width);
            let back: Vec<&str> = w.split_whitespace().collect();
            prop_assert_eq!(back, words.iter().map(String::as_str).collect::<Vec<_>>());
            for l in w.lines() {
                prop_assert!(l.chars().count() <= width || l.trim().split(' ').count() == 1, "{:?}", l);
            }
        }
    }
}
