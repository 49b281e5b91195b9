//! Setup's receipt (issue 36, items 3 and 8): its undo journal, written to
//! `<run dir>/setup-pending` (JSON, atomically, mode 0600, under the stack's lock) before each
//! side effect, and removed once setup finished or was rolled back whole. A setup killed
//! outright leaves it: the next setup takes back what it lists, newest first, before it plans.
//!
//! The receipt holds no secret: a file's previous bytes are kept only when none is in them,
//! else its keys with the values that hold none (`steps::Before`); a password or its hash never.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::steps::{plausible, Allowed, Before, Stamp, Undo, Undoing};
use crate::context::Context;
use crate::error::Failed;
use crate::host::plan::{self, HostInputs};
use crate::output::audit::{Action, Audit};
use crate::service::journal::step_boundary;
use crate::sys::fs::{self as fsutil, Lock};
use crate::undo::{Journal, Undone};

/// The most of a receipt that is read.
const MAX_RECEIPT_BYTES: u64 = 1024 * 1024;

/// Where a stack's setup keeps its receipt.
pub fn path(st: &crate::host::stack::Stack) -> PathBuf {
    st.run_dir.join("setup-pending")
}

/// The receipt as written: setup's journal, oldest step first.
#[derive(Serialize)]
struct Written<'a> {
    action: &'static str,
    steps: &'a [Undo],
    /// Written by the next setup before it takes the steps back: a run killed meanwhile left
    /// changes that are its own, which make the receipt no less current.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    taking_back: bool,
}

/// The receipt as read back.
#[derive(Deserialize)]
struct Read {
    steps: Vec<Undo>,
    #[serde(default)]
    taking_back: bool,
}

/// The stack's audit log, where reverts are recorded, when it has one already (a rollback
/// leaves no file it did not find).
pub(super) fn record(ctx: &Context) -> Option<(Audit, Action)> {
    let st = &ctx.stack;
    let audit = Audit::new(st.audit_path(), &st.name, &st.label);
    st.log_dir.is_dir().then_some((audit, Action::Setup))
}

/// Setup's journal, written ahead: each step is on disk before it is taken.
pub(super) struct Journaled<'l> {
    journal: Journal<Undo>,
    path: PathBuf,
    lock: &'l Lock,
    /// The run directory, when this run made it (for the receipt): removed with the receipt
    /// when it is empty then.
    made_run_dir: Option<PathBuf>,
}

impl<'l> Journaled<'l> {
    pub(super) fn new(ctx: &Context, lock: &'l Lock) -> Journaled<'l> {
        let st = &ctx.stack;
        Journaled {
            journal: Journal::new(record(ctx)),
            path: path(st),
            lock,
            made_run_dir: (!st.run_dir.exists()).then(|| st.run_dir.clone()),
        }
    }

    /// Journals a step before it is taken: on disk first, then the step boundary (where
    /// `OYSTER_TEST_KILL_AT_STEP` kills a debug build). A receipt that cannot be written stops
    /// setup before the step.
    pub(super) fn push(&mut self, step: Undo) -> anyhow::Result<()> {
        self.journal.push(step);
        if let Err(e) = self.write() {
            self.journal.pop();
            return Err(e);
        }
        step_boundary();
        Ok(())
    }

    /// Stamps the newest step, a file's, with the file as this run just wrote it (so the next
    /// setup can tell a change the user made since), and writes the receipt again.
    pub(super) fn stamp_written(&mut self) -> anyhow::Result<()> {
        if let Some(Undo::File { path, written, .. }) = self.journal.last_mut() {
            *written = Stamp::of(path);
        }
        self.write()
    }

    /// Records the npm the newest step (its install) started, and writes the receipt again.
    pub(super) fn npm_running(&mut self, pid: u32) -> anyhow::Result<()> {
        if let Some(Undo::NpmUninstall { running, .. }) = self.journal.last_mut() {
            *running = super::steps::Running::of(pid);
        }
        self.write()
    }

    /// Takes the newest step back out: its effect turned out not to happen.
    pub(super) fn pop(&mut self) {
        self.journal.pop();
        let _ = self.write();
    }

    fn write(&self) -> anyhow::Result<()> {
        if let Some(dir) = self.path.parent() {
            fsutil::create_dir_all(dir, 0o700)?;
        }
        let written = Written {
            action: "setup",
            steps: self.journal.steps(),
            taking_back: false,
        };
        let mut bytes = serde_json::to_vec_pretty(&written)?;
        bytes.push(b'\n');
        fsutil::write_atomic(self.lock, &self.path, &bytes, Some(0o600))?;
        Ok(())
    }

    /// Setup finished: the receipt goes.
    pub(super) fn finish(self) {
        forget(&self.path, self.made_run_dir.as_deref());
    }

    /// Reverts every step, newest first; the receipt goes when every revert succeeded.
    pub(super) fn roll_back(self, cx: &mut Undoing<'_>) -> Undone {
        let undone = self.journal.roll_back(cx);
        if undone.failures.is_empty() {
            forget(&self.path, self.made_run_dir.as_deref());
        }
        undone
    }
}

/// Removes the receipt, and the run directory its write made when that is empty now.
fn forget(receipt: &Path, made_run_dir: Option<&Path>) {
    let _ = crate::service::journal::remove(receipt);
    if let Some(dir) = made_run_dir {
        let _ = std::fs::remove_dir(dir);
    }
}

/// What the next setup found of a setup killed outright.
#[derive(Debug)]
pub enum Recovered {
    /// No receipt: nothing to take back.
    Nothing,
    /// Each revert, in words, newest first.
    TookBack(Vec<String>),
    /// Another oyster command changed the stack since the setup was killed (its audit log
    /// says so): nothing is taken back — a stack in use is not undone from under its user —
    /// and the receipt is dropped.
    Stale,
}

/// Takes back what a setup killed outright did, from its receipt, under the stack's lock:
/// newest first, each revert recorded in the audit log and returned in words. A receipt that
/// does not read, or names a path setup never writes, is refused and kept.
///
/// A receipt whose stack lock another oyster holds may be a live setup's: this run does not
/// wait here (it waits for the lock where it applies, as before, and takes back there what a
/// dead run's receipt still lists then).
pub fn recover(ctx: &Context, opts: &super::SetupOptions) -> anyhow::Result<Recovered> {
    let st = &ctx.stack;
    if std::fs::symlink_metadata(path(st)).is_err() && stale_temps(&path(st)).is_empty() {
        return Ok(Recovered::Nothing);
    }
    let lock_path = st.lifecycle_lock_path();
    if let Some(dir) = lock_path.parent() {
        fsutil::create_dir_all(dir, 0o700)?;
    }
    match fsutil::try_lock_creating(&lock_path, "setup")? {
        Some((lock, _)) => recover_locked(ctx, opts, &lock),
        None => Ok(Recovered::Nothing),
    }
}

/// [`recover`], with the stack's lock held.
pub(super) fn recover_locked(
    ctx: &Context,
    opts: &super::SetupOptions,
    lock: &Lock,
) -> anyhow::Result<Recovered> {
    let st = &ctx.stack;
    let path = path(st);
    let temps = stale_temps(&path);
    let plan = plan::plan(ctx, &opts.host)?;
    let allowed = allowed(ctx, &plan);
    let steps = match read_current(ctx, &allowed, &path, lock.found())? {
        Some(None) => {
            for temp in &temps {
                let _ = std::fs::remove_file(temp);
            }
            forget(&path, None);
            return Ok(Recovered::Stale);
        }
        Some(Some(read)) => read.steps,
        // Killed as it wrote its first receipt (the temp file not yet renamed): what that
        // receipt lists, when the temp holds it whole, else the empty directories made for it.
        None => match first_receipt(ctx, &allowed, &temps) {
            Some(steps) => steps,
            None if temps.is_empty() => return Ok(Recovered::Nothing),
            None => return Ok(Recovered::TookBack(began(st, &temps))),
        },
    };
    mark_taking_back(lock, &path, &steps)?;
    let made_run_dir = steps.iter().any(|s| match s {
        Undo::Created(c) => c.dirs.contains(&st.run_dir),
        _ => false,
    });
    // A stack the killed run created goes whole, its audit log with it: no revert is
    // recorded there (the last one would write it again).
    let fresh = steps.iter().any(|s| matches!(s, Undo::Stack { .. }));
    let mut journal = Journal::new(if fresh { None } else { record(ctx) });
    for step in steps {
        journal.push(step);
    }
    let mut cx = Undoing {
        ctx,
        plan: &plan,
        lock,
        regenerate: None,
        reapply: false,
    };
    let mut undone = journal.roll_back(&mut cx);
    put_job_back(
        ctx,
        opts,
        lock,
        (cx.regenerate.take(), cx.reapply),
        &mut undone,
    );
    if let Some(e) = undone.failures.into_iter().next() {
        return Err(e.context(
            super::Said::PartlyTakenBack {
                said: undone.said,
                path,
            }
            .to_string(),
        ));
    }
    for temp in &temps {
        let _ = std::fs::remove_file(temp);
    }
    forget(&path, made_run_dir.then_some(st.run_dir.as_path()));
    Ok(Recovered::TookBack(undone.said))
}

/// Whether a receipt that says the killed run created the stack (it is removed whole) may be
/// right: the stack holds no config.json, or the one the run wrote, stamped (`changed_since`
/// tells whether it is that one still).
fn stack_its_own(ctx: &Context, read: &Read) -> bool {
    let config = ctx.stack.config_path();
    !read.steps.iter().any(|s| matches!(s, Undo::Stack { .. }))
        || std::fs::symlink_metadata(&config).is_err()
        || read.steps.iter().any(|s| match s {
            Undo::File {
                path,
                before: Before::Absent,
                written,
                ..
            } => *path == config && (written.is_some() || read.taking_back),
            _ => false,
        })
}

/// Marks the receipt before the first revert: a setup killed while it takes back leaves
/// changes of its own (a config put back), and the next one goes on from the same receipt.
fn mark_taking_back(lock: &Lock, path: &Path, steps: &[Undo]) -> anyhow::Result<()> {
    let marked = Written {
        action: "setup",
        steps,
        taking_back: true,
    };
    let mut bytes = serde_json::to_vec_pretty(&marked)?;
    bytes.push(b'\n');
    fsutil::write_atomic(lock, path, &bytes, Some(0o600))?;
    Ok(())
}

/// What a receipt may name on this stack (`steps::plausible`), from its config as it is now.
fn allowed(ctx: &Context, plan: &plan::Plan) -> Allowed {
    let node_dir = plan.node.path.parent().unwrap_or(Path::new("/"));
    let agent_folder = plan
        .doc
        .value()
        .get(crate::config::BROWSE_KEY)
        .and_then(serde_json::Value::as_str)
        .map_or_else(|| ctx.stack.home.join("OysterunAgents"), PathBuf::from);
    Allowed {
        npm: node_dir.join("npm"),
        prefix: node_dir.parent().unwrap_or(Path::new("/")).to_path_buf(),
        agent_folder,
        // A stack the killed run created: no other command's line in its log from before
        // the receipt was last written (one after it makes the receipt stale instead).
        fresh: !foreign_lines(&ctx.stack, |t| t <= written_ms(&path(&ctx.stack))),
    }
}

/// Whether a file the killed run wrote (config.json) is no longer the one it left: the user,
/// or a command that writes no audit line (`providers set`, `config sync`), changed it since.
fn changed_since(steps: &[Undo]) -> bool {
    steps.iter().any(|s| match s {
        Undo::File {
            path,
            written: Some(stamp),
            ..
        } => Stamp::of(path) != Some(*stamp),
        _ => false,
    })
}

/// Whether a Host was started directly on the stack (`host start`, which writes no audit
/// line) after the killed run's last step: its pid file is newer than the receipt. When that
/// step was the run's own start under way (directly, or by the service manager, whose Host
/// writes the pid file too), the pid file is the killed run's unless another oyster held the
/// stack's lock since the kill (every `host start` takes it): the lock file then no longer
/// holds the killed setup's record (`found`: what it held when this run took the lock). A
/// direct start that verified is journaled once its pid file is written
/// ([`Undo::HostStarted`]).
fn started_since(
    st: &crate::host::stack::Stack,
    receipt: &Path,
    steps: &[Undo],
    found: &str,
) -> bool {
    let newer = std::fs::symlink_metadata(st.pid_path())
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .is_some_and(|d| d.as_millis() > written_ms(receipt));
    let own_start = matches!(steps.last(), Some(Undo::StopHost | Undo::Service { .. }));
    newer && !(own_start && found.ends_with("(setup)"))
}

/// The most of the audit log read to tell whether the stack was used since.
const MAX_AUDIT_BYTES: u64 = 8 * 1024 * 1024;

/// Whether another oyster command acted on the stack after the receipt was last written: its
/// audit log holds a later line of another action than setup's own (and the Host's launches,
/// which a job the killed setup loaded makes by itself). A log too big to read counts as used.
fn used_since(st: &crate::host::stack::Stack, receipt: &Path) -> bool {
    let since = written_ms(receipt);
    foreign_lines(st, |t| t > since)
}

/// When the receipt was last written, in ms since the epoch (`u128::MAX`: not there).
fn written_ms(receipt: &Path) -> u128 {
    std::fs::symlink_metadata(receipt)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(u128::MAX, |d| d.as_millis())
}

/// Whether the stack's audit log holds a line of another action than setup's own (and the
/// Host's launches) at a time `when` (ms) picks. A log too big to read counts as holding one.
fn foreign_lines(st: &crate::host::stack::Stack, when: impl Fn(u128) -> bool) -> bool {
    let own = [Action::Setup, Action::Exec].map(|a| a.to_string());
    match fsutil::read_regular(&st.audit_path(), MAX_AUDIT_BYTES) {
        Ok(None) => false,
        Err(_) => true,
        Ok(Some(bytes)) => String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .any(|l| {
                let action = l["action"].as_str().unwrap_or_default();
                l["ts_ms"].as_u64().is_some_and(|t| when(u128::from(t)))
                    && !own.iter().any(|o| o == action)
            }),
    }
}

/// The temp files of receipt writers that are gone (killed half-way through a write).
fn stale_temps(path: &Path) -> Vec<PathBuf> {
    // This process's own temp name, less its pid: the prefix every writer's shares.
    let ours = fsutil::temp_path(path);
    let (Some(dir), Some(tmp)) = (path.parent(), ours.file_name()) else {
        return vec![];
    };
    let tmp = tmp.to_string_lossy();
    let prefix = tmp.trim_end_matches(|c: char| c.is_ascii_digit());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix(prefix)
                .and_then(|pid| pid.parse::<u32>().ok())
                .is_some_and(|pid| pid != std::process::id() && !crate::sys::signal::exists(pid))
        })
        .map(|e| e.path())
        .collect()
}

/// The steps of a first receipt a killed run left whole in its temp file.
fn first_receipt(ctx: &Context, allowed: &Allowed, temps: &[PathBuf]) -> Option<Vec<Undo>> {
    temps.iter().find_map(|t| {
        owned_privately(t).ok()?;
        let bytes = fsutil::read_regular(t, MAX_RECEIPT_BYTES).ok()??;
        let read: Read = serde_json::from_slice(&bytes).ok()?;
        read.steps
            .iter()
            .all(|s| plausible(ctx, allowed, s))
            .then_some(read.steps)
    })
}

/// A run killed before its first receipt held anything: its temp files go, and the
/// directories made for them while they are empty (the run dir, the stack's, the stacks').
fn began(st: &crate::host::stack::Stack, temps: &[PathBuf]) -> Vec<String> {
    for temp in temps {
        let _ = std::fs::remove_file(temp);
    }
    let stacks = st.root.parent().filter(|p| *p != st.home);
    let mut removed = 0;
    for dir in [Some(st.run_dir.as_path()), Some(st.root.as_path()), stacks] {
        match dir.map(std::fs::remove_dir) {
            Some(Ok(())) => removed += 1,
            _ => break,
        }
    }
    match removed {
        0 => vec![],
        removed => vec![super::Said::RemovedCreated { removed }.to_string()],
    }
}

/// Whether `path` is this user's own and writable by no one else (`Err`: why not): a receipt
/// another uid wrote, or could have, is not acted on.
fn owned_privately(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let me = crate::sys::user::euid();
    if meta.uid() != me {
        return Err(format!("owned by uid {}, not {me}", meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "writable by others (mode {:o})",
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

/// The receipt (`None`: it went meanwhile); one that does not read, is not this user's
/// alone, or names a path, program or package setup never uses, is refused.
/// The receipt, checked ([`read_checked`]), and whether it still applies: `Some(None)` when
/// the stack was used since the setup was killed (so nothing of it is taken back), `None`
/// when there is no receipt.
fn read_current(
    ctx: &Context,
    allowed: &Allowed,
    path: &Path,
    found: &str,
) -> anyhow::Result<Option<Option<Read>>> {
    let st = &ctx.stack;
    Ok(read_checked(ctx, allowed, path)?.map(|read| {
        let stale = !read.taking_back
            && (used_since(st, path)
                || changed_since(&read.steps)
                || started_since(st, path, &read.steps, found));
        (!stale).then_some(read)
    }))
}

/// What the next setup will do with a receipt here, asked without the lock and without
/// acting (`setup --dry-run`): the same checks, so a receipt the run would refuse is refused
/// here with the same error.
pub fn preview(ctx: &Context, opts: &super::SetupOptions) -> anyhow::Result<Recovered> {
    let path = path(&ctx.stack);
    if std::fs::symlink_metadata(&path).is_err() && stale_temps(&path).is_empty() {
        return Ok(Recovered::Nothing);
    }
    let allowed = allowed(ctx, &plan::plan(ctx, &opts.host)?);
    // The lock's record as the run will find it (not taken: a preview changes nothing).
    let found = fsutil::lock_record(&ctx.stack.lifecycle_lock_path());
    Ok(match read_current(ctx, &allowed, &path, &found)? {
        Some(None) => Recovered::Stale,
        // The reverts are said as they are taken; that there are some is all a preview says.
        _ => Recovered::TookBack(vec![]),
    })
}

fn read_checked(ctx: &Context, allowed: &Allowed, path: &Path) -> anyhow::Result<Option<Read>> {
    let unreadable = |why: String| {
        let path = path.to_path_buf();
        let hint = super::Said::RemoveReceipt { path: path.clone() }.to_string();
        Failed::new(
            super::Said::UnreadableReceipt { path, why }.to_string(),
            hint,
        )
    };
    owned_privately(path).map_err(unreadable)?;
    let Some(bytes) = fsutil::read_regular(path, MAX_RECEIPT_BYTES)? else {
        return Ok(None);
    };
    let read: Read = serde_json::from_slice(&bytes).map_err(|e| unreadable(e.to_string()))?;
    if let Some(step) = read.steps.iter().find(|s| !plausible(ctx, allowed, s)) {
        return Err(unreadable(format!("a step setup never takes: {step:?}")).into());
    }
    if !stack_its_own(ctx, &read) {
        return Err(unreadable("a stack it did not create".to_owned()).into());
    }
    Ok(Some(read))
}

/// After the reverts, from the config as it is back now (its own port, not this run's
/// `--port`): the definition written again (`regenerate`), the job put back (`reapply`).
fn put_job_back(
    ctx: &Context,
    opts: &super::SetupOptions,
    lock: &Lock,
    (regenerate, reapply): (Option<PathBuf>, bool),
    undone: &mut Undone,
) {
    let inputs = HostInputs {
        port: None,
        ..opts.host.clone()
    };
    let mut after = |what: anyhow::Result<String>| match what {
        Ok(words) => undone.said.push(words),
        Err(e) => {
            undone.said.push(format!("could not undo a step: {e:#}"));
            undone.failures.push(e);
        }
    };
    if let Some(def) = regenerate {
        after(plan::plan(ctx, &inputs).and_then(|p| {
            crate::manager::write_definition(ctx, &p, lock)?;
            Ok(format!("restored {}", def.display()))
        }));
    }
    if reapply {
        after(plan::plan(ctx, &inputs).and_then(|p| {
            let mut job = crate::manager::job(ctx, Some(lock))?;
            let request = crate::service::Request::Apply;
            let done = job.apply(&p, Action::Setup, request, opts.timing)?;
            let (pid, port) = (done.verified.pid, p.port);
            Ok(super::Said::JobPutBack { pid, port }.to_string())
        }));
    }
}
