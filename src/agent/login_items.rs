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

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use crate::launchctl::Launchctl;
use crate::sys::process::{ProcessError, Program};

/// What ServiceManagement says of the plist (`SMAppService.Status`); `words()` (in
/// `commands/words/agent.rs`) says it for humans.
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

/// How long ServiceManagement (or the program that stands in for it) may take to answer. Its
/// query has no time limit of its own, and the Background Task Management daemon behind it is
/// known to wedge (macOS 14–26 field reports): without this bound `status`, `doctor`, `list`
/// and a failed bootstrap would hang with it (issue 39 item 2).
pub const LIMIT: Duration = Duration::from_secs(3);

/// What was asked and answered: the state, and ServiceManagement's own number for it
/// (`SMAppService.Status`: 0 not registered, 1 enabled, 2 requires approval, 3 not found)
/// when it came from ServiceManagement, said beside the state in `status` and `doctor` so a
/// report from a Mac shows what the API really answered (`words()`, in
/// `commands/words/agent.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub state: LoginItem,
    pub raw: Option<isize>,
}

/// Set once a query did not answer within [`LIMIT`]: the daemon behind it is wedged, and
/// asking again in this run would only wait again (one oyster process is one run).
static NO_ANSWER: OnceLock<Unknown> = OnceLock::new();

/// Why the state is unknown, as facts (in words in `commands/words/agent.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unknown {
    /// The query did not answer within [`LIMIT`].
    Hung(Asked),
    /// One did not earlier in this run (why), so it was not asked again.
    NotAgain(Box<Unknown>),
    /// ServiceManagement answered a status number oyster does not know.
    Status(isize),
    /// Running the program failed (in its own words).
    Run(String),
    /// The program exited `code` (with the first line of its `stderr`, if any).
    CannotSay {
        program: PathBuf,
        code: i32,
        said: Option<String>,
    },
    /// The program answered a word oyster does not know.
    Answered { program: PathBuf, word: String },
    /// Before macOS 13 there are no Login Items to ask.
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))] // asked on macOS
    BeforeMacos13,
    /// The thread that asks could not start.
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))] // asked on macOS
    NoThread(String),
    /// The plist's path cannot be a file URL.
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))] // asked on macOS
    NoFileUrl(PathBuf),
}

/// Who was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// The launchctl oyster was pointed at, with the simulator's verb.
    Launchctl(PathBuf),
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))] // asked on macOS
    ServiceManagement,
}

/// The Login Items state of `plist`, or why it is unknown.
pub fn status(lc: &Launchctl, plist: &Path) -> Result<LoginItem, String> {
    ask(lc, plist).map(|a| a.state)
}

/// [`status`] with ServiceManagement's own number. At most [`LIMIT`] per run: a query that
/// does not answer in time leaves the state unknown, and later ones in the run say so at once.
pub fn ask(lc: &Launchctl, plist: &Path) -> Result<Answer, String> {
    ask_why(lc, plist).map_err(|why| why.to_string())
}

/// [`ask`], with why the state is unknown as facts.
pub fn ask_why(lc: &Launchctl, plist: &Path) -> Result<Answer, Unknown> {
    if let Some(why) = NO_ANSWER.get() {
        return Err(Unknown::NotAgain(Box::new(why.clone())));
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
    Hung(Unknown),
    /// It answered, but not with a state oyster knows (or could not be asked at all).
    Said(Unknown),
}

impl NoAnswer {
    fn hung(asked: Asked) -> NoAnswer {
        NoAnswer::Hung(Unknown::Hung(asked))
    }
}

/// ServiceManagement's `SMAppService.Status` number as a state; another number is said with
/// its value (a status a newer macOS added), never taken as fine.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))] // asked on macOS; unit-tested everywhere
pub fn from_raw(n: isize) -> Result<LoginItem, Unknown> {
    match n {
        0 => Ok(LoginItem::NotRegistered),
        1 => Ok(LoginItem::Enabled),
        2 => Ok(LoginItem::RequiresApproval),
        3 => Ok(LoginItem::NotFound),
        other => Err(Unknown::Status(other)),
    }
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
            return Err(NoAnswer::hung(Asked::Launchctl(lc.path.clone())))
        }
        Err(e) => return Err(NoAnswer::Said(Unknown::Run(e.to_string()))),
    };
    if f.code != 0 {
        return Err(NoAnswer::Said(Unknown::CannotSay {
            program: lc.path.clone(),
            code: f.code,
            said: f.stderr.lines().next().map(|l| l.trim().to_owned()),
        }));
    }
    let state = match f.stdout.trim() {
        "enabled" => LoginItem::Enabled,
        "requires approval" => LoginItem::RequiresApproval,
        "not registered" => LoginItem::NotRegistered,
        "not found" => LoginItem::NotFound,
        other => {
            return Err(NoAnswer::Said(Unknown::Answered {
                program: lc.path.clone(),
                word: other.to_owned(),
            }))
        }
    };
    Ok(Answer { state, raw: None })
}

#[cfg(target_os = "macos")]
mod service_management {
    use std::path::Path;

    use objc2_foundation::NSURL;
    use objc2_service_management::SMAppService;

    use super::{from_raw, Answer, Asked, NoAnswer, Unknown, LIMIT};

    /// Asks on a thread of its own, inside an autorelease pool, and waits at most [`LIMIT`]:
    /// `statusForLegacyURL:` has no time limit, and a wedged Background Task Management daemon
    /// would hold the caller forever. A thread that never returns is left behind (it ends
    /// with the process); its answer, if it ever comes, goes nowhere.
    pub fn status(plist: &Path) -> Result<Answer, NoAnswer> {
        if !objc2::available!(macos = 13.0) {
            return Err(NoAnswer::Said(Unknown::BeforeMacos13));
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
            .map_err(|e| NoAnswer::Said(Unknown::NoThread(e.to_string())))?;
        match rx.recv_timeout(LIMIT) {
            Ok(Some(raw)) => Ok(Answer {
                state: from_raw(raw).map_err(NoAnswer::Said)?,
                raw: Some(raw),
            }),
            Ok(None) => Err(NoAnswer::Said(Unknown::NoFileUrl(plist.to_owned()))),
            Err(_) => Err(NoAnswer::hung(Asked::ServiceManagement)),
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
        assert!(from_raw(7).unwrap_err().to_string().contains("status 7"));
        let a = Answer {
            state: LoginItem::Enabled,
            raw: Some(1),
        };
        assert_eq!(a.words(), "allowed (ServiceManagement status 1)");
    }
}
