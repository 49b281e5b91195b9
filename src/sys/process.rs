//! The one door through which oyster runs another program (`launchctl`, `node --version`, npm).
//!
//! Always an absolute path, never a shell; stdin is null (or a few bytes it is handed), stdout and stderr are captured, the
//! child gets its own process group, and a timeout kills the whole group.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Output captured from a finished program is capped at this many bytes per stream.
pub const OUTPUT_CAP: usize = 1 << 20;

/// A program run that did not produce an exit code. Words: `commands/words/sys.rs`.
#[derive(Debug)]
pub enum ProcessError {
    Spawn {
        argv: String,
        source: std::io::Error,
    },
    Timeout {
        argv: String,
        secs: u64,
    },
    Signaled {
        argv: String,
        signal: i32,
    },
    Interrupted {
        argv: String,
        signal: super::signal::Signal,
    },
}

impl std::error::Error for ProcessError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProcessError::Spawn { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What a finished program printed and returned.
#[derive(Debug, Clone)]
pub struct Finished {
    pub argv: Vec<String>,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The environment a child gets.
pub enum ChildEnv<'a> {
    /// This process's environment (e.g. `launchctl`, which needs nothing special).
    Inherit,
    /// Exactly these variables and nothing else.
    Exactly(&'a [(String, String)]),
    /// This process's environment with these variables set over it (`systemctl --user` gets
    /// the caller's environment and the `XDG_RUNTIME_DIR` it is to use).
    InheritWith(&'a [(&'a str, &'a OsStr)]),
}

/// A program as the door runs it: built from its absolute path, its arguments (as `OsStr`, so a
/// path is handed on byte for byte, never through `to_string_lossy`), its environment, working
/// directory and deadline, then [`Program::run`] (captured) or [`Program::stream`] (each line
/// handed on as it arrives). Either way: no shell, stdin null (or [`Program::stdin`]), its own process group killed
/// whole at the deadline or when oyster is interrupted, each stream's capture capped at
/// [`OUTPUT_CAP`].
#[must_use = "a Program does nothing until it is run"]
pub struct Program<'a> {
    program: &'a Path,
    args: Vec<&'a OsStr>,
    env: ChildEnv<'a>,
    cwd: Option<&'a Path>,
    timeout: Duration,
    /// Bytes written to the child's stdin, which is then closed (else stdin is null).
    stdin: Option<&'a [u8]>,
}

/// The most a [`Program`] may be handed on its stdin: written whole before oyster reads the
/// child's output, it must fit a pipe's buffer (a secret, a short answer; never a stream).
pub const STDIN_CAP: usize = 4096;

/// The deadline of a [`Program`] that was not given one (launchctl's own default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

impl<'a> Program<'a> {
    /// `program` (an absolute path), no arguments, this process's environment, its working
    /// directory, [`DEFAULT_TIMEOUT`].
    pub fn new(program: &'a Path) -> Self {
        Program {
            program,
            args: Vec::new(),
            env: ChildEnv::Inherit,
            cwd: None,
            timeout: DEFAULT_TIMEOUT,
            stdin: None,
        }
    }

    /// Hands the child these bytes on its stdin, then closes it: how a secret reaches a child
    /// (never its arguments, its environment or a file). At most [`STDIN_CAP`] bytes.
    pub fn stdin(mut self, bytes: &'a [u8]) -> Self {
        assert!(bytes.len() <= STDIN_CAP, "a Program's stdin is small");
        self.stdin = Some(bytes);
        self
    }

    /// One more argument.
    pub fn arg<S: AsRef<OsStr> + ?Sized>(mut self, arg: &'a S) -> Self {
        self.args.push(arg.as_ref());
        self
    }

    /// More arguments, in order.
    pub fn args<S: AsRef<OsStr> + ?Sized + 'a>(
        mut self,
        args: impl IntoIterator<Item = &'a S>,
    ) -> Self {
        self.args.extend(args.into_iter().map(AsRef::as_ref));
        self
    }

    /// The child's environment.
    pub fn env(mut self, env: ChildEnv<'a>) -> Self {
        self.env = env;
        self
    }

    /// The child's working directory.
    pub fn cwd(mut self, dir: &'a Path) -> Self {
        self.cwd = Some(dir);
        self
    }

    /// How long it may run before its whole group is killed.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs it to its end (or its deadline), capturing both streams.
    pub fn run(self) -> Result<Finished, ProcessError> {
        self.stream(&mut |_, _| {})
    }

    /// Runs it, handing every line it prints to `on_line` as it arrives (npm's progress during
    /// setup, instead of minutes of silence); the capture is kept as [`Program::run`] keeps it
    /// (the callback still sees every line).
    pub fn stream(self, on_line: &mut dyn FnMut(Stream, &str)) -> Result<Finished, ProcessError> {
        run_full(&self, &mut |_| {}, on_line)
    }

    /// [`Program::stream`], telling `on_spawn` the child's pid (its process group's) once it
    /// runs: a journal records it, so that a next run can stop a child this one, killed
    /// outright, left running.
    pub fn stream_started(
        self,
        on_spawn: &mut dyn FnMut(u32),
        on_line: &mut dyn FnMut(Stream, &str),
    ) -> Result<Finished, ProcessError> {
        run_full(&self, on_spawn, on_line)
    }

    /// Starts it (its own process group, stdin and both streams null) and waits at most its
    /// timeout, or until a signal comes, for it to end. One still running then is **left
    /// running**, never killed: a URL opener whose browser runs in the foreground (killing
    /// the opener's group would close the user's browser).
    pub fn hand_off(self) -> Result<HandedOff, ProcessError> {
        let mut cmd = command(&self);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let argv = || {
            std::iter::once(self.program.as_os_str())
                .chain(self.args.iter().copied())
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut child = cmd.spawn().map_err(|source| ProcessError::Spawn {
            argv: argv(),
            source,
        })?;
        let end = Instant::now() + self.timeout;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    return Ok(match (status.code(), status.signal()) {
                        (Some(code), _) => HandedOff::Exited(code),
                        (None, signal) => HandedOff::Signaled(signal.unwrap_or(0)),
                    })
                }
                Ok(None) => {}
                Err(source) => {
                    return Err(ProcessError::Spawn {
                        argv: argv(),
                        source,
                    })
                }
            }
            if Instant::now() >= end || super::signal::pause(Duration::from_millis(20)).is_err() {
                return Ok(HandedOff::StillRunning(child.id()));
            }
        }
    }
}

/// How a [`Program::hand_off`] stood when oyster stopped waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandedOff {
    Exited(i32),
    Signaled(i32),
    /// Still running (this pid), left so.
    StillRunning(u32),
}

/// Runs `program args…` and waits at most `timeout` ([`Program`] with these settings).
pub fn run(
    program: &Path,
    args: &[&str],
    env: ChildEnv<'_>,
    timeout: Duration,
) -> Result<Finished, ProcessError> {
    Program::new(program)
        .args(args.iter().copied())
        .env(env)
        .timeout(timeout)
        .run()
}

/// Which stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// [`Program::stream`] with these settings.
pub fn run_streaming(
    program: &Path,
    args: &[&str],
    env: ChildEnv<'_>,
    cwd: Option<&Path>,
    timeout: Duration,
    on_line: &mut dyn FnMut(Stream, &str),
) -> Result<Finished, ProcessError> {
    let mut p = Program::new(program)
        .args(args.iter().copied())
        .env(env)
        .timeout(timeout);
    p.cwd = cwd;
    p.stream(on_line)
}

/// The one implementation behind [`Program::run`] and [`Program::stream`]: no shell, stdin
/// null, its own process group, killed whole at the deadline or when oyster is interrupted
/// (SIGINT/SIGTERM/SIGHUP caught by a [`super::signal::InterruptGuard`]), output capped.
fn run_full(
    p: &Program<'_>,
    on_spawn: &mut dyn FnMut(u32),
    on_line: &mut dyn FnMut(Stream, &str),
) -> Result<Finished, ProcessError> {
    debug_assert!(
        p.program.is_absolute(),
        "the process door takes absolute paths"
    );
    // Shown in messages only: the child gets the bytes themselves.
    let argv: Vec<String> = std::iter::once(p.program.as_os_str())
        .chain(p.args.iter().copied())
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let shown = argv.join(" ");
    let timeout = p.timeout;
    // Before the child exists: a signal between its start and the wait is caught too.
    let _watch = super::signal::ChildWatch::install();
    let mut child = command(p).spawn().map_err(|source| ProcessError::Spawn {
        argv: shown.clone(),
        source,
    })?;
    on_spawn(child.id());
    if let (Some(bytes), Some(mut pipe)) = (p.stdin, child.stdin.take()) {
        use std::io::Write;
        // Fits the pipe's buffer (STDIN_CAP), so this never waits on the child; a child that
        // exited without reading it is not an error here (its exit code says what happened).
        let _ = pipe.write_all(bytes);
    }
    let (rx, readers) = spawn_readers(&mut child);
    let mut kept = Capture::default();
    let status = wait_status(&mut child, &rx, timeout, &shown, &mut |which, bytes| {
        kept.take(which, bytes, on_line)
    })?;
    // What is still in the pipes; a grandchild that kept them open is not waited for long,
    // also when it keeps writing (the bound is checked before each piece, not only while the
    // channel is empty).
    let drain_until = Instant::now() + Duration::from_secs(2);
    while let Some(left) = drain_until
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
    {
        match rx.recv_timeout(left) {
            Ok((which, bytes)) => kept.take(which, bytes, on_line),
            Err(_) => break,
        }
    }
    // Readers that saw the end of their pipe are joined; one still held open by a grandchild
    // ends on its own when that closes it (its sends then fail quietly).
    for reader in readers {
        if reader.is_finished() {
            let _ = reader.join();
        }
    }
    match status.code() {
        Some(code) => Ok(Finished {
            argv,
            code,
            stdout: String::from_utf8_lossy(&kept.out).into_owned(),
            stderr: String::from_utf8_lossy(&kept.err).into_owned(),
        }),
        None => Err(ProcessError::Signaled {
            argv: shown,
            signal: status.signal().unwrap_or(0),
        }),
    }
}

/// What a run captured, each stream capped at [`OUTPUT_CAP`].
#[derive(Default)]
struct Capture {
    out: Vec<u8>,
    err: Vec<u8>,
}

impl Capture {
    /// Keeps what fits of one line and hands the whole line to `on_line`.
    fn take(&mut self, which: Stream, bytes: Vec<u8>, on_line: &mut dyn FnMut(Stream, &str)) {
        let kept = match which {
            Stream::Stdout => &mut self.out,
            Stream::Stderr => &mut self.err,
        };
        let room = OUTPUT_CAP.saturating_sub(kept.len());
        kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
        let text = String::from_utf8_lossy(&bytes);
        on_line(which, text.trim_end_matches(['\n', '\r']));
    }
}

/// Waits for the child, handing on each line as it comes; kills its whole group at the
/// deadline or when oyster is interrupted (SIGINT/SIGTERM/SIGHUP caught by a guard).
fn wait_status(
    child: &mut std::process::Child,
    rx: &std::sync::mpsc::Receiver<(Stream, Vec<u8>)>,
    timeout: Duration,
    shown: &str,
    take: &mut dyn FnMut(Stream, Vec<u8>),
) -> Result<std::process::ExitStatus, ProcessError> {
    let pgid = child.id();
    let deadline = Instant::now() + timeout;
    loop {
        // A program that floods its output must not starve the deadline and the interrupt
        // checks below: at most a short turn of lines, then those checks again.
        let turn = Instant::now() + Duration::from_millis(50);
        while Instant::now() < turn {
            match rx.try_recv() {
                Ok((which, bytes)) => take(which, bytes),
                Err(_) => break,
            }
        }
        let interrupted = super::signal::pause(Duration::ZERO).err();
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if interrupted.is_some() => {
                // Cancel reaches the whole group: npm's own children die with it.
                let _ = super::signal::killpg(pgid, super::signal::Signal::SIGKILL);
                let _ = child.wait();
                return Err(ProcessError::Interrupted {
                    argv: shown.to_owned(),
                    signal: interrupted.unwrap_or(super::signal::Signal::SIGINT),
                });
            }
            Ok(None) if Instant::now() >= deadline => {
                let _ = super::signal::killpg(pgid, super::signal::Signal::SIGKILL);
                let _ = child.wait();
                return Err(ProcessError::Timeout {
                    argv: shown.to_owned(),
                    secs: timeout.as_secs().max(1),
                });
            }
            Ok(None) => {
                // Short, so a launchctl call that ends at once is not kept waiting.
                if let Ok((which, bytes)) = rx.recv_timeout(Duration::from_millis(2)) {
                    take(which, bytes);
                }
            }
            Err(source) => {
                return Err(ProcessError::Spawn {
                    argv: shown.to_owned(),
                    source,
                })
            }
        }
    }
}

/// The command the door runs: no shell, stdin null, both streams piped, its own process group
/// (so a timeout or a cancel reaches its children too), and the environment asked for.
fn command(p: &Program<'_>) -> Command {
    let mut cmd = Command::new(p.program);
    cmd.args(&p.args)
        .stdin(if p.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = p.cwd {
        cmd.current_dir(dir);
    }
    match p.env {
        ChildEnv::Inherit => {}
        ChildEnv::Exactly(vars) => {
            cmd.env_clear();
            cmd.envs(vars.iter().map(|(k, v)| (k, v)));
        }
        ChildEnv::InheritWith(vars) => {
            cmd.envs(vars.iter().copied());
        }
    }
    cmd
}

/// One reader thread per captured stream, each sending its lines ([`read_lines`]) to the
/// returned channel, which closes when both streams have ended.
#[allow(clippy::type_complexity)]
fn spawn_readers(
    child: &mut std::process::Child,
) -> (
    std::sync::mpsc::Receiver<(Stream, Vec<u8>)>,
    Vec<std::thread::JoinHandle<()>>,
) {
    // Bounded: a reader that is ahead of oyster's printing waits (and the program with it,
    // on its full pipe) instead of oyster's memory growing with everything it prints.
    let (tx, rx) = std::sync::mpsc::sync_channel::<(Stream, Vec<u8>)>(CHANNEL_CAP);
    let reader = |r: Box<dyn Read + Send>, which: Stream| {
        let tx = tx.clone();
        std::thread::spawn(move || read_lines(r, &mut |line| tx.send((which, line)).is_ok()))
    };
    let mut readers = vec![];
    if let Some(o) = child.stdout.take() {
        readers.push(reader(Box::new(o), Stream::Stdout));
    }
    if let Some(e) = child.stderr.take() {
        readers.push(reader(Box::new(e), Stream::Stderr));
    }
    (rx, readers)
}

/// How many pieces (each at most [`LINE_CAP`]) the readers may be ahead of oyster.
const CHANNEL_CAP: usize = 64;

/// The longest line a reader keeps before it hands the piece on: a program printing megabytes
/// without a newline never makes oyster's buffer grow past this.
const LINE_CAP: usize = 64 << 10;

/// Reads `r` to its end, handing each line (with its newline; at most [`LINE_CAP`] bytes, a
/// longer one in pieces) to `send`, which returns `false` to stop.
fn read_lines(r: Box<dyn Read + Send>, send: &mut dyn FnMut(Vec<u8>) -> bool) {
    use std::io::BufRead;
    let mut r = std::io::BufReader::new(r);
    let mut line = Vec::new();
    loop {
        let buf = match r.fill_buf() {
            Ok([]) => break,
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let until = buf
            .iter()
            .position(|b| *b == b'\n')
            .map_or(buf.len(), |i| i + 1);
        let n = until.min(LINE_CAP - line.len());
        line.extend_from_slice(&buf[..n]);
        r.consume(n);
        if (line.last() == Some(&b'\n') || line.len() >= LINE_CAP)
            && !send(std::mem::take(&mut line))
        {
            return;
        }
    }
    if !line.is_empty() {
        send(line);
    }
}

/// Starts a long-running program detached from oyster: its own process group (so a Ctrl-C or
/// a hang-up of oyster's terminal never reaches it), exactly `env`, stdin null and both
/// streams appended to `log`. Used for the directly started Host.
pub fn spawn_detached(
    program: &Path,
    args: &[&std::ffi::OsStr],
    cwd: &Path,
    env: &[(String, String)],
    log: std::fs::File,
) -> std::io::Result<std::process::Child> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // Its own process group, never the terminal's foreground one: the terminal's Ctrl-C and
    // hang-up go to the foreground group (oyster's), not to the Host. std sets it between
    // fork and exec, with no unsafe code of ours.
    cmd.process_group(0);
    cmd.spawn()
}

/// A live process's kernel start time (seconds since the epoch) and command line, or `None`
/// when there is no such process (a zombie counts as gone). The same source (`sysinfo`) as the
/// verifier's, so a start time recorded here compares equal there.
pub fn identity(pid: u32) -> Option<(u64, Vec<String>)> {
    use sysinfo::{Pid, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System, UpdateKind};
    let mut sys = System::new();
    let spid = Pid::from_u32(pid);
    sys.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[spid]),
        true,
        ProcessRefreshKind::nothing().with_cmd(UpdateKind::Always),
    );
    let p = sys.process(spid)?;
    if matches!(p.status(), ProcessStatus::Zombie | ProcessStatus::Dead) {
        return None;
    }
    let cmd = p
        .cmd()
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    Some((p.start_time(), cmd))
}

#[cfg(test)]
#[path = "process_tests.rs"]
mod tests;
