//! `oyster agent print`: the plist oyster would install, on stdout; nothing is written.

use crate::cli::HostArgs;
use crate::context::Context;
use crate::host::plan::{self, Writes};
use crate::ExitStatus;

pub fn run(ctx: &Context, host: &HostArgs) -> anyhow::Result<ExitStatus> {
    let plan = plan::plan(ctx, &host.inputs(), Writes::None)?;
    ctx.out.raw(&plan.plist);
    Ok(ExitStatus::Success)
}
