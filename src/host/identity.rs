//! The Host's identity files (docs/behaviour.md §6, §6a), written by `oyster host exec` for its own
//! pid just before it becomes the Host:
//!
//! - the pid file: the decimal pid and a newline, nothing else (Oysterun reads it with
//!   `tr -d '[:space:]'`, so any second line would corrupt the pid it sees);
//! - the origin file: tab-separated `key value` rows under a `key value` header, the rows
//!   Oysterun's runner writes (`write_host_origin_file`), of which its restart waits for
//!   `host_pid` (`origin_host_pid_from_file`: the second field of the `host_pid` row);
//! - oyster's own exec record (`oyster-exec.json`, 0600): the pid and kernel start stamp (the
//!   identity `host stop` checks before signalling), and the argv, working directory and
//!   environment it exec'd with (the `exec` environment proof: a process may always read
//!   its own environment, even where macOS hides the Host's from others).
//!
//! A process is identified by a start stamp a clock step does not move ([`start_stamp`]):
//! a wall-clock start time moves with `date -s`, an NTP first sync or a VM resume (Linux
//! derives it from the boot time, which is itself re-derived from the clock), and a Host
//! identified by it would be orphaned by the step.
//!
//! The files describe a live process, so they are replaced atomically (readers never see half a
//! file) but not fsynced: after a power cut there is no Host for them to describe.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::host::launchenv;
use crate::sys::fs::{self as fsutil, FsError};

/// The largest identity file oyster reads.
const MAX_IDENTITY_BYTES: u64 = 1 << 20;

/// The pid file's whole content.
pub fn pid_file_text(pid: u32) -> String {
    format!("{pid}\n")
}

/// Reads a pid file as Oysterun does (`tr -d '[:space:]'`): every whitespace character
/// removed, the rest a decimal pid. `Ok(None)` when there is no file; `Err` with what it holds
/// when that is not a pid.
pub fn read_pid_file(path: &Path) -> Result<Option<Result<u32, String>>, FsError> {
    let Some(bytes) = fsutil::read_regular(path, MAX_IDENTITY_BYTES)? else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&bytes);
    let squeezed: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    Ok(Some(
        squeezed
            .parse::<u32>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or(text.into_owned()),
    ))
}

/// The origin file's rows, in Oysterun's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub started_at_utc: String,
    pub repo_root: String,
    pub host_dir: String,
    pub actual_cwd: String,
    pub config_dir: String,
    pub host_port: String,
    pub host_pid: u32,
    pub launch_label: String,
}

impl Origin {
    /// The file's content: the `key value` header, then one row per key.
    pub fn render(&self) -> String {
        let rows: [(&str, &str); 7] = [
            ("started_at_utc", &self.started_at_utc),
            ("repo_root", &self.repo_root),
            ("host_dir", &self.host_dir),
            ("actual_cwd", &self.actual_cwd),
            ("config_dir", &self.config_dir),
            ("host_port", &self.host_port),
            ("launch_label", &self.launch_label),
        ];
        let mut out = String::from("key\tvalue\n");
        for (k, v) in &rows[..6] {
            out.push_str(&format!("{k}\t{}\n", one_line(v)));
        }
        out.push_str(&format!("host_pid\t{}\n", self.host_pid));
        let (k, v) = rows[6];
        out.push_str(&format!("{k}\t{}\n", one_line(v)));
        out
    }
}

/// A value kept on its row: a tab or line break would split it (never in practice: the paths
/// went through the plist, which refuses control characters).
fn one_line(v: &str) -> String {
    v.replace(['\t', '\n', '\r'], " ")
}

#[cfg(test)]
/// The value of `key` in an origin file's text, as Oysterun's awk reads it
/// (`-F '\t' '$1 == key { print $2; exit }'`).
pub fn origin_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let mut fields = line.split('\t');
        (fields.next() == Some(key)).then(|| fields.next().unwrap_or(""))
    })
}

/// What `oyster host exec` recorded about the Host it became.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecRecord {
    /// The pid (the exec keeps it).
    pub pid: u32,
    /// The process start time the kernel reports (seconds since the epoch, as `sysinfo`
    /// gives it). Informational, and the fallback for records without a `start_stamp`: it
    /// moves with clock steps.
    pub start_time: u64,
    /// The start stamp a clock step does not move ([`start_stamp`]); with the command line,
    /// what proves a pid is still this Host. Absent in records of older oysters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_stamp: Option<String>,
    /// When the launch program ran (UTC, `YYYY-MM-DDTHH:MM:SSZ`).
    pub started_at: String,
    pub stack: String,
    /// What it exec'd: `[node, <root>/host-service/server.mjs]`.
    pub argv: Vec<String>,
    pub cwd: String,
    /// The environment the launch program was given, passed to the Host (the declared
    /// variables' names left out: their values are in [`ExecRecord::declared`]'s form only).
    pub env: BTreeMap<String, String>,
    /// The declared variables the launch program added (`oyster env`), each by a salted
    /// fingerprint of its value ([`crate::sys::digest::fingerprint`]): no value is ever in this
    /// file, yet a proof can tell whether the Host got the one declared now.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub declared: BTreeMap<String, String>,
    /// The oyster that wrote it.
    pub oyster_version: String,
}

impl ExecRecord {
    /// Reads the record; `None` when it is missing or not one (it is advisory: a missing record
    /// means "identity unknown", never a crash).
    pub fn read(path: &Path) -> Option<ExecRecord> {
        let bytes = fsutil::read_regular(path, MAX_IDENTITY_BYTES).ok()??;
        serde_json::from_slice(&bytes).ok()
    }

    /// The record's bytes: pretty JSON and a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).expect("a record serializes");
        out.push(b'\n');
        out
    }

    pub fn node(&self) -> Option<PathBuf> {
        self.argv.first().map(PathBuf::from)
    }

    pub fn server(&self) -> Option<PathBuf> {
        self.argv.get(1).map(PathBuf::from)
    }

    pub fn port(&self) -> Option<u16> {
        self.env.get(launchenv::PORT).and_then(|p| p.parse().ok())
    }

    /// Whether the live process `pid` (whose wall-clock start time the kernel gives as
    /// `wall_start`) is the very process this record describes: same pid and same start
    /// stamp. Only a record without a stamp (an older oyster's) falls back to the wall-clock
    /// time.
    pub fn describes(&self, pid: u32, wall_start: u64) -> bool {
        self.pid == pid
            && same_start(
                self.start_stamp.as_deref(),
                self.start_time,
                pid,
                wall_start,
            )
    }
}

/// Whether a recorded start (its stamp, else its wall-clock time) is the start of the live
/// `pid`.
pub fn same_start(stamp: Option<&str>, wall: u64, pid: u32, wall_start: u64) -> bool {
    match (stamp, start_stamp(pid)) {
        (Some(recorded), Some(now)) => recorded == now,
        _ => wall == wall_start,
    }
}

/// A live process's start as the kernel keeps it, in a form no clock step moves; `None` when
/// there is no such process or the platform cannot say.
///
/// - Linux: the start in clock ticks since boot (`/proc/<pid>/stat` field 22, `starttime`)
///   with the boot's id (`/proc/sys/kernel/random/boot_id`), since ticks restart at each boot
///   and a pid may come back at the same offset.
/// - macOS: `proc_pidinfo(PROC_PIDTBSDINFO)`'s `pbi_start_tvsec`/`pbi_start_tvusec`, which the
///   kernel stores once at fork and never re-derives (a later step does not move it), to the
///   microsecond.
pub fn start_stamp(pid: u32) -> Option<String> {
    platform_start_stamp(pid)
}

#[cfg(target_os = "linux")]
fn platform_start_stamp(pid: u32) -> Option<String> {
    let stat = fsutil::read_regular(Path::new(&format!("/proc/{pid}/stat")), 1 << 16).ok()??;
    let ticks = stat_start_ticks(&String::from_utf8_lossy(&stat))?;
    let boot = fsutil::read_regular(Path::new("/proc/sys/kernel/random/boot_id"), 256)
        .ok()
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    Some(format!("linux:{boot}:{ticks}"))
}

/// Field 22 (`starttime`) of a `/proc/<pid>/stat` line. The command name (field 2) is in
/// parentheses and may hold spaces and `)`, so fields are counted after its last `)`.
#[cfg(any(target_os = "linux", test))]
fn stat_start_ticks(line: &str) -> Option<u64> {
    let rest = &line[line.rfind(')')? + 1..];
    // After the name: field 3 (state) is the first, so field 22 is the 20th.
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

#[cfg(target_os = "macos")]
fn platform_start_stamp(pid: u32) -> Option<String> {
    let pid = i32::try_from(pid).ok()?;
    let mut info = std::mem::MaybeUninit::<nix::libc::proc_bsdinfo>::zeroed();
    let size = i32::try_from(std::mem::size_of::<nix::libc::proc_bsdinfo>()).ok()?;
    // SAFETY: the buffer is a zeroed `proc_bsdinfo` of exactly `size` bytes, which is what
    // PROC_PIDTBSDINFO fills. The struct is plain integers and byte arrays, so all zeroes is
    // a valid value whatever the call wrote; it is used only when the call filled all of it.
    #[allow(unsafe_code)]
    let (filled, info) = unsafe {
        let filled = nix::libc::proc_pidinfo(
            pid,
            nix::libc::PROC_PIDTBSDINFO,
            0,
            info.as_mut_ptr().cast(),
            size,
        );
        (filled, info.assume_init())
    };
    if filled != size {
        return None;
    }
    Some(format!(
        "macos:{}.{:06}",
        info.pbi_start_tvsec, info.pbi_start_tvusec
    ))
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn platform_start_stamp(_pid: u32) -> Option<String> {
    None
}

/// Removes the stack's identity files (pid, origin, exec record) when they name no live
/// process: the pid file's pid, else the exec record's, is gone. For a Host that never came up
/// and a rolled-back install, whose files would otherwise name a dead pid that Oysterun's
/// scripts wait for. Files naming a live process are left alone. Returns whether it removed
/// them.
pub fn remove_if_dead(stack: &crate::host::stack::Stack) -> Result<bool, FsError> {
    let named = match read_pid_file(&stack.pid_path()) {
        Ok(Some(Ok(pid))) => Some(pid),
        // No pid file (or one that holds no pid, or a special file): the exec record's pid.
        _ => ExecRecord::read(&stack.exec_record_path()).map(|r| r.pid),
    };
    if named.is_some_and(crate::sys::signal::exists) {
        return Ok(false);
    }
    for path in stack.identity_paths() {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(FsError::Io {
                    action: "remove",
                    path,
                    cause: e,
                })
            }
            _ => {}
        }
    }
    Ok(true)
}

/// Replaces `path` with `bytes` atomically (temp file and rename; no fsync, see the module
/// documentation), with `mode`.
pub fn replace(path: &Path, bytes: &[u8], mode: u32) -> Result<(), FsError> {
    fsutil::replace_atomic(path, bytes, mode)
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a time (Oysterun's `date -u +"%Y-%m-%dT%H:%M:%SZ"`).
pub fn utc(t: SystemTime) -> String {
    crate::sys::time::rfc3339(t)
}

#[cfg(test)]
#[path = "identity_tests.rs"]
mod tests;
