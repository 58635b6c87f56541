//! Switch ports: one AF_PACKET socket per veth interface.
//!
//! Receive uses a TPACKET_V2 memory-mapped ring: every frame has its own status word, so
//! a packet is visible the moment the kernel writes it (TPACKET_V3 only hands over whole
//! blocks, which adds up to a millisecond of latency at low load). Under load one poll
//! drains many frames, which gives batching without waiting. Frames are sized to the
//! largest packet the interface delivers whole: its MTU plus the Ethernet header and a
//! VLAN tag's 4 bytes of slack (what veth lets through, is_skb_forwardable), read at start.
//!
//! Every received packet comes with a virtio-net header (PACKET_VNET_HDR): hosts keep their
//! checksum and segmentation offloads, and offload/segment.rs turns what they hand over into the
//! packets a wire would carry. A packet too long for a ring frame (a TSO/GSO super-packet
//! of up to 64 KiB, or a packet beyond an MTU raised later) is not truncated:
//! PACKET_COPY_THRESH makes the kernel flag its frame TP_STATUS_COPY and queue the whole
//! packet on the socket, where `recv` fetches it, in ring order. Wire-sized packets, the
//! common case, keep the zero-syscall ring path.
//!
//! Transmit uses a second socket per port with a memory-mapped transmit ring (see
//! txring.rs): the packets of a round are written into the ring and sent with one `send()`.
//! Both sockets send through the interface's qdisc: a shaped link (TBF on the switch's end)
//! stays shaped in the switch's direction too. If that ring cannot be set up the port says
//! so on stderr and sends packet by packet on the receive socket instead (also used for
//! the rare packet longer than the MTU allows, so the kernel refuses it as it would any
//! oversize frame). Consecutive segments of one TCP flow are joined into one super-packet
//! (offload/coalesce.rs) and sent with its virtio-net header on the receive socket, after the
//! frames queued before them in the ring, so a port's packets keep their order (one qdisc
//! queue takes both). Segments are joined only while the interface has TSO on (the kernel
//! would cut the super-packet again in software otherwise), and the segments of a
//! super-packet the kernel refused go out one by one instead.
//!
//! With `--tx xdp` (xdp/tx.rs) a port sends wire-sized frames through the switch's XDP program
//! instead of the transmit ring, when a round gives it at least `--xdp-min-call` of them (fewer
//! cost less through the ring: xdp/tx.rs `MIN_CALL`); super-packets and frames longer than a map
//! slot keep the AF_PACKET path. A port's order holds: whatever one path has queued goes out
//! before the other path is used (the two still end in different queues of the receiving CPU,
//! the peer's NAPI ring and the backlog: switch/PROTOCOL.md `--tx`). A port whose interface
//! takes no XDP frames (its peer runs no NAPI, xdp/check.rs) sends through the ring, and counts
//! a fallback each time it goes from XDP to the ring. After each XDP call the port knows how
//! many frames veth took (xdp/sent.rs, or else ethtool.rs `XmitCounter`): the frames past that
//! count (the peer just stopped NAPI, or its ring was full) go out through the ring, a
//! fallback; when it took none, the port stays on the ring for `XDP_RETRY` before trying XDP
//! again. So no frame is lost
//! between the peer turning NAPI off and the switch seeing it.

use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

use super::ethtool::{self, XmitCounter};
use super::ring::{self, Ring, RingShape};
use super::txring::{self, TxRing};
use super::xdp::tx::{self as xdptx, XdpTx};
use crate::offload::coalesce::{self, Coalescer};
use crate::offload::segment::{Malformed, Segments};
use crate::sys;
use crate::wire::ethernet::{ETHERTYPE_VLAN, HEADER_LEN as ETH_HLEN};
use crate::wire::vnet::{VnetHdr, VNET_HDR_LEN};

/// Ring frames are at most this long, whatever the MTU: a jumbo MTU would multiply the
/// ring's memory for packets rare and slow enough to take the copy path instead.
const MAX_FRAME_SIZE: usize = 2048;
const VLAN_HLEN: usize = 4;
/// Where the kernel puts a received packet in its ring frame (tpacket_rcv): behind the
/// TPACKET_V2 header and address, aligned as if the link header were 16 bytes, then the
/// virtio-net header.
const RX_PACKET_AT: usize = align16(libc::TPACKET2_HDRLEN + 16) + VNET_HDR_LEN - ETH_HLEN;
/// Largest packet fetched from the socket queue (GSO packets are at most 64 KiB).
const BIG_PACKET: usize = 1 << 17;
/// Socket receive buffer for those packets: bounds the memory they may hold while queued.
const RCVBUF_BYTES: libc::c_int = 16 << 20;
/// Receive ring depth unless the program asks for another ([`Port::open`]). Every frame is
/// kernel memory mapped into the switch (it counts in its RSS): 2048 frames are 3.3 MiB per
/// port at MTU 1500, ~2 ms of 1 Mpps for while the switch's thread waits for its core; half
/// of that lost 64 B packets under load (measured A/B). A network of thousands of ports
/// asks for fewer, so that every port's ring fits in memory.
pub const RX_FRAMES: usize = 2048;
/// The fewest receive frames a port takes: one round's batch (dataplane.rs reads at most
/// 64 frames of a port per round) must fit in the ring.
pub const MIN_RX_FRAMES: usize = 64;
/// The most: 64 Ki frames are ~100 MiB per port, far beyond any use of a ring's depth.
pub const MAX_RX_FRAMES: usize = 1 << 16;
/// Transmit ring depth: a round sends a port at most 64 packets per input port (dataplane.rs), and
/// a longer batch (segments of super-packets) is sent in parts as frames come free.
const TX_FRAME_COUNT: usize = 256;
/// `send()` calls per round for frames the device refused (peer backlog full) before
/// they are dropped, so nothing goes out late.
const TX_ATTEMPTS: usize = 3;
/// How often a port whose interface has TSO off looks again (`ethtool -K` may turn it on).
const TSO_RECHECK: Duration = Duration::from_secs(1);
/// How long a port whose peer refused XDP frames sends through the ring before it tries
/// XDP again (`ethtool -K <peer> gro on` may have been run since).
const XDP_RETRY: Duration = Duration::from_secs(1);

/// Why a port dropped a packet (switch/PROTOCOL.md, `stats`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PortDrop {
    /// Received cut short: longer than its ring frame, and its whole copy was not queued.
    Truncated,
    /// Received with offload metadata that cannot describe it: a checksum position
    /// outside the packet, a GSO size of 0, a header length beyond the packet.
    BadOffload,
    /// A received super-packet the switch cannot cut into wire packets: a GSO type it does
    /// not segment, or headers that do not fit the GSO type or cannot be repeated in every
    /// segment (IPv4 or IPv6 fragments, other IPv6 extension headers than hop-by-hop,
    /// routing and destination options, a routing header of unknown type, no payload).
    Unsegmentable,
    /// To send, but longer than the port's MTU allows: the kernel refused it (EMSGSIZE).
    TooLong,
    /// To send, but the kernel did not take it: the device's queue stayed full for the
    /// round, or another send error.
    Refused,
    /// Never received: the kernel found the receive ring full (the switch's thread did not
    /// drain it in time) and dropped the packet, counted by the socket's PACKET_STATISTICS
    /// `tp_drops` ([`RingDrops`]).
    RxRing,
}

impl PortDrop {
    pub const ALL: [PortDrop; 6] = [
        PortDrop::Truncated,
        PortDrop::BadOffload,
        PortDrop::Unsegmentable,
        PortDrop::TooLong,
        PortDrop::Refused,
        PortDrop::RxRing,
    ];

    /// The reason's key in `stats`.
    pub fn name(self) -> &'static str {
        match self {
            PortDrop::Truncated => "truncated",
            PortDrop::BadOffload => "bad_offload",
            PortDrop::Unsegmentable => "unsegmentable",
            PortDrop::TooLong => "too_long",
            PortDrop::Refused => "refused",
            PortDrop::RxRing => "rx_ring",
        }
    }
}

/// Reads the packets the kernel dropped for a port because its receive ring was full.
/// It holds a descriptor of its own for the port's receive socket, so a thread other than
/// the one that owns the [`Port`] (the switch's `stats`) reads it without stopping the data
/// plane; the socket stays open while either is alive.
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

/// What [`Port::send_batch`] got out, as a wire carries it (a super-packet counts as
/// its segments).
#[derive(Default)]
pub struct Sent {
    pub packets: u64,
    pub bytes: u64,
    /// Packets the kernel refused as longer than the MTU allows (the other packets not
    /// sent found the device's queue full, or another error).
    pub too_long: u64,
    /// Of `packets`, those sent through XDP.
    pub xdp_packets: u64,
    /// Times frames meant for XDP went through the ring instead (the interface stopped
    /// taking XDP frames, or refused some of a call's).
    pub xdp_fallbacks: u64,
}

/// Whether a port sends through XDP, and how it learns what veth took of each call.
#[derive(Clone, Copy, PartialEq)]
pub enum Xdp {
    Off,
    /// The switch's tracepoint program counts it (xdp/sent.rs): the port reads nothing.
    Traced,
    /// The port reads veth's statistics around each call (ethtool.rs `XmitCounter`).
    VethCount,
}

/// A port's state for sending through XDP.
struct XdpPath {
    /// Frames the interface took through XDP so far (only the switch's calls move it);
    /// opened only for `Xdp::VethCount`: reading the statistics' names costs a vmalloc'ed
    /// buffer in the kernel per port at start.
    taken: Option<XmitCounter>,
    /// That count as last read (None: unread).
    known_taken: Option<u64>,
    /// Set when the peer refused XDP frames: the ring is used until then.
    refused_until: Option<Instant>,
    /// Whether the interface took XDP frames when last asked.
    accepted: bool,
}

/// The transmit socket's ring and what is queued in it.
struct TxPath {
    ring: TxRing,
    /// Longest packet that goes through the ring: the ring does not check the MTU.
    max_len: usize,
    /// Lengths of the packets queued in the ring this round, in ring order.
    queued: Vec<u64>,
}

impl TxPath {
    /// Hands the queued frames to the kernel, drops those it would not take (so nothing
    /// goes out late) and adds what went out to `sent`.
    fn push_out(&mut self, sent: &mut Sent) {
        let mut taken = 0;
        for _ in 0..TX_ATTEMPTS {
            let f = self.ring.flush();
            taken += f.sent;
            if f.waiting == 0 || f.error.is_some() {
                break;
            }
        }
        self.ring.reclaim();
        sent.packets += taken as u64;
        sent.bytes += self.queued[..taken].iter().sum::<u64>();
        self.queued.clear();
    }
}

/// A frame lent out of the receive ring; give it back with [`Port::release`].
pub struct RxFrame {
    /// Where the frame starts in the ring.
    at: usize,
}

/// What one received frame was on the wire, from [`Port::read_frame`].
pub struct Received {
    /// Wire packets (segments of a super-packet count one by one).
    pub packets: u64,
    pub bytes: u64,
    /// Why the frame was dropped, if it was.
    pub dropped: Option<PortDrop>,
}

pub struct Port {
    pub number: u32,
    pub name: String,
    // Declared before `fd`: the ring is unmapped before the socket closes.
    ring: Ring,
    fd: OwnedFd,
    /// Where the next frame to read starts in the ring.
    next_at: usize,
    pub ifindex: i32,
    tx: Option<TxPath>,
    xdp: Option<XdpPath>,
    /// Longest frame the interface sends: its MTU plus the Ethernet header.
    wire_max: usize,
    /// Whether the interface takes super-packets (TSO on), and when that was last read.
    tso: bool,
    tso_read: Instant,
    coalescer: Coalescer,
    /// Room for a packet fetched from the socket queue, behind its virtio-net header.
    queued: Vec<u8>,
    /// A packet with its VLAN tag put back.
    tagged: Vec<u8>,
}

/// The running program's name (dplab-switch, dplab-fwd), for messages on stderr.
fn program() -> String {
    let arg0 = std::env::args().next().unwrap_or_default();
    let name = std::path::Path::new(&arg0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    name.unwrap_or(arg0)
}

fn port_error(name: &str, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("port {name}: {what}: {e}"))
}

const fn align16(n: usize) -> usize {
    (n + 15) & !15
}

/// Bytes per receive ring frame for an interface of MTU `mtu` (see the module's doc).
fn rx_frame_size(mtu: usize) -> usize {
    align16(RX_PACKET_AT + ETH_HLEN + mtu + VLAN_HLEN).min(MAX_FRAME_SIZE)
}

/// The receive ring of an interface of MTU `mtu`, with room for at least `frames` frames.
fn rx_ring_shape(mtu: usize, frames: usize) -> RingShape {
    RingShape::new(rx_frame_size(mtu), frames)
}

/// Bytes per transmit ring frame for packets of up to `wire_max` bytes.
fn tx_frame_size(wire_max: usize) -> usize {
    align16(txring::DATA_OFFSET + wire_max).min(MAX_FRAME_SIZE)
}

impl Port {
    /// `xdp`: whether the switch transmits through XDP, and how a call's count is known;
    /// `rx_frames`: the receive ring's depth ([`RX_FRAMES`] unless memory is short), from
    /// [`MIN_RX_FRAMES`] to [`MAX_RX_FRAMES`].
    pub fn open(number: u32, name: &str, xdp: Xdp, rx_frames: usize) -> io::Result<Port> {
        if !(MIN_RX_FRAMES..=MAX_RX_FRAMES).contains(&rx_frames) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "port {number} ({name}): {rx_frames} receive frames: expected \
                     {MIN_RX_FRAMES} to {MAX_RX_FRAMES}"
                ),
            ));
        }
        let Some(ifindex) = sys::if_nametoindex(name) else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("port {number}: no interface named {name:?} in this namespace"),
            ));
        };
        let ifindex = ifindex as i32;
        // Protocol 0: the socket takes no packets until `bind` names ETH_P_ALL and the
        // interface. Opened with ETH_P_ALL it would be hooked into every interface already,
        // and unhooking it for the bind waits for an RCU grace period (packet_do_bind →
        // synchronize_net), ~10 ms a port on a loaded machine.
        let fd = sys::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK, 0)
            .map_err(|e| port_error(name, "socket", e))?;
        let mtu = sys::interface_mtu(fd.as_raw_fd(), name)
            .map_err(|e| port_error(name, "SIOCGIFMTU", e))?;
        let ring = configure(fd.as_raw_fd(), name, rx_ring_shape(mtu, rx_frames))?;
        sys::bind_packet(fd.as_raw_fd(), ifindex, libc::ETH_P_ALL as u16)
            .map_err(|e| port_error(name, "bind", e))?;
        let tso = ethtool::tso(fd.as_raw_fd(), name);
        let mut port = Port {
            number,
            name: name.to_string(),
            ring,
            fd,
            next_at: 0,
            ifindex,
            tx: None,
            xdp: None,
            wire_max: mtu + ETH_HLEN,
            tso,
            tso_read: Instant::now(),
            coalescer: Coalescer::default(),
            queued: vec![0; VNET_HDR_LEN + BIG_PACKET],
            tagged: Vec::new(),
        };
        match open_tx_path(ifindex, port.wire_max) {
            Ok(tx) => port.tx = Some(tx),
            Err(e) => eprintln!(
                "{}: port {number} ({name}): no transmit ring ({e}); \
                 sending packet by packet instead",
                program()
            ),
        }
        let taken = match xdp {
            Xdp::Off => return Ok(port),
            Xdp::Traced => Ok(None),
            Xdp::VethCount => XmitCounter::open(name).map(Some),
        };
        match taken {
            Ok(taken) => {
                port.xdp = Some(XdpPath {
                    taken,
                    known_taken: None,
                    refused_until: None,
                    accepted: true,
                })
            }
            Err(e) => eprintln!(
                "{}: port {number} ({name}): its XDP transmit count is unreadable ({e}); \
                 sending through the ring, not XDP",
                program()
            ),
        }
        Ok(port)
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// After a poll reported an error on this port's socket (its interface went down or
    /// away): takes the error, which would otherwise wake every later poll at once, and
    /// says whether the interface itself is gone (its namespace's other end deleted).
    pub fn take_error_is_gone(&self) -> bool {
        let _ = sys::take_socket_error(self.fd());
        sys::if_nametoindex(&self.name) != Some(self.ifindex as u32)
    }

    /// The reader of this port's receive-ring drops (see [`RingDrops`]).
    pub fn ring_drops(&self) -> io::Result<RingDrops> {
        Ok(RingDrops {
            fd: self.fd.try_clone()?,
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

    /// Whether the port sends through XDP now (false while its peer refuses XDP frames).
    pub fn sends_xdp(&self) -> bool {
        self.xdp
            .as_ref()
            .is_some_and(|x| x.refused_until.is_none_or(|until| Instant::now() >= until))
    }

    /// Sends a batch of packets, in order, segments of one TCP flow joined where they
    /// may be, through `xdp` where it can (None: the ring only); says how many wire
    /// packets the kernel took.
    pub fn send_batch(&mut self, packets: &[Vec<u8>], mut xdp: Option<&mut XdpTx>) -> Sent {
        let mut sent = Sent::default();
        if !self.sends_xdp() {
            xdp = None;
        }
        let xdp_max = self.wire_max.min(xdptx::ROOM);
        if !self.tso && self.tso_read.elapsed() >= TSO_RECHECK {
            self.tso = ethtool::tso(self.fd.as_raw_fd(), &self.name);
            self.tso_read = Instant::now();
        }
        let mut i = 0;
        while i < packets.len() {
            let count = if self.tso {
                coalesce::run_length(&packets[i..], self.wire_max)
            } else {
                1
            };
            let run = &packets[i..i + count];
            if count == 1 && run[0].len() <= xdp_max {
                if let Some(x) = xdp.as_deref_mut() {
                    self.queue_xdp(x, &run[0], &mut sent);
                    i += 1;
                    continue;
                }
            }
            if let Some(x) = xdp.as_deref_mut() {
                self.send_xdp(x, &mut sent);
            }
            if count == 1 || !self.send_super(run, &mut sent) {
                for p in run {
                    self.send_single(p, &mut sent);
                }
            }
            i += count;
        }
        if let Some(x) = xdp {
            self.send_xdp(x, &mut sent);
        }
        self.push_out_ring(&mut sent);
        sent
    }

    /// Hands what the transmit ring holds to the kernel.
    fn push_out_ring(&mut self, sent: &mut Sent) {
        if let Some(tx) = self.tx.as_mut() {
            if !tx.queued.is_empty() {
                tx.push_out(sent);
            }
        }
    }

    /// Adds a frame to the next XDP call, after what the ring holds (sent first).
    fn queue_xdp(&mut self, xdp: &mut XdpTx, p: &[u8], sent: &mut Sent) {
        self.push_out_ring(sent);
        xdp.queue(self.ifindex, p);
        if xdp.is_full() {
            self.send_xdp(xdp, sent);
        }
    }

    /// Sends the frames queued in `xdp`: through the ring when they are too few for an
    /// XDP call to pay (`XdpTx::min_call`) or the interface takes no XDP frames now, else
    /// in one XDP call settled with the count of frames veth took (module doc).
    fn send_xdp(&mut self, xdp: &mut XdpTx, sent: &mut Sent) {
        let n = xdp.count();
        if n == 0 {
            return;
        }
        let mut taken = 0;
        if n >= xdp.min_call() && self.xdp_accepted(xdp, sent) {
            taken = self.call_xdp(xdp);
            if taken < n {
                sent.xdp_fallbacks += 1;
            }
        }
        sent.packets += taken as u64;
        sent.xdp_packets += taken as u64;
        sent.bytes += xdp
            .queued()
            .take(taken)
            .map(|p| p.len() as u64)
            .sum::<u64>();
        // veth took the frames in order: the rest go out through the ring, after them.
        for p in xdp.queued().skip(taken) {
            self.send_single(p, sent);
        }
        xdp.clear();
    }

    /// Whether the interface takes XDP frames now (xdp/check.rs); a change to "no" counts
    /// a fallback.
    fn xdp_accepted(&mut self, xdp: &mut XdpTx, sent: &mut Sent) -> bool {
        let Some(path) = self.xdp.as_mut() else {
            return false;
        };
        let accepts = xdp.accepts(self.ifindex);
        if path.accepted && !accepts {
            sent.xdp_fallbacks += 1;
        }
        path.accepted = accepts;
        accepts
    }

    /// Makes the XDP call for the queued frames; says how many veth took (0 when the
    /// call failed or its outcome is unknown; the port then keeps to the ring for
    /// `XDP_RETRY`, and a fallback is counted).
    fn call_xdp(&mut self, xdp: &mut XdpTx) -> usize {
        let Some(path) = self.xdp.as_mut() else {
            return 0;
        };
        let taken = match path.taken.as_mut().filter(|_| !xdp.counts_taken()) {
            None => xdp.send(self.ifindex).ok().flatten().unwrap_or(0),
            Some(counter) => {
                // veth's own count, read after each call (an SIOCETHTOOL).
                let before = path.known_taken.or_else(|| counter.read());
                let result = xdp.send(self.ifindex);
                let after = counter.read();
                path.known_taken = after;
                match (result, before, after) {
                    (Ok(_), Some(b), Some(a)) => {
                        a.saturating_sub(b).min(xdp.count() as u64) as usize
                    }
                    _ => 0,
                }
            }
        };
        if taken == 0 {
            path.refused_until = Some(Instant::now() + XDP_RETRY);
        }
        taken
    }

    /// Queues a packet in the transmit ring, or sends it on its own (after what the ring
    /// holds, to keep the port's order) if there is no ring or it is too long for one.
    fn send_single(&mut self, p: &[u8], sent: &mut Sent) {
        let Some(tx) = self.tx.as_mut().filter(|tx| p.len() <= tx.max_len) else {
            self.push_out_ring(sent);
            match send_one(self.fd.as_raw_fd(), p) {
                Ok(()) => {
                    sent.packets += 1;
                    sent.bytes += p.len() as u64;
                }
                Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => sent.too_long += 1,
                Err(_) => {}
            }
            return;
        };
        if tx.ring.free_frame().is_none() {
            // A batch longer than the ring (the segments of super-packets): send what
            // is queued so its frames come free.
            tx.push_out(sent);
        }
        let Some(frame) = tx.ring.free_frame() else {
            return; // ring full: the kernel still holds every frame, a drop
        };
        frame[..p.len()].copy_from_slice(p);
        tx.ring.queue(p.len());
        tx.queued.push(p.len() as u64);
    }

    /// Sends `segments` joined into one super-packet, after whatever the ring holds, and
    /// counts them as their segments; false if the kernel refused it (then they are still
    /// to be sent).
    fn send_super(&mut self, segments: &[Vec<u8>], sent: &mut Sent) -> bool {
        self.push_out_ring(sent);
        let sp = self.coalescer.super_packet(segments);
        // On the stack: the data path allocates nothing per packet.
        let mut parts = [IoSlice::new(&[]); 2 + coalesce::MAX_SEGMENTS];
        parts[0] = IoSlice::new(&sp.vnet);
        parts[1] = IoSlice::new(sp.header);
        for (part, p) in parts[2..].iter_mut().zip(segments) {
            *part = IoSlice::new(&p[sp.payload_at..]);
        }
        let n = 2 + segments.len().min(coalesce::MAX_SEGMENTS);
        if sys::sendmsg(self.fd.as_raw_fd(), &parts[..n]).is_err() {
            return false; // a full queue (the kernel cuts what the device cannot take whole)
        }
        sent.packets += segments.len() as u64;
        sent.bytes += segments.iter().map(|p| p.len() as u64).sum::<u64>();
        true
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

/// An empty virtio-net header: the receive socket has PACKET_VNET_HDR, so everything
/// sent on it starts with one (no offloads asked for).
const NO_OFFLOAD: [u8; VNET_HDR_LEN] = [0; VNET_HDR_LEN];

/// Sends one packet on the receive socket `fd`.
fn send_one(fd: RawFd, packet: &[u8]) -> io::Result<()> {
    sys::sendmsg(fd, &[IoSlice::new(&NO_OFFLOAD), IoSlice::new(packet)])
}

/// Fetches the packet behind a TP_STATUS_COPY frame (the next one queued on socket `fd`)
/// into `queued`, behind its virtio-net header; false if it is not there whole.
fn fetch_queued(fd: RawFd, queued: &mut [u8], expected_len: usize) -> bool {
    let flags = libc::MSG_DONTWAIT | libc::MSG_TRUNC;
    sys::recv(fd, queued, flags)
        .is_ok_and(|n| n == VNET_HDR_LEN + expected_len && n <= queued.len())
}

/// The transmit socket of interface `ifindex`, with its transmit ring mapped, for frames
/// of up to `wire_max` bytes.
fn open_tx_path(ifindex: i32, wire_max: usize) -> io::Result<TxPath> {
    let frame_size = tx_frame_size(wire_max);
    let ring = txring::open(ifindex, frame_size, TX_FRAME_COUNT, false)?;
    Ok(TxPath {
        max_len: ring.max_packet().min(wire_max),
        ring,
        queued: Vec::new(),
    })
}

/// Sets the receive socket's options and maps its receive ring of `shape`.
fn configure(fd: RawFd, name: &str, shape: RingShape) -> io::Result<Ring> {
    let set = |level: i32, opt: i32, value: &libc::c_int, what: &str| {
        sys::setsockopt(fd, level, opt, value).map_err(|e| port_error(name, what, e))
    };
    let version: libc::c_int = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
    set(
        libc::SOL_PACKET,
        libc::PACKET_VERSION,
        &version,
        "PACKET_VERSION",
    )?;
    let one: libc::c_int = 1;
    // Packets the switch itself sends must not come back in as input.
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
    ring::request(fd, libc::PACKET_RX_RING, &shape)
        .map_err(|e| port_error(name, "PACKET_RX_RING", e))?;
    let ring = Ring::map(fd, shape).map_err(|e| port_error(name, "mmap of the receive ring", e))?;
    let ifindex = sys::if_nametoindex(name).unwrap_or(0) as i32;
    let mreq = libc::packet_mreq {
        mr_ifindex: ifindex,
        mr_type: libc::PACKET_MR_PROMISC as u16,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    // Promiscuous mode is a wish, not a need (veth delivers every frame anyway).
    let _ = sys::setsockopt(fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq);
    Ok(ring)
}

/// Waits until one of the file descriptors is readable or the timeout passes.
pub fn wait_readable(fds: &[RawFd], timeout_ms: i32) {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    sys::ppoll(&mut pfds, timeout_ms.max(0) as u64 * 1_000_000);
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
}
