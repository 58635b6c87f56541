//! PACKET_TX_RING: a memory-mapped transmit ring on an AF_PACKET (TPACKET_V2) socket.
//!
//! Packets are written straight into ring frames and handed to the kernel with one
//! `send()` per batch, instead of one `sendmsg` (header copy, iovec import, skb set-up)
//! per packet. The kernel walks the ring from its own head, sends every frame marked
//! SEND_REQUEST and stops at the first frame that is not; so frames are always queued in
//! ring order and our write position must stay equal to the kernel's head.
//!
//! Every frame starts with a virtio-net header (PACKET_VNET_HDR) whose `hdr_len` is the
//! whole packet: that makes the kernel copy the packet into the skb's linear area. Without
//! it the kernel attaches the ring page as a fragment, and veth must then copy that
//! fragment into a freshly allocated page for every packet (skb_copy_ubufs), which costs
//! more than the copy it saves. It also means the kernel does not check the MTU, so callers
//! must keep packets within it.
//!
//! A frame the device refused (e.g. the veth peer's backlog is full) is put back to
//! SEND_REQUEST by the kernel and retried by the next `send()`.
//!
//! The ring's layout and mapping are ring.rs's, shared with the receive ring of port.rs.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};

use super::ring::{self, Ring, RingShape};
use crate::sys;
use crate::wire::vnet::VNET_HDR_LEN;

/// Where packet data starts in a TX frame (TPACKET_V2 without PACKET_TX_HAS_OFF).
const FRAME_OFFSET: usize = libc::TPACKET2_HDRLEN - std::mem::size_of::<libc::sockaddr_ll>();
/// Where packet data starts in a TX frame.
pub const DATA_OFFSET: usize = FRAME_OFFSET + VNET_HDR_LEN;

/// A transmit-only packet socket and its mapped ring; dropping it unmaps the ring and closes
/// the socket.
pub struct TxRing {
    // Declared before `fd`: the ring is unmapped before the socket closes.
    ring: Ring,
    fd: OwnedFd,
    /// Where the next frame to write starts; the kernel's head once nothing is queued.
    next: usize,
    /// Where the oldest queued frame starts (`next` when nothing is queued).
    oldest: usize,
    /// Frames marked SEND_REQUEST that the kernel has not taken yet (from `oldest` on).
    queued: usize,
}

/// What one [`TxRing::flush`] did.
pub struct Flushed {
    /// Frames the kernel took and passed to the device.
    pub sent: usize,
    /// Frames still waiting in the ring (the device refused them for now).
    pub waiting: usize,
    /// The error of the last `send()`, if it failed for a reason other than a full device.
    pub error: Option<io::Error>,
}

/// A socket bound to interface `ifindex` that only transmits (protocol 0: it receives
/// nothing), with a transmit ring of at least `frame_count` frames of `frame_size` bytes
/// (a multiple of 16) mapped.
/// `bypass_qdisc`: hand frames straight to the device, past the interface's qdisc (a packet
/// source measuring rates wants that; a switch port must keep its link's shaping). On
/// error nothing is left open.
pub fn open(
    ifindex: i32,
    frame_size: usize,
    frame_count: usize,
    bypass_qdisc: bool,
) -> io::Result<TxRing> {
    let fd = sys::socket(libc::AF_PACKET, libc::SOCK_RAW, 0)?;
    let raw = fd.as_raw_fd();
    let fail = |what: &str, e: io::Error| io::Error::new(e.kind(), format!("{what}: {e}"));
    let version = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
    let bypass = bypass_qdisc as libc::c_int;
    sys::setsockopt(raw, libc::SOL_PACKET, libc::PACKET_VERSION, &version)
        .and_then(|_| sys::setsockopt(raw, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &bypass))
        .map_err(|e| fail("setsockopt", e))?;
    let shape = RingShape::new(frame_size, frame_count);
    request(raw, &shape).map_err(|e| fail("PACKET_TX_RING", e))?;
    let ring = Ring::map(raw, shape).map_err(|e| fail("mmap", e))?;
    sys::bind_packet(raw, ifindex, 0).map_err(|e| fail("bind", e))?;
    Ok(TxRing {
        ring,
        fd,
        next: 0,
        oldest: 0,
        queued: 0,
    })
}

/// Asks the kernel for a transmit ring of `shape` on `fd`.
fn request(fd: std::os::fd::RawFd, shape: &RingShape) -> io::Result<()> {
    // PACKET_LOSS: a malformed frame is skipped rather than blocking the ring for good.
    let one: libc::c_int = 1;
    sys::setsockopt(fd, libc::SOL_PACKET, libc::PACKET_LOSS, &one)?;
    sys::setsockopt(fd, libc::SOL_PACKET, libc::PACKET_VNET_HDR, &one)?;
    ring::request(fd, libc::PACKET_TX_RING, shape)
}

impl TxRing {
    /// Largest packet a frame holds.
    pub fn max_packet(&self) -> usize {
        self.ring.shape.frame_size - DATA_OFFSET
    }

    /// The data area of the next free frame, or None when the ring is full (the kernel
    /// still holds every frame). Fill it, then call [`TxRing::queue`].
    pub fn free_frame(&mut self) -> Option<&mut [u8]> {
        if self.ring.status(self.next) != libc::TP_STATUS_AVAILABLE {
            return None;
        }
        fence(Ordering::Acquire);
        let len = self.max_packet();
        Some(self.ring.bytes_mut(self.next, DATA_OFFSET, len))
    }

    /// Marks the frame just filled through [`TxRing::free_frame`] as holding `len` bytes to send.
    pub fn queue(&mut self, len: usize) {
        let vnet = self.ring.bytes_mut(self.next, FRAME_OFFSET, VNET_HDR_LEN);
        vnet.fill(0);
        vnet[2..4].copy_from_slice(&(len as u16).to_le_bytes()); // hdr_len: all of it
        self.ring.set_len(self.next, (VNET_HDR_LEN + len) as u32);
        fence(Ordering::Release);
        self.ring
            .set_status(self.next, libc::TP_STATUS_SEND_REQUEST);
        self.next = self.ring.shape.after(self.next);
        self.queued += 1;
    }

    /// Hands the queued frames to the kernel with one `send()`.
    pub fn flush(&mut self) -> Flushed {
        if self.queued == 0 {
            return Flushed {
                sent: 0,
                waiting: 0,
                error: None,
            };
        }
        let error = sys::send(self.fd.as_raw_fd(), &[], libc::MSG_DONTWAIT)
            .err()
            .filter(|e| !matches!(e.raw_os_error(), Some(libc::ENOBUFS | libc::EAGAIN)));
        // The kernel takes frames in order: count how many left SEND_REQUEST.
        let mut sent = 0;
        while sent < self.queued && self.ring.status(self.oldest) != libc::TP_STATUS_SEND_REQUEST {
            sent += 1;
            self.oldest = self.ring.shape.after(self.oldest);
        }
        self.queued -= sent;
        Flushed {
            sent,
            waiting: self.queued,
            error,
        }
    }

    /// Takes back every frame still waiting (the kernel is not sending them: it only
    /// works on the ring inside `send()`), so they are dropped instead of going out
    /// late; returns how many.
    pub fn reclaim(&mut self) -> usize {
        let dropped = self.queued;
        let mut at = self.oldest;
        for _ in 0..dropped {
            self.ring.set_status(at, libc::TP_STATUS_AVAILABLE);
            at = self.ring.shape.after(at);
        }
        // The kernel's head still points at the first of them.
        self.next = self.oldest;
        self.queued = 0;
        dropped
    }
}
