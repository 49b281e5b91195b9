//! The shared test context: a temp HOME, a controlled PATH, fake providers that record any
//! execution, and helpers to run the real `oyster` binary.

#![allow(dead_code)]

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod context;
mod follow;
pub mod pkg;
pub mod repo;
mod stack;
#[cfg(target_os = "linux")]
pub mod user_manager;

pub use context::{
    first_line, pty_report, python, recorder, shown_width, strip_ansi, write_binary_plist,
};
pub use stack::{args, install_args, Args, Stack};

pub const BIN: &str = env!("CARGO_BIN_EXE_oyster");

pub struct TestContext {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    /// Directories on the PATH given to oyster, in order.
    pub path_dirs: Vec<PathBuf>,
    /// Where a fake provider appends a line when something executes it.
    pub exec_log: PathBuf,
    pub extra_env: Vec<(String, String)>,
    /// Let oyster find `/bin/launchctl` itself. Off by default: unless a test points
    /// `OYSTER_LAUNCHCTL` somewhere (the simulator, a fake), oyster is told there is no
    /// launchd (`none`), so no test can reach a real Mac's launchd by accident.
    pub system_launchctl: bool,
    /// Production's 8802 and staging's 9902 are held by another process while any test runs,
    /// so no test can depend on them being free (`default_ports_held.rs`).
    _default_ports: crate::default_ports_held::Held,
}

impl TestContext {
    pub fn new() -> TestContext {
        Self::with_home_name("home")
    }

    /// A context whose HOME has a name of the caller's choosing (hostile characters welcome).
    pub fn with_home_name(name: &str) -> TestContext {
        // In the temp directory's real path: macOS's `$TMPDIR` is under `/var`, a link to
        // `/private/var`, and oyster names some paths by their real path (doctor, privacy).
        let tmp = std::env::temp_dir();
        let dir = tempfile::Builder::new()
            .prefix("oyster-it-")
            .tempdir_in(tmp.canonicalize().unwrap_or(tmp))
            .unwrap();
        let home = dir.path().join(name);
        std::fs::create_dir_all(&home).unwrap();
        let exec_log = dir.path().join("exec.log");
        TestContext {
            home,
            path_dirs: vec![],
            exec_log,
            extra_env: vec![],
            system_launchctl: false,
            dir,
            _default_ports: crate::default_ports_held::Held::defaults(),
        }
    }

    /// A path under the test's private directory (outside HOME).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn config_path(&self) -> PathBuf {
        self.home.join(".oysterun/config.json")
    }

    pub fn write_config(&self, text: &str) {
        std::fs::create_dir_all(self.config_path().parent().unwrap()).unwrap();
        std::fs::write(self.config_path(), text).unwrap();
    }

    pub fn read_config(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.config_path()).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// Writes an executable that records every execution to `exec_log`, then exits 0.
    pub fn fake_exe(&self, path: &Path) -> PathBuf {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let script = format!(
            "#!/bin/sh\necho \"executed $0 $*\" >> '{}'\nexit 0\n",
            self.exec_log.display()
        );
        std::fs::write(path, script).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_owned()
    }

    /// Fails the test if anything executed a fake provider.
    pub fn assert_nothing_executed(&self) {
        if let Ok(log) = std::fs::read_to_string(&self.exec_log) {
            panic!("discovery executed a provider:\n{log}");
        }
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(BIN);
        c.env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::join_paths(&self.path_dirs).unwrap_or_default())
            .current_dir(self.dir.path());
        if !self.system_launchctl && !self.extra_env.iter().any(|(k, _)| k == "OYSTER_LAUNCHCTL") {
            c.env("OYSTER_LAUNCHCTL", "none");
        }
        // Likewise no user manager unless a test names one: a developer's own `systemd
        // --user` must never be reached by a test.
        if !self.extra_env.iter().any(|(k, _)| k == "OYSTER_SYSTEMCTL") {
            c.env("OYSTER_SYSTEMCTL", "none");
        }
        for (k, v) in &self.extra_env {
            c.env(k, v);
        }
        c
    }

    pub fn run<I, S>(&self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = self.cmd().args(args).output().unwrap();
        Run(out)
    }
}

impl TestContext {
    /// Copies the Node Host fixture to `<test dir>/<name>` and returns that root.
    pub fn fixture_root(&self, name: &str) -> PathBuf {
        fixture_root_at(&self.path(name))
    }

    /// Sets a fixture failure switch (`crash-on-start`, `unhealthy`, …) in a root.
    pub fn fixture_flag(root: &Path, flag: &str, content: &str) {
        std::fs::write(root.join("host-service").join(flag), content).unwrap();
    }

    /// Copies the Host fixture and pins it with `OYSTERUN_ROOT` and `OYSTERUN_NODE_BIN` (the
    /// real node), so Host commands need no --root/--node-bin. Returns the root.
    pub fn pin_host_env(&mut self) -> PathBuf {
        let root = fixture_root_at(&self.host_root());
        self.extra_env.push(("OYSTERUN_ROOT".into(), root.display().to_string()));
        self.extra_env.push(("OYSTERUN_NODE_BIN".into(), real_node().display().to_string()));
        root
    }

    /// Every live process whose environment carries this test's HOME (found through
    /// `sysinfo`, so the harness runs on macOS as on Linux).
    pub fn own_processes(&self) -> Vec<u32> {
        processes_with_env(&format!("HOME={}", self.home.display()))
    }
}

/// Copies the Node Host fixture to `root/host-service/` (`server.mjs` and the password module
/// `dashboard-password.mjs`; `root` anywhere: under
/// HOME's `Documents`, a path with hostile characters) and returns `root`.
pub fn fixture_root_at(root: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oysterun/host-service");
    std::fs::create_dir_all(root.join("host-service")).unwrap();
    for file in ["server.mjs", "dashboard-password.mjs"] {
        std::fs::copy(src.join(file), root.join("host-service").join(file)).unwrap();
    }
    root.to_path_buf()
}

/// Every live process (not a thread, not a zombie, not this test) whose environment holds
/// exactly `entry` (`KEY=VALUE`), or, where the kernel hides a process's environment (macOS,
/// for a restricted process such as an official Node build: docs/launchd.md) but not its
/// arguments, one of whose arguments lies under a test's temp directory (`oyster-it-*`): the
/// Host's `server.mjs`, a fake provider.
pub fn processes_with_env(entry: &str) -> Vec<u32> {
    let mut sys = sysinfo::System::new();
    sys.refresh_processes_specifics(
        sysinfo::ProcessesToUpdate::All,
        true,
        sysinfo::ProcessRefreshKind::nothing()
            .with_environ(sysinfo::UpdateKind::Always)
            .with_cmd(sysinfo::UpdateKind::Always),
    );
    // The test's temp directory, from `HOME=<dir>/<home>`.
    let test_dir = entry
        .strip_prefix("HOME=")
        .and_then(|home| Path::new(home).parent())
        .filter(|d| d.file_name().is_some_and(|n| n.to_string_lossy().starts_with("oyster-it-")));
    let hidden_but_ours = |p: &sysinfo::Process| {
        p.environ().is_empty()
            && test_dir.is_some_and(|d| p.cmd().iter().any(|a| Path::new(a).starts_with(d)))
    };
    sys.processes()
        .iter()
        .filter(|(pid, p)| {
            pid.as_u32() != std::process::id()
                && p.thread_kind().is_none()
                && !matches!(
                    p.status(),
                    sysinfo::ProcessStatus::Zombie | sysinfo::ProcessStatus::Dead
                )
                && (p.environ().iter().any(|kv| kv.as_os_str() == entry) || hidden_but_ours(p))
        })
        .map(|(pid, _)| pid.as_u32())
        .collect()
}

/// The names of oyster's temp files (`.<name>.oyster-tmp.<pid>`) in `dir`.
pub fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains("oyster-tmp"))
                .collect()
        })
        .unwrap_or_default()
}

/// The environment of a live process, as `KEY=VALUE` strings (through `sysinfo`).
pub fn live_environ(pid: u32) -> Vec<String> {
    let mut sys = sysinfo::System::new();
    let spid = sysinfo::Pid::from_u32(pid);
    sys.refresh_processes_specifics(
        sysinfo::ProcessesToUpdate::Some(&[spid]),
        true,
        sysinfo::ProcessRefreshKind::nothing().with_environ(sysinfo::UpdateKind::Always),
    );
    sys.process(spid)
        .map(|p| p.environ().iter().map(|kv| kv.to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// Whether `pid` is a zombie (exited, not yet reaped), as the kernel says through `sysinfo`
/// (procfs on Linux, `proc_pidinfo` on macOS).
pub fn zombie(pid: u32) -> bool {
    let mut sys = sysinfo::System::new();
    let spid = sysinfo::Pid::from_u32(pid);
    sys.refresh_processes_specifics(
        sysinfo::ProcessesToUpdate::Some(&[spid]),
        true,
        sysinfo::ProcessRefreshKind::nothing(),
    );
    sys.process(spid).is_some_and(|p| {
        matches!(p.status(), sysinfo::ProcessStatus::Zombie | sysinfo::ProcessStatus::Dead)
    })
}

/// The strongest environment proof oyster can give for the live Host `pid` here: `live` where
/// the kernel shows its environment (Linux; Homebrew's Node on macOS), `exec` where it hides it
/// (macOS, a restricted process such as an official Node build: docs/launchd.md).
pub fn strongest_proof(pid: u32) -> &'static str {
    if live_environ(pid).is_empty() {
        "exec"
    } else {
        "live"
    }
}

/// Whether the kernel shows the environment of a process running the machine's `node` (asked
/// once per test process): false on a Mac whose Node is restricted (an official build), where
/// oyster's strongest proof is `exec`.
pub fn kernel_shows_nodes_environment() -> bool {
    static SHOWN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SHOWN.get_or_init(|| {
        const MARK: &str = "setTimeout(() => {}, 10000) // oyster-it env probe";
        let mut child = Command::new(real_node())
            .args(["-e", MARK])
            .env("OYSTER_IT_PROBE", "1")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("node");
        let pid = sysinfo::Pid::from_u32(child.id());
        let mut sys = sysinfo::System::new();
        let t0 = std::time::Instant::now();
        // Once node has exec'd (its own arguments show), its environment is node's.
        let shown = loop {
            sys.refresh_processes_specifics(
                sysinfo::ProcessesToUpdate::Some(&[pid]),
                true,
                sysinfo::ProcessRefreshKind::nothing()
                    .with_cmd(sysinfo::UpdateKind::Always)
                    .with_environ(sysinfo::UpdateKind::Always),
            );
            let p = sys.process(pid);
            if p.is_some_and(|p| p.cmd().iter().any(|a| a == MARK)) {
                break p.is_some_and(|p| !p.environ().is_empty());
            }
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(10),
                "node never showed its arguments"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let _ = child.kill();
        let _ = child.wait();
        shown
    })
}

impl TestContext {
    /// The environment the Host `pid` of this test runs with, read as oyster's own proof reads
    /// it (src/verify.rs, src/probe.rs), so one test proves the same thing on Linux and macOS:
    /// from the kernel (procfs on Linux, `KERN_PROCARGS2` on macOS) and, where the kernel hides
    /// it (macOS, a restricted process such as an official Node build: docs/launchd.md), from
    /// the record `oyster host exec` wrote as that same pid just before its exec (the `exec`
    /// proof). Empty when neither exists.
    pub fn host_environ(&self, pid: u32) -> Vec<String> {
        let live = live_environ(pid);
        if !live.is_empty() {
            return live;
        }
        let mut runs = vec![self.home.join(".oysterun/run")];
        if let Ok(stacks) = std::fs::read_dir(self.home.join(".oysterun-stacks")) {
            runs.extend(stacks.flatten().map(|e| e.path().join("run")));
        }
        runs.iter()
            .find_map(|run| {
                let text = std::fs::read(run.join("oyster-exec.json")).ok()?;
                let v: serde_json::Value = serde_json::from_slice(&text).ok()?;
                (v["pid"].as_u64() == Some(u64::from(pid))).then_some(())?;
                let env = v["env"].as_object()?;
                Some(
                    env.iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect(),
                )
            })
            .unwrap_or_default()
    }
}

impl Drop for TestContext {
    /// Stops, by pid, whatever this test started (processes carrying its own HOME).
    fn drop(&mut self) {
        for pid in self.own_processes() {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

/// The launchd simulator binary, built beside oyster by `cargo test --workspace`.
pub fn sim_bin() -> PathBuf {
    let p = Path::new(BIN).parent().unwrap().join("launchctl-sim");
    assert!(
        p.exists(),
        "{} is missing: run the tests with `cargo test --workspace` (make test does)",
        p.display()
    );
    p
}

impl TestContext {
    /// Points oyster at the simulator with this test's own state, fast drains.
    pub fn use_sim(&mut self) {
        let state = self.path("launchd-state");
        self.extra_env.push(("OYSTER_LAUNCHCTL".into(), sim_bin().display().to_string()));
        self.extra_env.push(("LAUNCHD_SIM_STATE".into(), state.display().to_string()));
        self.extra_env.push(("LAUNCHD_SIM_DRAIN_MS".into(), "200".into()));
    }

    /// A HOME under the simulator with the Host fixture at `<test dir>/root` and a free port:
    /// where most tests of a stack's lifecycle start.
    pub fn sim_root() -> (TestContext, PathBuf, u16) {
        let mut t = TestContext::new();
        t.use_sim();
        let root = t.fixture_root("root");
        (t, root, free_port())
    }

    /// Scales the simulator's ThrottleInterval waits by `factor` (`LAUNCHD_SIM_THROTTLE_SCALE`,
    /// launchd/README.md) for the jobs this test loads: a test that waits out launchd's 10 s
    /// throttle (a respawn after `kill`, a crash loop forming) sits through `10 × factor` s.
    /// Not for a test whose point is that something does *not* wait out the throttle.
    pub fn scale_throttle(&mut self, factor: &str) {
        self.extra_env.push(("LAUNCHD_SIM_THROTTLE_SCALE".into(), factor.into()));
    }

    /// Runs the simulator directly with this test's state.
    pub fn sim(&self, args: &[&str]) -> Run {
        let mut c = Command::new(sim_bin());
        c.args(args).env_clear().env("HOME", &self.home);
        for (k, v) in &self.extra_env {
            c.env(k, v);
        }
        Run(c.output().unwrap())
    }

    /// Waits (bounded) until nothing carrying this test's HOME runs: jobs and the sim daemon.
    pub fn wait_no_processes(&self) {
        let t0 = std::time::Instant::now();
        while !self.own_processes().is_empty() {
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(10),
                "processes left: {:?}",
                self.own_processes()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// A tool on the test runner's PATH (children get a controlled PATH, so look it up here).
pub fn runner_tool(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A tool an `#[ignore = "needs …"]` test cannot do without: run explicitly (`cargo test --
/// --ignored`, as `.ci/run` does), a missing tool fails the test instead of passing it.
pub fn needed_tool(name: &str, install: &str) -> PathBuf {
    runner_tool(name).unwrap_or_else(|| panic!("this test needs {name} on PATH ({install})"))
}

/// Root, for the `#[ignore = "needs root"]` tests (CI containers run as root).
pub fn need_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test needs to run as root (the CI containers do)"
    );
}

/// The machine's real node (v20+), found on the test runner's PATH.
pub fn real_node() -> PathBuf {
    runner_tool("node").expect("the tests need node (v20+) on PATH")
}

/// The fixed system directories of a generated PATH, in order (`src/host/launchenv.rs`).
pub const SYSTEM_DIRS: [&str; 6] =
    ["/opt/homebrew/bin", "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"];

/// The PATH oyster generates: `first` (the pinned node's directory, then any provider's),
/// then [`SYSTEM_DIRS`], each entry once, as a list.
pub fn generated_path(first: Vec<String>) -> Vec<String> {
    let mut path = first;
    for d in SYSTEM_DIRS {
        if !path.iter().any(|p| p == d) {
            path.push(d.to_owned());
        }
    }
    path
}

/// Where [`free_port`] picks from: below Linux's ephemeral range (32768–60999) and macOS's
/// (49152–65535), so the kernel never hands one of these to an outgoing connection, and above
/// the well-known services.
const PORTS: std::ops::Range<u32> = 12000..32000;

/// A port nothing listens on right now, and one no other `free_port()` of this test process
/// returned: the port is released before the Host binds it, so two parallel tests asking the
/// kernel for "any free port" could be handed the same one. Each call takes the next candidate
/// of a process-wide counter (starting at an offset derived from the pid, so concurrent test
/// processes start apart) and keeps it only if both `127.0.0.1` and `[::]` can bind it.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let span = PORTS.end - PORTS.start;
    let offset = std::process::id().wrapping_mul(7919) % span;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = u16::try_from(PORTS.start + (offset + n) % span).expect("PORTS fits u16");
        // One at a time: a dual-stack `[::]` also claims 0.0.0.0, which a held 127.0.0.1 refuses.
        let v4 = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).map(drop);
        // A machine without IPv6 cannot bind `[::]` at all; that says nothing about the port.
        let v6 = std::net::TcpListener::bind((std::net::Ipv6Addr::UNSPECIFIED, port)).map(drop);
        let v6 = v6.map_err(|e| {
            e.kind() == std::io::ErrorKind::AddrNotAvailable
                || e.raw_os_error() == Some(nix::libc::EAFNOSUPPORT)
        });
        if v4.is_ok() && matches!(v6, Ok(_) | Err(true)) {
            return port;
        }
    }
    panic!("no free port in {PORTS:?}");
}

/// Polls `cond` every 10 ms until it holds; after `bound`, fails the test naming `what` it
/// waited for. Tests wait on the condition they need, never for a fixed time.
pub fn wait_until(bound: std::time::Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !cond() {
        assert!(t0.elapsed() < bound, "timed out after {bound:?} waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Parses plist bytes with Python's plistlib (an independent reader) into JSON.
pub fn plistlib(bytes: &[u8]) -> serde_json::Value {
    use std::io::Write;
    let mut child = Command::new("python3")
        .args(["-c", "import sys, json, plistlib; print(json.dumps(plistlib.loads(sys.stdin.buffer.read())))"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "plistlib rejected the plist");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A finished oyster run.
pub struct Run(pub Output);

impl Run {
    pub fn code(&self) -> i32 {
        self.0.status.code().unwrap_or(-1)
    }
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.0.stdout).unwrap_or_else(|e| {
            panic!("stdout is not JSON ({e}):\n{}\nstderr:\n{}", self.stdout(), self.stderr())
        })
    }
    #[track_caller]
    pub fn ok(self) -> Run {
        assert_eq!(self.code(), 0, "stdout:\n{}\nstderr:\n{}", self.stdout(), self.stderr());
        self
    }
    #[track_caller]
    pub fn fails_with(self, code: i32) -> Run {
        assert_eq!(self.code(), code, "stdout:\n{}\nstderr:\n{}", self.stdout(), self.stderr());
        self
    }
}

impl Run {
    /// Fails the test, showing stderr, unless stderr holds every one of `texts`.
    #[track_caller]
    pub fn stderr_has_all(&self, texts: &[&str]) -> &Run {
        has_all(&self.stderr(), texts);
        self
    }
    /// Fails the test, showing stdout, unless stdout holds every one of `texts`.
    #[track_caller]
    pub fn stdout_has_all(&self, texts: &[&str]) -> &Run {
        has_all(&self.stdout(), texts);
        self
    }
    /// Fails the test, showing stderr, unless stderr holds `text`.
    #[track_caller]
    pub fn stderr_has(&self, text: &str) -> &Run {
        let e = self.stderr();
        assert!(e.contains(text), "stderr lacks {text:?}:\n{e}");
        self
    }
    /// Fails the test, showing stdout, unless stdout holds `text`.
    #[track_caller]
    pub fn stdout_has(&self, text: &str) -> &Run {
        let o = self.stdout();
        assert!(o.contains(text), "stdout lacks {text:?}:\n{o}");
        self
    }
}

/// Fails the test, showing `text`, unless it holds every one of `parts`.
#[track_caller]
pub fn has_all(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "lacks {part:?}:\n{text}");
    }
}

/// Fails the test, showing `text`, if it holds any one of `parts`.
#[track_caller]
pub fn has_none(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(!text.contains(part), "holds {part:?}:\n{text}");
    }
}

/// The string `v` (a JSON value that must be a string), which must hold every one of `parts`.
#[track_caller]
pub fn str_has_all(v: &serde_json::Value, parts: &[&str]) {
    let text = v.as_str().unwrap_or_else(|| panic!("not a string: {v}"));
    has_all(text, parts);
}

/// The string at `key` of each row of the list `rows` (a document's `stacks` or `steps`), in
/// order.
#[track_caller]
pub fn column(rows: &serde_json::Value, key: &str) -> Vec<String> {
    rows.as_array()
        .unwrap_or_else(|| panic!("not a list: {rows}"))
        .iter()
        .map(|r| r[key].as_str().unwrap().to_owned())
        .collect()
}

/// The check named `name` of a `doctor --json` document; fails showing the document if it has
/// none.
#[track_caller]
pub fn doctor_check(doc: &serde_json::Value, name: &str) -> serde_json::Value {
    doc["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("no checks in {doc}"))
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no {name:?} check in {doc}"))
        .clone()
}

/// Runs `c`, which must succeed (else the test fails showing its stderr): its output.
#[track_caller]
pub fn output_ok(c: &mut Command) -> Output {
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The provider ids, read from the binary's own registry through `providers resolve`.
pub fn provider_ids() -> Vec<String> {
    let t = TestContext::new();
    t.run(["providers", "resolve", "--json"]).ok().json()["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["provider"].as_str().unwrap().to_owned())
        .collect()
}

/// Every `.rs` file under `dir`, recursively, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for p in entries.flatten().map(|e| e.path()) {
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// One HTTP/1.0 GET to `127.0.0.1:port` (a plain body, no chunks): the status and the body;
/// `None` when nothing answers within 2 s.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let code = head.split(' ').nth(1)?.parse().ok()?;
    Some((code, body.to_owned()))
}

/// `GET path` on the fixture Host, which must answer: its status code.
pub fn get(port: u16, path: &str) -> u16 {
    http_get(port, path).unwrap_or_else(|| panic!("nothing answered GET {path} on port {port}")).0
}

/// One path of a [`tree`] snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub dir: bool,
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
    /// A file's bytes or a symlink's target; empty for a directory.
    pub content: Vec<u8>,
    pub mtime_ns: i64,
}

/// Every path under `dir` (not following symlinks) with its owner, mode, content and mtime:
/// what a test compares before and after a command that must change nothing. A missing `dir`
/// is an empty tree.
pub fn tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Entry> {
    use std::os::unix::fs::MetadataExt;
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for p in entries.flatten().map(|e| e.path()) {
            let m = std::fs::symlink_metadata(&p).unwrap();
            let content = if m.file_type().is_symlink() {
                std::fs::read_link(&p).unwrap().into_os_string().into_encoded_bytes()
            } else if m.is_file() {
                std::fs::read(&p).unwrap_or_default()
            } else {
                vec![]
            };
            if m.is_dir() {
                todo.push(p.clone());
            }
            let entry = Entry {
                dir: m.is_dir(),
                uid: m.uid(),
                gid: m.gid(),
                mode: m.mode(),
                content,
                mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
            };
            out.insert(p, entry);
        }
    }
    out
}

#[test]
fn free_port_never_hands_out_a_port_twice_and_each_is_bindable() {
    let ports: Vec<u16> = std::thread::scope(|s| {
        let handles: Vec<_> =
            (0..8).map(|_| s.spawn(|| (0..25).map(|_| free_port()).collect::<Vec<_>>())).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
    assert_eq!(distinct.len(), ports.len(), "a port came back twice: {ports:?}");
    for p in ports.iter().take(20) {
        assert!(PORTS.contains(&u32::from(*p)), "{p} outside {PORTS:?}");
        std::net::TcpListener::bind(("127.0.0.1", *p)).unwrap();
    }
}

#[test]
#[should_panic(expected = "waiting for the impossible")]
fn wait_until_names_what_it_waited_for() {
    wait_until(std::time::Duration::from_millis(50), "the impossible", || false);
}
