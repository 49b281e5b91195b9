//! `oyster agent start` (and `oyster start`): enable the label, regenerate the plist as install
//! does, load and verify — it undoes `stop` exactly.

use super::preflight::{self, Launchd};
use crate::context::Context;
use crate::invocation::Starting;
use crate::ExitStatus;

pub fn run(ctx: &Context, args: &Starting) -> anyhow::Result<ExitStatus> {
    preflight::require_known(ctx)?;
    if !preflight::is_installed(ctx)? {
        return Err(preflight::not_installed_or_direct(ctx, "start").into());
    }
    preflight::run(
        ctx,
        "agent start",
        &args.host,
        Launchd::Required,
        |mut p| {
            let mut agent = p.job()?;
            // Asked again under the lock: an `uninstall` this run waited for may have removed it.
            if !preflight::is_installed(ctx)? {
                return Err(preflight::not_installed(ctx, "start").into());
            }
            let outcome = agent.start(&p.plan, args.timing)?;
            preflight::report(ctx, agent.kind(), &p.plan, &outcome);
            Ok(ExitStatus::Success)
        },
    )
}
