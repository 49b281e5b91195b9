//! Everything oyster says: the printer, redaction, and the audit log.

pub mod audit;
pub mod printer;
pub mod redact;
pub mod report;
pub mod wrap;

/// `s` as one POSIX shell word for a command oyster suggests: unchanged when it holds only
/// characters no shell treats specially, else in single quotes (a `'` inside as `'\''`). `~`
/// is quoted: at the start of a word the shell would expand it.
pub fn shell_word(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

pub use printer::{printer, Mode, Tone};
pub use report::Reporter;

/// Teaches the redaction these secret values (read by code below the commands, which prints
/// nothing itself): no output of this run can show them. Not output: the one list every
/// printed line is filtered through.
pub fn learn_secrets(values: Vec<String>) {
    printer::printer().add_secrets(values);
}

/// The secret values of `path`, as just read by whoever read it, so the printer does not read
/// the file again.
pub fn learned(path: &std::path::Path, values: Vec<String>) {
    printer::printer().learned(path, values);
}

/// A path the user gave, as one line of output: every control character escaped, newline and
/// tab too (the printer keeps those in ordinary text), so a name like `x\nAll done` can never
/// forge a second line.
pub fn one_line(path: &std::path::Path) -> String {
    let text = path.display().to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    redact::escape_controls(&out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_path_is_one_line_whatever_its_name_holds() {
        let p = std::path::Path::new("/tmp/a\nwrote x\t\u{1b}[31m\u{202e}.plist");
        assert_eq!(
            super::one_line(p),
            "/tmp/a\\nwrote x\\t\\x1b[31m\\u{202e}.plist"
        );
    }
}
