//! The top level's help laid out in groups (daily verbs first, plumbing last), and what a
//! man page says beyond a command's one or two lines of help.

use super::help::columns_at;

/// The top-level commands by what a user does with them, in the order `oyster --help` and
/// oyster(1) list them: the daily verbs first, plumbing last. clap has one heading for every
/// subcommand (`subcommand_help_heading`), so the top level's help template lays these out; a
/// unit test keeps every command in exactly one group.
pub const GROUPS: &[(&str, &[&str])] = &[
    (
        "Every day",
        &[
            "status", "start", "stop", "restart", "list", "logs", "doctor", "open", "qr",
        ],
    ),
    (
        "Set up and remove",
        &["setup", "install", "uninstall", "cleanup"],
    ),
    ("Settings", &["providers", "env", "config"]),
    (
        "Plumbing",
        &[
            "agent",
            "host",
            "kill",
            "version",
            "completions",
            "man",
            "mdm",
            "inventory",
            "help",
        ],
    ),
];

/// clap's words for the `help` subcommand it adds when the tree is built.
const HELP_ABOUT: &str = "Print this message or the help of the given subcommand(s)";

/// What a man page says beyond a command's one or two lines of `--help` (its DESCRIPTION goes
/// on with it): the details a user reading `--help` does not need first.
const DETAILS: &[(&str, &str)] = &[(
    "restart",
    "A Host whose definition (the plist, or under systemd the unit) is unchanged gets a graceful restart: SIGTERM through launchd, then kickstart; SIGKILL only if the old Host outlives its exit timeout. A changed definition is reloaded instead (bootout, then bootstrap), because kickstart never re-reads a plist. Either way the new Host is verified: a new pid, /health answered from its own socket, the environment it runs with, and the same pid after the settle. A changed plist that does not verify is rolled back to the one it replaced.",
)];

/// The details of `name` for its man page, if it has any beyond its help.
pub fn details_for(name: &str) -> Option<&'static str> {
    DETAILS.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

/// The top level's help template: clap's about, usage and options, with the commands in
/// [`GROUPS`], each with its own `about` (its doc comment) and visible aliases, as clap would
/// show them.
pub(super) fn grouped_template(cmd: &clap::Command) -> clap::builder::StyledStr {
    let styles = cmd.get_styles();
    let (header, literal) = (styles.get_header(), styles.get_literal());
    // One text column for every group, two spaces after the longest name, as clap's.
    let longest = GROUPS
        .iter()
        .flat_map(|(_, names)| names.iter())
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0);
    let mut blocks = vec![];
    for (title, names) in GROUPS {
        let rows: Vec<(String, String)> = names
            .iter()
            .filter_map(|name| {
                let about = match cmd.find_subcommand(name) {
                    Some(sc) if sc.is_hide_set() => return None,
                    Some(sc) => {
                        let aliases: Vec<&str> = sc.get_visible_aliases().collect();
                        let about = sc.get_about().map(ToString::to_string).unwrap_or_default();
                        match aliases.as_slice() {
                            [] => about,
                            [one] => format!("{about} [alias: {one}]"),
                            many => format!("{about} [aliases: {}]", many.join(", ")),
                        }
                    }
                    None if *name == "help" => HELP_ABOUT.to_owned(),
                    None => return None,
                };
                Some(((*name).to_owned(), about))
            })
            .collect();
        let rows: Vec<(String, &str)> = rows.iter().map(|(n, a)| (n.clone(), a.as_str())).collect();
        let heading = format!("{header}{title}:{header:#}");
        blocks.push(columns_at(&heading, &rows, (2 + longest + 2, 2), &|n| {
            format!("{literal}{n}{literal:#}")
        }));
    }
    format!(
        "{{before-help}}{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{}\n\n{header}Options:{header:#}\n{{options}}{{after-help}}",
        blocks.join("\n\n")
    )
    .into()
}
