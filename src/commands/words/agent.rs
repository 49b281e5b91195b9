//! The words of `agent/` (launchd's job and the status model): why launchd refused a
//! bootstrap and the fix, why the Login Items state is unknown, the notes of `status`, what the
//! everyday verbs say on their way, and `kill`'s refusals.

use std::fmt::{self, Display, Formatter};
use std::path::Path;

use crate::agent::listing::NoServicesTable;
use crate::agent::login_items::{Answer, Asked, LoginItem, Unknown, LIMIT};
use crate::agent::refusal::{Found, NoReason};
use crate::agent::status::StatusNote;
use crate::agent::verbs::{KillRefusal, StopFinished, VerbNote};
use crate::error::Failed;
use crate::launchctl::Domain;
use crate::output::{one_line, shell_word};

/// How a fix for a command launchd refused ends (not a note on a loaded job's status).
const THEN_AGAIN: &str = "; then run the command again";

/// A copy's pid, or that it runs none.
fn pid_or_not_running(pid: Option<u32>) -> String {
    pid.map_or("not running".into(), |p| format!("pid {p}"))
}

/// Where to switch the agent on in Login Items, naming the item as System Settings lists it:
/// after the program the agent runs (`oyster`), or after the developer who signed it.
fn login_items_fix(program: &str) -> String {
    let name = Path::new(program)
        .file_name()
        .map_or_else(|| "oyster".to_owned(), |n| n.to_string_lossy().into_owned());
    format!(
        "open System Settings → General → Login Items, and under \"Allow in the Background\" \
         switch on \"{name}\" (the item is named after the program the agent runs, {program}, \
         or after the developer who signed it){THEN_AGAIN}"
    )
}

/// What holds, as a clause.
impl Display for Found {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Found::Disabled { target, domain } => write!(
                f,
                "launchd has {target} disabled (`launchctl print-disabled {domain}`), although \
                 oyster enabled it just before"
            ),
            Found::SwitchedOff { .. } => f.write_str(
                "the agent is switched off in System Settings → General → Login Items (\"Allow \
                 in the Background\"), or was never approved, so launchd will not load it; \
                 `launchctl enable` does not change that",
            ),
            Found::SessionType {
                types,
                session,
                domain,
                ..
            } => write!(
                f,
                "the plist's LimitLoadToSessionType ({}) does not include {session}, the \
                 session of {domain}",
                types.join(", ")
            ),
            Found::Symlink { path } => write!(
                f,
                "{} is a symbolic link, which launchd refuses",
                path.display()
            ),
            Found::Ownership {
                path,
                dir,
                uid,
                mode,
                me,
            } => write!(
                f,
                "{}{} has an owner or mode launchd refuses (owner uid {uid}, mode {mode:o}): it \
                 must be yours (uid {me}) and not writable by group or others",
                path.display(),
                if *dir { ", the plist's directory," } else { "" }
            ),
            Found::LogDirNotDir { dir, .. } => {
                write!(f, "the log directory {} is not a directory", dir.display())
            }
            Found::LogDirMissing { dir, log, .. } => write!(
                f,
                "the log directory {} of the plist's {log} does not exist",
                dir.display()
            ),
        }
    }
}

impl Found {
    /// What to do, as an imperative sentence.
    pub fn fix(&self) -> String {
        match self {
            Found::Disabled { target, .. } => format!(
                "run `launchctl enable {target}` and try again; if it is disabled again, a \
                 configuration profile (MDM) disables it"
            ),
            Found::SwitchedOff { program } => login_items_fix(program),
            Found::SessionType { regenerate, .. } => {
                format!("run `{regenerate}`, which writes it with every session type")
            }
            Found::Symlink { .. } => {
                "replace it by the file itself (`oyster agent regenerate` writes one) and try again"
                    .to_owned()
            }
            Found::Ownership { path, .. } => format!(
                "run `chmod go-w {}` (and `chown` it to yourself if it is not yours), then try \
                 again",
                path.display()
            ),
            Found::LogDirNotDir { dir, regenerate } => format!(
                "move what is at {} away, then run `{regenerate}` (it creates the directory)",
                dir.display()
            ),
            Found::LogDirMissing {
                dir, regenerate, ..
            } => format!(
                "run `{regenerate}` (it creates the directory) or `mkdir -p {}`",
                dir.display()
            ),
        }
    }
}

/// The hint when launchd refused a bootstrap and gave no reason (issue 39 item 7), in a form
/// this user can follow: `log show` refuses a user who is not an administrator, so one who is
/// not is told an administrator's `sudo` command; launchctl's own advice, when it gave it, is
/// kept as the command it means.
impl Display for NoReason {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let log = "log show --last 5m --predicate 'process == \"launchd\"'";
        if self.admin {
            write!(f, "`{log}` shows launchd's own reason")?;
        } else {
            write!(
                f,
                "an administrator can see launchd's own reason with `sudo {log}` (`log show` \
                 refuses a user who is not one)"
            )?;
        }
        if self.root_advice {
            write!(
                f,
                "; launchctl's own advice, re-running it as root for a richer error, is `sudo \
                 launchctl bootstrap {} {}`{}",
                self.domain,
                shell_word(&self.plist.to_string_lossy()),
                if self.admin {
                    ""
                } else {
                    " (also an administrator's)"
                }
            )?;
        }
        write!(f, "; `{}` checks the rest", self.doctor)
    }
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

impl Answer {
    /// The state in words, with ServiceManagement's number when there is one.
    pub fn words(self) -> String {
        match self.raw {
            Some(n) => format!("{} (ServiceManagement status {n})", self.state.words()),
            None => self.state.words().to_owned(),
        }
    }
}

impl Display for Unknown {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Unknown::Hung(asked) => {
                match asked {
                    Asked::Launchctl(path) => write!(f, "{} login-item-status", path.display())?,
                    Asked::ServiceManagement => {
                        f.write_str("ServiceManagement (SMAppService.statusForLegacyURL)")?;
                    }
                }
                write!(
                    f,
                    " did not answer within {} s (the Background Task Management daemon behind \
                     Login Items may be wedged)",
                    LIMIT.as_secs()
                )
            }
            Unknown::NotAgain(why) => write!(f, "{why}; not asked again in this run"),
            Unknown::Status(n) => write!(
                f,
                "ServiceManagement answered status {n}, which oyster does not know"
            ),
            Unknown::Run(said) => f.write_str(said),
            Unknown::CannotSay {
                program,
                code,
                said,
            } => write!(
                f,
                "{} cannot say (`login-item-status` exited {code}{})",
                program.display(),
                said.as_ref().map_or(String::new(), |l| format!(": {l}"))
            ),
            Unknown::Answered { program, word } => write!(
                f,
                "{} answered {word:?} for the Login Items status",
                program.display()
            ),
            Unknown::BeforeMacos13 => f.write_str(
                "Login Items exist from macOS 13, and ServiceManagement cannot be asked before it",
            ),
            Unknown::NoThread(e) => write!(f, "could not start the Login Items query: {e}"),
            Unknown::NoFileUrl(path) => {
                write!(f, "{} cannot be made a file URL", path.display())
            }
        }
    }
}

impl Display for StatusNote {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            StatusNote::Unusable { why, fix } => write!(f, "{why}; fix: {fix}"),
            StatusNote::Pending { regenerate } => pending(f, regenerate),
            StatusNote::PlistDeleted { plist, restart } => plist_deleted(f, plist, restart),
            StatusNote::Newcomer {
                stack,
                setup,
                setup_root,
            } => newcomer(f, stack, setup, setup_root),
            StatusNote::ConfigDirNotDir { dir, setup } => config_dir_not_dir(f, dir, setup),
            StatusNote::Broken(why) => write!(f, "broken: {why}"),
            StatusNote::LaunchctlFailed(why) => write!(f, "launchctl failed: {why}"),
            StatusNote::SystemctlFailed(why) => write!(f, "systemctl failed: {why}"),
            StatusNote::PidExited { pid, status } => write!(
                f,
                "pid {pid} has exited; launchd has not noticed yet (its exit code and the next \
                 start follow in a moment: `{status}` again)"
            ),
            StatusNote::ThrottleAfterKill => f.write_str(
                "launchd waits out its throttle (ThrottleInterval) before starting the Host \
                 again after `oyster kill`'s SIGTERM; not a crash loop",
            ),
            StatusNote::Keychain {
                user,
                keeping,
                restart,
                gui,
            } => keychain(f, *user, keeping, restart, *gui),
            StatusNote::SwitchedOff { found, loaded } => switched_off(f, found, *loaded),
            StatusNote::LoadedTwice {
                label,
                first,
                second,
                restart,
            } => loaded_twice(f, label, *first, *second, restart),
            StatusNote::WhoRunsUnknown { systemd, pid } => who_runs_unknown(f, *systemd, *pid),
            StatusNote::StartedDirectly { stop } => write!(
                f,
                "started directly (`oyster host start`): `{stop}` stops it"
            ),
            StatusNote::DeclaredStale { names, restart } => write!(
                f,
                "the declared environment changed since this Host started ({}): `{restart}` \
                 applies it",
                names.join(", ")
            ),
            StatusNote::UnitSpecial {
                path,
                kind,
                install,
            } => unit_special(f, path, kind, install),
            StatusNote::DropIns(paths) => {
                let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                write!(
                    f,
                    "drop-ins change the unit beside oyster's file: {}",
                    paths.join(", ")
                )
            }
            StatusNote::NeedsDaemonReload { restart } => write!(
                f,
                "the unit file changed since systemd read it; `{restart}` reloads it"
            ),
        }
    }
}

fn pending(f: &mut Formatter<'_>, regenerate: &str) -> fmt::Result {
    write!(
        f,
        "an earlier change was interrupted before it verified; `{regenerate}` re-verifies it \
         (and rolls back if it fails)"
    )
}

fn plist_deleted(f: &mut Formatter<'_>, plist: &Path, restart: &str) -> fmt::Result {
    write!(
        f,
        "{} was deleted while the job is loaded: it will not start at the next login; \
         `{restart}` writes it again",
        plist.display()
    )
}

fn config_dir_not_dir(f: &mut Formatter<'_>, dir: &Path, setup: &str) -> fmt::Result {
    write!(
        f,
        "broken: the config dir {} is not a directory, so the stack's config.json cannot be \
         read; move it aside (or remove it) and run `{setup}`",
        dir.display()
    )
}

fn newcomer(f: &mut Formatter<'_>, stack: &str, setup: &str, setup_root: &str) -> fmt::Result {
    write!(
        f,
        "nothing is set up for stack {stack} yet: install Oysterun (`npm install -g oysterun`), \
         then run `{setup}` (for a checkout: `{setup_root}`)"
    )
}

fn unit_special(f: &mut Formatter<'_>, path: &Path, kind: &str, install: &str) -> fmt::Result {
    write!(
        f,
        "{} is {kind}, not a regular file: every verb that loads the Host refuses it; replace \
         it with the real file (or remove it, then `{install}`)",
        one_line(path)
    )
}

fn keychain(
    f: &mut Formatter<'_>,
    user: Domain,
    keeping: &[&str],
    restart: &str,
    gui: Domain,
) -> fmt::Result {
    write!(
        f,
        "the Host runs in {user}, a Background session, where the login keychain is \
         locked: a provider that keeps its login there ({}) can fail to authenticate \
         although the Host looks healthy; `{restart}` at the console moves it to {gui}, \
         or log in at the console once",
        keeping.join(", ")
    )
}

fn switched_off(f: &mut Formatter<'_>, found: &Found, loaded: bool) -> fmt::Result {
    let fix = found.fix();
    if !loaded {
        return write!(f, "{found}: {fix}");
    }
    // Loaded, it is not "a job launchd will not load", and status ran no command to run
    // again.
    write!(
        f,
        "the agent is switched off in System Settings → General → Login Items (\"Allow in the \
         Background\"): it is loaded now (it was loaded before), but will not be loaded again \
         at the next login, and a change that reloads it (made with a note, since this answer \
         can be wrong for a Host that runs) would leave it down: {}",
        fix.strip_suffix(THEN_AGAIN).unwrap_or(&fix)
    )
}

fn loaded_twice(
    f: &mut Formatter<'_>,
    label: &str,
    (first, a): (Domain, Option<u32>),
    (second, b): (Domain, Option<u32>),
    restart: &str,
) -> fmt::Result {
    write!(
        f,
        "loaded twice: {label} is loaded in {first} ({}) and in {second} ({}), two Hosts for \
         one port; `{restart}` boots the {second} copy out (or `launchctl bootout {}`)",
        pid_or_not_running(a),
        pid_or_not_running(b),
        second.target(label),
    )
}

fn who_runs_unknown(f: &mut Formatter<'_>, systemd: bool, pid: u32) -> fmt::Result {
    if systemd {
        return write!(
            f,
            "so whether the systemd unit or `oyster host start` runs this Host (pid {pid}) is \
             not known"
        );
    }
    write!(
        f,
        "launchctl could not be asked, so whether launchd (the LaunchAgent) or `oyster host \
         start` runs this Host (pid {pid}) is not known"
    )
}

impl Display for VerbNote {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            VerbNote::DisabledAgain { label } => write!(
                f,
                "{label} is disabled again, as `stop` left it: the Host stays stopped at login"
            ),
            VerbNote::NotDisabledAgain { label, why, stop } => write!(
                f,
                "the start failed and {label} could not be disabled again ({why}): a login may \
                 load it; `{stop}` keeps it stopped"
            ),
            VerbNote::KeepAlive => {
                f.write_str("launchd starts the Host again by itself (KeepAlive)")
            }
            VerbNote::StillListed { target } => write!(
                f,
                "`launchctl bootout {target}` answered 5 and launchd still lists it (going away, \
                 or stuck); `launchctl print {target}` shows its state"
            ),
        }
    }
}

impl Display for StopFinished {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            StopFinished::Kept { label } => write!(
                f,
                "{label} was booted out and left enabled (--keep): the next login starts it again"
            ),
            StopFinished::Disabled { label, pid, plist } => write!(
                f,
                "{label} was booted out{} and disabled, so it stays stopped (also at the next \
                 login); kept {}",
                pid.map_or(String::new(), |p| format!(
                    " (launchd finishes stopping pid {p})"
                )),
                plist.display()
            ),
        }
    }
}

impl From<KillRefusal> for Failed {
    fn from(r: KillRefusal) -> Failed {
        let (msg, hint) = match r {
            KillRefusal::LoadedTwice {
                label,
                first: (first, a),
                second: (second, b),
                restart,
            } => (
                format!(
                    "{label} is loaded twice, in {first} ({}) and in {second} ({}): two Hosts for \
                     one port, so no Host was signalled",
                    pid_or_not_running(a),
                    pid_or_not_running(b),
                ),
                format!(
                    "`{restart}` boots the {second} copy out and starts one Host (or `launchctl \
                     bootout {}`)",
                    second.target(&label),
                ),
            ),
            KillRefusal::NotLoaded {
                label,
                start,
                status,
            } => (
                format!("{label} is not loaded, so there is no Host to signal"),
                format!("`{start}` starts it; `{status}` shows why it is not loaded"),
            ),
            KillRefusal::NotRunning { label, state, logs } => (
                format!(
                    "{label} is loaded but no Host is running (state = {}); launchd starts it \
                     again by itself",
                    state.as_deref().unwrap_or("unknown")
                ),
                format!("see `{logs}` for why it is not running"),
            ),
        };
        Failed::new(msg, hint)
    }
}

impl Display for NoServicesTable {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`launchctl print {}` has no `services = {{` table oyster can read",
            self.0
        )
    }
}
