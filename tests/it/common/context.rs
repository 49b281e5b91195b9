//! More of [`TestContext`]: the settings many tests give a HOME (the pinned Node, a stack that
//! exists, managed preferences), and what they read of a terminal's output.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use super::{args, free_port, real_node, TestContext, BIN};

impl TestContext {
    /// A HOME with the simulator and the machine's Node pinned (`OYSTERUN_NODE_BIN`): each
    /// stack gets its root from the test.
    pub fn with_sim_and_node() -> TestContext {
        let mut t = TestContext::new();
        t.use_sim();
        t.pin_node();
        t
    }

    /// A HOME with the simulator and the Host fixture pinned (`OYSTERUN_ROOT`,
    /// `OYSTERUN_NODE_BIN`), so Host commands need no --root/--node-bin.
    pub fn with_pinned_host() -> TestContext {
        let mut t = TestContext::new();
        t.use_sim();
        t.pin_host_env();
        t
    }

    /// [`TestContext::with_pinned_host`] with no launchd (`OYSTER_LAUNCHCTL=none`): setup and
    /// `host start` run the Host directly.
    pub fn with_pinned_host_no_launchd() -> TestContext {
        let mut t = TestContext::new();
        t.pin_host_env();
        t
    }

    /// The Host fixture's root that [`TestContext::pin_host_env`] copied and pinned.
    pub fn host_root(&self) -> PathBuf {
        self.path("root")
    }

    /// [`TestContext::with_pinned_host`] with `stack` installed on a free port, then stopped:
    /// the context and that port (nothing listens on it).
    pub fn with_stopped(stack: &str) -> (TestContext, u16) {
        let t = TestContext::with_pinned_host();
        let port = free_port();
        t.install(stack, port);
        t.run(["stop", stack]).ok();
        (t, port)
    }

    /// [`TestContext::with_pinned_host`], and claude installed in ~/.local/bin.
    pub fn with_claude() -> TestContext {
        let t = TestContext::with_pinned_host();
        t.fake_exe(&t.home.join(".local/bin/claude"));
        t
    }

    /// [`TestContext::with_claude`] with three stacks, each on its own free port: production
    /// installed and verified, `two` installed then stopped, and `third` only configured
    /// (`config sync`).
    pub fn with_three_stacks(third: &str) -> TestContext {
        let t = TestContext::with_claude();
        t.run(args(&["agent", "install"]).port(free_port()).settle(200)).ok();
        t.run(args(&["agent", "install"]).stack("two").port(free_port()).settle(200)).ok();
        t.run(["agent", "stop", "--stack", "two"]).ok();
        t.run(args(&["config", "sync"]).stack(third).port(free_port())).ok();
        t
    }

    /// `<test dir>/nodepfx/bin`, holding a link to the machine's real node: a Node prefix of the
    /// test's own (the npm a plan names beside it is the same on every machine). Returns the
    /// bin directory.
    pub fn node_prefix(&self) -> PathBuf {
        let bin = self.path("nodepfx/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(real_node(), bin.join("node")).unwrap();
        bin
    }

    /// Writes the executable script `text` at `<test dir>/<rel>` and points oyster's `var`
    /// (`OYSTER_LAUNCHCTL`, `OYSTER_SYSTEMCTL`) at it, in place of any earlier value: a stand-in
    /// for a tool. Returns its path.
    pub fn stand_in(&mut self, var: &str, rel: &str, text: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        self.extra_env.retain(|(k, _)| k != var);
        self.extra_env.push((var.into(), path.display().to_string()));
        path
    }

    /// `providers set ID CMD` (a manual provider command): the run, unchecked.
    pub fn set_provider(&self, id: &str, cmd: &Path) -> super::Run {
        self.run(["providers", "set", id, cmd.to_str().unwrap()])
    }

    /// `install STACK --port P --settle-ms 200`, which must succeed: the verified Host of a
    /// context whose root and Node are pinned.
    pub fn install(&self, stack: &str, port: impl ToString) -> super::Run {
        self.run(args(&["install", stack]).port(port).settle(200)).ok()
    }

    /// Pins the machine's real Node through `OYSTERUN_NODE_BIN`.
    pub fn pin_node(&mut self) {
        self.extra_env.push(("OYSTERUN_NODE_BIN".into(), real_node().display().to_string()));
    }

    /// A HOME with one custom stack, `name`, that has a config (and so exists) on a free port.
    pub fn with_stack_config(name: &str) -> TestContext {
        let t = TestContext::new();
        let cfg = t.stack_dir(name).join("host/config.json");
        std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
        std::fs::write(&cfg, format!("{{\"port\": {}}}\n", super::free_port())).unwrap();
        t
    }

    /// The lifecycle lock of custom stack `name`, in oyster's per-user lock directory (outside
    /// the stack); its directory made, as oyster makes it.
    pub fn lock_file(&self, name: &str) -> PathBuf {
        let dir = self.lock_dir();
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(format!("com.oysterun.host.{name}.lock"))
    }

    /// oyster's per-user lock directory (`~/.local/state/oyster/locks`, on macOS
    /// `~/Library/Application Support/oyster/locks`), not created.
    pub fn lock_dir(&self) -> PathBuf {
        if cfg!(target_os = "macos") {
            self.home.join("Library/Application Support/oyster/locks")
        } else {
            self.home.join(".local/state/oyster/locks")
        }
    }

    /// Whether `path` is oyster's lock directory, a lock file in it, or a directory on its way
    /// under HOME (what taking a lock may create outside every stack).
    pub fn is_lock_path(&self, path: &Path) -> bool {
        let oyster = self.lock_dir().parent().unwrap().to_owned();
        path.starts_with(&oyster)
            || (oyster.starts_with(path) && path.starts_with(&self.home) && path != self.home)
    }

    /// `~/.oysterun-stacks/<name>`: everything oyster keeps of a custom stack.
    pub fn stack_dir(&self, name: &str) -> PathBuf {
        self.home.join(".oysterun-stacks").join(name)
    }

    /// Writes the Host log of stack `name` (`~/.oysterun-stacks/<name>/logs/oysterun-host.log`,
    /// as the Host would have): its path.
    pub fn write_host_log(&self, name: &str, log: &str) -> PathBuf {
        let path = self.stack_dir(name).join("logs/oysterun-host.log");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, log).unwrap();
        path
    }

    /// A known stack `name` with no Host (an empty config), its log holding `log`: the log's
    /// path.
    pub fn stack_with_log(&self, name: &str, log: &str) -> PathBuf {
        let cfg = self.stack_dir(name).join("host/config.json");
        std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
        std::fs::write(cfg, "{}\n").unwrap();
        self.write_host_log(name, log)
    }

    /// A `host start --stack NAME --wait 3` that fails (exit 1) because the Host crashes on
    /// start (the fixture's `crash-on-start`), the stack's log already holding `log`: the
    /// context (to wait on) and the run, whose stderr shows the log's tail.
    pub fn crashing_host_start(name: &str, log: &str) -> (TestContext, super::Run) {
        let mut t = TestContext::new();
        t.use_sim();
        let root = t.pin_host_env();
        t.write_host_log(name, log);
        TestContext::fixture_flag(&root, "crash-on-start", "");
        let r = t.run(
            super::args(&["host", "start"])
                .stack(name)
                .port(super::free_port())
                .extra(&["--wait", "3"]),
        );
        assert_eq!(r.code(), 1, "{}\n{}", r.stdout(), r.stderr());
        (t, r)
    }

    /// Fails the test if anything of stack `name` is on disk; `why` is shown with what is.
    #[track_caller]
    pub fn assert_no_stack(&self, name: &str, why: &str) {
        let dir = self.stack_dir(name);
        assert!(!dir.exists(), "left {:?}; {why}", super::tree(&dir).keys().collect::<Vec<_>>());
    }

    /// Points oyster at `<test dir>/<dir>` for its managed preferences
    /// (`OYSTER_MANAGED_PREFERENCES_DIR`), whose all-users file is `settings`, written binary
    /// as macOS writes it. Returns that file.
    pub fn managed_preferences(&mut self, dir: &str, settings: plist::Dictionary) -> PathBuf {
        let dir = self.path(dir);
        let file = dir.join("com.oysterun.oyster.plist");
        write_binary_plist(&file, plist::Value::Dictionary(settings));
        self.extra_env.push(("OYSTER_MANAGED_PREFERENCES_DIR".into(), dir.display().to_string()));
        file
    }
}

impl TestContext {
    /// Managed preferences that force the Host's environment to `vars` (an organization's
    /// `environment` payload), read by oyster and by the launch program alike: the directory
    /// standing in for /Library/Managed Preferences is given every job as `launchctl setenv`
    /// would (the simulator's `LAUNCHD_SIM_SETENV`).
    pub fn forced_environment(&mut self, vars: &[(&str, &str)]) -> PathBuf {
        let mut env = plist::Dictionary::new();
        for (k, v) in vars {
            env.insert((*k).into(), (*v).into());
        }
        let mut settings = plist::Dictionary::new();
        settings.insert("environment".into(), env.into());
        let profile = self.managed_preferences("managed", settings);
        let dir = profile.parent().unwrap().display().to_string();
        self.extra_env
            .push(("LAUNCHD_SIM_SETENV".into(), format!("OYSTER_MANAGED_PREFERENCES_DIR={dir}")));
        profile
    }
}

impl TestContext {
    /// oyster with `args` on a real 80-column pseudo-terminal (tests/pty_drive.py), typing
    /// `answer` at a `[y/N]` question; the environment is [`TestContext::cmd`]'s (HOME, PATH,
    /// no launchd unless the test points at one, `extra_env`). Run it with [`pty_report`].
    pub fn pty_cmd<I, S>(&self, answer: &[u8], args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pty_drive.py");
        let hex: String = answer.iter().map(|b| format!("{b:02x}")).collect();
        let mut c = Command::new(python());
        c.arg(script).arg(hex).arg(BIN).args(args);
        c.env_clear()
            .env("HOME", &self.home)
            .env("PATH", std::env::join_paths(&self.path_dirs).unwrap_or_default());
        if !self.extra_env.iter().any(|(k, _)| k == "OYSTER_LAUNCHCTL") {
            c.env("OYSTER_LAUNCHCTL", "none");
        }
        for (k, v) in &self.extra_env {
            c.env(k, v);
        }
        c
    }

    /// [`TestContext::pty_cmd`], run: pty_drive's report (`output`, `prompted`, `code`, …).
    pub fn pty<I, S>(&self, answer: &[u8], args: I) -> serde_json::Value
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        pty_report(&mut self.pty_cmd(answer, args))
    }
}

impl TestContext {
    /// Starts oyster with `args` in the background, its standard streams as given.
    pub fn spawn<I, S>(&self, args: I, stdin: Stdio, stdout: Stdio, stderr: Stdio) -> Child
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd().args(args).stdin(stdin).stdout(stdout).stderr(stderr).spawn().unwrap()
    }

    /// Runs oyster with `args` and `stdin` as its standard input: the finished run.
    pub fn run_with_stdin<I, S>(&self, args: I, stdin: &[u8]) -> super::Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        use std::io::Write;
        let mut c = self.spawn(args, Stdio::piped(), Stdio::piped(), Stdio::piped());
        c.stdin.take().unwrap().write_all(stdin).unwrap();
        super::Run(c.wait_with_output().unwrap())
    }
}

/// The first line `child` writes to its piped stdout (a helper's `up`, once it listens).
pub fn first_line(child: &mut Child) -> String {
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    line
}

impl TestContext {
    /// Starts oyster with `args` on a new pseudo-terminal, 24 rows by `cols` when given (else
    /// the kernel's default size), its stdin, stdout and stderr all the terminal: the child and
    /// the terminal's master side (what it shows, and its keyboard).
    pub fn spawn_on_pty(&self, args: &[&str], cols: Option<u16>) -> (Child, std::fs::File) {
        let size = cols.map(|cols| nix::pty::Winsize {
            ws_row: 24,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        });
        let pty = nix::pty::openpty(size.as_ref(), None).unwrap();
        let slave = |fd: &OwnedFd| Stdio::from(fd.try_clone().unwrap());
        let child = self
            .cmd()
            .args(args)
            .stdin(slave(&pty.slave))
            .stdout(slave(&pty.slave))
            .stderr(slave(&pty.slave))
            .spawn()
            .unwrap();
        drop(pty.slave);
        (child, std::fs::File::from(pty.master))
    }

    /// Runs `oyster args…` on a terminal `cols` wide to its end: what it showed there, with
    /// the terminal's `\r\n` as `\n`.
    pub fn shown_on_pty(&self, args: &[&str], cols: u16) -> String {
        use std::io::Read;
        let (mut child, mut master) = self.spawn_on_pty(args, Some(cols));
        let mut shown = vec![];
        let mut buf = [0u8; 4096];
        // EIO once the child closed its side.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            shown.extend_from_slice(&buf[..n]);
        }
        child.wait().unwrap();
        String::from_utf8_lossy(&shown).replace("\r\n", "\n")
    }
}

/// Runs a [`TestContext::pty_cmd`], which must succeed: pty_drive's report.
pub fn pty_report(c: &mut Command) -> serde_json::Value {
    let out = c.output().unwrap();
    assert!(out.status.success(), "pty_drive failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The real Python interpreter (not a version manager's shim, which needs the runner's
/// environment; a child gets the test's controlled PATH).
pub fn python() -> &'static str {
    static PY: OnceLock<String> = OnceLock::new();
    PY.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("the tests need python3");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

/// Writes `v` to `path` as a binary plist (as macOS writes managed preferences), creating its
/// directory.
pub fn write_binary_plist(path: &std::path::Path, v: plist::Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    v.to_file_binary(path).unwrap();
}

/// An executable at `path` that appends its arguments, one line a run, to `log` (a stand-in
/// for `xdg-open`, a provider that must be seen called).
pub fn recorder(path: &Path, log: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\necho \"$*\" >> '{}'\n", log.display())).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `line` without its ANSI colour sequences (and carriage returns): what a terminal shows.
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else if c != '\r' {
            out.push(c);
        }
    }
    out
}

/// Columns a line takes on the terminal: ANSI colour sequences take none, a CJK ideograph two.
pub fn shown_width(line: &str) -> usize {
    strip_ansi(line)
        .chars()
        .map(|c| if ('\u{4e00}'..='\u{9fff}').contains(&c) { 2 } else { 1 })
        .sum()
}
