//! Receive: an AF_PACKET socket with a TPACKET_V2 memory-mapped receive ring ([`Receiver`]),
//! either one port's (bound to its interface) or every port's of a network namespace (one
//! socket bound to no interface, a classic BPF filter admitting the ports' interfaces only;
//! each frame names the interface it came in on).
//!
//! A TPACKET_V2 ring gives every frame its own status word, so a packet is visible the
//! moment the kernel writes it (TPACKET_V3 only hands over whole blocks, which adds up to a
//! millisecond of latency at low load). Under load one poll drains many frames, which gives
//! batching without waiting. Frames are sized to the largest packet the interfaces deliver
//! whole: the MTU plus the Ethernet header and a VLAN tag's 4 bytes of slack (what veth lets
//! through, is_skb_forwardable), read at start.
//!
//! Every received packet comes with a virtio-net header (PACKET_VNET_HDR): hosts keep their
//! checksum and segmentation offloads, and offload/segment.rs turns what they hand over into
//! the packets a wire would carry. A packet too long for a ring frame (a TSO/GSO super-packet
//! of up to 64 KiB, or a packet beyond an MTU raised later) is not truncated:
//! PACKET_COPY_THRESH makes the kernel flag its frame TP_STATUS_COPY and queue the whole
//! packet on the socket, where `recv` fetches it, in ring order. Wire-sized packets, the
//! common case, keep the zero-syscall ring path. The frame of a copied packet still names
//! its interface (the queued copy's own address does not: tpacket_rcv clears it).
//!
//! One ring for a whole namespace costs one ring's memory and one socket's set-up and
//! release (each waits for an RCU grace period: packet_set_ring and packet_release call
//! synchronize_net) instead of one per port; its frames come in arrival order whatever the
//! port, and a port that floods it leaves less room for the others.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, Ordering};

use super::port::PortDrop;
use super::ring::{self, Ring, RingShape, MAX_FRAME_SIZE};
use crate::offload::segment::{Malformed, Segments};
use crate::sys;
use crate::wire::ethernet::{ETHERTYPE_VLAN, HEADER_LEN as ETH_HLEN};
use crate::wire::vnet::{VnetHdr, VNET_HDR_LEN};

const VLAN_HLEN: usize = 4;
/// Where the kernel puts a received packet in its ring frame (tpacket_rcv): behind the
/// TPACKET_V2 header and address, aligned as if the link header were 16 bytes, then the
/// virtio-net header.
const RX_PACKET_AT: usize = align16(libc::TPACKET2_HDRLEN + 16) + VNET_HDR_LEN - ETH_HLEN;
/// Largest packet fetched from the socket queue (GSO packets are at most 64 KiB).
const BIG_PACKET: usize = 1 << 17;
/// Socket receive buffer for those packets: bounds the memory they may hold while queued.
const RCVBUF_BYTES: libc::c_int = 16 << 20;
/// Receive ring depth unless the program asks for another. Every frame is kernel memory
/// mapped into the program (it counts in its RSS): 2048 frames are 3.3 MiB at MTU 1500,
/// ~2 ms of 1 Mpps for while the program's thread waits for its core; half of that lost
/// 64 B packets under load (measured A/B, a ring per port).
pub const RX_FRAMES: usize = 2048;
/// The fewest receive frames a ring takes: a round's batch of a port (64 frames: the
/// programs' data-plane loops) must fit in the ring.
pub const MIN_RX_FRAMES: usize = 64;
/// The most: 64 Ki frames are ~100 MiB, far beyond any use of a ring's depth.
pub const MAX_RX_FRAMES: usize = 1 << 16;
/// A filter's verdict that keeps the whole packet (its snap length: no cut).
const ACCEPT_WHOLE: u32 = u32::MAX;

/// Reads the packets the kernel dropped because a receive ring was full. It holds a
/// descriptor of its own for the receive socket, so a thread other than the one that owns
/// the [`Receiver`] (the switch's `stats`) reads it without stopping the data plane; the
/// socket stays open while either is alive.
pub struct RingDrops {
    fd: OwnedFd,
}

impl RingDrops {
    /// Packets dropped since the last call (as the kernel handed them: a super-packet
    /// counts once). PACKET_STATISTICS resets its counts on every read, so the caller
    /// accumulates, and no other reader may share the socket.
    pub fn take(&self) -> io::Result<u64> {
        Ok(sys::packet_statistics(self.fd.as_raw_fd())?.tp_drops.into())
    }
}

/// A frame lent out of the receive ring; give it back with [`Receiver::release`].
pub struct RxFrame {
    /// Where the frame starts in the ring.
    at: usize,
}

/// What one received frame was on the wire, from [`Receiver::read_frame`].
pub struct Received {
    /// Wire packets (segments of a super-packet count one by one).
    pub packets: u64,
    pub bytes: u64,
    /// Why the frame was dropped, if it was.
    pub dropped: Option<PortDrop>,
}

/// An interface a receiver takes frames of: its name (for messages) and index.
pub struct Interface<'a> {
    pub name: &'a str,
    pub ifindex: i32,
}

/// A receive socket and its mapped ring.
pub struct Receiver {
    // Declared before `fd`: the ring is unmapped before the socket closes.
    ring: Ring,
    fd: OwnedFd,
    /// Where the next frame to read starts in the ring.
    next_at: usize,
    /// Room for a packet fetched from the socket queue, behind its virtio-net header.
    queued: Vec<u8>,
    /// A packet with its VLAN tag put back.
    tagged: Vec<u8>,
}

fn error(what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

const fn align16(n: usize) -> usize {
    (n + 15) & !15
}

/// Bytes per receive ring frame for interfaces of MTU up to `mtu` (see the module's doc).
fn rx_frame_size(mtu: usize) -> usize {
    align16(RX_PACKET_AT + ETH_HLEN + mtu + VLAN_HLEN).min(MAX_FRAME_SIZE)
}

/// The receive ring for interfaces of MTU up to `mtu`, with room for at least `frames`.
fn rx_ring_shape(mtu: usize, frames: usize) -> RingShape {
    RingShape::new(rx_frame_size(mtu), frames)
}

/// The classic BPF program that admits the frames of `ifindexes` only, whole: a compare
/// and a return per interface (a jump's reach is 255 instructions, too short for a list of
/// hundreds of ports to share one return).
fn interface_filter(ifindexes: &[i32]) -> Vec<libc::sock_filter> {
    let insn = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let load_ifindex = (libc::SKF_AD_OFF + libc::SKF_AD_IFINDEX) as u32;
    let mut prog = vec![insn(
        libc::BPF_LD | libc::BPF_W | libc::BPF_ABS,
        0,
        0,
        load_ifindex,
    )];
    for &ifindex in ifindexes {
        // Equal: on to the return after it; else over it.
        prog.push(insn(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            0,
            1,
            ifindex as u32,
        ));
        prog.push(insn(libc::BPF_RET | libc::BPF_K, 0, 0, ACCEPT_WHOLE));
    }
    prog.push(insn(libc::BPF_RET | libc::BPF_K, 0, 0, 0));
    prog
}

impl Receiver {
    /// The receive socket of one interface, with a ring of at least `frames` frames
    /// ([`MIN_RX_FRAMES`] to [`MAX_RX_FRAMES`]).
    pub fn open_port(port: &Interface, frames: usize) -> io::Result<Receiver> {
        Receiver::open(std::slice::from_ref(port), port.ifindex, frames)
            .map_err(|e| error(&format!("port {}", port.name), e))
    }

    /// One receive socket for every interface of `ports` (all in this namespace), bound to
    /// none: a socket filter admits the ports' frames only (not the loopback's, nor those of
    /// any other interface there), and [`Receiver::ifindex`] says whose a frame is.
    pub fn open_shared(ports: &[Interface], frames: usize) -> io::Result<Receiver> {
        Receiver::open(ports, 0, frames).map_err(|e| error("the ports' receive socket", e))
    }

    fn open(ports: &[Interface], bind_to: i32, frames: usize) -> io::Result<Receiver> {
        if !(MIN_RX_FRAMES..=MAX_RX_FRAMES).contains(&frames) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{frames} receive frames: expected {MIN_RX_FRAMES} to {MAX_RX_FRAMES}"),
            ));
        }
        // Protocol 0: the socket takes no packets until `bind` names ETH_P_ALL. Opened with
        // ETH_P_ALL it would be hooked in already, and unhooking it for the bind waits for
        // an RCU grace period (packet_do_bind → synchronize_net), ~10 ms on a loaded machine.
        let fd = sys::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK, 0)
            .map_err(|e| error("socket", e))?;
        let raw = fd.as_raw_fd();
        let mut mtu = 0;
        for port in ports {
            let m = sys::interface_mtu(raw, port.name)
                .map_err(|e| error(&format!("SIOCGIFMTU of {}", port.name), e))?;
            mtu = mtu.max(m);
        }
        let ring = configure(raw, rx_ring_shape(mtu, frames))?;
        if bind_to == 0 {
            let ifindexes: Vec<i32> = ports.iter().map(|p| p.ifindex).collect();
            sys::attach_filter(raw, &interface_filter(&ifindexes))
                .map_err(|e| error("SO_ATTACH_FILTER", e))?;
        }
        for port in ports {
            let mreq = libc::packet_mreq {
                mr_ifindex: port.ifindex,
                mr_type: libc::PACKET_MR_PROMISC as u16,
                mr_alen: 0,
                mr_address: [0; 8],
            };
            // Promiscuous mode is a wish, not a need (veth delivers every frame anyway).
            let _ = sys::setsockopt(raw, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq);
        }
        sys::bind_packet(raw, bind_to, libc::ETH_P_ALL as u16).map_err(|e| error("bind", e))?;
        Ok(Receiver {
            ring,
            fd,
            next_at: 0,
            queued: vec![0; VNET_HDR_LEN + BIG_PACKET],
            tagged: Vec::new(),
        })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// A descriptor of its own for the receive socket (to send on, or to poll).
    pub fn clone_fd(&self) -> io::Result<OwnedFd> {
        self.fd.try_clone()
    }

    /// The ring's depth, in frames.
    pub fn frames(&self) -> usize {
        self.ring.shape.frames()
    }

    /// The reader of this ring's drops (see [`RingDrops`]).
    pub fn ring_drops(&self) -> io::Result<RingDrops> {
        Ok(RingDrops {
            fd: self.clone_fd()?,
        })
    }

    /// Next filled frame of the receive ring, if any.
    pub fn next_rx(&mut self) -> Option<RxFrame> {
        if !self.rx_ready() {
            return None;
        }
        fence(Ordering::Acquire);
        let at = self.next_at;
        self.next_at = self.ring.shape.after(at);
        Some(RxFrame { at })
    }

    /// Whether the receive ring holds a frame, without taking it (for the idle spin).
    pub fn rx_ready(&self) -> bool {
        self.ring.status(self.next_at) & libc::TP_STATUS_USER != 0
    }

    /// When the kernel received the frame: its ring timestamp, CLOCK_REALTIME in ns.
    pub fn rx_time_ns(&self, frame: &RxFrame) -> u64 {
        let h = self.ring.header(frame.at);
        h.sec as u64 * 1_000_000_000 + h.nsec as u64
    }

    /// The interface the frame came in on.
    pub fn ifindex(&self, frame: &RxFrame) -> i32 {
        self.ring.ifindex(frame.at)
    }

    /// Turns the frame's packet into the wire packets it stands for, in `out` (segments
    /// of a super-packet, checksums finished; a VLAN tag the kernel lifted out put back).
    pub fn read_frame(&mut self, frame: &RxFrame, out: &mut Segments) -> Received {
        let h = self.ring.header(frame.at);
        let dropped = |why: PortDrop| Received {
            packets: 1,
            bytes: h.len as u64,
            dropped: Some(why),
        };
        // The kernel puts the virtio-net header right in front of the packet.
        let Some(vnet_at) = (h.mac as usize).checked_sub(VNET_HDR_LEN) else {
            return dropped(PortDrop::Truncated);
        };
        let raw_vnet = self.ring.bytes(frame.at, vnet_at, VNET_HDR_LEN);
        let mut vnet = VnetHdr::parse(raw_vnet.try_into().expect("VNET_HDR_LEN bytes"));
        let mut packet = self
            .ring
            .bytes(frame.at, h.mac as usize, h.snaplen as usize);
        if h.status & libc::TP_STATUS_COPY != 0 {
            if !fetch_queued(self.fd.as_raw_fd(), &mut self.queued, h.len as usize) {
                return dropped(PortDrop::Truncated);
            }
            vnet = VnetHdr::parse(self.queued[..VNET_HDR_LEN].try_into().unwrap());
            packet = &self.queued[VNET_HDR_LEN..VNET_HDR_LEN + h.len as usize];
        } else if h.len != h.snaplen {
            return dropped(PortDrop::Truncated);
        }
        if h.status & libc::TP_STATUS_VLAN_VALID != 0 && packet.len() >= 12 {
            let tpid = if h.status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                h.vlan_tpid
            } else {
                ETHERTYPE_VLAN
            };
            put_back_tag(&mut self.tagged, packet, tpid, h.vlan_tci);
            if vnet.csum_start >= 12 {
                vnet.csum_start = vnet.csum_start.saturating_add(4);
            }
            packet = &self.tagged;
        }
        match out.fill(&vnet, packet) {
            Ok(()) => Received {
                packets: out.len() as u64,
                bytes: out.wire_bytes(),
                dropped: None,
            },
            Err(e) => dropped(drop_reason(&e)),
        }
    }

    pub fn release(&self, frame: RxFrame) {
        fence(Ordering::Release);
        self.ring.set_status(frame.at, libc::TP_STATUS_KERNEL);
    }
}

/// Why a received packet whose offload metadata segment.rs refused is dropped.
fn drop_reason(e: &Malformed) -> PortDrop {
    match e {
        Malformed::ChecksumOutside | Malformed::ZeroGsoSize | Malformed::HeaderLength => {
            PortDrop::BadOffload
        }
        Malformed::UnsupportedGso(_) | Malformed::Headers(_) => PortDrop::Unsegmentable,
    }
}

/// `packet` with the VLAN tag the kernel lifted out of it put back, in `tagged`.
fn put_back_tag(tagged: &mut Vec<u8>, packet: &[u8], tpid: u16, tci: u16) {
    tagged.clear();
    tagged.extend_from_slice(&packet[..12]);
    tagged.extend_from_slice(&tpid.to_be_bytes());
    tagged.extend_from_slice(&tci.to_be_bytes());
    tagged.extend_from_slice(&packet[12..]);
}

/// Fetches the packet behind a TP_STATUS_COPY frame (the next one queued on socket `fd`)
/// into `queued`, behind its virtio-net header; false if it is not there whole.
fn fetch_queued(fd: RawFd, queued: &mut [u8], expected_len: usize) -> bool {
    let flags = libc::MSG_DONTWAIT | libc::MSG_TRUNC;
    sys::recv(fd, queued, flags)
        .is_ok_and(|n| n == VNET_HDR_LEN + expected_len && n <= queued.len())
}

/// Sets the receive socket's options and maps its receive ring of `shape`.
fn configure(fd: RawFd, shape: RingShape) -> io::Result<Ring> {
    let set = |level: i32, opt: i32, value: &libc::c_int, what: &str| {
        sys::setsockopt(fd, level, opt, value).map_err(|e| error(what, e))
    };
    let version: libc::c_int = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
    set(
        libc::SOL_PACKET,
        libc::PACKET_VERSION,
        &version,
        "PACKET_VERSION",
    )?;
    let one: libc::c_int = 1;
    // Packets sent from this namespace's interfaces (the switch's own among them) must not
    // come back in as input.
    let ignore_outgoing = libc::PACKET_IGNORE_OUTGOING;
    set(
        libc::SOL_PACKET,
        ignore_outgoing,
        &one,
        "PACKET_IGNORE_OUTGOING",
    )?;
    // These three must precede the ring: the kernel refuses them once it exists.
    set(
        libc::SOL_PACKET,
        libc::PACKET_VNET_HDR,
        &one,
        "PACKET_VNET_HDR",
    )?;
    set(
        libc::SOL_PACKET,
        libc::PACKET_COPY_THRESH,
        &one,
        "PACKET_COPY_THRESH",
    )?;
    set(
        libc::SOL_SOCKET,
        libc::SO_RCVBUFFORCE,
        &RCVBUF_BYTES,
        "SO_RCVBUFFORCE",
    )?;
    ring::request(fd, libc::PACKET_RX_RING, &shape).map_err(|e| error("PACKET_RX_RING", e))?;
    Ring::map(fd, shape).map_err(|e| error("mmap of the receive ring", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rx_ring_has_the_frames_asked_for_and_memory_in_proportion() {
        let full = rx_ring_shape(1500, RX_FRAMES);
        for frames in [MIN_RX_FRAMES, 100, 512, RX_FRAMES, MAX_RX_FRAMES] {
            let shape = rx_ring_shape(1500, frames);
            // At least what was asked, and at most one block's frames more.
            let per_block = (1 << 16) / shape.frame_size;
            assert!(shape.frames() >= frames, "{frames}");
            assert!(shape.frames() < frames + per_block, "{frames}");
            assert_eq!(shape.frame_size, rx_frame_size(1500));
            // Memory follows the depth: whole blocks, no more than the frames asked for need.
            assert!(shape.bytes() >= frames * shape.frame_size);
            assert!(shape.bytes() <= (frames / per_block + 1) << 16, "{frames}");
        }
        assert!(rx_ring_shape(1500, 512).bytes() * 3 < full.bytes());
    }

    /// Runs the filter's program as the kernel would on a frame of interface `ifindex`.
    fn verdict(prog: &[libc::sock_filter], ifindex: i32) -> u32 {
        let (mut pc, mut a) = (0usize, 0u32);
        loop {
            let i = prog[pc];
            match i.code as u32 {
                c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => a = ifindex as u32,
                c if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => {
                    pc += if a == i.k { i.jt } else { i.jf } as usize;
                }
                c if c == libc::BPF_RET | libc::BPF_K => return i.k,
                c => panic!("unexpected instruction {c:#x}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn the_filter_admits_the_ports_interfaces_whole_and_nothing_else() {
        let ports: Vec<i32> = (2..=600).step_by(3).collect();
        let prog = interface_filter(&ports);
        assert!(prog.len() <= 4096, "BPF_MAXINSNS");
        for ifindex in 1..=700 {
            let want = if ports.contains(&ifindex) {
                ACCEPT_WHOLE
            } else {
                0
            };
            assert_eq!(verdict(&prog, ifindex), want, "{ifindex}");
        }
    }
}
