//! `oyster config sync|show`.

use anyhow::Context as _;
use serde_json::Value;

use crate::config::{self, Change, ConfigDoc};
use crate::context::Context;
use crate::output::redact;
use crate::ExitStatus;

/// `oyster config sync [--port N]`.
pub fn sync_verb(ctx: &Context, port: Option<u16>) -> anyhow::Result<ExitStatus> {
    ctx.announce_overrides();
    // A --port the organization forces otherwise is refused before anything is written.
    crate::host::plan::refuse_managed(
        &ctx.into(),
        &crate::host::plan::HostInputs {
            port,
            ..Default::default()
        },
    )?;
    // A port another stack's installed job owns, running or stopped (issue 38 item 4).
    if let Some(port) = port {
        crate::manager::refuse_claimed_port(ctx, port)?;
    }
    // As a refusal's hint repeats it: the options too (run without --port it would do else).
    let what = match port {
        Some(p) => format!("config sync --port {p}"),
        None => "config sync".to_owned(),
    };
    let _lock = ctx.lock_stack(&what)?;
    let changes = sync(ctx, port)?;
    crate::config::report(&ctx.stack.config_path(), &changes, ctx.reporter());
    if let Some(port) = port {
        super::agent::preflight::warn_production_port(ctx, port);
    }
    if changes.is_empty() {
        return Ok(ExitStatus::Success);
    }
    // The config changed, the running Host did not: say which port it still answers on.
    let installed = crate::host::plist::read_installed(&ctx.stack.plist_path(), ctx.reporter());
    match (port, installed.as_ref().and_then(|i| i.env.port())) {
        // Said as it is: a Host answering on the old port runs there; one that does not (a
        // stopped, unloaded or crashing one) is started on the new port by `start`.
        (Some(new), Some(old)) if new != old => {
            if crate::verify::health(old, std::time::Duration::from_millis(500)) == Some(200) {
                ctx.out.out(&format!(
                    "The Host still runs on port {old}: run `{}` to move it to port {new}.",
                    ctx.hint_cmd("regenerate")
                ));
            } else {
                ctx.out.out(&format!(
                    "The Host is not running (its LaunchAgent still says port {old}); `{}` starts it on port {new}.",
                    ctx.hints().cmd("start")
                ));
            }
        }
        _ => super::providers::refresh_hint(ctx),
    }
    Ok(ExitStatus::Success)
}

/// `oyster config show`: the stack's config as every command resolves it, the
/// organization's forced values in it (the next sync writes them into the file), each marked.
pub fn show(ctx: &Context) -> anyhow::Result<ExitStatus> {
    // Showing a stack that does not exist is a typo: refused with the nearest name.
    crate::host::stack::require_known(&ctx.stack, &ctx.env.stack_env())?;
    ctx.announce_overrides();
    let path = ctx.stack.config_path();
    let file = ConfigDoc::load(&path)?;
    let managed = crate::host::plan::managed(ctx);
    let doc = managed.applied(file.clone());
    let shown = redact::redact_value(&Value::Object(doc.value().clone()));
    let text = serde_json::to_string_pretty(&shown)?;
    let mut document = shown;
    if let Value::Object(map) = &mut document {
        map.extend(managed_marks(&managed));
    }
    ctx.out.show(&document, || {
        let state = if !file.exists() {
            " (does not exist yet)"
        } else if file.value() != doc.value() {
            "; with the organization's forced values, which the next sync writes into it"
        } else {
            ""
        };
        // A document, not prose: never re-flowed to the terminal, or a string value is broken
        // across lines (invalid JSON when copied) and a comment's continuation loses its `#`.
        ctx.out
            .out_unwrapped(&format!("# {}{state}; secrets redacted", path.display()));
        ctx.out.out_unwrapped(&text);
        for line in managed_lines(ctx) {
            ctx.out.out_unwrapped(&line);
        }
    });
    Ok(ExitStatus::Success)
}

/// `config show --json`'s marks, only when the profile forces or leaves out anything (keys no
/// config.json holds, so a script tells them from the file's own): `$managed` maps each
/// forced setting to the profile's file, `$managed_left_out` says each value left out, why.
fn managed_marks(m: &crate::config::managed::Managed) -> Vec<(String, Value)> {
    let mut marks = vec![];
    if !m.entries.is_empty() {
        let forced = m.entries.iter().map(|e| {
            (
                e.key.clone(),
                Value::String(e.file.to_string_lossy().into()),
            )
        });
        marks.push(("$managed".to_owned(), Value::Object(forced.collect())));
    }
    if !m.warnings.is_empty() {
        let why = m
            .warnings
            .iter()
            .map(|w| Value::String(w.to_string()))
            .collect();
        marks.push(("$managed_left_out".to_owned(), Value::Array(why)));
    }
    marks
}

/// What the organization's profile forces for this user and stack, one `# managed:` line per
/// value (and one per value left out, with why), for `config show`, `status` and `providers
/// status`.
pub fn managed_lines(ctx: &Context) -> Vec<String> {
    let m = crate::host::plan::managed(ctx);
    let mut lines: Vec<String> = m
        .entries
        .iter()
        .map(|e| {
            format!(
                "# managed: {} = {} (forced by {}; every command uses it, config.json gets it at the next sync)",
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
pub fn sync(ctx: &Context, port: Option<u16>) -> anyhow::Result<Vec<Change>> {
    let path = ctx.stack.config_path();
    let ((), changes) = config::update(&path, ctx.reporter(), |doc, changes| {
        crate::host::plan::sync(ctx, port, doc, changes);
        Ok(())
    })
    .with_context(|| format!("syncing {}", path.display()))?;
    Ok(changes)
}
