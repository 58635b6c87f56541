//! A TPACKET_V2 ring (PACKET_RX_RING or PACKET_TX_RING) as this process sees it: where its
//! frames lie ([`RingShape`]) and the mapped frames, each a `struct tpacket2_hdr` then data
//! ([`Ring`]). A frame belongs to the kernel or to us by its status word; the fields are
//! read and written through the checked accessors of `sys::Mapping`.

use std::io;
use std::os::fd::RawFd;

use crate::sys::{self, Mapping};

/// Offsets of struct tpacket2_hdr's fields (linux/if_packet.h).
const TP_STATUS: usize = 0;
const TP_LEN: usize = 4;
const TP_SNAPLEN: usize = 8;
const TP_MAC: usize = 12;
const TP_SEC: usize = 16;
const TP_NSEC: usize = 20;
const TP_VLAN_TCI: usize = 24;
const TP_VLAN_TPID: usize = 26;
/// Where a received frame's struct sockaddr_ll says its interface: the address follows the
/// header (TPACKET_ALIGN(sizeof(struct tpacket2_hdr))), sll_ifindex 4 bytes into it.
const SLL_IFINDEX: usize = libc::TPACKET2_HDRLEN - std::mem::size_of::<libc::sockaddr_ll>() + 4;

/// Ring frames are at most this long, whatever the MTU: a jumbo MTU would multiply a
/// ring's memory for packets rare and slow enough to take the copy path instead.
pub const MAX_FRAME_SIZE: usize = 2048;

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

/// The header of one ring frame, as read at one moment.
#[derive(Clone, Copy, Debug)]
pub struct FrameHeader {
    pub status: u32,
    pub len: u32,
    pub snaplen: u32,
    /// Where the packet starts, from the frame's start.
    pub mac: u16,
    pub sec: u32,
    pub nsec: u32,
    pub vlan_tci: u16,
    pub vlan_tpid: u16,
}

/// The mapped frames of a ring the kernel made for a packet socket.
pub struct Ring {
    map: Mapping,
    pub shape: RingShape,
}

impl Ring {
    /// Maps the ring of `shape` that the kernel made for `fd`.
    pub fn map(fd: RawFd, shape: RingShape) -> io::Result<Ring> {
        Ok(Ring {
            map: Mapping::shared(fd, shape.bytes())?,
            shape,
        })
    }

    /// The status word of the frame at `at`.
    pub fn status(&self, at: usize) -> u32 {
        self.map.read_u32(at + TP_STATUS)
    }

    /// Hands the frame at `at` over with `status` (the caller fences before).
    pub fn set_status(&self, at: usize, status: u32) {
        self.map.write_u32(at + TP_STATUS, status)
    }

    /// Sets the length of the frame at `at` (a transmit frame to be sent).
    pub fn set_len(&self, at: usize, len: u32) {
        self.map.write_u32(at + TP_LEN, len)
    }

    /// The header of the frame at `at`.
    pub fn header(&self, at: usize) -> FrameHeader {
        FrameHeader {
            status: self.status(at),
            len: self.map.read_u32(at + TP_LEN),
            snaplen: self.map.read_u32(at + TP_SNAPLEN),
            mac: self.map.read_u16(at + TP_MAC),
            sec: self.map.read_u32(at + TP_SEC),
            nsec: self.map.read_u32(at + TP_NSEC),
            vlan_tci: self.map.read_u16(at + TP_VLAN_TCI),
            vlan_tpid: self.map.read_u16(at + TP_VLAN_TPID),
        }
    }

    /// The interface index the kernel wrote into the received frame at `at`.
    pub fn ifindex(&self, at: usize) -> i32 {
        self.map.read_u32(at + SLL_IFINDEX) as i32
    }

    /// `len` bytes of the frame at `at`, from `offset` into it.
    pub fn bytes(&self, at: usize, offset: usize, len: usize) -> &[u8] {
        assert!(offset + len <= self.shape.frame_size, "outside the frame");
        self.map.bytes(at + offset, len)
    }

    /// `len` bytes of the frame at `at`, from `offset` into it, to write.
    pub fn bytes_mut(&mut self, at: usize, offset: usize, len: usize) -> &mut [u8] {
        assert!(offset + len <= self.shape.frame_size, "outside the frame");
        self.map.bytes_mut(at + offset, len)
    }
}

/// Asks the kernel for a ring of `shape` on packet socket `fd` (`opt`: PACKET_RX_RING or
/// PACKET_TX_RING).
pub fn request(fd: RawFd, opt: i32, shape: &RingShape) -> io::Result<()> {
    sys::setsockopt(fd, libc::SOL_PACKET, opt, &shape.request())
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
