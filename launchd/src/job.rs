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

/// The audit session id `print` shows for the console login (`domain = gui/501 [100057]`).
const ASID: u32 = 100057;
/// The `SSH_AUTH_SOCK` the GUI session gives its jobs.
const SIM_SSH_AUTH_SOCK: &str = "/private/tmp/launchd-sim/Listeners";
/// launchd's default PATH for jobs.
pub const DEFAULT_PATH: &str = "/usr/bin:/bin:/usr/sbin:/sbin";
/// How long launchd waits after SIGTERM before SIGKILL, in seconds, for agents that do not set
/// `ExitTimeOut` (`print` shows `exit timeout = 5`).
pub const EXIT_TIMEOUT_SECS: u64 = 5;
/// launchd's `EX_CONFIG`: the program, a log path or the working directory could not be used.
pub const EX_CONFIG: i32 = 78;
/// How long after the kernel reports an exit launchd goes on showing the instance as running,
/// unless `LAUNCHD_SIM_EXIT_NOTICE_MS` says otherwise (see the README for why this value).
pub const DEFAULT_EXIT_NOTICE_MS: u64 = 150;
/// How long a new instance shows `state = xpcproxy` (launchd's trampoline, which execs the
/// program over itself, keeping the pid) before `running`, unless `LAUNCHD_SIM_SPAWNING_MS`
/// says otherwise.
pub const DEFAULT_SPAWNING_MS: u64 = 50;

/// `LAUNCHD_SIM_THROTTLE_SCALE=F`: the factor on every ThrottleInterval wait (a finite number,
/// 0 or more; `0.1` makes launchd's 10 s one second). `print` still shows the definition's
/// interval: only the wait is scaled, so tests need not sit through it.
pub fn throttle_scale(knob: Option<&String>) -> Option<f64> {
    knob.and_then(|v| v.parse::<f64>().ok())
        .filter(|f| f.is_finite() && *f >= 0.0)
}

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
    /// No `Program` key: launchd takes the program from `ProgramArguments` and says so in
    /// `properties` (`inferred program`).
    pub inferred_program: bool,
    /// `StartCalendarInterval` as a dictionary (`Hour`, `Minute`, …): shown by `print` as an
    /// event trigger. It fires nothing here.
    pub calendar: Vec<(String, i64)>,
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
    // The directory that holds it, by the same rule (owned by the user, no group or world
    // writes) **[unverified]**: launchctl(1) states the rule for the file.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let d = std::fs::metadata(dir).map_err(|_| 2)?;
        if d.uid() != me || d.mode() & 0o022 != 0 {
            return Err(122);
        }
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
        inferred_program: !d.contains_key("Program"),
        calendar: d
            .get("StartCalendarInterval")
            .and_then(Value::as_dictionary)
            .map(|c| {
                c.iter()
                    .filter_map(|(k, v)| v.as_signed_integer().map(|n| (k.clone(), n)))
                    .collect()
            })
            .unwrap_or_default(),
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

/// An exit the kernel has already reported (the process is reaped, its pid gone) that launchd
/// has not processed yet: until `noticed_at`, `print` still shows the old pid as running and
/// `kickstart` answers 37.
#[derive(Debug, Clone, Copy)]
pub struct UnnoticedExit {
    pub pid: u32,
    pub exit: LastExit,
    pub noticed_at: Instant,
}

/// A loaded job and what it is doing.
pub struct Job {
    pub def: Definition,
    pub domain: String,
    /// The live, not yet reaped process.
    pub child: Option<Child>,
    /// A process that is gone from the kernel while launchd still counts it as running.
    pub unnoticed: Option<UnnoticedExit>,
    /// The delay between the kernel's exit and launchd's handling of it.
    pub exit_notice: Duration,
    /// How long a new instance stays in `state = xpcproxy`.
    pub spawning: Duration,
    /// The factor on ThrottleInterval's wait (`LAUNCHD_SIM_THROTTLE_SCALE`; 1: launchd's).
    pub throttle_scale: f64,
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
    /// Whether the last attempt could not even start the program (`job state = spawn failed`).
    pub spawn_failed: bool,
    /// The IDs `print` shows for the job's resource coalition (the jetsam one is the next).
    pub coalition: u32,
    /// What `launchctl setenv` gave every job of the domain (`LAUNCHD_SIM_SETENV` at load):
    /// after launchd's defaults, before the plist's variables.
    pub setenv: Vec<(String, String)>,
}

/// launchd numbers coalitions as it creates them; the simulator hands out IDs in load order.
static NEXT_COALITION: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1622);

impl Job {
    /// A job loaded now; `default_exit_timeout` applies when the plist sets no `ExitTimeOut`.
    pub fn new(
        def: Definition,
        domain: String,
        default_exit_timeout: u64,
        exit_notice: Duration,
        spawning: Duration,
    ) -> Job {
        Job {
            exit_timeout: def.exit_timeout.unwrap_or(default_exit_timeout),
            def,
            domain,
            child: None,
            unnoticed: None,
            exit_notice,
            spawning,
            throttle_scale: 1.0,
            started_at: None,
            runs: 0,
            last_exit: LastExit::Never,
            successive_crashes: 0,
            next_spawn: None,
            sigterm_at: None,
            drained_at: None,
            spawn_failed: false,
            coalition: NEXT_COALITION.fetch_add(2, std::sync::atomic::Ordering::Relaxed),
            setenv: vec![],
        }
    }

    /// The pid launchd shows: the live process's, or that of one whose exit launchd has not
    /// processed yet (gone from the kernel already).
    pub fn pid(&self) -> Option<u32> {
        self.child
            .as_ref()
            .map(Child::id)
            .or(self.unnoticed.map(|u| u.pid))
    }

    /// Whether launchd counts an instance as running (it may be gone from the kernel already).
    pub fn running(&self) -> bool {
        self.child.is_some() || self.unnoticed.is_some()
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

    /// Whether the live instance is young enough to be still in launchd's `xpcproxy` state.
    fn in_xpcproxy(&self) -> bool {
        self.started_at.is_some_and(|t| t.elapsed() < self.spawning)
    }

    /// The `state = …` line of `print`.
    pub fn state(&self) -> &'static str {
        match (self.running(), self.draining(), self.next_spawn.is_some()) {
            (true, true, _) => "SIGTERMed",
            // xpcproxy, the trampoline launchd spawns, is the process (same pid) until it has
            // exec'd the program (NixOS/nix#5698's launchd.log; siq-agent-security#66).
            (true, false, _) if self.child.is_some() && self.in_xpcproxy() => "xpcproxy",
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
            Ok(child) => {
                self.child = Some(child);
                self.spawn_failed = false;
            }
            Err(()) => {
                self.spawn_failed = true;
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
            env.insert("SSH_AUTH_SOCK".into(), SIM_SSH_AUTH_SOCK.into());
        }
        env.extend(self.setenv.iter().cloned());
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

    /// Reaps the child if it exited; returns whether it did. The pid is gone from the kernel at
    /// once, but launchd handles the exit only `exit_notice` later (see `notice_due`).
    pub fn reap(&mut self) -> bool {
        let Some(child) = self.child.as_mut() else {
            return false;
        };
        let Ok(Some(status)) = child.try_wait() else {
            return false;
        };
        let pid = child.id();
        self.child = None;
        let exit = match (status.code(), status.signal()) {
            (Some(c), _) => LastExit::Code(c),
            (None, Some(s)) => LastExit::Signal(s),
            _ => LastExit::Code(0),
        };
        self.unnoticed = Some(UnnoticedExit {
            pid,
            exit,
            noticed_at: Instant::now() + self.exit_notice,
        });
        if self.exit_notice.is_zero() {
            self.notice_now();
        }
        true
    }

    /// Handles a reaped exit once its notice delay has passed; returns whether it did.
    pub fn notice_due(&mut self, now: Instant) -> bool {
        if self.unnoticed.is_some_and(|u| now >= u.noticed_at) {
            self.notice_now();
            return true;
        }
        false
    }

    /// Handles a reaped exit now: the last exit, then KeepAlive's throttle or the drain.
    pub fn notice_now(&mut self) {
        if let Some(u) = self.unnoticed.take() {
            self.last_exit = u.exit;
            self.after_exit(u.exit == LastExit::Code(0));
        }
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
            let min = Duration::from_secs(self.def.throttle_interval).mul_f64(self.throttle_scale);
            self.next_spawn = Some(Instant::now() + min.saturating_sub(ran));
        }
    }

    /// Sends a signal to the live instance, if any. The pid is a child this daemon spawned and
    /// has not reaped, so it cannot have been reused; a reaped one is never signalled.
    pub fn signal(&self, sig: Signal) {
        if let Some(pid) = self.child.as_ref().map(Child::id) {
            let _ = kill_pid(pid, sig);
        }
    }

    /// The job as `print DOMAIN` and `list` show it.
    pub fn row(&self) -> crate::listing::Row {
        crate::listing::Row {
            pid: self.pid(),
            status: match self.last_exit {
                LastExit::Never => None,
                LastExit::Code(c) => Some(c),
                LastExit::Signal(s) => Some(-s),
            },
            label: self.def.label.clone(),
        }
    }

    /// `job state = …`, a line of its own on recent releases: `running`, `exited`, `spawn
    /// failed` (exit 78 before the program ran) or `uninitialized` (never run).
    fn job_state(&self) -> &'static str {
        if self.running() {
            "running"
        } else if self.spawn_failed {
            "spawn failed"
        } else if self.runs == 0 {
            "uninitialized"
        } else {
            "exited"
        }
    }

    /// Renders `launchctl print <domain>/<label>` in the shape of macOS 14/15 captures (see the
    /// README): groups separated by blank lines, one tab per level, nested blocks (the
    /// environments, the coalitions with their own `state`, event triggers) inside. `extra_env`
    /// are keys launchd adds to the printed `environment` block of its own (the definition's
    /// keys win on a clash).
    pub fn print(&self, extra_env: &[(String, String)]) -> String {
        let d = &self.def;
        let gui = self.domain.starts_with("gui/");
        let mut o = format!("{}/{} = {{\n", self.domain, d.label);
        o += &format!("\tactive count = {}\n", u32::from(self.running()));
        o += &format!("\tpath = {}\n", d.plist_path);
        o += "\ttype = LaunchAgent\n";
        o += &format!("\tstate = {}\n\n", self.state());
        o += &format!("\tprogram = {}\n", d.program_arguments[0]);
        o += "\targuments = {\n";
        for a in &d.program_arguments {
            o += &format!("\t\t{a}\n");
        }
        o += "\t}\n\n";
        if let Some(w) = &d.working_directory {
            o += &format!("\tworking directory = {w}\n\n");
        }
        if let Some(p) = &d.stdout_path {
            o += &format!("\tstdout path = {p}\n");
        }
        if let Some(p) = &d.stderr_path {
            o += &format!("\tstderr path = {p}\n");
        }
        if gui {
            // What the GUI session hands its jobs (the process gets it too, see `try_spawn`).
            o += &format!(
                "\tinherited environment = {{\n\t\tSSH_AUTH_SOCK => {SIM_SSH_AUTH_SOCK}\n\t}}\n\n"
            );
        }
        o += &format!("\tdefault environment = {{\n\t\tPATH => {DEFAULT_PATH}\n\t}}\n\n");
        // launchd's own keys frame the definition's: `OSLogRateLimit` first, `XPC_SERVICE_NAME`
        // last, as in the captures.
        o += "\tenvironment = {\n\t\tOSLogRateLimit => 64\n";
        let mut env = d.environment.clone();
        for (k, v) in extra_env {
            env.entry(k.clone()).or_insert_with(|| v.clone());
        }
        env.remove("OSLogRateLimit");
        let xpc = env
            .remove("XPC_SERVICE_NAME")
            .unwrap_or_else(|| d.label.clone());
        for (k, v) in &env {
            o += &format!("\t\t{k} => {v}\n");
        }
        o += &format!("\t\tXPC_SERVICE_NAME => {xpc}\n\t}}\n\n");
        // The audit session: the console login's in gui/<uid>; user/<uid> prints the bare name.
        if gui {
            o += &format!("\tdomain = {} [{ASID}]\n", self.domain);
        } else {
            o += &format!("\tdomain = {}\n", self.domain);
        }
        o += &format!("\tasid = {ASID}\n");
        o += &format!("\tminimum runtime = {}\n", d.throttle_interval);
        o += &format!("\texit timeout = {}\n", self.exit_timeout);
        o += &format!("\truns = {}\n", self.runs);
        if let Some(pid) = self.pid() {
            o += &format!("\tpid = {pid}\n");
            o += "\timmediate reason = speculative\n\tforks = 0\n\texecs = 1\n\tinitialized = 1\n";
            o += "\ttrampolined = 1\n\tstarted suspended = 0\n\tproxy started suspended = 0\n";
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
        o += "\n";
        if self.runs > 0 {
            // Each has its own `state` and `active count`: only one-tab keys are the job's.
            for (id, kind) in [(self.coalition, "resource"), (self.coalition + 1, "jetsam")] {
                o += &format!(
                    "\t{kind} coalition = {{\n\t\tID = {id}\n\t\ttype = {kind}\n\t\tstate = active\n\t\tactive count = {}\n\t\tname = {}\n\t}}\n\n",
                    u32::from(self.running()),
                    d.label
                );
            }
        }
        if !d.calendar.is_empty() {
            o += &format!(
                "\tevent triggers = {{\n\t\t{}.268435470 => {{\n\t\t\tkeepalive = 0\n\t\t\tservice = {}\n\t\t\tstream = com.apple.launchd.calendarinterval\n\t\t\tmonitor = com.apple.UserEventAgent-Aqua\n\t\t\tdescriptor = {{\n",
                d.label, d.label
            );
            for (k, v) in &d.calendar {
                o += &format!("\t\t\t\t\"{k}\" => {v}\n");
            }
            o += "\t\t\t}\n\t\t}\n\t}\n\n";
        }
        o += "\tspawn type = daemon (3)\n\tjetsam priority = 40\n";
        o += "\tjetsam memory limit (active) = (unlimited)\n\tjetsam memory limit (inactive) = (unlimited)\n";
        o += "\tjetsamproperties category = daemon\n\tjetsam thread limit = 32\n\tcpumon = default\n";
        o += &format!("\tjob state = {}\n\n", self.job_state());
        let mut props = vec![];
        if d.keep_alive {
            props.push("keepalive");
        }
        if d.run_at_load {
            props.push("runatload");
        }
        if d.inferred_program {
            props.push("inferred program");
        }
        // Empty, the line keeps its trailing space: `properties = `.
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
