//! launchd behind the service-manager seam: every verb a command asks of it, through the
//! methods the lifecycle already has.

use super::*;
use crate::service::{
    Decision, KillOutcome, ManagerKind, Observed, Request, ServiceManager, Standing, StopOutcome,
};

impl ServiceManager for Agent<'_> {
    fn kind(&self) -> ManagerKind {
        ManagerKind::Launchd
    }

    fn was_loaded(&self) -> bool {
        Agent::was_loaded(self)
    }

    fn running_pid(&self) -> Option<u32> {
        self.loaded_here()
            .filter(|i| i.running())
            .and_then(PrintInfo::pid)
    }

    fn observe_job(&mut self) -> anyhow::Result<Observed> {
        Agent::observe_job(self)
    }

    fn decide(&mut self, plan: &Plan, request: Request) -> anyhow::Result<Decision> {
        Agent::decide(self, plan, request)
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
        Agent::run_decided(self, plan, action, decision, timing)
    }

    fn start(&mut self, plan: &Plan, timing: Timing) -> anyhow::Result<Outcome> {
        Agent::start(self, plan, timing)
    }

    fn stop(&mut self, keep: bool, wait: bool) -> anyhow::Result<StopOutcome> {
        Agent::stop(self, keep, wait)
    }

    fn kill(&mut self, hint: &dyn Fn(&str) -> String) -> anyhow::Result<KillOutcome> {
        Agent::kill(self, hint)
    }

    fn uninstall(&mut self) -> anyhow::Result<bool> {
        Agent::uninstall(self)
    }

    fn write_config(&self, plan: &Plan) -> anyhow::Result<()> {
        self.run.write_config(plan)
    }

    /// In either domain: a copy loaded only in `user/<uid>` while `gui/<uid>` exists is
    /// reloaded (into the domain oyster acts in, the other copy booted out) like any loaded
    /// job; one loaded twice is never left alone.
    fn standing(&mut self, plan: &Plan) -> anyhow::Result<Standing> {
        let pending = self.pending();
        Ok(match self.job()?.map(|(_, info)| info) {
            None if !pending => Standing::NotLoaded {
                stopped: self
                    .lc
                    .is_disabled_in(&self.domain.name, &self.run.stack.label),
            },
            Some(info)
                if !plan.plist_changed()
                    && self.loaded_matches(&info, plan)
                    && !pending
                    && self.other_copies().next().is_none() =>
            {
                Standing::Current
            }
            _ => Standing::Behind,
        })
    }
}
