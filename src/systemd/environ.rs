//! What a started unit's environment holds besides what oyster gave it (systemd.exec(5),
//! "Environment variables in spawned processes"; environment.d(5)): the manager's own
//! environment (PAM, `environment.d`, `set-environment`), which `Environment=` overrides key
//! by key, and the keys systemd sets for each process it starts ([`EXEC_ADDED_KEYS`]).
//!
//! [`check_environ`] compares a live environment (`/proc/<MainPID>/environ`) with the
//! generated one and the manager's (`show-environment`), so a proof can say exactly which
//! keys came from where.

use std::collections::BTreeMap;

/// Keys systemd sets for a process it starts, besides the manager's environment: always
/// `INVOCATION_ID`, `SYSTEMD_EXEC_PID`, `MANAGERPID` (user managers); the others only with
/// the journal as output, `Type=notify`, a watchdog, or socket activation, none of which the
/// Host's unit uses. A proof ignores exactly these.
pub const EXEC_ADDED_KEYS: [&str; 10] = [
    "INVOCATION_ID",
    "SYSTEMD_EXEC_PID",
    "MANAGERPID",
    "JOURNAL_STREAM",
    "NOTIFY_SOCKET",
    "WATCHDOG_PID",
    "WATCHDOG_USEC",
    "LISTEN_PID",
    "LISTEN_FDS",
    "LISTEN_FDNAMES",
];

/// A live environment against the generated one and the manager's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvCheck {
    /// Generated keys the process does not have.
    pub missing: Vec<String>,
    /// Generated keys it has with another value (a drop-in's `Environment=`).
    pub differs: Vec<String>,
    /// Keys it got from the manager's environment, as the manager has them.
    pub from_manager: Vec<String>,
    /// Keys neither oyster, the manager's environment nor systemd itself gave it.
    pub unexpected: Vec<String>,
}

impl EnvCheck {
    /// Every generated key with its value, and nothing from anywhere but oyster, the
    /// manager's environment and [`EXEC_ADDED_KEYS`].
    pub fn holds_the_generated(&self) -> bool {
        self.missing.is_empty() && self.differs.is_empty() && self.unexpected.is_empty()
    }

    /// [`EnvCheck::holds_the_generated`], and nothing from the manager's environment either.
    pub fn is_exact(&self) -> bool {
        self.holds_the_generated() && self.from_manager.is_empty()
    }
}

/// Compares `live` with `generated` (what the unit's `Environment=` sets) and `manager` (what
/// `show-environment` says). Keys in [`EXEC_ADDED_KEYS`] are ignored.
pub fn check_environ(
    live: &BTreeMap<String, String>,
    generated: &[(String, String)],
    manager: &[(String, String)],
) -> EnvCheck {
    let mut check = EnvCheck::default();
    for (k, v) in generated {
        match live.get(k) {
            None => check.missing.push(k.clone()),
            Some(got) if got != v => check.differs.push(k.clone()),
            Some(_) => {}
        }
    }
    let manager: BTreeMap<&str, &str> = manager
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    for (k, v) in live {
        if generated.iter().any(|(g, _)| g == k) || EXEC_ADDED_KEYS.contains(&k.as_str()) {
            continue;
        }
        if manager.get(k.as_str()) == Some(&v.as_str()) {
            check.from_manager.push(k.clone());
        } else {
            check.unexpected.push(k.clone());
        }
    }
    check
}

/// `show-environment`'s lines: `KEY=value`, a value with special characters written as
/// `$'…'` with C escapes (measured, systemd 252). A line without `=` is skipped.
pub fn parse_environment(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            let value = v
                .strip_prefix("$'")
                .and_then(|q| q.strip_suffix('\''))
                .map_or_else(|| v.to_owned(), c_unescape);
            (k.to_owned(), value)
        })
        .collect()
}

/// `\\`, `\'`, `\"`, `\a \b \e \f \n \r \t \v`, `\xHH` and `\NNN` (octal) decoded; any other
/// escape kept as written. Bytes are gathered first, so an escaped UTF-8 sequence decodes whole.
fn c_unescape(s: &str) -> String {
    let mut out: Vec<u8> = Vec::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 == b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let (byte, used) = match b[i + 1] {
            b'a' => (0x07, 2),
            b'b' => (0x08, 2),
            b'e' => (0x1b, 2),
            b'f' => (0x0c, 2),
            b'n' => (b'\n', 2),
            b'r' => (b'\r', 2),
            b't' => (b'\t', 2),
            b'v' => (0x0b, 2),
            c @ (b'\\' | b'\'' | b'"') => (c, 2),
            b'x' => match hex(b.get(i + 2..i + 4)) {
                Some(v) => (v, 4),
                None => (b'\\', 1),
            },
            b'0'..=b'7' => match octal(b.get(i + 1..i + 4)) {
                Some(v) => (v, 4),
                None => (b'\\', 1),
            },
            _ => (b'\\', 1),
        };
        out.push(byte);
        i += used;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(d: Option<&[u8]>) -> Option<u8> {
    u8::from_str_radix(std::str::from_utf8(d?).ok()?, 16).ok()
}

fn octal(d: Option<&[u8]>) -> Option<u8> {
    u8::from_str_radix(std::str::from_utf8(d?).ok()?, 8).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A capture of `systemctl --user show-environment` (systemd 252, the test manager of
    /// tests/it/common/user_manager.rs, after `set-environment` of three awkward values).
    const CAPTURED: &str = "HOME=/tmp/um1/home\nLOGNAME=root\n\
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nUSER=root\n\
        XDG_RUNTIME_DIR=/tmp/um1/run\nQT_ACCESSIBILITY=1\n\
        DBUS_SESSION_BUS_ADDRESS=unix:path=/tmp/um1/run/bus\n\
        OYD=$'$x\"q\\\\z'\nOYQ=$'it\\'s'\nOYX=$'a b'\n";

    #[test]
    fn show_environment_is_parsed_with_its_quoting_undone() {
        let env = parse_environment(CAPTURED);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(env.len(), 10);
        assert_eq!(get("OYX"), Some("a b"));
        assert_eq!(get("OYQ"), Some("it's"));
        assert_eq!(get("OYD"), Some("$x\"q\\z"));
        assert_eq!(
            get("DBUS_SESSION_BUS_ADDRESS"),
            Some("unix:path=/tmp/um1/run/bus")
        );
        assert_eq!(c_unescape("\\xc3\\xa9\\101\\n\\q"), "éA\n\\q");
    }

    #[test]
    fn a_live_environment_is_sorted_into_generated_manager_systemd_and_unexpected() {
        let owned = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let generated = owned(&[("PATH", "/gen"), ("OYSTERUN_PORT", "1"), ("HOME", "/h")]);
        let manager = owned(&[("PATH", "/mgr"), ("XDG_RUNTIME_DIR", "/run/user/0")]);
        let live: BTreeMap<String, String> = owned(&[
            ("PATH", "/gen"),
            ("OYSTERUN_PORT", "2"),
            ("XDG_RUNTIME_DIR", "/run/user/0"),
            ("INVOCATION_ID", "abc"),
            ("MANAGERPID", "1"),
            ("SHLVL", "1"),
        ])
        .into_iter()
        .collect();
        let c = check_environ(&live, &generated, &manager);
        assert_eq!(c.missing, ["HOME"]);
        assert_eq!(c.differs, ["OYSTERUN_PORT"]);
        assert_eq!(c.from_manager, ["XDG_RUNTIME_DIR"]);
        assert_eq!(c.unexpected, ["SHLVL"]);
        assert!(!c.holds_the_generated());
        let exact: BTreeMap<String, String> = generated
            .iter()
            .cloned()
            .chain(owned(&[("SYSTEMD_EXEC_PID", "9")]))
            .collect();
        let c = check_environ(&exact, &generated, &manager);
        assert!(c.is_exact(), "{c:?}");
    }
}
