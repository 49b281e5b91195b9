//! Direct (pid-file) Host startup (CONTRACT.md §6), for Linux and macOS without launchd.
//!
//! The same generator as the LaunchAgent decides the environment, and the same launch program
//! runs: the child is `<oyster> host exec --stack NAME` with exactly that environment plus what
//! launchd itself would give (`HOME`, `USER`, `LOGNAME`, `SHELL`, `TMPDIR`), its own session and
//! the Host log; it writes the pid file (the pid and a newline, as Oysterun reads it), the
//! origin file and oyster's exec record, then becomes the Host with the same pid. The exec
//! record's start time and command line are what `stop` checks before it signals a pid.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use crate::host::identity::{self, ExecRecord};
use crate::host::plan::Plan;
use crate::host::stack::Stack;
use crate::sys::fs as fsutil;
use crate::sys::process;
use crate::sys::signal::{self, Signal};
use crate::verify::{self, LiveProcess};

/// Who the pid file names: its pid, and the identity oyster recorded for it (from the exec
/// record beside it; zero and empty when there is none for this pid).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidRecord {
    pub pid: u32,
    pub start_time: u64,
    pub server: PathBuf,
    pub node: PathBuf,
    pub port: u16,
}

impl PidRecord {
    /// The root the recorded Host was started from (`<root>/host-service/server.mjs`).
    pub fn root(&self) -> Option<&Path> {
        self.server.parent()?.parent()
    }

    fn from_exec_record(pid: u32, rec: Option<ExecRecord>) -> PidRecord {
        let rec = rec.filter(|r| r.pid == pid);
        PidRecord {
            pid,
            start_time: rec.as_ref().map_or(0, |r| r.start_time),
            server: rec
                .as_ref()
                .and_then(ExecRecord::server)
                .unwrap_or_default(),
            node: rec.as_ref().and_then(ExecRecord::node).unwrap_or_default(),
            port: rec.as_ref().and_then(ExecRecord::port).unwrap_or(0),
        }
    }

    /// A pid file of an older oyster: line 1 the pid, then `key=value` lines with the identity.
    pub fn parse_legacy(text: &str) -> Option<PidRecord> {
        let mut lines = text.lines();
        let pid = lines.next()?.trim().parse().ok()?;
        let mut rec = PidRecord {
            pid,
            start_time: 0,
            server: PathBuf::new(),
            node: PathBuf::new(),
            port: 0,
        };
        for line in lines {
            match line.split_once('=') {
                Some(("start_time", v)) => rec.start_time = v.parse().unwrap_or(0),
                Some(("server", v)) => rec.server = PathBuf::from(v),
                Some(("node", v)) => rec.node = PathBuf::from(v),
                Some(("port", v)) => rec.port = v.parse().unwrap_or(0),
                _ => {}
            }
        }
        Some(rec)
    }
}

/// Reads the pid file and the identity beside it; `None` when there is no pid file.
pub fn read_record(stack: &Stack) -> anyhow::Result<Option<PidRecord>> {
    let path = stack.pid_path();
    match identity::read_pid_file(&path)? {
        None => Ok(None),
        Some(Ok(pid)) => Ok(Some(PidRecord::from_exec_record(
            pid,
            ExecRecord::read(&stack.exec_record_path()),
        ))),
        Some(Err(text)) => match PidRecord::parse_legacy(&text) {
            Some(rec) => Ok(Some(rec)),
            None => anyhow::bail!(
                "{} does not hold a pid; remove it if no Host is running",
                path.display()
            ),
        },
    }
}

/// Removes the pid file, the origin file and the exec record (a stopped or failed Host).
pub fn remove_identity(stack: &Stack) -> anyhow::Result<()> {
    for path in [
        stack.pid_path(),
        stack.origin_path(),
        stack.exec_record_path(),
    ] {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => anyhow::bail!("could not remove {}: {e}", path.display()),
        }
    }
    Ok(())
}

/// What the pid file's pid is now.
#[derive(Debug)]
pub enum Owner {
    /// No pid file.
    None,
    /// The recorded process is gone.
    Stale(PidRecord),
    /// The pid now belongs to a different process.
    Foreign(PidRecord, LiveProcess),
    /// Our Host, alive.
    Ours(PidRecord, LiveProcess),
}

/// Reads the pid file and decides who owns its pid: our Host only when the live process has
/// the start time oyster recorded and runs the recorded `server.mjs` (its command line after
/// the exec: `node …/server.mjs`).
pub fn owner(stack: &Stack) -> anyhow::Result<Owner> {
    let Some(rec) = read_record(stack)? else {
        return Ok(Owner::None);
    };
    Ok(match verify::inspect(rec.pid) {
        None => Owner::Stale(rec),
        Some(live) if live.start_time == rec.start_time && live.runs(&rec.server) => {
            Owner::Ours(rec, live)
        }
        Some(live) => Owner::Foreign(rec, live),
    })
}

/// A started and verified Host.
pub struct Started {
    pub pid: u32,
    pub health_after: Duration,
}

/// Why a start failed, after the child was stopped and the pid file removed.
#[derive(Debug, thiserror::Error)]
#[error("the Host did not start: {what}\n--- last lines of {log} ---\n{tail}")]
pub struct StartFailed {
    pub what: String,
    pub log: String,
    pub tail: String,
}

/// Options for a start.
pub struct StartOptions {
    /// How long to wait for `/health`.
    pub wait: Duration,
    /// How long the pid must stay the same after `/health` said 200.
    pub settle: Duration,
    /// Which environment proofs may be used (`OYSTER_ENV_PROOF`).
    pub floor: verify::ProofFloor,
}

/// Starts the Host from `plan`; the caller has already refused a loaded LaunchAgent.
pub fn start(stack: &Stack, plan: &Plan, opts: &StartOptions) -> anyhow::Result<Started> {
    fsutil::create_dir_all(&stack.run_dir, 0o700)?;
    let pid_path = stack.pid_path();
    let _lock = fsutil::lock_sidecar(&pid_path)?;
    match owner(stack)? {
        Owner::Ours(rec, _) => anyhow::bail!(
            "the Host is already running (pid {}, from {}); stop it with `oyster host stop --stack {}`",
            rec.pid,
            pid_path.display(),
            stack.name
        ),
        Owner::Stale(rec) => crate::tell!(
            "oyster: note: removing a stale pid file (pid {} is not running)",
            rec.pid
        ),
        Owner::Foreign(rec, now) => crate::tell!(
            "oyster: note: removing a stale pid file (pid {} now belongs to another process, {}, which is left alone)",
            rec.pid,
            now.command()
        ),
        Owner::None => {}
    }
    // A port someone else holds would make /health answer for them: refused before starting,
    // naming who holds it (as the LaunchAgent path does).
    if let Ok(holders) = crate::sys::net::listeners_on(plan.port) {
        if let Some(h) = holders.first() {
            let stack_of = verify::inspect(h.pid)
                .and_then(|p| p.var("OYSTERUN_ROUTEC_STACK_NAME"))
                .map_or(String::new(), |s| format!(", oyster stack {s}"));
            return Err(crate::error::Failed::new(
                format!(
                    "port {} is already held by pid {} ({}{stack_of}); the Host of stack {} could not listen there",
                    plan.port, h.pid, h.name, stack.name
                ),
                format!(
                    "stop that process (or give stack {} another port with --port), then run again",
                    stack.name
                ),
            )
            .into());
        }
    }
    fsutil::create_dir_all(&stack.log_dir, 0o755)?;
    let log_path = stack.log_path();
    // Never through a symlink, never blocking on a FIFO (CONTRACT.md §9).
    let log = fsutil::open_append(&log_path, 0o600)?;
    remove_identity(stack)?;
    let env = plan.host_environment(&stack.home)?;
    // The one launch program, as launchd runs it: it writes the identity files (this process
    // holds their lock meanwhile, on its behalf) and becomes the Host with the same pid.
    let args = plan.launch_arguments(&stack.name);
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    let mut child = process::spawn_detached(
        &plan.launcher,
        &args,
        &plan.root.join("host-service"),
        &env,
        log,
    )
    .map_err(|e| anyhow::anyhow!("could not start {}: {e}", plan.launcher.display()))?;
    let pid = child.id();
    match verify_start(&mut child, stack, plan, opts) {
        Ok(health_after) => Ok(Started { pid, health_after }),
        Err(what) => {
            terminate(pid, Duration::from_secs(5));
            let _ = child.wait();
            let _ = remove_identity(stack);
            let tail = verify::log_tail(&log_path, 4096);
            // The Host may have written secrets of its own since it started, and logged them:
            // the config is read again after the log, before the tail is printed.
            crate::config::learn_secrets(&stack.config_path());
            Err(StartFailed {
                what,
                log: log_path.display().to_string(),
                tail,
            }
            .into())
        }
    }
}

/// Health, the identity files, the live environment, then a settle period with the same pid.
fn verify_start(
    child: &mut Child,
    stack: &Stack,
    plan: &Plan,
    opts: &StartOptions,
) -> Result<Duration, String> {
    crate::output::printer().waiting(
        &format!("GET /health on 127.0.0.1:{}", plan.port),
        opts.wait,
    );
    let health_after = verify::wait_healthy(plan.port, opts.wait, || {
        matches!(child.try_wait(), Ok(None))
    })
    .map_err(|f| match (f, child.try_wait()) {
        (verify::HealthFailure::Exited, Ok(Some(status))) => {
            format!("the Host exited ({status}) before answering /health")
        }
        (f, _) => format!("{f} on 127.0.0.1:{} within {:?}", plan.port, opts.wait),
    })?;
    match identity::read_pid_file(&stack.pid_path()) {
        Ok(Some(Ok(pid))) if pid == child.id() => {}
        _ => {
            return Err(format!(
                "`oyster host exec` did not write {} for pid {} (its reason is in the log)",
                stack.pid_path().display(),
                child.id()
            ))
        }
    }
    verify::check_listener(plan.port, child.id())?;
    let record = crate::host::identity::ExecRecord::read(&stack.exec_record_path());
    if verify::prove_live_or_exec(child.id(), &plan.env, record.as_ref(), opts.floor)?.is_none() {
        return Err(format!(
            "the kernel hides pid {}'s environment and `oyster host exec` left no record for it, so the environment is unproven",
            child.id()
        ));
    }
    let deadline = Instant::now() + opts.settle;
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return Err(format!(
                "the Host exited within {:?} of answering /health (a crash loop?)",
                opts.settle
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(health_after)
}

/// SIGTERM one pid, wait up to `grace`, then SIGKILL. Returns whether it had to escalate.
pub fn terminate(pid: u32, grace: Duration) -> bool {
    let _ = signal::kill(pid, Signal::SIGTERM);
    crate::output::printer().waiting(&format!("pid {pid} to exit after SIGTERM"), grace);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if verify::inspect(pid).is_none() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = signal::kill(pid, Signal::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(2);
    while verify::inspect(pid).is_some() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// What happened on `stop`.
pub enum Stopped {
    NotRunning,
    StaleRemoved(PidRecord),
    ForeignLeftAlone(PidRecord),
    Signalled { pid: u32, killed: bool },
}

/// Stops the recorded Host after proving the pid is still that Host; never by name.
pub fn stop(stack: &Stack) -> anyhow::Result<Stopped> {
    let pid_path = stack.pid_path();
    if !pid_path.exists() {
        return Ok(Stopped::NotRunning);
    }
    let _lock = fsutil::lock_sidecar(&pid_path)?;
    let outcome = match owner(stack)? {
        Owner::None => return Ok(Stopped::NotRunning),
        Owner::Stale(rec) => Stopped::StaleRemoved(rec),
        Owner::Foreign(rec, _) => Stopped::ForeignLeftAlone(rec),
        Owner::Ours(rec, _) => {
            let killed = terminate(rec.pid, Duration::from_secs(10));
            Stopped::Signalled {
                pid: rec.pid,
                killed,
            }
        }
    };
    remove_identity(stack)?;
    Ok(outcome)
}
