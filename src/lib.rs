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

pub mod agent;
pub mod cli;
pub mod commands;
pub mod config;
pub mod context;
pub mod direct;
pub mod error;
pub mod host;
pub mod output;
pub mod provider;
pub mod setup;
pub mod sys;
pub mod verify;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

pub use error::ExitStatus;

/// Runs oyster with these arguments and returns its exit code: parse, build the context,
/// dispatch, map the outcome to an exit code.
///
/// A closed stdout (`oyster … | head`) is not an error: the reader has what it wanted.
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let out = output::printer();
    if let Some(result) = commands::packaging(&cli) {
        return finish(result);
    }
    let ctx = match context::Context::new(
        &cli.global.stack,
        cli.global.port,
        context::EnvSnapshot::from_process(),
    ) {
        Ok(ctx) => ctx,
        Err(e) => {
            out.error(&e.to_string(), None);
            return ExitStatus::Invalid.into();
        }
    };
    finish(commands::dispatch(&ctx, cli.command))
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
