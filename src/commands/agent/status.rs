//! `oyster agent status` (and `oyster status`): renders the domain's `AgentStatus`; exits 1
//! unless the Host is verified.

use crate::agent::login_items::LoginItem;
use crate::agent::status::{self as model, AgentStatus, InstalledBy, Summary};
use crate::context::Context;
use crate::output::Tone;
use crate::ExitStatus;

pub fn run(ctx: &Context) -> anyhow::Result<ExitStatus> {
    // Not the job verbs' check: a unit whose manager does not answer is said, not refused.
    crate::host::stack::require_known(&ctx.stack, &ctx.env.stack_env())?;
    let st = model::collect(ctx)?;
    ctx.out.show(&st, || print(ctx, &st));
    // A label loaded twice is a failure even when the copy shown verifies: two Hosts for
    // one port.
    Ok(if st.verified && st.summary != Summary::LoadedTwice {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// `oyster status --all` (`info --all`): every stack's status, as `status` shows one; with
/// `--json` one document, `{"stacks": [...]}` (the shape of `list --json`). Exit 1 unless every
/// stack is verified.
pub fn run_all(ctx: &Context) -> anyhow::Result<ExitStatus> {
    #[derive(serde::Serialize)]
    struct All {
        stacks: Vec<AgentStatus>,
    }
    let names = crate::host::stack::discover(&ctx.env.stack_env());
    let mut stacks = vec![];
    for name in &names {
        let sub = ctx.for_stack(name)?;
        stacks.push(model::collect(&sub)?);
    }
    let all = All { stacks };
    ctx.out.show(&all, || {
        if all.stacks.is_empty() {
            ctx.out
                .out("No Oysterun stack on this machine yet; `oyster setup` sets one up.");
        }
        for (i, st) in all.stacks.iter().enumerate() {
            if i > 0 {
                ctx.out.out("");
            }
            let sub = ctx.for_stack(&st.stack);
            print(sub.as_ref().unwrap_or(ctx), st);
        }
    });
    let fine = |st: &AgentStatus| st.verified && st.summary != Summary::LoadedTwice;
    Ok(if all.stacks.iter().all(fine) {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// The summary in words.
pub fn words(s: Summary) -> &'static str {
    match s {
        Summary::Verified => "running, verified",
        Summary::Direct => "running (started directly), verified",
        // The `stale:` line below names the fix (once).
        Summary::Stale => "running, verified against a stale plist",
        Summary::Unverified => "running, NOT verified",
        Summary::CrashLoop => "crash loop",
        Summary::NotRunning => "loaded, not running",
        Summary::Stopped => "stopped",
        Summary::NotLoaded => "installed, not loaded",
        Summary::NotInstalled => "not installed",
        Summary::Unknown => "unknown (its service manager could not be asked)",
        Summary::LoadedTwice => "loaded twice (gui and user domain): two Hosts for one port",
    }
}

/// How a summary is marked on a terminal.
pub fn tone(s: Summary) -> Tone {
    match s {
        Summary::Verified | Summary::Direct => Tone::Ok,
        Summary::Stale | Summary::Stopped | Summary::NotInstalled | Summary::Unknown => Tone::Warn,
        _ => Tone::Fail,
    }
}

fn yn(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn print(ctx: &Context, st: &AgentStatus) {
    let out = ctx.out;
    out.out_toned(Tone::Heading, &format!("{} (stack {})", st.label, st.stack));
    out.out_toned(
        tone(st.summary),
        &format!(
            "  status:    {}",
            match st.summary {
                Summary::Stale =>
                    format!("running, verified against a stale {}", definition_word(st)),
                s => words(s).to_owned(),
            }
        ),
    );
    if let Some(url) = &st.url {
        out.out(&format!("  url:       {url}"));
    }
    if st.summary == Summary::NotInstalled {
        out.out(&format!(
            "  installed: no ({}); `{}` sets the Host up (`{}` installs the {} alone)",
            st.plist_path,
            ctx.hints().cmd("setup"),
            ctx.hint_cmd("install"),
            match st.manager {
                Some("systemd") => "systemd unit",
                _ => "LaunchAgent",
            }
        ));
    } else {
        out.out(&format!(
            "  installed: {} ({})",
            yn(st.installed),
            st.plist_path
        ));
    }
    out.out(&format!("  loaded:    {}", loaded_words(ctx, st)));
    print_login_item(ctx, st);
    print_login(ctx, st);
    print_running(ctx, st);
    print_plist_warnings(ctx, st);
    out.out(&format!("  log:       {}", st.log_path));
    if !st.declared.is_empty() {
        out.out(&format!(
            "  declared:  {} (`oyster env`)",
            st.declared.join(", ")
        ));
    }
    if let Some(lc) = &st.launchctl {
        let how = if st.launchctl_overridden {
            " (from OYSTER_LAUNCHCTL)"
        } else {
            ""
        };
        out.out(&format!("  launchctl: {lc}{how}"));
    }
    for n in &st.notes {
        if st.broken && n.starts_with("broken: ") {
            out.out_toned(Tone::Fail, &format!("  {n}"));
        } else {
            out.out(&format!("  note: {n}"));
        }
    }
    // What the organization's profile forces (docs/fleet.md), only when it forces anything.
    for line in crate::commands::config::managed_lines(ctx) {
        out.out(&format!("  {}", line.trim_start_matches("# ")));
    }
}

/// Login Items (System Settings → General → Login Items): said as unknown, never as fine, when
/// it cannot be asked.
fn print_login_item(ctx: &Context, st: &AgentStatus) {
    let out = ctx.out;
    match (st.login_item, &st.login_item_why) {
        (Some(LoginItem::Unknown), Some(why)) => {
            out.out(&format!("  login:     Login Items state unknown ({why})"));
        }
        (Some(LoginItem::RequiresApproval), _) => out.out_toned(
            Tone::Fail,
            &format!(
                "  login:     {} in Login Items",
                LoginItem::RequiresApproval.words()
            ),
        ),
        (Some(state), _) => out.out(&format!("  login:     {} in Login Items", state.words())),
        (None, _) => {}
    }
}

/// Whether anybody can log in to the Host: a fact of its own, beside "verified".
fn print_login(ctx: &Context, st: &AgentStatus) {
    use crate::config::login::HostLogin;
    let user = st.login_user.as_deref().unwrap_or("admin");
    match st.host_login {
        Some(HostLogin::Configured) => ctx.out.out(&format!("  password:  set (log in as {user})")),
        Some(HostLogin::NotConfigured) => ctx.out.out_toned(
            Tone::Warn,
            &format!(
                "  password:  not set: nobody can log in to the Host; `{}` sets it",
                ctx.hints().cmd("setup")
            ),
        ),
        None => {}
    }
}

fn loaded_words(ctx: &Context, st: &AgentStatus) -> String {
    match (st.loaded, st.summary) {
        (false, Summary::Stopped) => format!(
            "no: stopped, and disabled so it stays stopped at login; `{}` starts it",
            ctx.hint_cmd("start")
        ),
        (false, Summary::NotLoaded) => format!("no; `{}` loads it", ctx.hint_cmd("start")),
        (loaded, _) => format!(
            "{}{}",
            yn(loaded),
            st.domain
                .as_ref()
                .map_or(String::new(), |d| format!(" in {d}"))
        ),
    }
}

/// The running, verified, crash-loop, last-exit and environment lines.
fn print_running(ctx: &Context, st: &AgentStatus) {
    let out = ctx.out;
    let waiting = match st.state.as_deref() {
        Some("spawn scheduled") if !st.running && !st.crash_loop => {
            " (launchd starts it again after the throttle interval)"
        }
        _ => "",
    };
    out.out(&format!(
        "  running:   {}{}{}{waiting}",
        yn(st.running),
        st.pid.map_or(String::new(), |p| format!(" (pid {p})")),
        st.runs.map_or(String::new(), |r| format!(", runs {r}"))
    ));
    let proof = st.env_proof.map_or(String::new(), |p| {
        format!(" (environment proof: {})", p.as_str())
    });
    let against = if st.verified && st.in_sync == Some(false) {
        format!(
            ", against the installed {}, which is stale (below)",
            definition_word(st)
        )
    } else {
        String::new()
    };
    out.out(&format!("  verified:  {}{proof}{against}", yn(st.verified)));
    if st.crash_loop {
        let state = st.state.as_deref().unwrap_or("?");
        let what = match st.manager {
            // Past its start limit systemd restarts nothing until a start resets it.
            Some("systemd") if state.starts_with("failed") => format!(
                "systemd gave up restarting the Host (state {state}: its start limit); see `{}`, then `{}` starts it again",
                ctx.hint_cmd("logs"),
                ctx.hint_cmd("restart")
            ),
            Some("systemd") => format!(
                "systemd keeps restarting the Host (state {state}); see `{}`",
                ctx.hint_cmd("logs")
            ),
            _ => format!(
                "launchd keeps restarting the Host (state {state}); see `{}`",
                ctx.hint_cmd("logs")
            ),
        };
        out.out_toned(Tone::Fail, &format!("  crash loop: {what}"));
    }
    match (st.last_exit_code, st.last_signal) {
        (Some(code), _) => out.out(&format!("  last exit: code {code}")),
        (_, Some(sig)) => out.out(&format!("  last exit: killed by signal {sig}")),
        _ => {}
    }
    if !st.env_mismatch.is_empty() {
        out.out(&format!(
            "  environment differs from the {} in: {}",
            definition_word(st),
            st.env_mismatch.join(", ")
        ));
    }
}

/// What the job's definition is called under the stack's manager.
fn definition_word(st: &AgentStatus) -> &'static str {
    match st.manager {
        Some("systemd") => "unit",
        _ => "plist",
    }
}

fn print_plist_warnings(ctx: &Context, st: &AgentStatus) {
    if st.installed_by == Some(InstalledBy::Oysterun) {
        ctx.out.out_toned(
            Tone::Warn,
            &format!(
                "  written by Oysterun's own installer (it runs {}): `{}` takes it over",
                crate::host::plist::OYSTERUN_RUNNER,
                ctx.hint_cmd("regenerate")
            ),
        );
    } else if st.in_sync == Some(false) {
        ctx.out.out_toned(
            Tone::Warn,
            &format!(
                "  stale:     the installed {} differs from what oyster generates now — run `{}`",
                definition_word(st),
                ctx.hint_cmd("regenerate")
            ),
        );
    }
}
