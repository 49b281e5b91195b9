//! oyster's integration tests: the binary as a user runs it, in a temp HOME.

mod common;
mod config_store;
mod providers;
mod registry_guard;
