//! The user unit that runs the Host: rendered from a [`UnitSpec`], byte for byte the same for
//! the same spec, and where it goes ([`unit_path`]).
//!
//! Quoting (systemd.syntax(7) "Quoting", systemd.service(5) "Command lines", systemd.exec(5)
//! `Environment=`, systemd.unit(5) "Specifiers"; each checked against systemd 252):
//! - every `ExecStart=` word and every `Environment=` assignment is double-quoted, `\` and `"`
//!   escaped, `%` written `%%` (specifiers are expanded in both);
//! - `$` is written `$$` in the arguments (variables are expanded there), but not in the
//!   program (never expanded) nor in `Environment=` (where `$` means nothing); a program path
//!   with a quote or a backslash is refused (systemd refuses it: "special characters");
//! - `WorkingDirectory=`, `append:` paths and `Description=` are not unquoted at all: written
//!   as they are, `%` doubled; what their parser would change (surrounding blanks, a trailing
//!   `\`, a path that is not normalized) is refused, as is every control character.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Everything that goes into the unit.
#[derive(Debug, Clone)]
pub struct UnitSpec<'a> {
    pub description: &'a str,
    /// The launch program (`<oyster>`), an absolute path.
    pub program: &'a Path,
    /// Its arguments (`host exec --stack NAME`).
    pub args: &'a [String],
    /// `<root>/host-service`.
    pub working_directory: &'a Path,
    /// The generated environment, in the order given; each name once.
    pub env: &'a [(String, String)],
    /// The Host log: both streams are appended to it.
    pub log_path: &'a Path,
    pub timing: Timing,
}

/// The unit's clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// `RestartSec=`: the wait before an automatic restart (launchd's `ThrottleInterval`).
    pub restart: Duration,
    /// `StartLimitIntervalSec=` and `StartLimitBurst=`: more starts than the burst within the
    /// interval leave the unit failed until `reset-failed`.
    pub start_limit_interval: Duration,
    pub start_limit_burst: u32,
    /// `TimeoutStopSec=`: SIGTERM, then SIGKILL to the whole unit after this long.
    pub timeout_stop: Duration,
}

impl Timing {
    /// The Host's: restart after 10 s (as launchd throttles), failed after 5 starts within
    /// 120 s (a crash loop), 20 s to stop (launchd's default exit timeout).
    pub const HOST: Timing = Timing {
        restart: Duration::from_secs(10),
        start_limit_interval: Duration::from_secs(120),
        start_limit_burst: 5,
        timeout_stop: Duration::from_secs(20),
    };
}

/// Which part of the spec a refusal is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    Description,
    Program,
    /// The argument at this index (0 = the first after the program).
    Argument(usize),
    WorkingDirectory,
    /// The value of this variable.
    Env(String),
    LogPath,
    Label,
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Field::Description => f.write_str("the description"),
            Field::Program => f.write_str("the program"),
            Field::Argument(i) => write!(f, "argument {}", i + 1),
            Field::WorkingDirectory => f.write_str("the working directory"),
            Field::Env(k) => write!(f, "{k}"),
            Field::LogPath => f.write_str("the log path"),
            Field::Label => f.write_str("the label"),
        }
    }
}

/// What cannot be written into a unit file as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("{0} holds a control character")]
    Control(Field),
    #[error("{0} is not valid UTF-8")]
    NotUtf8(Field),
    #[error("{0} is not an absolute path")]
    NotAbsolute(Field),
    /// Something systemd's parser would change: surrounding blanks, a trailing `\`, a path
    /// with `.`/`..`/empty components or too long.
    #[error("{field} cannot be written in a unit file: {why}")]
    Unexpressible { field: Field, why: &'static str },
    #[error("{0:?} is not an environment variable name")]
    BadEnvName(String),
    #[error("{0} is set twice")]
    DuplicateEnv(String),
    #[error("{0:?} is not a unit name")]
    BadUnitName(String),
}

impl crate::error::HasKind for UnitError {
    /// The values come from the user's paths, names and configuration (exit 2).
    fn kind(&self) -> crate::error::Kind {
        crate::error::Kind::Invalid
    }
}

/// Renders the unit file. Same spec, same bytes.
pub fn render(spec: &UnitSpec<'_>) -> Result<Vec<u8>, UnitError> {
    let t = &spec.timing;
    let program = path_text(spec.program, Field::Program)?;
    if program.contains(['"', '\'', '\\']) {
        // systemd refuses such a program ("Executable name contains special characters").
        return Err(unexpressible(Field::Program, "quotes or a backslash"));
    }
    let mut exec = vec![quote(&program, false)];
    for (i, a) in spec.args.iter().enumerate() {
        exec.push(quote(checked(a, Field::Argument(i))?, true));
    }
    let cwd = bare_path(spec.working_directory, Field::WorkingDirectory)?;
    let log = bare_path(spec.log_path, Field::LogPath)?;
    let mut out = String::new();
    let mut line = |k: &str, v: &str| {
        out.push_str(k);
        out.push('=');
        out.push_str(v);
        out.push('\n');
    };
    line(
        "[Unit]\nDescription",
        &bare(spec.description, Field::Description)?,
    );
    line("StartLimitIntervalSec", &span(t.start_limit_interval));
    line("StartLimitBurst", &t.start_limit_burst.to_string());
    line("\n[Service]\nType", "exec");
    line("ExecStart", &exec.join(" "));
    line("WorkingDirectory", &cwd);
    for assignment in environment(spec.env)? {
        line("Environment", &assignment);
    }
    line("Restart", "always");
    line("RestartSec", &span(t.restart));
    line("KillMode", "mixed");
    line("TimeoutStopSec", &span(t.timeout_stop));
    line("StandardOutput", &format!("append:{log}"));
    line("StandardError", &format!("append:{log}"));
    line("\n[Install]\nWantedBy", "default.target");
    Ok(out.into_bytes())
}

/// `Environment="KEY=value"` values, in order: names checked and each once.
fn environment(env: &[(String, String)]) -> Result<Vec<String>, UnitError> {
    let mut seen = std::collections::BTreeSet::new();
    env.iter()
        .map(|(k, v)| {
            if !is_env_name(k) {
                return Err(UnitError::BadEnvName(k.clone()));
            }
            if !seen.insert(k.as_str()) {
                return Err(UnitError::DuplicateEnv(k.clone()));
            }
            checked(v, Field::Env(k.clone()))?;
            Ok(quote(&format!("{k}={v}"), false))
        })
        .collect()
}

/// `"…"` with `\` and `"` escaped, `%` doubled, and `$` doubled when `dollar`.
pub fn quote(s: &str, dollar: bool) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '\\' => q.push_str("\\\\"),
            '"' => q.push_str("\\\""),
            '%' => q.push_str("%%"),
            '$' if dollar => q.push_str("$$"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// A value written without quotes: `%` doubled; what the parser strips or joins is refused.
fn bare(s: &str, field: Field) -> Result<String, UnitError> {
    checked(s, field.clone())?;
    if s.trim() != s {
        return Err(unexpressible(field, "surrounding blanks"));
    }
    if s.ends_with('\\') {
        return Err(unexpressible(field, "a trailing backslash"));
    }
    Ok(s.replace('%', "%%"))
}

/// An absolute, normalized path written without quotes (`WorkingDirectory=`, `append:`).
fn bare_path(p: &Path, field: Field) -> Result<String, UnitError> {
    bare(&path_text(p, field.clone())?, field)
}

/// An absolute, normalized UTF-8 path without control characters, as text.
fn path_text(p: &Path, field: Field) -> Result<String, UnitError> {
    let s = p
        .to_str()
        .ok_or_else(|| UnitError::NotUtf8(field.clone()))?;
    checked(s, field.clone())?;
    if !s.starts_with('/') {
        return Err(UnitError::NotAbsolute(field));
    }
    let parts: Vec<&str> = s[1..].split('/').collect();
    if s != "/"
        && parts
            .iter()
            .any(|c| c.is_empty() || *c == "." || *c == "..")
    {
        return Err(unexpressible(field, "not a normalized path"));
    }
    if s.len() >= 4096 || parts.iter().any(|c| c.len() > 255) {
        return Err(unexpressible(field, "too long a path"));
    }
    Ok(s.to_owned())
}

fn checked(s: &str, field: Field) -> Result<&str, UnitError> {
    if s.chars().any(char::is_control) {
        return Err(UnitError::Control(field));
    }
    Ok(s)
}

fn unexpressible(field: Field, why: &'static str) -> UnitError {
    UnitError::Unexpressible { field, why }
}

/// A name systemd takes in `Environment=`: ASCII letters, digits and `_`, not starting with
/// a digit (systemd.exec(5)).
pub fn is_env_name(k: &str) -> bool {
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A time span as systemd reads it: whole seconds bare, else milliseconds (`250ms`).
fn span(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// `<label>.service`, for a launchd-style label (`com.oysterun.host.dev`).
pub fn unit_name(label: &str) -> Result<String, UnitError> {
    let name = format!("{label}.service");
    check_unit_name(&name).map_err(|_| UnitError::BadUnitName(label.to_owned()))?;
    Ok(name)
}

/// A unit name as systemd takes it (`unit_name_is_valid`): at most 255 characters of ASCII
/// letters, digits, `:-_.\@`, with a suffix; refused here too: a leading `-` (an option to
/// systemctl) or `.`.
pub fn check_unit_name(name: &str) -> Result<(), UnitError> {
    let bad = || UnitError::BadUnitName(name.to_owned());
    let (prefix, suffix) = name.rsplit_once('.').ok_or_else(bad)?;
    let ok_char = |c: char| c.is_ascii_alphanumeric() || ":-_.\\@".contains(c);
    if name.len() > 255
        || prefix.is_empty()
        || suffix.is_empty()
        || name.starts_with(['-', '.'])
        || !name.chars().all(ok_char)
    {
        return Err(bad());
    }
    Ok(())
}

/// The directory the user manager reads a user's own units from (systemd.unit(5), "User
/// Unit Search Path"): `$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`. A
/// relative `XDG_CONFIG_HOME` is ignored, as the XDG base directory spec says. The manager
/// reads its own environment's `XDG_CONFIG_HOME`, not the caller's:
/// [`super::Systemctl::unit_search_path`] says where it really looks.
pub fn unit_dir(home: &Path, xdg_config_home: Option<&Path>) -> PathBuf {
    xdg_config_home
        .filter(|d| d.is_absolute())
        .map_or_else(|| home.join(".config"), Path::to_path_buf)
        .join("systemd/user")
}

/// `<unit_dir>/<label>.service`.
pub fn unit_path(
    home: &Path,
    xdg_config_home: Option<&Path>,
    label: &str,
) -> Result<PathBuf, UnitError> {
    Ok(unit_dir(home, xdg_config_home).join(unit_name(label)?))
}

#[cfg(test)]
#[path = "unit_tests.rs"]
mod tests;
