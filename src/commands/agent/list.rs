//! `oyster agent list` (and `oyster list`): one row per stack found on disk, like `brew
//! services list`. A stack whose files are broken is marked and named, with the fix.

use serde::Serialize;

use super::status::tone;
use crate::agent::listing::Unreadable;
use crate::agent::status::{self as model, AgentStatus};
use crate::context::Context;
use crate::output::Tone;
use crate::ExitStatus;

/// `agent list --json`.
#[derive(Serialize)]
struct List {
    stacks: Vec<AgentStatus>,
}

// One word for the state (the `summary` status and `--json` use), so the table fits 100
// columns for ordinary names; `oyster status STACK` has every fact.
const HEAD: [&str; 6] = ["STACK", "STATUS", "PORT", "PID", "EXIT", "LOG"];

/// `wide`: the LOG path is never cut to the terminal's width.
pub fn run(ctx: &Context, wide: bool) -> anyhow::Result<ExitStatus> {
    let names = crate::host::stack::discover(&ctx.env.stack_env());
    // launchd's view of every stack from one listing per domain (two launchctl calls, whatever
    // the number of stacks); a listing oyster cannot read means asking job by job, said in
    // each row's notes.
    let (listings, fallback) = match ctx.launchctl() {
        Ok(lc) if !names.is_empty() => match lc.listings() {
            Ok(Ok(l)) => {
                // Rows launchd printed in a shape oyster does not read are skipped, never a
                // reason to give up the table; a stack one of them names is asked on its own.
                let n = l.skipped();
                if n > 0 {
                    ctx.out.note(&format!(
                        "{n} rows of launchd's domain listings were not in a shape oyster reads and were skipped; a stack one of them names was asked for on its own"
                    ));
                }
                (Some(l), None)
            }
            Ok(Err(Unreadable(why))) => (None, Some(why)),
            Err(e) => (None, Some(format!("{e:#}"))),
        },
        _ => (None, None),
    };
    let mut rows = vec![];
    for name in names {
        let sub = if name == ctx.stack.name {
            None
        } else {
            Some(ctx.for_stack(&name)?)
        };
        let c = sub.as_ref().unwrap_or(ctx);
        let mut row = match &listings {
            Some(l) => model::collect_listed(c, l)?,
            None => model::collect(c)?,
        };
        if let Some(why) = &fallback {
            row.notes.push(format!(
                "the domain listing could not be used ({why}); launchd was asked for this job on its own"
            ));
        }
        rows.push(row);
    }
    if ctx.out.mode() == crate::output::Mode::Json {
        ctx.out.json(&List { stacks: rows });
        return Ok(ExitStatus::Success);
    }
    if rows.is_empty() {
        ctx.out
            .out("No Oysterun stack on this machine yet; `oyster setup` sets one up.");
        return Ok(ExitStatus::Success);
    }
    if print_table(ctx, &rows, wide) {
        ctx.out.note(
            "LOG paths are cut to fit the terminal; `oyster list --wide` shows them whole, and so does `oyster status STACK`",
        );
    }
    // Switched off in Login Items: the reason it is not loaded, with where to switch it on.
    for r in rows
        .iter()
        .filter(|r| r.login_item == Some(crate::agent::login_items::LoginItem::RequiresApproval))
    {
        if let Some(n) = r.notes.iter().find(|n| n.contains("Login Items")) {
            ctx.out.out_toned(Tone::Fail, &format!("{}: {n}", r.stack));
        }
    }
    for r in rows.iter().filter(|r| r.broken) {
        for n in r.notes.iter().filter(|n| n.starts_with("broken: ")) {
            ctx.out.out_toned(Tone::Fail, &format!("{}: {n}", r.stack));
        }
    }
    Ok(ExitStatus::Success)
}

fn cells(r: &AgentStatus) -> [String; 6] {
    [
        // A broken stack is marked where the eye starts reading.
        if r.broken {
            format!("{} (broken)", r.stack)
        } else {
            r.stack.clone()
        },
        model::word(r.summary),
        r.port.map_or_else(|| "-".into(), |p| p.to_string()),
        r.pid
            .filter(|_| r.running)
            .map_or_else(|| "-".into(), |p| p.to_string()),
        match (r.last_exit_code, r.last_signal) {
            (Some(c), _) => c.to_string(),
            (_, Some(s)) => format!("signal {s}"),
            _ => "-".into(),
        },
        r.log_path.clone(),
    ]
}

/// Prints the table; returns whether a LOG path was cut to fit.
fn print_table(ctx: &Context, rows: &[AgentStatus], wide: bool) -> bool {
    let mut table: Vec<[String; 6]> = rows.iter().map(cells).collect();
    let mut cut = false;
    // On a terminal too narrow for the whole row, the LOG path (the last, widest column) is
    // cut in its middle so the columns stay aligned (and said, with `--wide`); piped output
    // and `--wide` keep it whole.
    if let Some(term) = ctx.out.width().filter(|_| !wide) {
        let mut widths = HEAD.map(str::len);
        for row in &table {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let before_log: usize = widths[..5].iter().map(|w| w + 2).sum();
        let room = term.saturating_sub(before_log).max(20);
        for row in &mut table {
            // Cut as shown (home as `~`), or the cut keeps `/Users/n…` instead of the stack.
            let shown = ctx.out.human(&row[5]);
            row[5] = crate::output::wrap::cut_middle(&shown, room);
            cut |= row[5] != shown;
        }
    }
    let mut widths = HEAD.map(str::len);
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    ctx.out.out_row(Tone::Heading, &line(HEAD.to_vec()));
    for (row, r) in table.iter().zip(rows) {
        let text = line(row.iter().map(String::as_str).collect());
        let t = if r.broken {
            Tone::Fail
        } else {
            tone(r.summary)
        };
        ctx.out.out_row(t, &text);
    }
    cut
}
