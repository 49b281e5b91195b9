//! oyster's integration tests: the binary as a user runs it, in a temp HOME.

mod agent_plist;
mod architecture;
mod bad_input;
mod common;
mod config_store;
mod direct;
mod doctor;
mod hostile;
mod interrupts;
mod lifecycle;
mod packaging;
mod providers;
mod registry_guard;
mod setup;
mod snapshots;
mod syscalls;
mod torture;
