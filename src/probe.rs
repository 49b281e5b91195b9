//! The probe of a live Host: does the pid answer `/health` on its port, is the listening socket
//! its own, and does it run with the generated environment? One function ([`probe`]) returning
//! one typed result ([`Probe`]), used by `status`, `list`, `doctor` and `host status`, and
//! meant for the lifecycle's verification too (it needs only facts, never launchctl itself).
//!
//! It reads only (one `GET /health`, the kernel's process table, the socket table) and prints
//! nothing: the caller decides what to say.
//!
//! The environment is proven the strongest way available, as the verification does: the live
//! environment when the kernel shows it; else the record `oyster host exec` wrote as that same
//! process (same pid and start time) just before its exec; else, for a Host launchd runs,
//! launchd's loaded definition when the pid is the one launchd spawned for it.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::host::identity::ExecRecord;
use crate::host::launchenv::LaunchEnv;
use crate::verify::{self, EnvCheck, EnvProof, LiveProcess, ProofFloor};

/// How long one `/health` of a probe may take: a Host that needs longer is not answering.
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);

/// What launchd says about the job running the Host (from `launchctl print`), when it does.
#[derive(Debug, Clone, Copy)]
pub struct LaunchdView<'a> {
    /// The pid launchd spawned (`pid = N`), if any.
    pub pid: Option<u32>,
    /// The loaded definition's `environment` block.
    pub environment: &'a BTreeMap<String, String>,
}

/// The Host to probe, and what it should be.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub pid: u32,
    pub port: u16,
    /// The environment oyster generates for it.
    pub env: &'a LaunchEnv,
    /// The record `oyster host exec` wrote (`<run dir>/oyster-exec.json`), if readable.
    pub exec_record: Option<&'a ExecRecord>,
    /// launchd's view, for a Host launchd runs (`None` for one `oyster host start` ran).
    pub launchd: Option<LaunchdView<'a>>,
    /// Which proofs may be used (`OYSTER_ENV_PROOF`, parsed once in the context).
    pub floor: ProofFloor,
    /// The process as the caller already read it (the pid file's identity check does), so
    /// the probe need not read the process table again; `None` reads it.
    pub live: Option<&'a LiveProcess>,
}

/// What a probe found. Each fact is kept apart, so status can print each and doctor can name
/// the one that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The HTTP status of `GET /health`, or `None` when nothing answered.
    pub health: Option<u16>,
    /// Whether the socket listening on the port belongs to the pid (or a descendant).
    pub listener: Result<(), String>,
    /// The environment proof used, or why none holds.
    pub env: Result<EnvProof, String>,
    /// Generated variables the live environment does not hold as generated (empty when the
    /// kernel hides it or it matches).
    pub env_mismatch: Vec<String>,
    /// Declared variables (`oyster env`) the Host does not hold as declared now: it started
    /// before they changed (stale until a restart). Names only; empty when it cannot be told.
    pub declared_stale: Vec<String>,
}

impl Probe {
    /// Verified: `/health` 200 from the Host's own socket, and the environment proven.
    pub fn verified(&self) -> bool {
        self.health == Some(200) && self.listener.is_ok() && self.env.is_ok()
    }

    /// The proof used, when there is one.
    pub fn env_proof(&self) -> Option<EnvProof> {
        self.env.as_ref().ok().copied()
    }

    /// The first thing that did not verify, in words (`None` when verified).
    pub fn problem(&self) -> Option<String> {
        if let Err(e) = &self.env {
            return Some(e.clone());
        }
        if let Err(e) = &self.listener {
            return Some(e.clone());
        }
        match self.health {
            Some(200) => None,
            Some(code) => Some(format!("/health answered {code}, not 200")),
            None => Some("/health did not answer".to_owned()),
        }
    }
}

/// A Host no launchd job runs (the systemd unit's, a directly started one), probed against
/// `env` with the exec record `host exec` wrote for the stack: the one way status, list,
/// doctor and host status probe it.
pub fn without_launchd(
    stack: &crate::host::stack::Stack,
    (pid, port): (u32, u16),
    env: &LaunchEnv,
    floor: ProofFloor,
    live: Option<&LiveProcess>,
) -> Probe {
    let record = ExecRecord::read(&stack.exec_record_path());
    probe(&Target {
        pid,
        port,
        env,
        exec_record: record.as_ref(),
        launchd: None,
        floor,
        live,
    })
}

/// Probes a live Host (see the module documentation). Reads only.
pub fn probe(t: &Target<'_>) -> Probe {
    let health = verify::health(t.port, HEALTH_TIMEOUT);
    let listener = verify::check_listener(t.port, t.pid);
    let (env, declared_stale) = prove_with_drift(t);
    let inspected = match t.live {
        Some(_) => None,
        None => verify::inspect(t.pid),
    };
    let live = t.live.or(inspected.as_ref());
    let env_mismatch = match live.map(|live| verify::check_env(live, t.env)) {
        Some(EnvCheck::Mismatch(d)) => d.into_iter().map(|(k, _, _)| k).collect(),
        _ => vec![],
    };
    Probe {
        health,
        listener,
        env,
        env_mismatch,
        declared_stale,
    }
}

/// The environment proof for the target, strongest first; a mismatch in the one used is an
/// error naming the variables, and so is having none, and so is a declared variable the Host
/// does not hold as declared now (what a start or restart verifies).
pub fn prove_env(t: &Target<'_>) -> Result<EnvProof, String> {
    let (proof, drift) = prove_with_drift(t);
    let proof = proof?;
    if drift.is_empty() {
        Ok(proof)
    } else {
        Err(verify::declared_problem(&drift))
    }
}

/// The generated variables' proof, strongest first, and apart from it the declared variables
/// the Host does not hold as declared now (launchd's definition never holds them: the weakest
/// proof cannot tell, and says none).
fn prove_with_drift(t: &Target<'_>) -> (Result<EnvProof, String>, Vec<String>) {
    let parts = match verify::prove_parts(t.pid, t.env, t.exec_record, t.floor) {
        Ok(p) => p,
        Err(e) => return (Err(e), vec![]),
    };
    let drift = parts.declared_drift.unwrap_or_default();
    if let Some(proof) = parts.proof {
        return (Ok(proof), drift);
    }
    let Some(launchd) = t.launchd else {
        return (Err(Unproven::NoRecord.to_string()), drift);
    };
    (prove_by_launchd(t.pid, t.env, launchd), drift)
}

/// Why the Host's environment is not proven. Words: `commands/words/verify.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unproven {
    /// The kernel hides it and `oyster host exec` left no record.
    NoRecord,
    /// The kernel hides it, and launchd does not name `pid` as the job's.
    NotLaunchdsPid { pid: u32 },
    /// The kernel hides it, and launchd's loaded definition differs in these variables.
    LaunchdDiffers { diffs: Vec<String> },
}

/// The weakest proof: launchd's loaded definition, for the pid launchd spawned.
fn prove_by_launchd(
    pid: u32,
    env: &LaunchEnv,
    launchd: LaunchdView<'_>,
) -> Result<EnvProof, String> {
    if launchd.pid != Some(pid) {
        return Err(Unproven::NotLaunchdsPid { pid }.to_string());
    }
    let diffs = verify::differing(env, |k| launchd.environment.get(k).cloned());
    if diffs.is_empty() {
        Ok(EnvProof::Launchd)
    } else {
        Err(Unproven::LaunchdDiffers { diffs }.to_string())
    }
}

/// A process listening on a port that is not the Host oyster expects there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortHolder {
    pub pid: u32,
    /// Its command name.
    pub name: String,
    /// The oyster stack it runs for, when its environment says so.
    pub stack: Option<String>,
}

/// Who, other than `current` (this stack's running Host, or a descendant of it), listens on
/// `port`. `Ok(None)` when nobody does; `Err` when the socket table cannot be read. `current`
/// is asked only when someone listens (finding it may take launchctl calls), and the socket
/// table (every process's descriptors) is read only when the port cannot be bound: a free
/// port costs two binds, not a walk of the process table.
pub fn foreign_listener(
    port: u16,
    current: impl FnOnce() -> Vec<u32>,
) -> Result<Option<PortHolder>, String> {
    if crate::sys::net::port_bindable(port) {
        return Ok(None);
    }
    let holders = crate::sys::net::listeners_on(port)?;
    if holders.is_empty() {
        return Ok(None);
    }
    let current = current();
    let Some(h) = holders.iter().find(|h| {
        !current
            .iter()
            .any(|&c| crate::sys::net::descends_from(h.pid, c))
    }) else {
        return Ok(None);
    };
    let stack = verify::inspect(h.pid).and_then(|p| {
        p.var("OYSTERUN_ROUTEC_STACK_NAME")
            .or_else(|| p.var("OYSTERUN_CONFIG_DIR"))
    });
    Ok(Some(PortHolder {
        pid: h.pid,
        name: h.name.clone(),
        stack,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> LaunchEnv {
        LaunchEnv {
            vars: pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            declared: BTreeMap::new(),
        }
    }

    #[test]
    fn launchd_proves_only_its_own_pid_with_the_generated_variables() {
        let want = env(&[("OYSTERUN_PORT", "8802")]);
        let mut loaded = BTreeMap::new();
        loaded.insert("OYSTERUN_PORT".to_owned(), "8802".to_owned());
        loaded.insert("XPC_SERVICE_NAME".to_owned(), "x".to_owned());
        let view = |pid| LaunchdView {
            pid,
            environment: &loaded,
        };
        assert_eq!(
            prove_by_launchd(7, &want, view(Some(7))),
            Ok(EnvProof::Launchd)
        );
        let other = prove_by_launchd(7, &want, view(Some(8))).unwrap_err();
        assert!(other.contains("does not name it"), "{other}");
        let differs = prove_by_launchd(7, &env(&[("OYSTERUN_PORT", "9")]), view(Some(7)));
        assert!(differs.unwrap_err().ends_with("in: OYSTERUN_PORT"));
    }

    #[test]
    fn a_probe_is_verified_only_when_every_fact_holds_and_names_the_first_that_does_not() {
        let ok = Probe {
            health: Some(200),
            listener: Ok(()),
            env: Ok(EnvProof::Live),
            env_mismatch: vec![],
            declared_stale: vec![],
        };
        assert!(ok.verified());
        assert_eq!(ok.problem(), None);
        let sick = Probe {
            health: Some(503),
            ..ok.clone()
        };
        assert!(!sick.verified());
        assert_eq!(
            sick.problem().as_deref(),
            Some("/health answered 503, not 200")
        );
        let foreign = Probe {
            listener: Err("answered by pid 9".into()),
            ..ok.clone()
        };
        assert_eq!(foreign.problem().as_deref(), Some("answered by pid 9"));
        let unproven = Probe {
            env: Err("differs in: PATH".into()),
            health: None,
            ..ok
        };
        assert_eq!(unproven.env_proof(), None);
        assert_eq!(unproven.problem().as_deref(), Some("differs in: PATH"));
    }

    #[test]
    fn a_pid_that_is_gone_is_never_verified() {
        // No process has pid 0x7fff_fff0 on any test machine; nothing listens on port 1.
        let want = env(&[("OYSTERUN_PORT", "1")]);
        let p = probe(&Target {
            pid: 0x7fff_fff0,
            port: 1,
            env: &want,
            exec_record: None,
            launchd: None,
            floor: ProofFloor::Live,
            live: None,
        });
        assert!(!p.verified(), "{p:?}");
        assert_eq!(p.health, None);
    }
}
