//! The help text oyster lays out itself, for 80 columns: the environment block, the exit
//! status line, and every example (one table feeds `--help` and the man pages).

/// The environment variables oyster reads, for `--help` and the man page. (They are read
/// once into the run's context; clap's `env =` would hide whether a value came from a flag or
/// the environment, which oyster always says.)
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "HOME",
        "the home directory (~); the stack's files and the plist live under it",
    ),
    (
        "OYSTERUN_STACKS_DIR",
        "where non-production stacks live [default: ~/.oysterun-stacks]; absolute",
    ),
    (
        "OYSTERUN_CONFIG_DIR",
        "overrides the stack's config dir (said in output); absolute",
    ),
    (
        "OYSTERUN_ROOT",
        "the Oysterun install root, when --root is not given",
    ),
    (
        "OYSTERUN_NODE_BIN",
        "the Node to pin, when --node-bin is not given (must be valid)",
    ),
    (
        "OYSTER_LAUNCHCTL",
        "a launchctl-compatible program instead of /bin/launchctl (said in output); `none` means no launchd here (setup starts the Host directly)",
    ),
    (
        "OYSTER_LAUNCHCTL_TIMEOUT_SECS",
        "how long one launchctl call may take [default: 30, at most 3600]",
    ),
    (
        "OYSTER_CONSOLE_UID",
        "the uid that owns the console, instead of /dev/console's owner (said in output); a Host not loaded in gui/<uid> goes to user/<uid> when it is not yours",
    ),
    (
        "OYSTER_ENV_PROOF",
        "`exec` or `launchd`: prove the Host's environment as on Macs whose kernel hides it: from `host exec`'s own record, or from launchd's definition",
    ),
    (
        "OYSTER_MANAGED_PREFERENCES_DIR",
        "stands in for /Library/Managed Preferences, where an organization's profile forces values (said in output)",
    ),
    ("NO_COLOR", "no colour, even on a terminal"),
    (
        "COLUMNS",
        "the terminal's width, when the terminal does not say (prose is wrapped to it; piped output never)",
    ),
    (
        "npm_config_prefix",
        "also searched for the `oysterun` npm package (the Oysterun root)",
    ),
    (
        "PATH",
        "searched for providers and node (never given to the Host)",
    ),
];

/// The exit status line of `--help` (the man page has its own section).
pub const EXIT_STATUS_HELP: &str =
    "Exit status: 0 success (a cancel included), 1 the operation failed, 2 invalid input or usage.";

/// The widest line the help blocks oyster lays out itself may take: they read at 80 columns
/// (clap wraps only what is wider than the terminal, so a block that fits is left alone).
pub(super) const HELP_WIDTH: usize = 79;

/// Greedy word wrap of `text` into lines of at most `width` characters (a longer word stands
/// alone).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![];
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A titled two-column block (`Examples:`, `Environment:`) laid out for 80 columns: the text
/// column starts after the longest first column of at most `max_left` characters; a longer
/// one (or one with a text that would not fit) puts its text on the next lines, indented to
/// that column, wrapped there.
pub(super) fn two_columns(title: &str, rows: &[(String, &str)], max_left: usize) -> String {
    let left = rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .filter(|&n| n <= max_left)
        .max()
        .unwrap_or(0);
    columns_at(title, rows, (2 + left + 3, 3), &|s| s.to_owned())
}

/// [`two_columns`] with the text column at `col`, at least `gap` spaces after a first column
/// (a longer one stands alone), each first column drawn by `paint` (the commands, bold as
/// clap draws them); the layout counts the plain text.
pub(super) fn columns_at(
    title: &str,
    rows: &[(String, &str)],
    (col, gap): (usize, usize),
    paint: &dyn Fn(&str) -> String,
) -> String {
    let mut out = String::from(title);
    for (left, text) in rows {
        out.push_str("\n  ");
        out.push_str(&paint(left));
        if text.is_empty() {
            continue;
        }
        let lines = wrap(text, HELP_WIDTH - col);
        let fits = 2 + left.chars().count() + gap <= col;
        for (i, line) in lines.iter().enumerate() {
            if i == 0 && fits {
                let pad = col - 2 - left.chars().count();
                out.push_str(&" ".repeat(pad));
            } else {
                out.push('\n');
                out.push_str(&" ".repeat(col));
            }
            out.push_str(line);
        }
    }
    out
}

/// The `Environment:` block of `oyster --help` (and the exit status line).
pub fn environment_help() -> String {
    let rows: Vec<(String, &str)> = ENVIRONMENT
        .iter()
        .map(|(k, v)| ((*k).to_owned(), *v))
        .collect();
    format!(
        "{}\n\n{EXIT_STATUS_HELP}",
        two_columns("Environment:", &rows, 20)
    )
}

/// An `Examples:` block: commands, and a comment in a column after them (on the next line
/// for a long command), laid out for 80 columns.
fn example_block(rows: &[(String, &str)]) -> String {
    two_columns("Examples:", rows, 36)
}

/// Each command's examples, for its `--help` and man page (one table, not a function).
const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    (
        "setup",
        &[
            ("oyster setup", "plan, ask once, apply, verify"),
            ("oyster setup --dry-run", "print the plan; change nothing"),
            (
                "oyster setup --no-install-providers --yes",
                "set up the Host; install no provider",
            ),
            (
                "oyster setup --install-providers",
                "no question: install what is missing",
            ),
            (
                "oyster setup dev --port 8810 --root ~/src/oysterun --no-start",
                "",
            ),
        ],
    ),
    (
        "status",
        &[
            ("oyster status", "installed, loaded, running, verified?"),
            ("oyster status staging --json", "the facts, for scripts"),
            ("oyster info dev", "the same (as `brew services info`)"),
        ],
    ),
    (
        "start",
        &[
            ("oyster start", "undo `stop`: enable, load, verify"),
            ("oyster start dev", "the stack named dev"),
            ("oyster start --all", "every stack on this machine"),
        ],
    ),
    (
        "stop",
        &[
            ("oyster stop", "stays stopped across logins"),
            ("oyster stop --all", "every stack on this machine"),
        ],
    ),
    (
        "restart",
        &[
            ("oyster restart", "restart and verify"),
            (
                "oyster restart dev --wait 60",
                "wait up to 60 s for /health",
            ),
            (
                "oyster restart --restore-sessions",
                "the Host restores its sessions",
            ),
            ("oyster restart --all --no-qr", "every stack; no login QR"),
        ],
    ),
    (
        "logs",
        &[
            ("oyster logs", "the last 20 lines"),
            (
                "oyster logs staging -n 200",
                "the last 200 lines of staging",
            ),
            ("oyster logs -f", "follow; Ctrl-C ends it"),
        ],
    ),
    (
        "list",
        &[
            ("oyster list", "one line per stack (also: oyster ls)"),
            ("oyster list --json", "every stack's status document"),
        ],
    ),
    (
        "kill",
        &[("oyster kill", "SIGTERM the Host; launchd starts it again")],
    ),
    (
        "install",
        &[
            ("oyster install", "write, load and verify the LaunchAgent"),
            ("oyster install dev --port 8810 --root ~/src/oysterun", ""),
        ],
    ),
    (
        "uninstall",
        &[
            (
                "oyster uninstall",
                "boot out, remove the plist; keep config and logs",
            ),
            (
                "oyster uninstall --all",
                "every stack (before `brew uninstall oyster`)",
            ),
        ],
    ),
    (
        "cleanup",
        &[
            (
                "oyster cleanup",
                "list the leftover stacks; ask on a terminal",
            ),
            ("oyster cleanup --yes", "remove them without asking"),
        ],
    ),
    (
        "doctor",
        &[
            ("oyster doctor", "what is wrong, and the fix"),
            ("oyster doctor --json | jq .ok", ""),
            ("oyster doctor --probe", "also run `<provider> --version`"),
        ],
    ),
    (
        "config",
        &[
            ("oyster config show", "secrets redacted"),
            ("oyster config show --json", ""),
            ("oyster config sync --stack dev --port 8810", ""),
        ],
    ),
    (
        "env",
        &[
            ("oyster env", "the declared variables, by name"),
            (
                "oyster env set HTTPS_PROXY --value-stdin < proxy.txt",
                "a secret never in argv",
            ),
            ("oyster env set NO_PROXY 127.0.0.1,localhost --restart", ""),
            ("oyster env unset HTTPS_PROXY", ""),
        ],
    ),
    (
        "host",
        &[
            (
                "oyster host start --root ~/src/oysterun",
                "start the Host without launchd (Linux)",
            ),
            ("oyster host status --json", ""),
            ("oyster host stop", ""),
        ],
    ),
    (
        "completions",
        &[
            ("oyster completions zsh > ~/.zfunc/_oyster", ""),
            (
                "oyster completions bash > /etc/bash_completion.d/oyster",
                "",
            ),
        ],
    ),
    (
        "man",
        &[
            ("oyster man | man -l -", "read oyster(1)"),
            (
                "oyster man --dir share/man/man1",
                "every page, for packagers",
            ),
        ],
    ),
    (
        "version",
        &[
            ("oyster version", "the same as `oyster --version`"),
            (
                "oyster version --verbose",
                "also each stack's Node and Oysterun",
            ),
        ],
    ),
    (
        "open",
        &[
            ("oyster open", "the Host's URL, in the browser"),
            ("oyster open dev", "the stack named dev"),
        ],
    ),
    ("qr", &[("oyster qr", "show the login QR again")]),
    (
        "inventory",
        &[
            ("sudo oyster inventory --json", "every user's stacks"),
            (
                "oyster inventory --result problems",
                "one value, for a Jamf extension attribute",
            ),
        ],
    ),
    (
        "mdm",
        &[
            (
                "oyster mdm profile --output oysterun.mobileconfig",
                "upload it to your MDM",
            ),
            ("oyster mdm profile --organization \"Example Inc.\"", ""),
        ],
    ),
];

/// A command's examples block (empty for a command without examples).
pub fn examples_for(name: &str) -> String {
    let rows = EXAMPLES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(&[][..], |(_, rows)| rows);
    let rows: Vec<(String, &str)> = rows.iter().map(|(c, w)| ((*c).to_owned(), *w)).collect();
    example_block(&rows)
}

/// `oyster --help` examples (also the man page's EXAMPLES). Provider names come from the
/// registry, like everything else about providers.
pub fn examples() -> String {
    let p = crate::provider::registry::PROVIDERS.last();
    let (id, name) = p.map_or(("PROVIDER", "a provider"), |p| {
        (p.id.as_str(), p.display_name)
    });
    let without = format!("do without {name}");
    example_block(&[
        (
            "oyster setup".into(),
            "set up the Host (asks before installing)",
        ),
        (
            "oyster status".into(),
            "installed, loaded, running, verified?",
        ),
        (
            "oyster logs -f".into(),
            "follow the Host log (secrets redacted)",
        ),
        ("oyster restart dev".into(), "restart stack dev, verify it"),
        ("oyster list".into(), "every stack on this machine"),
        (format!("oyster providers set {id} \"\""), &without),
        ("oyster doctor".into(), "what is wrong, and the fix"),
    ])
}

/// `oyster agent --help` examples.
pub fn agent_examples() -> String {
    example_block(&[
        (
            "oyster agent status --json".into(),
            "the facts, for scripts",
        ),
        (
            "oyster agent stop".into(),
            "stop the Host; stays stopped at login",
        ),
        (
            "oyster agent start".into(),
            "undo `stop`: enable, load, verify",
        ),
        (
            "oyster agent kill".into(),
            "SIGTERM the Host; launchd starts it again",
        ),
        (
            "oyster agent regenerate --dry-run".into(),
            "what an upgrade would change",
        ),
        (
            "oyster agent uninstall --all".into(),
            "every stack (config and logs kept)",
        ),
        (
            "oyster agent install --stack dev --port 8810 --root ~/src/oysterun".into(),
            "",
        ),
    ])
}

/// `oyster providers --help` examples (names from the registry).
pub fn providers_examples() -> String {
    let ids: Vec<&str> = crate::provider::registry::PROVIDERS
        .iter()
        .map(|p| p.id.as_str())
        .collect();
    let first = ids.first().copied().unwrap_or("PROVIDER");
    let last = ids.last().copied().unwrap_or("PROVIDER");
    example_block(&[
        ("oyster providers status".into(), ""),
        (
            format!("oyster providers set {first} ~/.local/bin/{first}"),
            "always use this one (manual)",
        ),
        (format!("oyster providers set {last} \"\""), "disable it"),
        (
            format!("oyster providers auto {last}"),
            "let oyster find it again",
        ),
        (
            "oyster agent regenerate".into(),
            "give the running Host the change",
        ),
    ])
}

/// The command line as `--help`, `help`, the man pages and the completion scripts show it:
/// clap's tree with every command's examples and the environment block. Laid out only when
/// one of those is asked for (the examples are most of what building the tree costs, and
/// every other run never shows them).
pub fn with_help(cmd: clap::Command) -> clap::Command {
    fn annotate(sc: clap::Command, group: Option<&str>) -> clap::Command {
        let name = sc.get_name().to_owned();
        let text = match (group, name.as_str()) {
            (None, "agent") => agent_examples(),
            (None, "providers") => providers_examples(),
            _ => examples_for(&name),
        };
        let mut sc = if text.is_empty() {
            sc
        } else {
            sc.after_help(text)
        };
        if group.is_none() && name == "agent" {
            let subs: Vec<String> = sc
                .get_subcommands()
                .map(|c| c.get_name().to_owned())
                .collect();
            for sub in subs {
                sc = sc.mut_subcommand(sub, |c| annotate(c, Some("agent")));
            }
        }
        sc
    }
    let mut cmd = cmd.after_help(examples()).after_long_help(format!(
        "{}\n\n{}",
        examples(),
        environment_help()
    ));
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    for name in subs {
        let order = super::top_help::GROUPS
            .iter()
            .flat_map(|(_, names)| names.iter())
            .position(|n| *n == name);
        cmd = cmd.mut_subcommand(name, |c| {
            let c = annotate(c, None);
            match order {
                Some(i) => c.display_order(i),
                None => c,
            }
        });
    }
    let template = super::top_help::grouped_template(&cmd);
    cmd.help_template(template)
}
