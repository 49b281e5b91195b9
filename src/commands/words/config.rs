//! The words of `config/`: the declared environment file's refusals, `config.json`'s errors,
//! the managed values' notes.

use std::fmt::{self, Display, Formatter};

use crate::config::environment::{writers, DeclareProblem, NothingChanged, Refused, RefusedWhy};
use crate::config::managed::{Forced, KeyWhy, LeftOut, Place, VariableWhy};
use crate::config::{BadValue, ConfigError, KeptChanging, StoreNote};
use crate::error::Failed;
use crate::output::redact::escape_controls;

impl Display for DeclareProblem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            DeclareProblem::NameAndValue { shown } => write!(
                f,
                "`{shown}=…` is a name and a value in one word (the value is not shown): give them \
                 apart, `oyster env set {shown} VALUE`, or `--value-stdin` to keep the value out of argv"
            ),
            DeclareProblem::NotAName { name } => write!(
                f,
                "{:?} is not a variable name: use letters, digits and `_`, not starting with a digit",
                escape_controls(name)
            ),
            DeclareProblem::Reserved { name } => write!(
                f,
                "{name} is oyster's to set: the Host's PATH, HOME, USER, LOGNAME, SHELL, TMPDIR and \
                 every OYSTERUN_* and OYSTER_* variable (in any case) come from the generated environment"
            ),
            DeclareProblem::LineBreak { name } => write!(
                f,
                "the value for {name} contains a line break; a declared value is one line"
            ),
            DeclareProblem::Nul { name } => write!(
                f,
                "the value for {name} contains a NUL byte, which no environment can hold"
            ),
        }
    }
}

impl Display for RefusedWhy {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            RefusedWhy::Symlink => write!(f, "is a symlink, which oyster does not follow"),
            RefusedWhy::NotRegular { kind } => write!(f, "is {kind}, not a regular file"),
            RefusedWhy::Unreadable { cause } => write!(f, "cannot be read: {cause}"),
            RefusedWhy::Uninspectable { cause } => write!(f, "cannot be inspected: {cause}"),
            RefusedWhy::ForeignOwner { owner, euid } => write!(
                f,
                "belongs to {owner}, not to the user reading it (uid {euid}); oyster uses only a user's own file"
            ),
            RefusedWhy::Writable { mode } => write!(
                f,
                "is writable by {} (mode {mode:04o}): anyone who can write it could steer the Host",
                writers(*mode)
            ),
            RefusedWhy::TooLarge { cap } => write!(
                f,
                "is larger than {cap} bytes, more than declared variables need"
            ),
            RefusedWhy::NotUtf8 => write!(f, "is not UTF-8 text"),
            RefusedWhy::DirForeignOwner { dir, owner, euid } => write!(
                f,
                "is in {}, which belongs to {owner}, not to the user reading it (uid {euid}): {owner} could swap the file",
                dir.display()
            ),
            RefusedWhy::DirWritable { dir, mode } => write!(
                f,
                "is in {}, which is writable by {} (mode {mode:04o}): anyone who can write it could swap the file",
                dir.display(),
                writers(*mode)
            ),
        }
    }
}

impl Display for Refused {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.path.display(), self.why)
    }
}

impl Refused {
    /// The command that fixes it.
    pub fn fix(&self) -> String {
        let path = self.path.display();
        match &self.why {
            RefusedWhy::Symlink => format!(
                "replace it with the file itself: `oyster env set` writes one, or `rm {path}`"
            ),
            RefusedWhy::NotRegular { .. } => {
                format!("remove it (`rm {path}`) and declare the variables again")
            }
            RefusedWhy::Unreadable { .. } | RefusedWhy::Uninspectable { .. } => {
                "check the file".into()
            }
            RefusedWhy::ForeignOwner { owner, .. } => {
                format!("run oyster as {owner}, or have {owner} remove the file")
            }
            RefusedWhy::Writable { .. } => format!("chmod 600 {path}"),
            RefusedWhy::TooLarge { .. } => "check what wrote it, or move it aside".into(),
            RefusedWhy::NotUtf8 => "save it as UTF-8".into(),
            RefusedWhy::DirForeignOwner { owner, .. } => format!(
                "keep the stack's config directory your own (`chown` it, as root, to yourself), or run oyster as {owner}"
            ),
            RefusedWhy::DirWritable { dir, .. } => format!("chmod go-w {}", dir.display()),
        }
    }
}

impl Display for NothingChanged {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}; nothing was changed", self.0)
    }
}

impl super::Hint for NothingChanged {
    fn hint(&self) -> Option<String> {
        Some(self.0.fix())
    }
}

impl Display for Place {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.stack {
            Some(s) => write!(f, "{}: stacks.{s}.{}", self.file.display(), self.key),
            None => write!(f, "{}: {}", self.file.display(), self.key),
        }
    }
}

impl Display for VariableWhy {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            VariableWhy::NotAString { name, kind } => {
                write!(f, "the value for {name} is {kind}, not a string")
            }
            VariableWhy::Declare(why) => why.fmt(f),
        }
    }
}

impl Display for KeyWhy {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            KeyWhy::PortOnlyPerStack => write!(f, "port is only per stack (stacks.NAME.port)"),
            KeyWhy::NotAPort => write!(f, "not a port (1-65535)"),
            KeyWhy::NotAbsolute => write!(f, "not an absolute path"),
            KeyWhy::NotAMode => write!(f, "not direct, cloud-direct, managed or managed-pending"),
            KeyWhy::Intents(bad) => write!(
                f,
                "{} not a supported provider with auto, manual or disabled",
                bad.join(", ")
            ),
            KeyWhy::NotADictionary => write!(f, "not a dictionary"),
            KeyWhy::NotACommand => write!(f, "not an absolute path (or \"\" to disable)"),
            KeyWhy::Unknown => write!(f, "not a key oyster manages"),
        }?;
        write!(f, "; left out")
    }
}

impl Display for LeftOut {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            LeftOut::IntentContradicts {
                file,
                key,
                value,
                command_file,
                command_key,
                provider,
            } => write!(
                f,
                "{}: {key} = {value} is left out: {} forces {command_key} = \"\", which disables {provider}",
                file.display(),
                command_file.display(),
            ),
            LeftOut::Unreadable { cause } => write!(f, "{cause}; its values are not applied"),
            LeftOut::NotADictionary { file } => write!(
                f,
                "{} is not a dictionary; its values are not applied",
                file.display()
            ),
            LeftOut::NotAPlist { file, problem } => write!(
                f,
                "{} is not a property list ({problem}); its values are not applied",
                file.display()
            ),
            LeftOut::StacksNotADictionary { file, kind } => write!(
                f,
                "{}: stacks is {kind}, not a dictionary of stack name to settings; every per-stack value in it is left out",
                file.display()
            ),
            LeftOut::StackNotADictionary { file, stack, kind } => write!(
                f,
                "{}: stacks.{stack} is {kind}, not a dictionary; every value in it is left out",
                file.display()
            ),
            LeftOut::EnvironmentNotADictionary { at, kind } => write!(
                f,
                "{at} is {kind}, not a dictionary of variable name to string; left out"
            ),
            LeftOut::Variable { at, why } => write!(f, "{at}: {why}; left out"),
            LeftOut::Key { at, why } => write!(f, "{at}: {why}"),
        }
    }
}

impl From<Forced> for Failed {
    fn from(r: Forced) -> Failed {
        let e = &r.entry;
        Failed::new(
            format!(
                "{} is managed by your organization: {} forces {} = {}; nothing was changed",
                r.what,
                e.file.display(),
                e.key,
                e.value
            ),
            "ask your administrator to change the profile (`oyster config show` lists every managed value)",
        )
    }
}

impl Display for ConfigError {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Syntax {
                path,
                msg,
                line,
                column,
            } => write!(
                f,
                "{} is not valid JSON: {msg} at line {line}, column {column}. Fix or restore the file; oyster changed nothing",
                path.display()
            ),
            ConfigError::Type {
                path,
                key,
                msg,
                line,
                column,
            } => write!(
                f,
                "{}: `{key}` has the wrong type: {msg} at line {line}, column {column}. Fix the value; oyster changed nothing",
                path.display()
            ),
            ConfigError::Bom { path } => write!(
                f,
                "{} starts with a UTF-8 byte-order mark (line 1, column 1); save it without the BOM. oyster changed nothing",
                path.display()
            ),
            ConfigError::Empty { path } => write!(
                f,
                "{} is empty (line 1, column 1); put `{{}}` in it or delete it. oyster changed nothing",
                path.display()
            ),
            ConfigError::BadValue { path, key, why } => write!(
                f,
                "{}: `{key}` {why}. Fix the value (or remove the key); oyster changed nothing",
                path.display()
            ),
            ConfigError::Fs(e) => e.fmt(f),
        }
    }
}

impl Display for BadValue {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            BadValue::NotAPort(n) => write!(f, "is {n}, not a port between 1 and 65535"),
            BadValue::NotAbsolute(dir) => write!(
                f,
                "is {dir:?}, not an absolute path (give the full path, e.g. /Users/you/OysterunAgents)"
            ),
        }
    }
}

impl Display for StoreNote {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            StoreNote::Rewritten { path } => write!(
                f,
                "{} was rewritten by another program while oyster merged it; merging again",
                path.display()
            ),
            StoreNote::Waiting { holder, lock, secs } => write!(
                f,
                "oyster: waiting for {} to release {} (up to {secs} s)…",
                if holder.is_empty() {
                    "another writer"
                } else {
                    holder
                },
                lock.display()
            ),
        }
    }
}

impl Display for KeptChanging {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} kept changing while oyster merged it ({} attempts); nothing was written",
            self.path.display(),
            self.attempts
        )
    }
}

impl super::Hint for KeptChanging {
    fn hint(&self) -> Option<String> {
        Some(
            "something rewrites it continuously (the Host in a restart loop?); stop that, then run again"
                .into(),
        )
    }
}
