//! The words of setup's typed sentences ([`crate::setup::Said`]).

use std::fmt;

use crate::setup::Said;

impl fmt::Display for Said {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Said::UnreadableReceipt { path, why } => write!(
                f,
                "an earlier setup left {}, which oyster cannot take back ({why}); nothing was changed",
                path.display()
            ),
            Said::RemoveReceipt { path } => write!(
                f,
                "look at what it lists, put back by hand what needs it, then remove it: `rm {}`",
                path.display()
            ),
            Said::PartlyTakenBack { said, path } => write!(
                f,
                "an earlier setup, cut short, was taken back only in part ({}); {} is kept for the next setup",
                said.join("; "),
                path.display()
            ),
            Said::TookBackWhileWaiting { said } => write!(
                f,
                "an earlier setup, cut short, was taken back while this one waited ({}); this setup's plan was made before that, so it changed nothing",
                said.join("; ")
            ),
            Said::RunAgain => f.write_str("run `oyster setup` again"),
            Said::JobPutBack { pid, port } => write!(
                f,
                "put the job back on the config it had: Host verified on port {port} (pid {pid})"
            ),
        }
    }
}
