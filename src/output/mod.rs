//! Everything oyster says: the printer, redaction, and the audit log.

pub mod audit;
pub mod printer;
pub mod redact;
pub mod report;

pub use printer::{printer, Mode, Tone};
pub use report::Reporter;
