//! Unknown verbs answered by meaning rather than spelling: the words `brew services`,
//! launchctl and systemctl users type, each with the verb oyster names it.

use std::ffi::OsString;

use super::Cli;

/// Words people type for a verb oyster names otherwise (`brew services`, launchctl and
/// systemctl habits), each with the verb it means.
const MEANINGS: &[(&str, &str)] = &[
    ("info", "status"),
    ("show", "status"),
    ("state", "status"),
    ("health", "status"),
    ("ls", "list"),
    ("ps", "list"),
    ("stacks", "list"),
    ("run", "start"),
    ("up", "start"),
    ("load", "start"),
    ("enable", "start"),
    ("bootstrap", "start"),
    ("down", "stop"),
    ("halt", "stop"),
    ("unload", "stop"),
    ("disable", "stop"),
    ("bootout", "stop"),
    ("reload", "restart"),
    ("reboot", "restart"),
    ("bounce", "restart"),
    ("kickstart", "restart"),
    ("log", "logs"),
    ("tail", "logs"),
    ("remove", "uninstall"),
    // brew services: `rm`/`cl` are `cleanup` (remove unused services), not uninstall.
    ("rm", "cleanup"),
    ("cl", "cleanup"),
    ("delete", "uninstall"),
    ("add", "install"),
    ("clean", "cleanup"),
    ("prune", "cleanup"),
    ("gc", "cleanup"),
    ("check", "doctor"),
    ("diagnose", "doctor"),
    ("init", "setup"),
    ("configure", "setup"),
    // brew services: `terminate`/`term` stop a service (oyster's `kill` only signals it).
    ("terminate", "stop"),
    ("term", "stop"),
    ("signal", "kill"),
    ("provider", "providers"),
    ("completion", "completions"),
    // Oysterun 1.5.3's own words (`oysterun show-qr`, `npm run service:restart`, …).
    ("show-qr", "qr"),
    ("showqr", "qr"),
    ("service:install", "install"),
    ("service:start", "start"),
    ("service:stop", "stop"),
    ("service:restart", "restart"),
    ("service:status", "status"),
    ("service:logs", "logs"),
    ("service:uninstall", "uninstall"),
];

/// Words that mean a whole command of another room or program: `regenerate` is
/// `agent regenerate`; `update`/`upgrade` is Homebrew's (oyster updates through it).
const WHOLE: &[(&str, &str)] = &[
    ("regenerate", "oyster agent regenerate"),
    ("regen", "oyster agent regenerate"),
    ("print", "oyster agent print"),
    ("update", "brew upgrade oyster"),
    ("upgrade", "brew upgrade oyster"),
    ("self-update", "brew upgrade oyster"),
];

/// Words that only say "a service" (`brew services list`, `service oyster restart`): the
/// verb is the next word.
const SERVICE_WORDS: &[&str] = &["services", "service", "brew", "launchctl", "systemctl"];

/// For an unknown verb, the command it most likely means, by meaning rather than spelling:
/// `oyster services list` → `` `oyster list` ``, `oyster reload dev` → `` `oyster restart dev` ``.
/// `None` when no meaning fits (clap's nearest spelling is the tip then).
pub fn meant_verb(args: &[OsString]) -> Option<String> {
    let words: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cmd = Cli::whole();
    // The unknown word is the first that is not an option (or `--stack`'s value); under
    // `oyster agent` it is the word after `agent`.
    let mut i = 0;
    let mut scope: Vec<String> = vec![];
    // Options given before the verb, kept in the suggestion (after it, where clap takes them).
    let mut before: Vec<String> = vec![];
    let mut level = &cmd;
    while i < words.len() {
        let w = &words[i];
        if w == "--stack" {
            before.extend(words[i..(i + 2).min(words.len())].iter().cloned());
            i += 2;
            continue;
        }
        if w.starts_with('-') {
            before.push(w.clone());
            i += 1;
            continue;
        }
        match level.find_subcommand(w) {
            Some(sub) if sub.has_subcommands() => {
                scope.push(sub.get_name().to_owned());
                level = sub;
                i += 1;
            }
            _ => break,
        }
    }
    let unknown = words.get(i)?.to_ascii_lowercase();
    if scope.is_empty() {
        if let Some((_, whole)) = WHOLE.iter().find(|(w, _)| *w == unknown) {
            let mut line = vec![(*whole).to_owned()];
            if whole.starts_with("oyster ") {
                line.extend(words[i + 1..].iter().cloned());
                line.extend(before);
            }
            let after = if whole.starts_with("brew ") {
                " (oyster is updated through Homebrew; after upgrading Oysterun, `oyster agent regenerate`)"
            } else {
                ""
            };
            return Some(format!("try `{}`{after}", line.join(" ")));
        }
    }
    let exists = |v: &str| level.find_subcommand(v).is_some();
    let meaning = |w: &str| -> Option<String> {
        let w = w.to_ascii_lowercase();
        if exists(&w) {
            return Some(w);
        }
        MEANINGS
            .iter()
            .find(|(said, _)| *said == w)
            .map(|(_, verb)| (*verb).to_owned())
            .filter(|v| exists(v))
    };
    let (verb, rest) = if SERVICE_WORDS.contains(&unknown.as_str()) {
        match words.get(i + 1) {
            Some(next) => (meaning(next)?, &words[i + 2..]),
            None => ("list".to_owned(), &words[i + 1..]),
        }
    } else {
        (meaning(&unknown)?, &words[i + 1..])
    };
    let mut line = vec!["oyster".to_owned()];
    line.extend(scope);
    line.push(verb);
    line.extend(rest.iter().cloned());
    line.extend(before);
    Some(format!("try `{}`", line.join(" ")))
}
