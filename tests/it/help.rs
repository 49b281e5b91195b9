//! Help, man pages and completions (issue 22, item 3): `--help` reads at 80 columns (piped
//! with COLUMNS=80, and on a real 80-column terminal), every option of a nested verb is on a
//! man page, the examples of `--help` and the man pages are the same text, `--stack`
//! completes the stacks on disk, and `providers status` says authentication.

use std::process::Command;

use crate::common::{args, free_port, runner_tool, TestContext, BIN};
use crate::common::{has_all, has_none};

/// `oyster ARGS` with COLUMNS=80 and stdout piped (clap's width then comes from COLUMNS).
fn help80(t: &TestContext, args: &[&str]) -> String {
    let mut c = t.cmd();
    c.args(args).env("COLUMNS", "80");
    let out = c.output().unwrap();
    assert!(out.status.success(), "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The lines of the block titled `title` (up to the next empty line).
fn block<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    text.lines().skip_while(|l| *l != title).skip(1).take_while(|l| !l.is_empty()).collect()
}

/// Each row of a two-column block starts at column 2; a continuation is indented to the text
/// column (never back at column 2, which is what a terminal-wrapped line looks like).
#[track_caller]
fn reads_at_80(text: &str, title: &str, first_word: impl Fn(&str) -> bool) {
    let rows = block(text, title);
    assert!(rows.len() > 3, "no {title} block:\n{text}");
    for l in &rows {
        assert!(l.chars().count() <= 80, "wider than 80: {l:?}\n{text}");
        let indent = l.len() - l.trim_start().len();
        let word = l.split_whitespace().next().unwrap_or_default();
        assert!(
            (indent == 2 && first_word(word)) || indent >= 20,
            "{title}: {l:?} wraps back to the left\n{text}"
        );
    }
}

fn env_name(w: &str) -> bool {
    w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[test]
fn the_help_reads_at_80_columns_piped_and_on_a_terminal() {
    let t = TestContext::new();
    for args in [&["--help"][..], &["agent", "--help"], &["restart", "--help"]] {
        let text = help80(&t, args);
        for l in text.lines() {
            assert!(l.chars().count() <= 80, "{args:?}: {l:?}");
        }
        reads_at_80(&text, "Examples:", |w| w == "oyster");
    }
    let text = help80(&t, &["--help"]);
    reads_at_80(&text, "Environment:", env_name);
    has_all(&text, &["\n  OYSTER_LAUNCHCTL_TIMEOUT_SECS\n"]);
    // completions and man are listed.
    has_all(&text, &["\n  completions ", "\n  man "]);

    // The same on a real terminal 80 columns wide (clap asks the terminal, not COLUMNS).
    let r = t.pty(b"", ["--help"]);
    let shown = r["output"].as_str().unwrap().replace("\r\n", "\n");
    assert_eq!(r["code"], 0, "{r}");
    reads_at_80(&shown, "Environment:", env_name);
    reads_at_80(&shown, "Examples:", |w| w == "oyster");
    let r = t.pty(b"", ["agent", "--help"]);
    let shown = r["output"].as_str().unwrap().replace("\r\n", "\n");
    reads_at_80(&shown, "Examples:", |w| w == "oyster");
}

/// Roff as man prints it: `\-` is `-`.
fn page(dir: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(format!("{name}.1")))
        .unwrap_or_else(|e| panic!("{name}.1: {e}"))
        .replace("\\-", "-")
        .replace("\\e", "\\")
}

/// The long options a `--help` lists.
fn options(help: &str) -> Vec<String> {
    help.lines()
        .map(str::trim_start)
        .filter_map(|l| {
            let l = l.strip_prefix("-")?;
            let long = l.split(", ").last().unwrap_or(l);
            let long = long.strip_prefix('-').unwrap_or(long);
            long.strip_prefix('-').map(|f| f.split([' ', '<', '=']).next().unwrap().to_owned())
        })
        .filter(|f| f != "help" && f != "version")
        .collect()
}

/// The subcommands a `--help` lists: a group's under `Commands:`, the top level's under its
/// headings (each row at column 2, up to the arguments and options).
pub fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Usage:"))
        .skip(1)
        .take_while(|l| *l != "Arguments:" && *l != "Options:")
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .filter(|s| s != "help")
        .collect()
}

/// `oyster --help` (and `-h`, `help`) lists the daily verbs first, under their own heading,
/// and plumbing last; each command once.
#[test]
fn the_top_level_help_puts_the_daily_verbs_first_and_plumbing_last() {
    let t = TestContext::new();
    for args in [&["--help"][..], &["-h"], &["help"]] {
        let help = t.run(args).ok().stdout();
        let headings: Vec<&str> = help
            .lines()
            .skip_while(|l| !l.starts_with("Usage:"))
            .filter(|l| l.ends_with(':') && !l.starts_with(' '))
            .take_while(|l| *l != "Options:")
            .collect();
        assert_eq!(
            headings,
            ["Every day:", "Set up and remove:", "Settings:", "Plumbing:"],
            "{args:?}:\n{help}"
        );
        let names = |title: &str| -> Vec<String> {
            block(&help, title)
                .iter()
                .filter(|l| !l.starts_with("   "))
                .map(|l| l.split_whitespace().next().unwrap().to_owned())
                .collect()
        };
        assert_eq!(
            names("Every day:"),
            ["status", "start", "stop", "restart", "list", "logs", "doctor", "open", "qr"],
            "{help}"
        );
        let plumbing = names("Plumbing:");
        for p in ["agent", "host", "completions", "man", "mdm", "inventory", "help"] {
            assert!(plumbing.contains(&p.to_owned()), "{p}: {help}");
        }
        let mut all = subcommands(&help);
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "a command listed twice:\n{help}");
        // Aliases as clap says them, and every row fits 80 columns.
        assert!(help.contains("[alias: info]") && help.contains("[alias: ls]"), "{help}");
        assert!(help.lines().all(|l| l.chars().count() <= 80), "{help}");
    }
}

/// `restart`'s help says what it does in one or two lines; how it restarts is its man page's
/// (and `agent restart`'s section of oyster-agent(1)).
#[test]
fn restart_help_is_two_lines_and_its_man_page_has_the_details() {
    let t = TestContext::new();
    for args in [&["restart", "--help"][..], &["agent", "restart", "--help"]] {
        let help = help80(&t, args);
        let about: Vec<&str> = help.lines().take_while(|l| !l.is_empty()).collect();
        assert!(about.len() <= 2, "{args:?}:\n{help}");
        assert!(about[0].starts_with("Restart the Host and verify it"), "{help}");
        assert!(!help.contains("SIGKILL"), "{help}");
    }
    let top = help80(&t, &["--help"]);
    let row: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.starts_with("  restart "))
        .take_while(|l| l.starts_with("  restart ") || l.starts_with("     "))
        .collect();
    assert!(!row.is_empty() && row.len() <= 2, "{top}");
    let dir = t.path("man1");
    t.run(["man", "--dir", dir.to_str().unwrap()]).ok();
    // oyster(1) lists the pages in the groups of `--help`; clap's `help` has none.
    let main = page(&dir, "oyster");
    let every_day = main.find(".SS \"Every day\"").expect("oyster.1 has no groups");
    let plumbing = main.find(".SS \"Plumbing\"").unwrap();
    assert!(every_day < main.find("oyster-restart(1)").unwrap());
    assert!(plumbing < main.find("oyster-inventory(1)").unwrap());
    assert!(!main.contains("oyster-help(1)"));
    for name in ["oyster-restart", "oyster-agent"] {
        let text = page(&dir, name);
        for detail in ["graceful restart", "SIGKILL only if", "kickstart never re-reads a plist"] {
            assert!(text.contains(detail), "{name}.1 lacks {detail:?}");
        }
    }
}

#[test]
fn every_option_of_every_verb_is_on_a_man_page_with_the_examples_of_its_help() {
    let t = TestContext::new();
    let dir = t.path("man1");
    t.run(["man", "--dir", dir.to_str().unwrap()]).ok();
    let top = t.run(["--help"]).ok().stdout();
    let verbs = subcommands(&top);
    assert!(verbs.contains(&"cleanup".to_owned()) && verbs.contains(&"kill".to_owned()));
    for verb in &verbs {
        let help = t.run([verb.as_str(), "--help"]).ok().stdout();
        let text = page(&dir, &format!("oyster-{verb}"));
        for opt in options(&help) {
            assert!(text.contains(&format!("--{opt}")), "oyster-{verb}.1 lacks --{opt}");
        }
        // The examples of `--help` are the page's EXAMPLES, line for line.
        for ex in block(&help, "Examples:") {
            let cmd = ex.trim();
            assert!(text.contains(cmd), "oyster-{verb}.1 lacks the example {cmd:?}");
        }
        // A nested verb's options are on its parent's page (there is no oyster-agent-stop.1).
        for sub in subcommands(&help) {
            let sub_help = t.run([verb.as_str(), sub.as_str(), "--help"]).ok().stdout();
            let heading = format!(".SS \"oyster {verb} {sub}\"");
            assert!(text.contains(&heading), "oyster-{verb}.1 lacks {heading}");
            let section: String =
                text.split(&heading).nth(1).unwrap().split(".SS ").next().unwrap().to_owned();
            for opt in options(&sub_help) {
                assert!(
                    section.contains(&format!("--{opt}")),
                    "oyster-{verb}.1 lacks --{opt} of `{verb} {sub}`"
                );
            }
        }
    }
    let agent = page(&dir, "oyster-agent");
    for opt in ["--dry-run", "--no-restart", "--no-start", "--json", "--restore-sessions", "--all"]
    {
        assert!(agent.contains(opt), "{opt}");
    }
    // An alias's page is the full page of what it runs, not "Alias of".
    let restart = page(&dir, "oyster-restart");
    assert!(!restart.contains("Alias of") && restart.contains("graceful restart"));
}

#[test]
fn stack_completes_the_stacks_on_disk() {
    let t = TestContext::new();
    for s in ["dev", "qa"] {
        t.run(args(&["config", "sync"]).stack(s).port(free_port())).ok();
    }
    assert_eq!(t.run(["__complete-stacks"]).ok().stdout(), "dev\nqa\n");
    // Hidden: not in --help, no man page.
    assert!(!t.run(["--help"]).ok().stdout().contains("__complete"));
    let Some(bash) = runner_tool("bash") else {
        return;
    };
    let script = t.run(["completions", "bash"]).ok().stdout();
    let file = t.path("oyster.bash");
    std::fs::write(&file, script).unwrap();
    let bin_dir = std::path::Path::new(BIN).parent().unwrap();
    // What bash offers for the words typed so far (the last one being completed, maybe empty).
    let offered = |words: &str| {
        let cword = words.split_whitespace().count() - usize::from(!words.ends_with(' '));
        let out = Command::new(&bash)
            .args([
                "-c",
                r#"source "$1"; read -ra COMP_WORDS <<<"$2"; COMP_CWORD=$3; _oyster oyster "${COMP_WORDS[$3]}" "${COMP_WORDS[$3-1]}"; printf '%s\n' "${COMPREPLY[@]}""#,
                "x",
                file.to_str().unwrap(),
                words,
                &cword.to_string(),
            ])
            .env_clear()
            .env("HOME", &t.home)
            .env("OYSTER_LAUNCHCTL", "none")
            .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(offered("oyster restart --stack "), "dev\nqa\n");
    // The plain STACK after a verb, in any of its forms (an alias, `agent VERB`, `host VERB`).
    for words in [
        "oyster restart d",
        "oyster info d",
        "oyster agent restart d",
        "oyster host start d",
        "oyster logs d",
    ] {
        assert_eq!(offered(words), "dev\n", "{words}");
    }
    // A verb about no one stack (`list`) is not offered stacks.
    let list = offered("oyster list ");
    assert!(!list.lines().any(|l| l == "dev"), "{list}");
    // The verbs offered after `oyster ` do not include the hidden helper.
    let verbs = offered("oyster ");
    assert!(
        verbs.lines().any(|v| v == "restart") && verbs.lines().any(|v| v == "cleanup"),
        "{verbs}"
    );
    has_none(&verbs, &["__complete"]);
    for (shell, marker) in [
        ("zsh", "compadd -- $(oyster __complete-stacks"),
        ("fish", "-a \"(oyster __complete-stacks"),
    ] {
        let s = t.run(["completions", shell]).ok().stdout();
        assert!(s.contains(marker), "{shell}");
        assert!(
            !s.contains("'__complete-stacks:") && !s.contains("-a \"__complete-stacks\""),
            "{shell} offers the hidden helper as a verb"
        );
    }
    // No fish or zsh here to run them: the plain STACK's completion is in both scripts.
    let fish = t.run(["completions", "fish"]).ok().stdout();
    for when in [
        "\"__fish_oyster_using_subcommand restart\" -f -a \"(oyster __complete-stacks",
        "\"__fish_oyster_using_subcommand host; and __fish_seen_subcommand_from start\" -f -a \"(oyster __complete-stacks",
    ] {
        assert!(fish.contains(when), "{when}");
    }
    assert!(
        !fish.contains("\"__fish_oyster_using_subcommand list\" -f -a \"(oyster __complete-stacks")
    );
    let zsh = t.run(["completions", "zsh"]).ok().stdout();
    let plain: Vec<&str> = zsh.lines().filter(|l| l.starts_with("'::stack_name")).collect();
    assert!(plain.len() > 10, "{zsh}");
    assert!(
        plain.iter().all(|l| l.contains(":{compadd -- $(oyster __complete-stacks")),
        "{plain:?}"
    );
}

#[test]
fn providers_status_says_every_documented_field_including_authentication() {
    let t = TestContext::new();
    t.fake_exe(&t.home.join(".local/bin/claude"));
    t.run(["providers", "set", "codex", ""]).ok();
    let status = t.run(["providers", "status"]).ok().stdout();
    let resolve = t.run(["providers", "resolve"]).ok().stdout();
    assert_ne!(status, resolve);
    for field in ["intent:", "command:", "resolved:", "authentication:"] {
        assert_eq!(status.matches(field).count(), 2, "{field}:\n{status}");
    }
    has_all(&status, &["claude (available)"]);
    has_all(&status, &["codex (disabled)", "\"\" (disabled)"]);
    has_all(&status, &["authentication: not checked"]);
    t.assert_nothing_executed();
}
