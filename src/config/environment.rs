//! The Host's declared environment file (`oyster env`, docs/behaviour.md "Declared
//! environment"): `<config dir>/oyster-host.env`, beside the stack's config.
//!
//! `KEY=VALUE` lines; `#` starts a comment line; blank lines and an `export ` before a name
//! are allowed; the value is everything after the first `=`, verbatim — no shell expansion,
//! no escapes — except that one pair of matching quotes around it is removed (`"…"` or
//! `'…'`). A line oyster cannot use is left out and said (by line number and name, never by
//! value); the others apply. The file is used only when it is a regular file owned by the
//! user reading it and not writable by group or others: otherwise none of it is (the Host
//! starts without it, and `status`/`doctor` say why). Root reading a user's file is the same
//! "not owned by the user": root never reads another user's declarations for itself.
//!
//! Values are secrets: nothing here ever puts one in an error or a note.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::sys::fs::{self as fsutil, FsError};

/// The file's name in the stack's config dir.
pub const FILE_NAME: &str = "oyster-host.env";
/// The largest file read.
const CAP: u64 = 64 * 1024;
/// Names oyster gives the Host itself (the generated environment, launchd's base).
pub const RESERVED: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR"];
/// Prefixes of the names oyster and Oysterun own.
pub const RESERVED_PREFIXES: &[&str] = &["OYSTERUN_", "OYSTER_"];
/// The header a new file starts with.
const HEADER: &str = "# The Oysterun Host's declared environment (`oyster env`): KEY=VALUE lines, no shell\n# expansion. Read by oyster's launch program at every start of the Host; keep it mode 0600.\n";

/// The file of the stack whose config dir is `config_dir`.
pub fn path_in(config_dir: &Path) -> PathBuf {
    config_dir.join(FILE_NAME)
}

/// Why a name or a value cannot be declared (never holding a value: it may be a secret).
/// Words: `commands/words/config.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeclareProblem {
    /// `NAME=VALUE` given as one word; `shown` is the name, or `NAME` when it is none.
    NameAndValue { shown: String },
    /// Not letters, digits and `_` (not starting with a digit).
    NotAName { name: String },
    /// A name oyster sets itself (in any case).
    Reserved { name: String },
    /// The value holds a line break.
    LineBreak { name: String },
    /// The value holds a NUL byte.
    Nul { name: String },
}

impl std::error::Error for DeclareProblem {}

impl crate::error::HasKind for DeclareProblem {
    fn kind(&self) -> crate::error::Kind {
        crate::error::Kind::Invalid
    }
}

/// Why `name` cannot be declared, or `Ok`.
pub fn check_name(name: &str) -> Result<(), DeclareProblem> {
    // `NAME=VALUE` given as one word: what follows the `=` is a value, maybe a secret, and is
    // never shown; the name before it is, when it is one.
    if let Some((before, _)) = name.split_once('=') {
        let shown = if is_identifier(before) {
            before
        } else {
            "NAME"
        };
        return Err(DeclareProblem::NameAndValue {
            shown: shown.to_owned(),
        });
    }
    if !is_identifier(name) {
        return Err(DeclareProblem::NotAName {
            name: name.to_owned(),
        });
    }
    // In any case: `oysterun_port` or `Path` is no variable of oyster's on a case-sensitive
    // system, but one a program that folds case (or a reader of the file) takes for it.
    let upper = name.to_ascii_uppercase();
    if RESERVED.contains(&upper.as_str()) || RESERVED_PREFIXES.iter().any(|p| upper.starts_with(p))
    {
        return Err(DeclareProblem::Reserved {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// Letters, digits and `_`, not starting with a digit.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why `value` cannot be declared for `name` (it is never shown), or `Ok`.
pub fn check_value(name: &str, value: &str) -> Result<(), DeclareProblem> {
    let name = name.to_owned();
    if value.contains(['\n', '\r']) {
        return Err(DeclareProblem::LineBreak { name });
    }
    if value.contains('\0') {
        return Err(DeclareProblem::Nul { name });
    }
    Ok(())
}

/// The variables a file declares, in file order (a name declared twice: the later line).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvFile {
    pub vars: Vec<(String, String)>,
    /// Lines left out (and names declared twice), in words, by line number and name.
    pub problems: Vec<String>,
}

impl EnvFile {
    #[cfg(test)]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why a file is not used at all (the Host starts without it). Never holds a value. Words
/// (and the fix, [`Refused::fix`]): `commands/words/config.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub path: PathBuf,
    pub why: RefusedWhy,
}

impl std::error::Error for Refused {}

/// What is wrong with the file or its directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefusedWhy {
    Symlink,
    /// Not a regular file: `kind` says what it is ("a directory").
    NotRegular {
        kind: &'static str,
    },
    Unreadable {
        cause: String,
    },
    Uninspectable {
        cause: String,
    },
    /// Owned by another user (`owner`, a name or `uid N`) than the reader (`euid`).
    ForeignOwner {
        owner: String,
        euid: u32,
    },
    /// Writable by its group or others.
    Writable {
        mode: u32,
    },
    /// Larger than [`CAP`].
    TooLarge {
        cap: u64,
    },
    NotUtf8,
    /// Its directory belongs to another user than the reader or root.
    DirForeignOwner {
        dir: PathBuf,
        owner: String,
        euid: u32,
    },
    /// Its directory is writable by its group or others.
    DirWritable {
        dir: PathBuf,
        mode: u32,
    },
}

/// Who besides the owner may write, by a mode.
pub fn writers(mode: u32) -> &'static str {
    if mode & 0o002 != 0 {
        "others"
    } else {
        "its group"
    }
}

/// Reads the file: `Ok(None)` when there is none; `Err` when it is not used at all.
pub fn read(path: &Path) -> Result<Option<EnvFile>, Refused> {
    Ok(read_text(path)?.map(|text| parse(&text)))
}

/// The file's text, from the one open file whose owner and mode were checked (so no file
/// swapped in after the check is what is read), after its directory was checked: whoever can
/// write the directory could put a file there, or take the user's away, between any two looks.
fn read_text(path: &Path) -> Result<Option<String>, Refused> {
    let refused = |why: RefusedWhy| Refused {
        path: path.to_owned(),
        why,
    };
    let mut file = match fsutil::open_regular(path) {
        Ok(Some(f)) => f,
        Ok(None) => {
            check_dir(path)?;
            return Ok(None);
        }
        Err(FsError::Symlink { .. }) => return Err(refused(RefusedWhy::Symlink)),
        Err(FsError::NotRegular { kind, .. }) => {
            return Err(refused(RefusedWhy::NotRegular { kind }))
        }
        Err(e) => {
            return Err(refused(RefusedWhy::Unreadable {
                cause: e.to_string(),
            }))
        }
    };
    let meta = file.metadata().map_err(|e| {
        refused(RefusedWhy::Uninspectable {
            cause: e.to_string(),
        })
    })?;
    let euid = crate::sys::user::euid();
    if meta.uid() != euid {
        let owner =
            crate::sys::user::name_of(meta.uid()).unwrap_or_else(|| format!("uid {}", meta.uid()));
        return Err(refused(RefusedWhy::ForeignOwner { owner, euid }));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(refused(RefusedWhy::Writable { mode }));
    }
    check_dir(path)?;
    let mut bytes = vec![];
    (&mut file)
        .take(CAP + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            refused(RefusedWhy::Unreadable {
                cause: e.to_string(),
            })
        })?;
    if bytes.len() as u64 > CAP {
        return Err(refused(RefusedWhy::TooLarge { cap: CAP }));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| refused(RefusedWhy::NotUtf8))
}

/// The directory holding the file is the user's (or root's) and writable by no one else:
/// another user who can write it could swap a file in between `env set`'s look and its read
/// (which `env set` would then write back as the user's own), or remove the user's.
fn check_dir(path: &Path) -> Result<(), Refused> {
    let Some(dir) = path.parent() else {
        return Ok(());
    };
    let Ok(meta) = std::fs::metadata(dir) else {
        return Ok(()); // no directory yet: `env set` creates it 0700
    };
    let refused = |why: RefusedWhy| Refused {
        path: path.to_owned(),
        why,
    };
    let euid = crate::sys::user::euid();
    if meta.uid() != euid && meta.uid() != 0 {
        let owner =
            crate::sys::user::name_of(meta.uid()).unwrap_or_else(|| format!("uid {}", meta.uid()));
        return Err(refused(RefusedWhy::DirForeignOwner {
            dir: dir.to_owned(),
            owner,
            euid,
        }));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(refused(RefusedWhy::DirWritable {
            dir: dir.to_owned(),
            mode,
        }));
    }
    Ok(())
}

/// The variables of a file's text (see the module documentation).
pub fn parse(text: &str) -> EnvFile {
    let mut out = EnvFile::default();
    for (i, line) in text.split('\n').enumerate() {
        let n = i + 1;
        let Some((name, value)) = split_line(line) else {
            continue;
        };
        let Some(value) = value else {
            out.problems.push(format!("line {n}: no `=`; left out"));
            continue;
        };
        // A malformed name is not shown: it may be a value typed on the wrong line.
        if !is_identifier(name) {
            out.problems.push(format!(
                "line {n}: not a variable name before `=`; left out"
            ));
            continue;
        }
        if let Err(why) = check_name(name).and_then(|()| check_value(name, value)) {
            out.problems.push(format!("line {n}: {why}; left out"));
            continue;
        }
        if let Some(at) = out.vars.iter().position(|(k, _)| k == name) {
            out.problems.push(format!(
                "line {n}: {name} is declared again; the later line is used"
            ));
            out.vars.remove(at);
        }
        out.vars.push((name.to_owned(), value.to_owned()));
    }
    out
}

/// A line's name and value (`None` for a comment or blank line; a value of `None` for a line
/// without `=`).
fn split_line(line: &str) -> Option<(&str, Option<&str>)> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let t = line.trim_start();
    if t.is_empty() || t.starts_with('#') {
        return None;
    }
    let t = t.strip_prefix("export ").map_or(t, str::trim_start);
    Some(match t.split_once('=') {
        Some((name, value)) => (name, Some(unquote(value))),
        None => (t.trim_end(), None),
    })
}

fn unquote(value: &str) -> &str {
    let b = value.as_bytes();
    match b {
        [q @ (b'"' | b'\''), .., last] if b.len() >= 2 && last == q => &value[1..value.len() - 1],
        _ => value,
    }
}

/// A line for `name=value` that reads back as `value`.
fn line_for(name: &str, value: &str) -> String {
    if unquote(value) == value {
        format!("{name}={value}")
    } else {
        format!("{name}=\"{value}\"")
    }
}

/// The file's text with `name` set to `value` (in place of its last line, other lines for it
/// removed), or removed when `value` is `None`; every other line kept as it is.
fn edit(text: &str, name: &str, value: Option<&str>) -> String {
    let lines: Vec<&str> = if text.is_empty() {
        vec![]
    } else {
        text.strip_suffix('\n')
            .unwrap_or(text)
            .split('\n')
            .collect()
    };
    let is_name = |l: &&str| split_line(l).is_some_and(|(n, v)| n == name && v.is_some());
    let last = lines.iter().rposition(is_name);
    let mut out: Vec<String> = vec![];
    for (i, l) in lines.iter().enumerate() {
        if Some(i) == last {
            if let Some(v) = value {
                out.push(line_for(name, v));
            }
        } else if !is_name(l) {
            out.push((*l).to_owned());
        }
    }
    if let (None, Some(v)) = (last, value) {
        if out.is_empty() && text.is_empty() {
            out.extend(HEADER.lines().map(str::to_owned));
        }
        out.push(line_for(name, v));
    }
    let mut s = out.join("\n");
    if !s.is_empty() {
        s.push('\n');
    }
    s
}

/// What [`change`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changed {
    /// The file already said so: not touched.
    Unchanged,
    Written,
}

/// Sets (`Some`) or removes (`None`) one variable, under the file's lock: the name and value
/// are checked first, and a file that would not be used (see [`read`]) is refused, so a
/// refusal writes nothing. The file is written atomically with mode 0600.
pub fn change(path: &Path, name: &str, value: Option<&str>) -> anyhow::Result<Changed> {
    check_name(name)?;
    if let Some(v) = value {
        check_value(name, v)?;
    }
    if let Some(dir) = path.parent() {
        fsutil::create_dir_all(dir, 0o700)?;
    }
    let lock = fsutil::lock_sidecar(path)?;
    // The text edited is the one the checks were made on (one open file), never a second read.
    let text = match read_text(path) {
        Ok(text) => text.unwrap_or_default(),
        Err(r) => return Err(NothingChanged(r).into()),
    };
    let new = edit(&text, name, value);
    if new == text || (text.is_empty() && value.is_none()) {
        return Ok(Changed::Unchanged);
    }
    fsutil::write_atomic(&lock, path, new.as_bytes(), Some(0o600))?;
    Ok(Changed::Written)
}

/// A file [`change`] would not use, so it changed nothing (invalid input, with the file's fix).
#[derive(Debug)]
pub struct NothingChanged(pub Refused);

impl std::error::Error for NothingChanged {}

impl crate::error::HasKind for NothingChanged {
    fn kind(&self) -> crate::error::Kind {
        crate::error::Kind::Invalid
    }
}

/// Variables whose values are settings, not secrets: the Host's mode (`NODE_ENV=production`),
/// the hosts that skip a proxy (`NO_PROXY=127.0.0.1`), a CA bundle's path, the time zone and
/// locale. Every other declared value is a secret of every run; these are not learned as
/// secrets, because oyster's own output holds them as its own words — `production` is the
/// default stack's name, `127.0.0.1` the Host's address — and redacting those blanked the
/// stack's name and URL out of every line and `--json` document.
pub const SETTINGS: &[&str] = &[
    "NO_PROXY",
    "no_proxy",
    "NODE_ENV",
    "NODE_EXTRA_CA_CERTS",
    "TZ",
    "LANG",
    "LC_ALL",
];

/// The values of `vars` that no output may show: every one but a [`SETTINGS`] variable's.
pub fn secrets<'a>(vars: impl IntoIterator<Item = (&'a String, &'a String)>) -> Vec<String> {
    vars.into_iter()
        .filter(|(k, _)| !SETTINGS.contains(&k.as_str()))
        .map(|(_, v)| v.clone())
        .collect()
}

/// Every declared value in the file (for the redaction), whatever the file's mode: a file
/// oyster refuses still holds secrets no output may show.
pub fn secret_values_on_disk(path: &Path) -> Vec<String> {
    match fsutil::read_regular(path, CAP) {
        Ok(Some(bytes)) => {
            let f = parse(&String::from_utf8_lossy(&bytes));
            secrets(f.vars.iter().map(|(k, v)| (k, v)))
        }
        _ => vec![],
    }
}

#[cfg(test)]
#[path = "environment_tests.rs"]
mod tests;
