//! The run's fields, the same under launchd and systemd ([`Run`]), and what is done with them
//! alone: the lock, the decision's view of the plan, the config step.

use crate::host::plan::{Plan, PlanEnv};
use crate::host::stack::Stack;
use crate::output::audit::Audit;
use crate::output::Reporter;
use crate::service::{Decision, Planned, Step};
use crate::sys::fs::Lock;
use crate::verify::ProofFloor;

/// What every manager's run holds, the same under launchd and systemd: made once, by
/// [`Run::new`], when the manager's job is looked up.
pub struct Run<'a> {
    pub stack: &'a Stack,
    pub audit: Audit,
    /// The stack's lifecycle lock, held by a run that acts (`None`: a `--dry-run` observer,
    /// which writes nothing).
    lock: Option<&'a Lock>,
    /// `OYSTER_ENV_PROOF`: which proofs may be used (all, unless a test or a user says).
    pub proof_floor: ProofFloor,
    /// The Host log's length when the run began: a failure shows only what this attempt wrote.
    pub log_start: u64,
    /// Where the run says its progress, notes and warnings (the printer in a run).
    pub out: &'a dyn Reporter,
    /// `start` of a stack `stop` left disabled: a rollback writes the previous definition back
    /// but does not start it (that would start the Host the user had stopped).
    pub keep_stopped: bool,
    /// What the config step needs to merge the plan into `config.json` again.
    pub plan_env: PlanEnv<'a>,
    /// `--ignore-login-items`: a reload of a job said to be switched off is made all the same
    /// (never needed under systemd, which has no Login Items).
    pub ignore_switch: bool,
}

impl<'a> Run<'a> {
    /// The run of `env`'s stack, its Host log measured now; `lock` is the stack's lifecycle
    /// lock (`None`: a `--dry-run`).
    pub fn new(env: PlanEnv<'a>, proof_floor: ProofFloor, lock: Option<&'a Lock>) -> Run<'a> {
        let stack = env.stack;
        Run {
            stack,
            audit: Audit::new(stack.audit_path(), &stack.name, &stack.label),
            lock,
            proof_floor,
            log_start: std::fs::symlink_metadata(stack.log_path()).map_or(0, |m| m.len()),
            out: env.out,
            keep_stopped: false,
            plan_env: env,
            ignore_switch: false,
        }
    }

    /// The stack's lock, which every step that writes holds.
    pub fn lock(&self) -> anyhow::Result<&'a Lock> {
        self.lock.ok_or_else(|| {
            anyhow::anyhow!("a dry run takes no step (the stack's lock is not held)")
        })
    }

    /// What the decision weighs of `plan`.
    pub fn planned(&self, plan: &Plan) -> Planned {
        Planned {
            config: self.stack.config_path(),
            edits: plan.changes.iter().map(Into::into).collect(),
            port: plan.port,
            ignore_switch: self.ignore_switch,
        }
    }

    /// The config step: what the plan computed, written into `config.json` (merged again with
    /// what is on disk now) and said.
    pub fn write_config(&self, plan: &Plan) -> anyhow::Result<()> {
        let changes = crate::host::plan::write_config(self.plan_env, plan, self.lock()?)?;
        crate::config::report(&self.stack.config_path(), &changes, self.out);
        Ok(())
    }

    /// A run of `d` without a config step: the config said as the sync says it (with the
    /// privacy warnings the config step gives), and the pinned Node's version cached.
    pub fn config_unchanged(&self, plan: &Plan, d: &Decision) -> anyhow::Result<()> {
        let config_step = d
            .steps
            .iter()
            .any(|s| matches!(s, Step::WriteConfig { .. }));
        if config_step {
            return Ok(());
        }
        let stack = self.stack;
        let cache = stack.node_version_cache_path();
        crate::host::node::record_version(&cache, self.lock()?, &plan.node);
        plan.warn_privacy(self.out);
        crate::config::report(&stack.config_path(), &[], self.out);
        Ok(())
    }
}
