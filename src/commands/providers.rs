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
use crate::provider::status::ProviderStatus;
use crate::ExitStatus;

#[derive(Serialize)]
struct Rows {
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
            show(rows, json)
        }
        ProvidersCommand::Status { json } => {
            ctx.announce_overrides();
            let doc = ConfigDoc::load(&ctx.stack.config_path())?;
            let rows: Vec<_> = registry::PROVIDERS
                .iter()
                .map(|p| doc.status(p, &ctx.search))
                .collect();
            show(rows, json)
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
    let path = crate::provider::resolve::normalize(&expanded);
    // Its directory goes on the Host's PATH, which a `:` would split and a control character
    // cannot enter (CONTRACT.md §3, §9): refused here rather than by every later run.
    let dir = path.parent().map(|d| d.to_string_lossy().into_owned());
    if let Some(bad) = dir
        .as_deref()
        .and_then(|d| d.chars().find(|c| *c == ':' || c.is_control()))
    {
        return Err(Invalid::new(format!(
            "the directory of {} holds {}, so it cannot go on the Host's PATH",
            path.display(),
            if bad == ':' {
                "a `:` (PATH's separator)".to_owned()
            } else {
                format!("the control character U+{:04X}", bad as u32)
            }
        ))
        .hint(format!(
            "install {} in a directory without `:` or control characters (or link it from one), then give that path",
            p.display_name
        )));
    }
    Ok(Some(path))
}

fn save(
    ctx: &Context,
    p: &'static Provider,
    edit: impl FnOnce(&mut ConfigDoc, &mut Vec<config::Change>),
) -> anyhow::Result<ExitStatus> {
    ctx.announce_overrides();
    let _lock = ctx.lock_stack(&format!("providers set {}", p.id))?;
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

fn show(rows: Vec<ProviderStatus>, json: bool) -> anyhow::Result<ExitStatus> {
    if json {
        crate::output::printer().json(&Rows { providers: rows });
        return Ok(ExitStatus::Success);
    }
    for r in rows {
        let what = match (&r.resolved, &r.reason) {
            (Some(path), _) => format!(
                "{path}  (source: {}, intent: {})",
                r.source.map_or("-", Source::as_str),
                r.intent.as_str()
            ),
            (None, reason) => format!(
                "{}  (intent: {})",
                reason.as_deref().unwrap_or(""),
                r.intent.as_str()
            ),
        };
        crate::say!("{:<8} {:<12} {what}", r.provider, r.state);
    }
    Ok(ExitStatus::Success)
}
