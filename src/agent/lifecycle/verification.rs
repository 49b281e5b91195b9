//! Proving the new instance: launchd runs a new pid from our plist, `/health` answers from that
//! pid's socket, the environment is proven, and after the settle the same pid runs and launchd
//! has not spawned the job again. Crash evidence counts only this instance.

use super::*;
use crate::service::said::Failure;
use std::path::Path;

/// What was true before this run's change: crash evidence counts only what came after it.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    /// The instance being replaced (a new one must have another pid).
    pub(super) old_pid: Option<u32>,
    /// The job's `runs` before the new instance.
    pub(super) runs: Option<u32>,
    /// The job's last exit before the change: seen again, it is the old instance's, not ours.
    pub(super) last_exit: Option<LastExit>,
    /// Signals oyster itself sent to the old instance (its death by them is no crash).
    pub(super) sent: Vec<i32>,
    /// The new instance, when the restart already saw it in a `print`.
    pub(super) started: Option<(u32, PrintInfo)>,
}

impl Baseline {
    /// Measured from the job as it is (nothing replaced).
    pub(super) fn of(info: Option<&PrintInfo>) -> Baseline {
        Baseline {
            runs: info.and_then(PrintInfo::runs),
            last_exit: info.and_then(PrintInfo::last_exit),
            ..Baseline::default()
        }
    }

    /// Whether `info` shows this instance crashed: launchd spawned since the baseline, the job
    /// is not running, and an exit that is not the old instance's (nor a signal oyster sent)
    /// or a crash count says so.
    pub(super) fn crashed(&self, info: &PrintInfo) -> bool {
        let ours = info.runs().unwrap_or(0) > self.runs.unwrap_or(0);
        let exit_is_evidence = info.last_exit().is_some_and(|e| {
            e.failed()
                && Some(e) != self.last_exit
                && !e.signal().is_some_and(|s| self.sent.contains(&s))
        });
        ours && info.job_state() != JobState::Running
            && (exit_is_evidence || info.successive_crashes().is_some_and(|n| n > 0))
    }
}

impl Agent<'_> {
    /// `print` shows a running instance with a new pid from our plist; `/health` answers 200
    /// from a socket that pid owns; the environment is proven; after a settle period the same
    /// pid still runs and launchd has not spawned the job again (`runs` unchanged).
    pub(super) fn verify(
        &self,
        env: &LaunchEnv,
        port: u16,
        mut baseline: Baseline,
        timing: Timing,
    ) -> Result<Verified, Stop> {
        let t0 = Instant::now();
        let plist = self.run.stack.plist_path();
        self.run.out.waiting(
            &format!("the Host to answer /health on 127.0.0.1:{port}"),
            timing.wait,
        );
        let (pid, info) = match baseline.started.take() {
            Some(seen) => seen,
            None => self.wait_for_new_instance(&baseline, t0, timing)?,
        };
        if info.path() != Some(plist.as_path()) {
            return Err(Failure::WrongPath {
                running: info.path().map(Path::to_path_buf),
                plist,
            }
            .into());
        }
        let remaining = timing
            .wait
            .saturating_sub(t0.elapsed())
            .max(Duration::from_secs(1));
        crate::service::run::wait_for_health(pid, port, Instant::now() + remaining)?;
        let health_after = t0.elapsed();
        verify::check_listener(port, pid).map_err(Stop::from)?;
        let env_proof = self.prove_env(pid, &info, env)?;
        self.run.out.waiting(
            &format!("pid {pid} to stay up (a crash loop would not)"),
            timing.settle,
        );
        sleep_interruptible(timing.settle)?;
        self.check_settled(pid, &info, timing)?;
        Ok(Verified {
            pid,
            health_after,
            env_proof,
        })
    }

    /// Polls `print` (backing off) until a new instance runs; fails early on crash evidence
    /// from this instance (`spawn scheduled` alone is not: a first launch shows it too).
    pub(super) fn wait_for_new_instance(
        &self,
        baseline: &Baseline,
        t0: Instant,
        timing: Timing,
    ) -> Result<(u32, PrintInfo), Stop> {
        let mut pause = Backoff::new(PRINT_FIRST, PRINT_MAX);
        loop {
            check_interrupt()?;
            let info = self
                .poll()
                .map_err(stop_from)?
                .ok_or("the job is not loaded")?;
            // A pid in `xpcproxy`/`spawning` is launchd's new instance on its way to exec: the
            // cheap `/health` poll takes it from there (the settle's `print` sees it running).
            let starting = info.running() || info.job_state() == JobState::Spawning;
            match info.pid() {
                Some(pid) if starting && Some(pid) != baseline.old_pid => return Ok((pid, info)),
                _ => {}
            }
            if baseline.crashed(&info) {
                let state = format!(
                    "state = {}, last exit: {}",
                    info.job_state(),
                    info.last_exit().map_or("unknown".into(), |e| e.to_string())
                );
                return Err(Failure::NotRunning { state }.into());
            }
            if t0.elapsed() > timing.wait {
                return Err(Failure::NoNewInstance {
                    secs: timing.wait.as_secs(),
                    state: info.job_state().to_string(),
                }
                .into());
            }
            sleep_interruptible(pause.next())?;
        }
    }

    /// After the settle: the same pid runs, and launchd has not spawned the job again since
    /// it was first seen (a Host that died and came back within the settle has a new pid, or
    /// at least a higher `runs`).
    pub(super) fn check_settled(
        &self,
        pid: u32,
        first: &PrintInfo,
        timing: Timing,
    ) -> Result<(), Stop> {
        let after = self
            .poll()
            .map_err(stop_from)?
            .ok_or("the job was unloaded during verification")?;
        let respawned = matches!((first.runs(), after.runs()), (Some(a), Some(b)) if b > a);
        if after.pid() == Some(pid) && after.running() && !respawned {
            return Ok(());
        }
        Err(Failure::DidNotStayUp {
            pid,
            became: after.pid(),
            settle_ms: timing.settle.as_millis(),
            respawned: respawned.then(|| after.runs().unwrap_or(0) - first.runs().unwrap_or(0)),
        }
        .into())
    }

    pub(super) fn prove_env(
        &self,
        pid: u32,
        info: &PrintInfo,
        env: &LaunchEnv,
    ) -> Result<EnvProof, Stop> {
        // The one Host probe status, list, doctor and host status use decides the proof.
        let record = ExecRecord::read(&self.run.stack.exec_record_path());
        crate::probe::prove_env(&crate::probe::Target {
            pid,
            port: 0,
            env,
            exec_record: record.as_ref(),
            launchd: Some(crate::probe::LaunchdView {
                pid: info.pid(),
                environment: &info.environment,
            }),
            floor: self.run.proof_floor,
            live: None,
        })
        .map_err(Stop::from)
    }
}

/// Whether launchd's loaded environment holds exactly the generated variables (keys launchd
/// adds itself, such as `XPC_SERVICE_NAME`, are ignored).
pub(super) fn generated_keys_match(info: &PrintInfo, env: &LaunchEnv) -> bool {
    env.vars
        .iter()
        .all(|(k, v)| info.environment.get(k) == Some(v))
}
