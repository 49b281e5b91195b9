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
            let _lock = ctx.lock_stack("config sync")?;
            let changes = sync(ctx)?;
            crate::config::report(&ctx.stack.config_path(), &changes);
            Ok(ExitStatus::Success)
        }
        ConfigCommand::Show { json, .. } => {
            let path = ctx.stack.config_path();
            let doc = ConfigDoc::load(&path)?;
            let shown = redact::redact_value(&Value::Object(doc.value().clone()));
            if json {
                ctx.out.json(&shown);
            } else {
                let state = if doc.exists() {
                    ""
                } else {
                    " (does not exist yet)"
                };
                crate::say!("# {}{state}; secrets redacted", path.display());
                let text = serde_json::to_string_pretty(&shown)?;
                crate::say!("{text}");
            }
            Ok(ExitStatus::Success)
        }
    }
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
