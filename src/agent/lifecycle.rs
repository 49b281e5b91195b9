//! The LaunchAgent lifecycle (CONTRACT.md §5): load, reload or kickstart the job, then prove the
//! restarted Host runs with the generated environment, and roll back when it does not.
//!
//! `kickstart -k` never re-reads a plist, so any change to the definition — on disk, or a loaded
//! definition that no longer matches the generator — goes through enable, bootout, a wait until
//! the label is gone, and bootstrap.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::agent::launchctl::{Domain, LastExit, Launchctl, PrintInfo};
use crate::context::Context;
use crate::host::launchenv::LaunchEnv;
use crate::host::plan::Plan;
use crate::host::plist as agentplist;
use crate::host::stack::Stack;
use crate::output::audit::Audit;
use crate::verify::{self, EnvCheck};

/// How long oyster waits for a booted-out label to disappear.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(20);
/// How long bootstrap is retried while launchd reports 5/37 (loaded or still draining).
const BOOTSTRAP_RETRY: Duration = Duration::from_secs(20);

/// Verification timing.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// For the new instance to run and answer `/health`.
    pub wait: Duration,
    /// How long the pid must stay the same after `/health` said 200.
    pub settle: Duration,
}

/// The launchd side of one stack.
pub struct Agent<'a> {
    pub lc: Launchctl,
    pub domain: Domain,
    pub stack: &'a Stack,
    pub audit: Audit,
}

/// A verified Host.
#[derive(Debug, Clone)]
pub struct Verified {
    pub pid: u32,
    pub health_after: Duration,
}

impl<'a> Agent<'a> {
    /// Locates launchctl and the domain, saying aloud when it falls back to `user/<uid>`.
    pub fn new(ctx: &'a Context) -> anyhow::Result<Agent<'a>> {
        let stack = &ctx.stack;
        let lc = Launchctl::locate(&ctx.env)?;
        if lc.overridden || lc.timeout != Duration::from_secs(30) {
            crate::tell!("oyster: note: using launchctl {}", lc.describe());
        }
        let domain = lc.domain()?;
        if let Some(note) = &domain.fallback_note {
            crate::tell!("oyster: note: {note}");
        }
        Ok(Agent {
            lc,
            domain,
            audit: Audit::new(stack.audit_path(), &stack.name, &stack.label),
            stack,
        })
    }

    pub fn target(&self) -> String {
        self.domain.target(&self.stack.label)
    }

    pub fn print(&self) -> anyhow::Result<Option<PrintInfo>> {
        self.lc.print(&self.target())
    }

    /// Whether the loaded job runs the definition the plan generates (the stale-definition trap:
    /// a plist edited or replaced behind oyster's back).
    pub fn loaded_matches(&self, info: &PrintInfo, plan: &Plan) -> bool {
        let plist = self.stack.plist_path();
        let mut expected: BTreeMap<String, String> = plan.env.vars.clone();
        expected.insert("XPC_SERVICE_NAME".into(), self.stack.label.clone());
        info.path() == Some(plist.as_path())
            && info.get("program") == plan.node.path.to_str()
            && info.environment == expected
    }

    /// Writes the plist and makes launchd run it; verifies; rolls back on failure.
    ///
    /// `force_restart` restarts an unchanged, loaded job with `kickstart -k`.
    pub fn apply(
        &self,
        plan: &Plan,
        action: &str,
        force_restart: bool,
        timing: Timing,
    ) -> anyhow::Result<Outcome> {
        let plist = self.stack.plist_path();
        let before = self.print()?;
        let old_pid = before.as_ref().and_then(PrintInfo::pid);
        let previous = plan.installed.as_ref().map(|i| i.bytes.clone());
        let stale = before
            .as_ref()
            .is_some_and(|b| !self.loaded_matches(b, plan));
        let wrote = agentplist::write(&plist, &plan.plist, &self.stack.log_dir)?;
        self.audit.record(
            action,
            "write-plist",
            if wrote { "written" } else { "unchanged" },
            None,
            "",
        );
        let reload = wrote || stale || before.is_none();
        if !reload && !force_restart {
            let v = self.verify(&plan.env, plan.port, None, timing);
            return self.finish(action, v).map(|v| Outcome {
                verified: v,
                reloaded: false,
                was_loaded: true,
            });
        }
        if reload {
            if stale && !wrote {
                crate::tell!("The loaded job does not match the plist oyster generates (edited behind oyster's back?); reloading it.");
            }
            self.reload(action, before.is_some())?;
        } else {
            crate::tell!("Restarting {} with kickstart -k…", self.target());
            self.lc.ok(&["kickstart", "-k", &self.target()])?;
            self.audit.record(action, "kickstart", "ok", None, "");
        }
        match self.verify(&plan.env, plan.port, old_pid, timing) {
            Ok(v) => {
                self.audit.record(action, "verify", "ok", Some(v.pid), "");
                Ok(Outcome {
                    verified: v,
                    reloaded: reload,
                    was_loaded: before.is_some(),
                })
            }
            Err(failure) if reload => Err(self.roll_back(action, previous, failure, timing)),
            Err(failure) => {
                self.audit
                    .record(action, "verify", "failed", None, &failure);
                Err(anyhow::anyhow!(self.failure_message(&failure)))
            }
        }
    }

    fn finish(&self, action: &str, v: Result<Verified, String>) -> anyhow::Result<Verified> {
        match v {
            Ok(v) => {
                self.audit.record(action, "verify", "ok", Some(v.pid), "");
                Ok(v)
            }
            Err(f) => {
                self.audit.record(action, "verify", "failed", None, &f);
                Err(anyhow::anyhow!(self.failure_message(&f)))
            }
        }
    }

    /// enable, bootout (if loaded), wait for the label to go, bootstrap with bounded retries.
    pub fn reload(&self, action: &str, loaded: bool) -> anyhow::Result<()> {
        let target = self.target();
        self.lc.ok(&["enable", &target])?;
        if loaded {
            self.bootout(action)?;
        }
        let plist = self.stack.plist_path();
        let plist_s = plist.to_string_lossy();
        let t0 = Instant::now();
        loop {
            let f = self.lc.call(&["bootstrap", &self.domain.name, &plist_s])?;
            match f.code {
                0 => {
                    self.audit.record(action, "bootstrap", "ok", None, "");
                    return Ok(());
                }
                5 | 37 if t0.elapsed() < BOOTSTRAP_RETRY => {
                    let loaded = self.print()?.is_some();
                    crate::tell!(
                        "launchctl bootstrap exited {} ({}); {}, retrying…",
                        f.code,
                        f.stderr.lines().next().unwrap_or("").trim(),
                        if loaded {
                            "the old job is still draining"
                        } else {
                            "launchd is busy"
                        }
                    );
                    std::thread::sleep(Duration::from_millis(250));
                }
                119 => {
                    self.audit
                        .record(action, "bootstrap", "failed", None, "disabled");
                    anyhow::bail!(
                        "launchd says {target} is disabled (bootstrap exit 119) even after `launchctl enable`; \
                         run `launchctl enable {target}` yourself and try again"
                    );
                }
                code => {
                    self.audit
                        .record(action, "bootstrap", "failed", None, &format!("exit {code}"));
                    anyhow::bail!(
                        "`launchctl bootstrap {} {}` exited {code}: {}{}",
                        self.domain.name,
                        plist.display(),
                        f.stderr.trim(),
                        if code == 5 || code == 37 {
                            " (still failing after 20 s of retries; is the label loaded from another plist?)"
                        } else {
                            ""
                        }
                    );
                }
            }
        }
    }

    /// bootout, then poll `print` until the label is gone (113): bootout returns before the
    /// process has exited.
    pub fn bootout(&self, action: &str) -> anyhow::Result<()> {
        let target = self.target();
        let f = self.lc.call(&["bootout", &target])?;
        if f.code != 0 && f.code != 3 {
            anyhow::bail!(
                "`launchctl bootout {target}` exited {}: {}",
                f.code,
                f.stderr.trim()
            );
        }
        self.audit.record(action, "bootout", "ok", None, "");
        let t0 = Instant::now();
        let mut said = false;
        while self.print()?.is_some() {
            if t0.elapsed() > DRAIN_TIMEOUT {
                anyhow::bail!(
                    "{target} was still loaded {} s after bootout",
                    DRAIN_TIMEOUT.as_secs()
                );
            }
            if !said && t0.elapsed() > Duration::from_millis(300) {
                crate::output::printer().waiting(
                    &format!("launchd to finish booting out {target}"),
                    DRAIN_TIMEOUT,
                );
                said = true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// §5: `print` shows a running instance with a new pid from our plist; the live environment
    /// matches; `/health` answers 200; the pid survives a settle period.
    pub fn verify(
        &self,
        env: &LaunchEnv,
        port: u16,
        old_pid: Option<u32>,
        timing: Timing,
    ) -> Result<Verified, String> {
        let t0 = Instant::now();
        let plist = self.stack.plist_path();
        let mut said = false;
        crate::output::printer().waiting(
            &format!("the Host to start and answer /health on 127.0.0.1:{port}"),
            timing.wait,
        );
        let (pid, info) = loop {
            let info = self
                .print()
                .map_err(|e| format!("{e:#}"))?
                .ok_or("the job is not loaded")?;
            match info.pid() {
                Some(pid) if info.running() && Some(pid) != old_pid => break (pid, info),
                _ => {}
            }
            let state = info.state().unwrap_or("unknown");
            let exited = info.last_exit().is_some_and(|e| e != LastExit::Never);
            if state == "spawn scheduled" || (state == "not running" && exited) {
                return Err(format!(
                    "the Host is not running (state = {state}, last exit code = {})",
                    info.last_exit().map_or("unknown".into(), |e| e.to_string())
                ));
            }
            if t0.elapsed() > timing.wait {
                return Err(format!(
                    "no new running instance within {:?} (state = {state})",
                    timing.wait
                ));
            }
            if !said && t0.elapsed() > Duration::from_millis(500) {
                crate::tell!("Waiting for launchd to start the Host…");
                said = true;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if info.path() != Some(plist.as_path()) {
            return Err(format!(
                "launchd runs the job from {}, not {}",
                info.path()
                    .map_or("(no path)".into(), |p| p.display().to_string()),
                plist.display()
            ));
        }
        let remaining = timing
            .wait
            .saturating_sub(t0.elapsed())
            .max(Duration::from_secs(1));
        verify::wait_healthy(port, remaining, || verify::inspect(pid).is_some())
            .map_err(|f| format!("{f} on 127.0.0.1:{port}"))?;
        let health_after = t0.elapsed();
        let live = verify::inspect(pid).ok_or("the Host exited right after answering /health")?;
        match verify::check_env(&live, env) {
            EnvCheck::Verified => {}
            other => return Err(other.describe()),
        }
        crate::output::printer().waiting(
            &format!("pid {pid} to stay up (a crash loop would not)"),
            timing.settle,
        );
        std::thread::sleep(timing.settle);
        match self.print().map_err(|e| format!("{e:#}"))? {
            Some(after) if after.pid() == Some(pid) && after.running() => Ok(Verified { pid, health_after }),
            Some(after) => Err(format!(
                "the Host did not stay up: pid {pid} became {} within {:?} of answering /health (a crash loop?)",
                after.pid().map_or("none".into(), |p| p.to_string()),
                timing.settle
            )),
            None => Err("the job was unloaded during verification".into()),
        }
    }

    /// Restores the previous plist (or removes ours when there was none), reloads and verifies
    /// it, and returns the error describing what failed.
    fn roll_back(
        &self,
        action: &str,
        previous: Option<Vec<u8>>,
        failure: String,
        timing: Timing,
    ) -> anyhow::Error {
        self.audit
            .record(action, "verify", "failed", None, &failure);
        let last_exit = self
            .print()
            .ok()
            .flatten()
            .and_then(|i| i.last_exit().map(|e| e.to_string()))
            .unwrap_or_else(|| "unknown".into());
        let plist = self.stack.plist_path();
        crate::tell!("Verification failed: {failure}. Rolling back…");
        let restored = (|| -> anyhow::Result<String> {
            self.bootout(action)?;
            match &previous {
                Some(bytes) => {
                    agentplist::write(&plist, bytes, &self.stack.log_dir)?;
                    self.reload(action, false)?;
                    let old_env = agentplist::read_env(bytes).unwrap_or_default();
                    let port = old_env.port().unwrap_or(0);
                    match self.verify(&old_env, port, None, timing) {
                        Ok(v) => Ok(format!("restored the previous plist; the previous Host runs again (pid {})", v.pid)),
                        Err(e) => Ok(format!("restored and reloaded the previous plist, but it did not verify either: {e}")),
                    }
                }
                None => {
                    std::fs::remove_file(&plist)?;
                    Ok(
                        "there was no previous plist; the new one was booted out and removed"
                            .into(),
                    )
                }
            }
        })();
        let rollback = match restored {
            Ok(s) => s,
            Err(e) => format!("rollback failed too: {e:#}"),
        };
        self.audit
            .record(action, "rollback", "done", None, &rollback);
        anyhow::anyhow!(
            "{}\nlast exit code: {last_exit}\nrollback: {rollback}",
            self.failure_message(&failure)
        )
    }

    fn failure_message(&self, failure: &str) -> String {
        let log = self.stack.log_path();
        format!(
            "the Host did not verify: {failure}\n--- last lines of {} ---\n{}",
            log.display(),
            verify::log_tail(&log, 16 * 1024).trim_end()
        )
    }

    /// Boots the job out (waiting until it is gone) and removes the plist; keeps config, history
    /// and logs.
    pub fn uninstall(&self) -> anyhow::Result<bool> {
        let loaded = self.print()?.is_some();
        if loaded {
            self.bootout("uninstall")?;
        }
        let plist = self.stack.plist_path();
        match std::fs::remove_file(&plist) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => anyhow::bail!("could not remove {}: {e}", plist.display()),
        }
        self.audit
            .record("uninstall", "remove-plist", "ok", None, "");
        Ok(loaded)
    }
}

/// What `apply` did.
pub struct Outcome {
    pub verified: Verified,
    pub reloaded: bool,
    pub was_loaded: bool,
}
