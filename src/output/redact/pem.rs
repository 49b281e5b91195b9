//! PEM private keys: their body lines are plain base64, so they are redacted by the lines
//! around them — one string at a time (`pem_re`) or a log's lines one by one (`PemLines`).

use super::*;

/// A PEM private key within one line (a JSON-logged string with `\n` escaped): the body
/// between its BEGIN and END markers, or to the end of the line when its END is not there.
pub(super) fn pem_re() -> &'static regex_lite::Regex {
    use std::sync::OnceLock;
    static PEM: OnceLock<regex_lite::Regex> = OnceLock::new();
    PEM.get_or_init(|| {
        regex_lite::Regex::new(
            r"(?m)(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)(.*?)(-----END [A-Z0-9 ]*PRIVATE KEY-----|$)",
        )
        .expect("a fixed pattern")
    })
}

/// The BEGIN and END lines of a PEM private key.
fn pem_marker_re(kind: &str) -> regex_lite::Regex {
    regex_lite::Regex::new(&format!("-----{kind} [A-Z0-9 ]*PRIVATE KEY-----"))
        .expect("a fixed pattern")
}

/// A log's lines given one at a time (`logs`, `logs -f`): the body lines of a PEM private key
/// printed over several lines are `<redacted>`, from a BEGIN line to its END line. Body lines
/// have no shape of their own (base64), so this needs the lines before them; a line that is not
/// a key's (not base64, a PEM header or blank) ends the block even without its END line.
#[derive(Debug, Default)]
pub struct PemLines {
    inside: bool,
}

impl PemLines {
    /// The line as it may be shown (the printer redacts the rest).
    pub fn line(&mut self, line: String) -> String {
        use std::sync::OnceLock;
        // Most lines hold no marker at all: no regex for them.
        if !self.inside && !line.contains("PRIVATE KEY-----") {
            return line;
        }
        static BEGIN: OnceLock<regex_lite::Regex> = OnceLock::new();
        static END: OnceLock<regex_lite::Regex> = OnceLock::new();
        let begin = BEGIN.get_or_init(|| pem_marker_re("BEGIN"));
        let end = END.get_or_init(|| pem_marker_re("END"));
        if self.inside {
            if let Some(m) = end.find(&line) {
                self.inside = false;
                return if m.start() == 0 {
                    line
                } else {
                    format!("{REDACTED}{}", &line[m.start()..])
                };
            }
            if is_pem_body(&line) {
                return REDACTED.to_owned();
            }
            self.inside = false;
        }
        if let Some(b) = begin.find_iter(&line).last() {
            self.inside = !end.is_match(&line[b.end()..]);
        }
        line
    }

    /// Forgets an open block (the log was truncated or rotated).
    pub fn reset(&mut self) {
        self.inside = false;
    }
}

/// Whether a line may be part of a PEM body: base64, blank, or an RFC 1421 header
/// (`Proc-Type: 4,ENCRYPTED`, `DEK-Info: …`).
fn is_pem_body(line: &str) -> bool {
    let t = line.trim();
    t.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        || t.starts_with("Proc-Type: ")
        || t.starts_with("DEK-Info: ")
}
