//! The words of the top level (`lib.rs`): the refusal to run as root from a place others can
//! change, and a stdout that could not be written.

use std::fmt::{self, Display, Formatter};
use std::path::PathBuf;

use crate::error::Failed;
use crate::sys::trusted::Replaceable;

/// oyster runs as root from `exe`, which someone other than root could replace (`at` says where
/// and why).
#[derive(Debug)]
pub struct RootRunsReplaceable {
    pub exe: PathBuf,
    pub at: Replaceable,
}

impl Display for RootRunsReplaceable {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "oyster runs as root from {}, but {} {}, so someone other than root could replace the program root runs; nothing was done",
            crate::output::one_line(&self.exe),
            crate::output::one_line(&self.at.path),
            self.at.why
        )
    }
}

impl From<RootRunsReplaceable> for Failed {
    fn from(r: RootRunsReplaceable) -> Failed {
        Failed::new(
            r.to_string(),
            format!(
                "as root, run the copy the .pkg installs where only root can write, {}; or put oyster in a directory that root owns and nobody else can write, each directory above it too",
                crate::PKG_ROOT_OWNED
            ),
        )
    }
}

/// The error and hint for a stdout that could not be written (`why`).
pub fn stdout_failed(why: &str) -> (String, &'static str) {
    (
        format!("could not write the output to stdout: {why}"),
        "check where stdout goes (a full disk, a file that cannot be written)",
    )
}
