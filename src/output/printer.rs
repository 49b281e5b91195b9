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
use std::sync::{Mutex, OnceLock, RwLock};

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

/// What stdout carries for this run: human lines, or one JSON document (`--json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Human,
    Json,
}

/// Reads the secret values of one file (`config.json`, a plist) for the printer.
pub type SecretSource = fn(&Path) -> Vec<String>;

/// The process-wide printer.
pub struct Printer {
    /// Whether this run's stdout is one JSON document (set once by the command layer from the
    /// command's `--json`).
    json: AtomicBool,
    home: RwLock<Option<PathBuf>>,
    secrets: RwLock<Vec<String>>,
    /// Files whose secrets are read only when something is first printed — unless the
    /// command reads the file itself first and hands them over ([`Printer::learned`]), so a
    /// command opens each file once.
    sources: Mutex<Vec<(PathBuf, SecretSource)>>,
    color_out: bool,
    color_err: bool,
    /// The terminal width prose is wrapped to on stdout and stderr; `None` for a stream that
    /// is not a terminal (piped output is never wrapped).
    width_out: Option<usize>,
    width_err: Option<usize>,
    stdout_closed: AtomicBool,
    /// `-q/--quiet`: an action's report and progress are left out.
    quiet: AtomicBool,
    /// `-v/--verbose`: the proofs are said too.
    verbose: AtomicBool,
    /// The first error writing stdout other than a closed pipe (a full disk, an I/O error):
    /// the output the user asked for is lost, so the run cannot end with 0.
    stdout_failed: RwLock<Option<String>>,
}

static PRINTER: OnceLock<Printer> = OnceLock::new();

/// The printer (created on first use, colour decided from the terminal and `NO_COLOR`).
pub fn printer() -> &'static Printer {
    PRINTER.get_or_init(|| {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
            || std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        Printer {
            json: AtomicBool::new(false),
            home: RwLock::new(None),
            secrets: RwLock::new(vec![]),
            sources: Mutex::new(vec![]),
            color_out: !no_color && io::stdout().is_terminal(),
            color_err: !no_color && io::stderr().is_terminal(),
            width_out: super::wrap::width_of(&io::stdout(), io::stdout().is_terminal()),
            width_err: super::wrap::width_of(&io::stderr(), io::stderr().is_terminal()),
            stdout_closed: AtomicBool::new(false),
            quiet: AtomicBool::new(false),
            verbose: AtomicBool::new(false),
            stdout_failed: RwLock::new(None),
        }
    })
}

impl Printer {
    /// Sets the output mode for the run (the command layer does, once, from `--json`).
    pub fn set_mode(&self, mode: Mode) {
        self.json.store(mode == Mode::Json, Ordering::SeqCst);
    }

    /// `-q/--quiet` and `-v/--verbose`, set once from the command line.
    pub fn set_verbosity(&self, quiet: bool, verbose: bool) {
        self.quiet.store(quiet, Ordering::SeqCst);
        self.verbose.store(verbose, Ordering::SeqCst);
    }

    /// `-q/--quiet`: an action's report and progress are not printed.
    pub fn quiet(&self) -> bool {
        self.quiet.load(Ordering::SeqCst)
    }

    /// `-v/--verbose`: the proofs are printed too.
    pub fn verbose(&self) -> bool {
        self.verbose.load(Ordering::SeqCst)
    }

    /// A line of an action's own report (`Stopped …`, `Host verified: …`): stdout, toned,
    /// left out under `-q/--quiet`.
    pub fn outcome(&self, tone: Tone, text: &str) {
        if !self.quiet() {
            self.out_toned(tone, text);
        }
    }

    /// [`Printer::outcome`], untoned.
    pub fn said(&self, text: &str) {
        if !self.quiet() {
            self.out(text);
        }
    }

    /// The output mode: commands render a document or human lines by it.
    pub fn mode(&self) -> Mode {
        if self.json.load(Ordering::SeqCst) {
            Mode::Json
        } else {
            Mode::Human
        }
    }

    /// Prints `doc` as the run's JSON document in JSON mode; else calls `human` to say it in
    /// lines. One door for every command that has both.
    pub fn show<T: serde::Serialize>(&self, doc: &T, human: impl FnOnce()) {
        match self.mode() {
            Mode::Json => self.json(doc),
            Mode::Human => human(),
        }
    }

    /// Sets the home directory shown as `~` in human output.
    pub fn set_home(&self, home: &Path) {
        *self.home.write().unwrap_or_else(|e| e.into_inner()) = Some(home.to_owned());
    }

    /// Registers a file whose secrets must never be printed: read by `read` just before the
    /// first thing is printed, unless [`Printer::learned`] hands them over first.
    pub fn add_secret_source(&self, path: &Path, read: SecretSource) {
        let mut s = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        s.push((path.to_owned(), read));
    }

    /// The secrets of a registered file, from a caller that read it anyway: the printer need
    /// not open it again.
    pub fn learned(&self, path: &Path, values: impl IntoIterator<Item = String>) {
        self.sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(p, _)| p != path);
        self.add_secrets(values);
    }

    /// Reads every registered file not handed over yet (once).
    fn learn_pending(&self) {
        let pending = std::mem::take(&mut *self.sources.lock().unwrap_or_else(|e| e.into_inner()));
        for (path, read) in pending {
            self.add_secrets(read(&path));
        }
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
        self.learn_pending();
        let home = self.home.read().unwrap_or_else(|e| e.into_inner());
        let secrets = self.secrets.read().unwrap_or_else(|e| e.into_inner());
        redact::redact_text(text, home.as_deref(), &secrets)
    }

    /// A JSON document as it will be printed: secret-named keys, known secret values and URL
    /// credentials redacted in every string ([`redact::redact_document`]); paths stay absolute.
    pub fn document(&self, value: &serde_json::Value) -> serde_json::Value {
        self.learn_pending();
        let secrets = self.secrets.read().unwrap_or_else(|e| e.into_inner());
        redact::redact_document(value, &secrets)
    }

    /// Whether stdout was closed by its reader.
    pub fn stdout_closed(&self) -> bool {
        self.stdout_closed.load(Ordering::SeqCst)
    }

    /// Why writing stdout failed, when it did for another reason than a closed pipe.
    pub fn stdout_failed(&self) -> Option<String> {
        self.stdout_failed
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
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
            } else {
                // Said once at the end (lib.rs); what follows is not written either.
                self.stdout_closed.store(true, Ordering::SeqCst);
                let mut failed = self
                    .stdout_failed
                    .write()
                    .unwrap_or_else(|e| e.into_inner());
                failed.get_or_insert_with(|| e.to_string());
            }
        }
    }

    /// One human line on stdout, wrapped to the terminal (prose).
    pub fn out(&self, text: &str) {
        let line = self.fit_out(&self.human(text));
        self.raw(format!("{line}\n").as_bytes());
    }

    /// The width of the terminal stdout is, if it is one (a table cuts its widest column to
    /// it).
    pub fn width(&self) -> Option<usize> {
        self.width_out
    }

    fn fit_out(&self, line: &str) -> String {
        match (self.width_out, self.json.load(Ordering::SeqCst)) {
            (Some(w), false) => super::wrap::wrap(line, w),
            _ => line.to_owned(),
        }
    }

    fn fit_err(&self, line: &str) -> String {
        match self.width_err {
            Some(w) => super::wrap::wrap(line, w),
            None => line.to_owned(),
        }
    }

    /// `head` and a list joined by `sep` (the Host's `PATH=`) on stdout: one line when piped,
    /// on a terminal broken after a separator to fit, under the list's first item.
    pub fn out_list(&self, head: &str, list: &str, sep: char) {
        let list = self.human(list);
        let text = match (self.width_out, self.json.load(Ordering::SeqCst)) {
            (Some(w), false) => super::wrap::wrap_list(head, &list, sep, w),
            _ => format!("{head}{list}"),
        };
        self.raw(format!("{text}\n").as_bytes());
    }

    /// One line on stdout as one line, never re-flowed to the terminal (the Host's own log
    /// lines: the terminal wraps them, and a copied line stays whole).
    pub fn out_unwrapped(&self, text: &str) {
        let line = self.human(text);
        self.raw(format!("{line}\n").as_bytes());
    }

    /// One row of a table on stdout, in a tone: never wrapped (the caller fits its columns).
    pub fn out_row(&self, tone: Tone, text: &str) {
        let line = self.paint(self.color_out, tone, &self.human(text));
        self.raw(format!("{line}\n").as_bytes());
    }

    /// Text shown as the bytes it is (a `--dry-run` diff that must compare and apply): real
    /// paths, no `~`; known secret values and URL credentials still replaced, control
    /// characters still escaped. Returns the 1-based numbers of the lines that had something
    /// redacted, so the caller can say so.
    pub fn verbatim(&self, text: &str) -> Vec<usize> {
        self.learn_pending();
        let secrets = self.secrets.read().unwrap_or_else(|e| e.into_inner());
        let mut changed = vec![];
        let mut shown = String::with_capacity(text.len() + 1);
        for (n, line) in text.lines().enumerate() {
            let safe = redact::redact_text(line, None, &secrets);
            if safe != line {
                changed.push(n + 1);
            }
            shown.push_str(&safe);
            shown.push('\n');
        }
        drop(secrets);
        self.raw(shown.as_bytes());
        changed
    }

    /// Human text on stdout without a newline (a prompt), flushed.
    pub fn out_inline(&self, text: &str) {
        let human = self.human(text);
        let mut fitted = self.fit_out(&human);
        // A question wrapped to the terminal like any prose; the answer is still typed after
        // its trailing space, on its last line.
        if human.ends_with(' ') && !fitted.ends_with(' ') {
            fitted.push(' ');
        }
        self.raw(fitted.as_bytes());
    }

    /// One human line on stderr, wrapped to the terminal. A closed stderr is ignored: there
    /// is nobody to tell.
    pub fn err(&self, text: &str) {
        self.err_safe(&self.fit_err(&self.human(text)));
    }

    /// `oyster: TAG text` on stderr, wrapped as plain text, then the tag painted.
    fn tagged(&self, tag: &str, tone: Tone, text: &str) {
        let line = self.fit_err(&format!("oyster: {tag} {}", self.human(text)));
        let painted = self.paint(self.color_err, tone, tag);
        self.err_safe(&line.replacen(tag, &painted, 1));
    }

    /// Writes a line that is already safe (escaped, redacted) to stderr.
    fn err_safe(&self, line: &str) {
        let _ = writeln!(io::stderr().lock(), "{line}");
    }

    /// One human line on stdout in a tone (coloured on a terminal), wrapped to it.
    pub fn out_toned(&self, tone: Tone, text: &str) {
        let line = self.paint(self.color_out, tone, &self.fit_out(&self.human(text)));
        self.raw(format!("{line}\n").as_bytes());
    }

    /// A JSON document on stdout, pretty, with a trailing newline, redacted as
    /// [`Printer::document`] says (so no command can print a secret through a document).
    pub fn json(&self, value: &impl serde::Serialize) {
        let rendered =
            serde_json::to_value(value).and_then(|v| serde_json::to_vec_pretty(&self.document(&v)));
        match rendered {
            Ok(bytes) => {
                // serde escapes control characters but writes other characters as they are:
                // a bidirectional control is written as its `\u` escape instead (the same
                // string to a JSON reader, inert on a terminal).
                let mut text = redact::escape_bidi_in_json(&String::from_utf8_lossy(&bytes));
                text.push('\n');
                self.raw(text.as_bytes());
            }
            Err(e) => self.error(&format!("could not render JSON: {e}"), None),
        }
    }

    /// One line on stderr, before a wait that may be felt, naming what is awaited and the
    /// deadline (docs/behaviour.md §10): `waiting for /health on 127.0.0.1:8802 (up to 30 s)…`.
    /// Waits of a second or less pass silently.
    pub fn waiting(&self, what: &str, deadline: std::time::Duration) {
        if deadline <= std::time::Duration::from_secs(1) || self.quiet() {
            return;
        }
        let secs = deadline.as_secs_f64();
        let shown = if deadline.subsec_millis() == 0 {
            format!("{} s", deadline.as_secs())
        } else {
            format!("{secs:.1} s")
        };
        // Wrapped like any prose: a port, a label or a long wait can take it past 80 columns.
        let line = self.fit_err(&self.human(&format!("waiting for {what} (up to {shown})…")));
        self.err_safe(&self.paint(self.color_err, Tone::Dim, &line));
    }

    /// `oyster: note: …` on stderr (a fallback or override in effect).
    pub fn note(&self, text: &str) {
        if self.quiet() {
            return;
        }
        self.err(&format!("oyster: note: {text}"));
    }

    /// `oyster: warning: …` on stderr.
    pub fn warn(&self, text: &str) {
        self.tagged("warning:", Tone::Warn, text);
    }

    /// `oyster: error: …` and, when there is one, `hint: …` on stderr.
    pub fn error(&self, text: &str, hint: Option<&str>) {
        self.tagged("error:", Tone::Fail, text);
        if let Some(h) = hint {
            self.err_safe(&self.fit_err(&format!("hint: {}", self.human(h))));
        }
    }
}
