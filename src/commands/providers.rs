//! `oyster providers resolve|set|auto|status`.

use std::path::PathBuf;

use anyhow::Context as _;
use serde::Serialize;

use crate::cli::ProvidersCommand;
use crate::config::{self, ConfigDoc};
use crate::context::Context;
use crate::error::Invalid;
use crate::provider::registry::{self, Provider};
use crate::provider::resolve::Source;
use crate::provider::status::{ProviderStatus, State};
use crate::ExitStatus;

#[derive(Serialize)]
struct Rows {
    /// Every per-stack document names its stack and port (CONTRACT.md §10).
    stack: String,
    port: Option<u16>,
    providers: Vec<ProviderStatus>,
}

pub fn run(ctx: &Context, cmd: ProvidersCommand) -> anyhow::Result<ExitStatus> {
    match cmd {
        ProvidersCommand::Resolve { providers, json } => {
            let list = registry::lookup_all(&providers)?;
            ctx.announce_overrides();
            let doc = ConfigDoc::load(&ctx.stack.config_path())?;
            let rows: Vec<_> = list
                .into_iter()
                .map(|p| doc.status(p, &ctx.search))
                .collect();
            show(ctx, &doc, rows, json)
        }
        ProvidersCommand::Status { json } => {
            ctx.announce_overrides();
            let doc = ConfigDoc::load(&ctx.stack.config_path())?;
            let rows: Vec<_> = registry::PROVIDERS
                .iter()
                .map(|p| doc.status(p, &ctx.search))
                .collect();
            show(ctx, &doc, rows, json)
        }
        ProvidersCommand::Set { provider, command } => {
            let p = registry::lookup(&provider)?;
            let command = command.into_string().map_err(|_| {
                Invalid::new(
                    "the command is not valid UTF-8; config.json can only hold UTF-8 paths",
                )
            })?;
            let path = parse_command(ctx, p, &command)?;
            save(ctx, p, |doc, changes| {
                doc.save_preference(p, path.as_deref(), changes);
            })
        }
        ProvidersCommand::Auto { provider } => {
            let p = registry::lookup(&provider)?;
            save(ctx, p, |doc, changes| doc.set_auto(p, &ctx.search, changes))
        }
    }
}

/// Turns what the user typed into the path to store: `None` (blank) disables the provider.
fn parse_command(ctx: &Context, p: &Provider, command: &str) -> Result<Option<PathBuf>, Invalid> {
    let trimmed = command.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    if trimmed.contains(['\n', '\r', '\0']) {
        return Err(Invalid::new(format!(
            "the command for {} contains a line break or NUL; give a plain full path",
            p.id
        )));
    }
    let expanded = match trimmed.strip_prefix('~') {
        Some("") => ctx.stack.home.clone(),
        Some(rest) if rest.starts_with('/') => ctx.stack.home.join(&rest[1..]),
        _ => PathBuf::from(trimmed),
    };
    if !expanded.is_absolute() {
        return Err(Invalid::new(format!(
            "{trimmed:?} is not a full path. Give the full path to the {name} executable \
             (for example /opt/homebrew/bin/{bin} or ~/.local/bin/{bin}), or let oyster find it \
             with `oyster providers auto {id}`",
            name = p.display_name,
            bin = p.binary,
            id = p.id
        )));
    }
    Ok(Some(crate::provider::resolve::normalize(&expanded)))
}

fn save(
    ctx: &Context,
    p: &'static Provider,
    edit: impl FnOnce(&mut ConfigDoc, &mut Vec<config::Change>),
) -> anyhow::Result<ExitStatus> {
    ctx.announce_overrides();
    let path = ctx.stack.config_path();
    let (doc, changes) = config::update(&path, |doc, changes| {
        edit(doc, changes);
        Ok(doc.clone())
    })
    .with_context(|| format!("saving the {} command", p.id))?;
    let r = doc.status(p, &ctx.search);
    let where_ = path.display();
    if changes.is_empty() {
        crate::say!("{where_}: unchanged");
    } else {
        crate::say!("{where_}: updated");
    }
    let detail = match (&r.resolved, &r.reason) {
        (Some(path), _) => path.clone(),
        (None, Some(reason)) => reason.clone(),
        (None, None) => String::new(),
    };
    crate::say!("{}: {} ({}) {}", p.id, r.state, r.intent.as_str(), detail);
    Ok(ExitStatus::Success)
}

fn show(
    ctx: &Context,
    doc: &ConfigDoc,
    rows: Vec<ProviderStatus>,
    json: bool,
) -> anyhow::Result<ExitStatus> {
    if json {
        ctx.out.json(&Rows {
            stack: ctx.stack.name.clone(),
            port: doc.port().or(ctx.stack.default_port),
            providers: rows,
        });
        return Ok(ExitStatus::Success);
    }
    for r in rows {
        let what = match (&r.resolved, &r.reason) {
            (Some(path), _) => format!(
                "{path}  (source: {}, intent: {})",
                r.source.map_or("-", Source::as_str),
                r.intent.as_str()
            ),
            // "disabled  disabled by the user … (intent: disabled)" said it three times.
            (None, reason) if r.state == State::Disabled => reason
                .as_deref()
                .unwrap_or("")
                .strip_prefix("disabled ")
                .unwrap_or(reason.as_deref().unwrap_or(""))
                .to_owned(),
            (None, reason) => format!(
                "{}  (intent: {})",
                reason.as_deref().unwrap_or(""),
                r.intent.as_str()
            ),
        };
        crate::say!("{:<8} {:<12} {what}", r.provider, r.state.as_str());
    }
    Ok(ExitStatus::Success)
}
