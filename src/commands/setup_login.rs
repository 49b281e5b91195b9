//! Setup's Host login, as the user meets it: the plan's `login:` line, the hidden prompt asked
//! twice on a terminal, and setup's last line, which says "Setup complete." only when somebody
//! can log in to the Host.

use std::io::IsTerminal;

use crate::config::login::HostLogin;
use crate::config::ConfigDoc;
use crate::context::Context;
use crate::invocation::Setup;
use crate::provider::registry::{Provider, PROVIDERS};
use crate::provider::resolve::Intent;
use crate::provider::status::State;
use crate::setup::login::{self, Password};
use crate::setup::{NewLogin, SetupPlan};

/// How often the two typings may differ before setup gives up (nothing changed).
const TRIES: usize = 3;

/// What the login step decided before anything is written.
pub enum Decided {
    /// Write this login with the rest of setup's merge.
    Set(NewLogin),
    /// Leave the login as it is (set already, or nothing to set it with).
    Keep,
    /// The user cancelled at the prompt: nothing may change.
    Cancelled,
}

/// Whether setup would ask for the password here: a terminal, no `--password-stdin`, no login
/// set, and a root whose password module oyster can run.
fn would_ask(args: &Setup, sp: &SetupPlan) -> bool {
    !args.password_stdin
        && HostLogin::of(sp.plan.doc.value()) == HostLogin::NotConfigured
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && login::module(&sp.plan.root).is_ok()
}

/// The plan's `login:` line.
pub fn plan_line(args: &Setup, sp: &SetupPlan) -> String {
    let state = HostLogin::of(sp.plan.doc.value());
    let user = HostLogin::user(sp.plan.doc.value());
    match (args.password_stdin, state) {
        (true, _) => format!("set from stdin (--password-stdin), user {user}"),
        (false, HostLogin::Configured) => format!("configured (kept), user {user}"),
        _ if would_ask(args, sp) => {
            format!("not set; setup asks for the Host password (user {user})")
        }
        _ => match login::module(&sp.plan.root) {
            Ok(_) => "not set (no terminal to ask on; --password-stdin sets it)".to_owned(),
            Err(why) => format!("not set: {why}"),
        },
    }
}

/// The login to write: hashed from stdin's password, or from the one typed twice at a hidden
/// prompt; nothing written yet either way.
pub fn decide(
    ctx: &Context,
    args: &Setup,
    sp: &SetupPlan,
    piped: Option<Password>,
) -> anyhow::Result<Decided> {
    let password = match piped {
        Some(p) => p,
        None if would_ask(args, sp) => match prompt_twice(ctx)? {
            Some(p) => p,
            None => return Ok(Decided::Cancelled),
        },
        None => return Ok(Decided::Keep),
    };
    let hash = login::hash(&sp.plan.node.path, &sp.plan.root, &password)?;
    Ok(Decided::Set(NewLogin {
        user: HostLogin::user(sp.plan.doc.value()),
        hash,
    }))
}

/// Asks for the password, hidden, and again to confirm; `None` when the user cancelled (EOF,
/// Ctrl-C) or the two typings differed [`TRIES`] times.
fn prompt_twice(ctx: &Context) -> anyhow::Result<Option<Password>> {
    let _guard = crate::sys::signal::InterruptGuard::install();
    ctx.out.out(&format!(
        "The Host needs a login password (for the dashboard and the app; user {}).",
        crate::config::login::DEFAULT_USER
    ));
    for _ in 0..TRIES {
        let Some(first) = hidden(ctx, "Host password: ")? else {
            return Ok(None);
        };
        let first = match Password::new(first) {
            Ok(p) => p,
            Err(e) => {
                ctx.out.out(&format!(
                    "{}; type one, or press Ctrl-C to cancel.",
                    e.why()
                ));
                continue;
            }
        };
        let Some(again) = hidden(ctx, "Again, to confirm: ")? else {
            return Ok(None);
        };
        if first.matches(&again) {
            return Ok(Some(first));
        }
        ctx.out.out("The two passwords differ; try again.");
    }
    ctx.out
        .out(&format!("The passwords differed {TRIES} times."));
    Ok(None)
}

/// One hidden line from the terminal; `None` on EOF or an interrupt.
fn hidden(ctx: &Context, prompt: &str) -> anyhow::Result<Option<String>> {
    ctx.out.out_inline(prompt);
    let line = {
        let _quiet = crate::sys::tty::NoEcho::new();
        super::setup::read_answer()?
    };
    if line.is_none() {
        ctx.out.raw(b"\n");
    }
    Ok(line.map(|l| l.strip_suffix('\r').map(str::to_owned).unwrap_or(l)))
}

/// Every provider problem the set-up Host has, named at the end of setup with its fix: a
/// manual command that points at nothing, a provider not installed, one just installed that
/// needs its own login first.
pub fn provider_problems(ctx: &Context, installed: &[&'static Provider]) {
    let Ok(doc) = ConfigDoc::load(&ctx.stack.config_path()) else {
        return;
    };
    let h = ctx.hints();
    for p in PROVIDERS {
        let status = super::providers::for_stack(ctx, &doc, p);
        let problem = match (status.state, status.intent) {
            (State::Available, _) if installed.iter().any(|i| i.id == p.id) => format!(
                "{} was just installed: sign in once by running `{}` in a terminal before the Host uses it",
                p.display_name, p.binary
            ),
            (State::Unavailable, Intent::Manual) => format!(
                "{}: {}; fix: `{}` or `{}`",
                p.id,
                status.unresolved.as_ref().map_or(String::new(), |u| u.why()),
                h.flag_cmd(&format!("providers set {} /full/path", p.id)),
                h.flag_cmd(&format!("providers auto {}", p.id))
            ),
            (State::Unavailable, _) => format!(
                "{} is not installed: the Host cannot use it until it is (`{}` installs it; `{}` stops this note)",
                p.display_name,
                h.cmd("setup --install-providers"),
                h.flag_cmd(&format!("providers set {} \"\"", p.id))
            ),
            _ => continue,
        };
        ctx.out.said(&format!("provider: {problem}"));
    }
}

/// Setup's last line: "Setup complete." only when the Host has a login; else what is missing
/// and the exact command that sets it.
pub fn ending(ctx: &Context, args: &Setup, sp_root: &std::path::Path) {
    let config = ctx.stack.config_path();
    let state = ConfigDoc::load(&config).map(|d| HostLogin::of(d.value()));
    if let Ok(HostLogin::Configured) = state {
        ctx.out.said("Setup complete.");
        return;
    }
    let how = match login::module(sp_root) {
        Ok(_) => format!(
            "set it with `oyster setup{s}{r}` on a terminal (it asks for the password), or pipe the password to `oyster setup --password-stdin{s}{r}`",
            s = ctx.stack_suffix(),
            r = args.retyped,
        ),
        Err(why) => format!(
            "{why}; set it with Oysterun's own setup: `node {}`",
            sp_root.join("host-service/setup.mjs").display()
        ),
    };
    ctx.out.out(&format!("Setup is not complete: the Host login is not set, so nobody can log in to the Host; {how}."));
}
