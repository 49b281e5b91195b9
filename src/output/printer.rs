//! The one printer: every line oyster writes goes through here.
//!
//! Human lines get the home directory as `~`, known secret values replaced, and control
//! characters escaped (a path or log line can never drive the terminal). `--json` documents get
//! the same secrets replaced in their strings, and secret-named keys' values redacted (paths
//! stay absolute). Both through [`redact`], the one redaction module. A closed stdout (`oyster
//! … | head -1`) is remembered and further output dropped, so the command finishes what it was
//! doing and exits quietly instead of panicking.
//!
//! It is one process-wide value (like ripgrep's message macros): set up once by the context,
//! used through [`say!`](crate::say) (stdout) and [`tell!`](crate::tell) (stderr).

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{OnceLock, RwLock};

use super::redact;

/// How a line is marked (colour on a terminal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Ok,
    Warn,
    Fail,
    Heading,
    Dim,
}

/// The process-wide printer.
pub struct Printer {
    home: RwLock<Option<PathBuf>>,
    secrets: RwLock<Vec<String>>,
    color_out: bool,
    color_err: bool,
    stdout_closed: AtomicBool,
}

static PRINTER: OnceLock<Printer> = OnceLock::new();

/// The printer (created on first use, colour decided from the terminal and `NO_COLOR`).
pub fn printer() -> &'static Printer {
    PRINTER.get_or_init(|| {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
            || std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        Printer {
            home: RwLock::new(None),
            secrets: RwLock::new(vec![]),
            color_out: !no_color && io::stdout().is_terminal(),
            color_err: !no_color && io::stderr().is_terminal(),
            stdout_closed: AtomicBool::new(false),
        }
    })
}

impl Printer {
    /// Sets the home directory shown as `~` in human output.
    pub fn set_home(&self, home: &Path) {
        *self.home.write().unwrap_or_else(|e| e.into_inner()) = Some(home.to_owned());
    }

    /// Adds secret values (from `config.json`) that must never be printed.
    pub fn add_secrets(&self, values: impl IntoIterator<Item = String>) {
        let mut s = self.secrets.write().unwrap_or_else(|e| e.into_inner());
        for v in values {
            if v.len() >= redact::MIN_SECRET_LEN && !s.contains(&v) {
                s.push(v);
            }
        }
        // Longest first, so a secret that contains another is replaced whole.
        s.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }

    /// A human line as it will be shown: `~`, secrets, URL credentials, control characters
    /// ([`redact::redact_text`]).
    pub fn human(&self, text: &str) -> String {
        let home = self.home.read().unwrap_or_else(|e| e.into_inner());
        let secrets = self.secrets.read().unwrap_or_else(|e| e.into_inner());
        redact::redact_text(text, home.as_deref(), &secrets)
    }

    /// A JSON document as it will be printed: secret-named keys, known secret values and URL
    /// credentials redacted in every string ([`redact::redact_document`]); paths stay absolute.
    pub fn document(&self, value: &serde_json::Value) -> serde_json::Value {
        let secrets = self.secrets.read().unwrap_or_else(|e| e.into_inner());
        redact::redact_document(value, &secrets)
    }

    /// Whether stdout was closed by its reader.
    pub fn stdout_closed(&self) -> bool {
        self.stdout_closed.load(Ordering::SeqCst)
    }

    fn paint(&self, color: bool, tone: Tone, text: &str) -> String {
        use anstyle::{AnsiColor, Style};
        let style = match tone {
            _ if !color => return text.to_owned(),
            Tone::Ok => Style::new().fg_color(Some(AnsiColor::Green.into())),
            Tone::Warn => Style::new().fg_color(Some(AnsiColor::Yellow.into())),
            Tone::Fail => Style::new().fg_color(Some(AnsiColor::Red.into())).bold(),
            Tone::Heading => Style::new().bold(),
            Tone::Dim => Style::new().dimmed(),
        };
        format!("{style}{text}{style:#}")
    }

    /// Writes bytes to stdout as they are (a plist, a JSON document, a diff already redacted).
    pub fn raw(&self, bytes: &[u8]) {
        if self.stdout_closed() {
            return;
        }
        let mut out = io::stdout().lock();
        if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
            if e.kind() == io::ErrorKind::BrokenPipe {
                self.stdout_closed.store(true, Ordering::SeqCst);
            }
        }
    }

    /// One human line on stdout.
    pub fn out(&self, text: &str) {
        let line = self.human(text);
        self.raw(format!("{line}\n").as_bytes());
    }

    /// Human text on stdout without a newline (a prompt), flushed.
    pub fn out_inline(&self, text: &str) {
        self.raw(self.human(text).as_bytes());
    }

    /// One human line on stderr. A closed stderr is ignored: there is nobody to tell.
    pub fn err(&self, text: &str) {
        self.err_safe(&self.human(text));
    }

    /// Writes a line that is already safe (escaped, redacted) to stderr.
    fn err_safe(&self, line: &str) {
        let _ = writeln!(io::stderr().lock(), "{line}");
    }

    /// One human line on stdout in a tone (coloured on a terminal).
    pub fn out_toned(&self, tone: Tone, text: &str) {
        let line = self.paint(self.color_out, tone, &self.human(text));
        self.raw(format!("{line}\n").as_bytes());
    }

    /// A JSON document on stdout, pretty, with a trailing newline, redacted as
    /// [`Printer::document`] says (so no command can print a secret through a document).
    pub fn json(&self, value: &impl serde::Serialize) {
        let rendered =
            serde_json::to_value(value).and_then(|v| serde_json::to_vec_pretty(&self.document(&v)));
        match rendered {
            Ok(mut bytes) => {
                bytes.push(b'\n');
                self.raw(&bytes);
            }
            Err(e) => self.error(&format!("could not render JSON: {e}"), None),
        }
    }

    /// One line on stderr, before a wait that may be felt, naming what is awaited and the
    /// deadline (CONTRACT.md §10): `waiting for /health on 127.0.0.1:8802 (up to 30 s)…`.
    /// Waits of a second or less pass silently.
    pub fn waiting(&self, what: &str, deadline: std::time::Duration) {
        if deadline <= std::time::Duration::from_secs(1) {
            return;
        }
        let secs = deadline.as_secs_f64();
        let shown = if deadline.subsec_millis() == 0 {
            format!("{} s", deadline.as_secs())
        } else {
            format!("{secs:.1} s")
        };
        let line = self.human(&format!("waiting for {what} (up to {shown})…"));
        self.err_safe(&self.paint(self.color_err, Tone::Dim, &line));
    }

    /// `oyster: note: …` on stderr (a fallback or override in effect).
    pub fn note(&self, text: &str) {
        self.err(&format!("oyster: note: {text}"));
    }

    /// `oyster: warning: …` on stderr.
    pub fn warn(&self, text: &str) {
        let tag = self.paint(self.color_err, Tone::Warn, "warning:");
        self.err_safe(&format!("oyster: {tag} {}", self.human(text)));
    }

    /// `oyster: error: …` and, when there is one, `hint: …` on stderr.
    pub fn error(&self, text: &str, hint: Option<&str>) {
        let tag = self.paint(self.color_err, Tone::Fail, "error:");
        self.err_safe(&format!("oyster: {tag} {}", self.human(text)));
        if let Some(h) = hint {
            self.err_safe(&format!("hint: {}", self.human(h)));
        }
    }
}

/// Prints one human line on stdout through the printer.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => { $crate::output::printer::printer().out(&format!($($arg)*)) };
}

/// Prints one human line on stderr through the printer.
#[macro_export]
macro_rules! tell {
    ($($arg:tt)*) => { $crate::output::printer::printer().err(&format!($($arg)*)) };
}
