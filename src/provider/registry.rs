//! The provider registry: every fact oyster knows about a provider lives in this one table.
//!
//! This is the only file allowed to name a provider id. Everything else asks the registry
//! (`tests/it/registry_guard.rs` fails the build when an id literal appears anywhere else), so
//! adding a provider is one entry here and never a new `if provider == …` branch.

use std::fmt;

/// A provider's id. Only the registry can make one (its field is private), and it cannot be
/// compared with a string: code that wants "is this claude?" has to go through the registry
/// (a field, or [`lookup`]), never a literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProviderId(&'static str);

impl ProviderId {
    /// The id as text, for output, JSON keys and config keys.
    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for ProviderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so `{:<8}` lines up columns as it does for a `str`.
        f.pad(self.0)
    }
}

impl serde::Serialize for ProviderId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

/// One supported provider and everything the rest of oyster needs to know about it.
#[derive(Debug, PartialEq, Eq)]
pub struct Provider {
    /// The id used on the command line, in `provider_command_intent` and in JSON output.
    pub id: ProviderId,
    /// The executable name searched for on `PATH` and in the fallback directories.
    pub binary: &'static str,
    /// The name shown to people.
    pub display_name: &'static str,
    /// The `config.json` key holding the command.
    pub command_key: &'static str,
    /// The npm package installed by Release Setup.
    pub npm_package: &'static str,
    /// What `<binary> --version` prints for the real thing (`doctor --probe` only).
    pub version_pattern: &'static str,
    /// Directories (relative to HOME) where the provider's own native installer keeps its
    /// versions; a command whose real path lies under one is owned by that installer.
    pub native_dirs: &'static [&'static str],
    /// Keeps its login in the macOS login keychain, which is locked in a Background session
    /// (`user/<uid>`; docs/launchd.md, "Domains"): its authentication can fail there.
    pub login_in_keychain: bool,
}

/// Every supported provider, in registry order (the order of `PATH` entries and of output).
pub static PROVIDERS: &[Provider] = &[
    Provider {
        id: ProviderId("claude"),
        binary: "claude",
        display_name: "Claude Code",
        command_key: "claude_command",
        npm_package: "@anthropic-ai/claude-code",
        version_pattern: r"^\d+\.\d+\.\d+ \(Claude Code\)",
        native_dirs: &[".local/share/claude", ".claude/local"],
        // Claude Code keeps its OAuth login in the keychain on macOS.
        login_in_keychain: true,
    },
    Provider {
        id: ProviderId("codex"),
        binary: "codex",
        display_name: "Codex CLI",
        command_key: "codex_command",
        npm_package: "@openai/codex",
        version_pattern: r"^codex-cli \d+\.\d+\.\d+",
        native_dirs: &[],
        // Codex CLI keeps its login in ~/.codex/auth.json by default.
        login_in_keychain: false,
    },
];

/// A provider name that is not in the registry. Words: `commands/words/provider.rs`.
#[derive(Debug)]
pub struct UnsupportedProvider(pub String);

impl std::error::Error for UnsupportedProvider {}

/// Looks a provider up by id. Unknown names fail here, before any filesystem access.
pub fn lookup(name: &str) -> Result<&'static Provider, UnsupportedProvider> {
    PROVIDERS
        .iter()
        .find(|p| p.id.as_str() == name)
        .ok_or_else(|| UnsupportedProvider(name.to_owned()))
}

/// Resolves a list of names (all providers when empty), failing on the first unknown one.
pub fn lookup_all(names: &[String]) -> Result<Vec<&'static Provider>, UnsupportedProvider> {
    if names.is_empty() {
        return Ok(PROVIDERS.iter().collect());
    }
    let mut out: Vec<&'static Provider> = Vec::with_capacity(names.len());
    for name in names {
        let p = lookup(name)?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// `claude, codex`, for messages.
pub fn supported_names() -> String {
    PROVIDERS
        .iter()
        .map(|p| p.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_binaries_and_keys_are_unique() {
        for (i, a) in PROVIDERS.iter().enumerate() {
            for b in &PROVIDERS[i + 1..] {
                assert_ne!(a.id, b.id);
                assert_ne!(a.binary, b.binary);
                assert_ne!(a.command_key, b.command_key);
            }
        }
    }

    #[test]
    fn version_patterns_compile_and_tell_the_real_banner_from_an_impostor() {
        for p in PROVIDERS {
            let re = regex_lite::Regex::new(p.version_pattern).unwrap();
            assert!(
                !re.is_match("1.0.0"),
                "{}: a bare version is not proof",
                p.id
            );
            assert!(!re.is_match("dancer's shell 0.1"));
        }
        let re = |i: usize| regex_lite::Regex::new(PROVIDERS[i].version_pattern).unwrap();
        assert!(re(0).is_match("2.0.14 (Claude Code)"));
        assert!(re(1).is_match("codex-cli 0.46.0"));
    }

    #[test]
    fn unknown_names_are_rejected_with_the_supported_list() {
        let err = lookup("gemini").unwrap_err().to_string();
        assert!(
            err.contains("gemini") && err.contains(&supported_names()),
            "{err}"
        );
        assert!(lookup("").is_err());
        assert!(lookup("../claude").is_err());
        assert!(lookup("CLAUDE").is_err());
    }

    #[test]
    fn lookup_all_dedups_and_keeps_order() {
        let names = vec![
            PROVIDERS[1].id.as_str().to_owned(),
            PROVIDERS[0].id.as_str().to_owned(),
            PROVIDERS[1].id.as_str().to_owned(),
        ];
        let got: Vec<_> = lookup_all(&names).unwrap().iter().map(|p| p.id).collect();
        assert_eq!(got, vec![PROVIDERS[1].id, PROVIDERS[0].id]);
        assert_eq!(lookup_all(&[]).unwrap().len(), PROVIDERS.len());
    }
}
