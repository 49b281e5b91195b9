//! One way to take side effects back, shared by setup's journal and the lifecycle's rollback
//! (in the spirit of nix-installer's plan/execute/revert): a command journals each side effect
//! as it takes it, as a step that knows how to revert itself; a failure or an interrupt reverts
//! the journal newest first, to its end whatever signal comes meanwhile, and each revert is
//! written to the stack's audit log and said in words.

use crate::output::audit::{Action, Audit, Step, StepOutcome};
use crate::sys::signal;

/// A side effect that knows how to take itself back, given what it needs (`Cx`).
pub trait Revert<Cx: ?Sized> {
    /// Takes the effect back and says what was done (`None`: nothing was left to undo).
    fn revert(self, cx: &mut Cx) -> anyhow::Result<Option<String>>;

    /// How a revert that failed is said.
    fn failed(err: &anyhow::Error) -> String {
        format!("could not undo a step: {err:#}")
    }
}

/// What a rollback did: each revert that did something, in words, newest first, and the
/// errors of the reverts that failed (said among them too), kept whole so that a fix a
/// failure names (an error's hint) can still reach the user.
#[derive(Debug, Default)]
pub struct Undone {
    pub said: Vec<String>,
    pub failures: Vec<anyhow::Error>,
}

/// The side effects a command has taken so far, oldest first.
pub struct Journal<S> {
    steps: Vec<S>,
    /// Where each revert is recorded: the stack's audit log, under the action that took it.
    record: Option<(Audit, Action)>,
}

impl<S> Journal<S> {
    /// An empty journal whose reverts go to `record`'s audit log (`None`: to no log).
    pub fn new(record: Option<(Audit, Action)>) -> Journal<S> {
        Journal {
            steps: Vec::new(),
            record,
        }
    }

    /// Journals a side effect: taken, or about to be (a step whose effect may be half taken
    /// when it is cut short is journaled before it runs).
    pub fn push(&mut self, step: S) {
        self.steps.push(step);
    }

    /// Takes the newest step back out of the journal: its effect turned out not to happen.
    pub fn pop(&mut self) -> Option<S> {
        self.steps.pop()
    }

    /// The newest step, to amend what it records (a receipt's stamp of a file just written).
    pub fn last_mut(&mut self) -> Option<&mut S> {
        self.steps.last_mut()
    }

    /// The steps journaled so far, oldest first (what a receipt writes down).
    pub fn steps(&self) -> &[S] {
        &self.steps
    }

    /// Reverts every step, newest first, each to its end (signals wait until the last one is
    /// done); returns what was undone, in words, in that order. A revert that fails is said,
    /// its error kept, and the rest still run.
    pub fn roll_back<Cx: ?Sized>(self, cx: &mut Cx) -> Undone
    where
        S: Revert<Cx>,
    {
        let _quiet = signal::Suspended::new();
        let mut undone = Undone::default();
        for step in self.steps.into_iter().rev() {
            let (outcome, words) = match step.revert(cx) {
                Ok(None) => continue,
                Ok(Some(words)) => (StepOutcome::Done, words),
                Err(e) => {
                    let words = S::failed(&e);
                    undone.failures.push(e);
                    (StepOutcome::Failed, words)
                }
            };
            if let Some((audit, action)) = &self.record {
                audit.record(*action, Step::Rollback, outcome, None, &words);
            }
            undone.said.push(words);
        }
        undone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step that appends its name to a shared trail when reverted, or fails.
    struct Mark(&'static str, bool);

    impl Revert<Vec<&'static str>> for Mark {
        fn revert(self, trail: &mut Vec<&'static str>) -> anyhow::Result<Option<String>> {
            trail.push(self.0);
            match (self.0, self.1) {
                (_, false) => anyhow::bail!("{} refused", self.0),
                ("quiet", true) => Ok(None),
                (name, true) => Ok(Some(format!("undid {name}"))),
            }
        }
    }

    #[test]
    fn steps_are_reverted_newest_first_and_a_failure_does_not_stop_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let audit = Audit::new(dir.path().join("audit.jsonl"), "s", "l");
        let mut journal = Journal::new(Some((audit, Action::Setup)));
        journal.push(Mark("first", true));
        journal.push(Mark("quiet", true));
        journal.push(Mark("broken", false));
        journal.push(Mark("dropped", true));
        assert!(journal.pop().is_some());
        journal.push(Mark("last", true));
        let mut trail = vec![];
        let undone = journal.roll_back(&mut trail);
        assert_eq!(trail, ["last", "broken", "quiet", "first"]);
        let failures: Vec<String> = undone.failures.iter().map(|e| e.to_string()).collect();
        assert_eq!(failures, ["broken refused"]);
        assert_eq!(
            undone.said,
            [
                "undid last",
                "could not undo a step: broken refused",
                "undid first"
            ]
        );
        // One audit line per revert said, with its outcome; the quiet one wrote none.
        let log = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
        let lines: Vec<serde_json::Value> = log
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let outcomes: Vec<(&str, &str)> = lines
            .iter()
            .map(|l| {
                (
                    l["outcome"].as_str().unwrap(),
                    l["detail"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            outcomes,
            [
                ("done", "undid last"),
                ("failed", "could not undo a step: broken refused"),
                ("done", "undid first")
            ]
        );
        assert!(lines
            .iter()
            .all(|l| l["step"] == "rollback" && l["action"] == "setup"));
    }

    #[test]
    fn a_journal_without_a_record_writes_no_log() {
        let mut journal: Journal<Mark> = Journal::new(None);
        journal.push(Mark("only", true));
        let mut trail = vec![];
        assert_eq!(journal.roll_back(&mut trail).said, ["undid only"]);
    }
}
