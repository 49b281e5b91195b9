//! The LaunchAgent generator (docs/behaviour.md §4).
//!
//! The plist is a typed [`LaunchAgent`] with launchd's key names (serialised by the `plist`
//! crate through serde, never a string template, so `&`, `<` and quotes are escaped), keys
//! sorted at every level as CoreFoundation writes them, rendered as XML 1.0 with tabs and a
//! trailing newline, and parsed back before anyone writes it. An installed plist is read into
//! the same struct, keys oyster does not write kept in [`LaunchAgent::other`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plist::{Dictionary, Value};
use serde::{Deserialize, Serialize};

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
/// is where an SSH login or a Mac with nobody at the screen loads it (docs/launchd.md).
pub const SESSION_TYPES: [&str; 5] = ["Aqua", "Background", "LoginWindow", "StandardIO", "System"];

/// A LaunchAgent definition, with launchd's key names (`launchd.plist(5)`). Fields are in
/// key order, which is the order CoreFoundation writes them in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct LaunchAgent {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environment_variables: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_alive: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limit_load_to_session_type: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_type: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub program_arguments: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_at_load: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standard_error_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standard_out_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle_interval: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<String>,
    /// Every key oyster does not write (a hand edit, Oysterun's own installer, launchd keys
    /// such as `Program`), and a known key whose value has another shape than oyster writes
    /// (`KeepAlive` as a dictionary of conditions, a one-string `LimitLoadToSessionType`), kept
    /// as found so redaction and "installed by" see the whole file. Never written by oyster.
    #[serde(skip)]
    pub other: Dictionary,
}

/// Whether `v` has the shape the typed field for `key` takes (`None`: not a key oyster types).
fn fits(key: &str, v: &Value) -> Option<bool> {
    let strings = |v: &Value| {
        v.as_array()
            .is_some_and(|a| a.iter().all(|x| x.as_string().is_some()))
    };
    Some(match key {
        "EnvironmentVariables" => v
            .as_dictionary()
            .is_some_and(|d| d.values().all(|x| x.as_string().is_some())),
        "KeepAlive" | "RunAtLoad" => v.as_boolean().is_some(),
        "Label" | "ProcessType" | "StandardErrorPath" | "StandardOutPath" | "WorkingDirectory" => {
            v.as_string().is_some()
        }
        "LimitLoadToSessionType" | "ProgramArguments" => strings(v),
        "ThrottleInterval" => v.as_signed_integer().is_some(),
        _ => return None,
    })
}

impl LaunchAgent {
    /// Parses plist bytes (XML or binary). The typed keys go through serde; any other key, or
    /// a typed key of another shape, lands in [`LaunchAgent::other`] instead of failing the
    /// whole file. Not a dictionary at the top: an error.
    pub fn parse(bytes: &[u8]) -> Result<LaunchAgent, plist::Error> {
        let value = Value::from_reader(std::io::Cursor::new(bytes))?;
        let Some(dict) = value.into_dictionary() else {
            return plist::from_bytes(bytes);
        };
        let (mut known, mut other) = (Dictionary::new(), Dictionary::new());
        for (k, v) in dict {
            if fits(&k, &v) == Some(true) {
                known.insert(k, v);
                continue;
            }
            // As before the struct existed: the string entries of a mixed environment or
            // argument list still count (the whole original is kept in `other` too).
            match (k.as_str(), &v) {
                ("EnvironmentVariables", Value::Dictionary(d)) => {
                    let text: Dictionary = d
                        .iter()
                        .filter(|(_, x)| x.as_string().is_some())
                        .map(|(a, b)| (a.clone(), b.clone()))
                        .collect();
                    known.insert(k.clone(), Value::Dictionary(text));
                }
                ("ProgramArguments", Value::Array(a)) => {
                    let text = a.iter().filter(|x| x.as_string().is_some()).cloned();
                    known.insert(k.clone(), Value::Array(text.collect()));
                }
                _ => {}
            }
            other.insert(k, v);
        }
        let mut agent: LaunchAgent = plist::from_value(&Value::Dictionary(known))?;
        agent.other = other;
        Ok(agent)
    }
}

/// A string for the plist: it must be XML 1.0 text, so a control character other than tab is
/// refused before anything is written (a plist with one is not well-formed; launchd and
/// Python's plistlib refuse it even where a lenient parser does not).
fn text(what: &str, value: &str) -> Result<String, Invalid> {
    if let Some(c) = value.chars().find(|c| c.is_control() && *c != '\t') {
        return Err(PlistRefusal::Control {
            what: what.to_owned(),
            c,
            value: value.to_owned(),
        }
        .into());
    }
    Ok(value.to_owned())
}

/// The definition oyster generates for `spec`.
pub fn generate(spec: &AgentSpec<'_>) -> Result<LaunchAgent, Invalid> {
    let s = |what: &str, p: &Path| text(what, &p.to_string_lossy());
    let mut env = BTreeMap::new();
    for (k, v) in &spec.env.vars {
        env.insert(k.clone(), text(k, v)?);
    }
    Ok(LaunchAgent {
        environment_variables: env,
        keep_alive: Some(true),
        label: Some(spec.label.to_owned()),
        limit_load_to_session_type: SESSION_TYPES.map(str::to_owned).to_vec(),
        process_type: Some("Interactive".into()),
        program_arguments: std::iter::once(s("oyster's path", spec.launcher)?)
            .chain(launch_arguments(spec.stack))
            .collect(),
        run_at_load: Some(true),
        standard_error_path: Some(s("the log path", spec.log_path)?),
        standard_out_path: Some(s("the log path", spec.log_path)?),
        throttle_interval: Some(10),
        working_directory: Some(s("the Oysterun root", &spec.root.join("host-service"))?),
        other: Dictionary::new(),
    })
}

/// Renders the plist bytes. Same inputs, same bytes.
pub fn render(spec: &AgentSpec<'_>) -> anyhow::Result<Vec<u8>> {
    let agent = generate(spec)?;
    let mut out = Vec::new();
    plist::to_writer_xml(&mut out, &agent)?;
    out.push(b'\n');
    let back = LaunchAgent::parse(&out)
        .map_err(|e| anyhow::anyhow!("the generated plist does not parse back: {e}"))?;
    anyhow::ensure!(
        back == agent,
        "the generated plist parses back to a different value"
    );
    Ok(out)
}

/// What follows oyster's path in `ProgramArguments` (docs/behaviour.md §4): the launch program.
pub fn launch_arguments(stack: &str) -> Vec<String> {
    ["host", "exec", "--stack", stack]
        .map(str::to_owned)
        .to_vec()
}

/// The file name of Oysterun's own runner, which its installer puts in `ProgramArguments`.
pub const OYSTERUN_RUNNER: &str = "run_oysterun_host.sh";

/// What oyster reads back from an installed plist: its bytes, the definition, and copies of its
/// `EnvironmentVariables` and `ProgramArguments` (empty when the plist does not parse).
#[derive(Debug, Clone, Default)]
pub struct Installed {
    pub bytes: Vec<u8>,
    /// The whole definition, keys oyster does not write included (default when it does not
    /// parse).
    pub agent: LaunchAgent,
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
        self.agent
            .program_arguments
            .iter()
            .map(String::as_str)
            .find(|a| {
                Path::new(a)
                    .file_name()
                    .is_some_and(|n| n == OYSTERUN_RUNNER)
            })
    }
}

/// The largest plist oyster reads (docs/behaviour.md §9).
pub const MAX_PLIST_BYTES: u64 = 1 << 20;

/// Values of secret-named variables a user added to the installed plist by hand, so no output
/// shows them.
pub fn secret_values_on_disk(path: &Path) -> Vec<String> {
    let Ok(Some(bytes)) = fsutil::read_regular(path, MAX_PLIST_BYTES) else {
        return vec![];
    };
    read_env(&bytes)
        .map(|env| secrets_of(&env.vars))
        .unwrap_or_default()
}

/// The values of the secret-named variables of a plist's environment.
fn secrets_of(vars: &std::collections::BTreeMap<String, String>) -> Vec<String> {
    vars.iter()
        .filter(|(k, _)| crate::output::redact::is_secret_key(k))
        .map(|(_, v)| v.clone())
        .collect()
}

/// Reads the installed plist, if there is one; one that does not parse is said, not fatal.
pub fn read_installed(path: &Path, out: &dyn crate::output::Reporter) -> Option<Installed> {
    let bytes = match fsutil::read_regular(path, MAX_PLIST_BYTES) {
        Ok(b) => b?,
        Err(e) => {
            out.note(&InstalledNote::Unreadable(e).to_string());
            return None;
        }
    };
    let agent = match LaunchAgent::parse(&bytes) {
        Ok(agent) => {
            // The printer need not open and parse the plist again for its secrets.
            crate::output::learned(path, secrets_of(&agent.environment_variables));
            agent
        }
        Err(e) => {
            let note = InstalledNote::NotAPlist {
                path: path.to_owned(),
                problem: crate::error::plist_problem(&e),
            };
            out.note(&note.to_string());
            LaunchAgent::default()
        }
    };
    Some(Installed {
        bytes,
        env: LaunchEnv {
            vars: agent.environment_variables.clone(),
            declared: BTreeMap::new(),
        },
        program_arguments: agent.program_arguments.clone(),
        agent,
    })
}

/// The `EnvironmentVariables` of plist bytes.
pub fn read_env(bytes: &[u8]) -> Result<LaunchEnv, plist::Error> {
    Ok(LaunchEnv {
        vars: LaunchAgent::parse(bytes)?.environment_variables,
        declared: BTreeMap::new(),
    })
}

/// A plist in `~/Library/LaunchAgents` owned by another uid (an older `sudo` run leaves a
/// root-owned one) is refused before anything is written: launchd refuses to load it (122), a
/// rewrite cannot keep that owner without privileges, and oyster never leaves a file in the
/// user's home owned by someone else. The message names the file, its owner and the fix.
pub fn refuse_foreign_owner(plist_path: &Path) -> Result<(), Invalid> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(plist_path) else {
        return Ok(());
    };
    let me = crate::sys::user::euid();
    if meta.uid() == me {
        return Ok(());
    }
    Err(PlistRefusal::ForeignOwner {
        path: plist_path.to_owned(),
        owner: meta.uid(),
        me,
    }
    .into())
}

/// Why a plist cannot be written. Words (and hints): `commands/words/host.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlistRefusal {
    /// A value (`what`) holds a control character other than tab.
    Control {
        what: String,
        c: char,
        value: String,
    },
    /// The plist on disk is another uid's.
    ForeignOwner { path: PathBuf, owner: u32, me: u32 },
}

/// What reading the installed plist says when it cannot use it. Words:
/// `commands/words/host.rs`.
#[derive(Debug)]
pub enum InstalledNote {
    /// The file could not be read (the reader's refusal).
    Unreadable(FsError),
    /// It is not a property list (`problem`: `error::plist_problem`'s words).
    NotAPlist { path: PathBuf, problem: String },
}

/// Whether the plist on disk has another mode than the 0644 [`write`] gives it (a write with
/// the same bytes then still changes it: launchd refuses a group- or world-writable plist).
pub fn mode_refused(plist_path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(plist_path)
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o7777 != 0o644)
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
) -> anyhow::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    refuse_foreign_owner(plist_path)?;
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
            agent: LaunchAgent::parse(bytes).unwrap(),
            env: read_env(bytes).unwrap(),
            program_arguments: LaunchAgent::parse(bytes).unwrap().program_arguments,
        };
        assert_eq!(
            inst.oysterun_runner(),
            Some("/opt/oysterun/tool_scripts/run_oysterun_host.sh")
        );
        assert_eq!(inst.repo_root(), Some("/opt/oysterun"));
        assert_eq!(inst.node_bin(), Some("/opt/homebrew/bin/node"));
    }

    #[test]
    fn keys_oyster_does_not_write_are_kept_and_odd_types_do_not_lose_the_rest() {
        let bytes = br#"<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
<key>Label</key><string>com.oysterun.host</string>
<key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>
<key>Program</key><string>/bin/x</string>
<key>Sockets</key><dict><key>a</key><integer>1</integer></dict>
<key>ProgramArguments</key><array><string>/bin/x</string><integer>3</integer></array>
<key>EnvironmentVariables</key><dict><key>A</key><string>1</string><key>N</key><integer>2</integer></dict>
</dict></plist>
"#;
        let a = LaunchAgent::parse(bytes).unwrap();
        assert_eq!(a.label.as_deref(), Some("com.oysterun.host"));
        assert_eq!(a.program_arguments, ["/bin/x"]);
        assert!(a.other.contains_key("ProgramArguments"));
        assert_eq!(a.environment_variables.len(), 1);
        assert!(a.other.contains_key("EnvironmentVariables"));
        assert_eq!(
            a.other.get("Program"),
            Some(&Value::String("/bin/x".into()))
        );
        assert!(a.other.contains_key("Sockets"));
        assert_eq!(a.keep_alive, None);
        assert!(matches!(
            a.other.get("KeepAlive"),
            Some(Value::Dictionary(_))
        ));
    }
}
