//! The operating system, wrapped once: atomic writes and locks, the subprocess door, the user
//! database and signals.

pub mod fs;
pub mod net;
pub mod process;
pub mod signal;
pub mod tail;
pub mod user;
