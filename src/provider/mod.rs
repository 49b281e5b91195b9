//! Providers (`claude`, `codex`): the registry of their facts, the canonical resolver, and the
//! one provider-state type every command reports.

pub mod registry;
pub mod resolve;
pub mod status;
