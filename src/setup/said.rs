//! What setup says to people, as typed values: the words are at the edge
//! (`commands/setup_words.rs` holds their `Display`), the facts here.

use std::path::PathBuf;

/// A sentence setup says (an error, its hint, a note, a line of progress).
#[derive(Debug, Clone)]
pub enum Said {
    /// A receipt the next setup cannot read or trust: nothing was taken back.
    UnreadableReceipt { path: PathBuf, why: String },
    /// How to get past such a receipt.
    RemoveReceipt { path: PathBuf },
    /// Some reverts of a killed setup failed: what was said, and the receipt kept.
    PartlyTakenBack { said: Vec<String>, path: PathBuf },
    /// A dead setup's receipt found (and taken back) once this run held the lock.
    TookBackWhileWaiting { said: Vec<String> },
    /// Its hint.
    RunAgain,
    /// The job a killed setup changed, put back on the restored config and verified.
    JobPutBack { pid: u32, port: u16 },
}
