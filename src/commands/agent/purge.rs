//! `oyster uninstall STACK --purge`: the stack's data goes too — the whole stack directory
//! (its config, logs, the Host's history such as `oysterun.sqlite`) — after a question that
//! names what goes (default No), or `--yes`; `--dry-run` names it and deletes nothing. The
//! AgentFolder (the user's agents) is never touched.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use crate::context::Context;
use crate::error::Invalid;

/// What a purge deletes.
pub struct Purge {
    /// The stack directory, deleted whole.
    pub root: PathBuf,
    /// Every file in it, for the question.
    files: Vec<PathBuf>,
}

/// The answer to the question.
pub enum Asked {
    Go(Purge),
    /// No (the default), EOF or Ctrl-C: nothing changed.
    Cancelled,
}

/// What `--purge` would delete; refused when the stack directory (or the one above it) is a
/// symlink: nothing is deleted through one.
fn plan(ctx: &Context) -> anyhow::Result<Purge> {
    let root = ctx.stack.root.clone();
    let parent = root.parent().filter(|p| *p != ctx.stack.home);
    for dir in std::iter::once(root.as_path()).chain(parent) {
        if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(crate::error::Failed::new(
                format!(
                    "{} is a symlink; --purge deletes nothing through one, so nothing was changed",
                    dir.display()
                ),
                "delete the stack's files yourself where the link points",
            )
            .into());
        }
    }
    let mut files = vec![];
    if root.is_dir() {
        walk(&root, &mut files)?;
    }
    files.sort();
    Ok(Purge { root, files })
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            walk(&e.path(), out)?;
        } else {
            out.push(e.path());
        }
    }
    Ok(())
}

/// What goes, in words: the directory, then each file in it (the first ones, then how many
/// more), and what stays.
fn described(ctx: &Context, p: &Purge) -> Vec<String> {
    const SHOWN: usize = 12;
    let mut lines = vec![format!(
        "{} and everything in it ({} file{}):",
        p.root.display(),
        p.files.len(),
        if p.files.len() == 1 { "" } else { "s" }
    )];
    for f in p.files.iter().take(SHOWN) {
        lines.push(format!(
            "  {}",
            f.strip_prefix(&p.root).unwrap_or(f).display()
        ));
    }
    if p.files.len() > SHOWN {
        lines.push(format!("  … and {} more", p.files.len() - SHOWN));
    }
    let st = &ctx.stack;
    for (what, dir) in [("config dir", &st.config_dir), ("log dir", &st.log_dir)] {
        if !dir.starts_with(&p.root) && dir.exists() {
            lines.push(format!(
                "kept: the {what} {} (outside the stack directory)",
                dir.display()
            ));
        }
    }
    lines
}

/// `--dry-run --purge`: names what would be deleted.
pub fn say_would(ctx: &Context) -> anyhow::Result<()> {
    let p = plan(ctx)?;
    ctx.out.out("--purge would also delete:");
    for line in described(ctx, &p) {
        ctx.out.out(&format!("  {line}"));
    }
    Ok(())
}

/// Asks before anything changes: on a terminal a `[y/N]` naming what goes; without one only
/// `--yes` deletes (else exit 2, nothing changed).
pub fn ask(ctx: &Context, yes: bool) -> anyhow::Result<Asked> {
    let p = plan(ctx)?;
    if yes {
        return Ok(Asked::Go(p));
    }
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    if !terminal {
        return Err(Invalid::new(format!(
            "--purge deletes {} and everything in it; without a terminal to ask on, pass --yes. Nothing was changed",
            p.root.display()
        ))
        .hint(format!("`oyster uninstall {} --purge --yes`", ctx.stack.name))
        .into());
    }
    ctx.out.out(&format!(
        "This deletes stack {}'s data for good:",
        ctx.stack.name
    ));
    for line in described(ctx, &p) {
        ctx.out.out(&format!("  {line}"));
    }
    ctx.out.out_inline(&format!(
        "Uninstall stack {} and delete all of this? [y/N] ",
        ctx.stack.name
    ));
    let _guard = crate::sys::signal::InterruptGuard::install();
    let line = crate::commands::setup::read_answer()?;
    if line.is_none() {
        ctx.out.raw(b"\n");
    }
    let a = line.unwrap_or_default().trim().to_ascii_lowercase();
    Ok(if a == "y" || a == "yes" {
        Asked::Go(p)
    } else {
        Asked::Cancelled
    })
}

/// Deletes the stack directory (after the job was uninstalled); says what it deleted.
pub fn delete(ctx: &Context, p: &Purge) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(&p.root) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => anyhow::bail!("could not delete {}: {e}", p.root.display()),
    }
    ctx.out.out(&format!(
        "Deleted {} ({} file{}).",
        p.root.display(),
        p.files.len(),
        if p.files.len() == 1 { "" } else { "s" }
    ));
    Ok(())
}
