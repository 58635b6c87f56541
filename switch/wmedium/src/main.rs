//! dplab-wmedium: one access point's wireless medium, on dplab's packet I/O library. It
//! sits in its own namespace on the medium's ends of veth pairs, one to the access point
//! and one to each station (AF_PACKET on every interface), and carries frames between them
//! as a shared medium would. A model, not radio physics (docs/wireless.md):
//!
//! - Infrastructure mode. A station's frame reaches the access point only (station to
//!   station goes through the access point's data plane), at the station's rate. The
//!   access point's frame reaches the station whose MAC it is for, at that station's rate;
//!   a broadcast or multicast, or a unicast to a MAC no station has sent from yet (the
//!   medium learns station MACs from the source address of their frames), reaches every
//!   station at the basic rate, and their NICs filter as on a real LAN.
//! - Loss: a station's loss chance applies to each frame between it and the access point,
//!   either way; a frame to every station is drawn for each station on its own. A lost
//!   frame still took its airtime. No link-layer retries: a loss reaches the hosts.
//! - One shared, half-duplex medium: one frame on the air at a time, for size × 8 / rate
//!   (size: the Ethernet frame's bytes) plus `overhead_us` (0 unless set: no preamble,
//!   inter-frame space or acknowledgement is modelled otherwise). A frame is delivered when
//!   its transmission ends.
//! - Each sender (the access point, each station) has its own FIFO queue of `queue_frames`
//!   (tail drop, counted). When the medium is free it serves the senders with a frame
//!   waiting round-robin, one frame per turn: 802.11 DCF's equal chance to send, without
//!   backoff or collisions. Two saturated stations at equal rates get half the airtime
//!   each; at unequal rates they send as many frames, so the slower takes more airtime
//!   and both get the slower's throughput (802.11's performance anomaly).
//! - Every loss draw comes from one generator seeded by `seed`.
//!
//! usage: dplab-wmedium --config PATH (config.rs)
//!
//! Prints `ready` once every port is open. On SIGTERM or SIGINT it stops and writes its
//! counters per interface (model.rs `NodeStats`, plus the frames its ports dropped at a
//! full ring, could not read or could not send) as JSON to `stats_path`.
//!
//! Timing: the medium runs on the kernel's receive timestamps of the frames, not on when
//! this process gets to them: each round reads what came in, replays it in arrival order
//! (ending the transmissions due before each arrival, then queueing it), and a transmission
//! starts when the one before it ended. So a late wake-up delays a delivery but neither
//! shortens nor lengthens anyone's airtime. Between rounds the process sleeps in ppoll on
//! every port until the transmission on the air ends (timer slack 1 µs); it does not spin,
//! so a delivery may come some tens of µs after its end, about the wake-up latency of the
//! machine.

#![forbid(unsafe_code)]

mod config;
mod model;

use std::io::Write;
use std::ops::Range;

use pktio::offload::segment::Segments;
use pktio::phy::port::{self, Port};
use pktio::phy::rx::{self, RingDrops};
use pktio::sys;
use serde::Serialize;

use config::Config;
use model::{Medium, NodeStats};

/// Frames read from one port per round, so one busy sender cannot hold up the others.
const RX_BURST: usize = 256;
/// Longest sleep before looking at the stop flag again.
const IDLE_WAIT_NS: u64 = 100_000_000;
/// How late the kernel may wake this process (its default, 50 µs, would add to deliveries).
const TIMER_SLACK_NS: u64 = 1_000;
/// A short scheduler slice (EEVDF, Linux 6.12+): woken by a frame or a transmission's end,
/// the medium preempts the host running on its core instead of waiting for that host's
/// slice to end (as switch/linkem does). dplab's substrate then raises the process to
/// SCHED_FIFO once it printed `ready` (src/dplab/substrate/realtime.py), which supersedes
/// the slice where the kernel allows it.
const SLICE_NS: u64 = 100_000;

/// What a port lost outside the model.
#[derive(Clone, Default, Serialize)]
struct PortStats {
    /// Frames the kernel dropped because the port's receive ring was full (the medium did
    /// not read fast enough).
    ring_drops: u64,
    /// Frames the port could not read (truncated, malformed offload metadata).
    port_drops: u64,
    /// Frames the kernel did not take on send.
    refused: u64,
}

/// One frame read this round: when it came, from which node, where its bytes are.
struct Arrival {
    arrival_ns: u64,
    node: usize,
    bytes: Range<usize>,
}

/// Frames to send, per node, and the buffers they free.
#[derive(Default)]
struct Outbox {
    out: Vec<Vec<Vec<u8>>>,
    spare: Vec<Vec<u8>>,
}

impl Outbox {
    fn push(&mut self, node: usize, frame: &[u8]) {
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(frame);
        self.out[node].push(buf);
    }
}

struct Wmedium {
    /// Port i is node i's (0: the access point).
    ports: Vec<Port>,
    ring_drops: Vec<RingDrops>,
    medium: Medium,
    port_stats: Vec<PortStats>,
    segments: Segments,
    arrivals: Vec<Arrival>,
    /// The bytes of this round's frames, back to back.
    rx_bytes: Vec<u8>,
    outbox: Outbox,
    /// One per port, for the sleep between rounds.
    pollfds: Vec<libc::pollfd>,
}

fn monotonic_ns() -> u64 {
    sys::clock_ns(libc::CLOCK_MONOTONIC)
}

impl Wmedium {
    /// One round: read, replay in arrival order, send what was delivered; returns how many
    /// frames came and when the transmission on the air ends.
    fn round(&mut self) -> (usize, Option<u64>) {
        self.receive();
        let now = monotonic_ns();
        let Wmedium {
            medium,
            arrivals,
            rx_bytes,
            outbox,
            ..
        } = self;
        let mut deliver = |node: usize, frame: &[u8]| outbox.push(node, frame);
        arrivals.sort_by_key(|a| a.arrival_ns);
        for a in arrivals.iter() {
            let at = a.arrival_ns.min(now);
            medium.advance(at, &mut deliver);
            medium.enqueue(a.node, &rx_bytes[a.bytes.clone()], at);
        }
        let next = medium.advance(now, &mut deliver);
        self.send();
        (self.arrivals.len(), next)
    }

    /// Reads up to RX_BURST frames from each port into `arrivals` and `rx_bytes`.
    fn receive(&mut self) {
        self.arrivals.clear();
        self.rx_bytes.clear();
        // Ring timestamps are CLOCK_REALTIME; the medium runs on CLOCK_MONOTONIC.
        let realtime_ahead = sys::clock_ns(libc::CLOCK_REALTIME).saturating_sub(monotonic_ns());
        for (node, port) in self.ports.iter_mut().enumerate() {
            for _ in 0..RX_BURST {
                let Some(frame) = port.next_rx() else {
                    break;
                };
                let arrival_ns = port.rx_time_ns(&frame).saturating_sub(realtime_ahead);
                let got = port.read_frame(&frame, &mut self.segments);
                port.release(frame);
                if got.dropped.is_some() {
                    self.port_stats[node].port_drops += got.packets;
                    continue;
                }
                for k in 0..self.segments.len() {
                    let start = self.rx_bytes.len();
                    self.rx_bytes.extend_from_slice(self.segments.get(k));
                    self.arrivals.push(Arrival {
                        arrival_ns,
                        node,
                        bytes: start..self.rx_bytes.len(),
                    });
                }
            }
        }
    }

    fn send(&mut self) {
        for (node, port) in self.ports.iter_mut().enumerate() {
            let out = &mut self.outbox.out[node];
            if out.is_empty() {
                continue;
            }
            let sent = port.send_batch(out, None);
            self.port_stats[node].refused += (out.len() as u64).saturating_sub(sent.packets);
            self.outbox.spare.append(out);
        }
    }

    /// Sleeps until a port has a frame, `timeout_ns` passed, or a signal came.
    fn wait(&mut self, timeout_ns: u64) {
        if sys::ppoll(&mut self.pollfds, timeout_ns) > 0 {
            self.take_port_errors();
        }
    }

    /// Takes the error of each port that polled one (its interface went down or away),
    /// which would otherwise wake every ppoll at once; a port whose interface is gone is
    /// polled no more (a negative fd), so a station's namespace deleted under a running
    /// medium leaves the others served and this process asleep between frames.
    fn take_port_errors(&mut self) {
        for (pfd, port) in self.pollfds.iter_mut().zip(&self.ports) {
            if pfd.revents & (libc::POLLERR | libc::POLLNVAL) == 0 {
                continue;
            }
            if port.take_error_is_gone() {
                eprintln!(
                    "dplab-wmedium: {}: interface gone, no longer polled",
                    port.name
                );
                pfd.fd = -1;
            }
        }
    }

    fn write_stats(&mut self, config: &Config) -> std::io::Result<()> {
        for (stats, drops) in self.port_stats.iter_mut().zip(&self.ring_drops) {
            stats.ring_drops += drops.take()?;
        }
        #[derive(Serialize)]
        struct Node<'a> {
            #[serde(flatten)]
            medium: &'a NodeStats,
            #[serde(flatten)]
            port: &'a PortStats,
        }
        let nodes: serde_json::Map<String, serde_json::Value> = config
            .ifnames()
            .into_iter()
            .enumerate()
            .map(|(i, name)| {
                let node = Node {
                    medium: &self.medium.stats[i],
                    port: &self.port_stats[i],
                };
                (name.to_string(), serde_json::json!(node))
            })
            .collect();
        let stats = serde_json::json!({
            "name": config.name, "seed": config.seed, "cpu_s": sys::cpu_seconds(),
            "nodes": nodes,
        });
        // Whole or not at all: a reader never sees half a file.
        let partial = config.stats_path.with_extension("json.partial");
        std::fs::write(&partial, stats.to_string())?;
        std::fs::rename(&partial, &config.stats_path)
    }
}

const PROGRAM: &str = "dplab-wmedium";

fn fail(message: &str) -> ! {
    dplab_tool::fail(PROGRAM, message)
}

fn main() {
    let config: Config = dplab_tool::config_from_args(PROGRAM);
    config
        .check_stats_folder()
        .unwrap_or_else(|e| fail(&format!("{}: {e}", config.name)));
    let ports: Vec<Port> = config
        .ifnames()
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            Port::open(i as u32 + 1, name, port::Xdp::Off, rx::RX_FRAMES)
                .unwrap_or_else(|e| fail(&format!("{}: {e}", config.name)))
        })
        .collect();
    let nodes = ports.len();
    let ring_drops = ports
        .iter()
        .map(|p| {
            p.ring_drops()
                .unwrap_or_else(|e| fail(&format!("{}: {e}", p.name)))
        })
        .collect();
    let pollfds = ports
        .iter()
        .map(|p| libc::pollfd {
            fd: p.fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut wm = Wmedium {
        ports,
        ring_drops,
        medium: Medium::new(&config),
        port_stats: vec![PortStats::default(); nodes],
        segments: Segments::default(),
        arrivals: Vec::new(),
        rx_bytes: Vec::new(),
        outbox: Outbox {
            out: vec![Vec::new(); nodes],
            spare: Vec::new(),
        },
        pollfds,
    };
    sys::set_timer_slack(TIMER_SLACK_NS);
    // Kernels before 6.12 ignore the slice: that costs precision under load, nothing else.
    sys::request_slice(SLICE_NS);
    dplab_tool::stop_on_signals();
    println!("ready");
    let _ = std::io::stdout().flush();
    while !dplab_tool::stopping() {
        match wm.round() {
            (got, _) if got > 0 => {}
            (_, Some(end)) => wm.wait(end.saturating_sub(monotonic_ns()).min(IDLE_WAIT_NS)),
            (_, None) => wm.wait(IDLE_WAIT_NS),
        }
    }
    if let Err(e) = wm.write_stats(&config) {
        fail(&format!("{}: {e}", config.stats_path.display()));
    }
}
