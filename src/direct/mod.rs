//! Direct (pid-file) Host startup (CONTRACT.md §6), for Linux and macOS without launchd.
//!
//! The same generator as the LaunchAgent decides the environment; the child gets exactly that
//! plus what launchd itself would give (`HOME`, `USER`, `LOGNAME`, `SHELL`, `TMPDIR`), its own
//! session, and the Host log. The pid file is written atomically under a lock and records the
//! process's start time, so `stop` can prove a pid is still our Host before signalling it.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use crate::host::plan::Plan;
use crate::host::stack::Stack;
use crate::sys::fs as fsutil;
use crate::sys::process;
use crate::sys::signal::{self, Signal};
use crate::verify::{self, EnvCheck, LiveProcess};

/// What the pid file records.
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

    fn render(&self) -> String {
        format!(
            "{}\nstart_time={}\nserver={}\nnode={}\nport={}\n",
            self.pid,
            self.start_time,
            self.server.display(),
            self.node.display(),
            self.port
        )
    }

    /// Parses a pid file; the first line is the decimal pid, later lines `key=value`.
    pub fn parse(text: &str) -> Option<PidRecord> {
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

/// Reads the pid file and decides who owns its pid.
pub fn owner(stack: &Stack) -> anyhow::Result<Owner> {
    let path = stack.pid_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Owner::None),
        Err(e) => anyhow::bail!("could not read {}: {e}", path.display()),
    };
    let Some(rec) = PidRecord::parse(&text) else {
        anyhow::bail!(
            "{} does not start with a pid; remove it if no Host is running",
            path.display()
        );
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
        Owner::Foreign(rec, _) => crate::tell!(
            "oyster: note: removing a stale pid file (pid {} now belongs to another process, which is left alone)",
            rec.pid
        ),
        Owner::None => {}
    }
    fsutil::create_dir_all(&stack.log_dir, 0o755)?;
    let log_path = stack.log_path();
    // Never through a symlink, never blocking on a FIFO (CONTRACT.md §9).
    let log = fsutil::open_append(&log_path, 0o600)?;
    let env = plan.host_environment(&stack.home)?;
    let server = plan.server();
    let mut child = process::spawn_detached(
        &plan.node.path,
        &[server.as_os_str()],
        &plan.root.join("host-service"),
        &env,
        log,
    )
    .map_err(|e| anyhow::anyhow!("could not start {}: {e}", plan.node.path.display()))?;
    let pid = child.id();
    let start_time = verify::inspect(pid).map_or(0, |p| p.start_time);
    let rec = PidRecord {
        pid,
        start_time,
        server: plan.server(),
        node: plan.node.path.clone(),
        port: plan.port,
    };
    fsutil::write_atomic(&_lock, &pid_path, rec.render().as_bytes(), Some(0o644))?;
    match verify_start(&mut child, plan, opts) {
        Ok(health_after) => Ok(Started { pid, health_after }),
        Err(what) => {
            terminate(pid, Duration::from_secs(5));
            let _ = child.wait();
            let _ = std::fs::remove_file(&pid_path);
            Err(StartFailed {
                what,
                log: log_path.display().to_string(),
                tail: verify::log_tail(&log_path, 4096),
            }
            .into())
        }
    }
}

/// Health, live environment, then a settle period with the same pid.
fn verify_start(child: &mut Child, plan: &Plan, opts: &StartOptions) -> Result<Duration, String> {
    let health_after = verify::wait_healthy(plan.port, opts.wait, || {
        matches!(child.try_wait(), Ok(None))
    })
    .map_err(|f| match (f, child.try_wait()) {
        (verify::HealthFailure::Exited, Ok(Some(status))) => {
            format!("the Host exited ({status}) before answering /health")
        }
        (f, _) => format!("{f} on 127.0.0.1:{} within {:?}", plan.port, opts.wait),
    })?;
    let live =
        verify::inspect(child.id()).ok_or("the Host exited right after answering /health")?;
    match verify::check_env(&live, &plan.env) {
        EnvCheck::Verified => {}
        other => return Err(other.describe()),
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
    Stopped { pid: u32, killed: bool },
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
            Stopped::Stopped {
                pid: rec.pid,
                killed,
            }
        }
    };
    std::fs::remove_file(&pid_path)
        .map_err(|e| anyhow::anyhow!("could not remove {}: {e}", pid_path.display()))?;
    Ok(outcome)
}
