//! `oyster setup`: Release Setup's face — the plan as the user sees it, the one `[y/N]`
//! question (default No), and the cancel line. The planning and the applying with rollback
//! live in [`crate::setup`].

use std::io::IsTerminal;

#[path = "setup_words.rs"]
mod words;

use crate::context::Context;
use crate::invocation::Setup;
use crate::provider::registry::PROVIDERS;
use crate::provider::resolve::Intent;
use crate::provider::status::State;
use crate::setup::{self, Install, Service, SetupOptions, SetupPlan, CANCELLED};
use crate::sys::signal::{self, InterruptGuard};
use crate::ExitStatus;

/// Runs setup: plan, show, maybe ask, apply.
pub fn run(ctx: &Context, args: Setup) -> anyhow::Result<ExitStatus> {
    let retyped = &args.retyped;
    let opts = &args.options;
    // Refused before the plan, the question and the password (the lock, taken after them,
    // would refuse it too, once they were typed), and by the dry run, which takes no lock.
    ctx.refuse_foreign("setup")?;
    // Refused before the plan is shown: setup would start a Host that cannot write its log.
    ctx.stack.refuse_special_log()?;
    refuse_managed(ctx, opts)?;
    // A setup killed outright left its receipt: what it did is taken back first (its Host
    // too, before the direct-Host refusal below sees it), and the plan is made after.
    let took_back = take_back(ctx, opts, args.dry_run)?;
    // Cancelled after an earlier setup was taken back: that much did change, and was said.
    let cancelled = match took_back {
        true => "Installation cancelled; nothing else was changed.",
        false => CANCELLED,
    };
    // Also a Host this stack runs directly (`host start`): setup would load the LaunchAgent
    // beside it on another `--port` (two Hosts of one stack), or fail on its port after writing.
    if !opts.no_start {
        super::agent::preflight::refuse_direct_host(ctx)?;
    }
    // Read before the plan: an empty password is refused before anything else happens.
    let piped = match (args.password_stdin, args.dry_run) {
        (true, false) => Some(setup::login::read_stdin()?),
        _ => None,
    };
    let sp = setup::make_plan(ctx, opts)?;
    // Two stacks on one port (another stack's job installed there, stopped or running):
    // refused before the plan is shown and anything is written, naming the owner.
    crate::manager::refuse_claimed_port(ctx, sp.plan.port)?;
    super::agent::preflight::warn_production_port(ctx, sp.plan.port);
    // -q/--quiet: the plan is not shown (a question still is).
    if !ctx.out.quiet() {
        show(ctx, opts, &sp);
        ctx.out.out(&format!(
            "  login:       {}",
            super::setup_login::plan_line(&args, &sp)
        ));
    }
    // The command that sets the Host up and installs no provider, offered wherever setup
    // would otherwise install (or ask about) one.
    let without = format!(
        "oyster setup --no-install-providers{}{retyped}",
        ctx.stack_suffix()
    );
    if args.dry_run {
        if !sp.installs.is_empty() && !args.no_install_providers {
            ctx.out.out(&format!(
                "To set up the Host without installing any provider: `{without}`."
            ));
        }
        ctx.out.out("Dry run (--dry-run): nothing was changed.");
        return Ok(ExitStatus::Success);
    }
    let Some(install) = install_or_cancel(ctx, &args, &sp, &without)? else {
        ctx.out.out(cancelled);
        return Ok(ExitStatus::Success);
    };
    let login = match super::setup_login::decide(ctx, &args, &sp, piped)? {
        super::setup_login::Decided::Set(l) => Some(l),
        super::setup_login::Decided::Keep => None,
        super::setup_login::Decided::Cancelled => {
            ctx.out.out(cancelled);
            return Ok(ExitStatus::Success);
        }
    };
    let root = sp.plan.root.clone();
    let installed: Vec<&'static crate::provider::registry::Provider> = if install {
        sp.installs.iter().map(|i| i.provider).collect()
    } else {
        vec![]
    };
    let plan = setup::apply(ctx, opts, sp, install, login.as_ref())?;
    super::setup_login::provider_problems(ctx, &installed);
    super::setup_login::ending(ctx, &args, &root);
    // The one thing a new user needs next: where the Host answers.
    let url = format!("http://127.0.0.1:{}", plan.port);
    if opts.no_start {
        ctx.out.said(&format!("url: {url} (once the Host runs)"));
    } else {
        ctx.out.said(&format!("url: {url}"));
    }
    // Proxy and CA variables of the caller's shell: noticed, offered, never inherited.
    super::env::notice_shell(ctx)?;
    // Oysterun's own setup printed the login QR once the Host ran.
    if !opts.no_start && args.qr.wanted(std::io::stdout().is_terminal()) {
        if let setup::hooks::Ran::Interrupted(sig) = setup::hooks::show_qr(ctx, &plan) {
            return Err(super::qr_interrupted(sig));
        }
    }
    Ok(ExitStatus::Success)
}

/// Takes back what a setup killed outright did (its receipt), saying each revert on a line;
/// a dry run only says that the next setup will. Says whether anything was taken back.
fn take_back(ctx: &Context, opts: &SetupOptions, dry_run: bool) -> anyhow::Result<bool> {
    if dry_run {
        match setup::receipt::preview(ctx, opts)? {
            setup::Recovered::TookBack(_) => ctx.out.out(&format!(
                "An earlier setup was cut short: `oyster setup` first takes back what {} lists.",
                setup::receipt::path(&ctx.stack).display()
            )),
            setup::Recovered::Stale => ctx.out.out(&format!(
                "An earlier setup was cut short, but stack {} was changed since by another oyster command: `oyster setup` takes nothing of it back.",
                ctx.stack.name
            )),
            setup::Recovered::Nothing => {}
        }
        return Ok(false);
    }
    match setup::recover(ctx, opts)? {
        setup::Recovered::TookBack(said) => {
            let any = !said.is_empty();
            for words in said {
                ctx.reporter().line(&format!(
                    "An earlier setup was cut short; took back: {words}"
                ));
            }
            Ok(any)
        }
        setup::Recovered::Stale => {
            ctx.out.note(&format!(
                "an earlier setup was cut short, but stack {} was changed since by another oyster command: nothing of it is taken back",
                ctx.stack.name
            ));
            Ok(false)
        }
        setup::Recovered::Nothing => Ok(false),
    }
}

fn show(ctx: &Context, opts: &SetupOptions, sp: &SetupPlan) {
    let st = &ctx.stack;
    ctx.out.out_toned(
        crate::output::Tone::Heading,
        &format!(
            "Oysterun setup for stack {} (mode: {})",
            st.name,
            opts.mode.map(|m| m.as_str()).unwrap_or_else(|| sp
                .plan
                .doc
                .value()
                .get(crate::config::MODE_KEY)
                .and_then(serde_json::Value::as_str)
                .unwrap_or("direct"))
        ),
    );
    ctx.out.out(&format!(
        "  node:        {} {}",
        sp.plan.node.path.display(),
        sp.plan.node.version
    ));
    ctx.out.out(&format!(
        "  root:        {} (from {})",
        sp.plan.root.display(),
        sp.plan.root_origin
    ));
    for p in PROVIDERS {
        let status = super::providers::for_stack(ctx, &sp.plan.doc, p);
        let line = match (status.state, status.intent) {
            (State::Disabled, _) => "disabled (kept disabled)".to_owned(),
            (State::Available, intent) => format!("{} ({intent})", status.detail()),
            (State::Unavailable, Intent::Manual) => {
                format!("unavailable, manual command kept: {}", status.detail())
            }
            (State::Unavailable, _) => match sp.installs.iter().find(|i| i.provider.id == p.id) {
                Some(i) => format!("not installed; can be installed with `{}`", i.shown()),
                None => "not installed".to_owned(),
            },
        };
        ctx.out
            .out(&format!("  {:<12} {line}", format!("{}:", p.id)));
    }
    ctx.out.out(&format!(
        "  port:        {} (from {})",
        sp.plan.port,
        sp.plan.port_source.describe()
    ));
    ctx.out
        .out(&format!("  config:      {}", st.config_path().display()));
    let exists = if sp.agent_folder.is_dir() {
        "exists"
    } else {
        "will be created"
    };
    ctx.out.out(&format!(
        "  AgentFolder: {} ({exists})",
        sp.agent_folder.display()
    ));
    match &sp.service {
        Service::Launchd(lc) => ctx.out.out(&format!(
            "  service:     LaunchAgent {} via {}",
            st.plist_path().display(),
            lc.describe()
        )),
        Service::Systemd(sc) => ctx.out.out(&format!(
            "  service:     systemd user unit {} via {}",
            crate::manager::definition(ctx).display(),
            sc.describe()
        )),
        Service::Direct(why) => ctx.out.out(&format!(
            "  service:     direct start with a pid file ({}); no service manager here: {why}",
            st.pid_path().display()
        )),
    }
    ctx.out.out(&format!(
        "  start:       {}",
        if opts.no_start {
            "no (--no-start)"
        } else {
            "yes, then verify"
        }
    ));
}

/// A `--mode` or `--agent-folder` that would change what the organization forces
/// (docs/fleet.md) is refused before the plan is shown.
fn refuse_managed(ctx: &Context, opts: &SetupOptions) -> anyhow::Result<()> {
    let managed = crate::host::plan::managed(ctx);
    let asked = [
        (
            crate::config::MODE_KEY,
            opts.mode.map(|m| serde_json::Value::from(m.as_str())),
            "--mode",
        ),
        (
            crate::config::BROWSE_KEY,
            opts.agent_folder
                .as_ref()
                .map(|f| serde_json::Value::from(f.display().to_string())),
            "--agent-folder",
        ),
    ];
    for (key, given, flag) in asked {
        if let (Some(g), Some(e)) = (given, managed.get(key)) {
            if g != e.value {
                return Err(crate::config::managed::refusal(&format!("{flag} {g}"), e).into());
            }
        }
    }
    Ok(())
}

/// Whether the missing providers are installed: by the flags, or by the one question on a
/// terminal. `None` when the user cancelled (nothing may change then).
fn install_or_cancel(
    ctx: &Context,
    args: &Setup,
    sp: &SetupPlan,
    without: &str,
) -> anyhow::Result<Option<bool>> {
    let opts = &args.options;
    // stdin holds the password with --password-stdin: no question is read from it.
    let interactive =
        std::io::stdin().is_terminal() && std::io::stdout().is_terminal() && !args.password_stdin;
    // 1.5.3 asks only when no provider is usable: with one usable, the Host works, and a
    // missing other one is noted with its install command (setup goes on).
    let usable: Vec<&str> = PROVIDERS
        .iter()
        .filter(|p| sp.plan.doc.status(p, &ctx.search).state == State::Available)
        .map(|p| p.display_name)
        .collect();
    let install = if sp.installs.is_empty() || args.no_install_providers {
        false
    } else if opts.install_providers {
        true
    } else if interactive && !args.yes && usable.is_empty() {
        match confirm(ctx, &sp.installs, without)? {
            Answer::Install => true,
            Answer::Skip => false,
            Answer::Cancel => return Ok(None),
        }
    } else {
        false
    };
    if !install {
        for i in &sp.installs {
            let how = if args.no_install_providers {
                "not installed (--no-install-providers)".to_owned()
            } else if !usable.is_empty() {
                format!(
                    "setup goes on with {}; to install it: `{}`",
                    usable.join(" and "),
                    i.shown()
                )
            } else {
                format!("pass --install-providers to run `{}`", i.shown())
            };
            ctx.out.said(&format!(
                "note: {} is not installed; it stays auto, and the Host finds it once it is installed ({how})",
                i.provider.id,
            ));
        }
    }
    Ok(Some(install))
}

/// The answers to setup's one question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// `y`: install the missing providers, then set the Host up.
    Install,
    /// `s`: set the Host up without installing them (each stays `auto`, found once installed).
    Skip,
    /// Enter, `n`, anything else, EOF or Ctrl-C: change nothing.
    Cancel,
}

/// Asks the one question, with three answers: install, skip (set up without installing), or
/// cancel, the default (Enter, n, anything else, EOF or Ctrl-C), which changes nothing.
fn confirm(ctx: &Context, installs: &[Install], without: &str) -> anyhow::Result<Answer> {
    let names: Vec<&str> = installs.iter().map(|i| i.provider.display_name).collect();
    let cmds: Vec<String> = installs
        .iter()
        .map(|i| format!("`{}`", i.shown()))
        .collect();
    let (is, it) = if installs.len() == 1 {
        ("is", "it")
    } else {
        ("are", "them")
    };
    ctx.out.out(&format!(
        "Answer y to install {it}, s to set the Host up without {it} (found later once installed; a script runs `{without}`), or N to cancel and change nothing."
    ));
    // Someone who uses only the other provider can switch this one off for good.
    for i in installs {
        ctx.out.out(&format!(
            "If you never use {name}, `{off}` disables it and setup stops asking.",
            name = i.provider.display_name,
            off = ctx
                .hints()
                .flag_cmd(&format!("providers set {} \"\"", i.provider.id))
        ));
    }
    ctx.out.out_inline(&format!(
        "{} {is} not installed. Install {it} now with {}? [y/s/N] ",
        names.join(" and "),
        cmds.join(" and ")
    ));
    // Ctrl-C while the question is open is "no": the read returns, nothing has changed.
    let _guard = InterruptGuard::install();
    let line = read_answer()?;
    if line.is_none() {
        // EOF or Ctrl-C: end the prompt's line before the message.
        ctx.out.raw(b"\n");
    }
    let answer = line.unwrap_or_default().trim().to_ascii_lowercase();
    Ok(match answer.as_str() {
        "y" | "yes" => Answer::Install,
        "s" | "skip" => Answer::Skip,
        _ => Answer::Cancel,
    })
}

/// Asks `question` on the terminal (a `[y/N]` one): `y` or `yes` is a yes; anything else,
/// Enter, end of input or an interrupt is a no.
pub(crate) fn ask_yes(ctx: &Context, question: &str) -> anyhow::Result<bool> {
    ctx.out.out_inline(question);
    let _guard = crate::sys::signal::InterruptGuard::install();
    let line = read_answer()?;
    if line.is_none() {
        ctx.out.raw(b"\n");
    }
    let a = line.unwrap_or_default().trim().to_ascii_lowercase();
    Ok(a == "y" || a == "yes")
}

/// Reads one line from stdin byte by byte, so an interrupt ends the read (`EINTR`) instead of
/// being retried. `None` on EOF or interrupt.
pub(crate) fn read_answer() -> anyhow::Result<Option<String>> {
    use std::os::fd::AsFd;
    let stdin = std::io::stdin();
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match nix::unistd::read(stdin.as_fd(), &mut byte) {
            Ok(0) if line.is_empty() => return Ok(None),
            Ok(0) => break,
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) => line.push(byte[0]),
            Err(nix::errno::Errno::EINTR) if signal::received().is_some() => return Ok(None),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(std::io::Error::from(e).into()),
        }
    }
    Ok(Some(String::from_utf8_lossy(&line).into_owned()))
}
