//! oyster: the Oysterun Host's launchd manager and provider-command keeper.
//!
//! The pipeline, top to bottom (an import may only point down; `tests/it/architecture.rs`
//! enforces it):
//!
//! - [`cli`] parses; [`context`] is built once; [`commands`] is the user interface;
//! - [`setup`], [`agent`] (plist, launchctl, lifecycle), [`direct`] (pid-file startup) and
//!   [`verify`] act on the Host;
//! - [`host`] (stack paths, root, node, the one launch environment, the plan), [`config`] and
//!   [`provider`] (registry, resolver, provider state) decide what the Host gets;
//! - [`sys`] (files, locks, processes, users, signals) and [`output`] (printer, redaction,
//!   audit) talk to the operating system and to people.

mod agent;
mod cli;
mod commands;
mod config;
mod context;
mod direct;
mod error;
mod host;
mod launch;
mod output;
mod provider;
mod setup;
mod sys;
mod verify;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

pub use error::ExitStatus;

/// Runs oyster with these arguments and returns its exit code: parse, build the context,
/// dispatch, map the outcome to an exit code.
///
/// A closed stdout (`oyster … | head`) is not an error: the reader has what it wanted.
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let args: Vec<OsString> = args.into_iter().collect();
    let cli = match cli::Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let out = output::printer();
    if let Some(result) = commands::packaging(&cli) {
        return finish(result);
    }
    let ctx = match context::Context::new(
        &cli.global.stack,
        cli.command.port(),
        context::EnvSnapshot::from_process(),
        args.first().map(OsString::as_os_str),
    ) {
        Ok(ctx) => ctx,
        Err(e) => {
            out.error(&e.to_string(), None);
            return ExitStatus::Invalid.into();
        }
    };
    finish(commands::dispatch(&ctx, cli.command))
}

/// clap's own messages (`--help`, `--version`) print as clap writes them; its parse errors are
/// said in oyster's one error style, `oyster: error: …` with `hint:` for its tips, keeping
/// clap's exit code (2 for usage).
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let code = ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return code;
    }
    let out = output::printer();
    let text = e.render().to_string();
    let mut lines = text.trim_end().lines();
    let first = lines.next().unwrap_or_default();
    let mut rest: Vec<String> = vec![];
    let mut hints: Vec<String> = vec![];
    for line in lines {
        let trimmed = line.trim();
        if let Some(tip) = trimmed.strip_prefix("tip: ") {
            hints.push(tip.to_owned());
        } else if trimmed.starts_with("For more information, try") {
            hints.push(trimmed.replace("For more information, try", "for more information, try"));
        } else {
            rest.push(line.to_owned());
        }
    }
    let mut msg = first.strip_prefix("error: ").unwrap_or(first).to_owned();
    // Everything clap says between the message and its tips (a usage line, an empty line).
    while rest.last().is_some_and(|l| l.trim().is_empty()) {
        rest.pop();
    }
    if !rest.is_empty() {
        msg.push('\n');
        msg.push_str(&rest.join("\n"));
    }
    let hint = (!hints.is_empty()).then(|| hints.join("; "));
    out.error(&msg, hint.as_deref());
    code
}

fn finish(result: anyhow::Result<ExitStatus>) -> ExitCode {
    let out = output::printer();
    match result {
        // A reader that went away took what it wanted; a read command ends quietly.
        Ok(_) if out.stdout_closed() => ExitCode::SUCCESS,
        Ok(status) => status.into(),
        Err(err) => {
            if let Some(sig) = err.downcast_ref::<error::Interrupted>() {
                out.error(&format!("{err:#}"), None);
                return ExitCode::from(sys::signal::exit_code(sig.0));
            }
            // Any other error while a signal is pending is that signal's doing (a child cut
            // short with its group): the run ends with the signal's code all the same.
            if let Some(sig) = sys::signal::received() {
                let (text, hint) = error::render(&err);
                out.error(&text, hint.as_deref());
                return ExitCode::from(sys::signal::exit_code(sig));
            }
            let (text, hint) = error::render(&err);
            out.error(&text, hint.as_deref());
            exit_status_of(&err).into()
        }
    }
}

/// Decides the exit status for an error: 2 when its kind says the input was invalid, else 1.
fn exit_status_of(err: &anyhow::Error) -> ExitStatus {
    let invalid = err.chain().any(|cause| {
        cause.is::<error::Invalid>()
            || cause
                .downcast_ref::<crate::config::ConfigError>()
                .is_some_and(|e| e.is_invalid_input())
            || cause
                .downcast_ref::<crate::sys::fs::FsError>()
                .is_some_and(|e| e.is_invalid_input())
            || cause
                .downcast_ref::<crate::agent::launchctl::LocateError>()
                .is_some_and(|e| e.is_invalid_input())
    });
    if invalid {
        ExitStatus::Invalid
    } else {
        ExitStatus::Failure
    }
}
