//! clap's parse errors in oyster's one error style: `oyster: error: …` with `hint:` for its
//! tips, the verb's whole usage, and the words a user meant.

use std::ffi::OsString;

use clap::error::ErrorKind;

use super::Cli;

/// The whole usage of the verb a usage line is about (`oyster restart <STACK>` →
/// `Usage: oyster restart [OPTIONS] [STACK]`).
fn full_usage(line: &str) -> Option<String> {
    let mut cmd = Cli::whole();
    cmd.build();
    let words = line
        .split_whitespace()
        .skip(1)
        .take_while(|w| !w.starts_with(['<', '[', '-']));
    let mut at = &cmd;
    for w in words {
        at = at.find_subcommand(w)?;
    }
    Some(at.clone().render_usage().to_string())
}

/// What clap said, as oyster says it: the message (with the verb's whole usage where clap
/// showed a partial one) and the hint (clap's tips, reworded or replaced by the verb meant).
pub fn reword(e: &clap::Error, args: &[OsString]) -> (String, Option<String>) {
    let text = e.render().to_string();
    let (first, mut rest, mut hints) = sort_lines(e, &text);
    let mut msg = first.strip_prefix("error: ").unwrap_or(&first).to_owned();
    // `--stack` after a verb that is not about one stack (`oyster list --stack dev`): said as
    // the refusal it is, with the value it would have ignored.
    if e.kind() == ErrorKind::UnknownArgument
        && e.get(clap::error::ContextKind::InvalidArg)
            .is_some_and(|v| v.to_string().starts_with("--stack"))
    {
        let value = args
            .iter()
            .skip_while(|a| *a != "--stack")
            .nth(1)
            .map(|v| v.to_string_lossy().into_owned())
            .unwrap_or_default();
        msg = format!(
            "this command is not about one stack, so it takes no --stack (--stack {value} would be ignored)"
        );
    }
    // `oyster env set NAME my secret phrase`: a value of several words, unquoted. clap names
    // the first word it did not expect, a part of a secret; said without it.
    if e.kind() == ErrorKind::UnknownArgument && text.contains("Usage: oyster env set") {
        msg = "`env set` takes one value after the name, and more words were given (they are not shown): quote a value with spaces, or give it on stdin with --value-stdin".to_owned();
        hints.clear();
    }
    // Everything clap says between the message and its tips (a usage line, an empty line);
    // with the tips taken out, the empty lines around them are one.
    rest.dedup_by(|a, b| a.trim().is_empty() && b.trim().is_empty());
    while rest.last().is_some_and(|l| l.trim().is_empty()) {
        rest.pop();
    }
    if !rest.is_empty() {
        msg.push('\n');
        msg.push_str(&rest.join("\n"));
    }
    // An unknown verb: the real one it means (`oyster services list` is `oyster list`) is
    // a better tip than clap's nearest spelling.
    if e.kind() == ErrorKind::InvalidSubcommand {
        if let Some(meant) = super::meant_verb(args) {
            hints.retain(|h| !h.contains("similar subcommand"));
            hints.insert(0, meant);
        }
    }
    let hint = (!hints.is_empty()).then(|| hints.join("; "));
    (msg, hint)
}

/// clap's rendered error split into its first line, the lines between (a usage line, empty
/// lines) and its tips.
fn sort_lines(e: &clap::Error, text: &str) -> (String, Vec<String>, Vec<String>) {
    let mut lines = text.trim_end().lines();
    let first = lines.next().unwrap_or_default().to_owned();
    let mut rest: Vec<String> = vec![];
    let mut hints: Vec<String> = vec![];
    for line in lines {
        let trimmed = line.trim();
        if let Some(tip) = trimmed.strip_prefix("tip: ") {
            // clap's "to pass '--x' as a value, use '-- --x'": oyster's only positionals are
            // stack names (and fixed words), so typed as told it is refused again; for `--all`,
            // say which verbs take it.
            if tip.starts_with("to pass '") && tip.contains("as a value, use '-- ") {
                if tip.starts_with("to pass '--all'") {
                    hints.push(
                        "--all is taken by start, stop, restart, uninstall and status (`oyster list` shows every stack)"
                            .to_owned(),
                    );
                }
                continue;
            }
            hints.push(tip.to_owned());
        } else if trimmed.starts_with("For more information, try") {
            hints.push(trimmed.replace("For more information, try", "for more information, try"));
        } else if let Some(full) = line
            .strip_prefix("Usage: ")
            .filter(|_| {
                matches!(
                    e.kind(),
                    ErrorKind::ArgumentConflict | ErrorKind::UnknownArgument
                )
            })
            .and_then(full_usage)
        {
            // clap's conflict usage names only the two arguments (`oyster restart <STACK>`,
            // as if the stack were required), and its unknown-argument usage only those typed
            // (`oyster status <STACK>` after `oyster info dev --all`): the verb's whole usage.
            rest.push(full);
        } else {
            rest.push(line.to_owned());
        }
    }
    (first, rest, hints)
}
