//! `--all` (`oyster start|stop|restart --all`, `oyster agent uninstall --all`): the verb on
//! every stack found on disk, one after another, each said under its own heading; then one
//! line per stack, and exit 1 naming the stacks that failed (as `brew services … --all`).

use crate::context::Context;
use crate::error::Failed;
use crate::invocation::Job;
use crate::output::Tone;
use crate::ExitStatus;

/// Runs `cmd` (a verb of the launchd job given `--all`) on every stack on disk.
pub fn run(ctx: &Context, cmd: &Job) -> anyhow::Result<ExitStatus> {
    let names = crate::host::stack::discover(&ctx.env.stack_env());
    let verb = cmd.word();
    if names.is_empty() {
        ctx.out.out(&format!(
            "No Oysterun stack on this machine; nothing to {verb}."
        ));
        return Ok(ExitStatus::Success);
    }
    let mut lines: Vec<Line> = vec![];
    let mut failed: Vec<String> = vec![];
    // Caught for the whole run: a signal between two stacks ends it there, said, and never
    // in the middle of one (each verb answers a signal in its own way while it runs).
    let _guard = crate::sys::signal::InterruptGuard::install();
    for (i, name) in names.iter().enumerate() {
        if let Some(sig) = crate::sys::signal::received() {
            let text = format!(
                "{verb} --all stopped before stack {name}{}",
                so_far(verb, &lines, &names[i..])
            );
            return Err(crate::error::Interrupted(sig, text).into());
        }
        match one(ctx, cmd, name) {
            Ok(line) => {
                if line.1 == Tone::Fail {
                    failed.push(name.clone());
                }
                lines.push(line);
            }
            Err(err) => {
                if let Some((sig, said)) = interrupt_of(&err) {
                    let text = format!(
                        "stack {name}: {said}{}",
                        so_far(verb, &lines, &names[i + 1..])
                    );
                    return Err(crate::error::Interrupted(sig, text).into());
                }
                let (text, hint) = crate::error::render(&err);
                ctx.out.error(&text, hint.as_deref());
                let first = text.lines().next().unwrap_or_default().to_owned();
                failed.push(name.clone());
                lines.push((name.clone(), Tone::Fail, format!("FAILED: {first}")));
            }
        }
    }
    summarize(ctx, verb, &lines, &failed, names.len())
}

/// One stack's line of the summary: its name, its tone, what happened.
type Line = (String, Tone, String);

/// The verb on one stack, said under its own heading; its summary line, or the error it ended
/// with.
fn one(ctx: &Context, cmd: &Job, name: &str) -> anyhow::Result<Line> {
    let verb = cmd.word();
    let done = match cmd {
        Job::Start(_) => "started, verified",
        Job::Stop { keep: false, .. } => "stopped",
        Job::Stop { keep: true, .. } => "stopped (kept for the next login)",
        Job::Restart(_) => "restarted, verified",
        Job::Uninstall { .. } => "uninstalled",
        // Only the four above take --all (clap's tree says so); any other is said plainly.
        _ => "done",
    };
    let sub = ctx.for_stack(name)?;
    let name = name.to_owned();
    // A stack with no job definition (only a config) has nothing to start, stop or restart.
    let definition = crate::manager::definition(&sub);
    if !matches!(cmd, Job::Uninstall { .. }) && !definition.exists() {
        let what = match ctx.manager() {
            Ok(crate::context::Manager::Systemd(_)) => "systemd unit",
            _ => "LaunchAgent",
        };
        let why = format!(
            "skipped: no {what} ({} does not exist)",
            definition.display()
        );
        return Ok((name, Tone::Warn, why));
    }
    let had_plist = definition.exists();
    // A restart of a stopped stack starts it: the summary says which it was.
    let stopped =
        matches!(cmd, Job::Restart(_)) && !super::agent::preflight::is_loaded(&sub).unwrap_or(true);
    ctx.out
        .out_toned(Tone::Heading, &format!("==> {verb} stack {name}"));
    Ok(match super::agent_verb(&sub, cmd)? {
        // `uninstall` of a stack with only a config: what it did is said above.
        ExitStatus::Success if !had_plist => (name, Tone::Ok, "no plist to remove".to_owned()),
        ExitStatus::Success if stopped => (
            name,
            Tone::Ok,
            "started, verified (it was stopped)".to_owned(),
        ),
        ExitStatus::Success => (name, Tone::Ok, done.to_owned()),
        _ => (name, Tone::Fail, "failed".to_owned()),
    })
}

/// The summary after every stack: one line each, then exit 1 naming the stacks that failed.
fn summarize(
    ctx: &Context,
    verb: &str,
    lines: &[Line],
    failed: &[String],
    total: usize,
) -> anyhow::Result<ExitStatus> {
    let width = lines.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
    ctx.out.out_toned(Tone::Heading, &format!("{verb} --all:"));
    for (name, tone, what) in lines {
        ctx.out
            .out_toned(*tone, &format!("  {name:<width$}  {what}"));
    }
    if failed.is_empty() {
        return Ok(ExitStatus::Success);
    }
    Err(Failed::new(
        format!(
            "{} of {total} stacks failed to {verb}: {}",
            failed.len(),
            failed.join(", ")
        ),
        format!(
            "see each one's error above; `oyster status STACK` and `oyster logs STACK` show why (e.g. `oyster logs {}`)",
            failed[0]
        ),
    )
    .into())
}

/// The signal that ended a stack's verb, with what the verb said it left.
fn interrupt_of(err: &anyhow::Error) -> Option<(crate::sys::signal::Signal, String)> {
    match err.downcast_ref::<crate::error::Interrupted>() {
        Some(i) => Some((i.0, i.1.clone())),
        None => Some((crate::sys::signal::cause(err).ok()?, format!("{err:#}"))),
    }
}

/// What an interrupted `--all` did before and what it never reached, so a second run is known
/// to be needed, and for which stacks.
fn so_far(verb: &str, lines: &[Line], rest: &[String]) -> String {
    let mut text = String::new();
    if !lines.is_empty() {
        let done: Vec<String> = lines.iter().map(|(n, _, w)| format!("{n} ({w})")).collect();
        text.push_str(&format!(
            "; before it, {verb} --all did: {}",
            done.join(", ")
        ));
    }
    if rest.is_empty() {
        text.push_str("; it was the last stack");
    } else {
        text.push_str(&format!(
            "; not reached: {} (`oyster {verb} --all` again, or each by name)",
            rest.join(", ")
        ));
    }
    text
}

/// `--all --dry-run`: each stack's steps, under its name; the first refusal ends it.
pub fn preview(ctx: &Context, cmd: &Job) -> anyhow::Result<ExitStatus> {
    for name in crate::host::stack::discover(&ctx.env.stack_env()) {
        let ctx = ctx.for_stack(&name)?;
        super::agent::preview::run(&ctx, cmd)?;
    }
    Ok(ExitStatus::Success)
}
