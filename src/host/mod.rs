//! What one start of the Host needs: the stack's paths, the install root, the pinned Node, the
//! one launch environment, the LaunchAgent plist generated from it, and the plan that
//! assembles them; and the identity files the Host's launch program (`oyster host exec`,
//! `crate::launch`) leaves for Oysterun's scripts ([`identity`]).

pub mod claims;
pub mod declared;
pub mod identity;
pub mod lan;
pub mod launchenv;
pub mod launcher;
pub mod lock_dir;
pub mod node;
pub mod plan;
pub mod plist;
pub mod privacy;
pub mod root;
pub mod signing;
pub mod stack;
