//! doctor's rows about the service manager that runs the Host: systemd's, a unit whose manager
//! does not answer, or the plist's and launchd's.

use super::files::{plist_check, plist_file_checks};
use super::launchd::launchd_checks;
use super::{check, systemd, Check, Level};
use crate::context::Context;
use crate::host::plan::Plan;

/// The service manager's checks: systemd's, a unit whose manager does not answer, or the
/// plist's and launchd's; and the pids the manager has for the stack, from the same read.
pub(super) fn manager_checks(
    ctx: &Context,
    systemd: Option<&crate::systemd::Systemctl>,
    installed: Option<&crate::host::plist::Installed>,
    plan: Option<&Plan>,
) -> (Vec<Check>, Vec<u32>) {
    let unreachable = crate::unit::refuse_unreachable(ctx).err();
    match (systemd, unreachable) {
        (Some(sc), _) => systemd::systemd_checks(ctx, sc),
        // A unit on disk whose manager does not answer: that, not launchd's absence.
        (None, Some(e)) => (
            vec![check(
                "service manager",
                Level::Fail,
                e.why().to_owned(),
                e.hint,
            )],
            vec![],
        ),
        // The job as `status` reads it: one read for every row below.
        (None, None) => match crate::agent::status::collect(ctx) {
            Ok(st) => {
                let mut checks = vec![plist_check(ctx, &st, installed, plan)];
                checks.extend(plist_file_checks(ctx, installed));
                checks.extend(launchd_checks(ctx, &st));
                (checks, st.seen.manager_pids)
            }
            Err(e) => (
                vec![check("launchd", Level::Fail, format!("{e:#}"), None)],
                vec![],
            ),
        },
    }
}
