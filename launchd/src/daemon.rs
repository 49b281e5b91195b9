//! The supervisor daemon: one per state directory, started on demand by the client, owning
//! every loaded job. It exits by itself once no job has been loaded for a moment.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::job::{self, Job};
use crate::listing;
use crate::proto::{self, Reply, Request};
use crate::state;

/// How long the daemon stays with no job loaded before it exits.
const IDLE_EXIT: Duration = Duration::from_millis(750);
/// How long a booted-out label lingers after its process exited, unless a knob says otherwise.
const DEFAULT_DRAIN_MS: u64 = 1000;

struct Daemon {
    state_dir: PathBuf,
    /// Loaded jobs by service target (`gui/501/label`): each domain has its own namespace.
    jobs: BTreeMap<String, Job>,
    home: String,
    user: String,
    shell: String,
    /// The drain time from the last bootout's knobs, by service target.
    drain: BTreeMap<String, Duration>,
}

/// Runs the daemon for `state_dir` until it is idle. Returns at once if another daemon owns it.
pub fn run(state_dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(state_dir)?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(state_dir.join("daemon.lock"))?;
    if lock.try_lock().is_err() {
        return Ok(());
    }
    let sock = state_dir.join("daemon.sock");
    let _ = std::fs::remove_file(&sock);
    let listener = UnixListener::bind(&sock)?;
    listener.set_nonblocking(true)?;
    std::fs::write(
        state_dir.join("daemon.pid"),
        format!("{}\n", std::process::id()),
    )?;
    let (user, shell) = state::passwd();
    let mut d = Daemon {
        state_dir: state_dir.to_owned(),
        jobs: BTreeMap::new(),
        home: std::env::var("HOME").unwrap_or_else(|_| "/".into()),
        user,
        shell,
        drain: BTreeMap::new(),
    };
    let mut idle_since = Some(Instant::now());
    loop {
        loop {
            match listener.accept() {
                Ok((stream, _)) => d.serve(stream),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => break,
            }
        }
        d.tick();
        if d.jobs.is_empty() {
            let since = *idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= IDLE_EXIT {
                break;
            }
        } else {
            idle_since = None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = std::fs::remove_file(&sock);
    let _ = std::fs::remove_file(state_dir.join("daemon.pid"));
    drop(lock);
    Ok(())
}

impl Daemon {
    fn serve(&mut self, stream: UnixStream) {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let mut line = String::new();
        let mut reader = BufReader::new(&stream);
        if reader.read_line(&mut line).is_err() {
            return;
        }
        let reply = match serde_json::from_str::<Request>(&line) {
            Ok(req) => self.handle(&req),
            Err(e) => Reply::raw(64, format!("bad request: {e}\n")),
        };
        let mut out = serde_json::to_string(&reply).unwrap_or_default();
        out.push('\n');
        let mut w = &stream;
        let _ = w.write_all(out.as_bytes());
    }

    fn handle(&mut self, req: &Request) -> Reply {
        // The timing knobs are taken at bootstrap, and any later call that names one changes it
        // for every loaded job (a test may set it on the restart alone).
        let ms = |k: &str| {
            req.knobs
                .get(k)
                .and_then(|v| v.parse().ok())
                .map(Duration::from_millis)
        };
        if let Some(d) = ms("LAUNCHD_SIM_EXIT_NOTICE_MS") {
            self.jobs.values_mut().for_each(|j| j.exit_notice = d);
        }
        if let Some(d) = ms("LAUNCHD_SIM_SPAWNING_MS") {
            self.jobs.values_mut().for_each(|j| j.spawning = d);
        }
        if let Some(f) = job::throttle_scale(req.knobs.get("LAUNCHD_SIM_THROTTLE_SCALE")) {
            self.jobs.values_mut().for_each(|j| j.throttle_scale = f);
        }
        let args: Vec<&str> = req.args.iter().map(String::as_str).collect();
        match args.as_slice() {
            ["bootstrap", domain, plist] => self.bootstrap(domain, plist, req),
            ["bootout", target] => self.bootout_label(target, req),
            ["bootout", domain, plist] => self.bootout_plist(domain, plist, req),
            ["kickstart", rest @ ..] => self.kickstart(rest, req),
            ["kill", signal, target] => self.kill(signal, target, req),
            ["print", target] => self.print(target, req),
            ["login", domain] => self.login(domain, req),
            ["list"] => self.list(req),
            _ => Reply::usage(&format!("unsupported arguments: {}", req.args.join(" "))),
        }
    }

    fn bootstrap(&mut self, domain: &str, plist: &str, req: &Request) -> Reply {
        const VERB: &str = "Bootstrap";
        let Some((d, None)) = proto::parse_target(domain) else {
            return Reply::usage("bootstrap <domain-target> <path>");
        };
        if let Err(code) = proto::check_domain(&d, &req.knobs) {
            return proto::domain_error("bootstrap", &d, code);
        }
        if let Some(code) = state::take_injected_failure(&self.state_dir, &req.knobs) {
            return Reply::failed(VERB, code);
        }
        // Nobody (or another user) at the console: the GUI domain answers as if it were there,
        // but has no Aqua session of this user to load into, and says a bare 5, not 125
        // (psimaker/vaultsync#89, Homebrew/homebrew-services#528).
        if d.kind == "gui" && proto::console_not_callers(&req.knobs, d.uid) {
            return Reply::failed(VERB, 5);
        }
        let def = match job::load(Path::new(plist)) {
            Ok(def) => def,
            // A plist refused for its owner or mode: 122 by default, `LAUNCHD_SIM_OWNERSHIP_CODE`
            // (5 is what recent releases print to a user; README).
            Err(122) => {
                return Reply::failed(VERB, knob_code(req, "LAUNCHD_SIM_OWNERSHIP_CODE", 122))
            }
            Err(code) => return Reply::failed(VERB, code),
        };
        match self.load(&d, def, req) {
            Ok(()) => Reply::ok(""),
            Err(code) => Reply::failed(VERB, code),
        }
    }

    /// Loads a definition into domain `d` as `bootstrap` does, or says why not (the exit code).
    fn load(&mut self, d: &proto::Domain, def: job::Definition, req: &Request) -> Result<(), i32> {
        if !def.session_types.iter().any(|t| t == d.session_type()) {
            // "Service cannot load in requested session": launchctl reports it as 5 (or 125).
            return Err(knob_code(req, "LAUNCHD_SIM_SESSION_CODE", 5));
        }
        if state::is_disabled(&self.state_dir, d.uid, &def.label) {
            return Err(knob_code(req, "LAUNCHD_SIM_DISABLED_CODE", 5));
        }
        // Switched off in Login Items (or never approved): a bare 5, and `enable` does not
        // undo it (docs/launchd.md, "Verbs").
        if state::login_item_off(&self.state_dir, d.uid, &def.label) {
            return Err(5);
        }
        // A missing log directory, refused at bootstrap when `LAUNCHD_SIM_LOG_DIR_CODE` says
        // so (else the spawn ends with 78, as before).
        if let Some(code) = req
            .knobs
            .get("LAUNCHD_SIM_LOG_DIR_CODE")
            .and_then(|v| v.parse().ok())
        {
            let missing = [&def.stdout_path, &def.stderr_path]
                .into_iter()
                .flatten()
                .any(|p| !Path::new(p).parent().is_some_and(Path::is_dir));
            if missing {
                return Err(code);
            }
        }
        let key = d.target(&def.label);
        if self.jobs.contains_key(&key) {
            // Loaded, or still draining after a bootout.
            return Err(knob_code(req, "LAUNCHD_SIM_BUSY_CODE", 5));
        }
        // The system's default exit timeout for agents, as launchd had it at load time.
        let exit_timeout = req
            .knobs
            .get("LAUNCHD_SIM_EXIT_TIMEOUT")
            .and_then(|v| v.parse().ok())
            .unwrap_or(job::EXIT_TIMEOUT_SECS);
        // How long launchd lags behind the kernel in handling an exit, taken at load time.
        let exit_notice = Duration::from_millis(
            req.knobs
                .get("LAUNCHD_SIM_EXIT_NOTICE_MS")
                .and_then(|v| v.parse().ok())
                .unwrap_or(job::DEFAULT_EXIT_NOTICE_MS),
        );
        // How long a new instance shows `state = xpcproxy`, taken at load time.
        let spawning = Duration::from_millis(
            req.knobs
                .get("LAUNCHD_SIM_SPAWNING_MS")
                .and_then(|v| v.parse().ok())
                .unwrap_or(job::DEFAULT_SPAWNING_MS),
        );
        let mut job = Job::new(def, d.name(), exit_timeout, exit_notice, spawning);
        // The factor on ThrottleInterval's wait, taken at load time.
        job.throttle_scale =
            job::throttle_scale(req.knobs.get("LAUNCHD_SIM_THROTTLE_SCALE")).unwrap_or(1.0);
        job.setenv = pairs(req, "LAUNCHD_SIM_SETENV");
        if job.def.run_at_load {
            job.spawn(&self.home, &self.user, &self.shell);
        }
        self.jobs.insert(key, job);
        Ok(())
    }

    /// `login gui/<uid>` (simulator only): what launchd does at a console login. Every plist in
    /// `~/Library/LaunchAgents` whose session types include `Aqua` (a plist without
    /// `LimitLoadToSessionType` is Aqua only) is loaded into `gui/<uid>`, unless that domain has
    /// it disabled or loaded already, whatever runs in `user/<uid>`: a copy there keeps running.
    /// A plist launchd would refuse is skipped, as launchd only logs it. Prints nothing.
    fn login(&mut self, domain: &str, req: &Request) -> Reply {
        let Some((d, None)) = proto::parse_target(domain).filter(|(d, _)| d.kind == "gui") else {
            return Reply::usage("login gui/<uid>");
        };
        if let Err(code) = proto::check_domain(&d, &req.knobs) {
            return Reply::failed("Login", code);
        }
        let dir = Path::new(&self.home).join("Library/LaunchAgents");
        let mut plists: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "plist"))
                    .collect()
            })
            .unwrap_or_default();
        plists.sort();
        for plist in plists {
            if let Ok(def) = job::load(&plist) {
                let _ = self.load(&d, def, req);
            }
        }
        Reply::ok("")
    }

    fn bootout_label(&mut self, target: &str, req: &Request) -> Reply {
        let Some((d, Some(label))) = proto::parse_target(target) else {
            return Reply::bootout_usage();
        };
        if let Err(code) = proto::check_domain(&d, &req.knobs) {
            return proto::domain_error("bootout", &d, code);
        }
        self.bootout(
            &d.target(&label),
            req,
            proto::bootout_not_loaded_code(&req.knobs),
        )
    }

    fn bootout_plist(&mut self, domain: &str, plist: &str, req: &Request) -> Reply {
        let Some((d, None)) = proto::parse_target(domain) else {
            return Reply::bootout_usage();
        };
        if let Err(code) = proto::check_domain(&d, &req.knobs) {
            return proto::domain_error("bootout", &d, code);
        }
        if let Some(missing) = proto::missing_plist(plist) {
            return missing;
        }
        // launchd finds the service by the plist's Label; a file it cannot read as a plist is
        // matched by the path a job was loaded from.
        let name = d.name();
        let key = match job::read_label(Path::new(plist)) {
            Some(label) => d.target(&label),
            None => self
                .jobs
                .iter()
                .find(|(_, j)| j.domain == name && j.def.plist_path == plist)
                .map_or_else(String::new, |(k, _)| k.clone()),
        };
        // Not loaded: 113 in the plist form (nix-installer#520), or the knob's code (5 on
        // Darwin 27, jdx/mise#10965).
        let missing = req
            .knobs
            .get("LAUNCHD_SIM_BOOTOUT_NOT_LOADED_CODE")
            .map_or(113, |_| proto::bootout_not_loaded_code(&req.knobs));
        self.bootout(&key, req, missing)
    }

    /// Starts draining: SIGTERM now, SIGKILL after the exit timeout; the label lingers until the
    /// process is gone and the drain time has passed. Returns before the process exits.
    /// `missing` is the answer for a label that is not loaded (or already booting out).
    ///
    /// `LAUNCHD_SIM_BOOTOUT_IN_PROGRESS=N`: the next N bootouts that find the label (loaded or
    /// draining) answer 36 "Operation now in progress" while the bootout goes on regardless.
    fn bootout(&mut self, key: &str, req: &Request, missing: i32) -> Reply {
        let drain = Duration::from_millis(
            req.knobs
                .get("LAUNCHD_SIM_DRAIN_MS")
                .and_then(|v| v.parse().ok())
                .unwrap_or(DEFAULT_DRAIN_MS),
        );
        let Some(job) = self.jobs.get_mut(key) else {
            return Reply::failed("Boot-out", missing);
        };
        let in_progress = req
            .knobs
            .get("LAUNCHD_SIM_BOOTOUT_IN_PROGRESS")
            .and_then(|v| v.parse().ok())
            .is_some_and(|n| state::take_counted(&self.state_dir, "bootout-in-progress.count", n));
        let answer = if in_progress {
            Reply::failed("Boot-out", 36)
        } else {
            Reply::ok("")
        };
        if job.draining() {
            return if in_progress {
                answer
            } else {
                Reply::failed("Boot-out", missing)
            };
        }
        job.sigterm_at = Some(Instant::now());
        job.next_spawn = None;
        if job.running() {
            // An instance launchd still counts as running but that is gone already gets no
            // signal; its pending exit then ends the drain.
            job.signal(Signal::SIGTERM);
        } else {
            job.drained_at = Some(Instant::now());
        }
        self.drain.insert(key.to_owned(), drain);
        answer
    }

    fn kickstart(&mut self, rest: &[&str], req: &Request) -> Reply {
        let mut kill = false;
        let mut print_pid = false;
        let mut target = None;
        for a in rest {
            match a.strip_prefix('-') {
                // getopt("pks"): flags may be combined (`-kp`).
                Some(flags) if proto::kickstart_flags(a) => {
                    kill |= flags.contains('k');
                    print_pid |= flags.contains('p');
                }
                None if target.is_none() => target = Some(*a),
                _ => return Reply::usage("kickstart [-k] [-p] <service-target>"),
            }
        }
        let Some((d, Some(label))) = target.and_then(proto::parse_target) else {
            return Reply::usage("kickstart [-k] [-p] <service-target>");
        };
        if let Err(code) = proto::check_domain(&d, &req.knobs) {
            return proto::domain_error("kickstart", &d, code);
        }
        let (home, user, shell) = (self.home.clone(), self.user.clone(), self.shell.clone());
        let Some(job) = self
            .jobs
            .get_mut(&d.target(&label))
            .filter(|j| !j.draining())
        else {
            return proto::not_found(&label, &d);
        };
        if job.running() {
            if !kill {
                // Already running (as launchd sees it: the process may be gone from the kernel
                // while its exit is not processed yet): EALREADY, and launchctl prints nothing
                // for it (ProcursusTeam/launchctl kickstart.c).
                return match knob_code(req, "LAUNCHD_SIM_KICKSTART_RUNNING", 37) {
                    0 => Reply::ok(pid_line(job.pid(), print_pid, req.stdout_tty)),
                    37 => Reply::raw(37, ""),
                    code => Reply::raw(
                        code,
                        format!(
                            "Could not kickstart service \"{label}\": {code}: {}\n",
                            proto::strerror(code)
                        ),
                    ),
                };
            }
            // `-k` kills with SIGKILL: the instance gets no chance to shut down cleanly, and
            // `print` then shows `last terminating signal = Killed: 9` (kirodotdev/KiroCrew#1562).
            job.signal(Signal::SIGKILL);
            let deadline = Instant::now() + Duration::from_secs(5);
            while job.child.is_some() && !job.reap() {
                if Instant::now() >= deadline {
                    let pid = job.pid().unwrap_or_default();
                    return Reply::raw(1, format!("launchctl-sim: pid {pid} survived SIGKILL\n"));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            // kickstart -k waits for the exit itself, so it does not lag behind the kernel.
            job.notice_now();
        }
        // Kickstart runs the captured definition; it never re-reads the plist.
        job.spawn(&home, &user, &shell);
        Reply::ok(pid_line(job.pid(), print_pid, req.stdout_tty))
    }

    /// `kill SIGNAL TARGET`: signals the running instance and nothing else; what happens next
    /// (KeepAlive's respawn after the throttle, a drain) follows from the exit.
    fn kill(&mut self, signal: &str, target: &str, req: &Request) -> Reply {
        let Some(sig) = proto::parse_signal(signal) else {
            return Reply::raw(64, "Invalid signal.\n");
        };
        let Some((d, Some(label))) = proto::parse_target(target) else {
            return Reply::usage("kill <signal-name|signal-number> <service-target>");
        };
        if let Err(code) = proto::check_domain(&d, &req.knobs) {
            return proto::domain_error("kill", &d, code);
        }
        let Some(job) = self.jobs.get(&d.target(&label)) else {
            // The clone's kill.c prints no "Bad request." line of its own for 113.
            return Reply::raw(113, proto::not_found_line(&label, &d));
        };
        match job.pid() {
            // ESRCH, worded as ProcursusTeam/launchctl kill.c words it.
            None => Reply::raw(3, "No process to signal.\n"),
            Some(_) => {
                job.signal(sig);
                Reply::ok("")
            }
        }
    }

    fn print(&mut self, target: &str, req: &Request) -> Reply {
        let Some((d, label)) = proto::parse_target(target) else {
            return Reply::usage("print <domain-target> | <service-target>");
        };
        if let Err(code) = proto::check_domain(&d, &req.knobs) {
            return proto::domain_error("print", &d, code);
        }
        match label {
            None => {
                let overrides = state::overrides(&self.state_dir, d.uid);
                Reply::ok(listing::domain_print(
                    &d,
                    &self.rows(&d),
                    overrides.as_ref(),
                    req.knobs
                        .get("LAUNCHD_SIM_DOMAIN_EXTRA_ROWS")
                        .map(String::as_str),
                ))
            }
            Some(label) => match self.jobs.get(&d.target(&label)) {
                Some(job) => Reply::ok(job.print(&extra_env(req))),
                None => proto::not_found(&label, &d),
            },
        }
    }

    /// The jobs of domain `d` as the listings show them (a draining label is still listed).
    fn rows(&self, d: &proto::Domain) -> Vec<listing::Row> {
        let name = d.name();
        self.jobs
            .values()
            .filter(|j| j.domain == name)
            .map(Job::row)
            .collect()
    }

    /// `launchctl list` (legacy): the jobs of the session launchctl runs in: `gui/<uid>`
    /// when there is one, else `user/<uid>` **[unverified]**.
    fn list(&self, req: &Request) -> Reply {
        let d = proto::session_domain(&req.knobs);
        Reply::ok(listing::list(&self.rows(&d)))
    }

    /// Reaps exits, respawns KeepAlive jobs after their throttle, finishes drains.
    fn tick(&mut self) {
        let now = Instant::now();
        let mut gone = vec![];
        for (key, job) in self.jobs.iter_mut() {
            job.reap();
            job.notice_due(now);
            if !job.running() && !job.draining() {
                if let Some(at) = job.next_spawn {
                    if now >= at {
                        job.spawn(&self.home, &self.user, &self.shell);
                    }
                }
            }
            if job.draining() {
                if job.past_exit_timeout() {
                    job.signal(Signal::SIGKILL);
                }
                let linger = self.drain.get(key).copied().unwrap_or_default();
                if job.drained_at.is_some_and(|t| t.elapsed() >= linger) {
                    gone.push(key.clone());
                }
            }
        }
        for key in gone {
            self.jobs.remove(&key);
            self.drain.remove(&key);
        }
    }
}

/// `LAUNCHD_SIM_PRINT_EXTRA_ENV=K=V[,K=V…]`: keys launchd adds to the printed `environment`
/// block (e.g. `MallocSpaceEfficient => 1` on Apple jobs). Printed only; the process does not get
/// them.
fn extra_env(req: &Request) -> Vec<(String, String)> {
    pairs(req, "LAUNCHD_SIM_PRINT_EXTRA_ENV")
}

/// A knob of `K=V[,K=V…]` pairs. `LAUNCHD_SIM_SETENV` is what `launchctl setenv` would have
/// given every job of the domain, read when a job is loaded: the job's process gets it after
/// launchd's defaults and before the plist's variables.
fn pairs(req: &Request, knob: &str) -> Vec<(String, String)> {
    req.knobs
        .get(knob)
        .map(|spec| {
            spec.split(',')
                .filter_map(|kv| kv.split_once('='))
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

fn knob_code(req: &Request, knob: &str, default: i32) -> i32 {
    req.knobs
        .get(knob)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `kickstart -p`: `service spawned with pid: N` on a terminal, a bare `N` on a pipe.
fn pid_line(pid: Option<u32>, print_pid: bool, tty: bool) -> String {
    match (print_pid, pid) {
        (true, Some(pid)) if tty => format!("service spawned with pid: {pid}\n"),
        (true, Some(pid)) => format!("{pid}\n"),
        _ => String::new(),
    }
}
