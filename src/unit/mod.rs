//! The systemd user manager behind the service-manager seam (docs/systemd.md): one stack's Host
//! as the user unit `$XDG_CONFIG_HOME/systemd/user/<label>.service`, driven through the one
//! door (`systemd::Systemctl`). The decision (`service::decide`), the receipt, the proofs
//! (`verify`) and the words (`commands/`) are the ones launchd's job uses; this room only says
//! what the job is (one `show`) and takes each step the systemd way.
//!
//! # Platform
//! Linux, where a user manager answers `systemctl --user`.

use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::context::Context;
use crate::host::plan::Plan;
use crate::host::stack::Stack;
use crate::output::audit::{Action, Step as Logged, StepOutcome};
use crate::service::run::{Job, Run};
use crate::service::said::Said;
use crate::service::{
    self, Decision, KillOutcome, Loaded, ManagerKind, Observed, Outcome, Request, ServiceManager,
    Standing, StopOutcome, Timing,
};
use crate::sys::fs::{self as fsutil, Lock};
use crate::sys::signal;
use crate::systemd::{Systemctl, UnitShow};

mod refuse;
mod run;

/// The systemd side of one stack, for one run.
pub struct Unit<'a> {
    ctx: &'a Context,
    sc: Rc<Systemctl>,
    /// `com.oysterun.host.NAME.service`.
    name: String,
    /// Where the unit file lives.
    path: PathBuf,
    /// The unit as the run found it (one `show`).
    before: UnitShow,
    /// What every manager's run holds: the stack, its audit log and lock, the proofs allowed…
    run: Run<'a>,
    /// Commands the unit suggests, in the form the user typed (beside the run, not in it:
    /// `service` does not import the context, whose type this is).
    hints: crate::context::Hints,
}

impl<'a> Unit<'a> {
    /// The stack's unit under the user manager `sc` reaches; `lock` is the stack's lifecycle
    /// lock (`None`: a `--dry-run`, which takes no step).
    pub fn new(
        ctx: &'a Context,
        sc: Rc<Systemctl>,
        lock: Option<&'a Lock>,
    ) -> anyhow::Result<Unit<'a>> {
        refuse::refuse_root(&sc)?;
        let stack = &ctx.stack;
        let name = crate::systemd::unit_name(&stack.label)?;
        let path = path_for(ctx)?;
        if sc.overridden || sc.runtime_dir_defaulted {
            ctx.out.note(&format!("using systemctl {}", sc.describe()));
        }
        let before = sc.show(&name)?;
        Ok(Unit {
            run: Run::new(ctx.into(), ctx.env.proof_floor, lock),
            hints: ctx.hints(),
            ctx,
            sc,
            name,
            path,
            before,
        })
    }

    /// Whether the manager keeps the job going (running, starting, restarting, or failed
    /// until a `reset-failed`): what launchd calls loaded.
    fn is_loaded(show: &UnitShow) -> bool {
        use crate::systemd::ActiveState::{Inactive, Other};
        !show.is_not_found() && !matches!(show.active_state, Inactive | Other(_))
    }

    /// The unit's bytes for `plan`: the launch program, the one generated environment, the
    /// Host log.
    fn render(&self, plan: &Plan) -> anyhow::Result<Vec<u8>> {
        spec_for(self.ctx, plan).map(|(_, bytes)| bytes)
    }

    /// The unit file's bytes on disk, through the bounded reader.
    fn on_disk(&self) -> Option<Vec<u8>> {
        fsutil::read_regular(&self.path, 1024 * 1024).ok().flatten()
    }

    /// The job in the seam's shape, without a plan.
    fn observe_job(&self) -> Observed {
        // A failed unit (a crash loop past its start limit) is started again by nothing until
        // a `reset-failed`: a run loads it as one that is not loaded (reset-failed, start).
        let here = (Unit::is_loaded(&self.before) && !self.before.is_failed()).then(|| Loaded {
            target: self.name.clone(),
            pid: self.before.main_pid,
            running: self.before.is_running(),
            matches: true,
        });
        Observed {
            everywhere: vec![self.name.clone()],
            here: self.name.clone(),
            loaded_here: here,
            others: vec![],
            definition: self.path.clone(),
            definition_changed: false,
            pending: self.run.stack.pending_path().exists(),
            disabled_here: false,
            disabled_anywhere: false,
            switched_off: false,
            port: service::PortHolder::Free,
            direct: None,
        }
    }

    /// [`Unit::observe_job`] against `plan`: the file on disk against the plan's bytes; the
    /// loaded definition matches when the manager loaded that file, has nothing newer to read
    /// and no drop-in beside it.
    fn observe(&self, plan: &Plan, request: Request) -> anyhow::Result<Observed> {
        let mut o = self.observe_job();
        let bytes = self.render(plan)?;
        o.definition_changed = self.on_disk().as_deref() != Some(bytes.as_slice());
        let b = &self.before;
        let matches = b.fragment_path.as_deref() == Some(self.path.as_path())
            && !b.need_daemon_reload
            && b.drop_in_paths.is_empty()
            && !o.definition_changed;
        if let Some(l) = o.loaded_here.as_mut() {
            l.matches = matches;
        }
        if request == Request::Start {
            o.disabled_here = self.path.exists() && !b.is_enabled();
            o.disabled_anywhere = o.disabled_here;
        }
        // A Host `oyster host start` started for this stack is taken over: stopped by
        // identity, its port kept (so it is not another's).
        if let Ok(crate::direct::Owner::Ours(rec, _)) = crate::direct::owner(self.run.stack) {
            if self.before.main_pid != Some(rec.pid) {
                o.direct = Some(rec.pid);
            }
        }
        let ours: Vec<u32> = o
            .loaded_here
            .iter()
            .filter_map(|l| l.pid)
            .chain(o.direct)
            .collect();
        o.port = service::port::holder(plan.port, &ours, self.run.out);
        Ok(o)
    }

    fn decide_for(&self, plan: &Plan, request: Request) -> anyhow::Result<Decision> {
        self.run.stack.refuse_special_log()?;
        refuse::refuse_special(&self.path)?;
        let overriding = refuse::overriding_drop_ins(&self.path, &self.before.drop_in_paths);
        if !overriding.is_empty() {
            return Err(refuse::drop_in_refusal(&self.name, &overriding).into());
        }
        let observed = self.observe(plan, request)?;
        service::decide(&observed, &self.run.planned(plan), request)
            .map_err(|r| refusal(self.run.stack, r))
    }

    /// The unit now.
    fn show(&self) -> anyhow::Result<UnitShow> {
        Ok(self.sc.show(&self.name)?)
    }

    /// `stop`, then (unless `keep`) `disable`: the unit stays, and stays stopped at the next
    /// login. The identity files the Host wrote go with it.
    fn stop_job(&mut self, keep: bool, wait: bool) -> anyhow::Result<StopOutcome> {
        let _guard = signal::InterruptGuard::install();
        let was_loaded = Unit::is_loaded(&self.before);
        let pid = self.before.main_pid.filter(|_| self.before.is_running());
        {
            // Both calls finish whatever signal comes: a job stopped but still enabled would
            // come back at the next login.
            let _whole = signal::Suspended::new();
            if was_loaded {
                crate::service::journal::step_boundary();
                match wait {
                    true => self.sc.stop(&self.name)?,
                    false => self.no_block("stop")?,
                }
                self.run
                    .audit
                    .record(Action::Stop, Logged::Stop, StepOutcome::Ok, pid, "");
            }
            if !keep {
                crate::service::journal::step_boundary();
                self.sc.disable(&self.name, false)?;
                // systemctl reloads the manager after a disable only where it sees
                // `/run/systemd/system` itself: reloaded here so `UnitFileState` is current.
                self.sc.daemon_reload()?;
                self.run
                    .audit
                    .record(Action::Stop, Logged::Disable, StepOutcome::Ok, None, "");
            }
        }
        if wait {
            let _ = crate::host::identity::remove_if_dead(self.run.stack);
        }
        Ok(StopOutcome {
            was_loaded,
            still_stopping: !wait && pid.is_some(),
            pid,
        })
    }

    /// A job verb queued without waiting for it (`stop --no-wait`).
    fn no_block(&self, verb: &str) -> anyhow::Result<()> {
        let f = self.sc.call(
            &["--no-block", verb, self.name.as_str()],
            self.sc.query_timeout,
        )?;
        if f.code != 0 {
            return Err(crate::systemd::SystemctlError::from(f).into());
        }
        Ok(())
    }

    fn kill_host(&mut self, hint: &dyn Fn(&str) -> String) -> anyhow::Result<KillOutcome> {
        let _guard = signal::InterruptGuard::install();
        let Some(pid) = self.before.main_pid.filter(|_| self.before.is_running()) else {
            return Err(crate::error::Failed::new(
                format!(
                    "{} is not running, so there is no Host to signal",
                    self.name
                ),
                format!(
                    "`{}` starts it; `{}` shows why",
                    hint("start"),
                    hint("status")
                ),
            )
            .into());
        };
        self.sc.kill(&self.name, signal::Signal::SIGTERM, true)?;
        self.run.audit.record(
            Action::Kill,
            Logged::Sigterm,
            StepOutcome::Ok,
            Some(pid),
            "",
        );
        KillOutcome::watch(
            pid,
            "systemd starts the Host again by itself (Restart=always)",
            self.run.out,
        )
    }

    /// `disable --now`, the unit file removed, `daemon-reload`; config and logs stay.
    fn uninstall_job(&mut self) -> anyhow::Result<bool> {
        let _guard = signal::InterruptGuard::install();
        let _whole = signal::Suspended::new();
        let loaded = Unit::is_loaded(&self.before);
        if !self.before.is_not_found() {
            self.sc.disable(&self.name, true)?;
            self.run.audit.record(
                Action::Uninstall,
                Logged::Stop,
                StepOutcome::Ok,
                self.before.main_pid,
                "",
            );
        }
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                anyhow::bail!("could not remove {}: {e}", self.path.display())
            }
            _ => {}
        }
        self.sc.daemon_reload()?;
        for f in [self.run.stack.pending_path(), Job::last_good_path(self)] {
            let _ = std::fs::remove_file(f);
        }
        let _ = crate::host::identity::remove_if_dead(self.run.stack);
        self.run.audit.record(
            Action::Uninstall,
            Logged::RemovePlist,
            StepOutcome::Ok,
            None,
            "",
        );
        Ok(loaded)
    }
}

/// A refusal as the error the user reads, with its fix (`commands/words/service.rs`).
fn refusal(stack: &Stack, refusal: service::Refusal) -> anyhow::Error {
    crate::error::Failed::from(service::said::Refused {
        manager: ManagerKind::Systemd,
        stack: stack.name.to_string(),
        label: stack.label.clone(),
        refusal,
        switch_on: None,
    })
    .into()
}

impl ServiceManager for Unit<'_> {
    fn kind(&self) -> ManagerKind {
        ManagerKind::Systemd
    }

    fn was_loaded(&self) -> bool {
        Unit::is_loaded(&self.before)
    }

    fn running_pid(&self) -> Option<u32> {
        self.before.main_pid.filter(|_| self.before.is_running())
    }

    fn observe_job(&mut self) -> anyhow::Result<Observed> {
        Ok(Unit::observe_job(self))
    }

    fn decide(&mut self, plan: &Plan, request: Request) -> anyhow::Result<Decision> {
        self.decide_for(plan, request)
    }

    fn allow_switched_off(&mut self, yes: bool) {
        self.run.ignore_switch = yes;
    }

    fn run_decided(
        &mut self,
        plan: &Plan,
        action: Action,
        decision: &Decision,
        timing: Timing,
    ) -> anyhow::Result<Outcome> {
        service::run::run(self, plan, action, decision, timing)
    }

    fn start(&mut self, plan: &Plan, timing: Timing) -> anyhow::Result<Outcome> {
        self.run.ignore_switch = timing.ignore_login_items;
        let d = self.decide_for(plan, Request::Start)?;
        let stopped = self.path.exists() && !self.before.is_enabled();
        let result = service::run::run(self, plan, Action::Start, &d, timing);
        if result.is_err() && stopped {
            let _rest = signal::Suspended::new();
            if !self.show().is_ok_and(|s| Unit::is_loaded(&s)) {
                match self
                    .sc
                    .disable(&self.name, false)
                    .and_then(|()| self.sc.daemon_reload())
                {
                    Ok(()) => self.run.out.note(
                        &Said::DisabledAgain {
                            job: self.name.clone(),
                        }
                        .to_string(),
                    ),
                    Err(e) => self.run.out.warn(
                        &Said::NotDisabledAgain {
                            manager: ManagerKind::Systemd,
                            job: self.name.clone(),
                            error: format!("{e:#}"),
                            stop: self.hints.agent("stop"),
                        }
                        .to_string(),
                    ),
                }
            }
        }
        result
    }

    fn stop(&mut self, keep: bool, wait: bool) -> anyhow::Result<StopOutcome> {
        self.stop_job(keep, wait)
    }

    fn kill(&mut self, hint: &dyn Fn(&str) -> String) -> anyhow::Result<KillOutcome> {
        self.kill_host(hint)
    }

    fn uninstall(&mut self) -> anyhow::Result<bool> {
        self.uninstall_job()
    }

    fn write_config(&self, plan: &Plan) -> anyhow::Result<()> {
        self.run.write_config(plan)
    }

    fn standing(&mut self, plan: &Plan) -> anyhow::Result<Standing> {
        let o = self.observe(plan, Request::Apply)?;
        Ok(match &o.loaded_here {
            None if !o.pending => Standing::NotLoaded {
                stopped: self.path.exists() && !self.before.is_enabled(),
            },
            Some(l) if l.matches && !o.definition_changed && !o.pending => Standing::Current,
            _ => Standing::Behind,
        })
    }
}

/// Where the stack's unit file lives (`$XDG_CONFIG_HOME/systemd/user/<label>.service`).
pub fn path_for(ctx: &Context) -> anyhow::Result<PathBuf> {
    let stack = &ctx.stack;
    Ok(crate::systemd::unit_path(
        &stack.home,
        ctx.env.config_home.as_deref(),
        &stack.label,
    )?)
}

/// The unit for `plan` at its path under `ctx` (for the verbs that only write it).
fn spec_for(ctx: &Context, plan: &Plan) -> anyhow::Result<(PathBuf, Vec<u8>)> {
    let stack = &ctx.stack;
    let path = path_for(ctx)?;
    let args = plan.launch_arguments(&stack.name);
    let env: Vec<(String, String)> = plan.env.vars.clone().into_iter().collect();
    let description = format!("Oysterun Host ({})", stack.label);
    let bytes = crate::systemd::render(&crate::systemd::UnitSpec {
        description: &description,
        program: &plan.launcher,
        args: &args,
        working_directory: &plan.root.join("host-service"),
        env: &env,
        log_path: &stack.log_path(),
        timing: crate::systemd::Timing::HOST,
    })?;
    Ok((path, bytes))
}

/// Whether the unit on disk differs from what `plan` generates.
pub fn definition_changed(ctx: &Context, plan: &Plan) -> bool {
    spec_for(ctx, plan).map_or(true, |(path, bytes)| {
        fsutil::read_regular(&path, 1024 * 1024)
            .ok()
            .flatten()
            .as_deref()
            != Some(bytes.as_slice())
    })
}

/// Root's own unit, or a unit path that is not a regular file: refused before anything is
/// written (`install --no-start`, `regenerate --no-restart`).
pub fn refuse_write(ctx: &Context) -> anyhow::Result<()> {
    if let Ok(crate::context::Manager::Systemd(sc)) = ctx.manager() {
        refuse::refuse_root(&sc)?;
    }
    refuse::refuse_special(&path_for(ctx)?)?;
    Ok(())
}

/// When no systemd user manager answers (`XDG_RUNTIME_DIR` missing or stripped: `su`, cron,
/// an SSH session without one) yet the stack has a unit on disk: the sentence that says so.
/// The Host the unit runs writes the pid file a directly started Host writes, so without the
/// manager nothing may take it for a direct one, nor act on the job as if it had none.
pub fn unreachable(ctx: &Context) -> Option<String> {
    unreachable_here(ctx).map(|u| u.to_string())
}

fn unreachable_here(ctx: &Context) -> Option<service::said::Unreachable> {
    let Err(crate::context::NoManager::Unreachable(u)) = ctx.manager() else {
        return None;
    };
    let path = path_for(ctx).ok()?;
    std::fs::symlink_metadata(&path).ok()?;
    let uid = crate::sys::user::uid();
    Some(service::said::Unreachable {
        stack: ctx.stack.name.to_string(),
        unit: path,
        systemctl: u.systemctl,
        why: u.why,
        user: crate::sys::user::name_of(uid).unwrap_or_else(|| "the user".into()),
        uid,
    })
}

/// [`unreachable`] as the refusal of a verb that acts on the job (exit 1), with the way to
/// reach the manager.
pub fn refuse_unreachable(ctx: &Context) -> Result<(), crate::error::Failed> {
    match unreachable_here(ctx) {
        None => Ok(()),
        Some(u) => Err(service::said::Declined::Unreachable(u).into()),
    }
}

/// The drop-ins beside the stack's unit (those the manager loaded, `loaded`, and those on disk)
/// that override its environment or program: every verb that loads refuses them.
pub fn overriding_drop_ins(ctx: &Context, loaded: &[PathBuf]) -> Vec<(PathBuf, Vec<String>)> {
    path_for(ctx).map_or_else(|_| vec![], |p| refuse::overriding_drop_ins(&p, loaded))
}

/// `stop` (without `--keep`) of a unit that is a symlink, which its disable would remove:
/// refused before anything is stopped.
pub fn refuse_stop(ctx: &Context, keep: bool) -> anyhow::Result<()> {
    if keep {
        return Ok(());
    }
    let keep_hint = format!("{} --keep", ctx.hint_cmd("stop"));
    Ok(refuse::refuse_disabling_a_link(
        &path_for(ctx)?,
        &keep_hint,
    )?)
}

/// Writes the unit for `plan` when its bytes change (its log directory first); says whether it
/// wrote. The manager reads it at the next `daemon-reload`.
pub fn write_definition(ctx: &Context, plan: &Plan, lock: &Lock) -> anyhow::Result<bool> {
    refuse_write(ctx)?;
    let (path, bytes) = spec_for(ctx, plan)?;
    fsutil::create_dir_all(&ctx.stack.log_dir, 0o755)?;
    if let Some(dir) = path.parent() {
        fsutil::create_dir_all(dir, 0o755)?;
    }
    Ok(fsutil::write_atomic(lock, &path, &bytes, Some(0o644))?)
}
