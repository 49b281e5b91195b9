//! Exit statuses, and errors that carry their kind from where they are made.
//!
//! Every error type oyster makes says what kind it is ([`HasKind`]): invalid input (exit 2),
//! an operational failure (exit 1), or a run a signal stopped (exit 128 + N). The top level
//! asks the chain once ([`kind_of`]) through the registered types; an error of no registered
//! type (an `anyhow!` message, an `io::Error`) is a failure. [`render`] turns the chain into
//! the one `oyster: error: …` message and its `hint:`.

use std::process::ExitCode;

/// What a command ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Success, including a user's cancel.
    Success,
    /// The operation failed.
    Failure,
    /// Invalid input or usage.
    Invalid,
}

impl From<ExitStatus> for ExitCode {
    fn from(s: ExitStatus) -> ExitCode {
        match s {
            ExitStatus::Success => ExitCode::SUCCESS,
            ExitStatus::Failure => ExitCode::from(1),
            ExitStatus::Invalid => ExitCode::from(2),
        }
    }
}

/// What an error means for the run, and so its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The operation failed (exit 1).
    Failure,
    /// The user's input or a file they gave is wrong (exit 2).
    Invalid,
    /// A signal stopped the run, after its rollback (exit 128 + N).
    Interrupted(crate::sys::signal::Signal),
}

impl Kind {
    /// The exit status as a number (`--json` errors carry it).
    pub fn number(self) -> u8 {
        match self {
            Kind::Failure => 1,
            Kind::Invalid => 2,
            Kind::Interrupted(sig) => crate::sys::signal::exit_code(sig),
        }
    }

    /// The kind as `--json` errors name it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Failure => "failure",
            Kind::Invalid => "invalid",
            Kind::Interrupted(_) => "interrupted",
        }
    }

    /// `Invalid` for a problem with the user's input, else `Failure`.
    pub fn invalid_if(invalid_input: bool) -> Kind {
        match invalid_input {
            true => Kind::Invalid,
            false => Kind::Failure,
        }
    }

    pub fn exit_code(self) -> ExitCode {
        match self {
            Kind::Failure => ExitStatus::Failure.into(),
            Kind::Invalid => ExitStatus::Invalid.into(),
            Kind::Interrupted(sig) => ExitCode::from(crate::sys::signal::exit_code(sig)),
        }
    }
}

/// An error type that knows its [`Kind`]. Implemented next to each error type.
pub trait HasKind {
    fn kind(&self) -> Kind;
}

/// Asks an error chain for every kind one registered type gives it.
pub type KindProbe = fn(&anyhow::Error) -> Vec<Kind>;

/// The [`KindProbe`] of type `T` (listed once, at the top, in `lib.rs`): `T` anywhere in the
/// chain, as a cause or as context added on the way up.
pub fn probe<T: HasKind + std::error::Error + Send + Sync + 'static>(
    err: &anyhow::Error,
) -> Vec<Kind> {
    let mut kinds: Vec<Kind> = err
        .chain()
        .filter_map(|cause| cause.downcast_ref::<T>())
        .map(HasKind::kind)
        .collect();
    // A context layer is not a cause `chain()` can downcast; anyhow finds it itself.
    kinds.extend(err.downcast_ref::<T>().map(HasKind::kind));
    kinds
}

/// The kind of a whole chain: an interrupt anywhere in it wins (the run was stopped); then any
/// invalid input; else a failure. `pending` is a signal received while the error was made: a
/// child cut short with its process group fails, but the run ends as that signal's.
pub fn kind_of(
    err: &anyhow::Error,
    probes: &[KindProbe],
    pending: Option<crate::sys::signal::Signal>,
) -> Kind {
    let kinds: Vec<Kind> = probes.iter().flat_map(|p| p(err)).collect();
    if let Some(k) = kinds.iter().find(|k| matches!(k, Kind::Interrupted(_))) {
        return *k;
    }
    if let Some(sig) = pending {
        return Kind::Interrupted(sig);
    }
    if kinds.contains(&Kind::Invalid) {
        Kind::Invalid
    } else {
        Kind::Failure
    }
}

/// How a refusal ends: it wrote nothing.
pub const NOTHING_CHANGED: &str = "; nothing was changed";

/// A refusal's sentence without its closing [`NOTHING_CHANGED`], for a place that lists the
/// problem instead of refusing with it (a doctor check, a status note, a prompt asked again).
fn why(msg: &str) -> &str {
    msg.strip_suffix(NOTHING_CHANGED).unwrap_or(msg)
}

/// Invalid input: what is wrong, and (when there is one) the fix, printed as `hint:`.
#[derive(Debug, thiserror::Error)]
#[error("{msg}")]
pub struct Invalid {
    pub msg: String,
    pub hint: Option<String>,
}

impl Invalid {
    pub fn new(msg: impl Into<String>) -> Invalid {
        Invalid {
            msg: msg.into(),
            hint: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Invalid {
        self.hint = Some(hint.into());
        self
    }

    /// What is wrong, without "nothing was changed" ([`NOTHING_CHANGED`]).
    pub fn why(&self) -> &str {
        why(&self.msg)
    }
}

impl HasKind for Invalid {
    fn kind(&self) -> Kind {
        Kind::Invalid
    }
}

/// A failure with the fix to print as `hint:`.
#[derive(Debug, thiserror::Error)]
#[error("{msg}")]
pub struct Failed {
    pub msg: String,
    pub hint: Option<String>,
}

impl Failed {
    pub fn new(msg: impl Into<String>, hint: impl Into<String>) -> Failed {
        Failed {
            msg: msg.into(),
            hint: Some(hint.into()),
        }
    }

    /// What failed, without "nothing was changed" ([`NOTHING_CHANGED`]).
    pub fn why(&self) -> &str {
        why(&self.msg)
    }
}

impl HasKind for Failed {
    fn kind(&self) -> Kind {
        Kind::Failure
    }
}

/// Context whose `lead` goes before the cause, as any context does, and whose `after` is said
/// after the whole message: setup says the real cause first, then what it rolled back.
#[derive(Debug, thiserror::Error)]
#[error("{lead}")]
pub struct Afterword {
    pub lead: String,
    pub after: String,
}

/// A run stopped by SIGINT, SIGTERM or SIGHUP, after its rollback (exit 128 + the signal).
#[derive(Debug, thiserror::Error)]
#[error("interrupted by {0}; {1}")]
pub struct Interrupted(pub crate::sys::signal::Signal, pub String);

impl HasKind for Interrupted {
    fn kind(&self) -> Kind {
        Kind::Interrupted(self.0)
    }
}

/// `text` without the " (os error N)" std's io::Error appends to the system's words.
fn without_os_error(mut text: String) -> String {
    while let Some(i) = text.find(" (os error ") {
        match text[i..].find(')') {
            Some(j) => text.replace_range(i..i + j + 1, ""),
            None => break,
        }
    }
    text
}

/// The message (each cause once) and the hint of an error chain.
pub fn render(err: &anyhow::Error) -> (String, Option<String>) {
    let hint = err
        .chain()
        .find_map(|c| {
            c.downcast_ref::<Invalid>()
                .and_then(|i| i.hint.clone())
                .or_else(|| c.downcast_ref::<Failed>().and_then(|f| f.hint.clone()))
        })
        // One given as context is not a cause `chain()` can downcast; anyhow finds it.
        .or_else(|| err.downcast_ref::<Invalid>().and_then(|i| i.hint.clone()))
        .or_else(|| err.downcast_ref::<Failed>().and_then(|f| f.hint.clone()));
    // `{:#}` joins causes with ": "; a cause whose text the message already holds is dropped
    // (compared without std's " (os error 20)", a Rust detail that is never shown).
    let mut text = String::new();
    for cause in err.chain() {
        let s = without_os_error(cause.to_string());
        if text.contains(&s) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&s);
    }
    if let Some(a) = err.downcast_ref::<Afterword>() {
        text.push('\n');
        text.push_str(&a.after);
    }
    (text, hint)
}

// The sys layer sits below this one, so its error's kind is said here.
impl HasKind for crate::sys::fs::FsError {
    fn kind(&self) -> Kind {
        Kind::invalid_if(self.is_invalid_input())
    }
}

/// Why bytes are not a property list, in words. The `plist` crate's `Display` is the debug
/// form of its error kind (`UnexpectedEndOfEventStream (offset 80)`, and for a corrupt binary
/// plist the in-memory reader's `Io(Error { kind: InvalidInput, … })`): said here as words, with
/// the offset. Bytes in memory have no I/O to fail, so an I/O error can only mean the file's
/// own structure points outside it.
pub fn plist_problem(e: &plist::Error) -> String {
    if e.is_eof() {
        return "it ends before its structure does (cut short?)".to_owned();
    }
    if e.as_io().is_some() {
        return "its binary structure points outside the file (corrupt)".to_owned();
    }
    let shown = e.to_string();
    let mut words = String::new();
    for c in shown.chars().take_while(char::is_ascii_alphanumeric) {
        if c.is_ascii_uppercase() && !words.is_empty() {
            words.push(' ');
        }
        words.push(c.to_ascii_lowercase());
    }
    match shown.rfind("(offset ") {
        Some(i) => format!("{words} at {}", shown[i + 1..].trim_end_matches(')')),
        None => words,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

    #[test]
    fn render_says_each_cause_once_with_the_first_hint_and_no_os_error_number() {
        let io = std::io::Error::from_raw_os_error(20);
        let err = Err::<(), _>(io)
            .context("could not read /x/config.json: Not a directory")
            .context(Failed::new("install failed", "move /x aside"))
            .unwrap_err();
        let (text, hint) = render(&err);
        assert_eq!(
            text,
            "install failed: could not read /x/config.json: Not a directory"
        );
        assert_eq!(hint.as_deref(), Some("move /x aside"));
    }

    #[test]
    fn render_puts_an_afterword_after_the_whole_message_and_an_invalid_hint_through() {
        let err = Err::<(), _>(Invalid::new("port 70000 is out of range").hint("give 1-65535"))
            .context(Afterword {
                lead: "setup failed".into(),
                after: "Rolled back: the plist.".into(),
            })
            .unwrap_err();
        let (text, hint) = render(&err);
        assert_eq!(
            text,
            "setup failed: port 70000 is out of range\nRolled back: the plist."
        );
        assert_eq!(hint.as_deref(), Some("give 1-65535"));
        let (plain, none) = render(&anyhow::anyhow!("just this"));
        assert_eq!((plain.as_str(), none), ("just this", None));
    }

    #[test]
    fn a_plist_that_does_not_parse_is_said_in_words_not_in_debug_form() {
        let parse = |b: &[u8]| plist::Value::from_reader(std::io::Cursor::new(b)).unwrap_err();
        assert_eq!(
            plist_problem(&parse(b"bplist00\x01\x02garbage")),
            "its binary structure points outside the file (corrupt)"
        );
        assert_eq!(
            plist_problem(&parse(
                b"<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>port</key>"
            )),
            "unexpected end of event stream"
        );
        let said = plist_problem(&parse(
            b"<?xml version=\"1.0\"?><plist><dict><bogus/></dict></plist>",
        ));
        assert!(
            said.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == ' '),
            "{said}"
        );
    }
}
