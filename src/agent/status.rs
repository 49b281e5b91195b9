//! What oyster knows about one stack's Host, collected read-only: the installed plist, the
//! stack's config, launchd's view of the job, a directly started Host, and the live probe
//! (`probe::probe`). The model ([`AgentStatus`]) is what `agent status --json` prints and
//! what each row of `agent list --json` holds (docs/json.md); the command layer only renders.

use serde::Serialize;

use crate::agent::listing::Listings;
use crate::agent::login_items::LoginItem;
use crate::config::login::HostLogin;
use crate::context::{Context, Worded};

use crate::host::identity::ExecRecord;
use crate::host::plan;
use crate::host::plist::{self as agentplist, Installed};
use crate::launchctl::{Domain, JobState, LastExit, Launchctl, PrintInfo};
use crate::probe::{self, LaunchdView, Probe, Target};
use crate::verify::EnvProof;

/// The state of a stack in one word, for people and scripts (docs/json.md `summary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Summary {
    /// Running, and verified against the installed plist.
    Verified,
    /// Running and verified, started directly (`oyster host start`), not by launchd.
    Direct,
    /// Running and verified, but against an installed plist that is not what oyster generates
    /// now (`oyster agent regenerate` brings it up to date), or with declared variables
    /// (`oyster env`) changed since it started (`oyster restart` applies them).
    Stale,
    /// Running, but `/health` or the environment does not verify.
    Unverified,
    /// launchd keeps restarting a Host that dies.
    CrashLoop,
    /// Loaded, no Host running (and no crash loop seen).
    NotRunning,
    /// Stopped by `oyster stop`: not loaded, label disabled (the `disabled` field says so),
    /// plist kept. Said `stopped`, the word the user typed.
    Stopped,
    /// Installed but not loaded (and not disabled).
    NotLoaded,
    /// No plist and nothing loaded.
    NotInstalled,
    /// launchctl could not be asked, so what launchd does is not known.
    Unknown,
    /// The label is loaded in both `gui/<uid>` and `user/<uid>`: two Hosts for one port (a
    /// console login after an install over SSH). A failure with its fix.
    LoadedTwice,
}

/// The summary as one word (its `--json` value, spaced): `verified`, `not loaded`, ….
pub fn word(s: Summary) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(|w| w.replace('_', " ")))
        .unwrap_or_default()
}

/// Who wrote an installed plist, from what it runs (`installed_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InstalledBy {
    /// It runs `oyster host exec --stack NAME`.
    Oyster,
    /// Oysterun's own installer: it runs `run_oysterun_host.sh`.
    Oysterun,
    Other,
}

/// Who runs the Host (`managed_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Manager {
    /// The LaunchAgent; `oyster agent …` manages it.
    Launchd,
    /// `oyster host start` (the pid file).
    Direct,
    /// The systemd user unit.
    Systemd,
}

/// `agent status --json` and each row of `agent list --json` (docs/json.md): the four facts
/// stay separate; numbers are numbers, unknown is `null`, paths are absolute.
#[derive(Debug, Serialize)]
pub struct AgentStatus {
    pub stack: String,
    pub label: String,
    pub port: Option<u16>,
    pub url: Option<String>,
    pub summary: Summary,
    pub installed: bool,
    pub loaded: bool,
    pub running: bool,
    pub verified: bool,
    /// The stack's files cannot be used as they are (a corrupt config, a config dir that is a
    /// file); `notes` says what and the fix.
    pub broken: bool,
    /// launchd has the label disabled (`agent stop`); `null` when launchctl could not be asked.
    pub disabled: Option<bool>,
    /// The Login Items state of the installed plist (macOS 13+, System Settings → General →
    /// Login Items): `requires_approval` when the user switched it off; `unknown` when it
    /// cannot be asked; `null` when not asked (nothing installed; `list` for a loaded job).
    pub login_item: Option<LoginItem>,
    /// Why `login_item` is `unknown`, said in the human status.
    #[serde(skip)]
    pub login_item_why: Option<String>,
    pub state: Option<String>,
    pub pid: Option<u32>,
    pub last_exit_code: Option<i32>,
    pub last_signal: Option<i32>,
    pub runs: Option<u32>,
    pub crash_loop: bool,
    pub health: Option<u16>,
    /// How the environment was proven (`live`, `exec`, `launchd`), or `null`.
    pub env_proof: Option<EnvProof>,
    /// Generated variables the live process does not have as generated.
    pub env_mismatch: Vec<String>,
    /// The first thing about the running Host that does not verify, in words (`host status`).
    #[serde(skip)]
    pub problem: Option<String>,
    /// The declared variables (`oyster env`, and forced ones) the Host gets: names only.
    pub declared: Vec<String>,
    /// Declared variables the running Host does not hold as declared now (`stale` until a
    /// restart): names only.
    pub declared_stale: Vec<String>,
    pub in_sync: Option<bool>,
    /// Whether anybody can log in to the Host (`dashboard_user` and `dashboard_password_hash`
    /// set in its config); `null` when the stack has no readable config.
    pub host_login: Option<HostLogin>,
    /// The user name a login is made as, said in the human status.
    #[serde(skip)]
    pub login_user: Option<String>,
    /// Who wrote the installed plist; `null` when none is installed.
    pub installed_by: Option<InstalledBy>,
    /// Who runs the Host; `null` when none runs or when that cannot be known (launchctl could
    /// not be asked about a stack that has a LaunchAgent).
    pub managed_by: Option<Manager>,
    /// The service manager asked: `launchd`, `systemd`, or `null` (none here).
    pub manager: Option<&'static str>,
    /// The systemd unit's facts, under systemd.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<systemd::UnitFacts>,
    pub plist_path: String,
    pub log_path: String,
    pub launchctl: Option<String>,
    pub launchctl_overridden: bool,
    pub domain: Option<String>,
    /// Every domain the label is loaded in (`gui/<uid>` first); two means loaded twice.
    pub loaded_in: Vec<String>,
    pub notes: Vec<String>,
    /// What the organization's profile forces for this stack (docs/fleet.md): each `setting`,
    /// its `value` and the `file` that forces it; empty when nothing is managed.
    pub managed: Vec<crate::config::managed::Entry>,
    /// What the read saw beside these facts, for `doctor`.
    #[serde(skip)]
    pub seen: Seen,
}

/// Everything `agent status` knows about the context's stack. Reads only; prints nothing.
pub fn collect(ctx: &Context) -> anyhow::Result<AgentStatus> {
    collect_with(ctx, None)
}

/// The same, with launchd's view taken from domain listings already read (`oyster list`: two
/// launchctl calls for every stack); a job the listing cannot describe is printed on its own.
pub fn collect_listed(ctx: &Context, listings: &Listings) -> anyhow::Result<AgentStatus> {
    collect_with(ctx, Some(listings))
}

/// A LaunchAgents or lock directory every verb that writes would refuse, with the fix.
fn note_unusable_dirs(ctx: &Context, st: &mut AgentStatus) {
    let unusable = [
        ctx.stack.refuse_unwritable_agents_dir(),
        ctx.stack.refuse_unusable_lock_dir(),
    ];
    for e in unusable.into_iter().filter_map(Result::err) {
        st.note(StatusNote::Unusable {
            why: e.why().to_owned(),
            fix: e.hint.unwrap_or_default(),
        });
    }
}

fn collect_with(ctx: &Context, listings: Option<&Listings>) -> anyhow::Result<AgentStatus> {
    let installed = agentplist::read_installed(&ctx.stack.plist_path(), ctx.reporter());
    let mut st = blank(ctx, installed.as_ref());
    let declared = declared::note(ctx, &mut st);
    note_broken_files(ctx, &mut st);
    note_unusable_dirs(ctx, &mut st);
    if installed.is_none() {
        note_unreadable_plist(ctx, &mut st);
    }
    if ctx.stack.pending_path().exists() {
        st.note(StatusNote::Pending {
            regenerate: ctx.hint_cmd("regenerate"),
        });
    }
    // A fresh HOME: what a newcomer needs, not a verb that would fail for the same reason.
    let newcomer = installed.is_none()
        && !ctx.stack.config_path().exists()
        && plan::plan(ctx, &Default::default()).is_err();
    let unit_unreachable = crate::unit::unreachable(ctx);
    let asked = match (ctx.manager(), ctx.launchctl()) {
        (Ok(crate::context::Manager::Systemd(sc)), _) => systemd::ask(ctx, &sc, &mut st),
        (_, Err(_)) if unit_unreachable.is_some() => {
            st.manager = Some("systemd");
            st.installed = true;
            if let Ok(path) = crate::unit::path_for(ctx) {
                st.plist_path = path.display().to_string();
            }
            st.notes.extend(unit_unreachable.clone());
            false
        }
        (_, Err(e)) => {
            st.notes.push(e.words(&ctx.hints()));
            false
        }
        (_, Ok(lc)) => {
            st.manager = Some("launchd");
            let installed = installed
                .as_ref()
                .map(|i| declared::expecting(i, &declared));
            ask_launchd(ctx, lc, listings, installed.as_ref(), &mut st)
        }
    };
    if installed.is_none()
        && st.loaded
        && ctx
            .manager()
            .is_ok_and(|m| !matches!(m, crate::context::Manager::Systemd(_)))
    {
        st.note(StatusNote::PlistDeleted {
            plist: ctx.stack.plist_path(),
            restart: ctx.hint_cmd("restart"),
        });
    }
    by_hand::who_runs_it(
        ctx,
        asked,
        installed.is_some() || unit_unreachable.is_some(),
        &mut st,
    );
    if unit_unreachable.is_some() {
        st.summary = Summary::Unknown;
    }
    if newcomer && !st.running {
        st.note(StatusNote::Newcomer {
            stack: ctx.stack.name.clone(),
            setup: ctx.hints().cmd("setup"),
            setup_root: ctx.hints().cmd("setup --root DIR"),
        });
    }
    Ok(st)
}

/// The document before launchd or a live Host was asked: what the files say.
fn blank(ctx: &Context, installed: Option<&Installed>) -> AgentStatus {
    let stack = &ctx.stack;
    // The port the installed Host runs with (a fact, not a choice); else the one rule
    // without a flag — never one that needs a root or a node to be found first. A config that
    // cannot be read leaves it unknown: the default may not be the port it records.
    let port = installed.and_then(|i| i.env.port()).or_else(|| {
        let doc = crate::config::ConfigDoc::load(&stack.config_path()).ok()?;
        let doc = plan::managed(ctx).applied(doc);
        plan::HostInputs::default()
            .effective_port(stack, Some(&doc), None)
            .map(|p| p.port)
    });
    let login = crate::config::ConfigDoc::load(&stack.config_path())
        .ok()
        .filter(crate::config::ConfigDoc::exists)
        .map(|d| (HostLogin::of(d.value()), HostLogin::user(d.value())));
    // Only an installed plist can be stale.
    let in_sync = installed.and_then(|_| {
        plan::plan(ctx, &Default::default())
            .ok()
            .map(|p| !p.plist_changed())
    });
    AgentStatus {
        stack: stack.name.clone(),
        label: stack.label.clone(),
        port,
        url: port.map(url),
        summary: Summary::Unknown,
        installed: installed.is_some(),
        loaded: false,
        running: false,
        verified: false,
        broken: false,
        disabled: None,
        login_item: None,
        login_item_why: None,
        state: None,
        pid: None,
        last_exit_code: None,
        last_signal: None,
        runs: None,
        crash_loop: false,
        health: None,
        env_proof: None,
        env_mismatch: vec![],
        problem: None,
        declared: vec![],
        declared_stale: vec![],
        in_sync,
        host_login: login.as_ref().map(|l| l.0),
        login_user: login.map(|l| l.1),
        installed_by: installed.map(installed_by),
        managed_by: None,
        manager: None,
        unit: None,
        plist_path: stack.plist_path().display().to_string(),
        log_path: stack.log_path().display().to_string(),
        launchctl: None,
        launchctl_overridden: false,
        domain: None,
        loaded_in: vec![],
        notes: vec![],
        managed: crate::host::plan::managed(ctx).entries,
        seen: Seen::default(),
    }
}

fn url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// A stack whose config cannot be read as it is is named broken, with why and the fix: a
/// status that quietly used the default port instead would describe another Host.
fn note_broken_files(ctx: &Context, st: &mut AgentStatus) {
    let stack = &ctx.stack;
    let dir = &stack.config_dir;
    if dir.exists() && !dir.is_dir() {
        st.broken = true;
        st.note(StatusNote::ConfigDirNotDir {
            dir: dir.clone(),
            setup: ctx.hints().cmd("setup"),
        });
        return;
    }
    if let Err(e) = crate::config::ConfigDoc::load(&stack.config_path()) {
        st.broken = true;
        st.note(StatusNote::Broken(e.to_string()));
    }
}

/// A plist path that holds something oyster cannot read as a plist (a FIFO, a directory, a
/// file too large): launchd may still load it at login, so it is named, not taken as "not
/// installed".
fn note_unreadable_plist(ctx: &Context, st: &mut AgentStatus) {
    let path = ctx.stack.plist_path();
    if path.symlink_metadata().is_err() {
        return;
    }
    if let Err(e) = crate::sys::fs::read_regular(&path, agentplist::MAX_PLIST_BYTES) {
        st.broken = true;
        st.note(StatusNote::Broken(e.to_string()));
    }
}

/// launchd's view of the job, and the probe of the Host it runs. `false` when launchctl could
/// not be asked (then the summary says unknown, and a note why).
fn ask_launchd(
    ctx: &Context,
    lc: &Launchctl,
    listings: Option<&Listings>,
    installed: Option<&Installed>,
    st: &mut AgentStatus,
) -> bool {
    st.launchctl = Some(lc.path.display().to_string());
    st.launchctl_overridden = lc.overridden;
    match look_in_both_domains(ctx, lc, listings, installed, st) {
        Ok(()) => {
            st.summary = if st.loaded_in.len() > 1 {
                Summary::LoadedTwice
            } else {
                summarize(st)
            };
            true
        }
        // Whether it is loaded is not known: the summary says so.
        Err(e) => {
            let why = format!("{e:#}");
            st.note(StatusNote::LaunchctlFailed(why.clone()));
            st.seen.launchctl_failed = Some(why);
            false
        }
    }
}

/// The job as launchd has it in `gui/<uid>` and `user/<uid>`: where it is loaded, its
/// disabled override, the facts of the copy shown, and the notes they call for.
fn look_in_both_domains(
    ctx: &Context,
    lc: &Launchctl,
    listings: Option<&Listings>,
    installed: Option<&Installed>,
    st: &mut AgentStatus,
) -> anyhow::Result<()> {
    // A job loaded in user/<uid> is not visible in gui/<uid>: look in both, and a label
    // loaded in both is one Host too many (a console login after an install over SSH).
    // The two answers also say whether gui/<uid> exists: no separate domain probe.
    let label = &ctx.stack.label;
    // A listing row that did not parse but names this label: the table cannot say
    // whether the job is there, so launchd is asked for it on its own.
    let both = match listings {
        Some(l) if !l.unsure(label) => l.both(label),
        _ => lc.in_both_domains(label)?,
    };
    let domain = both.choice_at(ctx.console()?);
    st.notes.extend(domain.fallback_note.clone());
    st.seen.domain_note = domain.fallback_note;
    let mut loaded = both.loaded();
    // A label loaded twice is rare and needs every fact of both copies: ask each job.
    let asked;
    if listings.is_some() && loaded.len() > 1 {
        asked = lc.in_both_domains(label)?;
        loaded = asked.loaded();
    }
    // launchd's disabled override only matters for loading: asked only when the job is not
    // loaded. `print-disabled` failing leaves it unknown (`null`); it never fails the status.
    st.disabled = disabled_override(lc, listings, domain.name, label, loaded.is_empty());
    // Login Items: for every installed stack in `status`; in `list` (one listing for all
    // stacks) only where it can be why the job is not loaded.
    if installed.is_some() && (listings.is_none() || loaded.is_empty()) {
        login_item(ctx, lc, st, !loaded.is_empty());
    }
    st.loaded_in = loaded.iter().map(|(d, _)| d.to_string()).collect();
    st.seen.manager_pids = loaded.iter().filter_map(|(_, i)| i.pid()).collect();
    // Of two copies, the one that runs is the Host this stack has now (the other crash-
    // loops on the held port): its facts are shown.
    let shown = loaded
        .iter()
        .find(|(_, i)| i.running())
        .or_else(|| loaded.first());
    st.domain = Some(shown.map_or(domain.name, |(d, _)| *d).to_string());
    if let Some((d, info)) = shown {
        record_shown_job(ctx, lc, listings, installed, (*d, info), st)?;
    }
    // A Host running in user/<uid> (a Background session) has no unlocked login
    // keychain, for as long as it runs there: said with the fix.
    if st.running && shown.is_some_and(|(d, _)| matches!(d, Domain::User(_))) {
        st.notes.push(keychain_note(ctx));
    }
    if let [(first, a), (second, b), ..] = loaded.as_slice() {
        st.note(loaded_twice_note(ctx, (*first, a), (*second, b)));
    }
    Ok(())
}

/// The facts of the copy shown, from the listing or launchd's answer it came with; a job the
/// listing shows not running (a crash loop?) or whose environment only launchd can prove is
/// printed on its own, since the listing has no runs, crash count or environment.
fn record_shown_job(
    ctx: &Context,
    lc: &Launchctl,
    listings: Option<&Listings>,
    installed: Option<&Installed>,
    (domain, info): (Domain, &PrintInfo),
    st: &mut AgentStatus,
) -> anyhow::Result<()> {
    let notes_before = st.notes.len();
    record_job(ctx, info, installed, st);
    if listings.is_some() && (!st.running || st.env_proof.is_none()) {
        if let Ok(full) = lc.print_job(domain, &ctx.stack.label)? {
            st.notes.truncate(notes_before);
            record_job(ctx, &full, installed, st);
        }
    }
    Ok(())
}

/// The loaded job's facts, and the probe of its running Host.
fn record_job(
    ctx: &Context,
    info: &PrintInfo,
    installed: Option<&Installed>,
    st: &mut AgentStatus,
) {
    st.loaded = true;
    st.running = info.running();
    st.state = info.state().map(str::to_owned);
    st.pid = info.pid();
    // launchd learns of an exit a moment after it happens: a pid it still calls running that
    // the kernel no longer has is said as what it is now, not probed as a Host (a Host that
    // crashed on start is not one that "exited right after answering /health").
    if let Some(pid) = info.pid().filter(|_| st.running) {
        if crate::verify::inspect(pid).is_none() {
            st.running = false;
            st.note(StatusNote::PidExited {
                pid,
                status: ctx.hint_cmd("status"),
            });
        }
    }
    let last = info.last_exit();
    st.last_exit_code = last.and_then(LastExit::code);
    st.last_signal = last.and_then(LastExit::signal);
    st.runs = info.runs();
    st.seen.last_exit = last;
    st.seen.crashes = info.successive_crashes();
    // A clean exit (`agent kill`, the Host's own restart) is throttled too; only a crash
    // counts (evidence, not the state alone).
    st.crash_loop = info.successive_crashes().is_some_and(|n| n > 0)
        || (info.job_state() == JobState::SpawnScheduled && last.is_some_and(LastExit::failed));
    // The SIGTERM of a recent `oyster kill` is no crash: a Host younger than ThrottleInterval
    // waits out the throttle after it, which launchd counts among its crashes.
    if st.crash_loop && last == Some(LastExit::Signal(15)) && sent_sigterm_lately(ctx) {
        st.crash_loop = false;
        st.note(StatusNote::ThrottleAfterKill);
    }
    let Some(pid) = info.pid().filter(|_| st.running) else {
        return;
    };
    let Some((inst, port)) = installed.and_then(|i| Some((i, i.env.port()?))) else {
        return;
    };
    let record = ExecRecord::read(&ctx.stack.exec_record_path());
    let p = probe::probe(&Target {
        pid,
        port,
        env: &inst.env,
        exec_record: record.as_ref(),
        launchd: Some(LaunchdView {
            pid: info.pid(),
            environment: &info.environment,
        }),
        floor: ctx.env.proof_floor,
        live: None,
    });
    record_probe(st, &p);
}

fn record_probe(st: &mut AgentStatus, p: &Probe) {
    st.health = p.health;
    st.env_proof = p.env_proof();
    st.env_mismatch.clone_from(&p.env_mismatch);
    st.verified = p.verified();
    st.problem = p.problem();
    if let Err(why) = &p.env {
        st.notes.push(why.clone());
    }
    declared::stale(st, p.declared_stale.clone());
    st.seen.probe = Some(p.clone());
}

/// Who wrote an installed plist, from what it runs.
fn installed_by(inst: &Installed) -> InstalledBy {
    let args: Vec<&str> = inst.program_arguments.iter().map(String::as_str).collect();
    if inst.oysterun_runner().is_some() {
        InstalledBy::Oysterun
    } else if args.len() == 5 && args[1..4] == ["host", "exec", "--stack"] {
        InstalledBy::Oyster
    } else {
        InstalledBy::Other
    }
}

fn summarize(st: &AgentStatus) -> Summary {
    match (st.installed, st.loaded) {
        (_, true)
            if st.running
                && st.verified
                && (st.in_sync == Some(false) || !st.declared_stale.is_empty()) =>
        {
            Summary::Stale
        }
        (_, true) if st.running && st.verified => Summary::Verified,
        (_, true) if st.running => Summary::Unverified,
        (_, true) if st.crash_loop => Summary::CrashLoop,
        (_, true) => Summary::NotRunning,
        (true, false) if st.disabled == Some(true) => Summary::Stopped,
        (true, false) => Summary::NotLoaded,
        (false, false) => Summary::NotInstalled,
    }
}

mod by_hand;
mod declared;
mod notes;
mod seen;
pub mod systemd;

use notes::{disabled_override, loaded_twice_note, login_item, sent_sigterm_lately};
pub use notes::{keychain_note, runs_in_background_session, StatusNote};
pub use seen::Seen;

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
