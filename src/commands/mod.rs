//! One module per command: the user interface. Each parses nothing (clap did), calls the domain
//! modules, prints through the printer, and returns an [`ExitStatus`].

pub mod agent;
pub mod cleanup;
pub mod completions;
pub mod config;
pub mod doctor;
pub mod env;
pub mod every;
pub mod host;
pub mod inventory;
pub mod logs;
pub mod man;
pub mod mdm;
pub mod open;
pub mod provider_status;
pub mod providers;
pub mod setup;
pub mod setup_login;
pub mod version;
pub mod words;

use std::io::IsTerminal;

use crate::cli::Cli;
use crate::context::Context;
use crate::invocation::{ConfigVerb, Invocation, Job, Packaging, Stacks, Verb};
use crate::setup::hooks::Ran;
use crate::ExitStatus;

/// The packaging helpers, which need no HOME and no stack.
pub fn packaging(helper: &Packaging) -> anyhow::Result<ExitStatus> {
    let out = crate::output::printer();
    let mut cmd = crate::cli::with_help(Cli::whole());
    let mut bytes = vec![];
    match helper {
        Packaging::Completions(shell) => {
            bytes = completions::script(*shell, &mut cmd);
        }
        Packaging::Man { dir } => match dir {
            Some(dir) => {
                let n = man::write_all(cmd, dir)?;
                out.out(&format!(
                    "wrote {n} man pages into {}",
                    crate::output::one_line(dir)
                ));
            }
            None => man::render_main(cmd, &mut bytes)?,
        },
        Packaging::CompleteStacks => {
            let env = crate::context::EnvSnapshot::from_process();
            for name in crate::host::stack::discover(&env.stack_env()) {
                bytes.extend_from_slice(name.as_bytes());
                bytes.push(b'\n');
            }
        }
    }
    out.raw(&bytes);
    Ok(ExitStatus::Success)
}

/// Runs one command.
pub fn dispatch(ctx: &Context, inv: Invocation) -> anyhow::Result<ExitStatus> {
    ctx.out.set_mode(inv.mode);
    match inv.verb {
        Verb::Job(job) => job_verb(ctx, &inv.stacks, inv.dry_run, &job),
        Verb::Packaging(helper) => packaging(&helper),
        Verb::Providers(p) => providers::run(ctx, p),
        Verb::Config(ConfigVerb::Sync { port }) => config::sync_verb(ctx, port),
        Verb::Config(ConfigVerb::Show) => config::show(ctx),
        Verb::Host(h) => host::run(ctx, h),
        Verb::Env(v) => env::run(ctx, v),
        Verb::Doctor { probe } => {
            ctx.announce_overrides();
            match inv.stacks {
                Stacks::All => doctor::run_all(ctx, probe),
                _ => doctor::run(ctx, probe),
            }
        }
        Verb::Setup(setup) => {
            ctx.announce_overrides();
            setup::run(ctx, *setup)
        }
        Verb::Logs(args) => {
            ctx.announce_overrides();
            logs::run(ctx, &args)
        }
        Verb::Cleanup(args) => cleanup::run(ctx, &args),
        Verb::MdmProfile {
            output,
            organization,
        } => mdm::profile(ctx, output.as_deref(), organization.as_deref()),
        Verb::Inventory(args) => inventory::run(ctx, &args),
        Verb::Version { verbose } => version::run(ctx, verbose),
        Verb::Open => open::open(ctx),
        Verb::Qr => open::qr(ctx),
        Verb::Overview => {
            ctx.announce_overrides();
            let status = agent::list::run(ctx, false)?;
            // With no stack, the list's own line already names `oyster setup`.
            let any = !crate::host::stack::discover(&ctx.env.stack_env()).is_empty();
            if any && ctx.out.mode() == crate::output::Mode::Human {
                ctx.out.out(
                    "Next: `oyster status STACK` for one stack's facts, `oyster doctor` for what is wrong, `oyster --help` for every command.",
                );
            }
            Ok(status)
        }
    }
}

/// A verb of the stack's job: previewed (`--dry-run`), on every stack (`--all`), or on one.
fn job_verb(
    ctx: &Context,
    stacks: &Stacks,
    dry_run: bool,
    job: &Job,
) -> anyhow::Result<ExitStatus> {
    let all = *stacks == Stacks::All;
    if dry_run || all {
        ctx.announce_overrides();
    }
    match (dry_run, all, job) {
        (true, true, _) => every::preview(ctx, job),
        (true, false, _) => agent::preview::run(ctx, job),
        (false, true, Job::Status) => agent::status::run_all(ctx),
        (false, true, _) => every::run(ctx, job),
        (false, false, _) => agent_verb(ctx, job),
    }
}

/// Ctrl-C during the login QR step, after the Host verified: the step is stopped, the Host
/// keeps running, and the run ends with 128 + N.
pub fn qr_interrupted(sig: crate::sys::signal::Signal) -> anyhow::Error {
    crate::error::Interrupted(
        sig,
        "the login QR step was stopped; the Host runs and verified".into(),
    )
    .into()
}

/// One verb of the launchd job on one stack, with the step Oysterun's service script ran
/// after a start: the login QR after a verified start or restart (`restart
/// --restore-sessions` prepares the sessions inside the restart, after its refusals).
pub fn agent_verb(ctx: &Context, verb: &Job) -> anyhow::Result<ExitStatus> {
    agent_verb_steps(ctx, verb).map_err(|e| launchd_absent_for_stack(ctx, e))
}

/// No launchd here (launchctl missing or switched off): the error names `oyster host start`
/// as the way, for this stack (run as shown, a stack-less one would start production).
fn launchd_absent_for_stack(ctx: &Context, e: anyhow::Error) -> anyhow::Error {
    use crate::context::{NoManager, Worded};
    let h = ctx.hints();
    let absent = |c: &(dyn std::error::Error + 'static)| {
        let m = (c.downcast_ref::<crate::launchctl::LocateError>().cloned())
            .map(NoManager::from)
            .or_else(|| c.downcast_ref::<NoManager>().cloned());
        m.filter(|m| !m.is_invalid_input()).map(|m| m.words(&h))
    };
    if ctx.stack_suffix().is_empty() || !e.chain().any(|c| absent(c).is_some()) {
        return e;
    }
    // Said as `{e:#}` says it, launchd's absence in this stack's words.
    let said: Vec<_> = (e.chain())
        .map(|c| absent(c).unwrap_or_else(|| c.to_string()))
        .collect();
    anyhow::anyhow!(said.join(": "))
}

fn agent_verb_steps(ctx: &Context, verb: &Job) -> anyhow::Result<ExitStatus> {
    let starting = match verb {
        Job::Start(s) | Job::Restart(s) => Some(s),
        _ => None,
    };
    let plan = |ctx: &Context, inputs: &crate::host::plan::HostInputs| {
        crate::host::plan::plan(ctx, inputs)
    };
    // A refused first install leaves no stack behind: `preflight::run` forgets it under the lock.
    let status = agent::run(ctx, verb)?;
    if let (ExitStatus::Success, Some(s)) = (status, starting) {
        if s.qr.wanted(std::io::stdout().is_terminal()) {
            match plan(ctx, &s.host) {
                Ok(p) => {
                    if let Ran::Interrupted(sig) = crate::setup::hooks::show_qr(ctx, &p) {
                        return Err(qr_interrupted(sig));
                    }
                }
                Err(e) => crate::setup::hooks::qr_unavailable(
                    ctx,
                    s.host
                        .effective_port(
                            &ctx.stack,
                            crate::config::ConfigDoc::load(&ctx.stack.config_path())
                                .ok()
                                .as_ref(),
                            None,
                        )
                        .map_or(0, |p| p.port),
                    &format!("{e:#}"),
                ),
            }
        }
    }
    Ok(status)
}
