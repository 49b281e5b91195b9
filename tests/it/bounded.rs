//! Bounded runs for the tests of hostile files and values: oyster run with its output in files,
//! killed by its pid (and the test failed) if it still runs after the bound; and a snapshot of
//! a directory tree to prove a refused command changed nothing.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::TestContext;

/// A finished bounded run.
pub struct Bounded {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: Vec<u8>,
    pub took: Duration,
}

impl Bounded {
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Runs oyster with `args` (and `env`), killing it by pid and failing the test if it is still
/// running after `bound`.
pub fn bounded(t: &TestContext, args: &[&str], env: &[(&str, &str)], bound: Duration) -> Bounded {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    // Outside the working directory, which some tests watch.
    let runs = t.path("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let (out, err) = (runs.join(format!("out-{n}")), runs.join(format!("err-{n}")));
    let mut c = t.cmd();
    c.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap());
    for (k, v) in env {
        c.env(k, v);
    }
    let t0 = Instant::now();
    let mut child = c.spawn().unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`oyster {}` still ran after {bound:?} (killed); stderr so far:\n{}",
                args.join(" "),
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Bounded {
        code: status.code(),
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read(&err).unwrap_or_default(),
        took: t0.elapsed(),
    }
}

/// Every path under `dir` with its owner, group, mode, content (or link target) and mtime.
pub type Snapshot = BTreeMap<PathBuf, crate::common::Entry>;

pub fn snapshot(dir: &Path, skip_locks: bool) -> Snapshot {
    let mut out = crate::common::tree(dir);
    if skip_locks {
        out.retain(|p, _| p.extension().is_none_or(|x| x != "lock"));
    }
    out
}
