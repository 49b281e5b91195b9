//! Login Items (macOS 13+): every LaunchAgent appears in System Settings → General → Login
//! Items under "Allow in the Background", and one the user switched off there (or never
//! approved) cannot be loaded: `bootstrap` answers a bare 5 and `enable` does not undo it
//! (docs/launchd.md, "Verbs"). This is the one seam that asks for that state.
//!
//! # Platform
//! On macOS, with the system launchctl, ServiceManagement's
//! `SMAppService.statusForLegacyPlist(at:)` (`statusForLegacyURL:`, macOS 13+; no entitlement
//! needed) answers for the installed plist. Elsewhere, and whenever `$OYSTER_LAUNCHCTL` points
//! oyster at another launchctl, that program is asked with the simulator's own verb
//! `login-item-status PLIST` (launchd/README.md); a program that does not know it leaves the
//! state unknown. The state is **unknown, never "fine"**, where the API is missing (macOS 12)
//! or fails.

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use crate::launchctl::Launchctl;
use crate::sys::process::{ProcessError, Program};

/// What ServiceManagement says of the plist (`SMAppService.Status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoginItem {
    /// Allowed to run in the background.
    Enabled,
    /// Switched off in System Settings → General → Login Items, or not approved yet.
    RequiresApproval,
    /// Not known to Login Items (never loaded since it was written).
    NotRegistered,
    /// ServiceManagement could not find the plist.
    NotFound,
    /// Not known: the API is missing (before macOS 13) or failed; a note says why.
    Unknown,
}

impl LoginItem {
    /// The state in words for humans.
    pub fn words(self) -> &'static str {
        match self {
            LoginItem::Enabled => "allowed",
            LoginItem::RequiresApproval => "switched off (requires approval)",
            LoginItem::NotRegistered => "not registered yet",
            LoginItem::NotFound => "not found by ServiceManagement",
            LoginItem::Unknown => "unknown",
        }
    }
}

/// How long ServiceManagement (or the program that stands in for it) may take to answer. Its
/// query has no time limit of its own, and the Background Task Management daemon behind it is
/// known to wedge (macOS 14–26 field reports): without this bound `status`, `doctor`, `list`
/// and a failed bootstrap would hang with it (issue 39 item 2).
pub const LIMIT: Duration = Duration::from_secs(3);

/// What was asked and answered: the state, and ServiceManagement's own number for it
/// (`SMAppService.Status`: 0 not registered, 1 enabled, 2 requires approval, 3 not found)
/// when it came from ServiceManagement, said beside the state in `status` and `doctor` so a
/// report from a Mac shows what the API really answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub state: LoginItem,
    pub raw: Option<isize>,
}

impl Answer {
    /// The state in words, with ServiceManagement's number when there is one.
    pub fn words(self) -> String {
        match self.raw {
            Some(n) => format!("{} (ServiceManagement status {n})", self.state.words()),
            None => self.state.words().to_owned(),
        }
    }
}

/// Set once a query did not answer within [`LIMIT`]: the daemon behind it is wedged, and
/// asking again in this run would only wait again (one oyster process is one run).
static NO_ANSWER: OnceLock<String> = OnceLock::new();

/// The Login Items state of `plist`, or why it is unknown.
pub fn status(lc: &Launchctl, plist: &Path) -> Result<LoginItem, String> {
    ask(lc, plist).map(|a| a.state)
}

/// [`status`] with ServiceManagement's own number. At most [`LIMIT`] per run: a query that
/// does not answer in time leaves the state unknown, and later ones in the run say so at once.
pub fn ask(lc: &Launchctl, plist: &Path) -> Result<Answer, String> {
    if let Some(why) = NO_ANSWER.get() {
        return Err(format!("{why}; not asked again in this run"));
    }
    #[cfg(target_os = "macos")]
    let answer = if lc.overridden {
        through_launchctl(lc, plist)
    } else {
        service_management::status(plist)
    };
    #[cfg(not(target_os = "macos"))]
    let answer = through_launchctl(lc, plist);
    answer.map_err(|e| match e {
        NoAnswer::Hung(why) => NO_ANSWER.get_or_init(|| why).clone(),
        NoAnswer::Said(why) => why,
    })
}

/// Why the state is unknown.
#[derive(Debug)]
enum NoAnswer {
    /// The query did not answer within [`LIMIT`] (remembered for the rest of the run).
    Hung(String),
    /// It answered, but not with a state oyster knows (or could not be asked at all).
    Said(String),
}

impl NoAnswer {
    fn hung(what: &str) -> NoAnswer {
        NoAnswer::Hung(format!(
            "{what} did not answer within {} s (the Background Task Management daemon behind Login Items may be wedged)",
            LIMIT.as_secs()
        ))
    }
}

/// ServiceManagement's `SMAppService.Status` number as a state; another number is said with
/// its value (a status a newer macOS added), never taken as fine.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))] // asked on macOS; unit-tested everywhere
pub fn from_raw(n: isize) -> Result<LoginItem, String> {
    match n {
        0 => Ok(LoginItem::NotRegistered),
        1 => Ok(LoginItem::Enabled),
        2 => Ok(LoginItem::RequiresApproval),
        3 => Ok(LoginItem::NotFound),
        other => Err(format!(
            "ServiceManagement answered status {other}, which oyster does not know"
        )),
    }
}

/// Where to switch it on, naming the item as System Settings lists it: after the program the
/// agent runs (`oyster`), or after the developer who signed that program.
/// How [`fix`] ends: for a command that launchd refused (not for a note on a loaded job).
pub const THEN_AGAIN: &str = "; then run the command again";

pub fn fix(program: &str) -> String {
    let name = Path::new(program)
        .file_name()
        .map_or_else(|| "oyster".to_owned(), |n| n.to_string_lossy().into_owned());
    format!(
        "open System Settings → General → Login Items, and under \"Allow in the Background\" switch on \"{name}\" (the item is named after the program the agent runs, {program}, or after the developer who signed it){THEN_AGAIN}"
    )
}

/// `$OYSTER_LAUNCHCTL login-item-status PLIST`: one word on stdout (the simulator's verb),
/// within [`LIMIT`] like ServiceManagement itself (`login-item LABEL hang` never answers).
/// `Err` in the inner result: the program answered but cannot say; in the outer: no answer.
fn through_launchctl(lc: &Launchctl, plist: &Path) -> Result<Answer, NoAnswer> {
    let f = Program::new(&lc.path)
        .arg("login-item-status")
        .arg(plist)
        .timeout(LIMIT)
        .run();
    let f = match f {
        Ok(f) => f,
        Err(ProcessError::Timeout { .. }) => {
            return Err(NoAnswer::hung(&format!(
                "{} login-item-status",
                lc.path.display()
            )))
        }
        Err(e) => return Err(NoAnswer::Said(e.to_string())),
    };
    if f.code != 0 {
        return Err(NoAnswer::Said(format!(
            "{} cannot say (`login-item-status` exited {}{})",
            lc.path.display(),
            f.code,
            f.stderr
                .lines()
                .next()
                .map_or(String::new(), |l| format!(": {}", l.trim()))
        )));
    }
    let state = match f.stdout.trim() {
        "enabled" => LoginItem::Enabled,
        "requires approval" => LoginItem::RequiresApproval,
        "not registered" => LoginItem::NotRegistered,
        "not found" => LoginItem::NotFound,
        other => {
            return Err(NoAnswer::Said(format!(
                "{} answered {other:?} for the Login Items status",
                lc.path.display()
            )))
        }
    };
    Ok(Answer { state, raw: None })
}

#[cfg(target_os = "macos")]
mod service_management {
    use std::path::Path;

    use objc2_foundation::NSURL;
    use objc2_service_management::SMAppService;

    use super::{from_raw, Answer, NoAnswer, LIMIT};

    /// Asks on a thread of its own, inside an autorelease pool, and waits at most [`LIMIT`]:
    /// `statusForLegacyURL:` has no time limit, and a wedged Background Task Management daemon
    /// would hold the caller forever. A thread that never returns is left behind (it ends
    /// with the process); its answer, if it ever comes, goes nowhere.
    pub fn status(plist: &Path) -> Result<Answer, NoAnswer> {
        if !objc2::available!(macos = 13.0) {
            return Err(NoAnswer::Said(
                "Login Items exist from macOS 13, and ServiceManagement cannot be asked before it"
                    .to_owned(),
            ));
        }
        let path = plist.to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("login-items".into())
            .spawn(move || {
                let raw = objc2::rc::autoreleasepool(|_| {
                    let url = NSURL::from_file_path(&path)?;
                    #[allow(unsafe_code)]
                    // SAFETY: `statusForLegacyURL:` is a class method of SMAppService that
                    // exists from macOS 13 (checked before this thread started); it takes a
                    // file URL, here a valid retained NSURL that outlives the call, and returns
                    // an NSInteger. It has no other precondition; what it autoreleases is
                    // released by the pool around it, on this thread.
                    let answer = unsafe { SMAppService::statusForLegacyURL(&url) };
                    Some(answer.0)
                });
                let _ = tx.send(raw);
            })
            .map_err(|e| NoAnswer::Said(format!("could not start the Login Items query: {e}")))?;
        match rx.recv_timeout(LIMIT) {
            Ok(Some(raw)) => Ok(Answer {
                state: from_raw(raw).map_err(NoAnswer::Said)?,
                raw: Some(raw),
            }),
            Ok(None) => Err(NoAnswer::Said(format!(
                "{} cannot be made a file URL",
                plist.display()
            ))),
            Err(_) => Err(NoAnswer::hung(
                "ServiceManagement (SMAppService.statusForLegacyURL)",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_managements_numbers_map_to_states_and_an_unknown_one_is_said() {
        assert_eq!(from_raw(0), Ok(LoginItem::NotRegistered));
        assert_eq!(from_raw(1), Ok(LoginItem::Enabled));
        assert_eq!(from_raw(2), Ok(LoginItem::RequiresApproval));
        assert_eq!(from_raw(3), Ok(LoginItem::NotFound));
        assert!(from_raw(7).unwrap_err().contains("status 7"));
        let a = Answer {
            state: LoginItem::Enabled,
            raw: Some(1),
        };
        assert_eq!(a.words(), "allowed (ServiceManagement status 1)");
    }
}
