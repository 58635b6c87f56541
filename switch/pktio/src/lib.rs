//! Packet I/O for dplab's user-space data planes (the P4 switch, the packet source
//! `dplab-pktblast`, the user-space forwarder), after smoltcp's layout:
//!
//! - `wire`: wire formats through checked header views (Ethernet, VLAN, IPv4, IPv6, TCP,
//!   UDP, the virtio-net header) and the Internet checksum;
//! - `phy`: the devices: AF_PACKET ports with memory-mapped receive and transmit rings,
//!   transmit through XDP, the ethtool ioctls;
//! - `offload`: checksum and segmentation offload, both ways;
//! - `sys`: every `unsafe` of the crate, as safe wrappers around system calls and memory
//!   shared with the kernel, each with its safety argument.

#![deny(unsafe_code)]

pub mod offload;
pub mod phy;
#[allow(unsafe_code)]
pub mod sys;
pub mod wire;
