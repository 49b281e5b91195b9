//! The words of `host/` about what the Host runs: the Oysterun root, the pinned Node, and the
//! Full Disk Access grant they need (`privacy`, `signing`).

use std::fmt::{self, Display, Formatter};

use super::Hint;
use crate::host::node::{NodeNote, NodeProblem, Origin, Unusable, Why, MIN_MAJOR};
use crate::host::privacy::{Grant, NodeChanged, Protected};
use crate::host::root::{RootNote, RootProblem, SERVER};
use crate::host::signing::{GrantLifetime, Signing};

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
