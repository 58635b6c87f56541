//! The devices packets come in and go out of: AF_PACKET ports (port.rs) with their
//! memory-mapped rings (ring.rs, the receive socket rx.rs, txring.rs), transmit through
//! XDP (xdp/), and the ethtool ioctls the ports read (ethtool.rs).

pub mod ethtool;
pub mod port;
pub mod ring;
pub mod rx;
pub mod txring;
pub mod xdp;

pub use port::{Port, PortDrop};
pub use rx::{Receiver, RingDrops};
