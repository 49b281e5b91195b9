//! The only module that runs `launchctl`: `/bin/launchctl`, or `$OYSTER_LAUNCHCTL` when set
//! (every status and doctor output then says so). Also the parser for `launchctl print`
//! ([`print`]). One [`Launchctl`] is located per run, by the context that owns it, and it
//! carries this run's two memos: the `print`s already made and the `print-disabled` per domain.
//!
//! # Platform
//! On macOS this drives the real launchd. Elsewhere it drives whatever `$OYSTER_LAUNCHCTL`
//! names — in this project's tests, the bundled simulator (`launchd/`).

use std::collections::BTreeMap;

mod code;
mod domains;
pub mod print;

pub use code::Code;
pub use domains::{
    user_domain_note, BothDomains, Console, DomainChoice, NoGui, UserDomain, CONSOLE_VAR,
};

pub use print::{parse_disabled, parse_print, JobState, LastExit, PrintInfo};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::sys::process::{Finished, ProcessError, Program};

/// The system launchctl.
pub const SYSTEM_LAUNCHCTL: &str = "/bin/launchctl";
/// The variable that points oyster at another launchctl.
pub const OVERRIDE_VAR: &str = "OYSTER_LAUNCHCTL";

/// The variable that changes how long one launchctl call may take (default 30 s).
pub const TIMEOUT_VAR: &str = "OYSTER_LAUNCHCTL_TIMEOUT_SECS";

/// `print`/`kickstart` of a label that is not loaded.
pub const NOT_LOADED: i32 = 113;

/// What a `bootout` may answer without failing: 3 not loaded, 36 still in progress, and 5,
/// which only `print` can decide: newer macOS answers 5 for a label that is not loaded
/// (jdx/mise#10965), and a stuck job does too (nix-installer#1187).
pub const BOOTOUT_GOES_ON: &[Code] = &[Code::NoSuchProcess, Code::InProgress, Code::InputOutput];

/// launchd's per-user domains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Domain {
    /// `gui/<uid>`: the console login's Aqua session.
    Gui(u32),
    /// `user/<uid>`: the Background session that exists without a console login (SSH).
    User(u32),
}

impl Domain {
    /// `gui/<uid>` of the effective user.
    pub fn gui() -> Domain {
        Domain::Gui(crate::sys::user::uid())
    }
    /// `user/<uid>` of the effective user.
    pub fn user() -> Domain {
        Domain::User(crate::sys::user::uid())
    }
    /// Both of this user's domains, `gui/<uid>` first.
    pub fn both() -> [Domain; 2] {
        [Domain::gui(), Domain::user()]
    }
    /// The other one of the pair.
    pub fn other(self) -> Domain {
        match self {
            Domain::Gui(u) => Domain::User(u),
            Domain::User(u) => Domain::Gui(u),
        }
    }
    /// The service target `<domain>/<label>`.
    pub fn target(self, label: &str) -> String {
        format!("{self}/{label}")
    }
}

impl std::fmt::Display for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Domain::Gui(u) => write!(f, "gui/{u}"),
            Domain::User(u) => write!(f, "user/{u}"),
        }
    }
}

/// One launchctl call's answer: its code, typed, and what it printed.
#[derive(Debug, Clone)]
pub struct Reply {
    pub code: Code,
    pub finished: Finished,
}

impl Reply {
    pub fn is_ok(&self) -> bool {
        self.code == Code::Ok
    }
    /// The pid `kickstart -p` printed: a bare `N` on a pipe, `service spawned with pid: N` on
    /// a terminal (the last word either way).
    pub fn spawned_pid(&self) -> Option<u32> {
        self.finished.stdout.split_whitespace().last()?.parse().ok()
    }

    /// This answer as an error.
    pub fn error(self) -> LaunchctlError {
        failed(self.finished)
    }
    /// `Ok(self)` for exit 0 or one of `also`, else the error.
    pub fn accept(self, also: &[Code]) -> Result<Reply, LaunchctlError> {
        if self.is_ok() || also.contains(&self.code) {
            Ok(self)
        } else {
            Err(self.error())
        }
    }
}

/// A launchctl call that failed, with everything needed to understand it. Words:
/// `commands/words/launchctl.rs`.
#[derive(Debug)]
pub struct LaunchctlError {
    pub argv: String,
    pub code: i32,
    /// Not said (launchctl writes its errors to stderr); kept for the debug form.
    #[allow(dead_code)]
    pub stdout: String,
    pub stderr: String,
}

/// A located launchctl.
#[derive(Debug, Clone)]
pub struct Launchctl {
    pub path: PathBuf,
    /// Set when `$OYSTER_LAUNCHCTL` chose it.
    pub overridden: bool,
    /// How long one call may take before it is killed.
    pub timeout: Duration,
    /// `print-disabled` per domain, asked once per run (it is also the domain probe) and
    /// forgotten when oyster itself enables or disables a label there.
    disabled_cache: Arc<Mutex<BTreeMap<Domain, Result<String, Code>>>>,
    /// The `print`s this run has already made, so that the several parts of one command that
    /// each need "is the job loaded, and how" start one launchctl process between them.
    /// Forgotten entirely by any verb that changes launchd's state, and after [`FRESH_FOR`]
    /// (KeepAlive may respawn a job by itself).
    seen: Arc<Mutex<BTreeMap<String, (Instant, PrintAnswer)>>>,
}

/// What `print <target>` answered: the job, or the code that said it is not there.
type PrintAnswer = Result<PrintInfo, Code>;

/// How long a remembered `print` stands for "now".
const FRESH_FOR: Duration = Duration::from_secs(3);

impl std::error::Error for LaunchctlError {}

/// Where `launchctl` is and why it is not usable. Words: `commands/words/launchctl.rs`.
#[derive(Debug, Clone)]
pub enum LocateError {
    /// Switched off (`OYSTER_LAUNCHCTL=none`).
    Off,
    BadTimeout(String),
    BadOverride(String),
    Missing,
}

impl std::error::Error for LocateError {}

impl LocateError {
    /// A variable the user set is wrong (exit 2); a missing launchctl is a failure (exit 1).
    pub fn is_invalid_input(&self) -> bool {
        !matches!(self, LocateError::Missing | LocateError::Off)
    }
}

impl crate::error::HasKind for LocateError {
    fn kind(&self) -> crate::error::Kind {
        crate::error::Kind::invalid_if(self.is_invalid_input())
    }
}

/// The longest one launchctl call may be allowed to take.
pub const MAX_TIMEOUT_SECS: u64 = 3600;

impl Launchctl {
    /// `$OYSTER_LAUNCHCTL` (`overridden`) if set, else `/bin/launchctl` if present; calls time
    /// out after `$OYSTER_LAUNCHCTL_TIMEOUT_SECS` (`timeout`), else 30 s.
    pub fn locate(
        overridden: Option<&OsStr>,
        timeout: Option<&str>,
    ) -> Result<Launchctl, LocateError> {
        let timeout = match timeout {
            None => Duration::from_secs(30),
            Some(v) => match v.trim().parse::<u64>() {
                Ok(secs @ 1..=MAX_TIMEOUT_SECS) => Duration::from_secs(secs),
                _ => return Err(LocateError::BadTimeout(v.to_owned())),
            },
        };
        let (path, overridden) = match overridden {
            Some(v) if v == "none" => return Err(LocateError::Off),
            Some(v) => {
                let p = PathBuf::from(v);
                if !p.is_absolute() || crate::provider::resolve::check_executable(&p).is_err() {
                    return Err(LocateError::BadOverride(v.to_string_lossy().into_owned()));
                }
                (p, true)
            }
            None => {
                let p = PathBuf::from(SYSTEM_LAUNCHCTL);
                if crate::provider::resolve::check_executable(&p).is_err() {
                    return Err(LocateError::Missing);
                }
                (p, false)
            }
        };
        Ok(Launchctl {
            path,
            overridden,
            timeout,
            disabled_cache: Arc::default(),
            seen: Arc::default(),
        })
    }

    /// What output says about which launchctl is in use.
    pub fn describe(&self) -> String {
        let mut s = self.path.display().to_string();
        if self.overridden {
            s += &format!(" (from {OVERRIDE_VAR})");
        }
        if self.timeout != Duration::from_secs(30) {
            s += &format!(
                ", calls time out after {} s ({TIMEOUT_VAR})",
                self.timeout.as_secs()
            );
        }
        s
    }

    /// Runs one launchctl call; a non-zero exit is returned as data, not an error.
    /// Arguments are `OsStr`: a plist path is handed on byte for byte.
    pub fn call<S: AsRef<OsStr> + ?Sized>(&self, args: &[&S]) -> Result<Finished, ProcessError> {
        Program::new(&self.path)
            .args(args.iter().copied())
            .timeout(self.timeout)
            .run()
    }

    /// Runs one call and types its answer. A verb that changes launchd's state makes every
    /// remembered `print` stale.
    fn reply<S: AsRef<OsStr> + ?Sized>(&self, args: &[&S]) -> Result<Reply, ProcessError> {
        let verb = args.first().map(|a| a.as_ref());
        if verb != Some(OsStr::new("print")) && verb != Some(OsStr::new("print-disabled")) {
            self.forget_prints();
        }
        let finished = self.call(args)?;
        Ok(Reply {
            code: Code::from(finished.code),
            finished,
        })
    }

    /// `print <target>` asked now, never from memory: for polls.
    pub fn print_now(&self, target: &str) -> anyhow::Result<Option<PrintInfo>> {
        Ok(self.print_target(target, true)?.ok())
    }

    /// `print <domain>/<label>` answered as launchd answers it: the job, or the code that said
    /// it is not there (113 not loaded; 112/125 no such domain). Remembered like `print`.
    pub fn print_job(
        &self,
        domain: Domain,
        label: &str,
    ) -> anyhow::Result<Result<PrintInfo, Code>> {
        self.print_target(&domain.target(label), false)
    }

    fn print_target(&self, target: &str, fresh: bool) -> anyhow::Result<Result<PrintInfo, Code>> {
        if !fresh {
            if let Some(hit) = self.recall(target) {
                return Ok(hit);
            }
        }
        let r = self.reply(&["print", target])?;
        let answer = match r.code {
            Code::Ok => Ok(parse_print(&r.finished.stdout)),
            c @ (Code::NotLoaded | Code::NoDomain | Code::DomainUnsupported) => Err(c),
            _ => return Err(r.error().into()),
        };
        if let Ok(mut seen) = self.seen.lock() {
            seen.insert(target.to_owned(), (Instant::now(), answer.clone()));
        }
        Ok(answer)
    }

    /// `print <domain>`: the whole domain, one call for every job in it (its `services`
    /// table and `disabled services`), or the code that said the domain does not exist.
    pub fn print_domain(&self, domain: Domain) -> anyhow::Result<Result<String, Code>> {
        let r = self.reply(&["print", &domain.to_string()])?;
        match r.code {
            Code::Ok => Ok(Ok(r.finished.stdout)),
            c if c.domain_missing() => Ok(Err(c)),
            _ => Err(r.error().into()),
        }
    }

    /// `bootstrap <domain> <plist>`: the answer, typed (5/37 loaded or draining, 119
    /// disabled, 122 ownership, 125/134 session refused).
    pub fn bootstrap(&self, domain: Domain, plist: &Path) -> Result<Reply, ProcessError> {
        let domain = domain.to_string();
        self.reply::<OsStr>(&["bootstrap".as_ref(), domain.as_ref(), plist.as_os_str()])
    }

    /// `bootout <domain>/<label>`: returns before the process is gone; 3 not loaded, 36 still
    /// in progress, 5 either not loaded (newer macOS) or stuck ([`BOOTOUT_GOES_ON`]).
    pub fn bootout(&self, domain: Domain, label: &str) -> Result<Reply, ProcessError> {
        self.reply(&["bootout", &domain.target(label)])
    }

    /// `kickstart -p [-k] <domain>/<label>`: 37 when launchd counts the job as running; `-k`
    /// (SIGKILL first) only when `kill_first`. `-p` makes launchd print the pid it spawned
    /// ([`Reply::spawned_pid`]), so nobody needs a `print` to learn it.
    pub fn kickstart(
        &self,
        domain: Domain,
        label: &str,
        kill_first: bool,
    ) -> Result<Reply, ProcessError> {
        let target = domain.target(label);
        if kill_first {
            self.reply(&["kickstart", "-kp", &target])
        } else {
            self.reply(&["kickstart", "-p", &target])
        }
    }

    /// `kill SIGTERM <domain>/<label>`: the running instance only (3: loaded, no process).
    pub fn kill_sigterm(&self, domain: Domain, label: &str) -> Result<Reply, ProcessError> {
        self.reply(&["kill", "SIGTERM", &domain.target(label)])
    }

    /// `enable <domain>/<label>` (persists across reboots and plist deletion).
    pub fn enable(&self, domain: Domain, label: &str) -> Result<Reply, ProcessError> {
        self.forget_disabled(domain);
        self.reply(&["enable", &domain.target(label)])
    }

    /// `disable <domain>/<label>`: launchd will not load it at login, nor bootstrap it.
    pub fn disable(&self, domain: Domain, label: &str) -> Result<Reply, ProcessError> {
        self.forget_disabled(domain);
        self.reply(&["disable", &domain.target(label)])
    }

    /// Forgets the remembered `print-disabled` of **both** domains: launchd keeps one store of
    /// overrides per user, read through `gui/<uid>` and `user/<uid>` alike (docs/launchd.md,
    /// "Domains"), so a change through one domain changes what the other prints.
    fn forget_disabled(&self, _domain: Domain) {
        if let Ok(mut c) = self.disabled_cache.lock() {
            c.clear();
        }
    }

    /// `print-disabled <domain>`: its text, or the code that refused it (112/125: no such
    /// domain). Asked once per domain per run.
    pub fn print_disabled(&self, domain: Domain) -> anyhow::Result<Result<String, Code>> {
        if let Some(hit) = self
            .disabled_cache
            .lock()
            .ok()
            .and_then(|c| c.get(&domain).cloned())
        {
            return Ok(hit);
        }
        let r = self.reply(&["print-disabled", &domain.to_string()])?;
        let answer = match r.code {
            Code::Ok => Ok(r.finished.stdout),
            c if c.domain_missing() => Err(c),
            _ => return Err(r.error().into()),
        };
        if let Ok(mut c) = self.disabled_cache.lock() {
            c.insert(domain, answer.clone());
        }
        Ok(answer)
    }

    /// Finds the per-user domain: `gui/<uid>`, or `user/<uid>` (said aloud) when there is no
    /// GUI session (SSH, nobody at the screen). The probe is `print-disabled gui/<uid>`: it
    /// answers 112/125 for a missing domain as `print gui/<uid>` does, without dumping the whole
    /// domain, and its answer (the disabled overrides) is kept for the rest of the run.
    /// (`host start`/`stop` now ask [`Launchctl::find_loaded`], both domains, instead; kept
    /// for the callers of the CLI refactor.)
    #[allow(dead_code)]
    pub fn domain(&self) -> anyhow::Result<DomainChoice> {
        let gui = Domain::gui();
        match self.print_disabled(gui)? {
            Ok(_) => Ok(DomainChoice {
                name: gui,
                fallback_note: None,
            }),
            // Only "no such domain" (112) and "not supported here" (125) mean there is no
            // GUI session; any other failure was returned above as launchctl failing.
            Err(code) => Ok(DomainChoice {
                name: gui.other(),
                fallback_note: Some(user_domain_note(gui, code)),
            }),
        }
    }
}

impl Launchctl {
    fn recall(&self, target: &str) -> Option<PrintAnswer> {
        let seen = self.seen.lock().ok()?;
        let (at, answer) = seen.get(target)?;
        (at.elapsed() < FRESH_FOR).then(|| answer.clone())
    }

    /// Forgets every remembered `print` (launchd's state is about to change, or has changed
    /// behind oyster's back).
    pub fn forget_prints(&self) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.clear();
        }
    }
}

impl Launchctl {
    /// Whether `label` is disabled in `domain` (`false` when launchctl cannot say).
    pub fn is_disabled_in(&self, domain: &Domain, label: &str) -> bool {
        self.disabled(domain, label).ok().flatten().unwrap_or(false)
    }

    /// The job in both of this user's domains (two `print`s): where it is loaded, and
    /// whether `gui/<uid>` exists at all. Two loaded copies mean the label is **loaded
    /// twice** (installed over SSH into `user/<uid>`, then loaded into `gui/<uid>` by a
    /// console login): one Host crash-loops on the other's port. Status, list and doctor
    /// report [`BothDomains::loaded`] with more than one entry as a failure.
    pub fn in_both_domains(&self, label: &str) -> anyhow::Result<BothDomains> {
        let gui = Domain::gui();
        Ok(BothDomains {
            gui: self.print_job(gui, label)?,
            user: self.print_job(gui.other(), label)?,
        })
    }

    /// Looks for a loaded `label` in `gui/<uid>`, then `user/<uid>` (a job loaded in one is
    /// not visible in the other): the domain it is loaded in, and its `print`.
    pub fn find_loaded(&self, label: &str) -> anyhow::Result<Option<(Domain, PrintInfo)>> {
        for domain in Domain::both() {
            if let Ok(info) = self.print_job(domain, label)? {
                return Ok(Some((domain, info)));
            }
        }
        Ok(None)
    }
}

fn failed(f: Finished) -> LaunchctlError {
    LaunchctlError {
        argv: f.argv.join(" "),
        code: f.code,
        stdout: f.stdout,
        stderr: f.stderr,
    }
}

impl Launchctl {
    /// Whether `label` is disabled in `domain` (`print-disabled`): `Some(true)` disabled,
    /// `Some(false)` explicitly enabled, `None` when launchd has no override for it. A disabled
    /// label does not load at login and makes `bootstrap` fail.
    pub fn disabled(&self, domain: &Domain, label: &str) -> anyhow::Result<Option<bool>> {
        match self.print_disabled(*domain)? {
            Ok(text) => Ok(parse_disabled(&text, label)),
            Err(code) => anyhow::bail!("`launchctl print-disabled {domain}` exited {code}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    /// A plist path that is not UTF-8 (a byte a Mac's HFS name can carry through a
    /// `LaunchAgents` symlink) reaches launchctl byte for byte, never through
    /// `to_string_lossy` (which would name a file that does not exist).
    #[test]
    fn bootstrap_hands_launchctl_the_plist_path_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let plist = dir
            .path()
            .join(OsStr::from_bytes(b"com.oysterun.host.caf\xe9.plist"));
        std::fs::write(&plist, "").unwrap();
        // A stand-in launchctl that succeeds only when its third argument names a file.
        let fake = dir.path().join("launchctl");
        std::fs::write(
            &fake,
            "#!/bin/sh\n[ \"$1\" = bootstrap ] && [ -f \"$3\" ]\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let lc = Launchctl::locate(Some(fake.as_os_str()), None).unwrap();
        let r = lc.bootstrap(Domain::Gui(501), &plist).unwrap();
        assert_eq!(r.finished.code, 0, "{:?}", r.finished);
    }
}
