//! Words at the edge: the sentences (and their `hint:` fixes) of the typed outcomes, refusals
//! and failures the domain rooms return. A room below `commands/` says what happened as a value
//! carrying the facts; its `Display` (and its [`Hint`]) is written here, one file per room.

/// `Invalid` and `Failed` made from a typed refusal (its words and its [`Hint`]): a domain
/// function that returns one of them keeps its signature, and says no sentence itself.
macro_rules! said_as_invalid_or_failed {
    ($($t:ty),+ $(,)?) => {$(
        impl From<$t> for crate::error::Invalid {
            fn from(v: $t) -> Self {
                crate::error::Invalid {
                    msg: v.to_string(),
                    hint: crate::commands::words::Hint::hint(&v),
                }
            }
        }
        impl From<$t> for crate::error::Failed {
            fn from(v: $t) -> Self {
                crate::error::Failed {
                    msg: v.to_string(),
                    hint: crate::commands::words::Hint::hint(&v),
                }
            }
        }
    )+};
}

mod agent;
mod config;
mod context;
mod direct;
mod fleet;
mod host;
mod launchctl;
mod pinned;
mod provider;
mod service;
mod sys;
pub mod top;
mod verify;

/// The words of agent/ and direct/, pinned word for word as they were written before.
#[cfg(test)]
#[path = "tests.rs"]
mod word_for_word;

/// The fix a typed error carries as data, said as the `hint:` line.
pub trait Hint {
    fn hint(&self) -> Option<String>;
}

/// Asks an error chain for the hint of one type (a cause, or context added on the way up).
type HintProbe = fn(&anyhow::Error) -> Option<String>;

fn probe<T: Hint + std::error::Error + Send + Sync + 'static>(
    err: &anyhow::Error,
) -> Option<String> {
    err.chain()
        .filter_map(|c| c.downcast_ref::<T>())
        .find_map(Hint::hint)
        .or_else(|| err.downcast_ref::<T>().and_then(Hint::hint))
}

/// Every typed error whose fix is data: asked by `lib.rs` when no `Invalid`/`Failed` in the
/// chain gave one.
const HINTS: &[HintProbe] = &[
    probe::<crate::config::environment::NothingChanged>,
    probe::<crate::config::KeptChanging>,
    probe::<crate::host::node::NodeProblem>,
];

/// The first hint a registered type in `err`'s chain carries.
pub fn hint_of(err: &anyhow::Error) -> Option<String> {
    HINTS.iter().find_map(|p| p(err))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::environment::{check_name, DeclareProblem, NothingChanged, Refused};
    use std::path::PathBuf;

    #[test]
    fn the_domain_returns_the_facts_and_the_edge_says_them_word_for_word() {
        // The outcome value: what is wrong, no sentence.
        let problem = check_name("OYSTERUN_PORT").unwrap_err();
        assert_eq!(
            problem,
            DeclareProblem::Reserved {
                name: "OYSTERUN_PORT".into()
            }
        );
        // Its words.
        assert_eq!(
            problem.to_string(),
            "OYSTERUN_PORT is oyster's to set: the Host's PATH, HOME, USER, LOGNAME, SHELL, TMPDIR \
             and every OYSTERUN_* and OYSTER_* variable (in any case) come from the generated \
             environment"
        );
    }

    #[test]
    fn a_typed_errors_fix_reaches_the_hint_line_through_the_chain() {
        use anyhow::Context as _;
        let refused = Refused {
            path: PathBuf::from("/x/oyster-host.env"),
            why: crate::config::environment::RefusedWhy::Writable { mode: 0o666 },
        };
        let err = Err::<(), _>(NothingChanged(refused))
            .context("env set failed")
            .unwrap_err();
        assert_eq!(
            hint_of(&err).as_deref(),
            Some("chmod 600 /x/oyster-host.env")
        );
        let (text, _) = crate::error::render(&err);
        assert_eq!(
            text,
            "env set failed: /x/oyster-host.env is writable by others (mode 0666): anyone who \
             can write it could steer the Host; nothing was changed"
        );
        assert_eq!(hint_of(&anyhow::anyhow!("plain")), None);
    }
}
