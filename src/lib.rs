//! oyster: the Oysterun Host's launchd manager and provider-command keeper.
//!
//! The pipeline, top to bottom (an import may only point down; `tests/it/architecture.rs`
//! enforces it):
//!
//! - [`cli`] parses; [`context`] is built once; [`commands`] is the user interface;
//! - [`setup`], [`agent`] (launchctl, lifecycle, the status model), [`direct`] (pid-file
//!   startup), [`probe`] (the one probe of a live Host) and [`verify`] act on the Host;
//! - [`host`] (stack paths, root, node, the one launch environment, the plan), [`config`] and
//!   [`provider`] (registry, resolver, provider state) decide what the Host gets;
//! - [`undo`] takes side effects back (setup's journal, the lifecycle's rollback);
//! - [`sys`] (files, locks, processes, users, signals) and [`output`] (printer, redaction,
//!   audit) talk to the operating system and to people.

mod agent;
mod cli;
mod commands;
mod config;
mod context;
mod direct;
mod error;
mod fleet;
mod host;
mod invocation;
mod launch;
mod launchctl;
mod manager;
mod output;
mod probe;
mod provider;
mod service;
mod setup;
mod sys;
pub mod systemd;
mod undo;
mod unit;
mod verify;

use std::ffi::OsString;
use std::process::ExitCode;

pub use error::ExitStatus;

/// Runs oyster with these arguments and returns its exit code: parse, build the context,
/// dispatch, map the outcome to an exit code.
///
/// A closed stdout (`oyster … | head`) is not an error: the reader has what it wanted.
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let args: Vec<OsString> = args.into_iter().collect();
    let out = output::printer();
    // Known before parsing, so that a usage error under `--json` is a document too.
    if args.iter().skip(1).any(|a| a == "--json") {
        out.set_mode(output::Mode::Json);
    }
    let cli = match cli::Cli::parse_args(&args) {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e, &args),
    };
    out.set_verbosity(cli.global.quiet, cli.global.verbose);
    let invocation = match cli.resolve() {
        Ok(i) => i,
        Err(cli::Unresolved::Conflict(msg)) => return usage_error(&stack_conflict(&msg), &args),
        Err(cli::Unresolved::BadName(e)) => {
            return failed(error::Kind::Invalid, &e.msg, e.hint.as_deref())
        }
    };
    // Root runs only a program root alone can replace (before anything else is done).
    if let Err(e) = refuse_replaceable_as_root() {
        return failed(error::Kind::Failure, &e.msg, e.hint.as_deref());
    }
    if let invocation::Verb::Packaging(helper) = &invocation.verb {
        return finish(commands::packaging(helper));
    }
    let stack = match &invocation.stacks {
        invocation::Stacks::One(name) => name.clone(),
        invocation::Stacks::All | invocation::Stacks::Unnamed => {
            host::stack::StackName::production()
        }
    };
    let ctx = match context::Context::new(
        stack.as_str(),
        invocation.typed,
        context::EnvSnapshot::from_process(),
        args.first().map(OsString::as_os_str),
        out,
    ) {
        Ok(ctx) => ctx,
        Err(e) => return failed(error::Kind::Invalid, &e.msg, e.hint.as_deref()),
    };
    finish(commands::dispatch(&ctx, invocation))
}

/// The .pkg's copy of oyster, in a directory only root can write on every Mac (docs/fleet.md).
pub const PKG_ROOT_OWNED: &str = "/Library/Oysterun/bin/oyster";

/// Run as root, oyster refuses (exit 1, docs/decisions.md) when its own file or a directory
/// above it can be changed by anyone but root: whoever can would choose what root runs next
/// (Homebrew's `/usr/local/bin` on an Intel Mac belongs to a user). `--help` and `--version`
/// are answered before this, by the parser.
fn refuse_replaceable_as_root() -> Result<(), error::Failed> {
    if sys::user::euid() != 0 {
        return Ok(());
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let Err(e) = sys::trusted::only_root_can_replace(&exe) else {
        return Ok(());
    };
    Err(commands::words::top::RootRunsReplaceable { exe, at: e }.into())
}

/// A stack named twice, or where none is taken, as clap's own usage errors are said (exit 2).
fn stack_conflict(msg: &str) -> clap::Error {
    let cmd = <cli::Cli as clap::CommandFactory>::command();
    clap::Error::raw(clap::error::ErrorKind::ArgumentConflict, format!("{msg}\n")).with_cmd(&cmd)
}

/// clap's own messages (`--help`, `--version`) print as clap writes them; its parse errors are
/// said in oyster's one error style (`cli::reword`), keeping clap's exit code (2 for usage).
fn usage_error(e: &clap::Error, args: &[OsString]) -> ExitCode {
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
    let (msg, hint) = cli::reword(e, args);
    let kind = match e.exit_code() {
        2 => error::Kind::Invalid,
        _ => error::Kind::Failure,
    };
    failed(kind, &msg, hint.as_deref());
    code
}

/// Says an error: `oyster: error: …` and `hint: …` on stderr; under `--json` also one document
/// on stdout, `{"error": {"kind", "message", "hint", "exit_code"}}`, so `oyster status x --json
/// | jq` reads an error as it reads a status (the text is the same, redacted the same way).
fn failed(kind: error::Kind, text: &str, hint: Option<&str>) -> ExitCode {
    let out = output::printer();
    out.error(text, hint);
    if out.mode() == output::Mode::Json {
        out.json(&serde_json::json!({
            "error": {
                "kind": kind.name(),
                "message": text,
                "hint": hint,
                "exit_code": kind.number(),
            }
        }));
    }
    kind.exit_code()
}

/// Every error type that knows its kind (`error::HasKind`), asked once here, at the top. A
/// type missing from this list would make its errors plain failures (exit 1): each one's
/// mapping is unit-tested below.
const ERROR_KINDS: &[error::KindProbe] = &[
    error::probe::<error::Interrupted>,
    error::probe::<error::Invalid>,
    error::probe::<error::Failed>,
    error::probe::<config::ConfigError>,
    error::probe::<sys::fs::FsError>,
    error::probe::<launchctl::LocateError>,
    error::probe::<systemd::LocateError>,
    error::probe::<systemd::UnitError>,
    error::probe::<context::NoManager>,
    error::probe::<config::environment::DeclareProblem>,
    error::probe::<config::environment::NothingChanged>,
    error::probe::<host::node::NodeProblem>,
];

/// The command's own status decides the exit code, also when its reader closed stdout
/// (`oyster status | head -1` on an unverified Host exits 1): the printer dropped the rest of
/// the output quietly, and a read command that succeeded exits 0 as usual.
fn finish(result: anyhow::Result<ExitStatus>) -> ExitCode {
    let out = output::printer();
    // A closed pipe is the reader's choice; any other failure to write stdout (a full disk)
    // lost the output the user asked for: never exit 0 then.
    if let (Ok(ExitStatus::Success), Some(why)) = (&result, out.stdout_failed()) {
        let (text, hint) = commands::words::top::stdout_failed(&why);
        out.error(&text, Some(hint));
        return ExitStatus::Failure.into();
    }
    match result {
        Ok(status) => status.into(),
        Err(err) => {
            let kind = error::kind_of(&err, ERROR_KINDS, sys::signal::cause(&err).ok());
            if err.downcast_ref::<error::Interrupted>().is_some() {
                // Its message already says what was done: said whole, as made.
                failed(kind, &format!("{err:#}"), None)
            } else {
                let (text, hint) = error::render(&err);
                let hint = hint.or_else(|| commands::words::hint_of(&err));
                failed(kind, &text, hint.as_deref())
            }
        }
    }
}

/// How many cases a property test runs: `full` in a release build (`cargo test --release`,
/// `make bench`), a tenth of it (at least 64) in a debug build — `make test` — so the suite's
/// time goes to behaviour, not to the 3,000th random path; `PROPTEST_CASES` wins over both.
#[cfg(test)]
pub(crate) fn proptest_cases(full: u32) -> u32 {
    if let Some(n) = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    if cfg!(debug_assertions) {
        (full / 10).max(64).min(full)
    } else {
        full
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use error::Kind;
    use std::path::PathBuf;

    fn kind(e: impl Into<anyhow::Error>) -> Kind {
        error::kind_of(&e.into(), ERROR_KINDS, None)
    }

    #[test]
    fn every_registered_error_type_maps_to_its_exit_code() {
        use nix::sys::signal::Signal;
        let path = PathBuf::from("/x/config.json");
        assert_eq!(kind(error::Invalid::new("bad")), Kind::Invalid);
        assert_eq!(kind(error::Failed::new("no", "fix")), Kind::Failure);
        assert_eq!(
            kind(error::Interrupted(Signal::SIGTERM, "rolled back".into())),
            Kind::Interrupted(Signal::SIGTERM)
        );
        assert_eq!(
            kind(config::ConfigError::Empty { path: path.clone() }),
            Kind::Invalid
        );
        let fifo = sys::fs::FsError::NotRegular {
            path: path.clone(),
            kind: "a FIFO",
        };
        assert_eq!(kind(fifo), Kind::Invalid);
        let io = sys::fs::FsError::Io {
            action: "read",
            path,
            cause: std::io::Error::other("disk"),
        };
        assert_eq!(kind(io), Kind::Failure);
        assert_eq!(
            kind(launchctl::LocateError::BadTimeout("x".into())),
            Kind::Invalid
        );
        assert_eq!(kind(launchctl::LocateError::Missing), Kind::Failure);
        assert_eq!(
            kind(systemd::LocateError::BadOverride("x".into())),
            Kind::Invalid
        );
        assert_eq!(kind(systemd::LocateError::Missing), Kind::Failure);
        assert_eq!(
            kind(systemd::UnitError::DuplicateEnv("A".into())),
            Kind::Invalid
        );
        let declare = config::environment::check_name("PATH").unwrap_err();
        assert_eq!(kind(declare), Kind::Invalid);
        let refused = config::environment::Refused {
            path: PathBuf::from("/x/oyster-host.env"),
            why: config::environment::RefusedWhy::NotUtf8,
        };
        assert_eq!(
            kind(config::environment::NothingChanged(refused)),
            Kind::Invalid
        );
        let none = host::node::NodeProblem::NoneFound { dirs: vec![] };
        assert_eq!(kind(none), Kind::Failure);
        assert_eq!(kind(anyhow::anyhow!("plain")), Kind::Failure);
    }

    #[test]
    fn the_chain_decides_an_interrupt_first_then_invalid_input_anywhere() {
        use anyhow::Context as _;
        use nix::sys::signal::Signal;
        let wrapped = Err::<(), _>(error::Invalid::new("bad port"))
            .context("while installing")
            .unwrap_err();
        assert_eq!(kind(wrapped), Kind::Invalid);
        let interrupted = Err::<(), _>(error::Interrupted(Signal::SIGINT, "nothing".into()))
            .context(error::Invalid::new("outer"))
            .unwrap_err();
        assert_eq!(kind(interrupted), Kind::Interrupted(Signal::SIGINT));
        // A kind given as context counts too.
        let outer = Err::<(), _>(anyhow::anyhow!("inner"))
            .context(error::Invalid::new("outer"))
            .context("top")
            .unwrap_err();
        assert_eq!(kind(outer), Kind::Invalid);
        // A failure while a signal is pending is that signal's doing.
        let cut = anyhow::anyhow!("launchctl was killed");
        assert_eq!(
            error::kind_of(&cut, ERROR_KINDS, Some(Signal::SIGHUP)),
            Kind::Interrupted(Signal::SIGHUP)
        );
        assert_eq!(
            Kind::Interrupted(Signal::SIGINT).exit_code(),
            ExitCode::from(130)
        );
        assert_eq!(Kind::Invalid.exit_code(), ExitCode::from(2));
    }
}
