//! `oyster config sync|show`.

use anyhow::Context as _;
use serde_json::Value;

use crate::cli::ConfigCommand;
use crate::config::{self, Change, ConfigDoc};
use crate::context::Context;
use crate::output::redact;
use crate::ExitStatus;

pub fn run(ctx: &Context, cmd: ConfigCommand) -> anyhow::Result<ExitStatus> {
    ctx.announce_overrides();
    match cmd {
        ConfigCommand::Sync { .. } => {
            crate::host::plan::refuse_managed(&ctx.into(), &Default::default())?;
            let _lock = ctx.lock_stack("config sync")?;
            let changes = sync(ctx)?;
            crate::config::report(&ctx.stack.config_path(), &changes);
            Ok(ExitStatus::Success)
        }
        ConfigCommand::Show { .. } => {
            let path = ctx.stack.config_path();
            let doc = ConfigDoc::load(&path)?;
            let shown = redact::redact_value(&Value::Object(doc.value().clone()));
            let text = serde_json::to_string_pretty(&shown)?;
            ctx.out.show(&shown, || {
                let state = if doc.exists() {
                    ""
                } else {
                    " (does not exist yet)"
                };
                ctx.out
                    .out(&format!("# {}{state}; secrets redacted", path.display()));
                ctx.out.out(&text);
                for line in managed_lines(ctx) {
                    ctx.out.out(&line);
                }
            });
            Ok(ExitStatus::Success)
        }
    }
}

/// What the organization's profile forces for this user and stack, one `# managed:` line per
/// value (and one per value left out), for `config show`, `status` and `providers status`.
pub fn managed_lines(ctx: &Context) -> Vec<String> {
    let m = crate::host::plan::managed(ctx);
    let mut lines: Vec<String> = m
        .entries
        .iter()
        .map(|e| {
            format!(
                "# managed: {} = {} (forced by {}; config.json follows it)",
                e.key,
                e.value,
                e.file.display()
            )
        })
        .collect();
    lines.extend(
        m.warnings
            .iter()
            .map(|w| format!("# managed value left out: {w}")),
    );
    lines
}

/// The stack config sync: migrate, merge every provider, record `--port`; writes on change only.
pub fn sync(ctx: &Context) -> anyhow::Result<Vec<Change>> {
    let path = ctx.stack.config_path();
    let ((), changes) = config::update(&path, |doc, changes| {
        crate::host::plan::sync(ctx, doc, changes);
        Ok(())
    })
    .with_context(|| format!("syncing {}", path.display()))?;
    Ok(changes)
}
