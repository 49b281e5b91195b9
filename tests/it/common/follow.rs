//! `oyster logs -f` running beside a test, read line by line.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdout, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::TestContext;

/// How long a follower may run before the watchdog kills it: a line that never comes ends the
/// reads (at end of file) instead of hanging the test.
const BOUND: Duration = Duration::from_secs(20);

/// A running `oyster logs -f …`, with what it printed so far in `out`.
pub struct Follow {
    child: Child,
    reader: BufReader<ChildStdout>,
    /// Everything read from its stdout.
    pub out: String,
    /// Dropped when the follower is stopped, which tells the watchdog to stand down.
    watchdog: Option<mpsc::Sender<()>>,
}

impl TestContext {
    /// Starts `oyster logs -f ARGS` in this test's environment.
    pub fn follow_logs(&self, args: &[&str]) -> Follow {
        let mut child = self
            .cmd()
            .args(["logs", "-f"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        let (tx, rx) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if rx.recv_timeout(BOUND) == Err(mpsc::RecvTimeoutError::Timeout) {
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            }
        });
        let reader = BufReader::new(child.stdout.take().unwrap());
        Follow { child, reader, out: String::new(), watchdog: Some(tx) }
    }
}

impl Follow {
    /// Reads lines into `out` until one contains `what` (or the follower's output ends).
    pub fn read_until(&mut self, what: &str) {
        loop {
            let mut l = String::new();
            if self.reader.read_line(&mut l).unwrap_or(0) == 0 {
                return;
            }
            self.out.push_str(&l);
            if l.contains(what) {
                return;
            }
        }
    }

    /// Stops the follower: what it printed on stdout (read so far) and on stderr.
    pub fn stop(mut self) -> (String, String) {
        drop(self.watchdog.take());
        let _ = self.child.kill();
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let _ = self.child.wait();
        (std::mem::take(&mut self.out), err)
    }
}
