//! Fleets of Macs: what an organisation deploying oyster through MDM needs — the managed
//! login-items profile, oyster's own signature, and (in `inventory`) one document per Mac.

pub mod inventory;
pub mod profile;
pub mod signature;
mod uuid;
