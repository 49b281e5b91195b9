//! The man pages: `oyster(1)` and one page per subcommand (`oyster-agent(1)`, …), each with
//! EXAMPLES, FILES, ENVIRONMENT and EXIT STATUS. clap_mangen renders what clap knows (name,
//! synopsis, options, subcommands); the sections a man page reader expects beyond that are
//! written here, from the same text `--help` shows where there is one.

use std::io::Write;
use std::path::Path;

use clap::Command;

/// FILES, common to every page (the stack table of docs/behaviour.md).
const FILES: &[(&str, &str)] = &[
    (
        "~/.oysterun/config.json",
        "the production stack's config (provider commands, port, …)",
    ),
    (
        "~/.oysterun/logs/oysterun-host.log",
        "the production Host's log (`oyster logs`)",
    ),
    (
        "~/.oysterun/logs/service-control.jsonl",
        "the audit log of every lifecycle step",
    ),
    (
        "~/.oysterun/run/",
        "pid and identity files, the receipt of a change in progress",
    ),
    (
        "~/Library/Application Support/oyster/locks/LABEL.lock",
        "each stack's lifecycle lock (~/.local/state/oyster/locks on Linux)",
    ),
    (
        "~/.oysterun-stacks/NAME/{host,run,logs}/",
        "the same for stack NAME ($OYSTERUN_STACKS_DIR)",
    ),
    (
        "~/Library/LaunchAgents/com.oysterun.host[.NAME].plist",
        "the LaunchAgent of each stack",
    ),
];

const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "success (a cancelled setup included); `status`: the Host runs and is verified"),
    ("1", "the operation failed; `status`: the Host is not running or not verified"),
    ("2", "invalid input or usage: a bad flag, an unsupported provider, a corrupt config, an unknown stack"),
    ("130, 143, 129", "interrupted by SIGINT, SIGTERM or SIGHUP, after rolling back"),
];

/// Escapes text for roff: backslashes, and a leading `.` or `'` that would read as a request.
fn esc(text: &str) -> String {
    let s = text.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

fn section(out: &mut Vec<u8>, title: &str) {
    let _ = writeln!(out, ".SH {title}");
}

fn tagged(out: &mut Vec<u8>, items: &[(&str, &str)]) {
    for (tag, text) in items {
        let _ = writeln!(out, ".TP\n\\fB{}\\fR\n{}", esc(tag), esc(text));
    }
}

/// The command's `Examples:` block (its `after_help`, from the one table in `cli`), unindented.
fn examples_of(cmd: &Command) -> Option<String> {
    let text = cmd.get_after_help()?.to_string();
    let body = text.strip_prefix("Examples:\n").unwrap_or(&text);
    Some(
        body.lines()
            .map(|l| l.strip_prefix("  ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// Each subcommand's own options under its own heading (`oyster agent restart`), so every
/// option of a nested verb is on a page (there is no oyster-agent-restart(1)).
fn nested_options(out: &mut Vec<u8>, cmd: &Command, bin: &str) -> anyhow::Result<()> {
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let sub = sub
            .clone()
            .after_help(None::<&str>)
            .after_long_help(None::<&str>);
        let _ = writeln!(out, ".SS \"{} {}\"", esc(bin), esc(sub.get_name()));
        if let Some(about) = sub.get_long_about().or(sub.get_about()) {
            let _ = writeln!(out, "{}", esc(&about.to_string()));
        }
        if let Some(details) = crate::cli::details_for(sub.get_name()) {
            let _ = writeln!(out, ".PP\n{}", esc(details));
        }
        let aliases: Vec<&str> = sub.get_visible_aliases().collect();
        if !aliases.is_empty() {
            let _ = writeln!(out, ".br\nAlso: {}", esc(&aliases.join(", ")));
        }
        let mut buf = vec![];
        clap_mangen::Man::new(sub).render_options_section(&mut buf)?;
        let text = String::from_utf8_lossy(&buf);
        // clap_mangen titles it `.SH OPTIONS`; here it is part of the subcommand's section.
        for line in text.lines().filter(|l| !l.starts_with(".SH")) {
            let _ = writeln!(out, "{line}");
        }
    }
    Ok(())
}

/// SUBCOMMANDS: oyster(1) points at the pages that exist (oyster-agent(1), …) in the groups
/// `--help` shows; a subcommand's page lists its own subcommands as they are typed (there is
/// no oyster-agent-stop(1)), then each one's options.
fn subcommands_section(out: &mut Vec<u8>, cmd: &Command, name: &str) -> anyhow::Result<()> {
    section(out, "SUBCOMMANDS");
    let about = |sub: &Command| sub.get_about().map(|a| a.to_string()).unwrap_or_default();
    if name == "oyster" {
        for (title, names) in crate::cli::GROUPS {
            let _ = writeln!(out, ".SS \"{}\"", esc(title));
            // clap's `help` is `--help`, not a page.
            let subs = names.iter().filter(|n| **n != "help");
            for sub in subs.filter_map(|n| cmd.find_subcommand(n)) {
                let tag = format!("oyster-{}(1)", sub.get_name());
                tagged(out, &[(tag.as_str(), about(sub).as_str())]);
            }
        }
        return Ok(());
    }
    let bin = cmd.get_bin_name().unwrap_or(cmd.get_name()).to_owned();
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let tag = format!("{bin} {}", sub.get_name());
        tagged(out, &[(tag.as_str(), about(sub).as_str())]);
    }
    nested_options(out, cmd, &bin)
}

/// One page: clap's sections, then EXAMPLES, FILES, ENVIRONMENT, EXIT STATUS, SEE ALSO.
fn render(cmd: Command, name: &str, out: &mut Vec<u8>) -> anyhow::Result<()> {
    let examples = examples_of(&cmd);
    let subcommands: Vec<String> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| s.get_name().to_owned())
        .collect();
    // The `Examples:`/`Environment:` text is ours to place; clap's "extra" section would
    // repeat it untitled.
    let mut cmd = cmd.after_help(None::<&str>).after_long_help(None::<&str>);
    // What the page says beyond `--help`'s one or two lines, after them.
    if let Some(details) = crate::cli::details_for(name) {
        let about = cmd.get_about().map(ToString::to_string).unwrap_or_default();
        cmd = cmd.long_about(format!("{about}\n\n{details}"));
    }
    let man = clap_mangen::Man::new(cmd.clone())
        .source(format!("oyster {}", cmd.get_version().unwrap_or_default()));
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(out)?;
    }
    if !subcommands.is_empty() {
        subcommands_section(out, &cmd, name)?;
    }
    if let Some(ex) = examples {
        section(out, "EXAMPLES");
        let _ = writeln!(out, ".nf\n.RS 4");
        for line in ex.lines() {
            let _ = writeln!(out, "{}", esc(line));
        }
        let _ = writeln!(out, ".RE\n.fi");
    }
    section(out, "FILES");
    tagged(out, FILES);
    section(out, "ENVIRONMENT");
    tagged(out, crate::cli::ENVIRONMENT);
    section(out, "EXIT STATUS");
    tagged(out, EXIT_STATUS);
    section(out, "SEE ALSO");
    let mut see: Vec<String> = if name == "oyster" {
        subcommands
            .iter()
            .map(|s| format!("oyster-{s}(1)"))
            .collect()
    } else {
        vec!["oyster(1)".to_owned()]
    };
    see.push("launchctl(1)".to_owned());
    see.push("launchd.plist(5)".to_owned());
    let _ = writeln!(out, "{}", esc(&see.join(", ")));
    if cmd.get_version().is_some() {
        man.render_version_section(out)?;
    }
    Ok(())
}

/// `oyster man`: the main page on stdout.
pub fn render_main(mut cmd: Command, out: &mut Vec<u8>) -> anyhow::Result<()> {
    cmd.build();
    render(cmd, "oyster", out)
}

/// Every page's file name and roff, `oyster.1` first.
pub fn pages(mut cmd: Command) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    cmd.build();
    let mut pages = vec![];
    // clap's own `help` subcommand is `--help`, not a page.
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let name = sub.get_name().to_owned();
        let mut bytes = vec![];
        render(sub.clone(), &name, &mut bytes)?;
        pages.push((format!("oyster-{name}.1"), bytes));
    }
    let mut main = vec![];
    render(cmd, "oyster", &mut main)?;
    pages.insert(0, ("oyster.1".to_owned(), main));
    Ok(pages)
}

/// `oyster man --dir DIR`: every page written into DIR (created if missing).
/// Writes every page into `dir`; returns how many.
pub fn write_all(cmd: Command, dir: &Path) -> anyhow::Result<usize> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("could not create {}: {e}", crate::output::one_line(dir)))?;
    let pages = pages(cmd)?;
    for (file, bytes) in &pages {
        let path = dir.join(file);
        std::fs::write(&path, bytes).map_err(|e| {
            anyhow::anyhow!("could not write {}: {e}", crate::output::one_line(&path))
        })?;
    }
    Ok(pages.len())
}
