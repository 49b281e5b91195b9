//! The one status of a directly started Host (`oyster host start`), owned here and rendered by
//! `host status` and by `status` alike: what the pid file says ([`PidFile`], in words by
//! [`not_running_why`]) and, for a live Host of this stack, its probe ([`DirectHost`]) against
//! what the generator produces now for the same root and node (the proofs `host start` used).

use serde::Serialize;

use super::{Owner, PidRecord};
use crate::context::Context;
use crate::host::plan;
use crate::probe;
use crate::verify::{EnvProof, LiveProcess};

/// What the pid file says (`host status --json` `pid_file`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PidFile {
    Missing,
    /// It names a live Host of this stack.
    Current,
    /// Its pid is gone.
    Stale,
    /// Its pid belongs to another process now (never signalled).
    Foreign,
    /// It names a live Host of another stack (copied identity files; never signalled).
    OtherStack,
}

impl PidFile {
    pub fn of(owner: &Owner) -> PidFile {
        match owner {
            Owner::None => PidFile::Missing,
            Owner::Stale(_) => PidFile::Stale,
            Owner::Foreign(..) => PidFile::Foreign,
            Owner::OtherStack(..) => PidFile::OtherStack,
            Owner::Ours(..) => PidFile::Current,
        }
    }
}

/// Why no directly started Host of this stack runs; `None` for a live one of ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRunning {
    NoPidFile,
    /// The pid is gone.
    Gone {
        pid: u32,
    },
    /// The pid runs the Host's `server.mjs` (`command`) but is not provably the recorded one.
    Unproven {
        pid: u32,
        command: String,
    },
    /// The pid belongs to another process (`command`) now.
    Foreign {
        pid: u32,
        command: String,
    },
    OtherStack(super::NotThisStacks),
}

impl NotRunning {
    pub fn of(owner: &Owner) -> Option<NotRunning> {
        Some(match owner {
            Owner::None => NotRunning::NoPidFile,
            Owner::Stale(rec) => NotRunning::Gone { pid: rec.pid },
            Owner::Foreign(rec, now) if now.runs(&rec.server) => NotRunning::Unproven {
                pid: rec.pid,
                command: now.command(),
            },
            Owner::Foreign(rec, now) => NotRunning::Foreign {
                pid: rec.pid,
                command: now.command(),
            },
            Owner::OtherStack(why) => NotRunning::OtherStack(why.clone()),
            Owner::Ours(..) => return None,
        })
    }
}

/// Why no directly started Host of this stack runs, in words (`commands/words/direct.rs`);
/// `None` for a live one of ours.
pub fn not_running_why(owner: &Owner) -> Option<String> {
    NotRunning::of(owner).map(|n| n.to_string())
}

/// A live Host of this stack that the pid file names, probed.
#[derive(Debug, Clone)]
pub struct DirectHost {
    pub pid: u32,
    pub port: u16,
    pub health: Option<u16>,
    pub verified: bool,
    /// How the environment was proven, or `None`.
    pub env_proof: Option<EnvProof>,
    /// Generated variables the live process does not have as generated.
    pub env_mismatch: Vec<String>,
    /// Declared variables (`oyster env`) it does not hold as declared now.
    pub declared_stale: Vec<String>,
    /// Why the environment could not be proven (or the expected one computed): a note.
    pub env_note: Option<String>,
    /// Why it does not verify, in words; `None` when it does.
    pub problem: Option<String>,
}

/// Probes the Host `rec` names (alive as `live`) against the environment the generator
/// produces now for its root and node. Reads only; prints nothing.
pub fn probe(ctx: &Context, rec: &PidRecord, live: &LiveProcess) -> DirectHost {
    let mut host = DirectHost {
        pid: rec.pid,
        port: rec.port,
        health: None,
        verified: false,
        env_proof: None,
        env_mismatch: vec![],
        declared_stale: vec![],
        env_note: None,
        problem: None,
    };
    let args = plan::HostInputs {
        root: rec.root().map(Into::into),
        node_bin: Some(rec.node.clone()),
        port: None,
    };
    match plan::plan(ctx, &args) {
        Ok(plan) => {
            let p = probe::without_launchd(
                &ctx.stack,
                (rec.pid, rec.port),
                &plan.env,
                ctx.env.proof_floor,
                Some(live),
            );
            host.health = p.health;
            host.env_proof = p.env_proof();
            host.env_mismatch.clone_from(&p.env_mismatch);
            host.declared_stale.clone_from(&p.declared_stale);
            host.verified = p.verified();
            host.env_note = p.env.as_ref().err().cloned();
            host.problem = p.problem();
        }
        Err(e) => {
            host.health = crate::verify::health(rec.port, probe::HEALTH_TIMEOUT);
            let why = super::NoExpectedEnv(format!("{e:#}")).to_string();
            host.env_note = Some(why.clone());
            host.problem = Some(why);
        }
    }
    host
}
