//! `--all` (`oyster start|stop|restart --all`, `oyster agent uninstall --all`): the verb on
//! every stack found on disk, one after another, each said under its own heading; then one
//! line per stack, and exit 1 naming the stacks that failed (as `brew services … --all`).

use crate::cli::AgentCommand;
use crate::context::Context;
use crate::error::Failed;
use crate::output::Tone;
use crate::ExitStatus;

/// Runs `cmd` (an agent verb with `--all`) on every stack on disk.
pub fn run(ctx: &Context, cmd: AgentCommand) -> anyhow::Result<ExitStatus> {
    let names = crate::host::stack::discover(&ctx.env.stack_env());
    let (verb, done) = match &cmd {
        AgentCommand::Start(_) => ("start", "started, verified"),
        AgentCommand::Stop { .. } => ("stop", "stopped"),
        AgentCommand::Restart { .. } => ("restart", "restarted, verified"),
        AgentCommand::Uninstall { .. } => ("uninstall", "uninstalled"),
        _ => unreachable!("only start, stop, restart and uninstall take --all"),
    };
    if names.is_empty() {
        crate::say!("No Oysterun stack on this machine; nothing to {verb}.");
        return Ok(ExitStatus::Success);
    }
    let mut lines: Vec<(String, Tone, String)> = vec![];
    let mut failed: Vec<String> = vec![];
    for name in &names {
        let sub = ctx.for_stack(name)?;
        // A stack with no LaunchAgent (only a config) has nothing to start, stop or restart.
        if verb != "uninstall" && !sub.stack.plist_path().exists() {
            lines.push((
                name.clone(),
                Tone::Warn,
                format!(
                    "skipped: no LaunchAgent ({} does not exist)",
                    sub.stack.plist_path().display()
                ),
            ));
            continue;
        }
        ctx.out
            .out_toned(Tone::Heading, &format!("==> {verb} stack {name}"));
        match super::agent_verb(&sub, cmd.clone()) {
            Ok(ExitStatus::Success) => lines.push((name.clone(), Tone::Ok, done.to_owned())),
            Ok(_) => {
                failed.push(name.clone());
                lines.push((name.clone(), Tone::Fail, "failed".to_owned()));
            }
            Err(err) => {
                if err.is::<crate::error::Interrupted>() || crate::sys::signal::received().is_some()
                {
                    return Err(err);
                }
                let (text, hint) = crate::error::render(&err);
                ctx.out.error(&text, hint.as_deref());
                let first = text.lines().next().unwrap_or_default().to_owned();
                failed.push(name.clone());
                lines.push((name.clone(), Tone::Fail, format!("FAILED: {first}")));
            }
        }
    }
    let width = lines.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
    ctx.out.out_toned(Tone::Heading, &format!("{verb} --all:"));
    for (name, tone, what) in &lines {
        ctx.out
            .out_toned(*tone, &format!("  {name:<width$}  {what}"));
    }
    if failed.is_empty() {
        return Ok(ExitStatus::Success);
    }
    Err(Failed::new(
        format!(
            "{} of {} stacks failed to {verb}: {}",
            failed.len(),
            names.len(),
            failed.join(", ")
        ),
        format!(
            "see each one's error above; `oyster status STACK` and `oyster logs STACK` show why (e.g. `oyster logs {}`)",
            failed[0]
        ),
    )
    .into())
}
