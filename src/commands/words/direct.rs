//! The words of `direct/` (the pid-file Host): its refusals with their fixes, its failures, the
//! notes and waits it says through the `Reporter`, and why no Host of the stack runs.

use std::fmt::{self, Display, Formatter};

use crate::direct::status::NotRunning;
use crate::direct::{
    DirectError, Finished, Mismatch, NoExpectedEnv, NotThisStacks, NotVerified, Note, Refusal,
    StartFailed, Wait,
};
use crate::error::Failed;

impl Display for Mismatch {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::RecordStack(s) => write!(f, "its exec record names stack {s:?}"),
            Mismatch::RecordConfigDir(d) => write!(f, "its exec record's config dir is {d}"),
            Mismatch::EnvStack(s) => write!(f, "its environment names stack {s:?}"),
            Mismatch::EnvNoStack(var) => write!(f, "its environment has no {var}"),
            Mismatch::EnvConfigDir(d) => write!(f, "its environment's config dir is {d}"),
        }
    }
}

impl Display for NotThisStacks {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let why: Vec<String> = self.why.iter().map(ToString::to_string).collect();
        write!(
            f,
            "pid {} is not stack {}'s Host: {} (were these identity files copied from another \
             stack's directory?)",
            self.pid,
            self.stack,
            why.join("; ")
        )
    }
}

impl Display for NotVerified {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            NotVerified::ExitedBeforeHealth(status) => {
                write!(f, "the Host exited ({status}) before answering /health")
            }
            NotVerified::NoHealth {
                failure,
                port,
                wait,
            } => write!(f, "{failure} on 127.0.0.1:{port} within {wait:?}"),
            NotVerified::NoPidFile { path, pid } => write!(
                f,
                "`oyster host exec` did not write {} for pid {pid} (its reason is in the log)",
                path.display()
            ),
            NotVerified::EnvUnproven { pid } => write!(
                f,
                "the kernel hides pid {pid}'s environment and `oyster host exec` left no record \
                 for it, so the environment is unproven"
            ),
            NotVerified::ExitedWhileSettling(settle) => write!(
                f,
                "the Host exited within {settle:?} of answering /health (a crash loop?)"
            ),
            NotVerified::Said(said) => f.write_str(said),
        }
    }
}

impl Display for StartFailed {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the Host did not start: {}\n--- last lines of {} ---\n{}",
            self.what, self.log, self.tail
        )
    }
}

impl Display for DirectError {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            DirectError::NotAPid { path } => write!(
                f,
                "{} does not hold a pid; remove it if no Host is running",
                path.display()
            ),
            DirectError::Remove { path, cause } => {
                write!(f, "could not remove {}: {cause}", path.display())
            }
            DirectError::Spawn { launcher, cause } => {
                write!(f, "could not start {}: {cause}", launcher.display())
            }
            DirectError::AlreadyRunning {
                pid,
                pid_file,
                stop,
            } => write!(
                f,
                "the Host is already running (pid {pid}, from {}); stop it with `{stop}`",
                pid_file.display()
            ),
            DirectError::Outlived { pid } => write!(
                f,
                "pid {pid} outlived SIGTERM and SIGKILL; its identity files were kept"
            ),
        }
    }
}

impl From<Refusal> for Failed {
    fn from(r: Refusal) -> Failed {
        let (msg, hint) = match r {
            Refusal::PortHeld {
                port,
                pid,
                name,
                stack_of,
                stack,
            } => (
                format!(
                    "port {port} is already held by pid {pid} ({name}{}); the Host of stack \
                     {stack} could not listen there",
                    stack_of.map_or(String::new(), |s| format!(", oyster stack {s}"))
                ),
                format!(
                    "stop that process (or give stack {stack} another port with --port), then \
                     run again"
                ),
            ),
            Refusal::OtherStack { why, stack, files } => {
                let files: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
                (
                    format!("{why}; nothing was signalled and no file was removed"),
                    format!(
                        "if stack {stack} has no Host of its own running, remove the copied \
                         identity files: `rm {}`",
                        files.join(" ")
                    ),
                )
            }
            Refusal::Unproven {
                pid,
                server,
                recorded,
                exec_record,
                stack,
                start,
            } => (
                format!(
                    "pid {pid} runs {} but {} {} (another start time, or the record is missing \
                     or unreadable); it was not signalled and the identity files were kept",
                    server.display(),
                    if recorded {
                        "is not the process recorded in"
                    } else {
                        "has no record of its start in"
                    },
                    exec_record.display()
                ),
                format!(
                    "if it is stack {stack}'s Host, stop it yourself (`kill {pid}`), then \
                     `{start}`"
                ),
            ),
            Refusal::LaunchdRuns { pid, job, stop } => (
                format!(
                    "launchd runs pid {pid} ({job}); `host stop` would only make KeepAlive start \
                     it again, so it was not signalled and its files were kept"
                ),
                format!(
                    "`{stop}` stops a Host launchd runs (for another stack's job, that stack's \
                     name)"
                ),
            ),
        };
        Failed::new(msg, hint)
    }
}

impl Display for Note {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Note::StalePidGone { pid } => {
                write!(f, "removing a stale pid file (pid {pid} is not running)")
            }
            Note::StalePidForeign { pid, command } => write!(
                f,
                "removing a stale pid file (pid {pid} now belongs to another process, \
                 {command}, which is left alone)"
            ),
        }
    }
}

impl Display for Finished {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Finished::StartStopped { pid, removed } => write!(
                f,
                "stopped the Host it had started (pid {pid}, not yet verified) and {}",
                if *removed {
                    "removed its identity files"
                } else {
                    "could not remove its identity files"
                }
            ),
            Finished::StopFinished { pid } => write!(
                f,
                "the stop had begun and was finished: Host stopped (pid {pid}), identity files \
                 removed"
            ),
        }
    }
}

impl Display for Wait {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Wait::Health { port } => write!(f, "GET /health on 127.0.0.1:{port}"),
            Wait::Exit { pid } => write!(f, "pid {pid} to exit after SIGTERM"),
        }
    }
}

impl Display for NoExpectedEnv {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "could not compute the expected environment: {}", self.0)
    }
}

impl Display for NotRunning {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            NotRunning::NoPidFile => f.write_str("no pid file"),
            NotRunning::Gone { pid } => write!(f, "stale pid file: pid {pid} is gone"),
            NotRunning::Unproven { pid, command } => write!(
                f,
                "pid {pid} runs the Host's server.mjs ({command}) but is not provably the \
                 process its exec record describes (missing, unreadable or another start time)"
            ),
            NotRunning::Foreign { pid, command } => write!(
                f,
                "stale pid file: pid {pid} now belongs to another process ({command})"
            ),
            NotRunning::OtherStack(why) => why.fmt(f),
        }
    }
}
