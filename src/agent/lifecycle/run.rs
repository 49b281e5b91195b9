//! Observe, decide, act, for launchd: the job observed once into the seam's neutral shape
//! ([`crate::service::Observed`]), the one pure decision ([`crate::service::decide`]) turned
//! into a refusal or a list of steps, and the steps taken in that order — the receipt written
//! before the change, a changed definition journaled so that a failure or an interrupt rolls
//! it back.

use super::*;
use crate::service::run::Failed;
use crate::service::said::{Refused, Said};
use crate::service::{self, Decision, Loaded, Observed, PortHolder, Refusal, Request, Step};

impl Agent<'_> {
    /// Every refusal, decided before anything is written or enabled: a special Host log, a
    /// plist another user owns (facts about files), then the decision itself — the port held
    /// by another process, a reload launchd would refuse.
    pub fn decide(&mut self, plan: &Plan, request: Request) -> anyhow::Result<Decision> {
        self.run.stack.refuse_special_log()?;
        agentplist::refuse_foreign_owner(&self.run.stack.plist_path())?;
        let observed = self.observe(plan, request)?;
        service::decide(&observed, &self.run.planned(plan), request).map_err(|r| self.refusal(r))
    }

    /// The job as launchd shows it now, in the seam's shape: where it is loaded, and by whom
    /// (no plan needed: `stop`, `uninstall`).
    pub fn observe_job(&mut self) -> anyhow::Result<Observed> {
        let label = &self.run.stack.label;
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
            definition: self.run.stack.plist_path(),
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
        let label = &self.run.stack.label;
        let plist = self.run.stack.plist_path();
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

    /// Takes the decided steps in order, through the one runner ([`service::run`]).
    pub fn run_decided(
        &mut self,
        plan: &Plan,
        action: Action,
        d: &Decision,
        timing: Timing,
    ) -> anyhow::Result<Outcome> {
        service::run::run(self, plan, action, d, timing)
    }

    /// One decided step, the launchd way.
    pub(super) fn take_step(
        &mut self,
        plan: &Plan,
        action: Action,
        step: &Step,
        baseline: &mut Baseline,
    ) -> Result<(), Failed> {
        match step {
            Step::FinishStop { target } => self.finish_stop(target).map_err(Failed::Before),
            Step::Enable { targets } if targets.len() > 1 => {
                self.enable(action).map_err(Failed::Before)
            }
            Step::WriteConfig { .. } => Ok(self.run.write_config(plan)?),
            Step::WriteDefinition { .. } => Ok(self.write_plist(plan, action)?),
            Step::BootOut { target, .. } if *target != self.target() => {
                self.boot_out_others(action).map_err(Failed::Before)?;
                self.forget_before();
                Ok(())
            }
            Step::Enable { .. } | Step::BootOut { .. } | Step::Load { .. } => {
                self.reload_part(step, action)?;
                *baseline = Baseline {
                    old_pid: self.replaced.as_ref().and_then(PrintInfo::pid),
                    runs: Some(0),
                    ..Baseline::default()
                };
                Ok(())
            }
            Step::Restart { .. } => {
                // SIGTERM … kickstart is one step: a signal in between would leave the Host
                // stopped, so it is noticed once the new instance has been started.
                let _whole = signal::Suspended::new();
                *baseline = self.restart_gracefully(action, self.replaced.as_ref())?;
                Ok(())
            }
            Step::Verify { .. } => Ok(()),
            Step::Disable { .. } | Step::RemoveDefinition { .. } | Step::StopDirect { .. } => Err(
                Failed::Before(anyhow::anyhow!("launchd takes no {step:?} step in a load")),
            ),
        }
    }

    /// What is said before the steps: a config left unchanged (no config step), a reload of a
    /// job said to be switched off, a loaded definition that is not the plist on disk.
    pub(super) fn say_before_steps(&self, plan: &Plan, d: &Decision) -> anyhow::Result<()> {
        self.run.config_unchanged(plan, d)?;
        if d.switched_off {
            self.note_switched_off();
        }
        let writes = d
            .steps
            .iter()
            .any(|s| matches!(s, Step::WriteDefinition { .. }));
        if d.stale && !writes {
            self.run.out.progress(&Said::StaleDefinition.to_string());
        }
        Ok(())
    }

    /// A reload of a job ServiceManagement says is switched off, made all the same: said.
    fn note_switched_off(&self) {
        let said = Said::SwitchedOffAnyway {
            label: self.run.stack.label.clone(),
            ignored: self.run.ignore_switch,
        };
        self.run.out.note(&said.to_string());
    }

    /// One part of loading the changed definition again. After the bootout every failure takes
    /// the rollback a failed verification takes (a bootstrap refused, a launchctl timeout, a
    /// signal that cut a call short): the Host is down and the new plist unverified. The error
    /// is why, with the fix launchd's refusal named.
    fn reload_part(&mut self, step: &Step, action: Action) -> Result<(), Failed> {
        let r = match step {
            Step::Enable { .. } => self
                .lc
                .enable(self.active(), &self.run.stack.label)
                .map_err(anyhow::Error::from)
                .and_then(|r| r.accept(&[]).map(|_| ()).map_err(Into::into)),
            Step::BootOut { .. } => self.bootout(action),
            _ => self.bootstrap(action),
        };
        r.map_err(|e| {
            let hint = e
                .downcast_ref::<crate::error::Failed>()
                .and_then(|f| f.hint.clone());
            Failed::Changing(e, hint)
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
        let said = Said::FinishingStop {
            target: target.to_owned(),
        };
        self.run.out.progress(&said.to_string());
        self.bootout_in(self.active(), Action::Start, None)?;
        self.forget_before();
        Ok(())
    }

    /// The plist written, and the write recorded.
    fn write_plist(&self, plan: &Plan, action: Action) -> anyhow::Result<()> {
        let wrote = agentplist::write(
            self.run.lock()?,
            &self.run.stack.plist_path(),
            &plan.plist,
            &self.run.stack.log_dir,
        )?;
        let outcome = if wrote {
            StepOutcome::Written
        } else {
            StepOutcome::Unchanged
        };
        self.run.audit.record(
            action,
            crate::output::audit::Step::WritePlist,
            outcome,
            None,
            "",
        );
        Ok(())
    }

    /// The job as [`Agent::before`] will give it, without taking the first `print`.
    pub(super) fn peek_before(&mut self) -> anyhow::Result<Option<PrintInfo>> {
        let first = self.before()?;
        self.before = Some(first.clone());
        Ok(first)
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
        service::port::holder(port, &ours, self.run.out)
    }

    /// A refusal as the error the user reads, with its fix (`commands/words/service.rs`).
    fn refusal(&self, refusal: Refusal) -> anyhow::Error {
        let switch_on = matches!(refusal, Refusal::SwitchedOff { .. })
            .then(|| crate::agent::refusal::login_item(self.lc, &self.run.stack.plist_path()))
            .flatten()
            .map(|c| c.fix);
        crate::error::Failed::from(Refused {
            manager: service::ManagerKind::Launchd,
            stack: self.run.stack.name.to_string(),
            label: self.run.stack.label.clone(),
            refusal,
            switch_on,
        })
        .into()
    }
}
