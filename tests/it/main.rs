//! oyster's integration tests: the binary as a user runs it, in a temp HOME.

mod agent_plist;
mod architecture;
mod bad_input;
mod common;
mod config_store;
mod direct;
mod doctor;
mod hostile;
mod house;
mod identity;
mod interrupts;
mod json_docs;
mod lifecycle;
mod packaging;
mod planted_fifos;
mod providers;
mod real_macs;
mod registry_guard;
mod review;
mod runner;
mod secrets;
mod setup;
mod snapshots;
mod syscalls;
mod torture;
mod verbs;
