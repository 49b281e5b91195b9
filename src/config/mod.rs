//! The durable provider config (docs/behaviour.md §2, seed 000 "Durable Intent").
//!
//! `config.json` belongs to Oysterun; oyster owns a handful of keys in it and keeps every other
//! key, value and order exactly. The document is edited as a preserve-order
//! `serde_json::Value`, validated with positions before anything is changed, and written only
//! when its value changed.

use std::cell::RefCell;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::provider::registry::{Provider, PROVIDERS};
use crate::provider::resolve::{self, Intent, Resolution, Search};
use crate::sys::fs::{self as fsutil, FsError};

pub mod environment;
pub mod login;
pub mod managed;
mod store;
pub use store::{update, update_waiting, KeptChanging, StoreNote, LAUNCH_LOCK_WAIT};

/// The key holding `{provider: intent}`.
pub const INTENT_KEY: &str = "provider_command_intent";
/// The key holding the stack's port.
pub const PORT_KEY: &str = "port";
/// The key holding the AgentFolder.
pub const BROWSE_KEY: &str = "default_browse_path";
/// The key holding the Release Setup mode.
pub const MODE_KEY: &str = "connection_mode";
/// The key holding the Oysterun root this stack's Host was last planned from (oyster's own
/// key), so `--root` is needed at most once per stack.
pub const ROOT_KEY: &str = "oyster_root";

/// Why a config could not be used. Words: `commands/words/config.rs`.
#[derive(Debug)]
pub enum ConfigError {
    Syntax {
        path: PathBuf,
        msg: String,
        line: usize,
        column: usize,
    },
    Type {
        path: PathBuf,
        key: String,
        msg: String,
        line: usize,
        column: usize,
    },
    Bom {
        path: PathBuf,
    },
    Empty {
        path: PathBuf,
    },
    BadValue {
        path: PathBuf,
        key: &'static str,
        why: BadValue,
    },
    Fs(FsError),
}

/// Why a value that parses cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadValue {
    /// The port is outside 1-65535.
    NotAPort(serde_json::Number),
    /// The AgentFolder is not an absolute path.
    NotAbsolute(String),
}

impl From<FsError> for ConfigError {
    fn from(e: FsError) -> ConfigError {
        ConfigError::Fs(e)
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // Said as the file error itself: its cause is this one's.
            ConfigError::Fs(e) => std::error::Error::source(e),
            _ => None,
        }
    }
}

impl ConfigError {
    /// Whether this is the user's input being wrong (exit 2) rather than an I/O failure.
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            ConfigError::Syntax { .. }
                | ConfigError::Type { .. }
                | ConfigError::Bom { .. }
                | ConfigError::Empty { .. }
                | ConfigError::BadValue { .. }
        ) || matches!(self, ConfigError::Fs(e) if e.is_invalid_input())
    }
}

impl crate::error::HasKind for ConfigError {
    fn kind(&self) -> crate::error::Kind {
        crate::error::Kind::invalid_if(self.is_invalid_input())
    }
}

/// One semantic change made to the document, for output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub key: String,
    pub from: Value,
    pub to: Value,
}

/// `key: from -> to`, redacted (docs/behaviour.md §8): every way a change is said (the sync report,
/// `--dry-run`, the Host log) goes through here.
impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::output::redact;
        let shown = |v: &Value| {
            if redact::is_secret_key(&self.key) && !v.is_null() {
                Value::String(redact::REDACTED.into())
            } else {
                redact::redact_value(v)
            }
        };
        write!(
            f,
            "{}: {} -> {}",
            self.key,
            shown(&self.from),
            shown(&self.to)
        )
    }
}

/// A loaded `config.json`.
#[derive(Debug, Clone)]
pub struct ConfigDoc {
    map: Map<String, Value>,
    original: Option<Map<String, Value>>,
}

impl ConfigDoc {
    /// Reads and validates `path`; a missing file is an empty document.
    pub fn load(path: &Path) -> Result<ConfigDoc, ConfigError> {
        let bytes = fsutil::read_regular(path, MAX_CONFIG_BYTES)?;
        // The printer learns this file's secrets from what was read here, not by reading it
        // again.
        crate::output::learned(
            path,
            bytes.as_deref().map(secret_values_of).unwrap_or_default(),
        );
        match bytes {
            Some(bytes) => Self::parse(path, &bytes),
            None => Ok(ConfigDoc {
                map: Map::new(),
                original: None,
            }),
        }
    }

    /// Parses bytes, refusing anything oyster could not rewrite faithfully.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<ConfigDoc, ConfigError> {
        let path = path.to_owned();
        if bytes.starts_with(b"\xEF\xBB\xBF") {
            return Err(ConfigError::Bom { path });
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(ConfigError::Empty { path });
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|e| ConfigError::Syntax {
            msg: message_of(&e),
            line: e.line(),
            column: e.column(),
            path: path.clone(),
        })?;
        let current = RefCell::new(String::from("(top level)"));
        let mut de = serde_json::Deserializer::from_slice(bytes);
        OwnedKeys { current: &current }
            .deserialize(&mut de)
            .map_err(|e| ConfigError::Type {
                key: current.borrow().clone(),
                msg: message_of(&e),
                line: e.line(),
                column: e.column(),
                path: path.clone(),
            })?;
        let Value::Object(map) = value else {
            unreachable!("validated as an object above")
        };
        check_values(&path, &map)?;
        Ok(ConfigDoc {
            original: Some(map.clone()),
            map,
        })
    }

    /// The whole document.
    pub fn value(&self) -> &Map<String, Value> {
        &self.map
    }

    /// Whether the file exists on disk.
    pub fn exists(&self) -> bool {
        self.original.is_some()
    }

    /// Whether the document differs semantically from what was read.
    pub fn changed(&self) -> bool {
        self.original.as_ref() != Some(&self.map)
    }

    /// The bytes oyster writes: two-space JSON, as Oysterun's own writer emits, and a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(&self.map).expect("a JSON map serializes");
        out.push(b'\n');
        out
    }

    /// The configured command string, if any (a non-string never passes validation).
    pub fn command(&self, p: &Provider) -> Option<&str> {
        self.map.get(p.command_key).and_then(Value::as_str)
    }

    /// The recorded intent, if one is recorded.
    pub fn recorded_intent(&self, p: &Provider) -> Option<Intent> {
        let v = self.map.get(INTENT_KEY)?.get(p.id.as_str())?;
        serde_json::from_value(v.clone()).ok()
    }

    /// The recorded intent, or what migration would record.
    pub fn intent(&self, p: &Provider) -> Intent {
        self.recorded_intent(p)
            .unwrap_or_else(|| migrated_intent(p, self.map.get(p.command_key)))
    }

    /// The remembered Oysterun root ([`ROOT_KEY`]), when it is an absolute path.
    pub fn remembered_root(&self) -> Option<&Path> {
        self.map
            .get(ROOT_KEY)
            .and_then(Value::as_str)
            .map(Path::new)
            .filter(|p| p.is_absolute())
    }

    /// Records `root` as the one this stack's Host runs from.
    pub fn remember_root(&mut self, root: &Path, changes: &mut Vec<Change>) {
        let s = root.to_string_lossy().into_owned();
        self.set(ROOT_KEY, Value::String(s), changes);
    }

    pub fn port(&self) -> Option<u16> {
        self.map
            .get(PORT_KEY)
            .and_then(Value::as_u64)
            .and_then(|p| u16::try_from(p).ok())
    }

    /// The provider's state: intent, stored command, and what resolution finds now.
    pub fn status(
        &self,
        p: &'static Provider,
        search: &Search,
    ) -> crate::provider::status::ProviderStatus {
        crate::provider::status::ProviderStatus::new(
            p,
            self.intent(p),
            self.map.get(p.command_key),
            self.resolve(p, search),
        )
    }

    /// Sets a top-level key, recording the change when the value differs.
    pub fn set(&mut self, key: &str, value: Value, changes: &mut Vec<Change>) {
        let from = self.map.get(key).cloned().unwrap_or(Value::Null);
        let present = self.map.contains_key(key);
        if present && from == value {
            return;
        }
        changes.push(Change {
            key: key.to_owned(),
            from,
            to: value.clone(),
        });
        self.map.insert(key.to_owned(), value);
    }

    /// Removes `key` (a change to `null`), when the file has it.
    pub fn unset(&mut self, key: &str, changes: &mut Vec<Change>) {
        if let Some(from) = self.map.remove(key) {
            changes.push(Change {
                key: key.to_owned(),
                from,
                to: Value::Null,
            });
        }
    }

    fn set_intent(&mut self, p: &Provider, intent: Intent, changes: &mut Vec<Change>) {
        let before = self.recorded_intent(p);
        if before == Some(intent) {
            return;
        }
        let entry = self
            .map
            .entry(INTENT_KEY)
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        let obj = entry.as_object_mut().expect("made an object above");
        obj.insert(
            p.id.as_str().to_owned(),
            Value::String(intent.as_str().to_owned()),
        );
        changes.push(Change {
            key: format!("{INTENT_KEY}.{}", p.id),
            from: before.map_or(Value::Null, |i| Value::String(i.as_str().into())),
            to: Value::String(intent.as_str().into()),
        });
    }

    /// Records an intent for every provider that has none (the legacy migration).
    pub fn migrate(&mut self, changes: &mut Vec<Change>) {
        for p in PROVIDERS {
            if self.recorded_intent(p).is_none() {
                let intent = migrated_intent(p, self.map.get(p.command_key));
                self.set_intent(p, intent, changes);
            }
        }
    }

    /// The preservation-first merge of one provider with what resolution found now.
    ///
    /// `disabled` keeps the command null; `manual` keeps it verbatim; `auto` takes the resolved
    /// path, and when nothing was found keeps whatever is there: a detector `null` never
    /// overwrites a value.
    pub fn merge(&mut self, p: &Provider, resolution: &Resolution, changes: &mut Vec<Change>) {
        match self.intent(p) {
            Intent::Disabled => self.set(p.command_key, Value::Null, changes),
            Intent::Manual => {}
            Intent::Auto => {
                if let Some(path) = resolution.path() {
                    let s = path.to_string_lossy().into_owned();
                    self.set(p.command_key, Value::String(s), changes);
                }
            }
        }
    }

    /// Migrates, resolves and merges every provider: the stack config sync's provider part.
    pub fn sync_providers(&mut self, search: &Search, changes: &mut Vec<Change>) {
        self.migrate(changes);
        for p in PROVIDERS {
            let r = self.resolve(p, search);
            self.merge(p, &r, changes);
        }
    }

    /// Resolves one provider under its (recorded or migrated) intent.
    pub fn resolve(&self, p: &Provider, search: &Search) -> Resolution {
        resolve::resolve(p, self.intent(p), self.command(p), search)
    }

    /// Host Preferences save: a command makes the provider `manual`, `None` disables it.
    pub fn save_preference(
        &mut self,
        p: &Provider,
        command: Option<&Path>,
        changes: &mut Vec<Change>,
    ) {
        self.migrate(changes);
        match command {
            Some(path) => {
                self.set_intent(p, Intent::Manual, changes);
                let s = path.to_string_lossy().into_owned();
                self.set(p.command_key, Value::String(s), changes);
            }
            None => {
                self.set_intent(p, Intent::Disabled, changes);
                self.set(p.command_key, Value::Null, changes);
            }
        }
    }

    /// Hands a provider back to discovery.
    pub fn set_auto(&mut self, p: &Provider, search: &Search, changes: &mut Vec<Change>) {
        self.migrate(changes);
        self.set_intent(p, Intent::Auto, changes);
        let r = self.resolve(p, search);
        self.merge(p, &r, changes);
    }
}

/// The largest `config.json` oyster reads (docs/behaviour.md §9).
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// Values that parse but cannot be used are refused where they enter (docs/behaviour.md §9): a port
/// outside 1–65535 and an AgentFolder that is not an absolute path (launchd and the Host
/// expand nothing, so `~/x`, `x` or `""` would mean a directory relative to wherever they run).
fn check_values(path: &Path, map: &Map<String, Value>) -> Result<(), ConfigError> {
    let bad = |key: &'static str, why: BadValue| ConfigError::BadValue {
        path: path.to_owned(),
        key,
        why,
    };
    if let Some(Value::Number(n)) = map.get(PORT_KEY) {
        if n.as_u64().is_none_or(|p| !(1..=65535).contains(&p)) {
            return Err(bad(PORT_KEY, BadValue::NotAPort(n.clone())));
        }
    }
    if let Some(Value::String(dir)) = map.get(BROWSE_KEY) {
        if !Path::new(dir).is_absolute() {
            return Err(bad(BROWSE_KEY, BadValue::NotAbsolute(dir.clone())));
        }
    }
    Ok(())
}

/// The secret values in the config at `path` (empty when it cannot be read), for the printer.
pub fn secret_values_on_disk(path: &Path) -> Vec<String> {
    match fsutil::read_regular(path, MAX_CONFIG_BYTES) {
        Ok(Some(bytes)) => secret_values_of(&bytes),
        _ => vec![],
    }
}

/// The secret values in a config's bytes.
fn secret_values_of(bytes: &[u8]) -> Vec<String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => crate::output::redact::secret_values(&v),
        // A config that does not parse still holds its secrets, and the commands that go on
        // without it (`logs`, `doctor`) must not show them.
        Err(_) => crate::output::redact::secret_values_in_text(&String::from_utf8_lossy(bytes)),
    }
}

/// Teaches the printer the secrets now in the config at `path`. The Host writes its own while
/// oyster runs (the real one adds an onboarding token on its first start) and may log them at
/// once: whatever prints the Host log learns them first.
pub fn learn_secrets(path: &Path) {
    crate::output::learn_secrets(secret_values_on_disk(path));
}

/// Says what a sync changed (values redacted; home shown as `~` by the printer).
pub fn report(path: &Path, changes: &[Change], out: &dyn crate::output::Reporter) {
    if changes.is_empty() {
        out.line(&format!("{}: unchanged", path.display()));
        return;
    }
    out.line(&format!("{}: updated", path.display()));
    for c in changes {
        out.line(&format!("  {c}"));
    }
}

/// The migration rule for a provider with no recorded intent.
pub fn migrated_intent(p: &Provider, command: Option<&Value>) -> Intent {
    match command.and_then(Value::as_str).map(str::trim) {
        None | Some("") => Intent::Auto,
        Some(bare) if bare == p.binary || bare == p.id.as_str() => Intent::Auto,
        Some(_) => Intent::Manual,
    }
}

/// serde_json's message without its trailing " at line L column C", in words a user reads
/// (no "u16", "sequence" or "variant": those are Rust's and serde's terms).
fn message_of(e: &serde_json::Error) -> String {
    let s = e.to_string();
    let s = match s.rfind(" at line ") {
        Some(i) => s[..i].to_owned(),
        None => s,
    };
    humanize(&s)
}

/// Rewrites serde's vocabulary into JSON's and people's.
fn humanize(msg: &str) -> String {
    let mut s = msg.to_owned();
    for (from, to) in [
        ("invalid type: ", "it is "),
        ("invalid value: ", "it is "),
        ("unknown variant ", "it is the unknown value "),
        ("integer `", "the number `"),
        ("floating point `", "the number `"),
        ("string \"", "the string \""),
        ("sequence", "an array"),
        ("boolean `", "`"),
        ("unit value", "null"),
        (
            "expected u16",
            "expected a port number (a whole number from 1 to 65535)",
        ),
        ("expected u64", "expected a whole number"),
        ("expected a map", "expected an object"),
    ] {
        s = s.replace(from, to);
    }
    // "`map`" as a found type reads "it is map".
    s.replace("it is map,", "it is an object,")
}

/// Validates the types of the keys oyster owns, so errors carry serde_json's positions.
struct OwnedKeys<'a> {
    current: &'a RefCell<String>,
}

impl<'de> DeserializeSeed<'de> for OwnedKeys<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for OwnedKeys<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object at the top level")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            *self.current.borrow_mut() = key.clone();
            if PROVIDERS.iter().any(|p| p.command_key == key) {
                map.next_value::<Option<String>>()?;
            } else if key == INTENT_KEY {
                map.next_value::<Option<IntentTable>>()?;
            } else if key == PORT_KEY {
                map.next_value::<Option<u16>>()?;
            } else if key == BROWSE_KEY || key == MODE_KEY || key == ROOT_KEY {
                map.next_value::<Option<String>>()?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        *self.current.borrow_mut() = String::from("(top level)");
        Ok(())
    }
}

/// `provider_command_intent`: supported providers must hold a valid intent; other keys are
/// kept as they are.
struct IntentTable;

impl<'de> de::Deserialize<'de> for IntentTable {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IntentTable;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object mapping providers to \"auto\", \"manual\" or \"disabled\"")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<IntentTable, A::Error> {
                while let Some(key) = map.next_key::<String>()? {
                    if crate::provider::registry::lookup(&key).is_ok() {
                        map.next_value::<Intent>()?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(IntentTable)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests;
