//! The words of `agent/`.
