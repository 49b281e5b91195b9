//! oyster: the Oysterun Host's launchd manager and provider-command keeper.

pub mod agent;
pub mod cli;
pub mod commands;
pub mod config;
pub mod direct;
pub mod error;
pub mod host;
pub mod output;
pub mod provider;
pub mod setup;
pub mod sys;
pub mod verify;

use std::ffi::OsString;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

pub use error::ExitStatus;

/// Runs oyster with these arguments and returns its exit code.
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
    match commands::dispatch(cli) {
        Ok(status) => status.into(),
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = writeln!(io::stderr(), "oyster: error: {err:#}");
            error::exit_status_of(&err).into()
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
