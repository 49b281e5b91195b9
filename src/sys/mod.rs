//! The operating system, wrapped once: atomic writes and locks, the subprocess door, the user
//! database, signals, and whether a path is root's alone.

pub mod digest;
pub mod fs;
pub mod net;
pub mod process;
pub mod signal;
pub mod tail;
pub mod time;
pub mod trusted;
pub mod tty;
pub mod user;
