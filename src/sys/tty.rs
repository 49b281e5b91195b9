//! The terminal: its echo switched off while a secret is typed, and always switched back.

use nix::sys::termios::{self, LocalFlags, SetArg, Termios};

/// While it lives, what is typed on stdin is not shown (a hidden password prompt); dropped
/// (also on an early return or an interrupt), the terminal is as it was.
pub struct NoEcho {
    saved: Option<Termios>,
}

impl NoEcho {
    /// Switches stdin's echo off; a stdin that is no terminal is left alone.
    pub fn new() -> NoEcho {
        let stdin = std::io::stdin();
        let Ok(saved) = termios::tcgetattr(&stdin) else {
            return NoEcho { saved: None };
        };
        let mut quiet = saved.clone();
        quiet.local_flags.remove(LocalFlags::ECHO);
        // The newline still shows, so the prompt's line ends when Enter is pressed.
        quiet.local_flags.insert(LocalFlags::ECHONL);
        match termios::tcsetattr(&stdin, SetArg::TCSAFLUSH, &quiet) {
            Ok(()) => NoEcho { saved: Some(saved) },
            Err(_) => NoEcho { saved: None },
        }
    }
}

impl Default for NoEcho {
    fn default() -> Self {
        NoEcho::new()
    }
}

impl Drop for NoEcho {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = termios::tcsetattr(std::io::stdin(), SetArg::TCSAFLUSH, saved);
        }
    }
}
