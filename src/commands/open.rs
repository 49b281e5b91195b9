//! `oyster open [STACK]` and `oyster qr [STACK]`: the two things a user wants right after the
//! Host runs, on demand — its page in the browser, and the login QR again.

use std::path::PathBuf;
use std::time::Duration;

use crate::context::Context;
use crate::host::plan::{self, HostInputs};
use crate::setup::hooks::{self, Ran};
use crate::sys::process;
use crate::ExitStatus;

/// How long oyster waits for the opener (it hands the URL to the browser and returns; one
/// still running then is left running).
const OPEN_TIMEOUT: Duration = Duration::from_secs(10);

/// The program that opens a URL in the user's browser: `/usr/bin/open` on macOS, `xdg-open`
/// on PATH elsewhere.
fn opener(ctx: &Context) -> Option<PathBuf> {
    if cfg!(target_os = "macos") {
        let open = PathBuf::from("/usr/bin/open");
        return open.is_file().then_some(open);
    }
    crate::provider::resolve::search_binary("xdg-open", &ctx.search).map(|(p, _)| p)
}

/// The port the Host answers on: the installed plist's (what runs), else the one rule.
fn port(ctx: &Context) -> anyhow::Result<u16> {
    let installed = crate::host::plist::read_installed(&ctx.stack.plist_path(), ctx.reporter());
    if let Some(p) = installed.as_ref().and_then(|i| i.env.port()) {
        return Ok(p);
    }
    let doc = crate::config::ConfigDoc::load(&ctx.stack.config_path())?;
    HostInputs::default()
        .effective_port(&ctx.stack, Some(&doc), None)
        .map(|p| p.port)
        .ok_or_else(|| {
            crate::error::Failed::new(
                format!("stack {} has no port yet, so it has no URL", ctx.stack.name),
                format!("`{}` sets it up", ctx.hints().cmd("setup")),
            )
            .into()
        })
}

/// `oyster open`: the URL in the browser, or printed when no opener exists.
pub fn open(ctx: &Context) -> anyhow::Result<ExitStatus> {
    crate::host::stack::require_known(&ctx.stack, &ctx.env.stack_env())?;
    // A built-in stack that was never set up has only its default port, which some other
    // program may hold: no browser is sent there.
    if !ctx.stack.on_disk() {
        return Err(crate::error::Failed::new(
            format!(
                "nothing is set up for stack {} yet, so it has no URL to open",
                ctx.stack.name
            ),
            format!("`{}` sets it up", ctx.hints().cmd("setup")),
        )
        .into());
    }
    let port = port(ctx)?;
    let url = format!("http://127.0.0.1:{port}");
    if crate::verify::health(port, Duration::from_millis(500)) != Some(200) {
        ctx.out.warn(&format!(
            "the Host does not answer GET /health on port {port} now; `{}` says why",
            ctx.hint_cmd("status")
        ));
    }
    let Some(program) = opener(ctx) else {
        ctx.out.out(&url);
        ctx.out.note(if cfg!(target_os = "macos") {
            "/usr/bin/open is missing; open the URL above in a browser"
        } else {
            "no `xdg-open` on PATH to open a browser; open the URL above in one"
        });
        return Ok(ExitStatus::Success);
    };
    let handed = process::Program::new(&program)
        .arg(&url)
        .timeout(OPEN_TIMEOUT)
        .hand_off()?;
    let failed = |how: String| -> anyhow::Error {
        crate::error::Failed::new(
            format!("`{} {url}` {how}", program.display()),
            format!("open {url} in a browser yourself"),
        )
        .into()
    };
    match handed {
        process::HandedOff::Exited(0) => ctx
            .out
            .out(&format!("Opened {url} (with {})", program.display())),
        process::HandedOff::Exited(code) => return Err(failed(format!("exited {code}"))),
        process::HandedOff::Signaled(sig) => {
            return Err(failed(format!("was killed by signal {sig}")))
        }
        // The browser it started runs in the foreground: it is the user's now.
        process::HandedOff::StillRunning(pid) => ctx.out.out(&format!(
            "Handed {url} to {} (pid {pid}, still running after {} s: the browser it started is left open)",
            program.display(),
            OPEN_TIMEOUT.as_secs()
        )),
    }
    Ok(ExitStatus::Success)
}

/// `oyster qr`: the login QR through the root's own entry point, as after a verified start.
pub fn qr(ctx: &Context) -> anyhow::Result<ExitStatus> {
    crate::host::stack::require_known(&ctx.stack, &ctx.env.stack_env())?;
    let plan = plan::plan(ctx, &HostInputs::default())?;
    match hooks::show_qr(ctx, &plan) {
        Ran::Done => Ok(ExitStatus::Success),
        Ran::Interrupted(sig) => Err(super::qr_interrupted(sig)),
        Ran::Skipped | Ran::Failed => Ok(ExitStatus::Failure),
    }
}
