//! One call per domain for every job in it: `launchctl print gui/<uid>` (and `user/<uid>`)
//! lists the domain's jobs in its `services = {` table — pid (0 when not running), last exit
//! status (`-` before any exit), label — and the domain's `disabled services = {` overrides.
//! `oyster list` reads these instead of printing each job (docs/launchd.md, "The domain
//! listing"; the layout is that of a real capture). A job the listing cannot describe well
//! enough (not running, or a Host whose environment only launchd can prove) is printed on
//! its own by the caller.

use std::collections::BTreeMap;

use crate::launchctl::{BothDomains, Code, Domain, Launchctl, PrintInfo};

/// One job as the `services` table shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub pid: Option<u32>,
    /// The last exit status: `None` before the first exit; negative: killed by that signal.
    pub status: Option<i32>,
}

/// A domain as one `print <domain>` shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainListing {
    pub jobs: BTreeMap<String, Listed>,
    /// `disabled services`: `true` disabled, `false` explicitly enabled.
    pub disabled: BTreeMap<String, bool>,
    /// Rows of either table that did not parse, verbatim (trimmed): skipped and counted,
    /// never a reason to reject the table. A label found only in here is asked for on its
    /// own ([`Listings::unsure`]).
    pub skipped: Vec<String>,
}

/// Both of this user's domains, each as its listing or the code that said it is missing.
#[derive(Debug, Clone)]
pub struct Listings {
    pub gui: Result<DomainListing, Code>,
    pub user: Result<DomainListing, Code>,
}

/// Why the listings could not be used: the caller then asks job by job, and says so.
#[derive(Debug)]
pub struct Unreadable(pub String);

/// `launchctl print DOMAIN` has no services table oyster can read (in words in
/// `commands/words/agent.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoServicesTable(pub Domain);

impl Launchctl {
    /// Two calls, whatever the number of stacks: `print gui/<uid>` and `print user/<uid>`.
    pub fn listings(&self) -> anyhow::Result<Result<Listings, Unreadable>> {
        let read = |d: Domain| -> anyhow::Result<Result<Result<DomainListing, Code>, Unreadable>> {
            Ok(match self.print_domain(d)? {
                Err(code) => Ok(Err(code)),
                Ok(text) => match parse_domain(&text) {
                    Some(l) => Ok(Ok(l)),
                    None => Err(Unreadable(NoServicesTable(d).to_string())),
                },
            })
        };
        let gui = read(Domain::gui())?;
        let user = read(Domain::user())?;
        Ok(match (gui, user) {
            (Ok(gui), Ok(user)) => Ok(Listings { gui, user }),
            (Err(e), _) | (_, Err(e)) => Err(e),
        })
    }
}

impl Listings {
    /// The label as `print` would answer in each domain, from the listings alone: a job the
    /// table shows becomes a [`PrintInfo`] with what the table says (state, pid, last exit);
    /// one it does not show is "not loaded" (113); a missing domain keeps its code.
    pub fn both(&self, label: &str) -> BothDomains {
        let one = |l: &Result<DomainListing, Code>| match l {
            Err(code) => Err(*code),
            Ok(l) => l.jobs.get(label).map(as_print).ok_or(Code::NotLoaded),
        };
        BothDomains {
            gui: one(&self.gui),
            user: one(&self.user),
        }
    }

    /// Whether the listings cannot answer for `label`: a row that did not parse mentions it,
    /// so "not in the table" may be wrong. The caller then asks launchd for the job itself.
    pub fn unsure(&self, label: &str) -> bool {
        [&self.gui, &self.user]
            .into_iter()
            .filter_map(|l| l.as_ref().ok())
            .any(|l| l.skipped.iter().any(|row| names(row, label)))
    }

    /// How many rows the listings skipped (neither a job row nor an override oyster can read).
    pub fn skipped(&self) -> usize {
        [&self.gui, &self.user]
            .into_iter()
            .filter_map(|l| l.as_ref().ok())
            .map(|l| l.skipped.len())
            .sum()
    }

    /// The override for `label` in `domain`, as its listing shows it (`None`: no override, or
    /// the domain is missing).
    pub fn disabled(&self, domain: Domain, label: &str) -> Option<bool> {
        let l = if domain == Domain::gui() {
            &self.gui
        } else {
            &self.user
        };
        l.as_ref().ok().and_then(|l| l.disabled.get(label).copied())
    }
}

/// Whether `row` names `label` as a whole: not as the start of a longer label
/// (`com.oysterun.host`, production's, begins every other stack's label, and a row about
/// `com.oysterun.host.dev` says nothing of it), nor as the end of one.
fn names(row: &str, label: &str) -> bool {
    let part = |c: char| c.is_alphanumeric() || matches!(c, '.' | '-' | '_');
    row.match_indices(label).any(|(at, _)| {
        let before = row[..at].chars().next_back();
        let after = row[at + label.len()..].chars().next();
        !before.is_some_and(part) && !after.is_some_and(part)
    })
}

/// What the table says of a job, in `print`'s words, so one reader serves both.
fn as_print(job: &Listed) -> PrintInfo {
    let mut fields = BTreeMap::new();
    let state = if job.pid.is_some() {
        "running"
    } else {
        "not running"
    };
    fields.insert("state".to_owned(), state.to_owned());
    if let Some(pid) = job.pid {
        fields.insert("pid".to_owned(), pid.to_string());
    }
    match job.status {
        None => fields.insert("last exit code".to_owned(), "(never exited)".to_owned()),
        Some(s) if s < 0 => fields.insert(
            "last terminating signal".to_owned(),
            format!("Signal: {}", s.unsigned_abs()),
        ),
        Some(s) => fields.insert("last exit code".to_owned(), s.to_string()),
    };
    PrintInfo {
        fields,
        environment: BTreeMap::new(),
        arguments: vec![],
    }
}

/// The `services` table and `disabled services` of a domain print. `None` when there is no
/// `services = {` block at one tab (then the shape is not one oyster knows: ask per job). A
/// row of either table that does not parse is skipped and kept in
/// [`DomainListing::skipped`]: one odd row (a label launchd prints in a way oyster does not
/// expect) never makes the whole domain unreadable.
pub fn parse_domain(text: &str) -> Option<DomainListing> {
    let mut out = DomainListing::default();
    let mut section: Option<&str> = None;
    let mut saw_services = false;
    for line in text.lines() {
        // The domain's own keys are one tab in; the tables' rows two.
        let depth = line.len() - line.trim_start_matches('\t').len();
        let t = line.trim();
        match (depth, section) {
            (1, _) if t == "services = {" => {
                section = Some("services");
                saw_services = true;
            }
            (1, _) if t == "disabled services = {" => section = Some("disabled"),
            (_, Some(_)) if t == "}" => section = None,
            (2.., Some("services")) if !t.is_empty() => match parse_service_row(t) {
                Some((label, job)) => {
                    out.jobs.insert(label.to_owned(), job);
                }
                None => out.skipped.push(t.to_owned()),
            },
            (2.., Some("disabled")) if !t.is_empty() => match parse_override_row(t) {
                Some((label, disabled)) => {
                    out.disabled.insert(label.to_owned(), disabled);
                }
                None => out.skipped.push(t.to_owned()),
            },
            _ => {}
        }
    }
    saw_services.then_some(out)
}

/// One `services` row: the pid (0 when not running), the last exit status (`-` before any
/// exit), then the label — **the rest of the row** after the whitespace (spaces or a tab)
/// that ends the status. A label is any string a plist gives (spaces included), and launchd
/// prints labels such as `UIKitApplication:com.apple.Preferences[704b][rb-legacy]`; so the
/// label is never split, only the two numeric columns before it are.
fn parse_service_row(row: &str) -> Option<(&str, Listed)> {
    let row = row.trim_start();
    let (pid, rest) = row.split_once(|c: char| c.is_whitespace())?;
    let rest = rest.trim_start();
    let (status, rest) = rest.split_once(|c: char| c.is_whitespace())?;
    let label = rest.trim();
    if label.is_empty() {
        return None;
    }
    let pid: u32 = pid.parse().ok()?;
    let status = match status {
        "-" => None,
        s => Some(s.parse().ok()?),
    };
    Some((
        label,
        Listed {
            pid: (pid != 0).then_some(pid),
            status,
        },
    ))
}

/// One `disabled services` row: `"label" => disabled|enabled` (macOS 13 on), `=> true|false`
/// (through macOS 12). The label is what lies between the first and the last quote before
/// the last `=>`, so a label holding `=>` or quotes stays whole.
fn parse_override_row(row: &str) -> Option<(&str, bool)> {
    let (label, value) = row.rsplit_once("=>")?;
    let label = label.trim().strip_prefix('"')?.strip_suffix('"')?;
    let disabled = match value.trim() {
        "disabled" | "true" => true,
        "enabled" | "false" => false,
        _ => return None,
    };
    Some((label, disabled))
}

#[cfg(test)]
#[path = "listing_tests.rs"]
mod tests;
