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
#[path = "tail_tests.rs"]
mod tests;
