//! Issue 30 items 1–3: one writer per stack, `cleanup` included. Cleanup takes (creates) each
//! stack's lock before it looks and holds it to the removal, looking again under it; a waiter
//! whose lock file cleanup unlinked takes the file at the path, not the orphaned one; and the
//! identity files it examines are read only through the one bounded, regular-file reader.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::has_all;
use crate::common::{free_port, real_node, TestContext};

/// A running oyster and what it has said so far, collected by a thread as it comes.
pub(crate) struct Running {
    child: Child,
    said: Arc<Mutex<Vec<u8>>>,
}

impl Running {
    /// Collects what `child` says through `from` (a pty's master, a piped stderr).
    fn collect(child: Child, mut from: impl Read + Send + 'static) -> Running {
        let said = Arc::new(Mutex::new(vec![]));
        std::thread::spawn({
            let said = said.clone();
            move || {
                let mut buf = [0u8; 4096];
                // EIO on a pty once the child closed its side.
                while let Ok(n) = from.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    said.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            }
        });
        Running { child, said }
    }

    fn said(&self) -> String {
        String::from_utf8_lossy(&self.said.lock().unwrap()).into_owned()
    }

    /// Waits until it said `text`; fails naming what it said if it ends first, or after 20 s.
    pub(crate) fn wait_for(&mut self, text: &str) {
        let t0 = Instant::now();
        while !self.said().contains(text) {
            if let Some(s) = self.child.try_wait().unwrap() {
                // Its last words may still be on their way to the reader.
                std::thread::sleep(Duration::from_millis(100));
                if self.said().contains(text) {
                    return;
                }
                panic!("ended ({s}) without saying {text:?}:\n{}", self.said());
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "never said {text:?}:\n{}",
                self.said()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (60 s at most, then kills it and fails) for it to end: its exit code and all it
    /// said.
    pub(crate) fn finish(mut self) -> (i32, String) {
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > Duration::from_secs(60) {
                let _ = self.child.kill();
                panic!("still running:\n{}", self.said());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(100));
        (status.code().unwrap_or(-1), self.said())
    }
}

/// oyster on a pseudo-terminal (cleanup asks only there): what it shows, and a keyboard.
struct OnPty {
    run: Running,
    master: std::fs::File,
}

impl OnPty {
    fn spawn(t: &TestContext, args: &[&str]) -> OnPty {
        let (child, master) = t.spawn_on_pty(args, None);
        let run = Running::collect(child, master.try_clone().unwrap());
        OnPty { run, master }
    }

    fn answer(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
    }
}

/// An oyster in the background, its stdin and stdout closed: what it says on stderr.
pub(crate) fn background(t: &TestContext, args: &[String]) -> Running {
    let mut child = t.spawn(args, Stdio::null(), Stdio::null(), Stdio::piped());
    let stderr = child.stderr.take().unwrap();
    Running::collect(child, stderr)
}

/// A pid that is gone.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    c.wait().unwrap();
    c.id()
}

/// What Oysterun's own runner leaves of stack `name`: the pid and origin files of a dead Host
/// in `run/`, with an earlier oyster's lock file (`run/oyster.lock`) only when `with_lock`.
fn leftover(t: &TestContext, name: &str, with_lock: bool) -> PathBuf {
    let run = t.home.join(".oysterun-stacks").join(name).join("run");
    std::fs::create_dir_all(&run).unwrap();
    let dead = dead_pid();
    std::fs::write(run.join(format!("oysterun-host-{name}.pid")), format!("{dead}\n")).unwrap();
    std::fs::write(
        run.join(format!("oysterun-host-{name}.origin.tsv")),
        format!("host_pid\t{dead}\n"),
    )
    .unwrap();
    if with_lock {
        std::fs::write(run.join("oyster.lock"), "").unwrap();
    }
    run
}

fn install_args(root: &Path, port: u16, settle_ms: u64) -> Vec<String> {
    crate::common::install_args("dev", port, root).node(real_node()).settle(settle_ms).into()
}

/// Three processes: cleanup asks about a leftover (with and without an earlier version's
/// `run/oyster.lock`); an install started meanwhile waits for it; after the yes removes the
/// stack, the install holds the lock at its path (outside the stack, never removed), so a third
/// oyster started then waits for the install instead of running beside it.
#[test]
fn cleanup_holds_the_stacks_lock_to_its_removal_and_no_waiter_holds_an_unlinked_one() {
    for with_lock in [true, false] {
        let mut t = TestContext::new();
        t.use_sim();
        let root = t.fixture_root("root");
        leftover(&t, "dev", with_lock);
        let lock = t.lock_file("dev");

        let mut cleanup = OnPty::spawn(&t, &["cleanup"]);
        cleanup.run.wait_for("[y/N]");
        // An install while cleanup asks waits for it (before: it ran at once when the leftover
        // had no lock file, and the yes then deleted the live Host's pid and origin files).
        let mut install = background(&t, &install_args(&root, free_port(), 2500));
        install.wait_for("waiting for another oyster (pid ");
        assert!(
            install.said().contains("(cleanup)) to finish with stack dev"),
            "with_lock {with_lock}: {}",
            install.said()
        );
        cleanup.answer("y\n");
        let (code, shown) = cleanup.run.finish();
        assert_eq!(code, 0, "with_lock {with_lock}: {shown}");
        assert!(shown.contains("removed dev"), "with_lock {with_lock}: {shown}");

        // The install now holds the lock file at the path (its record is in it).
        let me = format!("pid {} (", install.child.id());
        let t0 = Instant::now();
        while !std::fs::read_to_string(&lock).unwrap_or_default().contains(&me) {
            assert!(
                t0.elapsed() < Duration::from_secs(15),
                "with_lock {with_lock}: the install holds no lock at {} (it locked the file cleanup unlinked); it said:\n{}",
                lock.display(),
                install.said()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // A third oyster waits for the install.
        let third = background(&t, &["config", "sync", "--stack", "dev"].map(String::from));
        let (code, said) = install.finish();
        assert_eq!(code, 0, "with_lock {with_lock}: {said}");
        let (code, said) = third.finish();
        assert_eq!(code, 0, "with_lock {with_lock}: {said}");
        assert!(
            said.contains(&format!("waiting for another oyster ({me}")),
            "with_lock {with_lock}: the third oyster ran beside the install: {said}"
        );
        t.run(["uninstall", "dev"]).ok();
        t.wait_no_processes();
    }
}

/// What does not take oyster's lock (Oysterun's own runner starting a Host) may write while
/// cleanup asks: the yes looks again under the lock and removes nothing that changed.
#[test]
fn cleanup_looks_again_under_its_lock_before_removing_anything() {
    let t = TestContext::new();
    let run = leftover(&t, "dev", false);
    let pid_file = run.join("oysterun-host-dev.pid");
    let mut cleanup = OnPty::spawn(&t, &["cleanup"]);
    cleanup.run.wait_for("[y/N]");
    // A live Host's pid, written by a runner that takes no lock.
    let live = std::process::id().to_string();
    std::fs::write(&pid_file, format!("{live}\n")).unwrap();
    cleanup.answer("y\n");
    let (code, shown) = cleanup.run.finish();
    assert_eq!(code, 0, "{shown}");
    // Read as words: the terminal is 80 columns, so the warning is wrapped.
    let shown = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    has_all(
        &shown,
        &[
            "kept dev: it changed while cleanup asked",
            &format!("names pid {live}, which is running"),
        ],
    );
    assert_eq!(std::fs::read_to_string(&pid_file).unwrap().trim(), live, "{shown}");
    assert!(run.join("oysterun-host-dev.origin.tsv").exists());
    // Nothing of cleanup's own is left in the stack: its lock lives outside it.
    assert!(!run.join("oyster.lock").exists(), "{shown}");
    assert!(t.lock_file("dev").exists(), "{shown}");
}

/// Runs oyster, killing it (by pid) and failing if it runs longer than 10 s.
fn bounded(t: &TestContext, args: &[&str]) -> (i32, String, Duration) {
    let t0 = Instant::now();
    let mut child = t.spawn(args, Stdio::null(), Stdio::piped(), Stdio::null());
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`oyster {}` still ran after 10 s (killed)", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = t0.elapsed();
    (status.code().unwrap_or(-1), reader.join().unwrap(), took)
}

/// `run/oyster-exec.json` linked to a FIFO outside the stack, or to `/dev/zero`, and a pid file
/// that is a FIFO: `cleanup --dry-run` neither hangs nor reads without bound; the stack is kept,
/// the file named, and nothing is removed (the FIFO and the link stay) by `cleanup --yes`.
#[test]
fn cleanup_reads_identity_files_only_through_the_bounded_reader() {
    let t = TestContext::new();
    let outside_fifo = t.path("outside.fifo");
    nix::unistd::mkfifo(&outside_fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    type Plant<'a> = &'a dyn Fn(&Path);
    let planted: [(&str, Plant); 3] = [
        ("fifo-link", &|run: &Path| {
            std::os::unix::fs::symlink(&outside_fifo, run.join("oyster-exec.json")).unwrap();
        }),
        ("fifo-pid", &|run: &Path| {
            let pid = run.join("oysterun-host-fifo-pid.pid");
            std::fs::remove_file(&pid).unwrap();
            nix::unistd::mkfifo(&pid, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        }),
        ("zero", &|run: &Path| {
            std::os::unix::fs::symlink("/dev/zero", run.join("oyster-exec.json")).unwrap();
        }),
    ];
    for (name, plant) in planted {
        let run = leftover(&t, name, true);
        plant(&run);
    }
    for args in [&["cleanup", "--dry-run"][..], &["cleanup", "--yes"]] {
        let (code, out, took) = bounded(&t, args);
        assert_eq!(code, 0, "{args:?}: {out}");
        assert!(took < Duration::from_secs(3), "{args:?} took {took:?}");
        for (name, what) in [
            ("fifo-link", "oyster-exec.json, which is a symlink"),
            ("fifo-pid", "oysterun-host-fifo-pid.pid, which is a FIFO"),
            ("zero", "oyster-exec.json, which is a symlink"),
        ] {
            assert!(
                out.contains(&format!("kept    {name}: holds ")) && out.contains(what),
                "{args:?}: {name}: {out}"
            );
        }
    }
    let stacks = t.home.join(".oysterun-stacks");
    assert!(std::fs::symlink_metadata(stacks.join("zero/run/oyster-exec.json")).is_ok());
    assert!(std::fs::symlink_metadata(stacks.join("fifo-link/run/oyster-exec.json")).is_ok());
    assert!(stacks.join("fifo-pid/run/oysterun-host-fifo-pid.pid").exists());
}

/// A cleanup that only shows (`--dry-run`, or no terminal to ask on) creates no lock file or
/// run directory to look: the tree is as it was, mtimes included.
#[test]
fn a_cleanup_that_only_shows_creates_nothing() {
    let t = TestContext::new();
    let run = leftover(&t, "dev", false);
    std::fs::remove_file(run.join("oysterun-host-dev.origin.tsv")).unwrap();
    // A stack of only a log: its run directory is not there.
    let logs = t.home.join(".oysterun-stacks/logonly/logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(logs.join("oysterun-host.log"), "hello\n").unwrap();
    let before = crate::common::tree(&t.home);
    for args in [&["cleanup", "--dry-run"][..], &["cleanup"]] {
        let out = t.run(args).ok().stdout();
        assert!(out.contains("leftover dev"), "{args:?}: {out}");
        assert_eq!(crate::common::tree(&t.home), before, "{args:?}: {out}");
    }
}
