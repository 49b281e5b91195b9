//! The LaunchAgent: the plist, the one door to `launchctl`, and the lifecycle that loads,
//! restarts, verifies and rolls back the launchd job.

pub mod launchctl;
pub mod lifecycle;
pub mod plist;
