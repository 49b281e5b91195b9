//! The one decision of a run that changes a job: from what was observed (in one neutral shape
//! every manager fills), the plan and the request, either a refusal or the list of steps the
//! run takes. Pure: no process, no file, no clock — every refusal of a job verb is decided
//! here and tested without processes (`tests` below).

use std::path::PathBuf;

use super::step::{ConfigEdit, Step};

/// The job as a manager shows it in one place (a launchd domain, the systemd user manager).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// The manager's name for it there (`gui/501/com.oysterun.host`, a unit name).
    pub target: String,
    /// The running instance's pid (`None`: loaded, nothing running).
    pub pid: Option<u32>,
    /// Whether the instance runs (or is on its way to).
    pub running: bool,
    /// Whether the loaded definition is the one the plan generates (path, program, arguments,
    /// the generated environment): a definition changed behind oyster's back is reloaded.
    pub matches: bool,
}

/// Who holds the port the Host is to listen on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortHolder {
    /// Nobody, or this stack's own Host.
    Free,
    /// Another process, seen in two listings in a row (and its oyster stack, when it is one).
    Foreign {
        pid: u32,
        name: String,
        stack: Option<String>,
    },
    /// No socket this user may inspect, yet the port cannot be bound (another user's).
    Invisible,
    /// The listing failed: said, never refused.
    Unknown(String),
}

/// Everything a decision reads, observed once by the manager (docs/architecture.md).
#[derive(Debug, Clone)]
pub struct Observed {
    /// The targets an enable or disable is asked in, where oyster acts first (launchd: both
    /// of the user's domains; systemd: the unit).
    pub everywhere: Vec<String>,
    /// Where oyster acts: the target a load goes to.
    pub here: String,
    /// The job where oyster acts, when it is loaded there.
    pub loaded_here: Option<Loaded>,
    /// Copies loaded elsewhere (launchd's other domain): booted out by any change, so that one
    /// Host serves the port.
    pub others: Vec<Loaded>,
    /// The definition's path, and whether its bytes on disk differ from the plan's.
    pub definition: PathBuf,
    pub definition_changed: bool,
    /// An earlier run stopped before its change verified (its receipt is on disk).
    pub pending: bool,
    /// `stop` left the job disabled where oyster acts, or anywhere.
    pub disabled_here: bool,
    pub disabled_anywhere: bool,
    /// The manager will not load the job again (launchd: switched off in Login Items).
    pub switched_off: bool,
    /// Who holds the plan's port (asked only for a request that starts a Host).
    pub port: PortHolder,
    /// A Host of this stack started directly (`oyster host start`), which the manager's job
    /// takes over (systemd: stopped by identity, the port kept); `None` where the manager
    /// refuses beside one instead (launchd).
    pub direct: Option<u32>,
}

/// What the user asked of the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Make the job run the plan's definition (`install`, `regenerate`): a changed definition
    /// is loaded again, an unchanged running one left alone.
    Apply,
    /// [`Request::Apply`], and an unchanged job restarted too (`restart`).
    Restart,
    /// Undo `stop`: enable everywhere, then [`Request::Apply`] (`start`).
    Start,
}

/// What one run does to the job, decided once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The loaded job already runs this definition and nothing asks for more: verify only.
    Unchanged,
    /// The same definition, restarted gracefully; a failure has nothing to roll back to.
    Restart,
    /// A new or changed definition: unload, load; a failure rolls back.
    Reload,
    /// An earlier run died before its change verified: this one takes the step the change
    /// still needs, verifies, and rolls back to the last good definition when it does not.
    Recover(Then),
}

/// The step a change takes on the manager before verifying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    Verify,
    Restart,
    Reload,
}

impl Change {
    /// The step this change takes before verifying.
    pub fn then(self) -> Then {
        match self {
            Change::Unchanged => Then::Verify,
            Change::Restart => Then::Restart,
            Change::Reload => Then::Reload,
            Change::Recover(then) => then,
        }
    }

    /// Whether a failed verification rolls the definition back (else it is said, and the job
    /// stays as it is: nothing about the definition changed).
    pub fn rolls_back(self) -> bool {
        matches!(self, Change::Reload | Change::Recover(_))
    }
}

/// A refusal, decided before anything is written; `commands/` says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Another process holds the port.
    PortHeld {
        port: u16,
        pid: u32,
        name: String,
        stack: Option<String>,
    },
    /// A process oyster cannot see holds the port.
    PortInvisible { port: u16 },
    /// The change would reload a loaded job the manager will not load again (launchd:
    /// switched off in Login Items), leaving the running Host down.
    SwitchedOff { target: String },
}

/// Another stack of this user whose job is installed on the port a run would give this one
/// (running or stopped): two stacks on one port cannot both run, so the run is refused before
/// anything is written, naming the stack that owns the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortClaimed {
    pub port: u16,
    /// The stack that owns it.
    pub stack: String,
}

/// What another stack records as its port: the stack and its port (by the one rule: its
/// config, else its installed definition, else its default), for stacks whose job is
/// installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub stack: String,
    pub port: u16,
}

/// Refuses `port` for stack `this` when another stack's installed job claims it.
pub fn port_claimed(this: &str, port: u16, claims: &[Claim]) -> Result<(), PortClaimed> {
    match claims.iter().find(|c| c.port == port && c.stack != this) {
        Some(c) => Err(PortClaimed {
            port,
            stack: c.stack.clone(),
        }),
        None => Ok(()),
    }
}

/// The decision: what the run does, and its steps in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub change: Change,
    /// `start` of a stack `stop` left disabled (and loaded nowhere but draining): a rollback
    /// writes the previous definition back but does not load it.
    pub keep_stopped: bool,
    /// The job must be loaded again (a new definition on disk, a loaded one that does not
    /// match, or none loaded).
    pub reload: bool,
    /// The loaded definition is not the plan's (changed behind oyster's back, or written by
    /// `regenerate --no-restart`).
    pub stale: bool,
    /// The job is reloaded although the manager said it is switched off (it runs, or
    /// `--ignore-login-items`): said before the steps.
    pub switched_off: bool,
    pub steps: Vec<Step>,
}

/// The plan's part of a decision: the config edits and the port, and what the user allowed.
#[derive(Debug, Clone)]
pub struct Planned {
    pub config: PathBuf,
    pub edits: Vec<ConfigEdit>,
    pub port: u16,
    /// `--ignore-login-items`: a reload of a job switched off is made all the same.
    pub ignore_switch: bool,
}

/// Decides a run of the job verbs that load (`install`, `regenerate`, `restart`, `start`).
pub fn decide(o: &Observed, plan: &Planned, request: Request) -> Result<Decision, Refusal> {
    match &o.port {
        PortHolder::Foreign { pid, name, stack } => {
            return Err(Refusal::PortHeld {
                port: plan.port,
                pid: *pid,
                name: name.clone(),
                stack: stack.clone(),
            })
        }
        PortHolder::Invisible => return Err(Refusal::PortInvisible { port: plan.port }),
        PortHolder::Free | PortHolder::Unknown(_) => {}
    }
    // `start` of a stack an interrupted `stop` left disabled and still listed: that bootout
    // is finished first, so the job counts as not loaded here.
    let draining = request == Request::Start && o.disabled_here && o.loaded_here.is_some();
    let here = o.loaded_here.as_ref().filter(|_| !draining);
    let stale = here.is_some_and(|l| !l.matches);
    let reload = o.definition_changed || stale || here.is_none();
    // What ServiceManagement answers for a plist a CLI wrote is undocumented, and one public
    // report shows "requires approval" for a job that runs: only a job that does not run is
    // refused on that answer (unless the user says it is switched on); one that runs is
    // reloaded with a note.
    let mut switched_off = false;
    if let (Some(l), true) = (here, (reload || o.pending) && o.switched_off) {
        if !l.running && !plan.ignore_switch {
            return Err(Refusal::SwitchedOff {
                target: l.target.clone(),
            });
        }
        switched_off = true;
    }
    // The copy here, left idle after the other copy that ran is booted out, is started.
    let start_here = !o.others.is_empty() && here.is_some_and(|l| l.pid.is_none());
    let change = change(reload, request == Request::Restart || start_here, o.pending);
    let mut steps = writes(o, plan, request, draining);
    steps.extend(manager_steps(o, here, change));
    steps.push(Step::Verify { port: plan.port });
    let was_stopped = request == Request::Start && o.disabled_anywhere;
    Ok(Decision {
        change,
        keep_stopped: was_stopped && (draining || (o.loaded_here.is_none() && o.others.is_empty())),
        reload,
        stale,
        switched_off,
        steps,
    })
}

/// The steps before the manager is touched: finishing a draining stop, the enable of
/// `start`, the config, the definition, the directly started Host taken over, the other copies
/// booted out.
fn writes(o: &Observed, plan: &Planned, request: Request, draining: bool) -> Vec<Step> {
    let mut steps = vec![];
    if let Some(l) = o.loaded_here.as_ref().filter(|_| draining) {
        steps.push(Step::FinishStop {
            target: l.target.clone(),
        });
    }
    if request == Request::Start {
        steps.push(Step::Enable {
            targets: o.everywhere.clone(),
        });
    }
    if !plan.edits.is_empty() {
        steps.push(Step::WriteConfig {
            path: plan.config.clone(),
            edits: plan.edits.clone(),
        });
    }
    if o.definition_changed {
        steps.push(Step::WriteDefinition {
            path: o.definition.clone(),
        });
    }
    if let Some(pid) = o.direct {
        steps.push(Step::StopDirect { pid });
    }
    steps.extend(o.others.iter().map(|other| Step::BootOut {
        target: other.target.clone(),
        pid: other.pid,
        wait: true,
    }));
    steps
}

/// The steps the change takes on the manager where oyster acts: enable, unload, load; or the
/// graceful restart; or nothing.
fn manager_steps(o: &Observed, here: Option<&Loaded>, change: Change) -> Vec<Step> {
    match change.then() {
        Then::Reload => {
            let mut steps = vec![Step::Enable {
                targets: vec![o.here.clone()],
            }];
            steps.extend(here.map(|l| Step::BootOut {
                target: l.target.clone(),
                pid: l.pid,
                wait: true,
            }));
            steps.push(Step::Load {
                target: o.here.clone(),
            });
            steps
        }
        Then::Restart => vec![Step::Restart {
            target: o.here.clone(),
            pid: here.and_then(|l| l.pid),
        }],
        Then::Verify => vec![],
    }
}

fn change(reload: bool, restart: bool, pending: bool) -> Change {
    let then = match (reload, restart) {
        (true, _) => Then::Reload,
        (false, true) => Then::Restart,
        (false, false) => Then::Verify,
    };
    match (pending, then) {
        (true, then) => Change::Recover(then),
        (false, Then::Reload) => Change::Reload,
        (false, Then::Restart) => Change::Restart,
        (false, Then::Verify) => Change::Unchanged,
    }
}

/// The steps of `stop`: every copy booted out (the other domain's first), then, unless
/// `keep`, the job disabled everywhere so that it stays stopped at the next login.
pub fn decide_stop(o: &Observed, keep: bool, wait: bool) -> Vec<Step> {
    let mut steps: Vec<Step> = o
        .others
        .iter()
        .chain(o.loaded_here.as_ref())
        .map(|l| Step::BootOut {
            target: l.target.clone(),
            pid: l.pid,
            wait,
        })
        .collect();
    if !keep {
        steps.push(Step::Disable {
            targets: o.everywhere.clone(),
        });
    }
    steps
}

/// The steps of `uninstall`: every copy booted out, the job enabled again everywhere (a
/// `stop` left it disabled; the next installer must not meet that), then the definition
/// removed — last, so that a run killed before it leaves what the next `uninstall` finds.
pub fn decide_uninstall(o: &Observed, definition_exists: bool) -> Vec<Step> {
    let mut steps = decide_stop(o, true, true);
    steps.push(Step::Enable {
        targets: o.everywhere.clone(),
    });
    if definition_exists {
        steps.push(Step::RemoveDefinition {
            path: o.definition.clone(),
        });
    }
    steps
}

#[cfg(test)]
mod tests;
