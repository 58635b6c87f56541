//! Warming the kernel's send path just before an expected packet.
//!
//! A packet that comes after an idle spell finds the kernel's transmit path cold on the
//! switch's core: the packet socket, skb allocation, the device queue and the receive
//! softirq the send runs in. On a virtual machine that path can take about twice as long
//! from the switch's `send()` to the receiver's kernel stamp for a lone packet as right
//! after another send (figures: docs/benchmarks.md). The pipeline is rehearsed for the same reason
//! (`Worker::rehearse`); the kernel's half cannot be rehearsed without sending.
//!
//! So when the data-plane thread wakes for an expected packet it sends one throw-away frame
//! the same way a port sends (a transmit ring, one `send()`), into the loopback device of
//! its own network namespace. Nothing leaves the namespace: the frame carries the IEEE
//! local-experimental EtherType, which nothing in the kernel handles, so it is dropped
//! right after the receive path ran. Only when started with `--warm-loopback on`: the lab
//! says so for the namespaces it made; a switch in anyone else's namespace sends nothing.

use pktio::phy::txring::{self, TxRing};
use pktio::sys;

/// IEEE 802 local experimental EtherType 1: no protocol handler claims it.
const WARMUP_ETHERTYPE: [u8; 2] = [0x88, 0xb5];
/// A minimum Ethernet frame: zero addresses, the EtherType, zero padding.
const WARMUP_FRAME_LEN: usize = 60;
/// The smallest ring (one block): one frame is in flight at a time.
const RING_FRAMES: usize = 1;
const RING_FRAME_SIZE: usize = 128;

pub struct KernelWarmer {
    ring: TxRing,
}

impl KernelWarmer {
    /// A warmer on this namespace's loopback; None if the socket cannot be made (then
    /// packets just meet a colder path).
    pub fn open() -> Option<KernelWarmer> {
        let lo = sys::if_nametoindex("lo")?;
        let ring = txring::open(lo as i32, RING_FRAME_SIZE, RING_FRAMES, false).ok()?;
        Some(KernelWarmer { ring })
    }

    /// Sends one warm-up frame; false if the ring had no free frame or the kernel refused.
    pub fn warm(&mut self) -> bool {
        let Some(frame) = self.ring.free_frame() else {
            return false;
        };
        frame[..WARMUP_FRAME_LEN].fill(0);
        frame[12..14].copy_from_slice(&WARMUP_ETHERTYPE);
        self.ring.queue(WARMUP_FRAME_LEN);
        let flushed = self.ring.flush();
        // A frame the kernel did not take must not go out later, as a stray.
        self.ring.reclaim();
        flushed.sent == 1
    }
}
