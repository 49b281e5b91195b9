//! Unit tests of `tail`.

use super::*;
use std::io::Write;

fn lines(events: &[Event]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Line(l) => Some(l.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn last_lines_and_a_partial_last_line() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("log");
    std::fs::write(&p, "a\nb\nc\nd").unwrap();
    let mut f = open_log(&p).unwrap().unwrap();
    let (l, end) = last_lines(&mut f, 2, false).unwrap();
    assert_eq!((l, end), (vec!["c".to_owned(), "d".to_owned()], 7));
    let (l, _) = last_lines(&mut f, 10, false).unwrap();
    assert_eq!(l.len(), 4);
}

#[test]
fn a_last_line_longer_than_the_window_is_never_shown_from_mid_token() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("log");
    let window = usize::try_from(TAIL_WINDOW).unwrap();
    // The window begins inside `KEY=…`'s value: `mid|tokensecret`.
    let head = format!("{}ANTHROPIC_API_KEY=mid", "x".repeat(100));
    let body = "tokensecret rest of it ";
    let text = format!("{head}{body}{}", "z".repeat(window - body.len()));
    std::fs::write(&p, &text).unwrap();
    let mut f = open_log(&p).unwrap().unwrap();
    let (l, _) = last_lines(&mut f, 10, false).unwrap();
    assert_eq!(l.len(), 1);
    assert!(
        l[0].starts_with(&format!(
            "[line cut: it began more than {TAIL_WINDOW} bytes back] … rest of it zzz"
        )),
        "{}",
        &l[0][..200]
    );
    assert!(!l[0].contains("tokensecret"));
    // Following: nothing of it now, and the rest of that line is skipped when it ends.
    let (l, end) = last_lines(&mut f, 10, true).unwrap();
    assert!(l.is_empty());
    let mut fo = Follower::new(&p, Some(f), end);
    let mut w = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    w.write_all(b" still the long line\nnext\n").unwrap();
    assert_eq!(lines(&fo.poll().unwrap()), vec!["next"]);
}

#[test]
fn follows_appends_truncation_and_rotation_but_not_a_symlink() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("log");
    std::fs::write(&p, "old\n").unwrap();
    let mut f = open_log(&p).unwrap().unwrap();
    let (_, end) = last_lines(&mut f, 0, true).unwrap();
    let mut fo = Follower::new(&p, Some(f), end);
    assert!(fo.poll().unwrap().is_empty());
    let mut w = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    w.write_all(b"one\ntw").unwrap();
    assert_eq!(lines(&fo.poll().unwrap()), ["one"]);
    w.write_all(b"o\n").unwrap();
    assert_eq!(lines(&fo.poll().unwrap()), ["two"]);
    // Truncation: read again from the start.
    std::fs::write(&p, "x\n").unwrap();
    let ev = fo.poll().unwrap();
    assert_eq!(ev[0], Event::Truncated, "{ev:?}");
    assert_eq!(lines(&ev), ["x"]);
    // Rotation: the old file is finished, then the new one read from its start.
    w.write_all(b"last of old\n").unwrap();
    std::fs::rename(&p, d.path().join("log.1")).unwrap();
    std::fs::write(&p, "new\n").unwrap();
    let ev = fo.poll().unwrap();
    assert_eq!(lines(&ev), ["last of old", "new"], "{ev:?}");
    assert!(ev.contains(&Event::Rotated));
    // A symlink in its place is refused, once.
    std::fs::remove_file(&p).unwrap();
    std::fs::write(d.path().join("secret"), "do not show\n").unwrap();
    std::os::unix::fs::symlink(d.path().join("secret"), &p).unwrap();
    let ev = fo.poll().unwrap();
    assert!(matches!(ev.as_slice(), [Event::Refused(_)]), "{ev:?}");
    assert!(fo.poll().unwrap().is_empty());
}

#[test]
fn a_symlinked_or_special_log_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("log");
    std::os::unix::fs::symlink("/etc/passwd", &p).unwrap();
    assert!(matches!(open_log(&p), Err(FsError::Symlink { .. })));
    assert!(matches!(
        open_log(d.path()),
        Err(FsError::NotRegular { .. })
    ));
    assert!(open_log(&d.path().join("none")).unwrap().is_none());
}

#[test]
fn following_starts_at_a_last_line_still_being_written() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("log");
    std::fs::write(&p, "done\nAuthorization: Bearer ab").unwrap();
    let mut f = open_log(&p).unwrap().unwrap();
    let (l, end) = last_lines(&mut f, 10, true).unwrap();
    assert_eq!((l, end), (vec!["done".to_owned()], 5));
    let mut fo = Follower::new(&p, Some(f), end);
    assert!(fo.poll().unwrap().is_empty());
    let mut w = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    w.write_all(b"c123def456\n").unwrap();
    assert_eq!(
        lines(&fo.poll().unwrap()),
        ["Authorization: Bearer abc123def456"]
    );
}

/// The reference: what [`Lines`] gives for the whole stream at once.
fn whole(max: usize, bytes: &[u8]) -> Vec<String> {
    let mut l = Lines::new(max);
    let mut out = l.push(bytes);
    out.extend(l.finish());
    out
}

#[test]
fn lines_are_bounded_and_cut_back_to_a_space() {
    assert_eq!(
        whole(
            16,
            b"short\nfirst words then ghp_0123456789abcdefghij\nnext"
        ),
        [
            "short",
            "first words … [line cut: longer than 16 bytes]",
            "next"
        ]
    );
    assert_eq!(
        whole(8, b"0123456789abc\nok\n"),
        [
            "[line cut: longer than 8 bytes] (no space in its first 8 bytes; not shown)",
            "ok"
        ]
    );
    assert_eq!(whole(8, b"12345678\n"), ["12345678"]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::proptest_cases(64)))]
    /// However the Host's writes split a log, `logs -f` gives the same lines as the whole
    /// stream at once (so the printer redacts each line whole; the redaction side of this
    /// is `output::redact::tests::a_credential_split_across_writes_is_never_printed`).
    /// Written to a real file in the pieces given, polled after each.
    #[test]
    fn any_split_of_the_hosts_writes_gives_the_same_lines(
        picks in proptest::collection::vec(0usize..4, 1..24),
        cuts in proptest::collection::vec(1usize..40, 1..64),
        max in proptest::prop_oneof![proptest::strategy::Just(MAX_LINE), 24usize..120],
    ) {
        const LINES: &[&str] = &[
            "GET /v1 Authorization: Bearer 9f8e7d6c5b4a39281706",
            "a line with spaces, and then a long one without: 0123456789abcdefghijklmnopqrstuvwxyz",
            "",
            "\u{e9}t\u{e9} \u{202e} mixed bytes",
        ];
        let text: String = picks.iter().map(|i| format!("{}\n", LINES[*i])).collect();
        let bytes = text.as_bytes();
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log");
        std::fs::write(&p, "").unwrap();
        let f = open_log(&p).unwrap().unwrap();
        let mut fo = Follower::new(&p, Some(f), 0);
        fo.lines = Lines::new(max);
        let mut w = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        let mut printed = vec![];
        let (mut at, mut k) = (0, 0);
        while at < bytes.len() {
            let n = cuts[k % cuts.len()].min(bytes.len() - at);
            w.write_all(&bytes[at..at + n]).unwrap();
            at += n;
            k += 1;
            printed.extend(lines(&fo.poll().unwrap()).into_iter().map(str::to_owned));
        }
        proptest::prop_assert_eq!(&printed, &whole(max, bytes));
    }
}
