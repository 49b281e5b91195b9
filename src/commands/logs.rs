//! `oyster logs [-n N] [-f]`: the Host log through the printer (secrets redacted, home as `~`,
//! control characters escaped), followed across rotation and truncation, never through a
//! symlink. Reads only: a stack that does not exist is refused, nothing is created.

use std::fs::File;
use std::path::Path;
use std::time::Duration;

use crate::context::Context;
use crate::invocation::Logs;
use crate::output::redact::PemLines;
use crate::sys::tail::{self, Event, Follower};
use crate::ExitStatus;

/// How often a followed log is looked at (a stat and a read; cheap).
const POLL: Duration = Duration::from_millis(150);

pub fn run(ctx: &Context, args: &Logs) -> anyhow::Result<ExitStatus> {
    crate::host::stack::require_known(&ctx.stack, &ctx.env.stack_env())?;
    let (path, legacy) = ctx.stack.log_to_show();
    if legacy.is_some() {
        ctx.out.note(&format!(
            "showing {}, the log Oysterun 1.5.3 wrote for this stack ({} does not exist yet)",
            path.display(),
            ctx.stack.log_path().display()
        ));
    }
    let config = ctx.stack.config_path();
    let mut file = tail::open_log(&path)?;
    let mut pem = PemLines::default();
    let pos = match file.as_mut() {
        Some(f) => print_last_lines(ctx, f, &path, &config, args, &mut pem)?,
        None if !args.follow => {
            ctx.out.note(&format!(
                "{} does not exist yet: the Host has not written anything (`{}` says whether it runs)",
                path.display(),
                ctx.hint_cmd("status")
            ));
            return Ok(ExitStatus::Success);
        }
        None => {
            ctx.out.note(&format!(
                "{} does not exist yet; waiting for the Host to write it",
                path.display()
            ));
            0
        }
    };
    if args.follow {
        follow(ctx, Follower::new(&path, file, pos), &path, &config, pem)?;
    }
    Ok(ExitStatus::Success)
}

/// The log's last `args.lines` lines, printed; the offset just past them (with `--follow`,
/// past the last complete line), where following starts.
fn print_last_lines(
    ctx: &Context,
    file: &mut File,
    path: &Path,
    config: &Path,
    args: &Logs,
    pem: &mut PemLines,
) -> anyhow::Result<u64> {
    let n = usize::try_from(args.lines).unwrap_or(usize::MAX);
    // Every line of the window, so a private key's block that began before the last `n` lines
    // is still known as one (see `PemLines`).
    let (lines, end) = tail::last_lines(file, usize::MAX, args.follow)
        .map_err(|e| anyhow::anyhow!("could not read {}: {e}", path.display()))?;
    // Read again after the log: secrets the Host wrote since oyster started are known before
    // its lines are printed (see `follow`).
    crate::config::learn_secrets(config);
    let skip = lines.len().saturating_sub(n);
    for (i, line) in lines.into_iter().enumerate() {
        let line = pem.line(line);
        if i >= skip {
            ctx.out.out_unwrapped(&line);
        }
    }
    Ok(end)
}

/// What the Host writes to its log, printed until Ctrl-C (the default action ends oyster, as
/// it ends `tail -f`) or a closed stdout.
fn follow(
    ctx: &Context,
    mut follower: Follower,
    path: &Path,
    config: &Path,
    mut pem: PemLines,
) -> anyhow::Result<()> {
    // `None`: the first round reads the config again, whatever happened since the tail.
    let mut config_seen = None;
    while !ctx.out.stdout_closed() {
        let events = follower
            .poll()
            .map_err(|e| anyhow::anyhow!("could not read {}: {e}", path.display()))?;
        // The Host writes secrets of its own into its config (an onboarding token) and may log
        // them right after. Looked at after the log was read, so a line logged after the config
        // was written is printed only once its secrets are known.
        let now = Some(identity(config));
        if now != config_seen {
            crate::config::learn_secrets(config);
            config_seen = now;
        }
        for event in events {
            print_event(ctx, path, &mut pem, event);
        }
        std::thread::sleep(POLL);
    }
    Ok(())
}

/// One thing that happened to the followed log: a line, or a note on the file itself.
fn print_event(ctx: &Context, path: &Path, pem: &mut PemLines, event: Event) {
    if matches!(event, Event::Truncated | Event::Rotated) {
        pem.reset();
    }
    match event {
        Event::Line(line) => ctx.out.out_unwrapped(&pem.line(line)),
        Event::Truncated => ctx.out.note(&format!(
            "{} was truncated; reading it from the start",
            path.display()
        )),
        Event::Rotated => ctx.out.note(&format!(
            "{} was rotated; reading the new file",
            path.display()
        )),
        Event::Appeared => ctx.out.note(&format!("{} appeared", path.display())),
        Event::Refused(why) => ctx.out.warn(&why),
    }
}

/// What tells a rewritten file from the one seen before: inode, size and modification time.
fn identity(path: &Path) -> Option<(u64, u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.ino(), m.len(), m.mtime(), m.mtime_nsec()))
}
