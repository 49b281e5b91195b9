#![cfg(target_os = "linux")]
//! A real `systemd --user` for tests (docs/systemd.md, "A real user manager in tests"): no
//! systemd PID 1 and no login session needed.
//!
//! As root: a cgroup directory of the test's own (`systemd/NAME` and `unified/NAME` on a
//! hybrid hierarchy, one `NAME` on pure cgroup2, `systemd/NAME` on a legacy one), then, in a
//! private mount namespace (`unshare --mount --propagation private`), a shell that moves itself
//! into that cgroup, mounts a tmpfs on `/run/systemd` with `/run/systemd/system` in it (the
//! manager's "booted" check) and execs `/lib/systemd/systemd --user` with a clean environment
//! (`HOME`, a 0700 `XDG_RUNTIME_DIR`, `PATH`, `USER`, `LOGNAME`). Clients run outside the
//! namespace with the same `HOME` and `XDG_RUNTIME_DIR`; the manager is ready when
//! `$XDG_RUNTIME_DIR/systemd/private` answers.
//!
//! [`UserManager`]'s drop asks it to `exit`, then SIGTERMs the pid it started, waits, and
//! removes the cgroup directories deepest first. [`shared`] hands every concurrent test the
//! same manager (each test its own units); the last one to let go stops it. The manager is
//! started with a parent-death signal (`setpriv --pdeathsig TERM`, from a thread that lives as
//! long as the test process), so an aborted test run does not leave it behind.
//!
//! Where the kernel refuses (a read-only cgroupfs, `unshare` not permitted) or systemd is not
//! installed, [`shared`] returns why, and the test says `skipped: …` ([`skip`]), never a
//! silent pass; with `OYSTER_IT_REQUIRE_USER_MANAGER=1` a skip is a failure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// The manager binary.
pub const SYSTEMD: &str = "/lib/systemd/systemd";
/// Set to make a skip a failure (a CI machine where the real-manager tests must run).
pub const REQUIRE_VAR: &str = "OYSTER_IT_REQUIRE_USER_MANAGER";
const SYSTEMCTL: &str = "/usr/bin/systemctl";
const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// How long the manager may take to answer (it takes about 0.1 s).
const READY_WITHIN: Duration = Duration::from_secs(10);

/// Runs in the new namespace: `$1` HOME, `$2` XDG_RUNTIME_DIR, `$3` the user, then the
/// `cgroup.procs` files to join.
const SCRIPT: &str = r#"set -e
h=$1 r=$2 u=$3
shift 3
for procs in "$@"; do echo $$ > "$procs"; done
if [ -d /run/systemd ]; then
  mount -t tmpfs -o mode=0755 oyster-it /run/systemd
else
  mount -t tmpfs -o mode=0755 oyster-it /run
  mkdir /run/systemd
fi
mkdir -p /run/systemd/system
exec env -i HOME="$h" XDG_RUNTIME_DIR="$r" USER="$u" LOGNAME="$u" \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /lib/systemd/systemd --user
"#;

/// A running `systemd --user` of this test process.
pub struct UserManager {
    pub home: PathBuf,
    pub runtime_dir: PathBuf,
    /// The manager's pid (setpriv, unshare and sh each exec the next).
    pub pid: u32,
    /// How long it took to answer.
    pub started_in: Duration,
    child: Mutex<Child>,
    cgroups: Vec<PathBuf>,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

/// The manager every concurrent test shares; started on first use, stopped when the last
/// test holding it lets go. `Err`: why there can be none here (say it with [`skip`]).
pub fn shared() -> Result<Arc<UserManager>, String> {
    static SHARED: Mutex<Weak<UserManager>> = Mutex::new(Weak::new());
    let mut slot = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(m) = slot.upgrade() {
        return Ok(m);
    }
    let m = Arc::new(UserManager::start()?);
    *slot = Arc::downgrade(&m);
    Ok(m)
}

/// Says why a test did not run; a failure instead when [`REQUIRE_VAR`] is set.
pub fn skip(why: &str) {
    assert!(
        std::env::var_os(REQUIRE_VAR).is_none(),
        "{REQUIRE_VAR} is set, but there is no user manager here: {why}"
    );
    eprintln!("skipped: {why}");
}

impl UserManager {
    /// Starts one (see the module's comment), or says why it cannot.
    pub fn start() -> Result<UserManager, String> {
        // A blank in HOME: every path the manager quotes back (drop-ins, the search path) is
        // read whole, and the unit path, the log and the Host all live under it.
        UserManager::start_in("home dir")
    }

    /// [`UserManager::start`] with a HOME of this name (quotes, `%`, `$` welcome).
    pub fn start_in(home_name: &str) -> Result<UserManager, String> {
        for tool in [SYSTEMD, SYSTEMCTL, "/usr/bin/unshare", "/bin/sh"] {
            if !Path::new(tool).exists() {
                return Err(format!("no {tool} on this machine"));
            }
        }
        let dir =
            tempfile::Builder::new().prefix("oyster-um-").tempdir().map_err(|e| e.to_string())?;
        let home = dir.path().join(home_name);
        let runtime_dir = dir.path().join("run");
        std::fs::create_dir(&home).map_err(|e| e.to_string())?;
        std::fs::create_dir(&runtime_dir).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&runtime_dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .map_err(|e| e.to_string())?;
        let cgroups = make_cgroups()?;
        let log = dir.path().join("manager.log");
        let t0 = Instant::now();
        let child = match spawn(&home, &runtime_dir, &cgroups, &log) {
            Ok(c) => c,
            Err(e) => {
                remove_cgroups(&cgroups);
                return Err(e);
            }
        };
        let mut m = UserManager {
            home,
            runtime_dir,
            pid: child.id(),
            started_in: Duration::ZERO,
            child: Mutex::new(child),
            cgroups,
            log,
            _dir: dir,
        };
        // On an error from here on, dropping `m` stops what was started.
        m.wait_ready()?;
        m.started_in = t0.elapsed();
        Ok(m)
    }

    /// The variables a client of this manager needs: `HOME`, `XDG_RUNTIME_DIR`.
    pub fn env(&self) -> [(&'static str, &Path); 2] {
        [("HOME", &self.home), ("XDG_RUNTIME_DIR", &self.runtime_dir)]
    }

    /// A command for a client of this manager (`systemctl`, `systemd-analyze`).
    pub fn client(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.envs(self.env()).stdin(Stdio::null());
        c
    }

    /// `systemctl --user ARGS` against this manager.
    pub fn systemctl(&self, args: &[&str]) -> std::process::Output {
        self.client(SYSTEMCTL).arg("--user").args(args).output().expect("systemctl runs")
    }

    /// What the manager wrote (for a failure message).
    pub fn log_tail(&self) -> String {
        tail(&self.log)
    }

    /// Polls until the private socket answers and the manager runs; `Err` when the manager died first (the kernel
    /// refused something: its output says what).
    fn wait_ready(&self) -> Result<(), String> {
        let socket = self.runtime_dir.join("systemd/private");
        let t0 = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.lock().unwrap().try_wait() {
                return Err(format!(
                    "systemd --user exited at once ({status}): {}",
                    self.log_tail()
                ));
            }
            if socket.exists() {
                // Answering is not enough: oyster uses a manager only once it is `running` (or
                // `degraded`), and a loaded machine shows `initializing` for a while.
                let out = self.systemctl(&["show", "--property=SystemState", "--value"]);
                let state = String::from_utf8_lossy(&out.stdout);
                if out.status.success() && matches!(state.trim(), "running" | "degraded") {
                    return Ok(());
                }
            }
            assert!(
                t0.elapsed() < READY_WITHIN,
                "systemd --user (pid {}) did not answer within {READY_WITHIN:?}: {}",
                self.pid,
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits up to `bound` for the manager process to end (reaping it).
    fn ended_within(&self, bound: Duration) -> bool {
        let t0 = Instant::now();
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if !matches!(child.try_wait(), Ok(None)) {
                return true;
            }
            if t0.elapsed() >= bound {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for UserManager {
    fn drop(&mut self) {
        let _ = self.systemctl(&["exit"]);
        if !self.ended_within(Duration::from_secs(10)) {
            signal(self.pid, nix::sys::signal::Signal::SIGTERM);
            if !self.ended_within(Duration::from_secs(5)) {
                signal(self.pid, nix::sys::signal::Signal::SIGKILL);
                self.ended_within(Duration::from_secs(5));
            }
        }
        // Anything the manager started that outlived it is in its cgroup, and only there.
        for dir in &self.cgroups {
            for pid in procs_under(dir) {
                signal(pid, nix::sys::signal::Signal::SIGKILL);
            }
        }
        remove_cgroups(&self.cgroups);
    }
}

fn signal(pid: u32, sig: nix::sys::signal::Signal) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
    }
}

/// The cgroup directories a manager of this process gets, made: one per hierarchy systemd
/// uses here. `Err` names the hierarchy or the refusal.
fn make_cgroups() -> Result<Vec<PathBuf>, String> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let name = format!("oyster-it-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
    let root = Path::new(CGROUP_ROOT);
    let parents: Vec<PathBuf> = if root.join("cgroup.controllers").exists() {
        vec![root.to_path_buf()]
    } else if root.join("systemd/cgroup.procs").exists() {
        let mut v = vec![root.join("systemd")];
        if root.join("unified/cgroup.controllers").exists() {
            v.push(root.join("unified"));
        }
        v
    } else {
        return Err(format!("no cgroup hierarchy systemd can use under {CGROUP_ROOT}"));
    };
    for parent in &parents {
        sweep_stale(parent);
    }
    let mut made = vec![];
    for parent in parents {
        let dir = parent.join(&name);
        if let Err(e) = std::fs::create_dir(&dir) {
            remove_cgroups(&made);
            return Err(format!(
                "cannot make the cgroup {} ({e}): a read-only cgroupfs or no permission",
                dir.display()
            ));
        }
        made.push(dir);
    }
    Ok(made)
}

/// Removes what an aborted run of this suite left in `parent`: `oyster-it-<pid>-<n>`
/// directories of a test process that is gone, once no process is left in them (the manager
/// stopped itself on its parent-death signal). Only empty cgroups are removed; nothing is
/// killed.
fn sweep_stale(parent: &Path) {
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("oyster-it-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() && procs_under(&entry.path()).is_empty() {
            remove_cgroups(&[entry.path()]);
        }
    }
}

/// Every directory under (and with) each of `dirs`, removed deepest first.
fn remove_cgroups(dirs: &[PathBuf]) {
    for dir in dirs {
        let mut all = vec![];
        collect_dirs(dir, &mut all);
        all.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for d in all {
            let _ = std::fs::remove_dir(&d);
        }
    }
}

fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_path_buf());
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            collect_dirs(&entry.path(), out);
        }
    }
}

/// The pids in `dir`'s cgroup and every cgroup below it.
fn procs_under(dir: &Path) -> Vec<u32> {
    let mut dirs = vec![];
    collect_dirs(dir, &mut dirs);
    dirs.iter()
        .filter_map(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
        .flat_map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect::<Vec<u32>>())
        .collect()
}

/// Starts the manager (see [`SCRIPT`]) from the spawner thread.
fn spawn(
    home: &Path,
    runtime_dir: &Path,
    cgroups: &[PathBuf],
    log: &Path,
) -> Result<Child, String> {
    let out = std::fs::File::create(log).map_err(|e| e.to_string())?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let user = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map_or_else(|| "root".to_owned(), |u| u.name);
    let setpriv = Path::new("/usr/bin/setpriv");
    let mut cmd = if setpriv.exists() {
        let mut c = Command::new(setpriv);
        c.args(["--pdeathsig", "TERM", "/usr/bin/unshare"]);
        c
    } else {
        Command::new("/usr/bin/unshare")
    };
    if !nix::unistd::geteuid().is_root() {
        // Rootless: an unprivileged user namespace may mount (the cgroup must be writable).
        cmd.args(["--user", "--map-root-user"]);
    }
    cmd.args(["--mount", "--propagation", "private", "/bin/sh", "-c", SCRIPT, "sh"])
        .arg(home)
        .arg(runtime_dir)
        .arg(&user)
        .args(cgroups.iter().map(|d| d.join("cgroup.procs")))
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    spawner(cmd).map_err(|e| format!("could not start unshare: {e}"))
}

type Request = (Command, mpsc::Sender<std::io::Result<Child>>);

/// Spawns `cmd` from a thread that lives as long as this process: the parent-death signal
/// fires when the thread that forked the child ends, and a test's own thread ends with it.
fn spawner(cmd: Command) -> std::io::Result<Child> {
    static TX: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();
    let tx = TX.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::spawn(move || {
            for (mut cmd, reply) in rx {
                let _ = reply.send(cmd.spawn());
            }
        });
        Mutex::new(tx)
    });
    let (reply, answer) = mpsc::channel();
    tx.lock()
        .unwrap_or_else(|p| p.into_inner())
        .send((cmd, reply))
        .map_err(std::io::Error::other)?;
    answer.recv().map_err(std::io::Error::other)?
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(12)..].join("\n")
}

/// A user manager of the test's own and a context whose HOME is the manager's (the manager
/// reads units from its own HOME), pointed at it with `OYSTER_SYSTEMCTL` and
/// `XDG_RUNTIME_DIR`; `None` (said) where there can be none. Not the shared manager: the
/// context's teardown stops every process carrying its HOME, the manager included.
pub fn world() -> Option<(UserManager, super::TestContext)> {
    world_in("home dir")
}

/// [`world`] with a HOME of this name.
pub fn world_in(home_name: &str) -> Option<(UserManager, super::TestContext)> {
    let m = match UserManager::start_in(home_name) {
        Ok(m) => m,
        Err(why) => {
            skip(&why);
            return None;
        }
    };
    let mut t = super::TestContext::new();
    t.home = m.home.clone();
    t.pin_host_env();
    t.extra_env.push(("OYSTER_SYSTEMCTL".into(), SYSTEMCTL.into()));
    t.extra_env.push(("XDG_RUNTIME_DIR".into(), m.runtime_dir.display().to_string()));
    Some((m, t))
}
