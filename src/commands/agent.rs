//! `oyster agent …`: the LaunchAgent plist and (with the lifecycle) the launchd job.

use std::io::Write;

use crate::cli::AgentCommand;
use crate::commands::Ctx;
use crate::plan::{self, Writes};
use crate::ExitStatus;

pub fn run(ctx: &Ctx, cmd: AgentCommand) -> anyhow::Result<ExitStatus> {
    ctx.announce_overrides();
    match cmd {
        AgentCommand::Print { host } => {
            let plan = plan::plan(ctx, &host, Writes::None)?;
            std::io::stdout().lock().write_all(&plan.plist)?;
            Ok(ExitStatus::Success)
        }
        AgentCommand::Regenerate {
            host,
            dry_run: true,
            ..
        } => {
            let plan = plan::plan(ctx, &host, Writes::None)?;
            let path = ctx.stack.plist_path();
            let old = plan
                .installed
                .as_ref()
                .map(|i| String::from_utf8_lossy(&i.bytes).into_owned())
                .unwrap_or_default();
            let new = String::from_utf8_lossy(&plan.plist);
            for c in &plan.changes {
                eprintln!("would change config: {c}");
            }
            if !plan.plist_changed() {
                println!("{}: unchanged", ctx.stack.tilde(&path));
                return Ok(ExitStatus::Success);
            }
            let shown = path.display().to_string();
            let diff = similar::TextDiff::from_lines(old.as_str(), new.as_ref());
            let mut out = std::io::stdout().lock();
            write!(
                out,
                "{}",
                diff.unified_diff()
                    .context_radius(3)
                    .header(&format!("a{shown}"), &format!("b{shown}"))
            )?;
            Ok(ExitStatus::Success)
        }
        AgentCommand::Regenerate {
            host, no_restart, ..
        } => {
            let plan = plan::plan(ctx, &host, Writes::Sync)?;
            crate::commands::config::report(ctx, &plan.changes);
            let path = ctx.stack.plist_path();
            let wrote = crate::agentplist::write(&path, &plan.plist, &ctx.stack.log_dir)?;
            let shown = ctx.stack.tilde(&path);
            println!("{shown}: {}", if wrote { "written" } else { "unchanged" });
            if wrote && !no_restart {
                println!(
                    "The running Host keeps its old definition until it is reloaded: run \
                     `oyster agent restart --stack {}`.",
                    ctx.stack.name
                );
            }
            Ok(ExitStatus::Success)
        }
    }
}
