//! The Host's dashboard login as Oysterun keeps it in `config.json`: `dashboard_user` and
//! `dashboard_password_hash` (Oysterun's own scrypt hash, written by its setup or by `oyster
//! setup` through Oysterun's own code). The Host refuses every login ("Dashboard credentials
//! are not configured") unless both are non-empty strings; this is that rule, read-only.

use serde::Serialize;
use serde_json::Value;

/// The key holding the login's user name.
pub const USER_KEY: &str = "dashboard_user";
/// The key holding the password's hash.
pub const HASH_KEY: &str = "dashboard_password_hash";
/// The user name Oysterun's own Host-password step records when none is set.
pub const DEFAULT_USER: &str = "admin";

/// Whether anybody can log in to the Host (`host_login` in `--json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostLogin {
    /// A user name and a password hash are set.
    Configured,
    /// Either is missing: every login is refused.
    NotConfigured,
}

impl HostLogin {
    /// The rule the Host applies to its config: both keys non-empty strings.
    pub fn of(config: &serde_json::Map<String, Value>) -> HostLogin {
        let set = |k: &str| {
            config
                .get(k)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.trim().is_empty())
        };
        if set(USER_KEY) && set(HASH_KEY) {
            HostLogin::Configured
        } else {
            HostLogin::NotConfigured
        }
    }

    /// The user name a login is made as: the recorded one, else [`DEFAULT_USER`].
    pub fn user(config: &serde_json::Map<String, Value>) -> String {
        config
            .get(USER_KEY)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or(DEFAULT_USER)
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(v: Value) -> HostLogin {
        HostLogin::of(v.as_object().unwrap())
    }

    #[test]
    fn only_a_user_and_a_hash_both_set_make_a_login() {
        assert_eq!(of(serde_json::json!({})), HostLogin::NotConfigured);
        assert_eq!(
            of(serde_json::json!({"dashboard_user": null, "dashboard_password_hash": null})),
            HostLogin::NotConfigured
        );
        assert_eq!(
            of(serde_json::json!({"dashboard_user": "admin", "dashboard_password_hash": " "})),
            HostLogin::NotConfigured
        );
        assert_eq!(
            of(serde_json::json!({"dashboard_user": "", "dashboard_password_hash": "scrypt$x"})),
            HostLogin::NotConfigured
        );
        assert_eq!(
            of(serde_json::json!({"dashboard_user": "me", "dashboard_password_hash": "scrypt$x"})),
            HostLogin::Configured
        );
    }
}
