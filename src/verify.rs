//! Proof that a Host really runs as generated: the live process's environment read from the
//! kernel, `GET /health`, and a settle period that catches crash loops.
//!
//! # Platform
//! The environment comes from `sysinfo`: `KERN_PROCARGS2` on macOS (which the kernel silently
//! empties for some processes), `/proc/<pid>/environ` on Linux. An empty or unreadable
//! environment is reported as "could not check", never as success.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind};

use crate::host::launchenv::LaunchEnv;
use crate::sys::tail::LineCut;

/// What the kernel says about one live process.
#[derive(Debug, Clone)]
pub struct LiveProcess {
    pub start_time: u64,
    pub cmd: Vec<String>,
    /// Empty when the kernel would not show it.
    pub environ: Vec<OsString>,
}

/// Reads a live process, or `None` when there is no such process.
pub fn inspect(pid: u32) -> Option<LiveProcess> {
    let mut sys = System::new();
    let spid = Pid::from_u32(pid);
    sys.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[spid]),
        true,
        ProcessRefreshKind::nothing()
            .with_environ(UpdateKind::Always)
            .with_cmd(UpdateKind::Always),
    );
    let p = sys.process(spid)?;
    // A zombie has exited; it is not a running Host.
    if matches!(
        p.status(),
        sysinfo::ProcessStatus::Zombie | sysinfo::ProcessStatus::Dead
    ) {
        return None;
    }
    Some(LiveProcess {
        start_time: p.start_time(),
        cmd: p
            .cmd()
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect(),
        environ: p.environ().to_vec(),
    })
}

impl LiveProcess {
    /// The value of one variable in the live environment.
    pub fn var(&self, key: &str) -> Option<String> {
        self.environ.iter().find_map(|kv| {
            let s = kv.to_string_lossy();
            let (k, v) = s.split_once('=')?;
            (k == key).then(|| v.to_owned())
        })
    }

    /// Its command line, for messages (`node /x/server.mjs`).
    pub fn command(&self) -> String {
        self.cmd.join(" ")
    }

    /// Whether this process runs `server` (the identity check before any signal).
    pub fn runs(&self, server: &Path) -> bool {
        let s = server.to_string_lossy();
        self.cmd.iter().any(|a| *a == s)
    }
}

/// The outcome of comparing a live environment with the generated one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvCheck {
    Verified,
    /// `(variable, expected, found)` for each difference.
    Mismatch(Vec<(String, String, Option<String>)>),
    /// The kernel showed no environment (macOS hides it for some processes).
    Unreadable,
}

// `EnvCheck::describe`, its words: `commands/words/verify.rs`.

/// Compares every generated variable with the live process.
pub fn check_env(live: &LiveProcess, expected: &LaunchEnv) -> EnvCheck {
    if live.environ.is_empty() {
        return EnvCheck::Unreadable;
    }
    let diffs: Vec<_> = expected
        .vars
        .iter()
        .filter_map(|(k, want)| {
            let got = live.var(k);
            (got.as_deref() != Some(want.as_str())).then(|| (k.clone(), want.clone(), got))
        })
        .collect();
    if diffs.is_empty() {
        EnvCheck::Verified
    } else {
        EnvCheck::Mismatch(diffs)
    }
}

/// Checks that the socket listening on `port` belongs to `pid` (or a descendant): a `/health`
/// answer from another process (a direct-mode Host, another stack) proves nothing.
pub fn check_listener(port: u16, pid: u32) -> Result<(), String> {
    listener(port, pid).map_err(|e| e.to_string())
}

/// Why the socket on a port is not proven the Host's. Words: `commands/words/verify.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotTheListener {
    /// Who listens could not be told (`why`).
    Unknown { port: u16, why: String },
    /// No socket found for `pid`.
    None { port: u16, pid: u32 },
    /// `/health` was answered by these (`pid`, name), none the Host.
    Others {
        port: u16,
        pid: u32,
        holders: Vec<(u32, String)>,
    },
}

fn listener(port: u16, pid: u32) -> Result<(), NotTheListener> {
    let holders = crate::sys::net::listeners_on(port).map_err(|e| NotTheListener::Unknown {
        port,
        why: e.to_string(),
    })?;
    if holders.is_empty() {
        // The socket went away between /health and now, or is invisible to this user.
        return Err(NotTheListener::None { port, pid });
    }
    if holders
        .iter()
        .any(|h| crate::sys::net::descends_from(h.pid, pid))
    {
        return Ok(());
    }
    Err(NotTheListener::Others {
        port,
        pid,
        holders: holders.into_iter().map(|h| (h.pid, h.name)).collect(),
    })
}

/// One `GET /health` on `127.0.0.1:port`: the HTTP status, or `None` when nothing answered.
pub fn health(port: u16, timeout: Duration) -> Option<u16> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut s = TcpStream::connect_timeout(&addr, timeout).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_write_timeout(Some(timeout)).ok()?;
    s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut head = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        match s.read(&mut head[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    let line = std::str::from_utf8(&head[..n]).ok()?;
    line.strip_prefix("HTTP/1.")?.get(2..5)?.parse().ok()
}

/// Polls `/health` until it answers 200, `alive()` turns false, `timeout` passes, or a signal
/// comes (between polls it pauses through the one interruptible wait). Returns the time it
/// took when healthy.
pub fn wait_healthy(
    port: u16,
    timeout: Duration,
    mut alive: impl FnMut() -> bool,
) -> Result<Duration, HealthFailure> {
    let t0 = Instant::now();
    let mut last = None;
    loop {
        if !alive() {
            return Err(HealthFailure::Exited);
        }
        last = health(port, Duration::from_millis(500)).or(last);
        if last == Some(200) {
            return Ok(t0.elapsed());
        }
        if t0.elapsed() >= timeout {
            return Err(HealthFailure::Timeout(last));
        }
        crate::sys::signal::pause(Duration::from_millis(20)).map_err(HealthFailure::Interrupted)?;
    }
}

/// Why `/health` never said 200.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HealthFailure {
    /// The process exited while we waited.
    Exited,
    /// The last status seen, if any answer came at all.
    Timeout(Option<u16>),
    /// A signal ended the wait.
    Interrupted(crate::sys::signal::Signal),
}

/// Why a log's tail is not shown. Words: `commands/words/verify.rs`.
#[derive(Debug)]
pub enum LogNotShown {
    Missing(std::path::PathBuf),
    Refused(crate::sys::fs::FsError),
}

// `HealthFailure`'s words: `commands/words/verify.rs`.

/// The last `max` bytes of the Host log, for failure messages (lossy UTF-8, whole lines).
///
/// Read only as a regular file (docs/behaviour.md §9): never through a symlink (whose target could
/// be any file the user can read), never blocking on a FIFO or device (opened non-blocking,
/// checked with `fstat` before any read), and never more than `max` bytes, from the end.
pub fn log_tail(path: &Path, max: u64) -> String {
    let mut f = match crate::sys::tail::open_log(path) {
        Ok(Some(f)) => f,
        Ok(None) => return LogNotShown::Missing(path.to_owned()).to_string(),
        Err(e) => return LogNotShown::Refused(e).to_string(),
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(max);
    // A window that begins right after a newline (a failed attempt's own bytes begin where
    // the log ended before it) begins with a whole line, which is kept.
    let at_line_start = start == 0 || {
        use std::os::unix::fs::FileExt;
        let mut before = [0u8];
        f.read_exact_at(&mut before, start - 1).is_ok() && before[0] == b'\n'
    };
    use std::io::Seek;
    if f.seek(std::io::SeekFrom::Start(start)).is_err() {
        return format!("(could not read {})", path.display());
    }
    let mut buf = Vec::new();
    let _ = f.take(max).read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let text = if at_line_start {
        text
    } else {
        match text.split_once('\n') {
            // The window began mid-line: that partial line goes.
            Some((_, rest)) => rest.to_owned(),
            // One line longer than the window: shown from its first space after the cut (a
            // token at the cut is not shown in part), marked.
            None => match text.find(char::is_whitespace) {
                Some(i) => LineCut::Began {
                    max,
                    rest: text[i..].to_owned(),
                },
                None => LineCut::NotShown { max },
            }
            .to_string(),
        }
    };
    if text.trim().is_empty() {
        "(the log is empty)".into()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_tail_reads_only_the_end_of_a_regular_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log");
        let body: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, &body).unwrap();
        let tail = log_tail(&p, 64);
        assert!(tail.len() <= 64 && tail.ends_with("line 1999\n"), "{tail}");
        assert!(tail.starts_with("line "), "whole lines only: {tail}");
        assert_eq!(
            log_tail(&d.path().join("none"), 64),
            format!("(no log at {})", d.path().join("none").display())
        );
        std::fs::write(&p, "").unwrap();
        assert_eq!(log_tail(&p, 64), "(the log is empty)");
        // A window that begins at a line's start keeps that line.
        std::fs::write(&p, "earlier run\nfirst of this attempt\nlast\n").unwrap();
        assert_eq!(log_tail(&p, 27), "first of this attempt\nlast\n");
        // One line longer than the window: from its first space after the cut, marked.
        std::fs::write(
            &p,
            format!("{} KEY=sk-ant-api03-abcdefgh next words", "x".repeat(100)),
        )
        .unwrap();
        let tail = log_tail(&p, 30);
        assert!(
            tail.starts_with("[line cut: it began more than 30 bytes back] … next words"),
            "{tail}"
        );
        std::fs::write(&p, "y".repeat(100)).unwrap();
        assert!(log_tail(&p, 30).contains("not shown"));
    }

    #[test]
    fn log_tail_never_follows_a_link_or_blocks_on_a_fifo_or_device() {
        let d = tempfile::tempdir().unwrap();
        let secret = d.path().join("secret");
        std::fs::write(&secret, "NOT-FOR-THE-TERMINAL\n").unwrap();
        let link = d.path().join("link.log");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let said = log_tail(&link, 4096);
        assert!(
            !said.contains("NOT-FOR") && said.contains("symlink"),
            "{said}"
        );
        let zero = d.path().join("zero.log");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(log_tail(&zero, 4096).contains("symlink"));
        let fifo = d.path().join("fifo.log");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let t0 = std::time::Instant::now();
        let said = log_tail(&fifo, 4096);
        assert!(
            t0.elapsed() < Duration::from_secs(1) && said.contains("FIFO"),
            "{said}"
        );
        assert!(log_tail(Path::new("/dev/null"), 4096).contains("a device"));
        assert!(log_tail(d.path(), 4096).contains("a directory"));
    }

    #[test]
    fn a_mismatch_names_a_secret_variable_but_never_shows_its_value() {
        let check = EnvCheck::Mismatch(vec![
            ("ANTHROPIC_API_KEY".into(), "sk-ant-1".into(), None),
            ("GITHUB_TOKEN".into(), "ghp-2".into(), Some("ghp-3".into())),
            ("OYSTERUN_PORT".into(), "8802".into(), Some("8803".into())),
        ]);
        assert_eq!(
            check.describe(),
            "ANTHROPIC_API_KEY is unset but should be <redacted>; GITHUB_TOKEN is <redacted> but \
             should be <redacted>; OYSTERUN_PORT is \"8803\" but should be \"8802\""
        );
    }
}

/// How the Host's environment was proven (docs/behaviour.md §5), strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EnvProof {
    /// The environment read from the kernel equals the generated one.
    Live,
    /// The kernel hides the environment; `oyster host exec`, running as the same pid just before
    /// its exec, recorded the environment it passed on, and it is the generated one.
    Exec,
    /// Neither is available; launchd's loaded definition has exactly the generated variables
    /// and the running pid is the one launchd spawned for it.
    Launchd,
}

impl EnvProof {
    pub fn as_str(self) -> &'static str {
        match self {
            EnvProof::Live => "live",
            EnvProof::Exec => "exec",
            EnvProof::Launchd => "launchd",
        }
    }
}

/// Which proofs a run may use: all (the kernel decides), or, as `OYSTER_ENV_PROOF` says, as if
/// the kernel hid the environment (`exec`) or the launch program's record were missing too
/// (`launchd`), so every tier is exercised off macOS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProofFloor {
    Live,
    Exec,
    Launchd,
}

impl ProofFloor {
    pub fn from_env(value: Option<&str>) -> ProofFloor {
        match value {
            Some("launchd") => ProofFloor::Launchd,
            Some("exec") => ProofFloor::Exec,
            _ => ProofFloor::Live,
        }
    }
}

/// The generated variables a source (`have`) does not hold as generated.
pub fn differing(env: &LaunchEnv, have: impl Fn(&str) -> Option<String>) -> Vec<String> {
    env.vars
        .iter()
        .filter(|(k, v)| have(k).as_deref() != Some(v.as_str()))
        .map(|(k, _)| k.clone())
        .collect()
}

/// What the two proofs that need no launchd found: the proof of the generated variables
/// (`None` when neither source is available), and the declared variables the Host does not
/// hold as declared ([`declared_drift`]; `None` when that cannot be told).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proven {
    pub proof: Option<EnvProof>,
    pub declared_drift: Option<Vec<String>>,
}

/// The two proofs that need no launchd: the live environment, else the record `oyster host
/// exec` wrote as this very process (same pid and start time). `Ok(None)` when neither is
/// available (the caller may still have launchd's definition); a mismatch is an error, and so
/// is a declared variable the Host does not hold as declared now.
pub fn prove_live_or_exec(
    pid: u32,
    env: &LaunchEnv,
    exec_record: Option<&crate::host::identity::ExecRecord>,
    floor: ProofFloor,
) -> Result<Option<EnvProof>, String> {
    let p = prove_parts(pid, env, exec_record, floor)?;
    match (p.proof, p.declared_drift) {
        (Some(_), Some(drift)) if !drift.is_empty() => Err(declared_problem(&drift)),
        (proof, _) => Ok(proof),
    }
}

/// Why a Host does not run with the declared variables, by name.
pub fn declared_problem(names: &[String]) -> String {
    format!(
        "the Host does not run with the declared environment as it is now (`oyster env`): {} \
         differ(s); a restart applies it",
        names.join(", ")
    )
}

/// [`prove_live_or_exec`]'s parts, apart: the generated variables' proof, and the declared
/// variables' drift from the same sources (status calls a Host whose declared variables
/// drifted stale, not unverified).
pub fn prove_parts(
    pid: u32,
    env: &LaunchEnv,
    exec_record: Option<&crate::host::identity::ExecRecord>,
    floor: ProofFloor,
) -> Result<Proven, String> {
    let live = inspect(pid).ok_or("the Host exited right after answering /health")?;
    let record = exec_record
        .filter(|_| floor != ProofFloor::Launchd)
        .filter(|r| r.describes(pid, live.start_time));
    let shown = (floor == ProofFloor::Live && !live.environ.is_empty()).then_some(&live);
    let declared_drift = declared_drift(env, shown, record);
    if let Some(live) = shown {
        return match check_env(live, env) {
            EnvCheck::Verified => Ok(Proven {
                proof: Some(EnvProof::Live),
                declared_drift,
            }),
            check => Err(check.describe()),
        };
    }
    let Some(rec) = record else {
        return Ok(Proven {
            proof: None,
            declared_drift,
        });
    };
    let diffs = differing(env, |k| rec.env.get(k).cloned());
    if diffs.is_empty() {
        Ok(Proven {
            proof: Some(EnvProof::Exec),
            declared_drift,
        })
    } else {
        Err(format!(
            "the kernel hides the Host's environment, and what `oyster host exec` passed to it differs from the generated one in: {}",
            diffs.join(", ")
        ))
    }
}

/// The declared variables a Host does not hold as `env` declares them now: each one it lacks
/// or has with another value, and each one its launch added that is no longer declared (`env
/// unset`). From the live environment when it is shown (`live`), else from the launch's
/// record (each value by its fingerprint); `None` when neither can tell. Names only.
pub fn declared_drift(
    env: &LaunchEnv,
    live: Option<&LiveProcess>,
    record: Option<&crate::host::identity::ExecRecord>,
) -> Option<Vec<String>> {
    let mut out: Vec<String> = vec![];
    let launched: Vec<&String> = record
        .map(|r| r.declared.keys().collect())
        .unwrap_or_default();
    let undeclared = launched
        .into_iter()
        .filter(|k| !env.declared.contains_key(*k));
    if let Some(live) = live {
        for (k, v) in &env.declared {
            if live.var(k).as_deref() != Some(v.as_str()) {
                out.push(k.clone());
            }
        }
        out.extend(undeclared.filter(|k| live.var(k).is_some()).cloned());
    } else {
        let rec = record?;
        for (k, v) in &env.declared {
            let same = rec
                .declared
                .get(k)
                .is_some_and(|fp| crate::sys::digest::matches(fp, v));
            if !same {
                out.push(k.clone());
            }
        }
        out.extend(undeclared.cloned());
    }
    out.sort();
    out.dedup();
    Some(out)
}
