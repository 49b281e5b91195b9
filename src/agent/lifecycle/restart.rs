//! The graceful restart of an unchanged job: SIGTERM through launchd, the kernel's word that
//! the old pid is gone, launchd's that it saw the exit, then `kickstart -p`.

use super::*;

impl Agent<'_> {
    /// Restarts an unchanged, loaded job: SIGTERM through launchd, a wait of up to its exit
    /// timeout for the old pid to go, then a `kickstart` that is never taken as success unless
    /// a new pid runs ([`Agent::kickstart_after_exit`]). Only an old pid that outlives the wait
    /// gets `kickstart -k` (SIGKILL), said aloud. Returns what crash evidence is measured from.
    pub(super) fn restart_gracefully(
        &self,
        action: Action,
        before: Option<&PrintInfo>,
    ) -> anyhow::Result<Baseline> {
        let target = self.target();
        let mut baseline = Baseline::of(before);
        let Some(pid) = before.and_then(PrintInfo::pid) else {
            baseline.started = self.kickstart_after_exit(None, before)?;
            self.run
                .audit
                .record(action, Step::Kickstart, StepOutcome::Ok, None, "");
            return Ok(baseline);
        };
        baseline.old_pid = Some(pid);
        let grace = Duration::from_secs(before.and_then(PrintInfo::exit_timeout).unwrap_or(5));
        let said = crate::service::said::Said::Restarting {
            target: target.clone(),
            pid,
            grace_secs: grace.as_secs(),
        };
        self.run.out.progress(&said.to_string());
        // 3: loaded, but the process is already gone.
        self.lc
            .kill_sigterm(self.active(), &self.run.stack.label)?
            .accept(&[Code::NoSuchProcess])?;
        self.run
            .audit
            .record(action, Step::Sigterm, StepOutcome::Ok, Some(pid), "");
        baseline.sent.push(Signal::SIGTERM as i32);
        // The kernel says when the pid is gone (cheap, polled often); launchd is asked after.
        let t0 = Instant::now();
        while verify::inspect(pid).is_some() && t0.elapsed() < grace {
            std::thread::sleep(HEALTH_EVERY);
        }
        if verify::inspect(pid).is_some() {
            let said = crate::service::said::Said::Outlived {
                pid,
                grace_secs: grace.as_secs(),
            };
            self.run.out.progress(&said.to_string());
            self.lc
                .kickstart(self.active(), &self.run.stack.label, true)?
                .accept(&[])?;
            baseline.sent.push(Signal::SIGKILL as i32);
            self.run.audit.record(
                action,
                Step::KickstartK,
                StepOutcome::Ok,
                Some(pid),
                "SIGTERM was not enough",
            );
            return Ok(baseline);
        }
        baseline.started = self.kickstart_after_exit(Some(pid), before)?;
        self.run.audit.record(
            action,
            Step::Kickstart,
            StepOutcome::Ok,
            baseline.started.as_ref().map(|s| s.0),
            "after SIGTERM",
        );
        Ok(baseline)
    }

    /// `kickstart` once launchd has seen the old instance's exit. The kernel reports a pid gone
    /// before launchd has processed its exit: a `kickstart` in between answers 37 (running)
    /// and does nothing, and launchd then respawns a job younger than its ThrottleInterval only
    /// 10 s later. So: wait (a few `print`s, backing off) until launchd no longer shows the old
    /// pid running, then `kickstart`; a 37 is success only when `print` shows a new running pid
    /// (KeepAlive was first); otherwise it is retried, within [`EXIT_NOTICE_BOUND`]. Returns
    /// the new instance when a `print` showed it (verification then needs no second look).
    pub(super) fn kickstart_after_exit(
        &self,
        old: Option<u32>,
        before: Option<&PrintInfo>,
    ) -> anyhow::Result<Option<(u32, PrintInfo)>> {
        let t0 = Instant::now();
        let mut pause = Backoff::new(Duration::from_millis(100), Duration::from_millis(400));
        let mut info = None;
        loop {
            if let Some(i) = &info {
                let i: &PrintInfo = i;
                match i.pid().filter(|_| i.running()) {
                    Some(p) if Some(p) != old => return Ok(Some((p, i.clone()))),
                    // launchd still counts the old instance as running: not yet.
                    Some(_) => {}
                    None => {
                        let r = self
                            .lc
                            .kickstart(self.active(), &self.run.stack.label, false)?;
                        match r.code {
                            Code::Ok => return Ok(spawned(before, r.spawned_pid())),
                            Code::AlreadyRunning => {}
                            _ => return Err(r.error().into()),
                        }
                    }
                }
            }
            if t0.elapsed() > EXIT_NOTICE_BOUND {
                return Err(crate::error::Failed::from(
                    crate::service::said::Declined::NoNewInstance {
                        target: self.target(),
                        secs: EXIT_NOTICE_BOUND.as_secs(),
                    },
                )
                .into());
            }
            // Also before the first look: launchd learns of an exit after the kernel (a
            // `print` at once would almost always show the old pid still running).
            std::thread::sleep(pause.next());
            info = Some(self.poll()?.ok_or_else(|| {
                anyhow::anyhow!("{} was unloaded during the restart", self.target())
            })?);
        }
    }
}

/// The new instance as launchd described it: `kickstart -p`'s pid in the definition that was
/// loaded before (a restart only kickstarts a job whose loaded definition matched the plan, and
/// kickstart never re-reads a plist), with one more run. `None` without a pid or a definition:
/// verification then asks `print`.
pub(super) fn spawned(before: Option<&PrintInfo>, pid: Option<u32>) -> Option<(u32, PrintInfo)> {
    let (before, pid) = (before?, pid?);
    let mut info = before.clone();
    info.fields.insert("pid".into(), pid.to_string());
    info.fields.insert("state".into(), "running".into());
    if let Some(runs) = before.runs() {
        info.fields.insert("runs".into(), (runs + 1).to_string());
    }
    Some((pid, info))
}
