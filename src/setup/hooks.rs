//! The steps Oysterun 1.5.3's `oysterun_release_service.sh` ran around a service start, which
//! users of `npm run service:*` had and oyster keeps: the login QR after the Host came up
//! (`host-service/setup.mjs --show-qr`), and, for `restart --restore-sessions`, the Host's own
//! restore preparation first (`host-service/cli/prepare-restart-restore.mjs`).
//!
//! Both run through the process door (no shell) with the pinned Node, in the root (the script
//! `cd`s there), with the stack's generated environment (`OYSTERUN_CONFIG_DIR`, `OYSTERUN_PORT`
//! among it) and nothing of the caller's. A root without the entry point skips the step with a
//! one-line note; a step that fails is named and never turns a verified start into a failure.

use std::path::PathBuf;
use std::time::Duration;

use super::Said;
use crate::context::Context;
use crate::host::plan::Plan;
use crate::sys::process::{self, ChildEnv};
use crate::sys::signal::{self, InterruptGuard, Signal};

/// The login QR entry point, relative to the root.
pub const SHOW_QR: &str = "host-service/setup.mjs";
/// The restore preparation entry point, relative to the root.
pub const PREPARE_RESTORE: &str = "host-service/cli/prepare-restart-restore.mjs";
/// What the 1.5.3 script told the Host about why it prepares a restore.
pub const RESTORE_TRIGGER: (&str, &str) = (
    "OYSTERUN_RESTART_RESTORE_TRIGGER",
    "cli_service_restart_restore_sessions",
);

/// How long the QR may take (it only reads the config and prints).
const QR_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the restore preparation may take (it asks the running Host to save its sessions).
const RESTORE_TIMEOUT: Duration = Duration::from_secs(120);

/// Whether a step ran, and how it ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ran {
    Done,
    /// The root has no such entry point.
    Skipped,
    /// Named in the output already.
    Failed,
    /// Ctrl-C (SIGINT, SIGTERM, SIGHUP) while it ran: the step's process group was stopped;
    /// the caller ends the run with 128 + N.
    Interrupted(Signal),
}

/// Prints the login QR: stdout as the entry point writes it (the QR is for the user's eyes),
/// its stderr through the printer. Failure says [`QR_UNAVAILABLE`].
pub fn show_qr(ctx: &Context, plan: &Plan) -> Ran {
    let script = plan.root.join(SHOW_QR);
    if !script.is_file() {
        ctx.out.note(
            &Said::NoQrEntry {
                root: plan.root.clone(),
            }
            .to_string(),
        );
        return Ran::Skipped;
    }
    ctx.out
        .waiting(&format!("the login QR ({SHOW_QR} --show-qr)"), QR_TIMEOUT);
    match run_step(
        ctx,
        plan,
        script,
        &["--show-qr"],
        None,
        QR_TIMEOUT,
        Stdout::AsWritten,
    )
    .map_err(StepFailed::of)
    {
        Ok(()) => Ran::Done,
        Err(StepFailed::Interrupted(sig)) => {
            qr_unavailable(ctx, plan.port, "interrupted");
            Ran::Interrupted(sig)
        }
        Err(StepFailed::Why(why)) => {
            qr_unavailable(ctx, plan.port, &why);
            Ran::Failed
        }
    }
}

/// One line when the root shows no QR: why in oyster's words, and where the Host answers
/// instead. (The entry point's own words name its flags and another program's command, and
/// `oyster qr` would fail the same way: neither is offered.)
pub fn qr_unavailable(ctx: &Context, port: u16, why: &str) {
    let why = why.to_owned();
    ctx.out.note(&Said::QrUnavailable { why, port }.to_string());
}

/// Prepares the Host's restart restore, before `restart --restore-sessions` restarts it. A
/// failure is named; the restart goes on (the Host then starts without restored sessions).
pub fn prepare_restore(ctx: &Context, plan: &Plan) -> Ran {
    let script = plan.root.join(PREPARE_RESTORE);
    if !script.is_file() {
        ctx.out.note(
            &Said::NoRestoreEntry {
                root: plan.root.clone(),
            }
            .to_string(),
        );
        return Ran::Skipped;
    }
    ctx.reporter().line(
        &Said::PreparingRestore {
            secs: RESTORE_TIMEOUT.as_secs(),
        }
        .to_string(),
    );
    let ran = run_step(
        ctx,
        plan,
        script,
        &[],
        Some(RESTORE_TRIGGER),
        RESTORE_TIMEOUT,
        Stdout::Redacted,
    );
    match ran.map_err(StepFailed::of) {
        Ok(()) => Ran::Done,
        Err(StepFailed::Interrupted(sig)) => Ran::Interrupted(sig),
        Err(StepFailed::Why(why)) => {
            ctx.out.warn(&Said::RestoreFailed { why }.to_string());
            Ran::Failed
        }
    }
}

/// How a step's stdout is shown.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stdout {
    /// As the entry point wrote it: only the login QR, which is the user's own login.
    AsWritten,
    /// Through the printer like every other output: secrets (known and by shape) redacted,
    /// control characters escaped.
    Redacted,
}

/// Why a step failed: a signal came while it ran (its process group was stopped), or `Why`.
enum StepFailed {
    Interrupted(Signal),
    Why(String),
}

impl StepFailed {
    /// A step's failure: the signal's when one came meanwhile (asked once, here).
    fn of(why: String) -> StepFailed {
        signal::cause(why).map_or_else(StepFailed::Why, StepFailed::Interrupted)
    }
}

fn run_step(
    ctx: &Context,
    plan: &Plan,
    script: PathBuf,
    args: &[&str],
    extra: Option<(&str, &str)>,
    timeout: Duration,
    stdout: Stdout,
) -> Result<(), String> {
    let mut env = plan
        .host_environment(&ctx.stack.home)
        .map_err(|e| format!("{e:#}"))?;
    if let Some((k, v)) = extra {
        env.retain(|(key, _)| key != k);
        env.push((k.to_owned(), v.to_owned()));
    }
    let script_arg = script.display().to_string();
    let argv: Vec<&str> = std::iter::once(script_arg.as_str())
        .chain(args.iter().copied())
        .collect();
    // Ctrl-C must reach the step: it runs in its own process group, which the terminal's
    // SIGINT does not reach, so without the guard oyster would die and leave it running.
    let _guard = InterruptGuard::install();
    // The QR's stderr is held until it ends: a QR that cannot be shown is said in one line
    // (`qr_unavailable`), not with the entry point's advice about its own flags.
    let mut held: Vec<String> = vec![];
    // Each line as it comes (a step that hangs has shown what it printed), whole: the
    // process door's capture cap bounds only what oyster keeps, not what the user sees.
    let result = process::run_streaming(
        &plan.node.path,
        &argv,
        ChildEnv::Exactly(&env),
        Some(&plan.root),
        timeout,
        &mut |stream, line| match stream {
            // The QR is for the user's eyes: its lines as the entry point wrote them.
            process::Stream::Stdout if stdout == Stdout::AsWritten => {
                ctx.out.raw(format!("{line}\n").as_bytes());
            }
            process::Stream::Stdout => ctx.out.out(line),
            process::Stream::Stderr if stdout == Stdout::AsWritten => {
                if !line.trim().is_empty() {
                    held.push(line.to_owned());
                }
            }
            process::Stream::Stderr if !line.trim().is_empty() => ctx.out.err(line),
            process::Stream::Stderr => {}
        },
    );
    match result {
        Ok(f) if f.code == 0 => {
            for line in &held {
                ctx.out.err(line);
            }
            Ok(())
        }
        Ok(f) if stdout == Stdout::AsWritten => Err(format!(
            "{SHOW_QR} --show-qr shows none: it exited {}",
            f.code
        )),
        Ok(f) => Err(format!(
            "`{} {}` exited with code {}",
            plan.node.path.display(),
            argv.join(" "),
            f.code
        )),
        Err(e) => Err(e.to_string()),
    }
}
