//! `oyster agent print`: the plist oyster would install, on stdout; nothing is written.

use crate::context::Context;
use crate::host::plan::{self, HostInputs};
use crate::ExitStatus;

pub fn run(ctx: &Context, host: &HostInputs) -> anyhow::Result<ExitStatus> {
    let plan = plan::plan(ctx, host)?;
    ctx.out.raw(&plan.plist);
    Ok(ExitStatus::Success)
}
