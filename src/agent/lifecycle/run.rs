//! Observe, decide, act, for launchd: the job observed once into the seam's neutral shape
//! ([`crate::service::Observed`]), the one pure decision ([`crate::service::decide`]) turned
//! into a refusal or a list of steps, and the steps taken in that order — the receipt written
//! before the change, a changed definition journaled so that a failure or an interrupt rolls
//! it back.

use super::*;
use crate::service::{self, Decision, Loaded, Observed, PortHolder, Refusal, Request, Step};

impl Agent<'_> {
    /// Decides the run for `request` and takes its steps: writes the config and the plist,
    /// makes launchd run it, verifies, and rolls back on failure or interrupt.
    pub fn apply(
        &mut self,
        plan: &Plan,
        action: Action,
        request: Request,
        timing: Timing,
    ) -> anyhow::Result<Outcome> {
        if let Some(sig) = signal::received() {
            return Err(crate::error::Interrupted(sig, "nothing was changed".into()).into());
        }
        self.ignore_switch = timing.ignore_login_items;
        let decision = self.decide(plan, request)?;
        self.run_decided(plan, action, &decision, timing)
    }

    /// Every refusal, decided before anything is written or enabled: a special Host log, a
    /// plist another user owns (facts about files), then the decision itself — the port held
    /// by another process, a reload launchd would refuse.
    pub fn decide(&mut self, plan: &Plan, request: Request) -> anyhow::Result<Decision> {
        self.stack.refuse_special_log()?;
        agentplist::refuse_foreign_owner(&self.stack.plist_path())?;
        let observed = self.observe(plan, request)?;
        let planned = service::Planned {
            config: self.stack.config_path(),
            edits: plan.changes.iter().map(Into::into).collect(),
            port: plan.port,
            ignore_switch: self.ignore_switch,
        };
        service::decide(&observed, &planned, request).map_err(|r| self.refusal(r))
    }

    /// The job as launchd shows it now, in the seam's shape: where it is loaded, and by whom
    /// (no plan needed: `stop`, `uninstall`).
    pub fn observe_job(&mut self) -> anyhow::Result<Observed> {
        let label = &self.stack.label;
        let before = self.peek_before()?;
        let loaded = |target: String, i: &PrintInfo| Loaded {
            target,
            pid: i.pid(),
            running: i.running(),
            matches: true,
        };
        let others = self
            .other_copies()
            .map(|(d, i)| loaded(d.target(label), i))
            .collect();
        Ok(Observed {
            everywhere: [self.active(), self.active().other()]
                .iter()
                .map(|d| d.target(label))
                .collect(),
            here: self.target(),
            loaded_here: before.as_ref().map(|i| loaded(self.target(), i)),
            others,
            definition: self.stack.plist_path(),
            definition_changed: false,
            pending: self.pending(),
            disabled_here: false,
            disabled_anywhere: false,
            switched_off: false,
            port: PortHolder::Free,
            direct: None,
        })
    }

    /// [`Agent::observe_job`] against `plan`: whether the loaded definition matches it and the
    /// one on disk differs; what only a refusal needs (the Login Items switch, who holds the
    /// port, what `stop` disabled) is asked only when it could refuse.
    pub fn observe(&mut self, plan: &Plan, request: Request) -> anyhow::Result<Observed> {
        let mut o = self.observe_job()?;
        let before = self.peek_before()?;
        if let (Some(l), Some(i)) = (o.loaded_here.as_mut(), before.as_ref()) {
            l.matches = self.loaded_matches(i, plan);
        }
        let label = &self.stack.label;
        let plist = self.stack.plist_path();
        o.definition_changed = plan.plist_changed() || agentplist::mode_refused(&plist);
        let reloads =
            o.definition_changed || o.pending || o.loaded_here.as_ref().is_some_and(|l| !l.matches);
        o.switched_off = o.loaded_here.is_some()
            && reloads
            && crate::agent::refusal::login_item(self.lc, &plist).is_some();
        if request == Request::Start {
            let off = |d: Domain| self.lc.disabled(&d, label).ok().flatten().unwrap_or(false);
            o.disabled_here = off(self.active());
            o.disabled_anywhere = o.disabled_here || off(self.active().other());
        }
        o.port = self.port_holder(plan.port, o.loaded_here.as_ref(), &o.others);
        Ok(o)
    }

    /// The config or the plist written; a failure (before launchd was asked to load
    /// anything) puts back the port this run wrote and removes this run's receipt.
    fn write_step(
        &mut self,
        plan: &Plan,
        action: Action,
        step: &Step,
        port: Option<&crate::config::Change>,
        pending: bool,
    ) -> anyhow::Result<()> {
        let written = match step {
            Step::WriteConfig { .. } => self.write_config(plan),
            _ => self.write_plist(plan, action),
        };
        written.map_err(|e| {
            let paths = (self.stack.config_path(), self.pending_path());
            crate::service::journal::undo_writes(
                e,
                (&paths.0, &paths.1),
                port,
                pending,
                "launchd",
                self.out,
            )
        })
    }

    /// Takes the decided steps in order.
    pub fn run_decided(
        &mut self,
        plan: &Plan,
        action: Action,
        d: &Decision,
        timing: Timing,
    ) -> anyhow::Result<Outcome> {
        let before = self.peek_before()?;
        let pending = self.pending();
        if pending {
            self.out.progress("A previous oyster run stopped before its change verified; verifying now (and rolling back to the last good plist if it does not).");
        }
        let port = self.port_change(plan, pending);
        let mut receipt = (d.reload || pending)
            .then(|| self.mark_pending(action, d, port.as_ref()))
            .transpose()?;
        self.keep_stopped = d.keep_stopped;
        let mut journal = Journal::new(Some((self.audit.clone(), action)));
        let mut baseline = Baseline::of(before.as_ref());
        self.say_before_steps(plan, d)?;
        for (i, step) in d.steps.iter().enumerate() {
            if let Some(r) = receipt.as_mut() {
                r.advance(i, self.lock()?, &self.pending_path())?;
            }
            match step {
                Step::FinishStop { target } => self.finish_stop(target)?,
                Step::Enable { targets } if targets.len() > 1 => self.enable(action)?,
                Step::WriteConfig { .. } | Step::WriteDefinition { .. } => {
                    self.write_step(plan, action, step, port.as_ref(), pending)?;
                }
                Step::BootOut { target, .. } if *target != self.target() => {
                    self.boot_out_others(action)?;
                    self.forget_before();
                }
                Step::Enable { .. } | Step::BootOut { .. } | Step::Load { .. } => {
                    if journal.is_empty() && d.change.rolls_back() {
                        journal.push(self.definition(plan, action, timing, port.clone()));
                    }
                    if let Err((stop, hint)) = self.reload_part(step, action) {
                        return Err(self.roll_back(action, journal, stop, hint));
                    }
                    baseline = Baseline {
                        old_pid: before.as_ref().and_then(PrintInfo::pid),
                        runs: Some(0),
                        ..Baseline::default()
                    };
                }
                Step::Restart { .. } => {
                    if journal.is_empty() && d.change.rolls_back() {
                        journal.push(self.definition(plan, action, timing, port.clone()));
                    }
                    // SIGTERM … kickstart is one step: a signal in between would leave the Host
                    // stopped, so it is noticed once the new instance has been started.
                    let _whole = signal::Suspended::new();
                    baseline = self.restart_gracefully(action, before.as_ref())?;
                }
                Step::Verify { .. } => {}
                Step::Disable { .. } | Step::RemoveDefinition { .. } | Step::StopDirect { .. } => {
                    anyhow::bail!("launchd takes no {step:?} step in a load")
                }
            }
        }
        if d.change == Change::Unchanged {
            let v = self.verify(&plan.env, plan.port, baseline, timing);
            return self.finish(action, v, &plan.plist).map(|v| Outcome {
                verified: v,
                reloaded: false,
                was_loaded: true,
            });
        }
        if journal.is_empty() && d.change.rolls_back() {
            journal.push(self.definition(plan, action, timing, port));
        }
        self.conclude(plan, action, baseline, journal, timing)
            .map(|verified| Outcome {
                verified,
                reloaded: d.reload,
                was_loaded: before.is_some(),
            })
    }

    /// What is said before the steps: a config left unchanged (no config step), a reload of a
    /// job said to be switched off, a loaded definition that is not the plist on disk.
    fn say_before_steps(&self, plan: &Plan, d: &Decision) -> anyhow::Result<()> {
        let has = |f: fn(&Step) -> bool| d.steps.iter().any(f);
        if !has(|s| matches!(s, Step::WriteConfig { .. })) {
            self.config_unchanged(plan)?;
        }
        if d.switched_off {
            self.note_switched_off();
        }
        if d.stale && !has(|s| matches!(s, Step::WriteDefinition { .. })) {
            self.out.progress("launchd runs another definition than the plist on disk, which is what oyster generates (written by `regenerate --no-restart`, or the loaded job was changed behind oyster's back); reloading it.");
        }
        Ok(())
    }

    /// A reload of a job ServiceManagement says is switched off, made all the same: said.
    fn note_switched_off(&self) {
        let label = &self.stack.label;
        let why = match self.ignore_switch {
            true => "--ignore-login-items was given",
            false => "it runs, so that answer alone is not taken as proof (for a plist a command-line tool wrote it is undocumented, and has been seen for a running job)",
        };
        self.out.note(&format!(
            "ServiceManagement says {label} is switched off in System Settings → General → Login Items (\"requires approval\"), but {why}: reloading it anyway; if launchd refuses the new definition, the Host stays down until it is switched on there"
        ));
    }

    /// The rollback's journal entry: the definition this run replaces.
    fn definition(
        &self,
        plan: &Plan,
        action: Action,
        timing: Timing,
        port: Option<crate::config::Change>,
    ) -> rollback::Definition {
        rollback::Definition {
            action,
            timing,
            previous: plan.installed.as_ref().map(|i| i.bytes.clone()),
            new: plan.plist.clone(),
            port,
        }
    }

    /// One part of loading the changed definition again. After the bootout every failure takes
    /// the rollback a failed verification takes (a bootstrap refused, a launchctl timeout, a
    /// signal that cut a call short): the Host is down and the new plist unverified. The error
    /// is why, with the fix launchd's refusal named.
    fn reload_part(&mut self, step: &Step, action: Action) -> Result<(), (Stop, Option<String>)> {
        let r = match step {
            Step::Enable { .. } => self
                .lc
                .enable(self.active(), &self.stack.label)
                .map_err(anyhow::Error::from)
                .and_then(|r| r.accept(&[]).map(|_| ()).map_err(Into::into)),
            Step::BootOut { .. } => self.bootout(action),
            _ => self.bootstrap(action),
        };
        r.map_err(|e| {
            let hint = e
                .downcast_ref::<crate::error::Failed>()
                .and_then(|f| f.hint.clone());
            (stop_from(e), hint)
        })
    }

    /// Every copy loaded in the other domain booted out, to its end: the definition is written
    /// already, so an interrupt meanwhile is the change's to take, by its rollback.
    fn boot_out_others(&self, action: Action) -> anyhow::Result<()> {
        let _whole = signal::Suspended::new();
        self.boot_out_other_copies(action).map(|_| ())
    }

    /// `start` after an interrupted `stop`: the bootout launchd was still draining, finished.
    fn finish_stop(&mut self, target: &str) -> anyhow::Result<()> {
        self.out.progress(&format!(
            "{target} is still being booted out (a stop was interrupted); finishing that first…"
        ));
        self.bootout_in(self.active(), Action::Start, None)?;
        self.forget_before();
        Ok(())
    }

    /// The plist written, and the write recorded.
    fn write_plist(&self, plan: &Plan, action: Action) -> anyhow::Result<()> {
        let wrote = agentplist::write(
            self.lock()?,
            &self.stack.plist_path(),
            &plan.plist,
            &self.stack.log_dir,
        )?;
        let outcome = if wrote {
            StepOutcome::Written
        } else {
            StepOutcome::Unchanged
        };
        self.audit.record(
            action,
            crate::output::audit::Step::WritePlist,
            outcome,
            None,
            "",
        );
        Ok(())
    }

    /// The config step: what the plan computed, written into `config.json` (merged again with
    /// what is on disk now) and said.
    pub fn write_config(&self, plan: &Plan) -> anyhow::Result<()> {
        let changes = crate::host::plan::write_config(self.plan_env, plan, self.lock()?)?;
        crate::config::report(&self.stack.config_path(), &changes, self.out);
        Ok(())
    }

    /// No config step: said as the sync says it, and the pinned Node's version cached.
    fn config_unchanged(&self, plan: &Plan) -> anyhow::Result<()> {
        let stack = self.stack;
        crate::host::node::record_version(
            &stack.node_version_cache_path(),
            self.lock()?,
            &plan.node,
        );
        plan.warn_privacy(self.out);
        crate::config::report(&stack.config_path(), &[], self.out);
        Ok(())
    }

    /// The job as [`Agent::before`] will give it, without taking the first `print`.
    pub(super) fn peek_before(&mut self) -> anyhow::Result<Option<PrintInfo>> {
        let first = self.before()?;
        self.before = Some(first.clone());
        Ok(first)
    }

    /// Verifies the new instance; a failure rolls back a changed definition, is said for an
    /// unchanged one (nothing to roll back to), and an interrupt after a restart stopped the
    /// old Host finishes verifying the new one.
    fn conclude(
        &mut self,
        plan: &Plan,
        action: Action,
        baseline: Baseline,
        journal: Journal<rollback::Definition>,
        timing: Timing,
    ) -> anyhow::Result<Verified> {
        let old = baseline.old_pid;
        match self.verify(&plan.env, plan.port, baseline.clone(), timing) {
            Ok(v) => {
                self.audit.record(
                    action,
                    crate::output::audit::Step::Verify,
                    StepOutcome::Ok,
                    Some(v.pid),
                    "",
                );
                self.keep_as_last_good(&plan.plist);
                Ok(v)
            }
            Err(Stop::Interrupted(sig)) if journal.is_empty() && old.is_some() => {
                let old = old.unwrap_or_default();
                Err(self.finish_interrupted_restart(action, sig, old, baseline, plan, timing))
            }
            // Nothing about the definition changed (a restart or start of the same plist):
            // there is nothing to roll back to. The failure is said; the job stays as it is.
            Err(stop) if journal.is_empty() => {
                let _ = std::fs::remove_file(self.pending_path());
                self.finish(action, Err(stop), &plan.plist)
            }
            Err(stop) => Err(self.roll_back(action, journal, stop, None)),
        }
    }

    /// Who holds `port`, by the one rule ([`port::check_port`]): this stack's own Host in
    /// either domain is not another's.
    fn port_holder(&self, port: u16, here: Option<&Loaded>, others: &[Loaded]) -> PortHolder {
        let ours: Vec<u32> = here
            .iter()
            .copied()
            .chain(others)
            .filter_map(|l| l.pid)
            .collect();
        service::port::holder(port, &ours, self.out)
    }

    /// A refusal as the error the user reads, with its fix.
    fn refusal(&self, r: Refusal) -> anyhow::Error {
        let name = &self.stack.name;
        match r {
            Refusal::PortHeld { port, pid, name: holder, stack } => crate::error::Failed::new(
                format!(
                    "port {port} is already held by pid {pid} ({holder}{}); the Host of stack {name} could not listen there",
                    stack.map_or(String::new(), |s| format!(", oyster stack {s}"))
                ),
                format!("stop that process (or give stack {name} another port with --port), then run again"),
            )
            .into(),
            Refusal::PortInvisible { port } => crate::error::Failed::new(
                format!(
                    "port {port} is held by a process oyster cannot see (another user's?): no socket this user may inspect listens there, yet it cannot be bound; the Host of stack {name} could not listen there"
                ),
                format!(
                    "find the holder as an administrator (`sudo lsof -nP -iTCP:{port} -sTCP:LISTEN`), or give stack {name} another port with --port"
                ),
            )
            .into(),
            Refusal::SwitchedOff { .. } => {
                let fix = crate::agent::refusal::login_item(self.lc, &self.stack.plist_path())
                    .map_or_else(String::new, |c| c.fix);
                crate::error::Failed::new(
                    format!(
                        "{} is loaded (it was loaded before it was switched off in System Settings → General → Login Items), and launchd will not load it again: this change would reload it and leave it unloaded, so launchd, the plist and config.json were left as they are",
                        self.stack.label
                    ),
                    format!("{fix}; or, if it is switched on there already, run the command again with --ignore-login-items"),
                )
                .into()
            }
        }
    }
}
