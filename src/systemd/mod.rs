//! The only module that runs `systemctl`: `/usr/bin/systemctl` (`/bin/systemctl` on a system
//! without merged `/usr`), or `$OYSTER_SYSTEMCTL` when set. Every call is `systemctl --user …`
//! through [`Program`] (absolute path, no shell, stdin null, both streams captured, a
//! deadline), with `XDG_RUNTIME_DIR` set: the caller's, else `/run/user/<uid>` (said as
//! [`Systemctl::runtime_dir_defaulted`]). Values are typed; sentences are the caller's.
//!
//! - [`show`]: `systemctl show` parsed by key into a [`UnitShow`]: success is judged by its
//!   fields, never by an exit code;
//! - [`unit`]: the unit file, rendered from a [`UnitSpec`], and where it goes;
//! - [`reach`]: whether a user manager answers ([`ManagerState`], [`Unreachable`]), linger,
//!   WSL;
//! - [`environ`]: what a started unit's environment may hold besides what oyster gave it.
//!
//! docs/systemd.md says what this relies on, with sources.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod environ;
pub mod reach;
pub mod show;
pub mod unit;
pub mod unit_environment;

pub use environ::{check_environ, parse_environment, EnvCheck, EXEC_ADDED_KEYS};
pub use reach::{is_wsl, Cause, ManagerState, Unreachable};
pub use show::{ActiveState, LoadState, MainCode, ShowError, UnitResult, UnitShow, PROPERTIES};
pub use unit::{render, unit_dir, unit_name, unit_path, Field, Timing, UnitError, UnitSpec};
pub use unit_environment::environment_of;

use crate::sys::process::{ChildEnv, Finished, ProcessError, Program};

/// Where Debian (merged `/usr`) and every current distribution put systemctl, then where an
/// unmerged system has it.
pub const SYSTEM_SYSTEMCTL: [&str; 2] = ["/usr/bin/systemctl", "/bin/systemctl"];
/// The variable that points oyster at another systemctl (`none`: no systemd here).
pub const OVERRIDE_VAR: &str = "OYSTER_SYSTEMCTL";
/// `loginctl`, for linger; beside an overriding systemctl, a `loginctl` there stands in too.
pub const SYSTEM_LOGINCTL: [&str; 2] = ["/usr/bin/loginctl", "/bin/loginctl"];
/// The user manager's socket directory, and its default (`/run/user/<uid>`).
pub const RUNTIME_DIR_VAR: &str = "XDG_RUNTIME_DIR";

/// How long a question (`show`, the manager probe) may take.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a verb that waits for its job (`start`, `stop`, `restart`, `disable --now`,
/// `daemon-reload`) may take: systemd's own default stop timeout is 90 s.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(120);

/// A systemctl call that exited non-zero, with everything needed to understand it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("`{argv}` exited with {code}: {}", if stderr.trim().is_empty() { "(no output)" } else { stderr.trim() })]
pub struct SystemctlError {
    pub argv: String,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Finished> for SystemctlError {
    fn from(f: Finished) -> Self {
        SystemctlError {
            argv: f.argv.join(" "),
            code: f.code,
            stdout: f.stdout,
            stderr: f.stderr,
        }
    }
}

/// Why one call to a verb did not do its work.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// systemctl could not be run, timed out, or was killed.
    #[error(transparent)]
    Process(#[from] ProcessError),
    /// systemctl ran and exited non-zero.
    #[error(transparent)]
    Exit(#[from] SystemctlError),
    /// `show` answered something that is not a unit's properties.
    #[error(transparent)]
    Show(#[from] ShowError),
    /// A unit name systemctl would take for something else (an option, a pattern).
    #[error("{0:?} is not a unit name")]
    BadUnit(String),
}

/// Where `systemctl` is and why it is not usable. Words: `commands/words/launchctl.rs`.
#[derive(Debug, Clone)]
pub enum LocateError {
    /// `OYSTER_SYSTEMCTL=none`: told there is no systemd.
    Off,
    /// The override is not an absolute path to an executable (exit 2).
    BadOverride(String),
    /// No systemctl at either system path.
    Missing,
}

impl std::error::Error for LocateError {}

impl LocateError {
    /// A variable the user set is wrong (exit 2); no systemctl is a failure (exit 1).
    pub fn is_invalid_input(&self) -> bool {
        matches!(self, LocateError::BadOverride(_))
    }
}

impl crate::error::HasKind for LocateError {
    fn kind(&self) -> crate::error::Kind {
        crate::error::Kind::invalid_if(self.is_invalid_input())
    }
}

/// A located systemctl and the user manager it talks to.
#[derive(Debug, Clone)]
pub struct Systemctl {
    pub path: PathBuf,
    /// Set when `$OYSTER_SYSTEMCTL` chose it.
    pub overridden: bool,
    /// The `XDG_RUNTIME_DIR` every call gets.
    pub runtime_dir: PathBuf,
    /// Set when the caller had none and `/run/user/<uid>` was taken.
    pub runtime_dir_defaulted: bool,
    /// The deadline of a question ([`QUERY_TIMEOUT`]).
    pub query_timeout: Duration,
    /// The deadline of a verb that waits for its job ([`JOB_TIMEOUT`]).
    pub job_timeout: Duration,
    /// The `HOME` every call gets ([`Systemctl::with_home`]); `None`: the caller's.
    pub home: Option<PathBuf>,
    /// `loginctl`: the system's, or the one beside an overriding systemctl; `None` when absent.
    loginctl: Option<PathBuf>,
}

impl Systemctl {
    /// `$OYSTER_SYSTEMCTL` (`overridden`, `none` = [`LocateError::Off`]) if set, else the
    /// system's systemctl; `runtime_dir` is the caller's `XDG_RUNTIME_DIR` (empty = unset).
    pub fn locate(
        overridden: Option<&OsStr>,
        runtime_dir: Option<&OsStr>,
    ) -> Result<Systemctl, LocateError> {
        let (path, overridden) = match overridden.filter(|v| !v.is_empty()) {
            Some(v) if v == "none" => return Err(LocateError::Off),
            Some(v) => {
                let p = PathBuf::from(v);
                if !p.is_absolute() || !is_executable(&p) {
                    return Err(LocateError::BadOverride(v.to_string_lossy().into_owned()));
                }
                (p, true)
            }
            None => (
                first_executable(&SYSTEM_SYSTEMCTL).ok_or(LocateError::Missing)?,
                false,
            ),
        };
        let loginctl = if overridden {
            path.parent()
                .map(|d| d.join("loginctl"))
                .filter(|p| is_executable(p))
        } else {
            first_executable(&SYSTEM_LOGINCTL)
        };
        let (runtime_dir, runtime_dir_defaulted) = match runtime_dir.filter(|v| !v.is_empty()) {
            Some(v) => (PathBuf::from(v), false),
            None => (default_runtime_dir(crate::sys::user::uid()), true),
        };
        Ok(Systemctl {
            path,
            overridden,
            runtime_dir,
            runtime_dir_defaulted,
            query_timeout: QUERY_TIMEOUT,
            job_timeout: JOB_TIMEOUT,
            home: None,
            loginctl,
        })
    }

    /// Every call with this `HOME`: `systemctl --user enable` looks the unit up on the
    /// client's side too, in the client's `~/.config/systemd/user` (measured, systemd 252:
    /// "unit … does not exist" under another `HOME`), so give it the home the unit path was
    /// made from.
    pub fn with_home(mut self, home: &Path) -> Systemctl {
        self.home = Some(home.to_path_buf());
        self
    }

    /// What output says about which systemctl is in use and which manager it reaches.
    pub fn describe(&self) -> String {
        let mut s = self.path.display().to_string();
        if self.overridden {
            s += &format!(" (from {OVERRIDE_VAR})");
        }
        s += &format!(", {RUNTIME_DIR_VAR}={}", self.runtime_dir.display());
        if self.runtime_dir_defaulted {
            s += " (default)";
        }
        s
    }

    /// `loginctl` as located with this systemctl.
    pub fn loginctl(&self) -> Option<&Path> {
        self.loginctl.as_deref()
    }

    /// Runs `systemctl --user <args>` within `timeout`; a non-zero exit is data, not an error.
    pub fn call<S: AsRef<OsStr> + ?Sized>(
        &self,
        args: &[&S],
        timeout: Duration,
    ) -> Result<Finished, ProcessError> {
        let mut env = vec![(RUNTIME_DIR_VAR, self.runtime_dir.as_os_str())];
        if let Some(home) = &self.home {
            env.push(("HOME", home.as_os_str()));
        }
        Program::new(&self.path)
            .arg("--user")
            .args(args.iter().copied())
            .env(ChildEnv::InheritWith(&env))
            .timeout(timeout)
            .run()
    }

    /// One verb on one unit that waits for its job: exit 0, or the error.
    fn job(&self, verb: &[&str], unit: &str) -> Result<Finished, CallError> {
        check_unit(unit)?;
        let mut args: Vec<&str> = verb.to_vec();
        args.push(unit);
        ok(self.call(&args, self.job_timeout)?)
    }

    /// `daemon-reload`: the manager reads every unit file again.
    pub fn daemon_reload(&self) -> Result<(), CallError> {
        ok(self.call(&["daemon-reload"], self.job_timeout)?).map(drop)
    }

    /// `enable UNIT`: its `[Install]` links (`default.target.wants/`). systemctl then reloads
    /// the manager only when it sees `/run/systemd/system` in its own mount namespace
    /// (measured): a `daemon_reload` after it makes `UnitFileState` current everywhere.
    pub fn enable(&self, unit: &str) -> Result<(), CallError> {
        self.job(&["enable"], unit).map(drop)
    }

    /// `disable [--now] UNIT`: the links removed; `now` also stops it (the unit file stays).
    /// The manager's `UnitFileState` may say `enabled` until a reload (see `enable`).
    pub fn disable(&self, unit: &str, now: bool) -> Result<(), CallError> {
        let verb: &[&str] = if now {
            &["disable", "--now"]
        } else {
            &["disable"]
        };
        self.job(verb, unit).map(drop)
    }

    /// `start UNIT`. With `Type=exec` it fails when the program cannot be executed; read
    /// [`Systemctl::show`] either way.
    pub fn start(&self, unit: &str) -> Result<(), CallError> {
        self.job(&["start"], unit).map(drop)
    }

    /// `stop UNIT`. Exit 0 even when systemd had to SIGKILL (then `Result=timeout`): read
    /// [`UnitShow::result`] after it.
    pub fn stop(&self, unit: &str) -> Result<(), CallError> {
        self.job(&["stop"], unit).map(drop)
    }

    /// `restart UNIT`: a new `MainPID` and `InvocationID`; `NRestarts` starts again from 0.
    /// A changed unit file is not read (a `daemon-reload` first).
    pub fn restart(&self, unit: &str) -> Result<(), CallError> {
        self.job(&["restart"], unit).map(drop)
    }

    /// `reset-failed UNIT`: forgets the failed state and the start-limit count.
    pub fn reset_failed(&self, unit: &str) -> Result<(), CallError> {
        self.job(&["reset-failed"], unit).map(drop)
    }

    /// `kill --signal=SIG --kill-who=main|all UNIT`: a signal to the main process only
    /// (`main_only`) or to every process of the unit. With `Restart=always` the manager starts
    /// a killed Host again. (`--kill-who` is the spelling systemd before 252 knows too.)
    pub fn kill(
        &self,
        unit: &str,
        signal: crate::sys::signal::Signal,
        main_only: bool,
    ) -> Result<(), CallError> {
        let signal = format!("--signal={}", signal.as_str());
        let who = if main_only {
            "--kill-who=main"
        } else {
            "--kill-who=all"
        };
        check_unit(unit)?;
        ok(self.call(&["kill", &signal, who, unit], self.query_timeout)?).map(drop)
    }

    /// `show -p <PROPERTIES> UNIT`, one call, parsed by key. An unknown unit is an answer
    /// (`LoadState=not-found`), not an error.
    pub fn show(&self, unit: &str) -> Result<UnitShow, CallError> {
        check_unit(unit)?;
        let props = format!("--property={}", PROPERTIES.join(","));
        let f = ok(self.call(&["show", &props, unit], self.query_timeout)?)?;
        Ok(UnitShow::parse(&f.stdout)?)
    }

    /// `show-environment`: the manager's environment, which every unit starts from (its
    /// `Environment=` set over it), parsed.
    pub fn show_environment(&self) -> Result<Vec<(String, String)>, CallError> {
        let f = ok(self.call(&["show-environment"], self.query_timeout)?)?;
        Ok(parse_environment(&f.stdout))
    }

    /// `show -p UnitPath --value`: the directories the manager reads unit files from, in its
    /// order (the unit oyster writes must be in one of them).
    pub fn unit_search_path(&self) -> Result<Vec<PathBuf>, CallError> {
        let f = ok(self.call(
            &["show", "--property=UnitPath", "--value"],
            self.query_timeout,
        )?)?;
        Ok(show::split_words(&f.stdout)
            .into_iter()
            .map(PathBuf::from)
            .collect())
    }
}

/// `/run/user/<uid>`: where logind makes each user's runtime directory.
pub fn default_runtime_dir(uid: u32) -> PathBuf {
    PathBuf::from(format!("/run/user/{uid}"))
}

/// Exit 0, or the answer as an error.
fn ok(f: Finished) -> Result<Finished, CallError> {
    if f.code == 0 {
        Ok(f)
    } else {
        Err(SystemctlError::from(f).into())
    }
}

/// A unit name systemctl reads as a name: not empty, not an option, no glob, no space.
fn check_unit(unit: &str) -> Result<(), CallError> {
    unit::check_unit_name(unit).map_err(|_| CallError::BadUnit(unit.to_owned()))
}

fn first_executable(paths: &[&str]) -> Option<PathBuf> {
    paths.iter().map(PathBuf::from).find(|p| is_executable(p))
}

/// A regular file (links followed) this user may execute.
fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
        && nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok()
}

#[cfg(test)]
mod tests;
