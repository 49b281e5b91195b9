//! The pid an identity file of oyster's names (pid file, origin file, exec record), for
//! cleanup: a stack whose Host still runs is kept.

use std::path::Path;

/// The most an identity file of oyster's holds (a pid, an origin file, an exec record).
const MAX_IDENTITY_BYTES: u64 = 64 * 1024;

/// The pid an identity file names (pid file, origin's `host_pid` row, exec record's `pid`),
/// read through the one bounded reader: a symlink (to `/dev/zero`, to a file elsewhere), a FIFO
/// or an oversized file is not one oyster wrote, so it keeps its stack, named.
pub(super) fn named_pid(path: &Path) -> Result<Option<u32>, String> {
    if let Some(kind) = crate::sys::fs::not_regular(path) {
        return Err(format!(
            "holds {}, which is {kind}, not oyster's bookkeeping",
            path.display()
        ));
    }
    let bytes = match crate::sys::fs::read_regular(path, MAX_IDENTITY_BYTES) {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let text = String::from_utf8_lossy(&bytes);
    Ok(pid_in(&text))
}

/// The pid in an identity file's text.
fn pid_in(text: &str) -> Option<u32> {
    if let Ok(pid) = text.trim().parse::<u32>() {
        return Some(pid);
    }
    if let Some(pid) = text.lines().find_map(|l| l.strip_prefix("host_pid\t")) {
        return pid.trim().parse().ok();
    }
    serde_json::from_str::<serde_json::Value>(text)
        .ok()?
        .get("pid")?
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
}
