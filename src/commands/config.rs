//! `oyster config sync|show`.

use anyhow::Context as _;
use serde_json::Value;

use crate::cli::ConfigCommand;
use crate::commands::{print_json, Ctx};
use crate::config::{self, Change, ConfigDoc};
use crate::output::redact;
use crate::ExitStatus;

pub fn run(ctx: &Ctx, cmd: ConfigCommand) -> anyhow::Result<ExitStatus> {
    ctx.announce_overrides();
    match cmd {
        ConfigCommand::Sync => {
            let changes = sync(ctx)?;
            report(ctx, &changes);
            Ok(ExitStatus::Success)
        }
        ConfigCommand::Show { json } => {
            let path = ctx.stack.config_path();
            let doc = ConfigDoc::load(&path)?;
            let shown = redact::redact_value(&ctx.stack.home, &Value::Object(doc.value().clone()));
            if !json {
                let state = if doc.exists() {
                    ""
                } else {
                    " (does not exist yet)"
                };
                println!("# {}{state}; secrets redacted", ctx.stack.tilde(&path));
            }
            print_json(&shown)?;
            Ok(ExitStatus::Success)
        }
    }
}

/// The stack config sync: migrate, merge every provider, record `--port`; writes on change only.
pub fn sync(ctx: &Ctx) -> anyhow::Result<Vec<Change>> {
    let path = ctx.stack.config_path();
    let ((), changes) = config::update(&path, |doc, changes| {
        crate::host::plan::sync(ctx, doc, changes);
        Ok(())
    })
    .with_context(|| format!("syncing {}", ctx.stack.tilde(&path)))?;
    Ok(changes)
}

/// Prints what a sync changed, home shown as `~`, secrets never (oyster owns no secret keys).
pub fn report(ctx: &Ctx, changes: &[Change]) {
    let path = ctx.stack.tilde(&ctx.stack.config_path());
    if changes.is_empty() {
        println!("{path}: unchanged");
        return;
    }
    println!("{path}: updated");
    for c in changes {
        let from = redact::redact_value(&ctx.stack.home, &c.from);
        let to = redact::redact_value(&ctx.stack.home, &c.to);
        println!("  {}: {from} -> {to}", c.key);
    }
}
