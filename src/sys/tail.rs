//! The end of a log, and following it (`oyster logs [-n N] [-f]`).
//!
//! A log is opened with `O_NOFOLLOW` (never through a symlink, docs/behaviour.md §9) and must be a
//! regular file (a FIFO would block the reader). Following survives what happens to logs:
//! truncation (the file got shorter than what was read: start again from its beginning) and
//! rotation (the path now names another file: finish the old one, then read the new one from
//! its beginning).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::fs::FsError;

/// How much of a log's end is read to find the last lines (a line longer than this is cut).
const TAIL_WINDOW: u64 = 4 << 20;

/// Opens a log for reading: `None` when it does not exist; a symlink or a file that is not a
/// regular file is refused.
pub fn open_log(path: &Path) -> Result<Option<File>, FsError> {
    super::fs::open_regular(path)
}

/// The last `n` lines of `file` (without their newlines) and the offset just past them. With
/// `complete_only` (`logs -f`), a last line the Host is still writing (no newline yet) is left
/// out and the offset is its start, so the follower prints it whole once it ends: half a
/// token printed now and its other half later would each escape redaction.
pub fn last_lines(
    file: &mut File,
    n: usize,
    complete_only: bool,
) -> io::Result<(Vec<String>, u64)> {
    let end = file.metadata()?.len();
    let start = end.saturating_sub(TAIL_WINDOW);
    file.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::new();
    file.take(end - start).read_to_end(&mut buf)?;
    let mut end = start + buf.len() as u64;
    if complete_only {
        let keep = buf.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        end -= (buf.len() - keep) as u64;
        buf.truncate(keep);
    }
    let mut text: &[u8] = &buf;
    let mut cut = None;
    if start > 0 {
        // The window began mid-line: drop that partial line.
        match text.iter().position(|b| *b == b'\n') {
            Some(i) if i + 1 < text.len() => text = &text[i + 1..],
            _ if text.is_empty() => {}
            // One line longer than the window.
            _ => cut = Some(cut_line(text.strip_suffix(b"\n").unwrap_or(text))),
        }
        if cut.is_some() {
            text = &[];
        }
    }
    let mut lines: Vec<String> = match cut {
        Some(line) => vec![line],
        None => text
            .split(|b| *b == b'\n')
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect(),
    };
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    let skip = lines.len().saturating_sub(n);
    Ok((lines.split_off(skip), end))
}

/// The end of one line longer than the tail's window: from its first space after the cut (a
/// token at the cut is not shown in part), marked; with no space, not at all.
fn cut_line(text: &[u8]) -> String {
    let max = TAIL_WINDOW;
    match text.iter().position(u8::is_ascii_whitespace) {
        Some(i) => LineCut::Began {
            max,
            rest: String::from_utf8_lossy(&text[i..]).into_owned(),
        },
        None => LineCut::NotShown { max },
    }
    .to_string()
}

/// A line longer than a window of `max` bytes, as a log's tail shows it. Words:
/// `commands/words/sys.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineCut {
    /// Shown from its first space after the cut (`rest`).
    Began { max: u64, rest: String },
    /// No space in the window: not shown.
    NotShown { max: u64 },
}

/// Something that happened to a followed log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// One complete line (lossy UTF-8, without its newline).
    Line(String),
    /// The file got shorter than what was read; reading starts again at its beginning.
    Truncated,
    /// The path now names another file (rotation); it is read from its beginning.
    Rotated,
    /// The log did not exist and now does.
    Appeared,
    /// The path became something oyster will not read (a symlink, a FIFO…); said once.
    Refused(String),
}

/// The longest line shown whole while following; a longer one is cut (see [`Lines`]).
pub const MAX_LINE: usize = 1 << 20;

/// Bytes as they arrive, in any pieces, made into lines: a line is given out only once its
/// newline arrived, so how the Host's writes (or oyster's reads) split it cannot split what is
/// redacted — the printer redacts whole lines. Memory is bounded: a line longer than `max`
/// bytes is given out as its first `max` bytes cut back to the last space (a token at the cut
/// is not shown in part), marked as cut, and the rest of it up to its newline is skipped. What
/// is given out depends only on the bytes, never on the pieces they came in.
#[derive(Debug)]
pub struct Lines {
    partial: Vec<u8>,
    /// Skipping the rest of a line already given out cut.
    skipping: bool,
    max: usize,
}

impl Lines {
    pub fn new(max: usize) -> Lines {
        Lines {
            partial: vec![],
            skipping: false,
            max,
        }
    }

    /// Takes the next bytes; returns the lines they completed.
    pub fn push(&mut self, mut bytes: &[u8]) -> Vec<String> {
        let mut out = vec![];
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|b| *b == b'\n');
            if self.skipping {
                match newline {
                    Some(i) => {
                        self.skipping = false;
                        bytes = &bytes[i + 1..];
                    }
                    None => bytes = &[],
                }
                continue;
            }
            let (piece, rest, ended) = match newline {
                Some(i) => (&bytes[..i], &bytes[i + 1..], true),
                None => (bytes, &[][..], false),
            };
            // Never hold more than one byte past the cap.
            let room = (self.max + 1).saturating_sub(self.partial.len());
            self.partial
                .extend_from_slice(&piece[..piece.len().min(room)]);
            bytes = rest;
            if self.partial.len() > self.max {
                out.push(self.cut());
                self.skipping = !ended;
            } else if ended {
                out.push(String::from_utf8_lossy(&std::mem::take(&mut self.partial)).into_owned());
            }
        }
        out
    }

    /// What is left of a line that never got its newline (the file was rotated away).
    pub fn finish(&mut self) -> Option<String> {
        self.skipping = false;
        if self.partial.is_empty() {
            return None;
        }
        let rest = std::mem::take(&mut self.partial);
        Some(String::from_utf8_lossy(&rest).into_owned())
    }

    /// Forgets a partial line (the file was truncated under it).
    pub fn clear(&mut self) {
        self.partial.clear();
        self.skipping = false;
    }

    /// The first `max` bytes of an over-long line, cut back to its last space, marked.
    fn cut(&mut self) -> String {
        let mut line = std::mem::take(&mut self.partial);
        line.truncate(self.max);
        let note = format!("[line cut: longer than {} bytes]", self.max);
        match line.iter().rposition(u8::is_ascii_whitespace) {
            Some(i) => format!("{} … {note}", String::from_utf8_lossy(&line[..i])),
            None => format!(
                "{note} (no space in its first {} bytes; not shown)",
                self.max
            ),
        }
    }
}

/// Follows one log path.
pub struct Follower {
    path: PathBuf,
    file: Option<File>,
    pos: u64,
    id: Option<(u64, u64)>,
    lines: Lines,
    refused: bool,
    /// The last bytes read (up to [`SEEN_TAIL`]), ending at `pos`: a log emptied and written
    /// again past `pos` between two looks never looks shorter, but holds other bytes there.
    seen: Vec<u8>,
}

/// How many of the last bytes read are kept to notice a log rewritten under the follower.
const SEEN_TAIL: usize = 64;

impl Follower {
    /// Follows `path`, continuing `file` (already open) from `pos`.
    pub fn new(path: &Path, mut file: Option<File>, pos: u64) -> Follower {
        if let Some(f) = file.as_mut() {
            // Where the next read starts, whatever was read of it before.
            let _ = f.seek(SeekFrom::Start(pos));
        }
        let id = file
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .map(|m| (m.dev(), m.ino()));
        Follower {
            path: path.to_owned(),
            file,
            pos,
            id,
            lines: Lines::new(MAX_LINE),
            refused: false,
            seen: vec![],
        }
        .remembering_what_precedes_pos()
    }

    /// Reads the bytes before `pos` that the next look compares (see [`Follower::rewritten`]).
    /// A `pos` in the middle of a line (a last line longer than the tail's window) means the
    /// rest of that line is skipped: its start, maybe half a token, is not shown.
    fn remembering_what_precedes_pos(mut self) -> Follower {
        use std::os::unix::fs::FileExt;
        if let Some(f) = self.file.as_ref() {
            let from = self.pos.saturating_sub(SEEN_TAIL as u64);
            let mut buf = vec![0; usize::try_from(self.pos - from).unwrap_or(0)];
            if f.read_exact_at(&mut buf, from).is_ok() {
                self.lines.skipping = buf.last().is_some_and(|b| *b != b'\n');
                self.seen = buf;
            }
        }
        self
    }

    /// Whether the bytes just before `pos` (`seen`) are no longer the ones read there: the log was
    /// emptied (`: > log`) and written again past `pos` between two looks, so its size never
    /// showed the truncation; going on at `pos` would start in the middle of a line.
    fn rewritten(seen: &[u8], pos: u64, f: &File) -> bool {
        use std::os::unix::fs::FileExt;
        if seen.is_empty() {
            return false;
        }
        let mut now = vec![0; seen.len()];
        let from = pos - seen.len() as u64;
        f.read_exact_at(&mut now, from)
            .map_or(true, |()| now != seen)
    }

    /// Reads whatever arrived since the last call; never blocks.
    pub fn poll(&mut self) -> io::Result<Vec<Event>> {
        let mut events = vec![];
        if let Some(f) = self.file.as_mut() {
            if f.metadata()?.len() < self.pos || Self::rewritten(&self.seen, self.pos, f) {
                self.pos = 0;
                self.seen.clear();
                self.lines.clear();
                f.seek(SeekFrom::Start(0))?;
                events.push(Event::Truncated);
            }
        }
        self.drain(&mut events)?;
        // Has the path moved on to another file (rotation), or appeared?
        let now = std::fs::symlink_metadata(&self.path).ok();
        let moved = match (&now, self.id) {
            (None, _) => false,
            (Some(m), Some(id)) => (m.dev(), m.ino()) != id,
            (Some(_), None) => true,
        };
        if moved {
            match open_log(&self.path) {
                Ok(Some(f)) => {
                    if let Some(rest) = self.lines.finish() {
                        events.push(Event::Line(rest));
                    }
                    events.push(if self.file.is_some() {
                        Event::Rotated
                    } else {
                        Event::Appeared
                    });
                    self.id = f.metadata().ok().map(|m| (m.dev(), m.ino()));
                    self.file = Some(f);
                    self.pos = 0;
                    self.seen.clear();
                    self.refused = false;
                    self.drain(&mut events)?;
                }
                Ok(None) => {}
                Err(e) => {
                    if !self.refused {
                        events.push(Event::Refused(e.to_string()));
                        self.refused = true;
                    }
                }
            }
        }
        Ok(events)
    }

    /// Reads the current file to its end, emitting complete lines.
    fn drain(&mut self, events: &mut Vec<Event>) -> io::Result<()> {
        let Some(f) = self.file.as_mut() else {
            return Ok(());
        };
        let mut buf = [0u8; 64 * 1024];
        loop {
            let n = match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            };
            self.pos += n as u64;
            let keep = self.seen.len().min(SEEN_TAIL.saturating_sub(n));
            self.seen.drain(..self.seen.len() - keep);
            self.seen
                .extend_from_slice(&buf[n.saturating_sub(SEEN_TAIL)..n]);
            events.extend(self.lines.push(&buf[..n]).into_iter().map(Event::Line));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
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
}
