//! Unit tests of the command line: parsing, stack names, help layout, verbs by meaning.

use super::help::{two_columns, HELP_WIDTH};
use super::*;
use std::ffi::OsString;

#[test]
fn a_two_column_block_fits_80_columns_and_keeps_every_word() {
    let long = "word ".repeat(60);
    let rows = vec![
        ("short".to_owned(), long.as_str()),
        (
            "a-first-column-longer-than-the-limit-of-twenty".to_owned(),
            "text",
        ),
        ("x".to_owned(), ""),
    ];
    let out = two_columns("Title:", &rows, 20);
    for line in out.lines() {
        assert!(line.chars().count() <= HELP_WIDTH, "{line:?}");
    }
    assert_eq!(out.matches("word").count(), 60);
    // The long first column stands alone; its text is on the next line, at the column.
    let lines: Vec<&str> = out.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.contains("longer-than"))
        .unwrap();
    assert_eq!(
        lines[i].trim(),
        "a-first-column-longer-than-the-limit-of-twenty"
    );
    assert_eq!(lines[i + 1].trim(), "text");
    assert_eq!(lines[i + 1].len() - "text".len(), 2 + "short".len() + 3);
}

#[test]
fn an_unknown_verb_is_mapped_by_meaning_keeping_the_rest() {
    let m = |args: &[&str]| {
        let v: Vec<OsString> = std::iter::once("oyster")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        meant_verb(&v)
    };
    assert_eq!(
        m(&["services", "list"]).as_deref(),
        Some("try `oyster list`")
    );
    assert_eq!(m(&["services"]).as_deref(), Some("try `oyster list`"));
    assert_eq!(
        m(&["--stack", "x", "reload", "-f"]).as_deref(),
        Some("try `oyster restart -f --stack x`")
    );
    assert_eq!(
        m(&["agent", "bootout"]).as_deref(),
        Some("try `oyster agent stop`")
    );
    // No meaning fits: clap's spelling tip stays.
    assert_eq!(m(&["restat"]), None);
    assert_eq!(m(&["services", "frobnicate"]), None);
}

fn resolved(args: &[&str]) -> crate::invocation::Invocation {
    let argv = std::iter::once("oyster").chain(args.iter().copied());
    match Cli::try_parse_from(argv).unwrap().resolve() {
        Ok(i) => i,
        Err(_) => panic!("{args:?} did not resolve"),
    }
}

#[test]
fn a_job_verb_typed_either_way_resolves_to_the_same_verb_and_stack() {
    use crate::invocation::{Stacks, Verb};
    let pairs: &[(&[&str], &[&str])] = &[
        (&["stop", "dev"], &["agent", "stop", "--stack", "dev"]),
        (&["restart", "--all"], &["agent", "restart", "--all"]),
        (&["info", "--json"], &["agent", "status", "--json"]),
        (&["ls"], &["agent", "list"]),
        (
            &["install", "--port", "8810", "dev"],
            &["agent", "install", "dev", "--port", "8810"],
        ),
    ];
    for (top, agent) in pairs {
        let (a, b) = (resolved(top), resolved(agent));
        assert_eq!(a.verb.word(), b.verb.word(), "{top:?} vs {agent:?}");
        assert_eq!(a.stacks, b.stacks, "{top:?} vs {agent:?}");
        assert_eq!(a.mode, b.mode, "{top:?} vs {agent:?}");
        assert!(!a.typed.agent_form && b.typed.agent_form);
    }
    // The port given travels with the verb's own settings, nowhere else.
    let Verb::Job(crate::invocation::Job::Install { host, .. }) =
        resolved(&["install", "dev", "--port", "8810"]).verb
    else {
        panic!("install resolved to another verb")
    };
    assert_eq!(host.port, Some(8810));
    assert_eq!(resolved(&["list"]).stacks, Stacks::Unnamed);
}

#[test]
fn a_hint_names_a_verb_as_the_command_line_can_take_it() {
    let head = |verb: &str, agent_form: bool| {
        let mut inv = resolved(if agent_form {
            &["agent", "status"]
        } else {
            &["status"]
        });
        inv.typed.agent_form = agent_form;
        (inv.typed.head)(verb, inv.typed.agent_form)
    };
    assert_eq!(head("start", false), "oyster");
    assert_eq!(head("start", true), "oyster agent");
    // Only `oyster agent` has these, only the top level has `logs`.
    assert_eq!(head("regenerate", false), "oyster agent");
    assert_eq!(head("print", false), "oyster agent");
    assert_eq!(head("logs", true), "oyster");
}

#[test]
fn a_stack_named_twice_differently_or_beside_all_is_refused_and_a_bad_name_too() {
    let refused = |args: &[&str]| {
        let argv = std::iter::once("oyster").chain(args.iter().copied());
        Cli::try_parse_from(argv).unwrap().resolve().err()
    };
    assert!(matches!(
        refused(&["stop", "dev", "--stack", "qa"]),
        Some(Unresolved::Conflict(_))
    ));
    assert!(matches!(
        refused(&["--stack", "qa", "list"]),
        Some(Unresolved::Conflict(_))
    ));
    // After the verb, `list` has no `--stack` at all (its help does not offer one).
    assert!(Cli::try_parse_from(["oyster", "list", "--stack", "qa"]).is_err());
    assert!(matches!(
        refused(&["stop", "Dev"]),
        Some(Unresolved::BadName(_))
    ));
    assert!(refused(&["stop", "dev", "--stack", "dev"]).is_none());
}

/// Arguments and subcommands of `cmd` by name, without the ones `build` adds (help, version).
fn parts(cmd: &clap::Command) -> (Vec<String>, Vec<String>) {
    let args = cmd
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .filter(|id| id != "help" && id != "version")
        .collect();
    let subs = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .filter(|n| n != "help")
        .collect();
    (args, subs)
}

/// Every command below `cmd` (itself included), by path.
fn every_command(cmd: &clap::Command, path: String, out: &mut Vec<(String, clap::Command)>) {
    for sub in cmd.get_subcommands() {
        every_command(sub, format!("{path} {}", sub.get_name()), out);
    }
    out.push((path, cmd.clone()));
}

#[test]
fn nothing_is_left_deferred_in_the_whole_tree() {
    let mut all = vec![];
    every_command(&Cli::whole(), "oyster".into(), &mut all);
    for (path, cmd) in all {
        // Building runs whatever is still deferred: it must add nothing.
        let mut built = cmd.clone();
        built.build();
        assert_eq!(
            parts(&cmd),
            parts(&built),
            "`{path}` is still deferred in Cli::whole"
        );
    }
}

#[test]
fn groups_and_big_verbs_are_built_only_when_named() {
    use clap::CommandFactory;
    let lazy = Cli::command();
    let whole = Cli::whole();
    let groups: Vec<&str> = whole
        .get_subcommands()
        .filter(|s| s.has_subcommands())
        .map(clap::Command::get_name)
        .collect();
    assert_eq!(
        groups,
        ["providers", "config", "env", "agent", "host", "mdm"]
    );
    for name in groups
        .iter()
        .chain(&["setup", "logs", "cleanup", "inventory", "start", "restart"])
    {
        let sub = lazy.find_subcommand(name).unwrap();
        // An everyday run builds none of them…
        assert_eq!(
            parts(sub),
            (vec![], vec![]),
            "`{name}` is built in every run"
        );
        // …and keeps each one's own words for the top-level help.
        assert_eq!(
            sub.get_about().map(ToString::to_string),
            whole
                .find_subcommand(name)
                .unwrap()
                .get_about()
                .map(ToString::to_string)
        );
    }
    // Naming one builds it: its options parse through the lazy tree, under `agent` too.
    for words in [
        &["oyster", "agent", "regenerate", "--dry-run"][..],
        &["oyster", "agent", "restart", "--no-qr"][..],
        &["oyster", "setup", "--no-start"][..],
    ] {
        let args: Vec<OsString> = words.iter().map(Into::into).collect();
        Cli::parse_args(&args).unwrap_or_else(|e| panic!("{words:?}: {e}"));
    }
}

#[test]
fn every_command_is_in_exactly_one_help_group() {
    let mut cmd = Cli::whole();
    cmd.build();
    let mut visible: Vec<&str> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(clap::Command::get_name)
        .collect();
    visible.sort_unstable();
    let mut grouped: Vec<&str> = top_help::GROUPS
        .iter()
        .flat_map(|(_, names)| names.iter().copied())
        .collect();
    grouped.sort_unstable();
    assert_eq!(grouped, visible, "help::GROUPS against the command tree");
}
