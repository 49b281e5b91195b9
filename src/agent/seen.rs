//! The `print`s this run has already made, so that the several parts of one command that each
//! need "is the job loaded, and how" (the command's checks, the lifecycle's first look) start
//! one `launchctl` process between them. Forgotten entirely by any verb that changes
//! launchd's state, and after a few seconds (KeepAlive may respawn a job by itself).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::launchctl::{Code, PrintInfo};

type Answer = Result<PrintInfo, Code>;

/// How long a remembered answer stands for "now".
const FRESH_FOR: Duration = Duration::from_secs(3);

static SEEN: Mutex<BTreeMap<String, (Instant, Answer)>> = Mutex::new(BTreeMap::new());

pub(super) fn recall(target: &str) -> Option<Answer> {
    let seen = SEEN.lock().ok()?;
    let (at, answer) = seen.get(target)?;
    (at.elapsed() < FRESH_FOR).then(|| answer.clone())
}

pub(super) fn remember(target: &str, answer: &Answer) {
    if let Ok(mut seen) = SEEN.lock() {
        seen.insert(target.to_owned(), (Instant::now(), answer.clone()));
    }
}

/// Forgets every remembered answer (launchd's state is about to change).
pub fn forget_all() {
    if let Ok(mut seen) = SEEN.lock() {
        seen.clear();
    }
}
