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

/// The last `n` lines of `file` (without their newlines) and the offset just past them.
pub fn last_lines(file: &mut File, n: usize) -> io::Result<(Vec<String>, u64)> {
    let end = file.metadata()?.len();
    let start = end.saturating_sub(TAIL_WINDOW);
    file.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::new();
    file.take(end - start).read_to_end(&mut buf)?;
    let end = start + buf.len() as u64;
    let mut text: &[u8] = &buf;
    if start > 0 {
        // The window began mid-line: drop that partial line.
        if let Some(i) = text.iter().position(|b| *b == b'\n') {
            text = &text[i + 1..];
        }
    }
    let mut lines: Vec<String> = text
        .split(|b| *b == b'\n')
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    let skip = lines.len().saturating_sub(n);
    Ok((lines.split_off(skip), end))
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

/// Follows one log path.
pub struct Follower {
    path: PathBuf,
    file: Option<File>,
    pos: u64,
    id: Option<(u64, u64)>,
    partial: Vec<u8>,
    refused: bool,
}

impl Follower {
    /// Follows `path`, continuing `file` (already open) from `pos`.
    pub fn new(path: &Path, file: Option<File>, pos: u64) -> Follower {
        let id = file
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .map(|m| (m.dev(), m.ino()));
        Follower {
            path: path.to_owned(),
            file,
            pos,
            id,
            partial: vec![],
            refused: false,
        }
    }

    /// Reads whatever arrived since the last call; never blocks.
    pub fn poll(&mut self) -> io::Result<Vec<Event>> {
        let mut events = vec![];
        if let Some(f) = self.file.as_mut() {
            if f.metadata()?.len() < self.pos {
                self.pos = 0;
                self.partial.clear();
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
                    if !self.partial.is_empty() {
                        let rest = std::mem::take(&mut self.partial);
                        events.push(Event::Line(String::from_utf8_lossy(&rest).into_owned()));
                    }
                    events.push(if self.file.is_some() {
                        Event::Rotated
                    } else {
                        Event::Appeared
                    });
                    self.id = f.metadata().ok().map(|m| (m.dev(), m.ino()));
                    self.file = Some(f);
                    self.pos = 0;
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
            self.partial.extend_from_slice(&buf[..n]);
        }
        while let Some(i) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=i).collect();
            events.push(Event::Line(
                String::from_utf8_lossy(&line[..line.len() - 1]).into_owned(),
            ));
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
        let (l, end) = last_lines(&mut f, 2).unwrap();
        assert_eq!((l, end), (vec!["c".to_owned(), "d".to_owned()], 7));
        let (l, _) = last_lines(&mut f, 10).unwrap();
        assert_eq!(l.len(), 4);
    }

    #[test]
    fn follows_appends_truncation_and_rotation_but_not_a_symlink() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("log");
        std::fs::write(&p, "old\n").unwrap();
        let mut f = open_log(&p).unwrap().unwrap();
        let (_, end) = last_lines(&mut f, 0).unwrap();
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
}
