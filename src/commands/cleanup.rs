//! `oyster cleanup` (as `brew services cleanup`): the stacks that hold nothing but oyster's own
//! bookkeeping — no LaunchAgent, no Host running, only caches, an older oyster's lock file and
//! identity files naming dead pids — are listed and, when the user agrees, removed.
//!
//! A stack's config.json or logs are what a user would miss: a stack holding them is never
//! removed with the others; it is listed with those files named, and only a yes to a question
//! naming them (on a terminal) removes it. Anything oyster does not recognise keeps its stack.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use crate::context::Context;
use crate::host::stack::Stack;
use crate::invocation::Cleanup;
use crate::launchctl::Launchctl;
use crate::output::Tone;
use crate::ExitStatus;

mod identity;
use identity::named_pid;
mod dirs;
use dirs::no_link_on_the_way;

/// What one stack directory holds, for cleanup.
struct Found {
    /// The stack, to look at again under the lock right before removing anything.
    stack: Stack,
    name: String,
    /// The directory cleanup would remove (`~/.oysterun` for production).
    root: PathBuf,
    /// oyster's bookkeeping files.
    bookkeeping: Vec<PathBuf>,
    /// The config and the logs: a user's, never removed without naming them and asking.
    precious: Vec<PathBuf>,
    /// Why the stack is kept regardless (a LaunchAgent, a running Host, an unknown file).
    kept: Option<String>,
    /// The stack's lifecycle lock, taken before the look and held to the removal, so no other
    /// oyster starts on the stack meanwhile (and one already at work keeps its stack).
    lock: Option<crate::sys::fs::Lock>,
}

impl Found {
    /// The stack before it is looked at.
    fn nothing(stack: &Stack) -> Found {
        let (name, root) = (stack.name.clone(), stack.root.clone());
        let (bookkeeping, precious, kept, lock) = (vec![], vec![], None, None);
        let stack = stack.clone();
        Found {
            stack,
            name,
            root,
            bookkeeping,
            precious,
            kept,
            lock,
        }
    }
}

/// Takes the stack's lock without waiting (creating the lock file in oyster's lock directory,
/// outside the stack, when there is none). `Ok(None)`: another oyster holds it.
fn lock_stack(stack: &Stack) -> Result<Option<crate::sys::fs::Lock>, String> {
    let lock_path = stack.lifecycle_lock_path();
    if let Err(e) = stack.refuse_unusable_lock_dir() {
        let fix = e.hint.as_deref().unwrap_or_default();
        let why = e.why();
        return Err(format!("{why}; fix: {fix}"));
    }
    if let Some(dir) = lock_path.parent() {
        crate::sys::fs::create_dir_all(dir, 0o700).map_err(|e| e.to_string())?;
    }
    match crate::sys::fs::try_lock_creating(&lock_path, "cleanup") {
        Ok(held) => Ok(held.map(|(lock, _)| lock)),
        Err(e) => Err(e.to_string()),
    }
}

pub fn run(ctx: &Context, args: &Cleanup) -> anyhow::Result<ExitStatus> {
    // As every writing verb: root under a HOME another uid owns removes nothing (exit 2).
    ctx.refuse_foreign_home("cleanup")?;
    let env = ctx.env.stack_env();
    let lc = ctx.launchctl().ok();
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    // A run that may remove creates each stack's lock (outside the stack) to hold it; one that
    // only shows (`--dry-run`, no terminal to ask on) creates nothing, and holds the locks that
    // exist.
    let creates = !args.dry_run && (args.yes || terminal);
    let mut found = vec![];
    for (name, listed) in candidates(ctx) {
        let Ok(stack) = Stack::new(&name, &env) else {
            continue;
        };
        if stack.root.is_dir() || stack.plist_path().exists() {
            let f = examine(&stack, lc, creates);
            // A directory `list` does not show that holds no file oyster writes (only empty
            // directories) was never a stack: a user's (OYSTERUN_STACKS_DIR may be a shared
            // directory), not a leftover.
            if listed || f.kept.is_some() || !f.bookkeeping.is_empty() || !f.precious.is_empty() {
                found.push(f);
            }
        }
    }
    let removable: Vec<&Found> = found
        .iter()
        .filter(|f| f.kept.is_none() && f.precious.is_empty())
        .collect();
    let with_files: Vec<&Found> = found
        .iter()
        .filter(|f| f.kept.is_none() && !f.precious.is_empty())
        .collect();
    if !say_found(ctx, &found, &removable, &with_files) {
        return Ok(ExitStatus::Success);
    }
    if args.dry_run || (!args.yes && !terminal) {
        if args.purge {
            for f in &with_files {
                ctx.out
                    .out(&format!("would purge {}: {}", f.name, list(&f.precious)));
            }
        }
        if !removable.is_empty() {
            ctx.out.out(&format!(
                "Nothing removed ({}); `oyster cleanup --yes` removes the leftover stacks.",
                if args.dry_run {
                    "--dry-run"
                } else {
                    "no terminal to ask on"
                }
            ));
        }
        return Ok(ExitStatus::Success);
    }
    let failed = remove_asked(ctx, args, terminal, lc, &removable, &with_files)?;
    Ok(if failed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Says what was found: stacks kept and why, and the leftovers. `false` when nothing is left
/// to clean up.
fn say_found(ctx: &Context, found: &[Found], removable: &[&Found], with_files: &[&Found]) -> bool {
    for f in found.iter().filter(|f| f.kept.is_some()) {
        ctx.out.out(&format!(
            "kept    {}: {}",
            f.name,
            f.kept.as_deref().unwrap_or_default()
        ));
    }
    for f in with_files {
        ctx.out.out(&format!(
            "kept    {}: no LaunchAgent and no Host, but it holds {}",
            f.name,
            list(&f.precious)
        ));
    }
    if found.is_empty() {
        ctx.out
            .out("No Oysterun stack on this machine; nothing to clean up.");
        return false;
    }
    if removable.is_empty() && with_files.is_empty() {
        ctx.out.out("Nothing to clean up: every stack on this machine is kept, for the reason said beside it.");
        return false;
    }
    for f in removable {
        ctx.out.out_toned(
            Tone::Warn,
            &format!(
                "leftover {}: {} holds only oyster's bookkeeping ({})",
                f.name,
                f.root.display(),
                relative(&f.root, &f.bookkeeping)
            ),
        );
    }
    true
}

/// Removes the leftovers the user agreed to (`--yes`, or a yes on the terminal), and a stack
/// holding a config or logs only after a question that names them. `true` when a removal
/// failed.
fn remove_asked(
    ctx: &Context,
    args: &Cleanup,
    terminal: bool,
    lc: Option<&Launchctl>,
    removable: &[&Found],
    with_files: &[&Found],
) -> anyhow::Result<bool> {
    let mut failed = false;
    if !removable.is_empty() {
        let names: Vec<&str> = removable.iter().map(|f| f.name.as_str()).collect();
        let go = args.yes
            || super::setup::ask_yes(
                ctx,
                &format!(
                    "Remove {} leftover stack{} ({})? [y/N] ",
                    names.len(),
                    if names.len() == 1 { "" } else { "s" },
                    names.join(", ")
                ),
            )?;
        if go {
            for f in removable {
                failed |= !remove(ctx, lc, f);
            }
        } else {
            ctx.out.out("Nothing removed.");
        }
    }
    // The config and logs are only removed on a yes to a question that names them, or with
    // `--yes --purge`, naming each as it goes.
    if args.yes && args.purge {
        for f in with_files {
            ctx.out
                .out(&format!("purging {}: {}", f.name, list(&f.precious)));
            failed |= !remove(ctx, lc, f);
        }
    } else if terminal && !args.yes {
        for f in with_files {
            let q = format!("Remove stack {} with {}? [y/N] ", f.name, list(&f.precious));
            if super::setup::ask_yes(ctx, &q)? {
                failed |= !remove(ctx, lc, f);
            }
        }
    } else if !with_files.is_empty() {
        ctx.out.out("Stacks holding a config or logs are only removed on a terminal, after a question naming those files, or with `oyster cleanup --yes --purge`.");
    }
    Ok(failed)
}

/// After a refused first command (no root found, port held, a Host that did not verify) that
/// took the stack's lock while there was no stack directory, and still holds it: whatever the
/// stack holds now is that run's own (no other oyster can have written while it held the lock),
/// and when it is nothing but what the run wrote (its bookkeeping, the config sync of the
/// `--port` it was given, no Host log) it is removed again, so the refusal leaves no stack
/// behind. A Host log is kept (it says why), and with it the stack. Said in one note naming
/// `verb`. (Decided under the lock: a stack another oyster created while this one waited for
/// the lock is not this run's, and is never removed.)
pub fn forget_refused_first(ctx: &Context, verb: &str) {
    let stack = &ctx.stack;
    if stack.plist_path().exists() || !stack.root.is_dir() || no_link_on_the_way(stack).is_err() {
        return;
    }
    let lc = ctx.launchctl().ok();
    let mut f = Found::nothing(stack);
    look(&mut f, stack, lc);
    let only_config = f.precious.iter().all(|p| *p == stack.config_path());
    if f.kept.is_some() || !only_config {
        return;
    }
    for file in f.bookkeeping.iter().chain(&f.precious) {
        let _ = std::fs::remove_file(file);
    }
    let mut dirs = vec![];
    let _ = collect_dirs(&f.root, &mut dirs);
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for d in dirs.iter().chain(std::iter::once(&f.root)) {
        let _ = std::fs::remove_dir(d);
    }
    if !f.root.exists() {
        ctx.out.note(&format!(
            "nothing of stack {} is kept: {} (created by this refused {verb}) is removed again",
            stack.name,
            f.root.display()
        ));
    }
}

/// Every stack name on disk (`true`: `list` shows it), and every directory in the stacks dir
/// (`false`: a refused command may have left one that `list` does not show).
fn candidates(ctx: &Context) -> Vec<(String, bool)> {
    let env = ctx.env.stack_env();
    let mut names: Vec<(String, bool)> = crate::host::stack::discover(&env)
        .into_iter()
        .map(|n| (n, true))
        .collect();
    let stacks_dir = env
        .stacks_dir
        .clone()
        .unwrap_or_else(|| ctx.stack.home.join(".oysterun-stacks"));
    let mut extra: Vec<String> = std::fs::read_dir(&stacks_dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().is_dir())
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .filter(|n| crate::host::stack::validate_name(n).is_ok())
                .collect()
        })
        .unwrap_or_default();
    extra.sort();
    for n in extra {
        if !names.iter().any(|(known, _)| *known == n) {
            names.push((n, false));
        }
    }
    names
}

/// Takes the stack's lock (creating it when `creates`; else only one that exists), then looks
/// at what the stack holds.
fn examine(stack: &Stack, lc: Option<&Launchctl>, creates: bool) -> Found {
    let mut f = Found::nothing(stack);
    // A stack directory, or the stacks directory holding it, that is a symlink: removing
    // "its" files would remove them wherever it points, outside the stacks directory. Nothing
    // is created through it either (not even the lock).
    if let Err(why) = no_link_on_the_way(stack) {
        f.kept = Some(why);
        return f;
    }
    // Only a stack with a directory has anything to remove (a plist alone is kept below).
    if stack.root.is_dir() && (creates || stack.lifecycle_lock_path().exists()) {
        match lock_stack(stack) {
            Ok(Some(lock)) => f.lock = Some(lock),
            Ok(None) => {
                f.kept = Some(format!(
                    "another oyster is working on it (it holds {})",
                    stack.lifecycle_lock_path().display()
                ));
                return f;
            }
            Err(e) => {
                f.kept = Some(e);
                return f;
            }
        }
    }
    look(&mut f, stack, lc);
    f
}

/// What the stack holds, sorted into `f` (its lock already held).
fn look(f: &mut Found, stack: &Stack, lc: Option<&Launchctl>) {
    f.bookkeeping.clear();
    f.precious.clear();
    f.kept = None;
    f.kept = look_kept(f, stack, lc).err();
}

fn look_kept(f: &mut Found, stack: &Stack, lc: Option<&Launchctl>) -> Result<(), String> {
    // Looked at again right before anything is removed: a link put in meanwhile keeps it.
    no_link_on_the_way(stack)?;
    if stack.plist_path().exists() {
        return Err(format!(
            "has a LaunchAgent ({})",
            stack.plist_path().display()
        ));
    }
    if let Some(lc) = lc {
        match lc.find_loaded(&stack.label) {
            Ok(Some(_)) => return Err(format!("{} is loaded in launchd", stack.label)),
            Ok(None) => {}
            Err(e) => {
                return Err(format!(
                    "launchctl could not say whether it is loaded: {e:#}"
                ))
            }
        }
    }
    let mut files = vec![];
    if let Err(e) = walk(&stack.root, &mut files) {
        return Err(format!("{} could not be read: {e}", stack.root.display()));
    }
    files.sort();
    let bookkeeping = [
        stack.legacy_lock_path(),
        stack.run_dir.join("node-version.cache"),
        crate::host::privacy::verified_node_path(&stack.run_dir),
        stack.config_dir.join("config.json.lock"),
    ];
    let identity = [
        stack.pid_path(),
        stack.origin_path(),
        stack.exec_record_path(),
    ];
    for file in files {
        if bookkeeping.contains(&file) {
            f.bookkeeping.push(file);
        } else if identity.contains(&file) {
            match named_pid(&file)? {
                Some(pid) if crate::sys::signal::exists(pid) => {
                    return Err(format!(
                        "{} names pid {pid}, which is running",
                        file.display()
                    ));
                }
                _ => f.bookkeeping.push(file),
            }
        } else if file == stack.config_path() || file.starts_with(&stack.log_dir) {
            f.precious.push(file);
        } else {
            return Err(format!(
                "holds {}, which is not oyster's bookkeeping (the Host's data); `oyster uninstall {} --purge` deletes the stack with it",
                file.display(),
                stack.name
            ));
        }
    }
    Ok(())
}

/// Every file under `dir` (symlinks as files, never followed).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        if e.file_type()?.is_dir() {
            walk(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

/// Removes the stack's files, then its directories while they are empty (bottom up), so
/// nothing that appeared meanwhile is lost. Says what it did. Looks again first, under the lock
/// held since the first look: what does not take oyster's lock (Oysterun's own runner, a Host
/// launchd started) may have written meanwhile, and then the stack is kept, said.
fn remove(ctx: &Context, lc: Option<&Launchctl>, f: &Found) -> bool {
    let mut again = Found::nothing(&f.stack);
    look(&mut again, &f.stack, lc);
    if again.kept.is_some() || again.bookkeeping != f.bookkeeping || again.precious != f.precious {
        ctx.out.warn(&format!(
            "kept {}: it changed while cleanup asked ({}); nothing of it was removed. Run `oyster cleanup` again to see it as it is now",
            f.name,
            again.kept.unwrap_or_else(|| format!(
                "it now holds {}",
                relative(&f.root, &[again.bookkeeping, again.precious].concat())
            ))
        ));
        return true;
    }
    // The lock file stays in oyster's lock directory (outside the stack): an oyster waiting on
    // it takes the same file once this one is done.
    for file in f.bookkeeping.iter().chain(&f.precious) {
        if let Err(e) = std::fs::remove_file(file) {
            if e.kind() != std::io::ErrorKind::NotFound {
                ctx.out
                    .error(&format!("could not remove {}: {e}", file.display()), None);
                return false;
            }
        }
    }
    let mut dirs = vec![];
    let _ = collect_dirs(&f.root, &mut dirs);
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for d in dirs.iter().chain(std::iter::once(&f.root)) {
        let _ = std::fs::remove_dir(d);
    }
    if f.root.exists() {
        ctx.out.warn(&format!(
            "{}: its files are removed, but the directory is not empty (something was added meanwhile)",
            f.root.display()
        ));
    } else {
        ctx.out.out_toned(
            Tone::Ok,
            &format!("removed {} ({})", f.name, f.root.display()),
        );
    }
    true
}

fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            out.push(e.path());
            collect_dirs(&e.path(), out)?;
        }
    }
    Ok(())
}

fn relative(root: &Path, files: &[PathBuf]) -> String {
    if files.is_empty() {
        return "empty directories".to_owned();
    }
    files
        .iter()
        .map(|p| p.strip_prefix(root).unwrap_or(p).display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The config and logs, named: `config.json (PATH) and logs (PATH, …)`.
fn list(files: &[PathBuf]) -> String {
    let (config, logs): (Vec<&PathBuf>, Vec<&PathBuf>) =
        files.iter().partition(|p| p.ends_with("config.json"));
    let show = |v: &[&PathBuf]| {
        v.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (config.is_empty(), logs.is_empty()) {
        (false, false) => format!("its config ({}) and logs ({})", show(&config), show(&logs)),
        (false, true) => format!("its config ({})", show(&config)),
        _ => format!("logs ({})", show(&logs)),
    }
}
