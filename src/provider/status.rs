//! One provider's state, as `providers resolve|status`, `doctor` and `setup` all report it
//! (docs/behaviour.md §8 and "Machine-readable shapes"): intent, command, what resolution finds now,
//! and authentication kept apart from availability.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::registry::Provider;
use super::resolve::{Intent, Resolution, Source, Unresolved};

/// Whether a provider can be used now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Available,
    Unavailable,
    Disabled,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Available => "available",
            State::Unavailable => "unavailable",
            State::Disabled => "disabled",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Authentication is never discovered (discovery runs no provider), so it is `not_checked`
/// unless a runtime error was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Authentication {
    NotChecked,
    /// The Host runs in a Background session (`user/<uid>`), where the login keychain is
    /// locked, and the provider keeps its login there: its authentication can fail although
    /// it is available.
    KeychainLocked,
}

/// One provider's row (docs/behaviour.md "Machine-readable shapes"); paths are absolute (the printer
/// shows `~` to people).
#[derive(Debug, Clone, Serialize)]
pub struct ProviderStatus {
    pub provider: super::registry::ProviderId,
    pub intent: Intent,
    /// What `config.json` holds (secrets redacted).
    pub command: Value,
    pub resolved: Option<String>,
    pub source: Option<Source>,
    pub state: State,
    /// [`ProviderStatus::unresolved`] in words, for its stack: set by the command that shows it.
    pub reason: Option<String>,
    /// Why nothing was found, as facts.
    #[serde(skip)]
    pub unresolved: Option<Unresolved>,
    pub authentication: Authentication,
    /// The organization's profile that forces this provider's command or intent (the file),
    /// `None` when nothing forces it; set by the commands that know the profile.
    pub managed: Option<String>,
}

impl ProviderStatus {
    /// The state from the intent and what resolution found: the one place that decides it.
    pub fn new(
        p: &'static Provider,
        intent: Intent,
        command: Option<&Value>,
        r: Resolution,
    ) -> ProviderStatus {
        let state = match (intent, &r) {
            (Intent::Disabled, _) => State::Disabled,
            (_, Resolution::Found { .. }) => State::Available,
            (_, Resolution::Missing { .. }) => State::Unavailable,
        };
        ProviderStatus {
            provider: p.id,
            intent,
            command: crate::output::redact::redact_value(command.unwrap_or(&Value::Null)),
            resolved: r.path().map(|p| p.to_string_lossy().into_owned()),
            source: r.source(),
            state,
            reason: None,
            unresolved: r.unresolved().cloned(),
            authentication: Authentication::NotChecked,
            managed: None,
        }
    }

    /// The path found, or why nothing was.
    pub fn detail(&self) -> &str {
        self.resolved
            .as_deref()
            .or(self.reason.as_deref())
            .unwrap_or("")
    }
}
