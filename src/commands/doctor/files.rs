//! doctor's checks of the files launchd reads: the plist (generated, owned, its program), its
//! directory and the Host log's.

use super::*;
use crate::agent::status::AgentStatus;

/// The installed plist against what the generator makes now.
/// A plist deleted under its loaded job: launchd runs a Host whose definition is gone, which
/// will not come back at the next login.
fn deleted_under_loaded_job(ctx: &Context, job: &AgentStatus) -> Option<Check> {
    let st = &ctx.stack;
    let plist_path = st.plist_path();
    let launchd = matches!(ctx.manager(), Ok(crate::context::Manager::Launchd));
    if !launchd || std::fs::symlink_metadata(&plist_path).is_ok() || !job.loaded {
        return None;
    }
    Some(check(
        "plist",
        Level::Fail,
        format!(
            "{} was deleted while {} is loaded: launchd runs a job whose plist is gone, and it will not start at the next login",
            plist_path.display(),
            st.label
        ),
        Some(format!(
            "`{}` writes the plist again and restarts the Host (or `{}` stops it for good)",
            ctx.hint_cmd("restart"),
            ctx.hint_cmd("stop")
        )),
    ))
}

pub(super) fn plist_check(
    ctx: &Context,
    job: &AgentStatus,
    installed: Option<&Installed>,
    plan: Option<&Plan>,
) -> Check {
    let st = &ctx.stack;
    let plist_path = st.plist_path();
    if installed.is_none() {
        if let Some(deleted) = deleted_under_loaded_job(ctx, job) {
            return deleted;
        }
    }
    match (installed, plan) {
        // Something is there, but not a plist oyster may read (a symlink, a FIFO, a device,
        // over the size cap): say what, rather than "not installed".
        (None, _) if std::fs::symlink_metadata(&plist_path).is_ok() => check(
            "plist",
            Level::Fail,
            crate::sys::fs::read_regular(&plist_path, agentplist::MAX_PLIST_BYTES)
                .err()
                .map_or_else(
                    || format!("{} could not be read", plist_path.display()),
                    |e| e.to_string(),
                ),
            Some(format!(
                "remove it, then `{}` writes a regular file",
                ctx.hint_cmd("install")
            )),
        ),
        (None, _) => check(
            "plist",
            Level::Warn,
            format!("{} is not installed", plist_path.display()),
            Some(format!(
                "`{}` sets the Host up (`{}` once the config is done)",
                ctx.hints().cmd("setup"),
                ctx.hint_cmd("install")
            )),
        ),
        (Some(i), _) if i.oysterun_runner().is_some() => check(
            "plist",
            Level::Warn,
            format!(
                "{} was written by Oysterun's own installer (it runs {}); `{}` takes it over",
                plist_path.display(),
                i.oysterun_runner().unwrap_or_default(),
                ctx.hint_cmd("regenerate")
            ),
            Some(format!("`{}`", ctx.hint_cmd("regenerate"))),
        ),
        (Some(i), Some(p)) if i.bytes == p.plist => check(
            "plist",
            Level::Ok,
            format!("{} matches the generator", plist_path.display()),
            None,
        ),
        (Some(i), Some(p)) => check(
            "plist",
            Level::Warn,
            format!(
                "{} differs from what oyster generates now: {}",
                plist_path.display(),
                changed_lines(&i.bytes, &p.plist)
            ),
            Some(format!("`{}`", ctx.hint_cmd("regenerate"))),
        ),
        (Some(_), None) => check(
            "plist",
            Level::Warn,
            "cannot compare: the generator failed (see node/root)",
            None,
        ),
    }
}

/// The installed plist as launchd will judge it: owned by the user and not writable by others
/// (launchd refuses it otherwise, and oyster will not write over another uid's file), and a
/// program that still exists (after `brew uninstall oyster`, launchd loops on exit 78).
pub(super) fn plist_file_checks(ctx: &Context, installed: Option<&Installed>) -> Vec<Check> {
    use std::os::unix::fs::MetadataExt;
    let st = &ctx.stack;
    let path = st.plist_path();
    let (Some(inst), Ok(meta)) = (installed, std::fs::symlink_metadata(&path)) else {
        return vec![];
    };
    let mut checks = vec![];
    let me = crate::sys::user::euid();
    if meta.uid() != me {
        let owner = crate::sys::user::name_of(meta.uid()).unwrap_or_else(|| meta.uid().to_string());
        checks.push(check(
            "plist owner",
            Level::Fail,
            format!(
                "{} is owned by {owner}, not by you: launchd will not load it for you and oyster will not write over it",
                path.display()
            ),
            Some(format!(
                "`sudo chown {} {}` (or `sudo rm` it and run `{}`)",
                crate::sys::user::name_of(me).unwrap_or_else(|| me.to_string()),
                path.display(),
                ctx.hint_cmd("install")
            )),
        ));
    }
    if meta.mode() & 0o022 != 0 {
        checks.push(check(
            "plist mode",
            Level::Fail,
            format!(
                "{} is writable by others (mode {:04o}): launchd refuses such a plist",
                path.display(),
                meta.mode() & 0o7777
            ),
            Some(format!("`chmod 644 {}`", path.display())),
        ));
    }
    if let Some(program) = inst.program_arguments.first() {
        if !Path::new(program).exists() {
            checks.push(check(
                "plist program",
                Level::Fail,
                format!(
                    "{} runs {program}, which no longer exists (oyster removed or moved?): launchd keeps failing to start it (exit 78)",
                    path.display()
                ),
                Some(format!(
                    "`{}` points it at this oyster; before removing oyster, run `{}` (or `oyster uninstall --all`)",
                    ctx.hint_cmd("regenerate"),
                    ctx.hint_cmd("uninstall")
                )),
            ));
        }
    }
    checks
}

/// launchd exits 78 when it cannot open the Host log.
pub(super) fn log_dir_check(ctx: &Context) -> Check {
    let log_dir = &ctx.stack.log_dir;
    // A file or a dangling symlink in its place is not "writable" whatever its parent is.
    if let Err(e) = ctx.stack.refuse_bad_log_dir() {
        return check("log dir", Level::Fail, e.msg, e.hint);
    }
    let probe_dir = log_dir
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"));
    let writable = writable(probe_dir);
    check(
        "log dir",
        if writable { Level::Ok } else { Level::Fail },
        format!(
            "{} {}",
            log_dir.display(),
            if writable {
                "is writable"
            } else {
                "is not writable"
            }
        ),
        (!writable).then(|| {
            format!(
                "make {} writable by this user (launchd exits 78 when it cannot open the log)",
                log_dir.display()
            )
        }),
    )
}

fn writable(dir: &Path) -> bool {
    nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// The lines that differ between two plists, `+new` and `-old`, on one line.
fn changed_lines(old: &[u8], new: &[u8]) -> String {
    let old = String::from_utf8_lossy(old).into_owned();
    let new = String::from_utf8_lossy(new).into_owned();
    similar::TextDiff::from_lines(&old, &new)
        .iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal)
        .map(|c| {
            let sign = if c.tag() == similar::ChangeTag::Insert {
                "+"
            } else {
                "-"
            };
            format!("{sign}{}", c.value().trim())
        })
        .collect::<Vec<_>>()
        .join(" ")
}
