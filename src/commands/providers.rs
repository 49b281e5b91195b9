//! `oyster providers resolve|set|auto|status`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;
use serde_json::Value;

use crate::cli::ProvidersCommand;
use crate::commands::{print_json, Ctx};
use crate::config::{self, ConfigDoc};
use crate::error::Invalid;
use crate::output::redact;
use crate::provider::registry::{self, Provider};
use crate::provider::resolve::{Intent, Source};
use crate::ExitStatus;

/// One provider's row in `resolve`, `status` and `doctor` (CONTRACT.md "Machine-readable shapes").
#[derive(Debug, Serialize)]
pub struct ProviderRow {
    pub provider: &'static str,
    pub intent: Intent,
    pub command: Value,
    pub resolved: Option<String>,
    pub source: Option<Source>,
    pub state: &'static str,
    pub reason: Option<String>,
    pub authentication: &'static str,
}

#[derive(Serialize)]
struct Rows {
    providers: Vec<ProviderRow>,
}

/// Builds a row from the config as it is and resolution as it finds things now.
pub fn row(ctx: &Ctx, doc: &ConfigDoc, p: &'static Provider) -> ProviderRow {
    let intent = doc.intent(p);
    let r = doc.resolve(p, &ctx.search);
    let state = match (intent, &r.resolved) {
        (Intent::Disabled, _) => "disabled",
        (_, Some(_)) => "available",
        (_, None) => "unavailable",
    };
    ProviderRow {
        provider: p.id,
        intent,
        command: doc
            .value()
            .get(p.command_key)
            .cloned()
            .unwrap_or(Value::Null),
        resolved: r.resolved.map(|p| p.to_string_lossy().into_owned()),
        source: r.source,
        state,
        reason: r.reason,
        // Discovery never authenticates, so there is nothing else to report.
        authentication: "not_checked",
    }
}

/// The same row with the home directory shown as `~`.
pub fn redacted(home: &Path, mut row: ProviderRow) -> ProviderRow {
    row.command = redact::redact_value(home, &row.command);
    row.resolved = row.resolved.map(|s| redact::tilde(home, Path::new(&s)));
    row.reason = row.reason.map(|s| redact::tilde_text(home, &s));
    row
}

pub fn run(ctx: &Ctx, cmd: ProvidersCommand) -> anyhow::Result<ExitStatus> {
    match cmd {
        ProvidersCommand::Resolve { providers, json } => {
            let list = registry::lookup_all(&providers)?;
            ctx.announce_overrides();
            let doc = ConfigDoc::load(&ctx.stack.config_path())?;
            let rows: Vec<_> = list.into_iter().map(|p| row(ctx, &doc, p)).collect();
            show(rows, json)
        }
        ProvidersCommand::Status { json } => {
            ctx.announce_overrides();
            let doc = ConfigDoc::load(&ctx.stack.config_path())?;
            let rows: Vec<_> = registry::PROVIDERS
                .iter()
                .map(|p| redacted(&ctx.stack.home, row(ctx, &doc, p)))
                .collect();
            show(rows, json)
        }
        ProvidersCommand::Set { provider, command } => {
            let p = registry::lookup(&provider)?;
            let command = command.into_string().map_err(|_| {
                Invalid(
                    "the command is not valid UTF-8; config.json can only hold UTF-8 paths".into(),
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
fn parse_command(ctx: &Ctx, p: &Provider, command: &str) -> Result<Option<PathBuf>, Invalid> {
    let trimmed = command.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    if trimmed.contains(['\n', '\r', '\0']) {
        return Err(Invalid(format!(
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
        return Err(Invalid(format!(
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
    ctx: &Ctx,
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
    let r = redacted(&ctx.stack.home, row(ctx, &doc, p));
    let where_ = ctx.stack.tilde(&path);
    if changes.is_empty() {
        println!("{where_}: unchanged");
    } else {
        println!("{where_}: updated");
    }
    let detail = match (&r.resolved, &r.reason) {
        (Some(path), _) => path.clone(),
        (None, Some(reason)) => reason.clone(),
        (None, None) => String::new(),
    };
    println!("{}: {} ({}) {}", p.id, r.state, r.intent.as_str(), detail);
    Ok(ExitStatus::Success)
}

fn show(rows: Vec<ProviderRow>, json: bool) -> anyhow::Result<ExitStatus> {
    if json {
        print_json(&Rows { providers: rows })?;
        return Ok(ExitStatus::Success);
    }
    let mut out = std::io::stdout().lock();
    for r in rows {
        let what = match (&r.resolved, &r.reason) {
            (Some(path), _) => format!(
                "{path}  (source: {}, intent: {})",
                r.source.map_or("-", source_name),
                r.intent.as_str()
            ),
            (None, reason) => format!(
                "{}  (intent: {})",
                reason.as_deref().unwrap_or(""),
                r.intent.as_str()
            ),
        };
        writeln!(out, "{:<8} {:<12} {what}", r.provider, r.state)?;
    }
    Ok(ExitStatus::Success)
}

pub fn source_name(s: Source) -> &'static str {
    match s {
        Source::Configured => "configured",
        Source::Path => "path",
        Source::Fallback => "fallback",
    }
}
