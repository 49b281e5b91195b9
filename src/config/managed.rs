//! Managed defaults: what an administrator forces through a `com.apple.ManagedClient.preferences`
//! payload for the domain `com.oysterun.oyster` (docs/fleet.md). macOS writes it to
//! `/Library/Managed Preferences/com.oysterun.oyster.plist` (every user) and
//! `/Library/Managed Preferences/<user>/com.oysterun.oyster.plist` (one user); oyster reads
//! those files (`OYSTER_MANAGED_PREFERENCES_DIR` stands in for the directory: tests, Linux).
//!
//! Precedence: a forced managed value, then `config.json`, then oyster's default. A user's own
//! file wins over the all-users file, and a value in `stacks.<name>` over a top-level one. The
//! keys are `config.json`'s own names (`provider_command_intent`, `claude_command`,
//! `codex_command`, `connection_mode`, `default_browse_path`) plus `root` and `node_bin`;
//! `port` only per stack. A value oyster cannot use is left out and said (`warnings`); the
//! others still apply.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::{Change, ConfigDoc};
use crate::provider::registry::PROVIDERS;

/// The preference domain.
pub const DOMAIN: &str = "com.oysterun.oyster";
/// Where macOS keeps managed preferences.
pub const SYSTEM_DIR: &str = "/Library/Managed Preferences";
/// The largest managed plist read.
const CAP: u64 = 1 << 20;

/// One forced value: its key (`port`, `claude_command`, `provider_command_intent.codex`, …),
/// the value, and the file that forces it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Entry {
    /// (`setting` in documents: a key named `key` reads as a secret to the redaction.)
    #[serde(rename = "setting")]
    pub key: String,
    pub value: Value,
    /// Named lossily in documents: a folder whose name is not UTF-8 must not make every JSON
    /// document that names it (status, list, inventory) fail to render.
    #[serde(serialize_with = "lossy")]
    pub file: PathBuf,
}

fn lossy<S: serde::Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

/// A variable the profile forces into the Host's environment (`environment`, and per stack
/// `stacks.NAME.environment`; docs/fleet.md). Its value is a secret: never serialized, never
/// said.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ForcedVar {
    pub name: String,
    #[serde(skip)]
    pub value: String,
    #[serde(serialize_with = "lossy")]
    pub file: PathBuf,
}

/// The managed values for one user and stack.
#[derive(Debug, Clone, Default)]
pub struct Managed {
    pub entries: Vec<Entry>,
    /// Forced variables of the Host's environment (not `config.json` keys: never written there).
    pub environment: Vec<ForcedVar>,
    /// Values left out (a wrong type, an unknown key, an unreadable file).
    pub warnings: Vec<LeftOut>,
}

/// A managed value (or file) left out, and why. Words: `commands/words/config.rs`.
#[derive(Debug, Clone, PartialEq)]
pub enum LeftOut {
    /// A forced intent that contradicts a forced `""` command, which disables the provider.
    IntentContradicts {
        file: PathBuf,
        key: String,
        value: Value,
        command_file: PathBuf,
        command_key: &'static str,
        provider: String,
    },
    /// The file could not be read (the reader's refusal, in its words).
    Unreadable { cause: String },
    /// The file's top level is not a dictionary.
    NotADictionary { file: PathBuf },
    /// The file is not a property list (`problem`: `error::plist_problem`'s words).
    NotAPlist { file: PathBuf, problem: String },
    /// `stacks` is not a dictionary.
    StacksNotADictionary { file: PathBuf, kind: &'static str },
    /// `stacks.<stack>` is not a dictionary.
    StackNotADictionary {
        file: PathBuf,
        stack: String,
        kind: &'static str,
    },
    /// `environment` (at `at`) is not a dictionary.
    EnvironmentNotADictionary { at: Place, kind: &'static str },
    /// A forced variable that cannot be declared.
    Variable { at: Place, why: VariableWhy },
    /// One key's value, or part of it.
    Key { at: Place, why: KeyWhy },
}

/// Where in a managed file: `<file>: <key>` or `<file>: stacks.<stack>.<key>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: PathBuf,
    pub stack: Option<String>,
    pub key: String,
}

/// Why a forced variable is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VariableWhy {
    NotAString { name: String, kind: &'static str },
    Declare(super::environment::DeclareProblem),
}

/// Why a managed key's value (or part of it) is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyWhy {
    PortOnlyPerStack,
    NotAPort,
    NotAbsolute,
    NotAMode,
    /// Provider ids without a supported intent.
    Intents(Vec<String>),
    NotADictionary,
    NotACommand,
    Unknown,
}

impl Managed {
    /// Reads the all-users file, then `user`'s, under `dir` (the system's when `None`), for
    /// `stack`. Missing files are no managed values; nothing else is read.
    pub fn load(dir: Option<&Path>, user: Option<&str>, stack: &str) -> Managed {
        let dir = dir.unwrap_or(Path::new(SYSTEM_DIR));
        let mut m = Managed::default();
        let file = format!("{DOMAIN}.plist");
        m.read(&dir.join(&file), stack);
        if let Some(u) = user.filter(|u| !u.is_empty() && !u.contains('/') && *u != "..") {
            m.read(&dir.join(u).join(&file), stack);
        }
        m.force_intents();
        m
    }

    /// A forced command forces its provider's intent too, as `providers set` records it: `""`
    /// disables the provider (a forced intent that says otherwise is left out, said), an
    /// absolute path makes it `manual` unless the profile forces an intent of its own. Without
    /// this, a forced `""` left the intent `auto`: discovery found the provider anyway, and its
    /// directory went on the Host's PATH.
    fn force_intents(&mut self) {
        for p in PROVIDERS {
            let Some(command) = self.get(p.command_key).cloned() else {
                continue;
            };
            let key = format!("{}.{}", super::INTENT_KEY, p.id);
            let disables = command.value.as_str() == Some("");
            let want = if disables { "disabled" } else { "manual" };
            match self.get(&key) {
                Some(e) if disables && e.value != want => {
                    self.warnings.push(LeftOut::IntentContradicts {
                        file: e.file.clone(),
                        key: key.clone(),
                        value: e.value.clone(),
                        command_file: command.file.clone(),
                        command_key: p.command_key,
                        provider: p.id.to_string(),
                    });
                    self.entries.retain(|e| e.key != key);
                }
                Some(_) => continue,
                None => {}
            }
            self.entries.push(Entry {
                key,
                value: Value::String(want.to_owned()),
                file: command.file,
            });
        }
    }

    /// `doc` as every command resolves it: with every forced value in it (in memory only;
    /// the next sync writes them, since the Host reads the file).
    pub fn applied(&self, mut doc: ConfigDoc) -> ConfigDoc {
        self.apply(&mut doc, &mut vec![]);
        doc
    }

    /// The forced value of `key`, if any.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }

    /// The forced port.
    pub fn port(&self) -> Option<(u16, &Entry)> {
        let e = self.get(super::PORT_KEY)?;
        Some((u16::try_from(e.value.as_u64()?).ok()?, e))
    }

    /// A forced path (`root`, `node_bin`).
    pub fn path(&self, key: &str) -> Option<(&Path, &Entry)> {
        let e = self.get(key)?;
        Some((Path::new(e.value.as_str()?), e))
    }

    /// The entries that decide provider `id` (its command or its intent).
    pub fn provider(&self, id: &str) -> Vec<&Entry> {
        let Some(p) = PROVIDERS.iter().find(|p| p.id.as_str() == id) else {
            return vec![];
        };
        let intent = format!("{}.{id}", super::INTENT_KEY);
        self.entries
            .iter()
            .filter(|e| e.key == p.command_key || e.key == intent)
            .collect()
    }

    /// Writes every forced `config.json` key into `doc` (the Host reads config.json), each
    /// change recorded; `root` and `node_bin` are the plan's, not the file's.
    pub fn apply(&self, doc: &mut ConfigDoc, changes: &mut Vec<Change>) {
        for e in &self.entries {
            if let Some(id) = e.key.strip_prefix(&format!("{}.", super::INTENT_KEY)) {
                let mut intents = doc
                    .value()
                    .get(super::INTENT_KEY)
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                if intents.get(id) != Some(&e.value) {
                    intents.insert(id.to_owned(), e.value.clone());
                    doc.set(super::INTENT_KEY, Value::Object(intents), changes);
                }
            } else if e.key != "root" && e.key != "node_bin" {
                doc.set(&e.key, e.value.clone(), changes);
            }
        }
    }

    fn read(&mut self, path: &Path, stack: &str) {
        let bytes = match crate::sys::fs::read_regular(path, CAP) {
            Ok(Some(b)) => b,
            Ok(None) => return,
            Err(e) => {
                self.warnings.push(LeftOut::Unreadable {
                    cause: e.to_string(),
                });
                return;
            }
        };
        let top = match plist::Value::from_reader(std::io::Cursor::new(bytes)) {
            Ok(plist::Value::Dictionary(d)) => d,
            Ok(_) => {
                self.warnings.push(LeftOut::NotADictionary {
                    file: path.to_owned(),
                });
                return;
            }
            Err(e) => {
                self.warnings.push(LeftOut::NotAPlist {
                    file: path.to_owned(),
                    problem: crate::error::plist_problem(&e),
                });
                return;
            }
        };
        for (k, v) in &top {
            if k == "stacks" || k.starts_with("Payload") || k.starts_with("PayloadContent") {
                continue;
            }
            if k == ENVIRONMENT_KEY {
                self.take_environment(path, v, None);
                continue;
            }
            self.take(path, k, v, None);
        }
        let stacks = top.get("stacks");
        if let Some(other) = stacks.filter(|s| s.as_dictionary().is_none()) {
            self.warnings.push(LeftOut::StacksNotADictionary {
                file: path.to_owned(),
                kind: kind(other),
            });
        }
        if let Some(per) = stacks
            .and_then(plist::Value::as_dictionary)
            .and_then(|s| s.get(stack))
        {
            match per.as_dictionary() {
                Some(d) => {
                    for (k, v) in d {
                        if k == ENVIRONMENT_KEY {
                            self.take_environment(path, v, Some(stack));
                        } else {
                            self.take(path, k, v, Some(stack));
                        }
                    }
                }
                None => self.warnings.push(LeftOut::StackNotADictionary {
                    file: path.to_owned(),
                    stack: stack.to_owned(),
                    kind: kind(per),
                }),
            }
        }
    }

    /// One key of a managed file: checked, converted, and recorded over any earlier value.
    fn take(&mut self, path: &Path, key: &str, v: &plist::Value, stack: Option<&str>) {
        let (values, why) = accepted(key, v, stack.is_some());
        for (key, value) in values {
            self.entries.retain(|e| e.key != key);
            self.entries.push(Entry {
                key,
                value,
                file: path.to_owned(),
            });
        }
        if let Some(why) = why {
            let at = Place::new(path, stack, key);
            self.warnings.push(LeftOut::Key { at, why });
        }
    }
}

impl Managed {
    /// The forced variable `name`, in any case (`https_proxy` is the forced `HTTPS_PROXY` to
    /// curl and Node's proxy agents, which read the lower-case name first), if any.
    pub fn forced_var(&self, name: &str) -> Option<&ForcedVar> {
        self.environment
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
    }

    /// `environment` (a dictionary of variable name to string): each usable variable forced
    /// over any earlier one of that name; the others left out and said, by name only.
    fn take_environment(&mut self, path: &Path, v: &plist::Value, stack: Option<&str>) {
        let at = Place::new(path, stack, ENVIRONMENT_KEY);
        let Some(d) = v.as_dictionary() else {
            self.warnings
                .push(LeftOut::EnvironmentNotADictionary { at, kind: kind(v) });
            return;
        };
        for (name, value) in d {
            let checked = match value.as_string() {
                Some(s) => super::environment::check_name(name)
                    .and_then(|()| super::environment::check_value(name, s))
                    .map(|()| s)
                    .map_err(VariableWhy::Declare),
                None => Err(VariableWhy::NotAString {
                    name: name.clone(),
                    kind: kind(value),
                }),
            };
            match checked {
                Ok(s) => {
                    self.environment.retain(|f| f.name != *name);
                    self.environment.push(ForcedVar {
                        name: name.clone(),
                        value: s.to_owned(),
                        file: path.to_owned(),
                    });
                }
                Err(why) => self.warnings.push(LeftOut::Variable {
                    at: at.clone(),
                    why,
                }),
            }
        }
    }
}

impl Place {
    fn new(file: &Path, stack: Option<&str>, key: &str) -> Place {
        Place {
            file: file.to_owned(),
            stack: stack.map(str::to_owned),
            key: key.to_owned(),
        }
    }
}

/// The managed key holding forced environment variables.
pub const ENVIRONMENT_KEY: &str = "environment";

/// A plist value's type, in the words of a profile editor.
fn kind(v: &plist::Value) -> &'static str {
    match v {
        plist::Value::Array(_) => "an array",
        plist::Value::Dictionary(_) => "a dictionary",
        plist::Value::Boolean(_) => "a boolean",
        plist::Value::Data(_) => "data",
        plist::Value::Date(_) => "a date",
        plist::Value::Real(_) => "a real number",
        plist::Value::Integer(_) => "an integer",
        plist::Value::String(_) => "a string",
        _ => "a value of another type",
    }
}

/// A command that would change a forced value: `what` it was given, and the entry forcing it.
/// Words: `commands/words/config.rs`.
#[derive(Debug, Clone, PartialEq)]
pub struct Forced {
    pub what: String,
    pub entry: Entry,
}

/// Why a command may not change a forced value (exit 1), naming the profile's file.
pub fn refusal(what: &str, e: &Entry) -> crate::error::Failed {
    Forced {
        what: what.to_owned(),
        entry: e.clone(),
    }
    .into()
}

/// What one managed key gives: the config values it forces (`key` or `key.provider`), and why
/// the rest of it was left out, if any of it was.
fn accepted(
    key: &str,
    v: &plist::Value,
    per_stack: bool,
) -> (Vec<(String, Value)>, Option<KeyWhy>) {
    let one = |value: Value| (vec![(key.to_owned(), value)], None);
    let left_out = |why: KeyWhy| (vec![], Some(why));
    let absolute = |v: &plist::Value| {
        v.as_string()
            .filter(|s| Path::new(s).is_absolute())
            .map(str::to_owned)
    };
    match key {
        "port" if !per_stack => left_out(KeyWhy::PortOnlyPerStack),
        "port" => match v
            .as_unsigned_integer()
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p > 0)
        {
            Some(p) => one(Value::from(p)),
            None => left_out(KeyWhy::NotAPort),
        },
        "root" | "node_bin" | super::BROWSE_KEY => match absolute(v) {
            Some(s) => one(Value::String(s)),
            None => left_out(KeyWhy::NotAbsolute),
        },
        // The modes setup records (`setup::Mode`; config sits below setup, so listed here).
        super::MODE_KEY => match v.as_string() {
            Some(s @ ("direct" | "cloud-direct" | "managed" | "managed-pending")) => {
                one(Value::String(s.to_owned()))
            }
            _ => left_out(KeyWhy::NotAMode),
        },
        super::INTENT_KEY => match v.as_dictionary() {
            Some(d) => {
                let mut values = vec![];
                let mut bad = vec![];
                for (id, intent) in d {
                    let known = PROVIDERS.iter().any(|p| p.id.as_str() == id);
                    match intent.as_string() {
                        Some(i @ ("auto" | "manual" | "disabled")) if known => {
                            values.push((format!("{key}.{id}"), Value::String(i.to_owned())));
                        }
                        _ => bad.push(id.clone()),
                    }
                }
                let why = (!bad.is_empty()).then_some(KeyWhy::Intents(bad));
                (values, why)
            }
            None => left_out(KeyWhy::NotADictionary),
        },
        k if PROVIDERS.iter().any(|p| p.command_key == k) => match v.as_string() {
            Some(s) if s.is_empty() || Path::new(s).is_absolute() => {
                one(Value::String(s.to_owned()))
            }
            _ => left_out(KeyWhy::NotACommand),
        },
        _ => left_out(KeyWhy::Unknown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, v: plist::Value) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        v.to_file_binary(path).unwrap();
    }

    #[test]
    fn the_users_file_and_the_stacks_values_win_and_bad_values_are_left_out() {
        // (connection_mode `managed` below is one of setup's modes.)
        let dir = tempfile::tempdir().unwrap();
        let mut all = plist::Dictionary::new();
        all.insert("connection_mode".into(), "direct".into());
        all.insert("default_browse_path".into(), "/Shared/Agents".into());
        all.insert("port".into(), 1.into());
        all.insert("node_bin".into(), "node".into());
        let last = PROVIDERS.last().unwrap().id.as_str();
        let mut intents = plist::Dictionary::new();
        intents.insert(last.into(), "disabled".into());
        intents.insert("gemini".into(), "auto".into());
        all.insert("provider_command_intent".into(), intents.into());
        let mut dev = plist::Dictionary::new();
        dev.insert("port".into(), 8810.into());
        dev.insert("connection_mode".into(), "managed".into());
        let mut stacks = plist::Dictionary::new();
        stacks.insert("dev".into(), dev.into());
        all.insert("stacks".into(), stacks.into());
        write(&dir.path().join("com.oysterun.oyster.plist"), all.into());
        let mut mine = plist::Dictionary::new();
        mine.insert("default_browse_path".into(), "/Users/a/Agents".into());
        write(&dir.path().join("a/com.oysterun.oyster.plist"), mine.into());

        let m = Managed::load(Some(dir.path()), Some("a"), "dev");
        assert_eq!(m.port().map(|(p, _)| p), Some(8810));
        assert_eq!(m.get("connection_mode").unwrap().value, "managed");
        let browse = m.get("default_browse_path").unwrap();
        assert_eq!(browse.value, "/Users/a/Agents");
        assert!(browse.file.ends_with("a/com.oysterun.oyster.plist"));
        assert_eq!(m.provider(last).len(), 1);
        assert!(m.get("node_bin").is_none());
        let w = m
            .warnings
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            w.contains("only per stack") && w.contains("gemini") && w.contains("absolute"),
            "{w}"
        );
        // Another stack: no port; another user: the all-users path.
        let m = Managed::load(Some(dir.path()), Some("b"), "production");
        assert!(m.port().is_none());
        assert_eq!(
            m.get("default_browse_path").unwrap().value,
            "/Shared/Agents"
        );
        // No directory at all: nothing managed, nothing said.
        let m = Managed::load(Some(&dir.path().join("none")), Some("a"), "dev");
        assert!(m.entries.is_empty() && m.warnings.is_empty());
    }
}
