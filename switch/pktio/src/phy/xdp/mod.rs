//! Transmit through XDP: the eBPF plumbing (bpf.rs), the switch's XDP transmit (tx.rs)
//! with its checks of which interfaces take XDP frames (check.rs) and how many they took
//! (sent.rs), and the packet source's live-frame sender (blast.rs).

pub mod blast;
pub mod bpf;
pub mod check;
pub mod sent;
pub mod tx;
