//! The one reporter domain code says its progress and notes through. The command layer hands
//! it in (`Context::reporter`): the printer in a run, a [`Recorder`] in a unit test, so a
//! domain unit can be tested silently and its words checked.

use super::printer::Printer;
#[cfg(test)]
use std::cell::RefCell;

/// Where progress and notes go.
pub trait Reporter {
    /// A human line of the command's result (stdout).
    fn line(&self, text: &str);
    /// A progress line (stderr): what is being done now.
    fn progress(&self, text: &str);
    /// `oyster: note: …`: a fallback or override in effect.
    fn note(&self, text: &str);
    /// `oyster: warning: …`.
    fn warn(&self, text: &str);
    /// `waiting for WHAT (up to N s)…` before a bounded wait (nothing for a wait under 1 s).
    fn waiting(&self, what: &str, deadline: std::time::Duration);
    /// A subordinate line of the result (a child's own progress, such as npm's), set apart
    /// (dimmed on a terminal).
    fn detail(&self, text: &str);
}

impl Reporter for Printer {
    fn line(&self, text: &str) {
        if !self.quiet() {
            self.out(text);
        }
    }
    fn progress(&self, text: &str) {
        if !self.quiet() {
            self.err(text);
        }
    }
    fn note(&self, text: &str) {
        Printer::note(self, text);
    }
    fn warn(&self, text: &str) {
        Printer::warn(self, text);
    }
    fn waiting(&self, what: &str, deadline: std::time::Duration) {
        Printer::waiting(self, what, deadline);
    }
    fn detail(&self, text: &str) {
        if !self.quiet() {
            self.out_toned(super::Tone::Dim, text);
        }
    }
}

/// A reporter that prints nothing and keeps what it was told, tagged by kind (for unit tests
/// of domain code).
#[cfg(test)]
#[derive(Debug, Default)]
pub struct Recorder {
    said: RefCell<Vec<String>>,
}

#[cfg(test)]
impl Recorder {
    /// Everything said so far, in order: `line: …`, `progress: …`, `note: …`, `warn: …`.
    pub fn said(&self) -> Vec<String> {
        self.said.borrow().clone()
    }

    fn push(&self, kind: &str, text: &str) {
        self.said.borrow_mut().push(format!("{kind}: {text}"));
    }
}

#[cfg(test)]
impl Reporter for Recorder {
    fn line(&self, text: &str) {
        self.push("line", text);
    }
    fn progress(&self, text: &str) {
        self.push("progress", text);
    }
    fn note(&self, text: &str) {
        self.push("note", text);
    }
    fn warn(&self, text: &str) {
        self.push("warn", text);
    }
    fn waiting(&self, what: &str, deadline: std::time::Duration) {
        self.push(
            "waiting",
            &format!("{what} (up to {} ms)", deadline.as_millis()),
        );
    }
    fn detail(&self, text: &str) {
        self.push("detail", text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A domain step written against the trait, as the lifecycle's would be.
    fn step(r: &dyn Reporter) {
        r.progress("waiting for /health on 127.0.0.1:8802 (up to 30 s)…");
        r.note("using launchctl /x (from OYSTER_LAUNCHCTL)");
        r.line("Host verified");
    }

    #[test]
    fn a_domain_step_reports_through_the_one_it_is_handed_and_a_recorder_keeps_it_silent() {
        let r = Recorder::default();
        step(&r);
        assert_eq!(
            r.said(),
            [
                "progress: waiting for /health on 127.0.0.1:8802 (up to 30 s)…",
                "note: using launchctl /x (from OYSTER_LAUNCHCTL)",
                "line: Host verified",
            ]
        );
    }
}
