//! The Host's identity files (CONTRACT.md §6, §6a), written by `oyster host exec` for its own
//! pid just before it becomes the Host:
//!
//! - the pid file: the decimal pid and a newline, nothing else (Oysterun reads it with
//!   `tr -d '[:space:]'`, so any second line would corrupt the pid it sees);
//! - the origin file: tab-separated `key value` rows under a `key value` header, the rows
//!   Oysterun's runner writes (`write_host_origin_file`), of which its restart waits for
//!   `host_pid` (`origin_host_pid_from_file`: the second field of the `host_pid` row);
//! - oyster's own exec record (`oyster-exec.json`, 0600): the pid and kernel start time (the
//!   identity `host stop` checks before signalling), and the argv, working directory and
//!   environment it exec'd with (the `exec` environment proof of §5: a process may always read
//!   its own environment, even where macOS hides the Host's from others).
//!
//! The files describe a live process, so they are replaced atomically (readers never see half a
//! file) but not fsynced: after a power cut there is no Host for them to describe.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

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
    /// The process start time the kernel reports (seconds since the epoch, as
    /// `sysinfo` gives it); with the command line, what proves a pid is still this Host.
    pub start_time: u64,
    /// When the launch program ran (UTC, `YYYY-MM-DDTHH:MM:SSZ`).
    pub started_at: String,
    pub stack: String,
    /// What it exec'd: `[node, <root>/host-service/server.mjs]`.
    pub argv: Vec<String>,
    pub cwd: String,
    /// The whole environment passed to the Host, unchanged.
    pub env: BTreeMap<String, String>,
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
}

/// Replaces `path` with `bytes` atomically (temp file and rename; no fsync, see the module
/// documentation), with `mode`.
pub fn replace(path: &Path, bytes: &[u8], mode: u32) -> Result<(), FsError> {
    fsutil::replace_atomic(path, bytes, mode)
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a time (Oysterun's `date -u +"%Y-%m-%dT%H:%M:%SZ"`).
pub fn utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    #[allow(clippy::cast_possible_wrap, reason = "days since 1970 fit an i64")]
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar (Howard
/// Hinnant's `civil_from_days`).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // day and month are small
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn utc_matches_dates_we_know() {
        let at = |s: u64| utc(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_767_225_599), "2025-12-31T23:59:59Z");
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z");
    }

    #[test]
    fn the_pid_file_reads_as_tr_d_space_reads_it() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("x.pid");
        assert_eq!(read_pid_file(&p).unwrap(), None);
        for (text, want) in [
            ("123\n", Ok(123)),
            (" 1 2 3 \n", Ok(123)),
            ("\n", Err(())),
            ("123\nstart_time=4\n", Err(())),
            ("0\n", Err(())),
        ] {
            std::fs::write(&p, text).unwrap();
            assert_eq!(
                read_pid_file(&p).unwrap().map(|r| r.map_err(drop)),
                Some(want),
                "{text:?}"
            );
        }
        assert_eq!(pid_file_text(42), "42\n");
    }

    #[test]
    fn the_origin_file_has_oysteruns_rows_and_reads_back_as_awk_does() {
        let o = Origin {
            started_at_utc: "2025-01-02T03:04:05Z".into(),
            repo_root: "/opt/o".into(),
            host_dir: "/opt/o/host-service".into(),
            actual_cwd: "/opt/o/host-service".into(),
            config_dir: "/u/.oysterun".into(),
            host_port: "8802".into(),
            host_pid: 77,
            launch_label: "com.oysterun.host".into(),
        };
        let text = o.render();
        assert_eq!(
            text,
            "key\tvalue\nstarted_at_utc\t2025-01-02T03:04:05Z\nrepo_root\t/opt/o\n\
             host_dir\t/opt/o/host-service\nactual_cwd\t/opt/o/host-service\n\
             config_dir\t/u/.oysterun\nhost_port\t8802\nhost_pid\t77\n\
             launch_label\tcom.oysterun.host\n"
        );
        assert_eq!(origin_value(&text, "host_pid"), Some("77"));
        assert_eq!(origin_value(&text, "host_port"), Some("8802"));
        assert_eq!(origin_value(&text, "nope"), None);
    }
}
