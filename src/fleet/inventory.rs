//! `oyster inventory`: one document about oyster on this Mac (docs/json.md, docs/fleet.md).
//!
//! Read-only and bounded: per user one launchd listing (`print gui/<uid>`, `print user/<uid>`,
//! as `list` does), each stack's status as `list` collects it, the installed plist, the stack's
//! config and Node's cached version; no Node, provider or npm is run. As root it covers every
//! user whose home holds stacks, each collected by oyster itself running as that user (its own
//! uid, its own `gui/<uid>`, its own HOME), bounded in time; as a user, that user's stacks.
//! Whatever is broken becomes a `problems` entry with a machine code and its fix; the document
//! is always printed.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::agent::listing::{Listings, Unreadable};
use crate::agent::status::{self as model, AgentStatus, Summary};
use crate::context::Context;
use crate::host::plist::{self as agentplist, Installed};
use crate::host::stack::{self, StackEnv};

/// The document's version; a change that removes or renames a key bumps it.
pub const SCHEMA_VERSION: u32 = 1;

/// How long oyster, run as one user, may take for that user's part (root's inventory).
const USER_TIMEOUT: Duration = Duration::from_secs(60);

/// The whole document.
#[derive(Debug, Serialize)]
pub struct Inventory {
    pub schema_version: u32,
    pub generated_at: String,
    pub oyster: Oyster,
    pub login_items_profile: ProfileState,
    pub managed_preferences: Managed,
    /// Whether this document was made as root (every user) or as one user.
    pub as_root: bool,
    pub users: Vec<Value>,
    /// Problems of the Mac as a whole (a user whose part could not be read is one).
    pub problems: Vec<Problem>,
}

/// oyster itself.
#[derive(Debug, Serialize)]
pub struct Oyster {
    pub version: String,
    pub path: String,
    /// The Developer ID team that signed it, or `null`.
    pub team_id: Option<String>,
    pub signature: String,
}

/// Whether the Managed Login Items profile (`oyster mdm profile`) is installed.
#[derive(Debug, Serialize)]
pub struct ProfileState {
    pub identifier: &'static str,
    /// `null` when it cannot be known here (not root, not macOS); `reason` says why.
    pub installed: Option<bool>,
    pub reason: Option<String>,
}

/// Managed defaults (docs/fleet.md): the directory read, and what it forces for every user
/// (the all-users file's top-level keys); each stack lists what applies to it (`managed`).
#[derive(Debug, Serialize)]
pub struct Managed {
    pub directory: String,
    pub keys: Vec<crate::config::managed::Entry>,
}

/// What the all-users managed file forces for every user and stack.
pub fn managed_for_everyone(dir: Option<&Path>) -> Managed {
    let read = dir.unwrap_or(Path::new(crate::config::managed::SYSTEM_DIR));
    // No user, and a stack name no stack has: the top-level keys of the all-users file.
    let m = crate::config::managed::Managed::load(Some(read), None, "");
    Managed {
        directory: read.display().to_string(),
        keys: m.entries,
    }
}

/// One user's part.
#[derive(Debug, Serialize)]
pub struct UserPart {
    pub uid: u32,
    pub name: Option<String>,
    pub home: String,
    /// Whether this user owns the console (macOS: `/dev/console`); `null` where there is none.
    pub console: Option<bool>,
    pub stacks: Vec<StackPart>,
    pub problems: Vec<Problem>,
}

/// A machine code and its fix.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub code: &'static str,
    pub fix: String,
    /// What was seen, in words (never a secret: the printer redacts every document).
    pub detail: Option<String>,
}

/// The inventory's fixes (and its one note), by what they are for; `stack` is the stack a
/// command names. Words: `commands/words/fleet.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fix {
    /// launchd's listing could not be read: each stack was asked on its own.
    LaunchdUnreadable,
    /// Only root can list the device's profiles.
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))]
    ProfilesNeedRoot,
    /// Only the console user and root were looked at.
    AccountsUnlisted,
    /// Run the inventory as `user`.
    AsUser { user: String },
    /// `oyster doctor`, for the details and the fix.
    DoctorDetails { stack: String },
    /// `oyster doctor`, for the fix.
    DoctorForIt { stack: String },
    /// `oyster doctor`.
    Doctor { stack: String },
    /// `oyster doctor`, for what launchctl says.
    DoctorLaunchctl { stack: String },
    /// `oyster VERB` for the stack.
    Verb { stack: String, verb: &'static str },
    /// Read the logs, fix the cause, restart.
    CrashLoop { stack: String },
    /// Install provider `name` (`id`), or disable it.
    InstallProvider {
        name: &'static str,
        id: String,
        stack: String,
    },
    /// Regenerate the LaunchAgent.
    Regenerate { stack: String },
    /// Regenerate with another Node.
    RegenerateNode { stack: String },
    /// Regenerate with another Oysterun root.
    RegenerateRoot { stack: String },
}

/// One provider, without its command (no secret, URL or token can be in it).
#[derive(Debug, Serialize)]
pub struct ProviderPart {
    pub provider: String,
    pub intent: Value,
    pub state: &'static str,
    pub source: Value,
}

/// One stack.
#[derive(Debug, Serialize)]
pub struct StackPart {
    pub stack: String,
    pub label: String,
    pub summary: Summary,
    /// The service manager asked: `launchd`, `systemd`, or `null` (none here).
    pub manager: Option<&'static str>,
    /// The job's definition: the plist under launchd, the unit file under systemd.
    pub plist_path: String,
    pub plist_present: bool,
    /// The installed plist is what oyster generates now; `null` when not known.
    pub plist_current: Option<bool>,
    pub domain: Option<String>,
    pub loaded: bool,
    pub state: Option<String>,
    pub pid: Option<u32>,
    pub last_exit_code: Option<i32>,
    pub last_signal: Option<i32>,
    pub crash_loop: bool,
    pub disabled: Option<bool>,
    /// The Login Items (Background Task Management) state: not read yet, `null`.
    pub login_item: Option<String>,
    pub verified: bool,
    pub broken: bool,
    pub port: Option<u16>,
    pub oysterun_root: Option<String>,
    pub oysterun_version: Option<String>,
    pub node_bin: Option<String>,
    pub node_version: Option<String>,
    pub providers: Vec<ProviderPart>,
    /// What the organization's profile forces for this user and stack.
    pub managed: Vec<crate::config::managed::Entry>,
    pub problems: Vec<Problem>,
}

/// The current user's part: every stack on disk under this HOME.
pub fn user_part(ctx: &Context) -> UserPart {
    let uid = crate::sys::user::uid();
    let names = stack::discover(&ctx.env.stack_env());
    let mut problems = vec![];
    let located = ctx.launchctl();
    // No launchd here (OYSTER_LAUNCHCTL=none, Linux): that the stacks' launchd state is
    // unknown is then no problem of theirs.
    let launchd = located.is_ok();
    let listings = match located {
        Ok(lc) if !names.is_empty() => match lc.listings() {
            Ok(Ok(l)) => Some(l),
            Ok(Err(Unreadable(why))) => {
                problems.push(launchd_unreadable(why));
                None
            }
            Err(e) => {
                problems.push(launchd_unreadable(format!("{e:#}")));
                None
            }
        },
        _ => None,
    };
    let stacks = names
        .iter()
        .map(|name| stack_part(ctx, name, listings.as_ref(), launchd))
        .collect();
    UserPart {
        uid,
        name: crate::sys::user::name_of(uid),
        home: ctx.stack.home.display().to_string(),
        console: console_owner().map(|owner| owner == uid),
        stacks,
        problems,
    }
}

fn launchd_unreadable(why: String) -> Problem {
    Problem {
        code: "launchd_listing_unreadable",
        fix: Fix::LaunchdUnreadable.to_string(),
        detail: Some(why),
    }
}

/// The owner of the console, where there is one (macOS).
fn console_owner() -> Option<u32> {
    if cfg!(target_os = "macos") {
        crate::sys::user::owner_of(Path::new("/dev/console"))
    } else {
        None
    }
}

fn stack_part(ctx: &Context, name: &str, listings: Option<&Listings>, launchd: bool) -> StackPart {
    let sub;
    let c = if name == ctx.stack.name {
        ctx
    } else {
        match ctx.for_stack(name) {
            Ok(s) => {
                sub = s;
                &sub
            }
            Err(e) => return unreadable(ctx, name, &format!("{e:#}")),
        }
    };
    let status = match listings {
        Some(l) => model::collect_listed(c, l),
        None => model::collect(c),
    };
    match status {
        Ok(st) => from_status(c, st, launchd),
        Err(e) => unreadable(c, name, &format!("{e:#}")),
    }
}

/// A stack whose status could not be collected at all: what is known, and the problem.
fn unreadable(ctx: &Context, name: &str, why: &str) -> StackPart {
    let plist = ctx.stack.plist_path();
    StackPart {
        stack: name.to_owned(),
        label: ctx.stack.label.clone(),
        summary: Summary::Unknown,
        manager: None,
        plist_present: plist.exists(),
        plist_path: plist.display().to_string(),
        plist_current: None,
        domain: None,
        loaded: false,
        state: None,
        pid: None,
        last_exit_code: None,
        last_signal: None,
        crash_loop: false,
        disabled: None,
        login_item: None,
        verified: false,
        broken: true,
        port: None,
        oysterun_root: None,
        oysterun_version: None,
        node_bin: None,
        node_version: None,
        providers: vec![],
        managed: crate::host::plan::managed(ctx).entries,
        problems: vec![Problem {
            code: "status_unreadable",
            fix: Fix::DoctorDetails {
                stack: name.to_owned(),
            }
            .to_string(),
            detail: Some(why.to_owned()),
        }],
    }
}

fn from_status(ctx: &Context, st: AgentStatus, launchd: bool) -> StackPart {
    let (node_bin, root) = definition_facts(ctx, &st);
    let node_version = node_bin.as_deref().and_then(|n| {
        crate::host::node::recorded_version(Path::new(n), &ctx.stack.node_version_cache_path())
    });
    let oysterun_version = root.as_deref().and_then(oysterun_version);
    let (providers, mut problems) = providers(ctx, &st);
    problems.splice(
        0..0,
        stack_problems(&st, node_bin.as_deref(), root.as_deref(), launchd),
    );
    StackPart {
        stack: st.stack.clone(),
        label: st.label.clone(),
        summary: st.summary,
        manager: st.manager,
        plist_path: st.plist_path.clone(),
        plist_present: st.installed,
        plist_current: st.in_sync,
        domain: st.domain.clone(),
        loaded: st.loaded,
        state: st.state.clone(),
        pid: st.pid.filter(|_| st.running),
        last_exit_code: st.last_exit_code,
        last_signal: st.last_signal,
        crash_loop: st.crash_loop,
        disabled: st.disabled,
        login_item: None,
        verified: st.verified,
        broken: st.broken,
        port: st.port,
        oysterun_root: root,
        oysterun_version,
        node_bin,
        node_version,
        providers,
        managed: crate::host::plan::managed(ctx).entries,
        problems,
    }
}

/// The Node and the Oysterun root the installed definition runs: the plist's, or under
/// systemd what the unit's `Environment=` lines (and its drop-ins') set.
fn definition_facts(ctx: &Context, st: &AgentStatus) -> (Option<String>, Option<String>) {
    if st.manager == Some("systemd") {
        return model::systemd::unit_runs(st, &ctx.stack.home);
    }
    let installed = agentplist::read_installed(&ctx.stack.plist_path(), ctx.reporter());
    let of = |f: fn(&Installed) -> Option<&str>| installed.as_ref().and_then(f).map(str::to_owned);
    (of(Installed::node_bin), of(Installed::repo_root))
}

/// The Oysterun version, where its own CLI finds it.
fn oysterun_version(root: &str) -> Option<String> {
    crate::host::root::oysterun_version(Path::new(root))
}

/// Each provider's state from the stack's config and what discovery finds now (no provider
/// is run); an unreadable config is the stack's problem, said once.
fn providers(ctx: &Context, st: &AgentStatus) -> (Vec<ProviderPart>, Vec<Problem>) {
    let doc = match crate::config::ConfigDoc::load(&ctx.stack.config_path()) {
        Ok(d) => crate::host::plan::managed(ctx).applied(d),
        Err(_) if st.broken => return (vec![], vec![]),
        Err(e) => {
            return (
                vec![],
                vec![Problem {
                    code: "config_unreadable",
                    fix: Fix::DoctorForIt {
                        stack: st.stack.clone(),
                    }
                    .to_string(),
                    detail: Some(e.to_string()),
                }],
            )
        }
    };
    let mut problems = vec![];
    let rows = crate::provider::registry::PROVIDERS
        .iter()
        .map(|p| {
            let s = doc.status(p, &ctx.search);
            let id = p.id.as_str().to_owned();
            if s.state == crate::provider::status::State::Unavailable {
                problems.push(Problem {
                    code: "provider_unavailable",
                    fix: Fix::InstallProvider {
                        name: p.display_name,
                        id: id.clone(),
                        stack: st.stack.clone(),
                    }
                    .to_string(),
                    detail: Some(id.clone()),
                });
            }
            ProviderPart {
                provider: id,
                intent: serde_json::to_value(s.intent).unwrap_or(Value::Null),
                state: s.state.as_str(),
                source: serde_json::to_value(s.source).unwrap_or(Value::Null),
            }
        })
        .collect();
    (rows, problems)
}

/// What is wrong with a stack, as codes with their fix (docs/json.md lists every code).
fn stack_problems(
    st: &AgentStatus,
    node_bin: Option<&str>,
    root: Option<&str>,
    launchd: bool,
) -> Vec<Problem> {
    let name = st.stack.as_str();
    let stack = name.to_owned();
    let p = |code: &'static str, fix: Fix| Problem {
        code,
        fix: fix.to_string(),
        detail: None,
    };
    let verb = |verb: &'static str| Fix::Verb {
        stack: stack.clone(),
        verb,
    };
    let mut out = vec![];
    if st.broken {
        out.push(Problem {
            code: "broken_files",
            fix: Fix::DoctorForIt {
                stack: stack.clone(),
            }
            .to_string(),
            detail: st.notes.iter().find(|n| n.starts_with("broken: ")).cloned(),
        });
    }
    let stack = || stack.clone();
    match st.summary {
        Summary::CrashLoop => out.push(p("crash_loop", Fix::CrashLoop { stack: stack() })),
        Summary::Unverified => out.push(p("unverified", Fix::Doctor { stack: stack() })),
        Summary::NotRunning => out.push(p("not_running", verb("restart"))),
        Summary::NotLoaded => out.push(p("not_loaded", verb("start"))),
        Summary::Stopped => out.push(p("stopped", verb("start"))),
        Summary::LoadedTwice => out.push(p("loaded_twice", Fix::DoctorForIt { stack: stack() })),
        Summary::Unknown if launchd => out.push(p(
            "launchd_unknown",
            Fix::DoctorLaunchctl { stack: stack() },
        )),
        Summary::NotInstalled if !st.broken => out.push(p("not_installed", verb("setup"))),
        _ => {}
    }
    if st.in_sync == Some(false) {
        out.push(p("plist_stale", Fix::Regenerate { stack: stack() }));
    }
    if let Some(n) = node_bin.filter(|n| !Path::new(n).is_file()) {
        out.push(Problem {
            code: "node_missing",
            fix: Fix::RegenerateNode { stack: stack() }.to_string(),
            detail: Some(n.to_owned()),
        });
    }
    if let Some(r) = root.filter(|r| !Path::new(r).join("host-service").is_dir()) {
        out.push(Problem {
            code: "oysterun_root_missing",
            fix: Fix::RegenerateRoot { stack: stack() }.to_string(),
            detail: Some(r.to_owned()),
        });
    }
    out
}

/// The time now as RFC 3339 UTC (`2026-12-02T17:00:00Z`), from the system clock.
pub fn now_rfc3339() -> String {
    crate::sys::time::rfc3339(std::time::SystemTime::now())
}

mod accounts;

pub use accounts::{accounts_with_stacks, part_as, profile_state};
#[cfg(test)]
use accounts::{names_profile, parse_accounts};

#[cfg(test)]
#[path = "inventory_tests.rs"]
mod tests;
