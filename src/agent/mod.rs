//! The launchd job, through the one door to launchd (`crate::launchctl`): the lifecycle that
//! loads, restarts, verifies and rolls back the job, its status model, and the stop and kill
//! verbs (the plist itself is generated in `host::plist`).

pub mod lifecycle;
pub mod listing;
pub mod login_items;
pub mod refusal;
pub mod status;
pub mod verbs;
