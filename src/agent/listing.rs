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

impl Launchctl {
    /// Two calls, whatever the number of stacks: `print gui/<uid>` and `print user/<uid>`.
    pub fn listings(&self) -> anyhow::Result<Result<Listings, Unreadable>> {
        let read = |d: Domain| -> anyhow::Result<Result<Result<DomainListing, Code>, Unreadable>> {
            Ok(match self.print_domain(d)? {
                Err(code) => Ok(Err(code)),
                Ok(text) => match parse_domain(&text) {
                    Some(l) => Ok(Ok(l)),
                    None => Err(Unreadable(format!(
                        "`launchctl print {d}` has no `services = {{` table oyster can read"
                    ))),
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
/// `services = {` block at one tab (then the shape is not one oyster knows: ask per job).
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
            (1, Some(_)) if t == "}" => section = None,
            (2, Some("services")) => {
                let mut cols = t.split_whitespace();
                let (Some(pid), Some(status), Some(label), None) =
                    (cols.next(), cols.next(), cols.next(), cols.next())
                else {
                    return None;
                };
                let pid: u32 = pid.parse().ok()?;
                let status = match status {
                    "-" => None,
                    s => Some(s.parse().ok()?),
                };
                out.jobs.insert(
                    label.to_owned(),
                    Listed {
                        pid: (pid != 0).then_some(pid),
                        status,
                    },
                );
            }
            (2, Some("disabled")) => {
                let (label, value) = t.split_once("=>")?;
                let label = label.trim().trim_matches('"').to_owned();
                let disabled = match value.trim() {
                    "disabled" | "true" => true,
                    "enabled" | "false" => false,
                    _ => return None,
                };
                out.disabled.insert(label, disabled);
            }
            _ => {}
        }
    }
    saw_services.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPTURE_SHAPE: &str = "gui/501 = {\n\ttype = login\n\thandle = 100057\n\tactive count = 2\n\n\tservices = {\n\t\t    1076      -     com.oysterun.host\n\t\t       0     78     com.oysterun.host.dev\n\t\t       0     -9     com.apple.x\n\t}\n\n\tdisabled services = {\n\t\t\"com.oysterun.host.dev\" => disabled\n\t\t\"com.apple.y\" => enabled\n\t}\n}\n";

    #[test]
    fn the_services_table_and_overrides_are_read_row_by_row() {
        let l = parse_domain(CAPTURE_SHAPE).unwrap();
        assert_eq!(
            l.jobs["com.oysterun.host"],
            Listed {
                pid: Some(1076),
                status: None
            }
        );
        assert_eq!(l.jobs["com.oysterun.host.dev"].status, Some(78));
        assert_eq!(l.jobs["com.apple.x"].status, Some(-9));
        assert_eq!(l.disabled.get("com.oysterun.host.dev"), Some(&true));
        assert_eq!(l.disabled.get("com.apple.y"), Some(&false));
    }

    #[test]
    fn a_shape_oyster_does_not_know_is_none_never_a_guess() {
        assert_eq!(parse_domain("gui/501 = {\n\ttype = login\n}\n"), None);
        assert_eq!(
            parse_domain("x = {\n\tservices = {\n\t\tnot a row\n\t}\n}\n"),
            None
        );
    }

    #[test]
    fn a_listed_job_reads_as_print_would_say_it() {
        let l = parse_domain(CAPTURE_SHAPE).unwrap();
        let listings = Listings {
            gui: Ok(l),
            user: Err(Code::NotLoaded),
        };
        let both = listings.both("com.oysterun.host");
        let info = both.gui.unwrap();
        assert!(info.running());
        assert_eq!(info.pid(), Some(1076));
        let dead = listings.both("com.oysterun.host.dev").gui.unwrap();
        assert!(!dead.running());
        assert_eq!(dead.last_exit().and_then(|e| e.code()), Some(78));
        assert_eq!(listings.both("nope").gui.unwrap_err(), Code::NotLoaded);
    }
}
