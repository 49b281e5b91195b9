//! The everyday verbs on the launchd job (docs/behaviour.md §10, the `brew services` habits): `stop`
//! boots the job out and disables the label but keeps the plist; `start` enables it again
//! before the usual load and verify; `kill` sends SIGTERM to the running Host only.
//!
//! Why `disable`: launchd loads every plist in `~/Library/LaunchAgents` at login, so a job that
//! was only booted out would come back at the next login. `brew services stop` deletes the plist
//! instead; oyster keeps it, so `start` restores exactly the definition that was stopped.

use crate::agent::lifecycle::Agent;
use crate::error::{Failed, Interrupted};
use crate::launchctl::{Domain, Reply};
use crate::output::audit::{Action, Step, StepOutcome};
use crate::sys::process::ProcessError;
use crate::sys::signal::{self, InterruptGuard};

pub use crate::service::{KillOutcome, StopOutcome};

/// What the verbs say on their way (through the `Reporter`), as facts; in words in
/// `commands/words/agent.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerbNote {
    /// A failed start of a stopped stack disabled `label` again.
    DisabledAgain { label: String },
    /// It could not (why); `stop` keeps it stopped.
    NotDisabledAgain {
        label: String,
        why: String,
        stop: String,
    },
    /// A bootout not waited for answered 5 and launchd still lists `target`.
    StillListed { target: String },
    /// After `kill`, who starts the Host again.
    KeepAlive,
}

/// What an interrupted `stop` finished before the run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopFinished {
    /// Booted out, left enabled (`--keep`).
    Kept { label: String },
    /// Booted out (launchd still stopping `pid`, if any) and disabled; the plist kept.
    Disabled {
        label: String,
        pid: Option<u32>,
        plist: std::path::PathBuf,
    },
}

/// Why `kill` signals nothing; said with its fix as a `Failed` by `commands/words/agent.rs`.
/// The commands are spelled as the user typed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillRefusal {
    /// `label` is loaded in two domains (each copy's running pid).
    LoadedTwice {
        label: String,
        first: (Domain, Option<u32>),
        second: (Domain, Option<u32>),
        restart: String,
    },
    NotLoaded {
        label: String,
        start: String,
        status: String,
    },
    /// Loaded, no Host running (launchd's state, if it said one).
    NotRunning {
        label: String,
        state: Option<String>,
        logs: String,
    },
}

impl Agent<'_> {
    /// `launchctl enable` in both of this user's domains: undoes `stop`'s disable (`start`
    /// calls it before loading). launchd keeps one store of overrides per user, so one enable
    /// would do; both are asked (where they exist) so that a launchd keeping them apart
    /// (never seen) would not leave the label disabled in the other one.
    pub fn enable(&self, action: Action) -> anyhow::Result<()> {
        self.in_each_domain(|d| self.lc.enable(d, &self.run.stack.label))?;
        self.run
            .audit
            .record(action, Step::Enable, StepOutcome::Ok, None, "");
        Ok(())
    }

    /// `agent start`: every refusal (a port another process holds, a reload launchd would
    /// refuse) **before** enabling anything (a refused start leaves the label disabled, as
    /// `stop` left it), then enables the label in both domains and loads and verifies as
    /// `apply` does. A start of a stopped stack that fails (or is interrupted) disables the
    /// label again: enabled, the plist it left would be loaded at the next login, and the Host
    /// the user had stopped would come back.
    pub fn start(
        &mut self,
        plan: &crate::host::plan::Plan,
        timing: crate::agent::lifecycle::Timing,
    ) -> anyhow::Result<crate::agent::lifecycle::Outcome> {
        self.run.ignore_switch = timing.ignore_login_items;
        let decision = self.decide(plan, crate::service::Request::Start)?;
        let was_stopped = self.was_stopped(&decision);
        let result = self.run_decided(plan, Action::Start, &decision, timing);
        if result.is_err() && was_stopped && self.loaded_nowhere_now() {
            // After an interrupt too: these two calls finish before the run ends.
            let _rest = signal::Suspended::new();
            let out = self.run.out;
            match self.in_each_domain(|d| self.lc.disable(d, &self.run.stack.label)) {
                Ok(_) => out.note(
                    &VerbNote::DisabledAgain {
                        label: self.run.stack.label.clone(),
                    }
                    .to_string(),
                ),
                Err(e) => out.warn(
                    &VerbNote::NotDisabledAgain {
                        label: self.run.stack.label.clone(),
                        why: format!("{e:#}"),
                        stop: self.hints.agent("stop"),
                    }
                    .to_string(),
                ),
            }
        }
        result
    }

    /// Whether `stop` had left the label disabled, in this domain or the other (stopped over
    /// SSH, started at the console).
    fn was_stopped(&self, d: &crate::service::Decision) -> bool {
        d.keep_stopped
            || Domain::both().into_iter().any(|dom| {
                self.lc
                    .disabled(&dom, &self.run.stack.label)
                    .ok()
                    .flatten()
                    .unwrap_or(false)
            })
    }

    /// Whether, after a failed start, the job is loaded in neither domain (a rollback that
    /// restored a running Host leaves it loaded: then it is not stopped any more).
    fn loaded_nowhere_now(&self) -> bool {
        let _rest = signal::Suspended::new();
        self.lc
            .in_both_domains(&self.run.stack.label)
            .is_ok_and(|both| both.loaded().is_empty())
    }

    /// Runs an override verb (enable/disable) in the domain oyster acts in, then in the other
    /// one, where a missing domain (112/125: no console session) is no failure.
    /// Returns the other domain and its code when it was missing.
    fn in_each_domain(
        &self,
        verb: impl Fn(Domain) -> Result<Reply, ProcessError>,
    ) -> anyhow::Result<Option<(Domain, crate::launchctl::Code)>> {
        let active = self.active();
        verb(active)?.accept(&[])?;
        let other = active.other();
        let r = verb(other)?;
        if r.code.domain_missing() {
            return Ok(Some((other, r.code)));
        }
        r.accept(&[])?;
        Ok(None)
    }

    /// Boots the job out (waiting until launchd has let it go) and disables the label; the
    /// plist stays where it is.
    /// `keep`: boot out only, leaving the label enabled (the next login loads it again);
    /// `wait`: wait for launchd to finish each bootout (else return once it is issued).
    pub fn stop(&mut self, keep: bool, wait: bool) -> anyhow::Result<StopOutcome> {
        // Ctrl-C while launchd stops a slow Host must not leave the job booted out but still
        // enabled (it would come back at the next login): the disable is finished first.
        let _guard = InterruptGuard::install();
        // In either domain: a copy only in user/<uid> is the stack's Host all the same.
        let job = self.job()?;
        let pid = job
            .as_ref()
            .filter(|(_, i)| i.running())
            .and_then(|(_, i)| i.pid());
        let here = job.as_ref().is_some_and(|(d, _)| *d == self.active());
        if job.is_some() {
            crate::service::journal::step_boundary();
        }
        let booted_out = self.boot_out_for_stop(here, pid, wait);
        let interrupted = signal::cut_short(booted_out)?;
        let _rest = interrupted.map(|_| signal::Suspended::new());
        if wait {
            self.remove_stale_identity();
        }
        if keep {
            // Registered still: no disable, so the next login (or `start`) loads it again.
            if let Some(sig) = interrupted {
                let kept = StopFinished::Kept {
                    label: self.run.stack.label.clone(),
                };
                return Err(Interrupted(sig, kept.to_string()).into());
            }
            return Ok(StopOutcome {
                was_loaded: job.is_some(),
                still_stopping: !wait && pid.is_some(),
                pid,
            });
        }
        // Both domains where they exist. launchd keeps one store of overrides per user
        // (`disabled.<uid>.plist`), read by `gui/<uid>` and `user/<uid>` alike (docs/launchd.md,
        // "Domains"), so the disable in the domain oyster acts in already keeps the Host
        // stopped at the next console login, over SSH too, where `gui/<uid>` does not exist
        // and its `disable` is refused (112/125, no failure). The plist is never touched: it
        // stays the generated one, so `status` does not call it stale and `regenerate` or an
        // upgrade's postinstall, which write it again, do not undo the stop.
        crate::service::journal::step_boundary();
        self.in_each_domain(|d| self.lc.disable(d, &self.run.stack.label))?;
        self.run
            .audit
            .record(Action::Stop, Step::Disable, StepOutcome::Ok, None, "");
        if let Some(sig) = interrupted {
            let disabled = StopFinished::Disabled {
                label: self.run.stack.label.clone(),
                pid,
                plist: self.run.stack.plist_path(),
            };
            return Err(Interrupted(sig, disabled.to_string()).into());
        }
        Ok(StopOutcome {
            was_loaded: job.is_some(),
            still_stopping: !wait && pid.is_some(),
            // The Host stopped, in whichever copy ran (loaded twice, the one oyster acts in
            // may be the copy launchd kept respawning beside it).
            pid: pid.or_else(|| {
                self.other_copies()
                    .find(|(_, i)| i.running())
                    .and_then(|(_, i)| i.pid())
            }),
        })
    }

    /// `stop`'s bootouts: every other copy, then this domain's; waited for (`bootout_in`) or
    /// only issued (`--no-wait`).
    fn boot_out_for_stop(&self, here: bool, pid: Option<u32>, wait: bool) -> anyhow::Result<()> {
        let bootout = |domain: Domain, pid: Option<u32>| -> anyhow::Result<()> {
            if wait {
                return self.bootout_in(domain, Action::Stop, pid);
            }
            let r = self
                .lc
                .bootout(domain, &self.run.stack.label)?
                .accept(crate::launchctl::BOOTOUT_GOES_ON)?;
            // A 5 is "not loaded" on newer macOS, a job already going away, or a stuck one:
            // `print` decides (issue 39 item 3); not waiting, a label still listed is said.
            let target = domain.target(&self.run.stack.label);
            if r.code == crate::launchctl::Code::InputOutput
                && self.lc.print_now(&target)?.is_some()
            {
                self.run
                    .out
                    .note(&VerbNote::StillListed { target }.to_string());
            }
            self.run.audit.record(
                Action::Stop,
                Step::Bootout,
                StepOutcome::Ok,
                pid,
                "not waited for",
            );
            Ok(())
        };
        for (domain, info) in self.other_copies() {
            bootout(*domain, info.pid())?;
        }
        if here {
            bootout(self.active(), pid)?;
        }
        Ok(())
    }

    /// `launchctl kill SIGTERM <target>`: the running Host only, never by name or group.
    /// KeepAlive makes launchd start it again (after the rest of ThrottleInterval when it ran
    /// less than that).
    ///
    /// `hint` spells a suggested command in the form the user typed (`hint("start")` is
    /// `oyster start` after `oyster kill`).
    pub fn kill(&mut self, hint: &dyn Fn(&str) -> String) -> anyhow::Result<KillOutcome> {
        let _guard = InterruptGuard::install();
        // Loaded twice (installed over SSH into user/<uid>, then a console login loaded the
        // plist into gui/<uid>): one copy serves the port, the other keeps being respawned
        // beside it, and which one runs at this instant is luck. Signalling "the" Host would
        // hit either; nothing is sent, and the fix is named (the same as status says).
        if let [(first, a), (second, b), ..] = self.copies() {
            let pid = |i: &crate::launchctl::PrintInfo| i.pid().filter(|_| i.running());
            return Err(Failed::from(KillRefusal::LoadedTwice {
                label: self.run.stack.label.clone(),
                first: (*first, pid(a)),
                second: (*second, pid(b)),
                restart: hint("restart"),
            })
            .into());
        }
        // In either domain: a copy only in user/<uid> is signalled where it is loaded.
        let Some((domain, info)) = self.job()? else {
            return Err(Failed::from(KillRefusal::NotLoaded {
                label: self.run.stack.label.clone(),
                start: hint("start"),
                status: hint("status"),
            })
            .into());
        };
        let Some(pid) = info.pid().filter(|_| info.running()) else {
            return Err(Failed::from(KillRefusal::NotRunning {
                label: self.run.stack.label.clone(),
                state: info.state().map(str::to_owned),
                logs: hint("logs"),
            })
            .into());
        };
        self.lc
            .kill_sigterm(domain, &self.run.stack.label)?
            .accept(&[])?;
        self.run
            .audit
            .record(Action::Kill, Step::Sigterm, StepOutcome::Ok, Some(pid), "");
        KillOutcome::watch(pid, &VerbNote::KeepAlive.to_string(), self.run.out)
    }
}
