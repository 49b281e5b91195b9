//! The LaunchAgent generator (CONTRACT.md §4).
//!
//! The plist is built as a value with the `plist` crate (never a string template, so `&`, `<`
//! and quotes are escaped), keys sorted at every level as CoreFoundation writes them, rendered
//! as XML 1.0 with tabs and a trailing newline, and parsed back before anyone writes it.

use std::path::Path;

use plist::{Dictionary, Value};

use crate::error::Invalid;
use crate::host::launchenv::LaunchEnv;
use crate::sys::fs::{self as fsutil, FsError};

/// Everything that goes into the plist.
pub struct AgentSpec<'a> {
    pub label: &'a str,
    /// The stable path of oyster: launchd runs `<launcher> host exec --stack <stack>`.
    pub launcher: &'a Path,
    pub stack: &'a str,
    pub root: &'a Path,
    pub env: &'a LaunchEnv,
    pub log_path: &'a Path,
}

/// The session types the job may load in, as Homebrew writes them: without this key launchd
/// treats an agent as Aqua-only and refuses it in `user/<uid>` (a Background session), which
/// is where an SSH login or a Mac with nobody at the screen loads it (LAUNCHD.md).
pub const SESSION_TYPES: [&str; 5] = ["Aqua", "Background", "LoginWindow", "StandardIO", "System"];

/// A string for the plist: it must be XML 1.0 text, so a control character other than tab is
/// refused before anything is written (a plist with one is not well-formed; launchd and
/// Python's plistlib refuse it even where a lenient parser does not).
fn text(what: &str, value: &str) -> Result<Value, Invalid> {
    if let Some(c) = value.chars().find(|c| c.is_control() && *c != '\t') {
        return Err(Invalid::new(format!(
            "{what} holds the control character U+{:04X}, which cannot go into a plist: {}",
            c as u32,
            crate::output::redact::escape_controls(value)
        ))
        .hint("use a path without control characters"));
    }
    Ok(Value::String(value.to_owned()))
}

/// Renders the plist bytes. Same inputs, same bytes.
pub fn render(spec: &AgentSpec<'_>) -> anyhow::Result<Vec<u8>> {
    let s = |what: &str, p: &Path| text(what, &p.to_string_lossy());
    let mut env = Dictionary::new();
    for (k, v) in &spec.env.vars {
        env.insert(k.clone(), text(k, v)?);
    }
    let mut d = Dictionary::new();
    d.insert("EnvironmentVariables".into(), Value::Dictionary(env));
    d.insert("KeepAlive".into(), Value::Boolean(true));
    d.insert("Label".into(), Value::String(spec.label.to_owned()));
    d.insert(
        "LimitLoadToSessionType".into(),
        Value::Array(
            SESSION_TYPES
                .iter()
                .map(|t| Value::String((*t).to_owned()))
                .collect(),
        ),
    );
    d.insert("ProcessType".into(), Value::String("Interactive".into()));
    d.insert(
        "ProgramArguments".into(),
        Value::Array(
            std::iter::once(s("oyster's path", spec.launcher)?)
                .chain(launch_arguments(spec.stack).into_iter().map(Value::String))
                .collect(),
        ),
    );
    d.insert("RunAtLoad".into(), Value::Boolean(true));
    d.insert(
        "StandardErrorPath".into(),
        s("the log path", spec.log_path)?,
    );
    d.insert("StandardOutPath".into(), s("the log path", spec.log_path)?);
    d.insert("ThrottleInterval".into(), Value::Integer(10.into()));
    d.insert(
        "WorkingDirectory".into(),
        s("the Oysterun root", &spec.root.join("host-service"))?,
    );
    let value = sorted(Value::Dictionary(d));
    let mut out = Vec::new();
    plist::to_writer_xml(&mut out, &value)?;
    out.push(b'\n');
    let back = Value::from_reader_xml(out.as_slice())
        .map_err(|e| anyhow::anyhow!("the generated plist does not parse back: {e}"))?;
    anyhow::ensure!(
        back == value,
        "the generated plist parses back to a different value"
    );
    Ok(out)
}

/// What follows oyster's path in `ProgramArguments` (CONTRACT.md §4): the launch program.
pub fn launch_arguments(stack: &str) -> Vec<String> {
    ["host", "exec", "--stack", stack]
        .map(str::to_owned)
        .to_vec()
}

/// The file name of Oysterun's own runner, which its installer puts in `ProgramArguments`.
pub const OYSTERUN_RUNNER: &str = "run_oysterun_host.sh";

/// Sorts dictionary keys at every level (CoreFoundation's order).
fn sorted(v: Value) -> Value {
    match v {
        Value::Dictionary(d) => {
            let mut items: Vec<(String, Value)> = d.into_iter().collect();
            items.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Dictionary(items.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// What oyster reads back from an installed plist: its bytes, its `EnvironmentVariables` and
/// its `ProgramArguments` (empty when the plist does not parse).
#[derive(Debug, Clone, Default)]
pub struct Installed {
    pub bytes: Vec<u8>,
    pub env: LaunchEnv,
    pub program_arguments: Vec<String>,
}

impl Installed {
    /// The Node it pins.
    pub fn node_bin(&self) -> Option<&str> {
        self.env.get(crate::host::launchenv::NODE_BIN)
    }
    /// The Oysterun root it runs: its `OYSTERUN_REPO_ROOT`, or, in a plist Oysterun's own
    /// installer wrote (which has none), the root of the runner it runs
    /// (`<root>/tool_scripts/run_oysterun_host.sh`).
    pub fn repo_root(&self) -> Option<&str> {
        self.env.get(crate::host::launchenv::REPO_ROOT).or_else(|| {
            let runner = Path::new(self.oysterun_runner()?);
            runner.parent()?.parent()?.to_str()
        })
    }
    /// The runner script, when Oysterun's own installer wrote this plist (its
    /// `ProgramArguments` run `tool_scripts/run_oysterun_host.sh`).
    pub fn oysterun_runner(&self) -> Option<&str> {
        self.program_arguments.iter().map(String::as_str).find(|a| {
            Path::new(a)
                .file_name()
                .is_some_and(|n| n == OYSTERUN_RUNNER)
        })
    }
}

/// The largest plist oyster reads (CONTRACT.md §9).
pub const MAX_PLIST_BYTES: u64 = 1 << 20;

/// Values of secret-named variables a user added to the installed plist by hand, so no output
/// shows them.
pub fn secret_values_on_disk(path: &Path) -> Vec<String> {
    let Ok(Some(bytes)) = fsutil::read_regular(path, MAX_PLIST_BYTES) else {
        return vec![];
    };
    read_env(&bytes)
        .map(|env| {
            env.vars
                .into_iter()
                .filter(|(k, _)| crate::output::redact::is_secret_key(k))
                .map(|(_, v)| v)
                .collect()
        })
        .unwrap_or_default()
}

/// Reads the installed plist, if there is one; one that does not parse is said, not fatal.
pub fn read_installed(path: &Path) -> Option<Installed> {
    let bytes = match fsutil::read_regular(path, MAX_PLIST_BYTES) {
        Ok(b) => b?,
        Err(e) => {
            crate::output::printer().note(&format!("ignoring the installed plist: {e}"));
            return None;
        }
    };
    let env = read_env(&bytes).unwrap_or_else(|e| {
        crate::output::printer().note(&format!(
            "the installed {} does not parse ({e}); ignoring its pins",
            path.display()
        ));
        LaunchEnv::default()
    });
    let program_arguments = read_program_arguments(&bytes);
    Some(Installed {
        bytes,
        env,
        program_arguments,
    })
}

/// The `ProgramArguments` of plist bytes (empty when there are none or it does not parse).
pub fn read_program_arguments(bytes: &[u8]) -> Vec<String> {
    Value::from_reader(std::io::Cursor::new(bytes))
        .ok()
        .and_then(Value::into_dictionary)
        .and_then(|mut d| d.remove("ProgramArguments"))
        .and_then(Value::into_array)
        .map(|a| a.into_iter().filter_map(Value::into_string).collect())
        .unwrap_or_default()
}

/// The `EnvironmentVariables` of plist bytes.
pub fn read_env(bytes: &[u8]) -> Result<LaunchEnv, plist::Error> {
    let value = Value::from_reader(std::io::Cursor::new(bytes))?;
    let vars = value
        .into_dictionary()
        .and_then(|mut d| d.remove("EnvironmentVariables"))
        .and_then(Value::into_dictionary)
        .map(|e| {
            e.into_iter()
                .filter_map(|(k, v)| v.into_string().map(|s| (k, s)))
                .collect()
        })
        .unwrap_or_default();
    Ok(LaunchEnv { vars })
}

/// Writes the plist when its bytes change: log dir first (launchd cannot open a log in a missing
/// directory), then an atomic 0644 write, never through a symlink. Returns whether it wrote.
///
/// Unchanged bytes with a mode launchd refuses (group/world-writable → exit 122) still get
/// their mode set to 0644, which counts as a change.
pub fn write(
    lock: &fsutil::Lock,
    plist_path: &Path,
    bytes: &[u8],
    log_dir: &Path,
) -> Result<bool, FsError> {
    use std::os::unix::fs::PermissionsExt;
    fsutil::create_dir_all(log_dir, 0o755)?;
    if let Some(dir) = plist_path.parent() {
        fsutil::create_dir_all(dir, 0o755)?;
    }
    let wrote = fsutil::write_atomic(lock, plist_path, bytes, Some(0o644))?;
    let mode = std::fs::metadata(plist_path).map(|m| m.permissions().mode() & 0o7777);
    if !wrote && mode.is_ok_and(|m| m != 0o644) {
        std::fs::set_permissions(plist_path, std::fs::Permissions::from_mode(0o644)).map_err(
            |source| FsError::Io {
                action: "set the mode of",
                path: plist_path.to_owned(),
                cause: source,
            },
        )?;
        return Ok(true);
    }
    Ok(wrote)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::launchenv::{generate, EnvInputs};
    use std::path::PathBuf;

    #[test]
    fn golden_plist_for_fixed_inputs() {
        let dirs = vec![PathBuf::from("/Users/a & b/.local/bin")];
        let env = generate(&EnvInputs {
            node_bin: Path::new("/opt/homebrew/bin/node"),
            provider_dirs: &dirs,
            config_dir: Path::new("/Users/a & b/.oysterun"),
            port: 8802,
            root: Path::new("/opt/oysterun <1.0>"),
            stack_name: "production",
            stack_root: Path::new("/Users/a & b/.oysterun"),
        })
        .unwrap();
        let bytes = render(&AgentSpec {
            label: "com.oysterun.host",
            launcher: Path::new("/opt/homebrew/bin/oyster"),
            stack: "production",
            root: Path::new("/opt/oysterun <1.0>"),
            env: &env,
            log_path: Path::new("/Users/a & b/.oysterun/logs/oysterun-host.log"),
        })
        .unwrap();
        insta::assert_snapshot!(String::from_utf8(bytes).unwrap());
    }

    #[test]
    fn a_plist_from_oysteruns_installer_is_recognised_and_names_its_root() {
        let bytes = br#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0"><dict>
<key>Label</key><string>com.oysterun.host</string>
<key>ProgramArguments</key><array>
<string>/opt/oysterun/tool_scripts/run_oysterun_host.sh</string><string>--stack</string><string>production</string>
</array>
<key>EnvironmentVariables</key><dict><key>OYSTERUN_NODE_BIN</key><string>/opt/homebrew/bin/node</string></dict>
</dict></plist>
"#;
        let inst = Installed {
            bytes: bytes.to_vec(),
            env: read_env(bytes).unwrap(),
            program_arguments: read_program_arguments(bytes),
        };
        assert_eq!(
            inst.oysterun_runner(),
            Some("/opt/oysterun/tool_scripts/run_oysterun_host.sh")
        );
        assert_eq!(inst.repo_root(), Some("/opt/oysterun"));
        assert_eq!(inst.node_bin(), Some("/opt/homebrew/bin/node"));
    }
}
