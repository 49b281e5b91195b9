//! `oyster doctor --all`: every stack on this machine, one report each (as `status --all`);
//! exit 1 when any check of any stack failed.

use serde::Serialize;

use super::{print, report, Report};
use crate::context::Context;
use crate::ExitStatus;

#[derive(Serialize)]
struct All {
    ok: bool,
    stacks: Vec<Report>,
}

pub fn run_all(ctx: &Context, probe: bool) -> anyhow::Result<ExitStatus> {
    let names = crate::host::stack::discover(&ctx.env.stack_env());
    let mut stacks = vec![];
    for name in &names {
        let sub = ctx.for_stack(name)?;
        stacks.push(report(&sub, probe));
    }
    let all = All {
        ok: stacks.iter().all(|r| r.ok),
        stacks,
    };
    ctx.out.show(&all, || {
        if all.stacks.is_empty() {
            ctx.out
                .out("No Oysterun stack on this machine yet; `oyster setup` sets one up.");
        }
        for (i, r) in all.stacks.iter().enumerate() {
            if i > 0 {
                ctx.out.out("");
            }
            ctx.out
                .out_toned(crate::output::Tone::Heading, &format!("stack {}", r.stack));
            let sub = ctx.for_stack(&r.stack);
            print(sub.as_ref().unwrap_or(ctx), r);
        }
    });
    Ok(if all.ok {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
