//! Everything oyster says: the printer, redaction, and the audit log.

pub mod audit;
pub mod redact;
