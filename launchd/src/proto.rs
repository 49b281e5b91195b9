//! What the `launchctl-sim` client and its supervisor daemon say to each other, and the
//! launchctl facts both need: targets, error codes and their messages.

use std::collections::BTreeMap;

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

/// One launchctl invocation, forwarded to the daemon.
#[derive(Debug, Serialize, Deserialize)]
pub struct Request {
    pub args: Vec<String>,
    /// The caller's `LAUNCHD_SIM_*` variables: knobs apply per call.
    pub knobs: BTreeMap<String, String>,
    /// Whether the caller's stdout is a terminal (`kickstart -p` prints differently).
    pub stdout_tty: bool,
}

/// What launchctl would have printed and returned.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Reply {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Reply {
    pub fn ok(stdout: impl Into<String>) -> Reply {
        Reply {
            code: 0,
            stdout: stdout.into(),
            stderr: String::new(),
        }
    }

    /// `<Verb> failed: N: <strerror>`, as launchctl prints errors.
    pub fn failed(verb: &str, code: i32) -> Reply {
        // For 5 the client drops the hint again when the caller is root (see `main`).
        let mut stderr = format!("{verb} failed: {code}: {}\n", strerror(code));
        if code == 5 {
            stderr.push_str(ROOT_HINT);
        }
        Reply {
            code,
            stdout: String::new(),
            stderr,
        }
    }

    pub fn raw(code: i32, stderr: impl Into<String>) -> Reply {
        Reply {
            code,
            stdout: String::new(),
            stderr: stderr.into(),
        }
    }

    pub fn usage(msg: &str) -> Reply {
        Reply::raw(64, format!("Usage error: {msg}\n"))
    }

    /// `bootout` with a target it cannot parse (an unknown flag such as `--wait` is taken for a
    /// target): exit 64, worded as macOS 15.7 words it (pingdotgg/t3code#11995,
    /// nix-community/home-manager#9585).
    pub fn bootout_usage() -> Reply {
        Reply::raw(
            64,
            "Unrecognized target specifier.\n\
             Usage: launchctl bootout <domain-target> [service-path1, service-path2, ...] | <service-target>\n\
             <service-target> takes a form of <domain-target>/<service-id>.\n\
             Please refer to `man launchctl` for explanation of the <domain-target> specifiers.\n",
        )
    }

    /// `print`/`print-disabled` of a domain that does not exist: 112, `Bad request.` then
    /// `Could not find domain for user gui: 501` (`for user uid: 501` for `user/<uid>`), as
    /// captured in public tests of launchctl callers (measured as exit 112).
    pub fn no_domain(d: &Domain) -> Reply {
        let who = if d.kind == "gui" { "gui" } else { "uid" };
        Reply::raw(
            112,
            format!(
                "Bad request.\nCould not find domain for user {who}: {}\n",
                d.uid
            ),
        )
    }
}

/// The answer for a target in a domain `check_domain` refused with `code`. `print` and
/// `print-disabled` of a missing domain say `Bad request.` + `Could not find domain …` (112);
/// `kickstart`/`kill` are assumed to resolve the domain the same way **[unverified]**; the
/// verbs that report `<Verb> failed: N: …` do so for the domain too.
pub fn domain_error(verb: &str, d: &Domain, code: i32) -> Reply {
    match (verb, code) {
        ("print" | "print-disabled" | "kickstart" | "kill", 112) => Reply::no_domain(d),
        ("print" | "print-disabled", _) => Reply::raw(
            code,
            format!("Could not print domain: {code}: {}\n", strerror(code)),
        ),
        _ => {
            let mut v = verb.replace("bootout", "boot-out");
            if let Some(first) = v.get_mut(..1) {
                first.make_ascii_uppercase();
            }
            Reply::failed(&v, code)
        }
    }
}

/// Whether the caller counts as root: `LAUNCHD_SIM_EUID=N` pretends (tests run as root in some
/// containers), else the real effective uid.
pub fn caller_is_root(knobs: &BTreeMap<String, String>) -> bool {
    knobs
        .get("LAUNCHD_SIM_EUID")
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or_else(|| nix::unistd::geteuid().as_raw())
        == 0
}

/// The line launchctl adds to a bare 5 for a caller that is not root.
/// What `bootout DOMAIN/LABEL` answers for a label that is not loaded (or already booting
/// out): 3 `No such process` by default; `LAUNCHD_SIM_BOOTOUT_NOT_LOADED_CODE` sets another
/// for both forms (5 on Darwin 27 for the plist form, jdx/mise#10965; the plist form answers
/// 113 when the knob is unset).
pub fn bootout_not_loaded_code(knobs: &BTreeMap<String, String>) -> i32 {
    knobs
        .get("LAUNCHD_SIM_BOOTOUT_NOT_LOADED_CODE")
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

/// `LAUNCHD_SIM_CONSOLE_UID=N`: the uid that owns the console (`/dev/console`; 0 when nobody
/// is logged in at the screen). Whether it is set and is not `uid` (the caller's): a session
/// over SSH while the console is not this user's.
pub fn console_not_callers(knobs: &BTreeMap<String, String>, uid: u32) -> bool {
    knobs
        .get("LAUNCHD_SIM_CONSOLE_UID")
        .and_then(|v| v.parse::<u32>().ok())
        .is_some_and(|owner| owner != uid)
}

pub const ROOT_HINT: &str = "Try re-running the command as root for richer errors.\n";

/// The messages real launchctl pairs with its exit codes.
pub fn strerror(code: i32) -> &'static str {
    match code {
        2 => "No such file or directory",
        3 => "No such process",
        5 => "Input/output error",
        36 => "Operation now in progress",
        37 => "Operation already in progress",
        64 => "Usage error",
        78 => "EX_CONFIG",
        112 => "Could not find specified domain",
        113 => "Could not find specified service",
        119 => "Service is disabled",
        122 => "Path had bad ownership/permissions",
        125 => "Domain does not support specified action",
        134 => "Service cannot load in requested session",
        _ => "Unknown error",
    }
}

/// Whether `arg` is a flag group `kickstart` accepts (getopt `"pks"`: `-k`, `-p`, `-kp`, …).
pub fn kickstart_flags(arg: &str) -> bool {
    arg.strip_prefix('-')
        .is_some_and(|f| !f.is_empty() && f.chars().all(|c| "kps".contains(c)))
}

/// The signal of `launchctl kill SIGNAL TARGET`: a number, or a name with or without `SIG`, in
/// any case, with an optional leading `-` (ProcursusTeam/launchctl `kill.c`). Numbers are this
/// system's (the common ones, 1–15, are the same on macOS and Linux).
pub fn parse_signal(arg: &str) -> Option<Signal> {
    let s = arg.strip_prefix('-').unwrap_or(arg);
    let s = match s.get(..3) {
        Some(sig) if s.len() > 3 && sig.eq_ignore_ascii_case("sig") => &s[3..],
        _ => s,
    };
    if let Ok(n) = s.parse::<i32>() {
        return Signal::try_from(n).ok();
    }
    format!("SIG{}", s.to_ascii_uppercase()).parse().ok()
}

/// `gui/<uid>` or `user/<uid>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Domain {
    pub kind: String,
    pub uid: u32,
}

impl Domain {
    pub fn name(&self) -> String {
        format!("{}/{}", self.kind, self.uid)
    }

    /// The session type a job must allow to load here: `gui/<uid>` is the user's Aqua session,
    /// `user/<uid>` a Background session.
    pub fn session_type(&self) -> &'static str {
        if self.kind == "gui" {
            "Aqua"
        } else {
            "Background"
        }
    }

    /// The service target `<domain>/<label>`: jobs are looked up per domain, so a job loaded in
    /// `user/<uid>` is not visible in `gui/<uid>`.
    pub fn target(&self, label: &str) -> String {
        format!("{}/{label}", self.name())
    }
}

/// Parses `gui/501` or `gui/501/label`.
pub fn parse_target(s: &str) -> Option<(Domain, Option<String>)> {
    let mut parts = s.splitn(3, '/');
    let kind = parts.next()?;
    if kind != "gui" && kind != "user" {
        return None;
    }
    let uid = parts.next()?.parse().ok()?;
    let label = parts.next().filter(|l| !l.is_empty()).map(str::to_owned);
    Some((
        Domain {
            kind: kind.to_owned(),
            uid,
        },
        label,
    ))
}

/// Checks that a domain exists for this caller: 112 for another user's, and for a GUI domain
/// when the `LAUNCHD_SIM_NO_GUI` knob says nobody is at the console: `1` answers 125 (as over
/// SSH or under sudo), `112` answers 112 (no GUI domain for the user at all).
pub fn check_domain(d: &Domain, knobs: &BTreeMap<String, String>) -> Result<(), i32> {
    if d.uid != nix::unistd::getuid().as_raw() {
        return Err(112);
    }
    if d.kind == "gui" {
        match knobs.get("LAUNCHD_SIM_NO_GUI").map(String::as_str) {
            Some("1") => return Err(125),
            Some("112") => return Err(112),
            _ => {}
        }
    }
    Ok(())
}

/// The domain of the caller's own session, which the legacy `launchctl list` lists: the GUI
/// login when there is one, else the user's background domain.
pub fn session_domain(knobs: &BTreeMap<String, String>) -> Domain {
    let uid = nix::unistd::getuid().as_raw();
    let gui = Domain {
        kind: "gui".into(),
        uid,
    };
    if check_domain(&gui, knobs).is_ok() {
        gui
    } else {
        Domain {
            kind: "user".into(),
            uid,
        }
    }
}

/// Plist-form `bootout` of a file that does not exist: 2, with the path on the line before
/// (nix-installer#1234).
pub fn missing_plist(plist: &str) -> Option<Reply> {
    if std::path::Path::new(plist).exists() {
        return None;
    }
    let mut reply = Reply::failed("Boot-out", 2);
    reply.stderr = format!("{plist}: No such file or directory\n{}", reply.stderr);
    Some(reply)
}

/// `Could not find service "LABEL" in domain for user gui: 501` (`for uid: 501` in a user
/// domain): launchctl's line for 113 (ProcursusTeam/launchctl `launchctl.c`).
pub fn not_found_line(label: &str, d: &Domain) -> String {
    let domain = if d.kind == "gui" {
        format!("user gui: {}", d.uid)
    } else {
        format!("uid: {}", d.uid)
    };
    format!("Could not find service \"{label}\" in domain for {domain}\n")
}

/// `print`/`kickstart` of a label that is not loaded: 113, with `Bad request.` on the line
/// before the `Could not find service` one (toss-agent-runtime#40).
pub fn not_found(label: &str, d: &Domain) -> Reply {
    Reply::raw(113, format!("Bad request.\n{}", not_found_line(label, d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let (d, l) = parse_target("gui/501/com.x.y").unwrap();
        assert_eq!(
            (d.name(), l.as_deref()),
            ("gui/501".into(), Some("com.x.y"))
        );
        assert_eq!(parse_target("user/0").unwrap().1, None);
        assert!(parse_target("system/com.x").is_none());
        assert!(parse_target("gui/abc/x").is_none());
    }

    #[test]
    fn signals_by_number_and_name() {
        for (arg, sig) in [
            ("SIGTERM", Signal::SIGTERM),
            ("TERM", Signal::SIGTERM),
            ("term", Signal::SIGTERM),
            ("-SIGTERM", Signal::SIGTERM),
            ("15", Signal::SIGTERM),
            ("-9", Signal::SIGKILL),
            ("SIGKILL", Signal::SIGKILL),
            ("sigHup", Signal::SIGHUP),
        ] {
            assert_eq!(parse_signal(arg), Some(sig), "{arg}");
        }
        for bad in ["", "0", "-0", "SIG", "NOPE", "SIGNOPE", "999", "gui/1/x"] {
            assert_eq!(parse_signal(bad), None, "{bad}");
        }
    }

    #[test]
    fn kickstart_flag_groups() {
        for ok in ["-k", "-p", "-s", "-kp", "-pk", "-kps"] {
            assert!(kickstart_flags(ok), "{ok}");
        }
        for bad in ["-", "-x", "-kx", "k", "--k", "gui/1/x"] {
            assert!(!kickstart_flags(bad), "{bad}");
        }
    }
}
