//! The launchd job: the one door to `launchctl`, and the lifecycle that loads, restarts,
//! verifies and rolls back the job (the plist itself is generated in `host::plist`).

pub mod launchctl;
pub mod lifecycle;
pub mod listing;
pub mod login_items;
pub mod print;
pub mod refusal;
pub mod seen;
pub mod status;
pub mod verbs;
