//! Unit tests of the command line: parsing, stack names, help layout, verbs by meaning.

use super::help::{two_columns, HELP_WIDTH};
use super::*;

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
