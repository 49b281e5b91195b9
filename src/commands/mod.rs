//! One module per command: the user interface. Each parses nothing (clap did), calls the domain
//! modules, prints through the printer, and returns an [`ExitStatus`].

pub mod agent;
pub mod cleanup;
pub mod completions;
pub mod config;
pub mod doctor;
pub mod every;
pub mod host;
pub mod inventory;
pub mod logs;
pub mod man;
pub mod mdm;
pub mod provider_status;
pub mod providers;
pub mod setup;

use std::io::IsTerminal;

use crate::cli::{AgentCommand, Cli, Command};
use crate::context::Context;
use crate::output::Mode;
use crate::setup::hooks::Ran;
use crate::ExitStatus;

/// The packaging helpers, which need no HOME and no stack; `None` for every other command.
pub fn packaging(cli: &Cli) -> Option<anyhow::Result<ExitStatus>> {
    let out = crate::output::printer();
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut bytes = vec![];
    match &cli.command {
        Command::Completions { shell } => {
            bytes = completions::script(*shell, &mut cmd);
        }
        Command::Man { dir } => {
            let result = match dir {
                Some(dir) => man::write_all(cmd, dir),
                None => man::render_main(cmd, &mut bytes),
            };
            if let Err(e) = result {
                return Some(Err(e));
            }
        }
        Command::CompleteStacks => {
            let env = crate::context::EnvSnapshot::from_process();
            for name in crate::host::stack::discover(&env.stack_env()) {
                bytes.extend_from_slice(name.as_bytes());
                bytes.push(b'\n');
            }
        }
        _ => return None,
    }
    out.raw(&bytes);
    Some(Ok(ExitStatus::Success))
}

/// Runs one command.
pub fn dispatch(ctx: &Context, command: Command) -> anyhow::Result<ExitStatus> {
    ctx.out.set_mode(output_mode(&command));
    if command.all() {
        let Ok(agent_cmd) = command.into_agent() else {
            unreachable!("only agent verbs take --all")
        };
        ctx.announce_overrides();
        return every::run(ctx, agent_cmd);
    }
    match command {
        Command::Completions { .. } | Command::Man { .. } | Command::CompleteStacks => {
            unreachable!("packaging helpers run before a context exists")
        }
        Command::Providers(cmd) => providers::run(ctx, cmd),
        Command::Config(cmd) => config::run(ctx, cmd),
        Command::Host(cmd) => host::run(ctx, cmd),
        Command::Doctor { probe, .. } => {
            ctx.announce_overrides();
            doctor::run(ctx, probe)
        }
        Command::Setup(args) => {
            ctx.announce_overrides();
            setup::run(ctx, args)
        }
        Command::Logs(args) => {
            ctx.announce_overrides();
            logs::run(ctx, &args)
        }
        Command::Cleanup(args) => cleanup::run(ctx, &args),
        Command::Mdm(cmd) => mdm::run(ctx, cmd),
        Command::Inventory(args) => inventory::run(ctx, &args),
        // The brew-services habits: the agent verbs at the top level run the agent verb.
        other => match other.into_agent() {
            Ok(agent_cmd) => agent_verb(ctx, agent_cmd),
            Err(other) => unreachable!("every other command is an agent verb: {other:?}"),
        },
    }
}

/// The output mode a command's `--json` asks for: the printer knows it, so no command passes
/// a `json` flag down.
fn output_mode(command: &Command) -> Mode {
    use crate::cli::{ConfigCommand, HostCommand, ProvidersCommand};
    let json = match command {
        Command::Doctor { json, .. }
        | Command::Status { json, .. }
        | Command::List { json, .. } => *json,
        Command::Agent(AgentCommand::Status { json, .. } | AgentCommand::List { json, .. }) => {
            *json
        }
        Command::Host(HostCommand::Status { json, .. }) => *json,
        Command::Providers(
            ProvidersCommand::Resolve { json, .. } | ProvidersCommand::Status { json, .. },
        ) => *json,
        Command::Config(ConfigCommand::Show { json, .. }) => *json,
        _ => false,
    };
    if json {
        Mode::Json
    } else {
        Mode::Human
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

/// One agent verb on one stack, with the steps Oysterun's service script ran around a start:
/// the restore preparation before `restart --restore-sessions`, the login QR after a verified
/// start or restart.
pub fn agent_verb(ctx: &Context, cmd: AgentCommand) -> anyhow::Result<ExitStatus> {
    agent_verb_steps(ctx, cmd).map_err(|e| launchd_absent_for_stack(ctx, e))
}

/// No launchd here (launchctl missing or switched off): the error names `oyster host start`
/// as the way, for this stack (run as shown, a stack-less one would start production).
fn launchd_absent_for_stack(ctx: &Context, e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<crate::agent::launchctl::LocateError>() {
        Some(l) if !l.is_invalid_input() && !ctx.stack_suffix().is_empty() => {
            anyhow::anyhow!(ctx.hints().for_stack(&format!("{e:#}")))
        }
        _ => e,
    }
}

fn agent_verb_steps(ctx: &Context, cmd: AgentCommand) -> anyhow::Result<ExitStatus> {
    let (host, qr, restore) = match &cmd {
        AgentCommand::Start(a) => (Some(a.host.inputs()), a.qr, false),
        AgentCommand::Restart {
            host,
            qr,
            restore_sessions,
            ..
        } => (Some(host.inputs()), *qr, *restore_sessions),
        _ => (None, Default::default(), false),
    };
    let plan = |ctx: &Context, inputs: &crate::host::plan::HostInputs| {
        crate::host::plan::plan(ctx, inputs, crate::host::plan::Writes::None)
    };
    if let (true, Some(inputs)) = (restore, &host) {
        // Only for a stack whose restart can go ahead; the restart itself says why not.
        if ctx.stack.plist_path().exists() {
            match plan(ctx, inputs) {
                Ok(p) => {
                    if let Ran::Interrupted(sig) = crate::setup::hooks::prepare_restore(ctx, &p) {
                        return Err(crate::error::Interrupted(
                            sig,
                            "the restore preparation was stopped; nothing was restarted".into(),
                        )
                        .into());
                    }
                }
                Err(e) => ctx.out.warn(&format!(
                    "sessions not prepared for restore: {e:#}; restarting without it"
                )),
            }
        }
    }
    // A first install that is refused must not leave a stack behind (`list` would show it).
    let first_install = matches!(cmd, AgentCommand::Install { .. }) && !ctx.stack.root.exists();
    let status = match agent::run(ctx, cmd) {
        Ok(status) => status,
        Err(e) => {
            if first_install {
                cleanup::forget_refused_first_install(ctx);
            }
            return Err(e);
        }
    };
    if let (ExitStatus::Success, Some(inputs)) = (status, &host) {
        if qr.wanted(std::io::stdout().is_terminal()) {
            match plan(ctx, inputs) {
                Ok(p) => {
                    if let Ran::Interrupted(sig) = crate::setup::hooks::show_qr(ctx, &p) {
                        return Err(qr_interrupted(sig));
                    }
                }
                Err(e) => {
                    ctx.out.warn(&format!("the login QR step failed: {e:#}"));
                    ctx.out.err(crate::setup::hooks::QR_UNAVAILABLE);
                }
            }
        }
    }
    Ok(status)
}
