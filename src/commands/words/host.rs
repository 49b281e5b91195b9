//! The words of `host/`: the stack's refusals, the lock directory's, the root's and the pinned
//! Node's, signing notes.

use std::fmt::{self, Display, Formatter};

use super::Hint;
use std::path::{Path, PathBuf};

use crate::host::declared::DeclaredNote;
use crate::host::launchenv::{NotInEnvironment, NotOnPath};
use crate::host::lock_dir::{LockDirRefusal, LockDirWhy};
use crate::host::node::{NodeNote, NodeProblem, Origin, Unusable, Why, MIN_MAJOR};
use crate::host::plan::PlanWords;
use crate::host::plist::{InstalledNote, PlistRefusal};
use crate::host::privacy::{Grant, NodeChanged, Protected};
use crate::host::root::{RootNote, RootProblem, SERVER};
use crate::host::signing::{GrantLifetime, Signing};
use crate::host::stack::StackRefusal;

said_as_invalid_or_failed!(StackRefusal);

/// `name (uid N)`, or `uid N` for a uid without a name.
fn who(uid: u32) -> String {
    crate::sys::user::name_of(uid).map_or(format!("uid {uid}"), |n| format!("{n} (uid {uid})"))
}

impl Display for StackRefusal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            StackRefusal::All => write!(
                f,
                "`all` is not a stack name: every stack is `--all` (start, stop, restart, uninstall, status)"
            ),
            StackRefusal::Reserved { name } => write!(
                f,
                "{name:?} is reserved by Oysterun (1.5.3 keeps local, phone, daily and shared for itself), so it cannot be a stack name"
            ),
            StackRefusal::BadName { name } => write!(
                f,
                "invalid stack name {name:?}: use `production`, `staging`, or a name matching \
                 [a-z][a-z0-9-]{{0,31}} (a lowercase letter, then up to 31 lowercase letters, digits or dashes)"
            ),
            StackRefusal::NoHome => {
                write!(f, "HOME is not set; oyster needs it to find the stack's files")
            }
            StackRefusal::RelativeHome { home } => write!(
                f,
                "HOME is {}, which is not an absolute path",
                home.display()
            ),
            StackRefusal::RelativeDir { var, value } => write!(
                f,
                "{var} is {:?}, not an absolute path; launchd and the Host expand nothing, so \
                 `~` or a relative path would mean a directory relative to wherever they run",
                value.display().to_string()
            ),
            StackRefusal::LogDir { dir, what } => write!(
                f,
                "the log directory {} is {what}; the Host's log cannot be written in it",
                dir.display()
            ),
            StackRefusal::SpecialLog { log, kind } => {
                let why = match *kind {
                    "a symlink" => "the Host's output would go wherever it points",
                    "a FIFO (named pipe)" => {
                        "opening it blocks until someone reads it, so the Host would never start"
                    }
                    _ => "the Host's output cannot be appended to it",
                };
                write!(
                    f,
                    "the Host log {} is {kind}, not a regular file; {why}",
                    log.display()
                )
            }
            StackRefusal::AgentsDir {
                dir,
                owner,
                me,
                mode,
            } => {
                write!(
                    f,
                    "oyster cannot write the LaunchAgent into {}: ",
                    dir.display()
                )?;
                if owner != me {
                    write!(
                        f,
                        "it is owned by {} (mode {mode:04o}), not by you ({})",
                        who(*owner),
                        who(*me)
                    )?;
                } else {
                    write!(
                        f,
                        "its mode is {mode:04o}, so even you, its owner, cannot create files in it"
                    )?;
                }
                write!(f, "; nothing was changed")
            }
            StackRefusal::Unknown { name, list, .. } => write!(
                f,
                "there is no stack named {name:?} on this machine (known stacks: {list})"
            ),
        }
    }
}

impl Hint for StackRefusal {
    fn hint(&self) -> Option<String> {
        Some(match self {
            StackRefusal::All => "`oyster restart --all`, or `oyster list` to see the stacks".into(),
            StackRefusal::Reserved { .. } => {
                "choose another name; `--all` acts on every stack".into()
            }
            StackRefusal::BadName { .. }
            | StackRefusal::NoHome
            | StackRefusal::RelativeHome { .. } => return None,
            StackRefusal::RelativeDir { var, .. } => {
                format!("set {var} to a full path, e.g. {var}=\"$HOME/…\"")
            }
            StackRefusal::LogDir { dir, .. } => format!(
                "move it aside (`mv {0} {0}.old`); oyster creates the directory",
                dir.display()
            ),
            StackRefusal::SpecialLog { log, .. } => format!(
                "remove it (`rm {}`); a regular Host log is created there when the Host starts",
                log.display()
            ),
            StackRefusal::AgentsDir {
                dir, owner, me, ..
            } => {
                let fix = if owner != me {
                    format!(
                        "`sudo chown $USER {}` (a `sudo` run of an installer or of oyster left it so)",
                        dir.display()
                    )
                } else {
                    format!("`chmod u+wx {}`", dir.display())
                };
                format!("{fix}, then run the command again")
            }
            StackRefusal::Unknown {
                near: Some(near), ..
            } => format!("did you mean `{near}`? (`oyster list` shows every stack)"),
            StackRefusal::Unknown { name, near: None, .. } => format!(
                "check the name with `oyster list`; a new stack is created by `oyster setup {name}` (or `oyster install {name} --port N`)"
            ),
        })
    }
}

said_as_invalid_or_failed!(LockDirRefusal);

/// `at` as one shell word for a command in a hint: `~/…` under `home` (the rest quoted when it
/// needs it, as macOS's `Library/Application Support` does), else the whole path.
fn word(home: &Path, at: &Path) -> String {
    let quoted = |s: &str| {
        let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:,@%".contains(c);
        if !s.is_empty() && s.chars().all(plain) {
            s.to_owned()
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    match at.strip_prefix(home) {
        Ok(rel) if !rel.as_os_str().is_empty() => format!("~/{}", quoted(&rel.to_string_lossy())),
        _ => quoted(&at.to_string_lossy()),
    }
}

impl Display for LockDirRefusal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let (dir, at) = (self.dir.display(), self.at.display());
        match &self.why {
            LockDirWhy::NotADirectory { what } => write!(
                f,
                "oyster keeps each stack's lifecycle lock in {dir}, but {at} is {what}, not a directory; nothing was changed"
            ),
            LockDirWhy::Dangling { to } => write!(
                f,
                "oyster keeps each stack's lifecycle lock in {dir}, but {at} is a symlink to {}, which does not exist; nothing was changed",
                to.display()
            ),
            LockDirWhy::Unwritable {
                owner,
                me,
                mode,
                file,
            } => {
                write!(f, "oyster cannot take the stack's lifecycle lock in {dir}: ")?;
                if owner == me {
                    write!(
                        f,
                        "{at} has mode {mode:04o}, so even you, its owner, cannot write {}",
                        if *file { "it" } else { "in it" }
                    )?;
                } else {
                    write!(
                        f,
                        "{at} is owned by {} (mode {mode:04o}), not by you ({})",
                        who(*owner),
                        who(*me)
                    )?;
                }
                write!(f, "; nothing was changed")
            }
        }
    }
}

impl Hint for LockDirRefusal {
    fn hint(&self) -> Option<String> {
        let (home, at) = (&self.home, &self.at);
        Some(match &self.why {
            LockDirWhy::NotADirectory { .. } => format!(
                "move it aside (`mv {0} {1}`) or make it a directory, then run the command again",
                word(home, at),
                word(home, &PathBuf::from(format!("{}.moved", at.display())))
            ),
            LockDirWhy::Dangling { .. } => format!(
                "remove the link (`rm {}`) or restore its target, then run the command again",
                word(home, at)
            ),
            LockDirWhy::Unwritable {
                owner, me, file, ..
            } => {
                let fix = if owner == me {
                    format!(
                        "`chmod u+w{} {}`",
                        if *file { "" } else { "x" },
                        at.display()
                    )
                } else {
                    format!(
                        "`sudo chown $USER {}` (a `sudo` run of an installer or of oyster left it so)",
                        word(home, at)
                    )
                };
                format!("{fix}, then run the command again")
            }
        })
    }
}

said_as_invalid_or_failed!(PlanWords);

impl Display for PlanWords {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            PlanWords::NoPort { stack, config } => write!(
                f,
                "stack {stack} has no port yet; pass --port N once and it is recorded in {}",
                config.display()
            ),
            PlanWords::PortChangedMeanwhile => write!(
                f,
                "config.json's port was changed by another command meanwhile: left as it is"
            ),
            PlanWords::PortBack(None) => write!(f, "config.json has no port again"),
            PlanWords::PortBack(Some(from)) => write!(f, "config.json's port is {from} again"),
        }
    }
}

impl Hint for PlanWords {
    fn hint(&self) -> Option<String> {
        None
    }
}

said_as_invalid_or_failed!(NotInEnvironment);

impl Display for NotInEnvironment {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            NotInEnvironment::NodeWithoutDir(node) => {
                write!(f, "node path {} has no directory", node.display())
            }
            NotInEnvironment::PathEntryNotUtf8(dir) => {
                write!(f, "PATH entry {} is not valid UTF-8", dir.display())
            }
            NotInEnvironment::NotOnPath { entry, why } => {
                let why = match why {
                    NotOnPath::Relative => "is not an absolute path",
                    NotOnPath::Colon => "contains `:`, the PATH separator",
                    NotOnPath::LineBreak => "contains a line break",
                    NotOnPath::Nul => "contains a NUL byte",
                };
                write!(
                    f,
                    "cannot put {entry:?} on the Host's PATH: it {why}. Move the executable to a \
                     directory whose path is plain (or point the provider at one with \
                     `oyster providers set`)"
                )
            }
            NotInEnvironment::NotUtf8 { name, path } => {
                write!(f, "{name} ({}) is not valid UTF-8", path.display())
            }
            NotInEnvironment::Control { name, value } => {
                write!(f, "{name} ({value:?}) contains a line break or NUL")
            }
        }
    }
}

impl Hint for NotInEnvironment {
    fn hint(&self) -> Option<String> {
        None
    }
}

impl Display for InstalledNote {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            InstalledNote::Unreadable(e) => write!(f, "ignoring the installed plist: {e}"),
            InstalledNote::NotAPlist { path, problem } => write!(
                f,
                "the installed {} does not parse ({problem}); ignoring its pins",
                path.display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_in_a_hint_quotes_a_path_with_a_space_after_the_tilde() {
        let home = Path::new("/Users/a b");
        let at = home.join("Library/Application Support");
        assert_eq!(word(home, &at), "~/'Library/Application Support'");
        assert_eq!(word(home, &home.join(".local")), "~/.local");
        assert_eq!(word(home, Path::new("/o'k")), "'/o'\\''k'");
    }
}

impl Display for GrantLifetime {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let name = &self.name;
        match &self.signing {
            Signing::AdHoc => write!(
                f,
                "add it again after every {name} upgrade: it is ad-hoc signed (as Homebrew's builds are), so each build is a new program to macOS"
            ),
            Signing::DeveloperId(team) if self.versioned => write!(
                f,
                "add it again after every {name} upgrade: it is signed by Developer ID (team {team}), but its path changes with the version"
            ),
            Signing::DeveloperId(team) => write!(
                f,
                "a grant holds across {name} upgrades that keep this path: it is signed by Developer ID (team {team})"
            ),
            Signing::Other(who) => write!(
                f,
                "add it again after every {name} upgrade unless the upgrade keeps this path and its signer ({who})"
            ),
            Signing::Unknown(why) => write!(
                f,
                "add it again after every {name} upgrade if it is ad-hoc signed, as Homebrew's builds are (its signature could not be read: {why})"
            ),
        }
    }
}

impl Display for Grant {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Otherwise grant access under System Settings → Privacy & Security → Full Disk Access → + \
             (it asks for an administrator's name and password) to both programs that read it: Node \
             ({}; oyster becomes Node when launchd runs the Host), and {}; and oyster ({}), whose \
             launch program runs Oysterun's dashboard-credentials step as a Node child before the \
             Host starts (macOS charges that step to oyster: with only Node granted it fails with \
             \"Operation not permitted\", which is only logged), and {}",
            self.node.display(),
            self.node_lifetime,
            self.oyster.display(),
            self.oyster_lifetime,
        )
    }
}

impl Display for Protected {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} lies in {}, which macOS privacy protection keeps programs launchd \
             runs from reading (the Host would fail with \"Operation not permitted\"); move it \
             out (e.g. a checkout to ~/oysterun): that is the lasting fix. {}",
            self.what,
            self.path.display(),
            self.place,
            self.grant
        )
    }
}

impl Display for NodeChanged {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the pinned Node changed since the last verified start (was {}, now {}): a Full Disk Access grant given to the old one does not hold for it; add {} under System Settings → Privacy & Security → Full Disk Access → +",
            self.old,
            self.now.display(),
            self.now.display()
        )
    }
}

/// The whole sentence for a candidate Node, naming where it came from.
fn unusable(u: &Unusable, origin: &Origin) -> String {
    let p = u.path.display();
    match &u.why {
        Why::NotAbsolute => {
            format!("node from {origin} ({p}) is not an absolute path; give the full path to node")
        }
        Why::NotExecutable(why) => format!("node from {origin} ({p}) {why}"),
        Why::Version(why) => format!("node from {origin} ({p}): {why}"),
        Why::NotAVersion(v) => format!(
            "node from {origin} ({p}) printed {v:?} for --version, which is not a Node version"
        ),
        Why::TooOld(v) => format!(
            "node from {origin} ({p}) is {v}; the Host needs Node {MIN_MAJOR} or newer. \
             Install a newer Node or pass --node-bin"
        ),
    }
}

/// One item of a list of candidates passed over: `/usr/local/bin/node (v18.19.0)`.
fn brief(u: &Unusable) -> String {
    let p = u.path.display();
    match &u.why {
        Why::TooOld(v) => format!("{p} ({v})"),
        Why::NotAVersion(v) => format!("{p} (printed {v:?} for --version)"),
        // A child's stderr: its first line, with no control character reaching the terminal.
        Why::Version(why) => {
            let line: String = why
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .map(|c| if c.is_control() { '?' } else { c })
                .collect();
            format!("{p} ({line})")
        }
        Why::NotExecutable(why) => format!("{p} ({why})"),
        Why::NotAbsolute => format!("{p} (not an absolute path)"),
    }
}

/// `/a/node (v18.19.0), /b/node (…)`.
fn briefs(passed: &[Unusable]) -> String {
    passed.iter().map(brief).collect::<Vec<_>>().join(", ")
}

impl Display for NodeProblem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            NodeProblem::Given { origin, candidate } => f.write_str(&unusable(candidate, origin)),
            NodeProblem::Managed { candidate, .. } => {
                f.write_str(&unusable(candidate, &Origin::Managed))
            }
            NodeProblem::NoneNewEnough { passed, .. } => write!(
                f,
                "no `node` found is Node {MIN_MAJOR} or newer: {}",
                briefs(passed)
            ),
            NodeProblem::NoneFound { dirs } => write!(
                f,
                "no `node` was found on PATH or in {}; install Node {MIN_MAJOR} or newer, or pass \
                 --node-bin /full/path/to/node",
                dirs.join(", ")
            ),
        }
    }
}

impl Hint for NodeProblem {
    fn hint(&self) -> Option<String> {
        match self {
            NodeProblem::Managed { file, .. } => Some(format!(
                "ask your administrator to make node_bin in {} a Node {MIN_MAJOR} or newer that exists on this Mac",
                file.display()
            )),
            NodeProblem::NoneNewEnough { dirs, .. } => Some(format!(
                "install Node {MIN_MAJOR} or newer (on PATH or in {}), or pass --node-bin \
                 /full/path/to/node",
                dirs.join(", ")
            )),
            NodeProblem::Given { .. } | NodeProblem::NoneFound { .. } => None,
        }
    }
}

impl Display for NodeNote {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            NodeNote::Stale(why) => write!(
                f,
                "{}; resolving node again",
                unusable(why, &Origin::InstalledPlist)
            ),
            NodeNote::PassedOver {
                path,
                version,
                passed,
            } => write!(
                f,
                "using node {} ({version}), the first found that is Node {MIN_MAJOR} or newer; \
                 passed over {}",
                path.display(),
                briefs(passed)
            ),
        }
    }
}

said_as_invalid_or_failed!(RootProblem, NodeProblem);

impl Display for RootProblem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            RootProblem::Controls { origin, dir, c } => write!(
                f,
                "{origin} holds the control character U+{:04X}: {}",
                *c as u32,
                crate::output::one_line(dir)
            ),
            RootProblem::NotAbsolute { dir, cause } => {
                write!(f, "cannot make {} absolute: {cause}", dir.display())
            }
            RootProblem::NoServer { origin, root } => write!(
                f,
                "the Oysterun root from {origin} ({}) has no {SERVER}",
                root.display()
            ),
            RootProblem::Managed { problem, .. } => problem.fmt(f),
            RootProblem::NotFound { looked } => write!(
                f,
                "could not find the Oysterun install root (a directory holding {SERVER}); looked in: {}",
                looked.join("; ")
            ),
        }
    }
}

impl Hint for RootProblem {
    fn hint(&self) -> Option<String> {
        match self {
            RootProblem::Controls { origin, .. } => {
                Some(format!("give {origin} a path without control characters"))
            }
            RootProblem::Managed { file, .. } => Some(format!(
                "ask your administrator to make root in {} an Oysterun install on this Mac",
                file.display()
            )),
            RootProblem::NotFound { .. } => Some(
                "install Oysterun with `npm install -g oysterun`, or pass --root DIR (or set OYSTERUN_ROOT)"
                    .into(),
            ),
            RootProblem::NotAbsolute { .. } | RootProblem::NoServer { .. } => None,
        }
    }
}

impl Display for RootNote {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            RootNote::LookingFurther(e) => write!(f, "{e}; looking further"),
        }
    }
}

said_as_invalid_or_failed!(PlistRefusal);

impl Display for PlistRefusal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            PlistRefusal::Control { what, c, value } => write!(
                f,
                "{what} holds the control character U+{:04X}, which cannot go into a plist: {}",
                *c as u32,
                crate::output::redact::escape_controls(value)
            ),
            PlistRefusal::ForeignOwner { path, owner, me } => write!(
                f,
                "{} is owned by {}, not by you ({}): launchd refuses to load it, and oyster will not replace a file someone else owns",
                path.display(),
                user_name(*owner),
                user_name(*me)
            ),
        }
    }
}

/// A uid's name, or `uid N`.
fn user_name(uid: u32) -> String {
    crate::sys::user::name_of(uid).unwrap_or_else(|| format!("uid {uid}"))
}

impl Hint for PlistRefusal {
    fn hint(&self) -> Option<String> {
        Some(match self {
            PlistRefusal::Control { .. } => "use a path without control characters".into(),
            PlistRefusal::ForeignOwner { path, me, .. } => {
                let (p, mine) = (path.display(), user_name(*me));
                format!(
                    "remove it with `sudo rm {p}` (or take it over with `sudo chown {mine} {p}`), then run again"
                )
            }
        })
    }
}

impl Display for DeclaredNote {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            DeclaredNote::NotUsed(r) => write!(
                f,
                "the declared environment is not used: {r}; the Host starts without it (fix: {})",
                r.fix()
            ),
            DeclaredNote::Shadowed { name, forced, file } => write!(
                f,
                "{name}: your organization forces {forced} ({}), the same variable in another case; left out",
                file.display()
            ),
        }
    }
}
