//! Switch ports: transmit on a veth interface, and receive from it through a ring of the
//! port's own or one shared by every port of the namespace (rx.rs).
//!
//! Transmit uses a socket per port with a memory-mapped transmit ring (see txring.rs): the
//! packets of a round are written into the ring and sent with one `send()`. Packets that do
//! not go through that ring are sent on the receive socket, addressed to the port's
//! interface (so a receive socket shared by every port serves them all). Both sockets send
//! through the interface's qdisc: a shaped link (TBF on the switch's end) stays shaped in
//! the switch's direction too. The ring is set up as the port opens or, for a program of
//! many ports, when the port first sends ([`TxSetup`]). Until it is ready, or if it cannot be
//! set up (the port says so on stderr), the port sends packet by packet on the receive
//! socket instead (also used for the rare packet longer than the MTU allows, so the kernel
//! refuses it as it would any oversize frame). Consecutive segments of one TCP flow are joined into one super-packet
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
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::ethtool::{self, XmitCounter};
use super::ring::MAX_FRAME_SIZE;
use super::rx::{Interface, Received, Receiver, RingDrops, RxFrame};
use super::txring::{self, TxRing};
use super::xdp::tx::{self as xdptx, XdpTx};
use crate::offload::coalesce::{self, Coalescer};
use crate::offload::segment::Segments;
use crate::sys;
use crate::wire::ethernet::HEADER_LEN as ETH_HLEN;
use crate::wire::vnet::VNET_HDR_LEN;

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
}

impl PortDrop {
    pub const ALL: [PortDrop; 5] = [
        PortDrop::Truncated,
        PortDrop::BadOffload,
        PortDrop::Unsegmentable,
        PortDrop::TooLong,
        PortDrop::Refused,
    ];

    /// The reason's key in `stats`.
    pub fn name(self) -> &'static str {
        match self {
            PortDrop::Truncated => "truncated",
            PortDrop::BadOffload => "bad_offload",
            PortDrop::Unsegmentable => "unsegmentable",
            PortDrop::TooLong => "too_long",
            PortDrop::Refused => "refused",
        }
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

/// When a port's transmit ring is set up. Each set-up zeroes the ring's memory (448 KiB at
/// MTU 1500) and waits for an RCU grace period (packet_set_ring → synchronize_net), so a
/// program of many ports, most of which may never send, starts faster without it.
#[derive(Clone, Copy, PartialEq)]
pub enum TxSetup {
    /// While the port opens.
    AtOpen,
    /// When the port first sends, on a thread of its own; until the ring is ready, the
    /// port sends packet by packet on its receive socket (in order: one thread sends both).
    OnFirstSend,
}

/// A transmit ring still to come ([`TxSetup::OnFirstSend`]).
enum TxPending {
    No,
    NotStarted,
    Opening(JoinHandle<io::Result<TxPath>>),
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

pub struct Port {
    pub number: u32,
    pub name: String,
    pub ifindex: i32,
    /// The port's own receive socket and ring; None when a [`Receiver`] shared by every
    /// port takes its frames.
    rx: Option<Receiver>,
    /// A descriptor of the receive socket (the port's own or the shared one): packets that
    /// do not go through the transmit ring go out on it, addressed to the interface.
    sock: OwnedFd,
    tx: Option<TxPath>,
    tx_pending: TxPending,
    xdp: Option<XdpPath>,
    /// Longest frame the interface sends: its MTU plus the Ethernet header.
    wire_max: usize,
    /// Whether the interface takes super-packets (TSO on), and when that was last read.
    tso: bool,
    tso_read: Instant,
    coalescer: Coalescer,
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

/// Bytes per transmit ring frame for packets of up to `wire_max` bytes.
fn tx_frame_size(wire_max: usize) -> usize {
    align16(txring::DATA_OFFSET + wire_max).min(MAX_FRAME_SIZE)
}

impl Port {
    /// A port with a receive ring of its own. `xdp`: whether the program transmits through
    /// XDP, and how a call's count is known; `rx_frames`: the receive ring's depth
    /// ([`RX_FRAMES`](super::rx::RX_FRAMES) unless memory is short), from
    /// [`MIN_RX_FRAMES`](super::rx::MIN_RX_FRAMES) to [`MAX_RX_FRAMES`](super::rx::MAX_RX_FRAMES).
    pub fn open(number: u32, name: &str, xdp: Xdp, rx_frames: usize) -> io::Result<Port> {
        let ifindex = interface_index(number, name)?;
        let rx = Receiver::open_port(&Interface { name, ifindex }, rx_frames)?;
        let sock = rx.clone_fd().map_err(|e| port_error(name, "dup", e))?;
        Port::with(number, name, ifindex, Some(rx), sock, xdp, TxSetup::AtOpen)
    }

    /// A port whose frames a shared [`Receiver`] takes (made with this port's interface
    /// among its own, [`Receiver::open_shared`]); it sends its lone packets on `shared`, a
    /// descriptor of that receiver's socket ([`Receiver::clone_fd`]).
    pub fn open_on(
        number: u32,
        name: &str,
        xdp: Xdp,
        shared: OwnedFd,
        tx: TxSetup,
    ) -> io::Result<Port> {
        let ifindex = interface_index(number, name)?;
        Port::with(number, name, ifindex, None, shared, xdp, tx)
    }

    fn with(
        number: u32,
        name: &str,
        ifindex: i32,
        rx: Option<Receiver>,
        sock: OwnedFd,
        xdp: Xdp,
        tx: TxSetup,
    ) -> io::Result<Port> {
        let mtu = sys::interface_mtu(sock.as_raw_fd(), name)
            .map_err(|e| port_error(name, "SIOCGIFMTU", e))?;
        let tso = ethtool::tso(sock.as_raw_fd(), name);
        let mut port = Port {
            number,
            name: name.to_string(),
            ifindex,
            rx,
            sock,
            tx: None,
            tx_pending: TxPending::No,
            xdp: None,
            wire_max: mtu + ETH_HLEN,
            tso,
            tso_read: Instant::now(),
            coalescer: Coalescer::default(),
        };
        match tx {
            TxSetup::AtOpen => port.take_tx_path(open_tx_path(ifindex, port.wire_max)),
            TxSetup::OnFirstSend => port.tx_pending = TxPending::NotStarted,
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

    /// Takes the transmit ring just set up, or says on stderr why there is none.
    fn take_tx_path(&mut self, opened: io::Result<TxPath>) {
        match opened {
            Ok(tx) => self.tx = Some(tx),
            Err(e) => eprintln!(
                "{}: port {} ({}): no transmit ring ({e}); sending packet by packet instead",
                program(),
                self.number,
                self.name
            ),
        }
    }

    /// Moves a transmit ring set up on first send along: starts its set-up, or takes it
    /// once ready (without waiting: the data path never blocks on it).
    fn settle_tx(&mut self) {
        match std::mem::replace(&mut self.tx_pending, TxPending::No) {
            TxPending::No => {}
            TxPending::NotStarted => {
                let (ifindex, wire_max) = (self.ifindex, self.wire_max);
                let opening = std::thread::Builder::new()
                    .name(format!("tx-ring-{}", self.number))
                    .spawn(move || open_tx_path(ifindex, wire_max));
                match opening {
                    Ok(thread) => self.tx_pending = TxPending::Opening(thread),
                    Err(e) => self.take_tx_path(Err(e)),
                }
            }
            TxPending::Opening(thread) if thread.is_finished() => {
                let opened = thread
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("its set-up panicked")));
                self.take_tx_path(opened);
            }
            still @ TxPending::Opening(_) => self.tx_pending = still,
        }
    }

    /// The port's receive socket (its own, or the shared one).
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// After a poll reported an error on this port's own receive socket (its interface went
    /// down or away): takes the error, which would otherwise wake every later poll at once,
    /// and says whether the interface itself is gone (its namespace's other end deleted).
    pub fn take_error_is_gone(&self) -> bool {
        let _ = sys::take_socket_error(self.fd());
        sys::if_nametoindex(&self.name) != Some(self.ifindex as u32)
    }

    /// The reader of this port's receive-ring drops (see [`RingDrops`]); an error for a
    /// port without a ring of its own (the shared [`Receiver`] has the reader).
    pub fn ring_drops(&self) -> io::Result<RingDrops> {
        match &self.rx {
            Some(rx) => rx.ring_drops(),
            None => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("port {}: no receive ring of its own", self.name),
            )),
        }
    }

    /// Next filled frame of the port's own receive ring, if any (never, without one).
    pub fn next_rx(&mut self) -> Option<RxFrame> {
        self.rx.as_mut()?.next_rx()
    }

    /// The receiver that lent the port's frames (a frame exists only if it does).
    fn own_rx(&mut self) -> &mut Receiver {
        self.rx.as_mut().expect("a frame of the port's own ring")
    }

    /// [`Receiver::rx_time_ns`] of a frame from [`Port::next_rx`].
    pub fn rx_time_ns(&mut self, frame: &RxFrame) -> u64 {
        self.own_rx().rx_time_ns(frame)
    }

    /// [`Receiver::read_frame`] of a frame from [`Port::next_rx`].
    pub fn read_frame(&mut self, frame: &RxFrame, out: &mut Segments) -> Received {
        self.own_rx().read_frame(frame, out)
    }

    /// Gives a frame from [`Port::next_rx`] back to the kernel.
    pub fn release(&mut self, frame: RxFrame) {
        self.own_rx().release(frame)
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
        self.settle_tx();
        if !self.sends_xdp() {
            xdp = None;
        }
        let xdp_max = self.wire_max.min(xdptx::ROOM);
        if !self.tso && self.tso_read.elapsed() >= TSO_RECHECK {
            self.tso = ethtool::tso(self.fd(), &self.name);
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
            match send_one(self.fd(), self.ifindex, p) {
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
        if sys::sendmsg_to(self.sock.as_raw_fd(), self.ifindex, &parts[..n]).is_err() {
            return false; // a full queue (the kernel cuts what the device cannot take whole)
        }
        sent.packets += segments.len() as u64;
        sent.bytes += segments.iter().map(|p| p.len() as u64).sum::<u64>();
        true
    }
}

/// An empty virtio-net header: the receive socket has PACKET_VNET_HDR, so everything
/// sent on it starts with one (no offloads asked for).
const NO_OFFLOAD: [u8; VNET_HDR_LEN] = [0; VNET_HDR_LEN];

/// Sends one packet on the receive socket `fd` to interface `ifindex`.
fn send_one(fd: RawFd, ifindex: i32, packet: &[u8]) -> io::Result<()> {
    sys::sendmsg_to(
        fd,
        ifindex,
        &[IoSlice::new(&NO_OFFLOAD), IoSlice::new(packet)],
    )
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

/// The index of interface `name` (port `number`) in this namespace.
pub fn interface_index(number: u32, name: &str) -> io::Result<i32> {
    match sys::if_nametoindex(name) {
        Some(ifindex) => Ok(ifindex as i32),
        None => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("port {number}: no interface named {name:?} in this namespace"),
        )),
    }
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
