//! Everything oyster says: the printer, redaction, and the audit log.

pub mod audit;
pub mod printer;
pub mod redact;
pub mod report;
pub mod wrap;

pub use printer::{printer, Mode, Tone};
pub use report::Reporter;

/// Teaches the redaction these secret values (read by code below the commands, which prints
/// nothing itself): no output of this run can show them. Not output: the one list every
/// printed line is filtered through.
pub fn learn_secrets(values: Vec<String>) {
    printer::printer().add_secrets(values);
}

/// The secret values of `path`, as just read by whoever read it, so the printer does not read
/// the file again.
pub fn learned(path: &std::path::Path, values: Vec<String>) {
    printer::printer().learned(path, values);
}
