//! Offloads, both ways: segment.rs turns what a host's stack handed over (a partial
//! checksum, a TSO/GSO super-packet) into wire packets; coalesce.rs joins wire packets of
//! one TCP flow back into a super-packet for the kernel to cut or take whole.

pub mod coalesce;
pub mod segment;
