//! A launchd job: the definition captured at bootstrap (never re-read afterwards), its runtime
//! state, and how launchd spawns it.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use plist::Value;

/// launchd's default PATH for jobs.
pub const DEFAULT_PATH: &str = "/usr/bin:/bin:/usr/sbin:/sbin";
/// How long launchd waits after SIGTERM before SIGKILL, in seconds, for agents that do not set
/// `ExitTimeOut` (`print` shows `exit timeout = 5`).
pub const EXIT_TIMEOUT_SECS: u64 = 5;
/// launchd's `EX_CONFIG`: the program, a log path or the working directory could not be used.
pub const EX_CONFIG: i32 = 78;

/// The job definition as captured from the plist at bootstrap.
#[derive(Debug, Clone)]
pub struct Definition {
    pub label: String,
    pub plist_path: String,
    pub program_arguments: Vec<String>,
    pub environment: BTreeMap<String, String>,
    pub working_directory: Option<String>,
    pub stdout_path: Option<String>,
    pub stderr_path: Option<String>,
    pub run_at_load: bool,
    pub keep_alive: bool,
    pub throttle_interval: u64,
    /// `LimitLoadToSessionType` (a string or an array); without it, `Aqua` only (TN2083).
    pub session_types: Vec<String>,
    /// `ExitTimeOut`: seconds from SIGTERM to SIGKILL; 0 means never (launchd.plist(5)).
    pub exit_timeout: Option<u64>,
}

/// Why a plist could not be bootstrapped: the launchctl exit code.
pub type LoadError = i32;

/// Reads and checks a plist as launchd does at bootstrap.
pub fn load(path: &Path) -> Result<Definition, LoadError> {
    let meta = std::fs::symlink_metadata(path).map_err(|_| 2)?;
    let me = nix::unistd::getuid().as_raw();
    // launchd refuses a plist the user does not own, one others can write, and (as modelled
    // here) a symlink: write a real file.
    if meta.file_type().is_symlink() || meta.uid() != me || meta.mode() & 0o022 != 0 {
        return Err(122);
    }
    let value = Value::from_file(path).map_err(|_| 5)?;
    let d = value.as_dictionary().ok_or(5)?;
    let string = |k: &str| d.get(k).and_then(Value::as_string).map(str::to_owned);
    let label = string("Label").ok_or(5)?;
    let mut program_arguments: Vec<String> = d
        .get("ProgramArguments")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_string().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if let Some(program) = string("Program") {
        if program_arguments.is_empty() {
            program_arguments.push(program);
        } else {
            program_arguments[0] = program;
        }
    }
    if program_arguments.is_empty() {
        return Err(5);
    }
    let environment = d
        .get("EnvironmentVariables")
        .and_then(Value::as_dictionary)
        .map(|e| {
            e.iter()
                .filter_map(|(k, v)| v.as_string().map(|s| (k.clone(), s.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let boolean = |k: &str| match d.get(k) {
        Some(Value::Boolean(b)) => *b,
        // A KeepAlive dictionary (conditions) is treated as "keep alive" here.
        Some(Value::Dictionary(_)) => true,
        _ => false,
    };
    let throttle_interval = d
        .get("ThrottleInterval")
        .and_then(Value::as_signed_integer)
        .map_or(10, |n| n.max(0).unsigned_abs());
    let session_types = match d.get("LimitLoadToSessionType") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_string().map(str::to_owned))
            .collect(),
        _ => vec!["Aqua".to_owned()],
    };
    Ok(Definition {
        label,
        plist_path: path.to_string_lossy().into_owned(),
        program_arguments,
        environment,
        working_directory: string("WorkingDirectory"),
        stdout_path: string("StandardOutPath"),
        stderr_path: string("StandardErrorPath"),
        run_at_load: boolean("RunAtLoad"),
        keep_alive: boolean("KeepAlive"),
        throttle_interval,
        session_types,
        exit_timeout: d
            .get("ExitTimeOut")
            .and_then(Value::as_signed_integer)
            .map(|n| n.max(0).unsigned_abs()),
    })
}

/// The `Label` of a plist, if it can be read as one (plist-form `bootout` finds the service by it).
pub fn read_label(path: &Path) -> Option<String> {
    let value = Value::from_file(path).ok()?;
    let label = value.as_dictionary()?.get("Label")?.as_string()?;
    Some(label.to_owned())
}

/// How the last instance ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastExit {
    Never,
    Code(i32),
    Signal(i32),
}

/// A loaded job and what it is doing.
pub struct Job {
    pub def: Definition,
    pub domain: String,
    pub child: Option<Child>,
    pub started_at: Option<Instant>,
    pub runs: u32,
    pub last_exit: LastExit,
    pub successive_crashes: u32,
    /// When KeepAlive will spawn it again (throttled).
    pub next_spawn: Option<Instant>,
    /// Set by bootout: when SIGTERM was sent.
    pub sigterm_at: Option<Instant>,
    /// Set when a booted-out job's process has exited; the label lingers a while after.
    pub drained_at: Option<Instant>,
    /// Seconds from SIGTERM to SIGKILL at bootout; 0 = never.
    pub exit_timeout: u64,
}

impl Job {
    /// A job loaded now; `default_exit_timeout` applies when the plist sets no `ExitTimeOut`.
    pub fn new(def: Definition, domain: String, default_exit_timeout: u64) -> Job {
        Job {
            exit_timeout: def.exit_timeout.unwrap_or(default_exit_timeout),
            def,
            domain,
            child: None,
            started_at: None,
            runs: 0,
            last_exit: LastExit::Never,
            successive_crashes: 0,
            next_spawn: None,
            sigterm_at: None,
            drained_at: None,
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn draining(&self) -> bool {
        self.sigterm_at.is_some()
    }

    /// Whether a booted-out instance has outlived its exit timeout and must get SIGKILL.
    pub fn past_exit_timeout(&self) -> bool {
        self.child.is_some()
            && self.exit_timeout > 0
            && self
                .sigterm_at
                .is_some_and(|t| t.elapsed() >= Duration::from_secs(self.exit_timeout))
    }

    /// The `state = …` line of `print`.
    pub fn state(&self) -> &'static str {
        match (
            self.child.is_some(),
            self.draining(),
            self.next_spawn.is_some(),
        ) {
            (true, true, _) => "SIGTERMed",
            (true, false, _) => "running",
            (false, false, true) => "spawn scheduled",
            _ => "not running",
        }
    }

    /// Spawns the job with launchd's environment: its defaults, then the plist's variables.
    /// A program, log path or working directory that cannot be used ends as exit 78.
    pub fn spawn(&mut self, home: &str, user: &str, shell: &str) {
        self.next_spawn = None;
        self.runs += 1;
        self.started_at = Some(Instant::now());
        match self.try_spawn(home, user, shell) {
            Ok(child) => self.child = Some(child),
            Err(()) => {
                self.last_exit = LastExit::Code(EX_CONFIG);
                self.after_exit(false);
            }
        }
    }

    fn try_spawn(&self, home: &str, user: &str, shell: &str) -> Result<Child, ()> {
        let def = &self.def;
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in [
            ("PATH", DEFAULT_PATH),
            ("HOME", home),
            ("USER", user),
            ("LOGNAME", user),
            ("SHELL", shell),
            ("TMPDIR", "/tmp"),
            ("XPC_FLAGS", "0x0"),
        ] {
            env.insert(k.into(), v.into());
        }
        env.insert("XPC_SERVICE_NAME".into(), def.label.clone());
        if self.domain.starts_with("gui/") {
            env.insert(
                "SSH_AUTH_SOCK".into(),
                "/private/tmp/launchd-sim/Listeners".into(),
            );
        }
        env.extend(def.environment.clone());
        let open = |p: &Option<String>| -> Result<Stdio, ()> {
            match p {
                None => Ok(Stdio::null()),
                Some(path) => OpenOptions::new()
                    .create(true)
                    .append(true)
                    .mode(0o644)
                    .open(path)
                    .map(Stdio::from)
                    .map_err(|_| ()),
            }
        };
        let stdout = open(&def.stdout_path)?;
        let stderr = open(&def.stderr_path)?;
        let mut cmd = Command::new(&def.program_arguments[0]);
        cmd.args(&def.program_arguments[1..])
            .env_clear()
            .envs(&env)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        match &def.working_directory {
            Some(dir) if Path::new(dir).is_dir() => {
                cmd.current_dir(dir);
            }
            Some(_) => return Err(()),
            None => {
                cmd.current_dir("/");
            }
        }
        #[allow(unsafe_code)]
        // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
        // calls are allowed; setsid(2) is one, and the closure touches no memory of the parent.
        // Each job leads its own session, as under launchd.
        unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setsid()?;
                Ok(())
            });
        }
        cmd.spawn().map_err(|_| ())
    }

    /// Reaps the child if it exited; returns whether it did.
    pub fn reap(&mut self) -> bool {
        let Some(child) = self.child.as_mut() else {
            return false;
        };
        let Ok(Some(status)) = child.try_wait() else {
            return false;
        };
        self.child = None;
        self.last_exit = match (status.code(), status.signal()) {
            (Some(c), _) => LastExit::Code(c),
            (None, Some(s)) => LastExit::Signal(s),
            _ => LastExit::Code(0),
        };
        let clean = self.last_exit == LastExit::Code(0);
        self.after_exit(clean);
        true
    }

    /// After an instance ends: drain, or KeepAlive with ThrottleInterval as a minimum runtime.
    fn after_exit(&mut self, clean: bool) {
        if self.draining() {
            self.drained_at = Some(Instant::now());
            return;
        }
        if clean {
            self.successive_crashes = 0;
        } else {
            self.successive_crashes += 1;
        }
        if self.def.keep_alive {
            let ran = self.started_at.map_or(Duration::ZERO, |t| t.elapsed());
            let min = Duration::from_secs(self.def.throttle_interval);
            self.next_spawn = Some(Instant::now() + min.saturating_sub(ran));
        }
    }

    /// Sends a signal to the running instance, if any. The pid is a child this daemon spawned
    /// and has not reaped, so it cannot have been reused.
    pub fn signal(&self, sig: Signal) {
        if let Some(pid) = self.pid() {
            let _ = kill_pid(pid, sig);
        }
    }

    /// Renders `launchctl print <domain>/<label>`. `extra_env` are keys launchd adds to the
    /// printed `environment` block of its own (the definition's keys win on a clash).
    pub fn print(&self, extra_env: &[(String, String)]) -> String {
        let d = &self.def;
        let mut o = format!("{}/{} = {{\n", self.domain, d.label);
        o += &format!("\tactive count = {}\n", u32::from(self.child.is_some()));
        o += &format!("\tpath = {}\n", d.plist_path);
        o += "\ttype = LaunchAgent\n";
        o += &format!("\tstate = {}\n", self.state());
        o += &format!("\tprogram = {}\n", d.program_arguments[0]);
        o += "\targuments = {\n";
        for a in &d.program_arguments {
            o += &format!("\t\t{a}\n");
        }
        o += "\t}\n";
        if let Some(w) = &d.working_directory {
            o += &format!("\tworking directory = {w}\n");
        }
        if let Some(p) = &d.stdout_path {
            o += &format!("\tstdout path = {p}\n");
        }
        if let Some(p) = &d.stderr_path {
            o += &format!("\tstderr path = {p}\n");
        }
        o += &format!("\tdefault environment = {{\n\t\tPATH => {DEFAULT_PATH}\n\t}}\n");
        o += "\tenvironment = {\n";
        let mut env = d.environment.clone();
        env.insert("XPC_SERVICE_NAME".into(), d.label.clone());
        for (k, v) in extra_env {
            env.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for (k, v) in &env {
            o += &format!("\t\t{k} => {v}\n");
        }
        o += "\t}\n";
        o += &format!("\tdomain = {} [100020]\n", self.domain);
        o += &format!("\texit timeout = {}\n", self.exit_timeout);
        o += &format!("\truns = {}\n", self.runs);
        if let Some(pid) = self.pid() {
            o += &format!("\tpid = {pid}\n");
        }
        if self.successive_crashes > 0 && self.next_spawn.is_some() {
            o += &format!("\tsuccessive crashes = {}\n", self.successive_crashes);
        }
        match self.last_exit {
            LastExit::Never => o += "\tlast exit code = (never exited)\n",
            LastExit::Code(EX_CONFIG) => o += "\tlast exit code = 78: EX_CONFIG\n",
            LastExit::Code(c) => o += &format!("\tlast exit code = {c}\n"),
            // After a signal death launchd prints this line instead of `last exit code`.
            LastExit::Signal(s) => {
                o += &format!("\tlast terminating signal = {}: {s}\n", signal_name(s));
            }
        }
        let mut props = vec![];
        if d.keep_alive {
            props.push("keepalive");
        }
        if d.run_at_load {
            props.push("runatload");
        }
        o += &format!("\tproperties = {}\n", props.join(" | "));
        o += "}\n";
        o
    }
}

/// Signals one process. A pid that does not fit a positive `pid_t` is refused: 0 and negative
/// values would signal a whole process group (-1: every process we may signal).
pub fn kill_pid(pid: u32, sig: Signal) -> nix::Result<()> {
    match i32::try_from(pid) {
        Ok(p) if p > 0 => kill(Pid::from_raw(p), sig),
        _ => Err(Errno::EINVAL),
    }
}

/// The signal's description as macOS's `strsignal` words it (`Terminated: 15`).
fn signal_name(sig: i32) -> &'static str {
    match Signal::try_from(sig) {
        Ok(Signal::SIGHUP) => "Hangup",
        Ok(Signal::SIGINT) => "Interrupt",
        Ok(Signal::SIGQUIT) => "Quit",
        Ok(Signal::SIGILL) => "Illegal instruction",
        Ok(Signal::SIGTRAP) => "Trace/BPT trap",
        Ok(Signal::SIGABRT) => "Abort trap",
        Ok(Signal::SIGBUS) => "Bus error",
        Ok(Signal::SIGFPE) => "Floating point exception",
        Ok(Signal::SIGKILL) => "Killed",
        Ok(Signal::SIGUSR1) => "User defined signal 1",
        Ok(Signal::SIGSEGV) => "Segmentation fault",
        Ok(Signal::SIGUSR2) => "User defined signal 2",
        Ok(Signal::SIGPIPE) => "Broken pipe",
        Ok(Signal::SIGALRM) => "Alarm clock",
        Ok(Signal::SIGTERM) => "Terminated",
        _ => "Unknown signal",
    }
}
