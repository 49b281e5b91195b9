//! Loading a changed definition: enable, bootout (waiting until the label is gone, re-issued
//! while it answers 36), and bootstrap with bounded retries; a copy in the other domain is
//! booted out first.

use super::*;
use crate::launchctl::{Reply, BOOTOUT_GOES_ON};
use crate::service::said::{BootstrapRefused, Declined, RefusedBecause, Said};

impl Agent<'_> {
    /// enable, bootout (if loaded), wait for the label to go, bootstrap with bounded retries.
    /// Says once why a bootstrap is retried: a job still draining, or a label not loaded.
    fn say_retrying(&self, f: &crate::sys::process::Finished, loaded: bool) {
        let said = Said::BootstrapRetrying {
            code: f.code,
            said: f.stderr.lines().next().unwrap_or("").trim().to_owned(),
            draining: loaded,
            secs: match loaded {
                true => BOOTSTRAP_RETRY.as_secs(),
                false => NOT_LOADED_RETRY.as_secs(),
            },
        };
        self.run.out.progress(&said.to_string());
    }

    /// launchd refused the GUI domain for this session (over SSH: 125, or 134 when the
    /// session cannot load it): the user domain instead, said with what that means.
    fn fall_back_to_user_domain(&mut self, r: &launchctl::Reply) -> anyhow::Result<()> {
        let gui = self.active();
        let said = Said::FallingBack {
            gui: gui.to_string(),
            code: r.finished.code,
            said: r
                .finished
                .stderr
                .lines()
                .last()
                .unwrap_or("")
                .trim()
                .to_owned(),
            user: gui.other().to_string(),
        };
        self.run.out.progress(&said.to_string());
        self.run.out.note(&launchctl::user_domain_note(gui, r.code));
        self.active = gui.other();
        self.lc
            .enable(gui.other(), &self.run.stack.label)?
            .accept(&[])?;
        Ok(())
    }

    /// enable, bootout (if loaded), wait for the label to go, bootstrap with bounded retries.
    pub fn reload(&mut self, action: Action, loaded: bool) -> anyhow::Result<()> {
        self.lc
            .enable(self.active(), &self.run.stack.label)?
            .accept(&[])?;
        if loaded {
            self.bootout(action)?;
        }
        self.bootstrap(action)
    }

    /// bootstrap with bounded retries: a job still draining, a label not loaded (then the
    /// cause is looked for), the GUI domain refused for this session (the user domain then).
    pub(super) fn bootstrap(&mut self, action: Action) -> anyhow::Result<()> {
        let plist = self.run.stack.plist_path();
        let t0 = Instant::now();
        let mut said = false;
        // When `print` first showed the label not loaded after a 5/37: a refusal launchd
        // gives no reason for is retried for NOT_LOADED_RETRY only (a draining job, which
        // still shows as loaded, for BOOTSTRAP_RETRY).
        let mut not_loaded_since: Option<Instant> = None;
        let mut asked_login_items = false;
        loop {
            let r = self.lc.bootstrap(self.active(), &plist)?;
            let f = &r.finished;
            match r.code {
                Code::Ok => {
                    self.run
                        .audit
                        .record(action, Step::Bootstrap, StepOutcome::Ok, None, "");
                    return Ok(());
                }
                Code::InputOutput | Code::AlreadyRunning => {
                    let loaded = self.poll()?.is_some();
                    if loaded {
                        not_loaded_since = None;
                    } else {
                        not_loaded_since.get_or_insert_with(Instant::now);
                    }
                    // Switched off in Login Items: said at once, not after retries.
                    if !loaded && !asked_login_items && r.code == Code::InputOutput {
                        asked_login_items = true;
                        if let Some(cause) = crate::agent::refusal::login_item(self.lc, &plist) {
                            return Err(self.bootstrap_refused(
                                action,
                                &r,
                                r.code,
                                Some(cause),
                                t0,
                            ));
                        }
                    }
                    let retrying = match not_loaded_since {
                        None => t0.elapsed() < BOOTSTRAP_RETRY,
                        Some(since) => {
                            since.elapsed() < NOT_LOADED_RETRY && t0.elapsed() < BOOTSTRAP_RETRY
                        }
                    };
                    if !retrying {
                        return Err(self.bootstrap_refused(action, &r, r.code, None, t0));
                    }
                    if !said {
                        self.say_retrying(f, loaded);
                        said = true;
                    }
                    if let Err(sig) = signal::pause(Duration::from_millis(250)) {
                        return Err(crate::error::Interrupted(
                            sig,
                            "the job was not loaded again".into(),
                        )
                        .into());
                    }
                }
                // launchd refused the GUI domain for this session (over SSH: 125, or 134 when the
                // session cannot load it): once, the user domain instead, said with what that
                // means for the Host.
                Code::DomainUnsupported | Code::WrongSession
                    if matches!(self.active(), Domain::Gui(_)) =>
                {
                    self.fall_back_to_user_domain(&r)?;
                }
                code => return Err(self.bootstrap_refused(action, &r, code, None, t0)),
            }
        }
    }

    /// A bootstrap that answered 5 (or 37): why, in order — the label loaded from another
    /// plist, a bootout that never finished draining, the first cause that holds
    /// (`agent::refusal`, or `cause`, found already), or launchd's silence.
    fn refused_with_5(
        &self,
        stderr: &str,
        cause: Option<crate::agent::refusal::Cause>,
    ) -> RefusedBecause {
        let plist = self.run.stack.plist_path();
        let now = self.poll().ok().flatten();
        let loaded_elsewhere = now
            .as_ref()
            .is_some_and(|i| i.path().is_some_and(|p| p != plist.as_path()));
        // Still listed from this plist after the whole bound: a bootout that never
        // finished draining, not a refusal to look for causes of.
        if loaded_elsewhere {
            return RefusedBecause::LoadedElsewhere;
        }
        if now.is_some() {
            return RefusedBecause::StillDraining;
        }
        let cause = cause.or_else(|| {
            crate::agent::refusal::first_cause(
                self.lc,
                self.active(),
                &self.run.stack.label,
                &plist,
                &self.hints.agent("regenerate"),
            )
        });
        match cause {
            Some(c) => RefusedBecause::Cause {
                what: c.what,
                fix: c.fix,
            },
            // Issue 39 item 7: a hint a standard user can follow, launchctl's advice kept.
            None => RefusedBecause::NoReason {
                hint: crate::agent::refusal::no_reason_hint(
                    stderr,
                    self.active(),
                    &plist,
                    &self.hints.cmd("doctor"),
                    crate::sys::user::is_admin(),
                ),
            },
        }
    }

    /// The error for a bootstrap launchd kept refusing. For 5/37 with the label not loaded
    /// from another plist, the first cause the discriminators find (or `cause`, found
    /// already) is named with its fix (docs/launchd.md, "Exit codes"); "launchd refused it and
    /// gave no reason" only when none holds.
    fn bootstrap_refused(
        &self,
        action: Action,
        r: &Reply,
        code: Code,
        cause: Option<crate::agent::refusal::Cause>,
        t0: Instant,
    ) -> anyhow::Error {
        let target = self.target();
        let why = if code == Code::Disabled {
            "disabled".to_owned()
        } else {
            format!("exit {code}")
        };
        self.run
            .audit
            .record(action, Step::Bootstrap, StepOutcome::Failed, None, &why);
        if code == Code::Disabled {
            return crate::error::Failed::from(Declined::StillDisabled { target }).into();
        }
        let five = matches!(code, Code::InputOutput | Code::AlreadyRunning);
        let why = match five {
            true => self.refused_with_5(&r.finished.stderr, cause),
            false => RefusedBecause::Other {
                doctor: self.hints.cmd("doctor"),
            },
        };
        let refused = BootstrapRefused {
            domain: self.active().to_string(),
            plist: self.run.stack.plist_path(),
            code: code.to_string(),
            stderr: r.finished.stderr.clone(),
            retried_secs: (five && t0.elapsed() >= Duration::from_millis(500))
                .then(|| t0.elapsed().as_secs_f64()),
            why,
            target,
        };
        crate::error::Failed::from(Declined::Bootstrap(Box::new(refused))).into()
    }

    /// bootout, then poll `print` until the label is gone (113): bootout returns before the
    /// process has exited.
    pub fn bootout(&self, action: Action) -> anyhow::Result<()> {
        self.bootout_in(self.active(), action, None)
    }

    /// bootout in `domain`, waiting until the label is gone there. While bootout answers 36
    /// (operation now in progress) it is issued again on each poll, as Homebrew does, within
    /// the same bound; then `print` is polled (backing off) until it answers 113.
    /// `pid` is the instance it stops, for the audit log.
    ///
    /// Issue 39 item 3: a 5 is not an error by itself. Newer macOS answers 5 for a label that
    /// is not loaded (jdx/mise#10965) and a stuck job does too (nix-installer#1187), so a 5 is
    /// decided by `print`: gone is done; still loaded is re-issued like 36 within the bound,
    /// and the error at the bound carries launchctl's own words.
    pub fn bootout_in(
        &self,
        domain: Domain,
        action: Action,
        pid: Option<u32>,
    ) -> anyhow::Result<()> {
        let target = domain.target(&self.run.stack.label);
        let label = &self.run.stack.label;
        // 3: not loaded; 36: still in progress; 5: either, `print` decides.
        let mut r = self.lc.bootout(domain, label)?.accept(BOOTOUT_GOES_ON)?;
        self.run
            .audit
            .record(action, Step::Bootout, StepOutcome::Ok, pid, "");
        let t0 = Instant::now();
        let mut said = false;
        let mut pause = Backoff::new(PRINT_FIRST, PRINT_MAX);
        loop {
            let gone = if r.code == Code::InProgress {
                false
            } else {
                self.lc.print_now(&target)?.is_none()
            };
            if gone {
                return Ok(());
            }
            if t0.elapsed() > DRAIN_TIMEOUT {
                let answered = if r.code == Code::InputOutput {
                    format!(
                        " (`launchctl bootout {target}` answered 5: {})",
                        r.finished.stderr.trim()
                    )
                } else {
                    String::new()
                };
                anyhow::bail!(
                    "{target} was still loaded {} s after bootout{answered}",
                    DRAIN_TIMEOUT.as_secs()
                );
            }
            if !said && t0.elapsed() > SAY_WAIT_AFTER {
                self.run.out.waiting(
                    &format!("launchd to finish booting out {target}"),
                    DRAIN_TIMEOUT,
                );
                said = true;
            }
            // The bootout is issued and launchd finishes it by itself: a signal only stops
            // the wait (the caller decides what makes the state consistent).
            if let Err(sig) = signal::pause(pause.next()) {
                return Err(crate::error::Interrupted(
                    sig,
                    format!("{target} was booted out; launchd is still stopping it"),
                )
                .into());
            }
            if matches!(r.code, Code::InProgress | Code::InputOutput) {
                r = self.lc.bootout(domain, label)?.accept(BOOTOUT_GOES_ON)?;
            }
        }
    }

    /// One Host per user across domains: before loading into the domain oyster acts in, a copy
    /// loaded in the other one (installed over SSH into `user/<uid>`, say) is booted out, said
    /// aloud, so two Hosts never fight over one port. Says whether there was one.
    pub(super) fn boot_out_other_copies(&self, action: Action) -> anyhow::Result<bool> {
        let mut any = false;
        for (domain, info) in self.other_copies() {
            any = true;
            let said = crate::service::said::Said::OtherCopy {
                label: self.run.stack.label.clone(),
                other: domain.to_string(),
                pid: info.pid(),
                here: self.active().to_string(),
            };
            self.run.out.progress(&said.to_string());
            self.bootout_in(*domain, action, info.pid())?;
        }
        Ok(any)
    }
}
