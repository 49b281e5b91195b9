//! `oyster env [list|set|unset]`: the Host's declared environment (docs/behaviour.md
//! "Declared environment"). Names are shown, values never: not in a line, a `--json`
//! document, an error or the audit log. A refusal writes nothing.

use std::io::{IsTerminal, Read};

use serde::Serialize;

use crate::config::environment::{self, Changed};
use crate::context::Context;
use crate::error::Invalid;
use crate::host::declared::{self, Declared};
use crate::invocation::{EnvVerb, Job, SecretArg, Starting};
use crate::output::audit::{Action, Audit, Step, StepOutcome};
use crate::output::Tone;
use crate::ExitStatus;

/// The longest value read from stdin.
const STDIN_CAP: u64 = 64 * 1024;

pub fn run(ctx: &Context, verb: EnvVerb) -> anyhow::Result<ExitStatus> {
    // A stack that does not exist is a typo: refused with the nearest name.
    crate::host::stack::require_known(&ctx.stack, &ctx.env.stack_env())?;
    match verb {
        EnvVerb::List => list(ctx),
        EnvVerb::Set {
            name,
            value,
            restart,
        } => {
            refuse(ctx, &name, "set")?;
            let value = read_value(&name, value)?;
            environment::check_value(&name, &value)?;
            ctx.out.add_secrets(environment::secrets([(&name, &value)]));
            change(ctx, &name, Some(&value), restart)
        }
        EnvVerb::Unset { name, restart } => {
            refuse(ctx, &name, "unset")?;
            change(ctx, &name, None, restart)
        }
    }
}

/// One variable of `env list --json`: its name and where it comes from, never its value.
#[derive(Serialize)]
struct Row {
    name: String,
    /// `user` (the stack's env file) or `managed` (the organization's profile, which wins).
    origin: &'static str,
    /// The profile that forces it, when managed.
    managed: Option<String>,
}

#[derive(Serialize)]
struct Listing {
    stack: String,
    /// The stack's env file (it need not exist).
    file: String,
    /// Whether the file is used (`false` when it is refused: the Host starts without it).
    usable: bool,
    /// Why it is not used, with the fix; `null` when it is.
    problem: Option<String>,
    /// Lines of it left out, by line number and name.
    left_out: Vec<String>,
    variables: Vec<Row>,
}

fn list(ctx: &Context) -> anyhow::Result<ExitStatus> {
    ctx.announce_overrides();
    let d = declared::effective(&ctx.stack, &crate::host::plan::managed(ctx));
    let doc = Listing {
        stack: ctx.stack.name.clone(),
        file: d.file.display().to_string(),
        usable: d.refused.is_none(),
        problem: d
            .refused
            .as_ref()
            .map(|r| format!("{r} (fix: {})", r.fix())),
        left_out: d.left_out.clone(),
        variables: d
            .vars
            .keys()
            .map(|name| Row {
                name: name.clone(),
                origin: if d.forced.contains_key(name) {
                    "managed"
                } else {
                    "user"
                },
                managed: d.forced.get(name).map(|f| f.display().to_string()),
            })
            .collect(),
    };
    ctx.out.show(&doc, || print_list(ctx, &d));
    Ok(ExitStatus::Success)
}

fn print_list(ctx: &Context, d: &Declared) {
    let out = ctx.out;
    out.out_toned(
        Tone::Heading,
        &format!(
            "declared environment of stack {} ({})",
            ctx.stack.name,
            d.file.display()
        ),
    );
    for p in d.problems() {
        out.out_toned(Tone::Warn, &format!("  warning: {p}"));
    }
    if d.vars.is_empty() && d.refused.is_none() {
        out.out(&format!(
            "  none: `{}` declares one (`--value-stdin` keeps a secret out of your shell's history)",
            ctx.hints().flag_cmd("env set NAME VALUE")
        ));
        return;
    }
    if d.vars.is_empty() {
        return;
    }
    for name in d.vars.keys() {
        match d.forced.get(name) {
            Some(file) => out.out(&format!(
                "  {name}  (forced by your organization: {})",
                file.display()
            )),
            None => out.out(&format!("  {name}")),
        }
    }
    out.out_toned(
        Tone::Dim,
        "  values are not shown; the launch program adds them at every start of the Host",
    );
}

/// A name that is not a variable's, oyster's own, or forced by the organization: refused
/// before any value is read or anything written.
fn refuse(ctx: &Context, name: &str, verb: &str) -> anyhow::Result<()> {
    environment::check_name(name).map_err(|why| {
        Invalid::new(format!("{why}; nothing was changed"))
            .hint("`oyster env list` shows what is declared")
    })?;
    if let Some(f) = crate::host::plan::managed(ctx).forced_var(name) {
        let it = if f.name == name {
            "it".to_owned()
        } else {
            format!(
                "{} (the same variable to programs that read either case)",
                f.name
            )
        };
        return Err(crate::error::Failed::new(
            format!(
                "{name} is managed by your organization: {} forces {it}, so `env {verb}` cannot change it; nothing was changed",
                f.file.display()
            ),
            "ask your administrator to change the profile (`oyster env list` marks every forced variable)",
        )
        .into());
    }
    // The hint is a command that runs as shown: a value is given on stdin.
    let whole = match verb {
        "set" => format!("env set {name} --value-stdin"),
        _ => format!("env {verb} {name}"),
    };
    ctx.refuse_foreign_home(&whole)?;
    ctx.refuse_foreign_stack(&whole)?;
    Ok(())
}

/// The value: from the command line (it must be UTF-8), or stdin's first line.
fn read_value(name: &str, given: Option<SecretArg>) -> anyhow::Result<String> {
    if let Some(SecretArg(v)) = given {
        return v.into_string().map_err(|_| {
            Invalid::new(format!(
                "the value for {name} is not valid UTF-8; nothing was changed"
            ))
            .into()
        });
    }
    let mut bytes = vec![];
    std::io::stdin()
        .take(STDIN_CAP + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > STDIN_CAP {
        return Err(Invalid::new(format!(
            "the value for {name} on stdin is longer than {STDIN_CAP} bytes; nothing was changed"
        ))
        .into());
    }
    // Nothing at all (not even a line ending): the command that was to print the value failed
    // (`get-secret | oyster env set X --value-stdin`), and an empty value would replace the one
    // declared. An empty line is an empty value.
    if bytes.is_empty() {
        return Err(Invalid::new(format!(
            "nothing came on stdin for {name} (not even an empty line); nothing was changed"
        ))
        .hint("pipe the value's line into the command; to declare an empty value, pipe an empty line: `echo | oyster env set NAME --value-stdin`")
        .into());
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        Invalid::new(format!(
            "the value for {name} on stdin is not valid UTF-8; nothing was changed"
        ))
    })?;
    // One line: its line ending is not part of it.
    let line = text
        .strip_suffix('\n')
        .map_or(text.as_str(), |t| t.strip_suffix('\r').unwrap_or(t));
    Ok(line.to_owned())
}

/// Writes the change, says it (by name), records it in the audit log (by name), then offers
/// the restart that gives it to a running Host.
fn change(
    ctx: &Context,
    name: &str,
    value: Option<&str>,
    restart: Option<bool>,
) -> anyhow::Result<ExitStatus> {
    let path = declared::path(&ctx.stack);
    let outcome = environment::change(&path, name, value).map_err(|e| {
        // The file's own refusal already says nothing changed; anything else must say it too.
        match e.downcast_ref::<Invalid>() {
            Some(_) => e,
            None => e.context("nothing was changed"),
        }
    })?;
    let what = if value.is_some() {
        "declared"
    } else {
        "removed"
    };
    if outcome == Changed::Unchanged {
        let said = match value {
            Some(_) => format!(
                "{name} is already declared with this value in {}; nothing was changed",
                path.display()
            ),
            None => format!(
                "{name} is not declared in {}; nothing was changed",
                path.display()
            ),
        };
        ctx.out.out(&said);
        return Ok(ExitStatus::Success);
    }
    Audit::new(ctx.stack.audit_path(), &ctx.stack.name, &ctx.stack.label).record(
        Action::Env,
        Step::WriteEnv,
        StepOutcome::Written,
        None,
        &format!("{what} {name} (value not recorded)"),
    );
    ctx.out.out(&format!(
        "{what} {name} for stack {} in {} (mode 0600; the value is not shown)",
        ctx.stack.name,
        path.display()
    ));
    offer_restart(ctx, restart)
}

/// A running Host gets the change only when it starts again: restarted with `--restart` (or a
/// yes on a terminal), else the command that does it is said.
fn offer_restart(ctx: &Context, restart: Option<bool>) -> anyhow::Result<ExitStatus> {
    let st = crate::agent::status::collect(ctx)?;
    let restart_cmd = ctx.hints().cmd("restart");
    let by_manager = matches!(
        st.managed_by,
        Some(crate::agent::status::Manager::Launchd | crate::agent::status::Manager::Systemd)
    );
    if !st.running {
        ctx.out
            .out("The Host is not running; it gets the change when it starts.");
        return Ok(ExitStatus::Success);
    }
    if !by_manager {
        ctx.out.out(&format!(
            "The running Host (pid {}) gets it when it starts again: `{}` then `{}`.",
            st.pid.unwrap_or(0),
            ctx.hints().cmd("host stop"),
            ctx.hints().cmd("host start")
        ));
        return Ok(ExitStatus::Success);
    }
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let go = match restart {
        Some(go) => go,
        None if terminal => {
            super::setup::ask_yes(ctx, "Restart the Host now so it gets the change? [y/N] ")?
        }
        None => false,
    };
    if !go {
        ctx.out.out(&format!(
            "The running Host does not have the change yet (`status` calls it stale): `{restart_cmd}` applies it{}.",
            if terminal { "" } else { " (or run this command with --restart)" }
        ));
        return Ok(ExitStatus::Success);
    }
    super::agent_verb(
        ctx,
        &Job::Restart(Starting {
            host: Default::default(),
            timing: crate::agent::lifecycle::Timing {
                wait: std::time::Duration::from_secs(30),
                settle: std::time::Duration::from_millis(1500),
                ignore_login_items: false,
            },
            qr: crate::invocation::Qr::Never,
            restore_sessions: false,
        }),
    )
}

/// After setup: the caller's shell has proxy or CA variables ([`crate::context::NOTICED`])
/// that the Host does not get (it never inherits them). Named with a redacted value; on a
/// terminal, offered as declarations (then the Host is restarted to get them), else the
/// commands that declare them are said. Nothing is declared without a yes.
pub fn notice_shell(ctx: &Context) -> anyhow::Result<()> {
    let managed = crate::host::plan::managed(ctx);
    let d = declared::effective(&ctx.stack, &managed);
    // A forced name, in any case, is the organization's: never offered (the shell's
    // `https_proxy` beside a forced `HTTPS_PROXY` would only be left out at launch).
    let new: Vec<&(String, String)> = ctx
        .env
        .noticed
        .0
        .iter()
        .filter(|(k, v)| d.vars.get(k) != Some(v) && managed.forced_var(k).is_none())
        .filter(|(k, v)| environment::check_value(k, v).is_ok())
        .collect();
    if new.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = new
        .iter()
        .map(|(k, v)| format!("{k} ({})", crate::output::redact::redact_urls(v)))
        .collect();
    ctx.out.out(&format!(
        "Your shell has {}; the Host never inherits your shell's environment.",
        shown.join(", ")
    ));
    let names: Vec<&str> = new.iter().map(|(k, _)| k.as_str()).collect();
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let file = declared::path(&ctx.stack);
    if !terminal
        || !super::setup::ask_yes(
            ctx,
            &format!(
                "Declare them for the Host (in {}, mode 0600)? [y/N] ",
                file.display()
            ),
        )?
    {
        ctx.out.out(&format!(
            "To give them to the Host: `{}` for each of {}, then `{}`.",
            ctx.hints().flag_cmd("env set NAME --value-stdin"),
            names.join(", "),
            ctx.hints().cmd("restart")
        ));
        return Ok(());
    }
    for (k, v) in &new {
        environment::change(&file, k, Some(v))?;
    }
    ctx.out.out(&format!(
        "declared {} for stack {} (values not shown)",
        names.join(", "),
        ctx.stack.name
    ));
    offer_restart(ctx, Some(true)).map(|_| ())
}
