//! Direct (pid-file) Host startup (docs/behaviour.md §6), for Linux and macOS without launchd.
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

use crate::error::Failed;
use crate::host::identity::{self, ExecRecord};
use crate::host::launchenv;
use crate::host::plan::Plan;
use crate::host::stack::Stack;
use crate::sys::fs as fsutil;
use crate::sys::process;
use crate::sys::signal::{self, Signal};
use crate::verify::{self, LiveProcess};

mod outcomes;
pub mod status;
mod stop;

pub use outcomes::{
    DirectError, Finished, Mismatch, NoExpectedEnv, NotThisStacks, NotVerified, Note, Refusal,
    StartFailed, Wait,
};

use stop::{other_stack_refusal, unproven_refusal};
pub use stop::{stop, stop_checked, terminate, Stopped};

/// Who the pid file names: its pid, and the identity oyster recorded for it (from the exec
/// record beside it; zero and empty when there is none for this pid).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidRecord {
    pub pid: u32,
    /// The wall-clock start time (informational; the fallback for records without a stamp).
    pub start_time: u64,
    /// The start stamp no clock step moves ([`identity::start_stamp`]).
    pub start_stamp: Option<String>,
    pub server: PathBuf,
    pub node: PathBuf,
    pub port: u16,
    /// The exec record this identity came from (its stack and config dir say whose Host it is).
    pub exec: Option<ExecRecord>,
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
            start_stamp: rec.as_ref().and_then(|r| r.start_stamp.clone()),
            server: rec
                .as_ref()
                .and_then(ExecRecord::server)
                .unwrap_or_default(),
            node: rec.as_ref().and_then(ExecRecord::node).unwrap_or_default(),
            port: rec.as_ref().and_then(ExecRecord::port).unwrap_or(0),
            exec: rec,
        }
    }

    /// A pid file of an older oyster: line 1 the pid, then `key=value` lines with the identity.
    pub fn parse_legacy(text: &str) -> Option<PidRecord> {
        let mut lines = text.lines();
        let pid = lines.next()?.trim().parse().ok()?;
        let mut rec = PidRecord {
            pid,
            start_time: 0,
            start_stamp: None,
            server: PathBuf::new(),
            node: PathBuf::new(),
            port: 0,
            exec: None,
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
            None => Err(DirectError::NotAPid { path }.into()),
        },
    }
}

/// Removes the pid file, the origin file and the exec record (a stopped or failed Host).
pub fn remove_identity(stack: &Stack) -> anyhow::Result<()> {
    for path in stack.identity_paths() {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(DirectError::Remove { path, cause: e }.into()),
        }
    }
    Ok(())
}

/// Removes the stack's identity files when they name a process that is gone (a Host that
/// never came up, a rolled-back install); files naming a live process are left alone.
/// Returns whether it removed them.
pub fn remove_identity_if_dead(stack: &Stack) -> anyhow::Result<bool> {
    match owner(stack)? {
        Owner::Stale(_) => remove_identity(stack).map(|()| true),
        Owner::None => {
            // No pid file: an origin or exec record left without one names nobody either,
            // unless its own pid still runs.
            let live = ExecRecord::read(&stack.exec_record_path())
                .is_some_and(|r| crate::sys::signal::exists(r.pid));
            if live {
                return Ok(false);
            }
            remove_identity(stack).map(|()| true)
        }
        _ => Ok(false),
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
    /// The recorded Host is alive, but it is another stack's (the files were copied from
    /// another stack's directory): reported, never signalled, nothing deleted. It says whose
    /// it is.
    OtherStack(NotThisStacks),
    /// Our Host, alive.
    Ours(PidRecord, LiveProcess),
}

/// Reads the pid file and decides who owns its pid. The recorded process, only when the live
/// one has the recorded start stamp (a clock step does not move it) and runs the recorded
/// `server.mjs` (its command line after the exec: `node …/server.mjs`); this stack's Host
/// only when, besides, its exec record and (where the kernel shows it) its environment name
/// this stack and its config dir.
///
/// A partial set of files still identifies a live Host: without a pid file, an exec record
/// that describes a live process (its pid and start stamp) stands for it; without an exec
/// record for the pid, a live process whose environment names this stack and config dir and
/// that runs its `<root>/host-service/server.mjs` may be this Host, so it is never called
/// "another process" (whose files would be deleted while it serves).
pub fn owner(stack: &Stack) -> anyhow::Result<Owner> {
    let rec = match read_record(stack)? {
        Some(rec) => rec,
        None => match record_without_pid_file(stack) {
            Some(rec) => rec,
            None => return Ok(Owner::None),
        },
    };
    let Some(live) = verify::inspect(rec.pid) else {
        return Ok(Owner::Stale(rec));
    };
    let mut rec = rec;
    if rec.exec.is_none() && rec.server.as_os_str().is_empty() {
        if let Some(server) = server_by_environment(stack, &live) {
            rec.server = server;
        }
    }
    let same = identity::same_start(
        rec.start_stamp.as_deref(),
        rec.start_time,
        rec.pid,
        live.start_time,
    );
    if !same || !live.runs(&rec.server) {
        return Ok(Owner::Foreign(rec, live));
    }
    Ok(match not_this_stacks(stack, &rec, &live) {
        Some(why) => Owner::OtherStack(why),
        None => Owner::Ours(rec, live),
    })
}

/// The exec record's pid as the pid file's, when there is no pid file but the record
/// describes a live process (same pid and start stamp, or wall-clock start for old records).
fn record_without_pid_file(stack: &Stack) -> Option<PidRecord> {
    let rec = ExecRecord::read(&stack.exec_record_path())?;
    let live = verify::inspect(rec.pid)?;
    rec.describes(rec.pid, live.start_time)
        .then(|| PidRecord::from_exec_record(rec.pid, Some(rec)))
}

/// The `server.mjs` a live process runs when its environment says it is this stack's Host
/// (stack name, config dir, and a repo root whose `host-service/server.mjs` is on its command
/// line); what stands in for a missing exec record's argv.
fn server_by_environment(stack: &Stack, live: &LiveProcess) -> Option<PathBuf> {
    let config_dir = stack.config_dir.to_string_lossy();
    let ours = live.var(launchenv::STACK_NAME).as_deref() == Some(stack.name.as_str())
        && live.var(launchenv::CONFIG_DIR).as_deref() == Some(&*config_dir);
    let server = Path::new(&live.var(launchenv::REPO_ROOT)?).join("host-service/server.mjs");
    (ours && live.runs(&server)).then_some(server)
}

/// Why the recorded (live) Host is not `stack`'s, or `None` when everything that can be read
/// names this stack: the exec record's stack and config dir, and the live environment's stack
/// name and config dir where the kernel shows them.
fn not_this_stacks(stack: &Stack, rec: &PidRecord, live: &LiveProcess) -> Option<NotThisStacks> {
    let config_dir = stack.config_dir.to_string_lossy();
    let mut why = vec![];
    if let Some(x) = &rec.exec {
        if x.stack != stack.name {
            why.push(Mismatch::RecordStack(x.stack.clone()));
        }
        if let Some(dir) = x.env.get(launchenv::CONFIG_DIR) {
            if *dir != config_dir {
                why.push(Mismatch::RecordConfigDir(dir.clone()));
            }
        }
    }
    if !live.environ.is_empty() {
        match live.var(launchenv::STACK_NAME) {
            Some(name) if name == stack.name => {}
            Some(name) => why.push(Mismatch::EnvStack(name)),
            None => why.push(Mismatch::EnvNoStack(launchenv::STACK_NAME)),
        }
        if let Some(dir) = live.var(launchenv::CONFIG_DIR) {
            if dir != config_dir {
                why.push(Mismatch::EnvConfigDir(dir));
            }
        }
    }
    (!why.is_empty()).then(|| NotThisStacks {
        pid: rec.pid,
        stack: stack.name.clone(),
        why,
    })
}

/// A started and verified Host.
pub struct Started {
    pub pid: u32,
    pub health_after: Duration,
}

/// Options for a start.
pub struct StartOptions<'a> {
    /// How long to wait for `/health`.
    pub wait: Duration,
    /// How long the pid must stay the same after `/health` said 200.
    pub settle: Duration,
    /// Which environment proofs may be used (`OYSTER_ENV_PROOF`).
    pub floor: verify::ProofFloor,
    /// Commands a refusal suggests, in the form the user typed.
    pub hints: crate::context::Hints,
    /// Where the start says its waits and notes.
    pub out: &'a dyn crate::output::Reporter,
}

/// Starts the Host from `plan`; the caller has already refused a loaded LaunchAgent.
///
/// While it waits, SIGINT, SIGTERM and SIGHUP are caught: an interrupted start stops the Host
/// it spawned, removes its identity files and ends with [`crate::error::Interrupted`] (exit
/// 128 + N), so no unverified Host is left running.
pub fn start(stack: &Stack, plan: &Plan, opts: &StartOptions) -> anyhow::Result<Started> {
    let _guard = signal::InterruptGuard::install();
    fsutil::create_dir_all(&stack.run_dir, 0o700)?;
    let _lock = fsutil::lock_sidecar(&stack.pid_path())?;
    refuse_unless_free(stack, &opts.hints, opts.out)?;
    refuse_held_port(stack, plan.port)?;
    fsutil::create_dir_all(&stack.log_dir, 0o755)?;
    let log_path = stack.log_path();
    // Never through a symlink, never blocking on a FIFO.
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
    .map_err(|cause| DirectError::Spawn {
        launcher: plan.launcher.clone(),
        cause,
    })?;
    let pid = child.id();
    match verify_start(&mut child, stack, plan, opts) {
        Ok(health_after) => Ok(Started { pid, health_after }),
        Err(not) => Err(stop_unverified(stack, &mut child, not, opts.out)),
    }
}

/// The refusals of [`start`] that do not depend on the plan — a Host of this stack already
/// running, another stack's or an unprovable one named by the pid file — said before the plan's
/// config sync writes anything (`host start --port Q` refused must not leave `port: Q` for the
/// next plain `host start`). [`start`] asks again under the pid file's lock.
pub fn refuse_running(
    stack: &Stack,
    hints: &crate::context::Hints,
    out: &dyn crate::output::Reporter,
) -> anyhow::Result<()> {
    let refused = match owner(stack)? {
        Owner::Ours(..) | Owner::OtherStack(_) => true,
        Owner::Foreign(rec, now) => now.runs(&rec.server),
        Owner::Stale(_) | Owner::None => false,
    };
    if refused {
        refuse_unless_free(stack, hints, out)?;
    }
    Ok(())
}

/// What the pid file names must leave room for a new Host: a live Host of this stack, another
/// stack's (copied files) or an unprovable one is refused; a stale or foreign pid is said and
/// its files replaced.
fn refuse_unless_free(
    stack: &Stack,
    hints: &crate::context::Hints,
    out: &dyn crate::output::Reporter,
) -> anyhow::Result<()> {
    match owner(stack)? {
        Owner::Ours(rec, _) => {
            return Err(DirectError::AlreadyRunning {
                pid: rec.pid,
                pid_file: stack.pid_path(),
                stop: hints.cmd("host stop"),
            }
            .into())
        }
        Owner::Stale(rec) => out.note(&Note::StalePidGone { pid: rec.pid }.to_string()),
        Owner::Foreign(rec, now) if now.runs(&rec.server) => {
            return Err(unproven_refusal(stack, &rec, hints).into())
        }
        Owner::Foreign(rec, now) => out.note(
            &Note::StalePidForeign {
                pid: rec.pid,
                command: now.command(),
            }
            .to_string(),
        ),
        Owner::OtherStack(why) => return Err(other_stack_refusal(stack, &why).into()),
        Owner::None => {}
    }
    Ok(())
}

/// A port someone else holds would make /health answer for them: refused before starting,
/// naming who holds it (as the LaunchAgent path does).
fn refuse_held_port(stack: &Stack, port: u16) -> Result<(), Failed> {
    // The cheap question first: a port that can be bound has no holder to name.
    if crate::sys::net::port_bindable(port) {
        return Ok(());
    }
    let Ok(holders) = crate::sys::net::listeners_on(port) else {
        return Ok(());
    };
    let Some(h) = holders.first() else {
        return Ok(());
    };
    let stack_of = verify::inspect(h.pid).and_then(|p| p.var(launchenv::STACK_NAME));
    Err(Refusal::PortHeld {
        port,
        pid: h.pid,
        name: h.name.clone(),
        stack_of,
        stack: stack.name.clone(),
    }
    .into())
}

/// Stops a child that did not become a verified Host, removes its identity files once it is
/// gone, and says why: an interrupt (exit 128 + N) or the failure with the log's tail.
fn stop_unverified(
    stack: &Stack,
    child: &mut Child,
    not: NotStarted,
    out: &dyn crate::output::Reporter,
) -> anyhow::Error {
    let pid = child.id();
    // The stop runs to its end, whatever else arrives meanwhile.
    let _quiet = signal::Suspended::new();
    terminate(pid, Duration::from_secs(5), out);
    let _ = child.wait();
    // Only when the child is really gone: files naming a live process stay.
    let removed = remove_identity_if_dead(stack);
    match not {
        NotStarted::Interrupted(sig) => crate::error::Interrupted(
            sig,
            Finished::StartStopped {
                pid,
                removed: removed.is_ok(),
            }
            .to_string(),
        )
        .into(),
        NotStarted::Failed(what) => {
            let log_path = stack.log_path();
            let tail = verify::log_tail(&log_path, 4096);
            // The Host may have written secrets of its own since it started, and logged them:
            // the config is read again after the log, before the tail is printed.
            crate::config::learn_secrets(&stack.config_path());
            StartFailed {
                what,
                log: log_path.display().to_string(),
                tail,
            }
            .into()
        }
    }
}

/// Why a started child is not (yet) a verified Host.
enum NotStarted {
    /// SIGINT, SIGTERM or SIGHUP arrived while waiting: stop waiting at once.
    Interrupted(Signal),
    Failed(NotVerified),
}

impl From<NotVerified> for NotStarted {
    fn from(n: NotVerified) -> NotStarted {
        NotStarted::Failed(n)
    }
}

impl From<String> for NotStarted {
    fn from(s: String) -> NotStarted {
        NotStarted::Failed(NotVerified::Said(s))
    }
}

/// Health, the identity files, the live environment, then a settle period with the same pid.
/// A caught interrupt ends every wait at once.
fn verify_start(
    child: &mut Child,
    stack: &Stack,
    plan: &Plan,
    opts: &StartOptions<'_>,
) -> Result<Duration, NotStarted> {
    opts.out
        .waiting(&Wait::Health { port: plan.port }.to_string(), opts.wait);
    let health = verify::wait_healthy(plan.port, opts.wait, || {
        matches!(child.try_wait(), Ok(None))
    });
    if let Err(verify::HealthFailure::Interrupted(sig)) = health {
        return Err(NotStarted::Interrupted(sig));
    }
    let health_after = health.map_err(|f| match (f, child.try_wait()) {
        (verify::HealthFailure::Exited, Ok(Some(status))) => {
            NotVerified::ExitedBeforeHealth(status.to_string())
        }
        (f, _) => NotVerified::NoHealth {
            failure: f.to_string(),
            port: plan.port,
            wait: opts.wait,
        },
    })?;
    match identity::read_pid_file(&stack.pid_path()) {
        Ok(Some(Ok(pid))) if pid == child.id() => {}
        _ => {
            return Err(NotVerified::NoPidFile {
                path: stack.pid_path(),
                pid: child.id(),
            }
            .into())
        }
    }
    verify::check_listener(plan.port, child.id())?;
    let record = crate::host::identity::ExecRecord::read(&stack.exec_record_path());
    if verify::prove_live_or_exec(child.id(), &plan.env, record.as_ref(), opts.floor)?.is_none() {
        return Err(NotVerified::EnvUnproven { pid: child.id() }.into());
    }
    let deadline = Instant::now() + opts.settle;
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return Err(NotVerified::ExitedWhileSettling(opts.settle).into());
        }
        signal::pause(Duration::from_millis(20)).map_err(NotStarted::Interrupted)?;
    }
    Ok(health_after)
}
