//! The stack's lifecycle lock outside the stack (docs/behaviour.md §9, hostile pass 8): where
//! it lives, what a cleaner or a `sudo` run does to its directory, and what a waiter meets.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::{args, free_port, TestContext};

/// An oyster in the background, its stderr collected into a file of the test's.
struct Background {
    child: Child,
    stderr: std::path::PathBuf,
}

impl Background {
    fn spawn(t: &TestContext, a: &[String], name: &str) -> Background {
        let stderr = t.path(&format!("{name}.stderr"));
        let child = t
            .cmd()
            .args(a)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        Background { child, stderr }
    }

    /// Waits (60 s at most) for it to end: its exit code and its stderr.
    fn finish(mut self) -> (i32, String) {
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > Duration::from_secs(60) {
                let _ = self.child.kill();
                panic!("still running");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let said = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        (status.code().unwrap_or(-1), said)
    }
}

/// Waits (20 s at most) until the lock file of stack `name` records a holder doing `what`.
fn wait_for_holder(t: &TestContext, name: &str, what: &str) {
    let lock = t.lock_file(name);
    let t0 = Instant::now();
    while !std::fs::read_to_string(&lock).is_ok_and(|r| r.contains(what)) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no oyster took {}",
            lock.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `rm -rf ~/.cache ~/Library/Caches` (what a cleaner does, or a user freeing space) while an
/// install holds the stack's lock: a second oyster on the stack still waits for it. Before, the
/// lock lived in `~/.cache/oyster/locks`; removed under its holder, the next oyster created a
/// fresh lock file there and ran beside the install (it took the install's receipt for a
/// stopped run's, both rolled back over each other).
#[test]
fn a_cache_cleaner_removing_its_directories_lets_no_second_oyster_beside_a_holder() {
    let t = TestContext::with_pinned_host();
    // The Host answers 503: the install waits for it the whole `--wait`, holding the lock.
    TestContext::fixture_flag(&t.host_root(), "unhealthy", "");
    let caches = [t.home.join(".cache"), t.home.join("Library/Caches")];
    for c in &caches {
        std::fs::create_dir_all(c.join("some-tool")).unwrap();
    }
    let install = args(&["install", "dev"]).port(free_port()).wait(4, 200);
    let holder = Background::spawn(&t, &install.0, "install");
    wait_for_holder(&t, "dev", "agent install");
    for c in &caches {
        std::fs::remove_dir_all(c).unwrap();
    }
    let lock = t.lock_file("dev");
    assert!(
        !caches.iter().any(|c| lock.starts_with(c)),
        "the lock is in a cache: {}",
        lock.display()
    );
    let sync = t.run(args(&["config", "sync"]).stack("dev").port(free_port()));
    let (code, said) = holder.finish();
    assert_eq!(code, 1, "{said}");
    sync.stderr_has("waiting for another oyster (pid")
        .stderr_has("(agent install)) to finish with stack dev");
    t.run(["uninstall", "dev"]);
}
