//! `oyster providers resolve|set|auto|status`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;

use crate::config::{self, ConfigDoc};
use crate::context::{Context, Worded};
use crate::error::Invalid;
use crate::invocation::ProvidersVerb;
use crate::provider::registry::{self, Provider};
use crate::provider::resolve::{Intent, Source};
use crate::provider::status::{ProviderStatus, State};
use crate::ExitStatus;

#[derive(Serialize)]
struct Rows {
    /// Every per-stack document names its stack and port (docs/behaviour.md §10).
    stack: String,
    port: Option<u16>,
    providers: Vec<ProviderStatus>,
}

pub fn run(ctx: &Context, cmd: ProvidersVerb) -> anyhow::Result<ExitStatus> {
    match cmd {
        ProvidersVerb::Resolve(providers) => {
            let list = registry::lookup_all(&providers)?;
            // Reading a stack that does not exist is a typo: refused with the nearest name.
            crate::host::stack::require_known(&ctx.stack, &ctx.env.stack_env())?;
            ctx.announce_overrides();
            let doc = resolved_config(ctx)?;
            let rows: Vec<_> = list.into_iter().map(|p| for_stack(ctx, &doc, p)).collect();
            show(ctx, &doc, rows)
        }
        ProvidersVerb::Status => {
            crate::host::stack::require_known(&ctx.stack, &ctx.env.stack_env())?;
            ctx.announce_overrides();
            let doc = resolved_config(ctx)?;
            let locked = crate::agent::status::runs_in_background_session(ctx);
            let rows: Vec<_> = registry::PROVIDERS
                .iter()
                .map(|p| {
                    let mut row = for_stack(ctx, &doc, p);
                    // The Host runs where the login keychain is locked: a provider that
                    // keeps its login there is not ready as if nothing were wrong.
                    if locked && p.login_in_keychain {
                        row.authentication =
                            crate::provider::status::Authentication::KeychainLocked;
                    }
                    row
                })
                .collect();
            // `status` says every documented field (authentication included), unlike `resolve`.
            if ctx.out.mode() != crate::output::Mode::Json {
                super::provider_status::print(ctx, &rows);
                let managed = super::config::managed_lines(ctx);
                if !managed.is_empty() {
                    ctx.out.out("");
                }
                for line in managed {
                    ctx.out.out(line.trim_start_matches("# "));
                }
                return Ok(ExitStatus::Success);
            }
            show(ctx, &doc, rows)
        }
        ProvidersVerb::Set { provider, command } => {
            let p = registry::lookup(&provider)?;
            let command = command.into_string().map_err(|_| {
                Invalid::new(
                    "the command is not valid UTF-8; config.json can only hold UTF-8 paths",
                )
            })?;
            let path = parse_command(ctx, p, &command)?;
            let what = format!(
                "providers set {} {}",
                p.id,
                crate::cli::values::shell_word(&command)
            );
            save(ctx, p, &what, |doc, changes| {
                doc.save_preference(p, path.as_deref(), changes);
            })
        }
        ProvidersVerb::Auto(provider) => {
            let p = registry::lookup(&provider)?;
            let what = format!("providers auto {}", p.id);
            save(ctx, p, &what, |doc, changes| {
                doc.set_auto(p, &ctx.search, changes)
            })
        }
    }
}

/// The stack's config as every command resolves it: the file with the organization's forced
/// values in it (which the next sync writes there).
pub(crate) fn resolved_config(ctx: &Context) -> Result<ConfigDoc, crate::config::ConfigError> {
    let doc = ConfigDoc::load(&ctx.stack.config_path())?;
    Ok(crate::host::plan::managed(ctx).applied(doc))
}

/// `p`'s status in `doc`, its reason worded for this stack: its commands, run as shown, change
/// this stack's config, not production's.
pub(crate) fn status(ctx: &Context, doc: &ConfigDoc, p: &'static Provider) -> ProviderStatus {
    let mut status = doc.status(p, &ctx.search);
    status.reason = status.unresolved.as_ref().map(|u| u.words(&ctx.hints()));
    status
}

/// [`status`], and for a provider the organization's profile decides, the fix is the
/// administrator's (`providers set`/`auto` would be refused).
pub(crate) fn for_stack(ctx: &Context, doc: &ConfigDoc, p: &'static Provider) -> ProviderStatus {
    let mut status = status(ctx, doc, p);
    let managed = crate::host::plan::managed(ctx);
    let forced = managed.provider(status.provider.as_str());
    status.managed = forced
        .first()
        .map(|e| e.file.to_string_lossy().into_owned());
    if let (Some(u), Some(e)) = (&status.unresolved, forced.first()) {
        // Disabled by the profile, not by the user.
        let why = match status.state {
            State::Disabled => "disabled by your organization".into(),
            _ => u.why(),
        };
        status.reason = Some(format!(
            "{why}; {} is forced by your organization ({}): ask your administrator to change it",
            e.key,
            e.file.display()
        ));
    }
    status
}

/// Turns what the user typed into the path to store: `None` (blank) disables the provider.
fn parse_command(ctx: &Context, p: &Provider, command: &str) -> Result<Option<PathBuf>, Invalid> {
    let trimmed = command.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    if let Some(c) = trimmed.chars().find(|c| c.is_control()) {
        return Err(Invalid::new(format!(
            "the COMMAND given to `oyster providers set {}` contains the control character U+{:04X}; \
             its directory goes on the Host's PATH and into the plist, which cannot hold it",
            p.id, c as u32
        ))
        .hint("give a plain full path"));
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
             with `{auto}`",
            name = p.display_name,
            bin = p.binary,
            auto = ctx.hints().flag_cmd(&format!("providers auto {}", p.id))
        )));
    }
    let path = crate::provider::resolve::normalize(&expanded);
    // docs/behaviour.md §9: refused where it enters, not later when the PATH is generated.
    if let Some(dir) = path.parent().filter(|d| d.to_string_lossy().contains(':')) {
        return Err(Invalid::new(format!(
            "the COMMAND given to `oyster providers set {}` lives in {}, whose name holds `:`; that \
             directory goes on the Host's PATH, where `:` separates entries",
            p.id,
            dir.display()
        ))
        .hint("move or link the executable to a directory without `:` and give that path"));
    }
    Ok(Some(path))
}

/// `what`: the command as the user can run it again (a refusal's hint, the lock's holder line).
fn save(
    ctx: &Context,
    p: &'static Provider,
    what: &str,
    mut edit: impl FnMut(&mut ConfigDoc, &mut Vec<config::Change>),
) -> anyhow::Result<ExitStatus> {
    ctx.announce_overrides();
    // A provider the profile decides is the organization's: refused before any lock or write.
    if let Some(e) = crate::host::plan::managed(ctx)
        .provider(p.id.as_str())
        .first()
    {
        return Err(crate::config::managed::refusal(&format!("the {} command", p.id), e).into());
    }
    let _lock = ctx.lock_stack(what)?;
    let path = ctx.stack.config_path();
    let (doc, changes) = config::update(&path, ctx.reporter(), |doc, changes| {
        edit(doc, changes);
        Ok(doc.clone())
    })
    .with_context(|| format!("saving the {} command", p.id))?;
    let r = status(ctx, &doc, p);
    let where_ = path.display();
    if changes.is_empty() {
        ctx.out.out(&format!("{where_}: unchanged"));
    } else {
        ctx.out.out(&format!("{where_}: updated"));
    }
    let said = match (r.intent, &r.resolved, &r.unresolved) {
        (Intent::Disabled, _, _) => format!(
            "disabled: the Host gets no {}, and nothing looks for it (`{}` undoes this)",
            p.id,
            ctx.hints().flag_cmd(&format!("providers auto {}", p.id))
        ),
        (intent, Some(found), _) => format!("{intent}, available at {found}"),
        // A manual command's fix follows as a warning; say only why here.
        (Intent::Manual, None, Some(u)) => format!("manual, unavailable: {}", u.why()),
        (intent, None, _) => format!(
            "{intent}, unavailable: {}",
            r.reason.as_deref().unwrap_or("not found")
        ),
    };
    ctx.out.out(&format!("{}: {said}", p.id));
    // A saved manual path that is not an executable stays saved (seed 000: a broken manual
    // command is an actionable unavailable state), but nobody should miss it.
    if let (Intent::Manual, Some(cmd)) = (r.intent, r.command.as_str()) {
        if let Err(why) = crate::provider::resolve::check_executable(Path::new(cmd)) {
            ctx.out.warn(&format!(
                "{cmd} {why}; it is saved as {}'s manual command anyway, and {} stays unavailable until it is an executable file (or `{}`)",
                p.id,
                p.id,
                ctx.hints().flag_cmd(&format!("providers auto {}", p.id))
            ));
        }
    }
    if !changes.is_empty() {
        refresh_hint(ctx);
    }
    Ok(ExitStatus::Success)
}

/// Whether the running Host must be refreshed to see a saved change, and how.
pub(super) fn refresh_hint(ctx: &Context) {
    let st = &ctx.stack;
    // The job's definition under this machine's manager (the unit under systemd, whose Host
    // writes the same pid file a directly started one does).
    let job = match ctx.manager() {
        Ok(crate::context::Manager::Systemd(_)) => "systemd unit",
        _ => "LaunchAgent",
    };
    if crate::manager::definition(ctx).exists() {
        match crate::host::plan::plan(ctx, &Default::default())
        {
            Ok(plan) if !crate::manager::definition_changed(ctx, &plan) => ctx.out.out(&format!("The {job} already matches; the Host needs no refresh.")),
            Ok(_) => ctx.out.out(&format!(
                "The Host still runs with the old environment: run `{}` to give it the change.",
                ctx.hint_cmd("regenerate")
            )),
            Err(e) => ctx.out.out(&format!(
                "Run `{}` to give the Host the change (whether it needs one could not be checked: {e:#}).",
                ctx.hint_cmd("regenerate")
            )),
        }
    } else if st.pid_path().exists() {
        ctx.out.out(&format!(
            "A directly started Host sees the change after `{}` and `{}`.",
            ctx.hints().cmd("host stop"),
            ctx.hints().cmd("host start")
        ));
    } else {
        ctx.out.out(&format!(
            "No Host is set up for stack {} yet; `{}` uses the change.",
            st.name,
            ctx.hints().cmd("setup")
        ));
    }
}

fn show(ctx: &Context, doc: &ConfigDoc, rows: Vec<ProviderStatus>) -> anyhow::Result<ExitStatus> {
    if ctx.out.mode() == crate::output::Mode::Json {
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
        ctx.out.out(&format!(
            "{:<8} {:<12} {what}",
            r.provider,
            r.state.as_str()
        ));
    }
    Ok(ExitStatus::Success)
}
