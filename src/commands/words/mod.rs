//! Words at the edge: the sentences of the typed outcomes, refusals and failures the domain
//! rooms return, one file per room.

mod service;
