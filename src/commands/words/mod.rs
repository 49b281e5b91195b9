//! Speak at the edge: the sentences of the domain rooms' typed outcomes, refusals, failures and
//! notes (their `Display`, and their `hint:` where they have one), one file per room. The
//! rooms below `commands/` hold the facts; the words are here.

mod agent;
mod direct;
mod service;

#[cfg(test)]
mod tests;
