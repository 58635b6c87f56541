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
//! The ring's layout ([`RingShape`]), its mapping and socket options are the same for a
//! receive ring: ports.rs uses them for its PACKET_RX_RING too.

use std::io;
use std::os::fd::RawFd;
use std::ptr;
use std::sync::atomic::{fence, Ordering};

/// Where packet data starts in a TX frame (TPACKET_V2 without PACKET_TX_HAS_OFF).
const FRAME_OFFSET: usize = libc::TPACKET2_HDRLEN - std::mem::size_of::<libc::sockaddr_ll>();
/// struct virtio_net_hdr: flags, gso_type (u8 each), hdr_len, gso_size, csum_start,
/// csum_offset (u16, little-endian on this host).
const VNET_HDR_LEN: usize = 10;
/// Where packet data starts in a TX frame.
pub const DATA_OFFSET: usize = FRAME_OFFSET + VNET_HDR_LEN;

/// Where the frames of a TPACKET_V2 ring lie: frames of `frame_size` bytes packed into
/// blocks of a power-of-two size; a frame never crosses a block's end, so a frame size that
/// does not divide the block leaves the block's tail unused.
#[derive(Clone, Copy)]
pub struct RingShape {
    /// Bytes per frame, a multiple of 16 (TPACKET_ALIGNMENT).
    pub frame_size: usize,
    per_block: usize,
    block_size: usize,
    blocks: usize,
}

impl RingShape {
    /// Room for at least `frames` frames of `frame_size` bytes. Blocks are 64 KiB (or one
    /// frame's power of two, if larger): small enough for the kernel to find the
    /// contiguous memory of each, large enough to waste little of it.
    pub fn new(frame_size: usize, frames: usize) -> RingShape {
        let block_size = frame_size.next_power_of_two().max(1 << 16);
        let per_block = block_size / frame_size;
        RingShape {
            frame_size,
            per_block,
            block_size,
            blocks: frames.div_ceil(per_block),
        }
    }

    pub fn frames(&self) -> usize {
        self.per_block * self.blocks
    }

    /// The length of the mapped ring.
    pub fn bytes(&self) -> usize {
        self.block_size * self.blocks
    }

    /// Where the frame after the one at `at` starts in the mapped ring: the next in its
    /// block, else the first of the next block (after the ring's last frame, its first).
    /// Stepping so costs no division per packet, as working it out from an index would.
    pub fn after(&self, at: usize) -> usize {
        let next = at + self.frame_size;
        let in_block = next & (self.block_size - 1); // a power of two
        let next = if in_block + self.frame_size > self.block_size {
            next - in_block + self.block_size
        } else {
            next
        };
        if next == self.bytes() {
            0
        } else {
            next
        }
    }

    /// The ring request (PACKET_RX_RING / PACKET_TX_RING) for this shape.
    pub fn request(&self) -> libc::tpacket_req {
        libc::tpacket_req {
            tp_block_size: self.block_size as u32,
            tp_block_nr: self.blocks as u32,
            tp_frame_size: self.frame_size as u32,
            tp_frame_nr: self.frames() as u32,
        }
    }
}

/// A transmit-only packet socket and its mapped ring; dropping it unmaps the ring and closes
/// the socket.
pub struct TxRing {
    fd: RawFd,
    base: *mut u8,
    shape: RingShape,
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
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fail = |what: &str, e: io::Error| {
        unsafe { libc::close(fd) };
        io::Error::new(e.kind(), format!("{what}: {e}"))
    };
    let version = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
    let bypass = bypass_qdisc as libc::c_int;
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_VERSION, &version)
        .and_then(|_| setsockopt(fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &bypass))
        .map_err(|e| fail("setsockopt", e))?;
    let shape = RingShape::new(frame_size, frame_count);
    request(fd, &shape).map_err(|e| fail("PACKET_TX_RING", e))?;
    let map = map_ring(fd, &shape).map_err(|e| fail("mmap", e))?;
    // From here the ring owns the socket: dropping it on an error undoes both.
    let ring = TxRing {
        fd,
        base: map,
        shape,
        next: 0,
        oldest: 0,
        queued: 0,
    };
    bind(fd, ifindex, 0).map_err(|e| io::Error::new(e.kind(), format!("bind: {e}")))?;
    Ok(ring)
}

/// Binds packet socket `fd` to interface `ifindex`, receiving `protocol` (an ETH_P_*
/// number; 0: nothing).
pub fn bind(fd: RawFd, ifindex: i32, protocol: u16) -> io::Result<()> {
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = protocol.to_be();
    addr.sll_ifindex = ifindex;
    let alen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    if unsafe { libc::bind(fd, &addr as *const _ as *const libc::sockaddr, alen) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Asks the kernel for a transmit ring of `shape` on `fd`.
fn request(fd: RawFd, shape: &RingShape) -> io::Result<()> {
    // PACKET_LOSS: a malformed frame is skipped rather than blocking the ring for good.
    let one: libc::c_int = 1;
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_LOSS, &one)?;
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_VNET_HDR, &one)?;
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_TX_RING, &shape.request())
}

/// Maps the ring of `shape` that the kernel made for `fd` (PACKET_RX_RING or _TX_RING).
pub fn map_ring(fd: RawFd, shape: &RingShape) -> io::Result<*mut u8> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let len = shape.bytes();
    let map = unsafe { libc::mmap(ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
    if map == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(map as *mut u8)
}

/// Unmaps a ring mapped by [`map_ring`]; it is not to be used after this.
pub fn unmap_ring(base: *mut u8, shape: &RingShape) {
    unsafe { libc::munmap(base as *mut libc::c_void, shape.bytes()) };
}

/// Sets socket option `opt` of `level` on `fd` to `value`.
pub fn setsockopt<T>(fd: RawFd, level: i32, opt: i32, value: &T) -> io::Result<()> {
    let len = std::mem::size_of::<T>() as libc::socklen_t;
    let rc = unsafe { libc::setsockopt(fd, level, opt, value as *const T as *const _, len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl Drop for TxRing {
    fn drop(&mut self) {
        unmap_ring(self.base, &self.shape);
        unsafe { libc::close(self.fd) };
    }
}

impl TxRing {
    /// Largest packet a frame holds.
    pub fn max_packet(&self) -> usize {
        self.shape.frame_size - DATA_OFFSET
    }

    /// The header of the frame that starts at `at`.
    fn header(&self, at: usize) -> *mut libc::tpacket2_hdr {
        unsafe { self.base.add(at) as *mut libc::tpacket2_hdr }
    }

    fn status(&self, at: usize) -> u32 {
        unsafe { ptr::read_volatile(&(*self.header(at)).tp_status) }
    }

    fn set_status(&self, at: usize, status: u32) {
        unsafe { ptr::write_volatile(&mut (*self.header(at)).tp_status, status) };
    }

    /// The data area of the next free frame, or None when the ring is full (the kernel
    /// still holds every frame). Fill it, then call [`TxRing::queue`].
    pub fn free_frame(&mut self) -> Option<&mut [u8]> {
        if self.status(self.next) != libc::TP_STATUS_AVAILABLE {
            return None;
        }
        fence(Ordering::Acquire);
        let data = unsafe { self.base.add(self.next + DATA_OFFSET) };
        Some(unsafe { std::slice::from_raw_parts_mut(data, self.max_packet()) })
    }

    /// Marks the frame just filled through [`TxRing::free_frame`] as holding `len` bytes to send.
    pub fn queue(&mut self, len: usize) {
        let hdr = self.header(self.next);
        let mut vnet = [0u8; VNET_HDR_LEN];
        vnet[2..4].copy_from_slice(&(len as u16).to_le_bytes());
        unsafe {
            let frame = self.base.add(self.next + FRAME_OFFSET);
            ptr::copy_nonoverlapping(vnet.as_ptr(), frame, VNET_HDR_LEN);
            (*hdr).tp_len = (VNET_HDR_LEN + len) as u32;
        }
        fence(Ordering::Release);
        self.set_status(self.next, libc::TP_STATUS_SEND_REQUEST);
        self.next = self.shape.after(self.next);
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
        let rc = unsafe { libc::send(self.fd, ptr::null(), 0, libc::MSG_DONTWAIT) };
        let error = (rc < 0)
            .then(io::Error::last_os_error)
            .filter(|e| !matches!(e.raw_os_error(), Some(libc::ENOBUFS | libc::EAGAIN)));
        // The kernel takes frames in order: count how many left SEND_REQUEST.
        let mut sent = 0;
        while sent < self.queued && self.status(self.oldest) != libc::TP_STATUS_SEND_REQUEST {
            sent += 1;
            self.oldest = self.shape.after(self.oldest);
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
            self.set_status(at, libc::TP_STATUS_AVAILABLE);
            at = self.shape.after(at);
        }
        // The kernel's head still points at the first of them.
        self.next = self.oldest;
        self.queued = 0;
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_fill_blocks_without_crossing_their_ends() {
        for frame_size in [176, 1600, 1568, 2048, 9104] {
            let shape = RingShape::new(frame_size, 2048);
            let req = shape.request();
            assert!(shape.frames() >= 2048);
            assert_eq!(req.tp_frame_nr as usize, shape.frames());
            assert_eq!(req.tp_block_size % 4096, 0);
            assert_eq!(
                shape.bytes(),
                (req.tp_block_size * req.tp_block_nr) as usize
            );
            let block = req.tp_block_size as usize;
            let per_block = (req.tp_frame_nr / req.tp_block_nr) as usize;
            let (mut at, mut last) = (0, 0);
            for i in 0..shape.frames() {
                // Where the kernel puts frame i (packet_lookup_frame).
                assert_eq!(at, i / per_block * block + i % per_block * frame_size);
                assert_eq!(at / block, (at + frame_size - 1) / block, "frame {i}");
                assert!(i == 0 || at >= last + frame_size);
                last = at;
                at = shape.after(at);
            }
            assert_eq!(at, 0, "the last frame is followed by the first");
            assert!(last + frame_size <= shape.bytes());
        }
    }
}
