//! dplab-fwd: a user-space forwarder on dplab's packet I/O library, one process per switch:
//! a learning bridge (bridge.rs), optionally tagging at its edges (vlan.rs), or an IPv4
//! router (router.rs) over AF_PACKET ports, either behind extra match-action tables
//! (pipeline.rs).
//!
//! usage: dplab-fwd --config PATH
//!
//! The configuration (config.rs) names the ports and, for a router, the routes. Once every
//! port is open the forwarder prints `ready` on stdout; on SIGUSR1 it prints its counters
//! as one JSON line, and on SIGTERM or SIGINT it stops and prints them a last time. Each
//! round takes up to `BURST` frames from every port (the ports hand over wire packets:
//! segments of the hosts' super-packets, checksums finished), decides each packet's way,
//! and sends every port's share in one batch (joined again into super-packets where the
//! port takes them).

#![forbid(unsafe_code)]

mod bridge;
mod config;
mod pipeline;
mod router;
mod vlan;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use pktio::offload::segment::Segments;
use pktio::phy::port::{self, wait_readable, Port};
use pktio::phy::rx;
use pktio::sys;

use bridge::Bridge;
use config::{Config, Mode};
use pipeline::Lookups;
use router::Router;
use vlan::Tagging;

/// Frames taken from one port per round, so one busy port cannot starve the others.
const BURST: usize = 64;
/// Longest idle wait before looking at the stop flag again.
const IDLE_WAIT_MS: i32 = 100;

/// Where a packet goes.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Out of the port of this index.
    Out(usize),
    /// Out of every port but the one it came in.
    Flood,
    /// Nowhere, for this reason (a counter's name).
    Drop(&'static str),
}

enum Logic {
    Bridge(Bridge),
    Router(Router),
}

#[derive(Default)]
struct Counters {
    rx_packets: u64,
    tx_packets: u64,
    flooded: u64,
    drops: BTreeMap<&'static str, u64>,
}

static REPORT: AtomicBool = AtomicBool::new(false);

extern "C" fn on_report_signal(_: libc::c_int) {
    REPORT.store(true, Ordering::Relaxed);
}

struct Forwarder {
    ports: Vec<Port>,
    logic: Logic,
    tagging: Option<Tagging>,
    lookups: Lookups,
    /// Packets to send, per port index, this round.
    out: Vec<Vec<Vec<u8>>>,
    /// Spare packet buffers, so a warm forwarder allocates little.
    spare: Vec<Vec<u8>>,
    segments: Segments,
    counters: Counters,
}

impl Forwarder {
    /// One round over every port; how many frames came in.
    fn round(&mut self) -> usize {
        let mut frames = 0;
        let now = Instant::now();
        for i in 0..self.ports.len() {
            for _ in 0..BURST {
                let Some(frame) = self.ports[i].next_rx() else {
                    break;
                };
                let got = self.ports[i].read_frame(&frame, &mut self.segments);
                self.ports[i].release(frame);
                frames += 1;
                self.counters.rx_packets += got.packets;
                if let Some(why) = got.dropped {
                    *self.counters.drops.entry(why.name()).or_default() += got.packets;
                    continue;
                }
                for k in 0..self.segments.len() {
                    self.forward(i, k, now);
                }
            }
        }
        self.send();
        frames
    }

    /// Decides where segment `k` of what port `in_port` received goes, and queues it.
    fn forward(&mut self, in_port: usize, k: usize, now: Instant) {
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(self.segments.get(k));
        self.lookups.apply(&buf);
        let admitted = match &self.tagging {
            Some(tagging) => tagging.ingress(in_port, &mut buf),
            None => Ok(()),
        };
        let verdict = match (admitted, &mut self.logic) {
            (Err(why), _) => Verdict::Drop(why),
            (Ok(()), Logic::Bridge(b)) => b.decide(in_port, &buf, now),
            (Ok(()), Logic::Router(r)) => r.route(in_port, &mut buf),
        };
        match verdict {
            Verdict::Out(port) => {
                if let Some(tagging) = &self.tagging {
                    tagging.egress(port, &mut buf);
                }
                self.out[port].push(buf);
            }
            Verdict::Flood => {
                self.counters.flooded += 1;
                for port in (0..self.ports.len()).filter(|&p| p != in_port) {
                    let mut copy = self.spare.pop().unwrap_or_default();
                    copy.clear();
                    copy.extend_from_slice(&buf);
                    if let Some(tagging) = &self.tagging {
                        tagging.egress(port, &mut copy);
                    }
                    self.out[port].push(copy);
                }
                self.spare.push(buf);
            }
            Verdict::Drop(why) => {
                *self.counters.drops.entry(why).or_default() += 1;
                self.spare.push(buf);
            }
        }
    }

    /// Sends every port's queued packets.
    fn send(&mut self) {
        for (port, batch) in self.ports.iter_mut().zip(&mut self.out) {
            if batch.is_empty() {
                continue;
            }
            let sent = port.send_batch(batch, None);
            self.counters.tx_packets += sent.packets;
            let refused = (batch.len() as u64).saturating_sub(sent.packets);
            if refused > 0 {
                *self.counters.drops.entry("refused").or_default() += refused;
            }
            self.spare.append(batch);
        }
    }

    fn report(&self) -> serde_json::Value {
        let c = &self.counters;
        let learned = match &self.logic {
            Logic::Bridge(b) => Some(b.learned()),
            Logic::Router(_) => None,
        };
        serde_json::json!({
            "rx_packets": c.rx_packets, "tx_packets": c.tx_packets, "flooded": c.flooded,
            "drops": c.drops, "learned": learned, "extra_lookups": self.lookups.hits(),
        })
    }
}

const PROGRAM: &str = "dplab-fwd";

fn fail(message: &str) -> ! {
    dplab_tool::fail(PROGRAM, message)
}

fn main() {
    let config: Config = dplab_tool::config_from_args(PROGRAM);
    let index = |number: u32| {
        config
            .ports
            .iter()
            .position(|p| p.number == number)
            .expect("checked when loaded")
    };
    let logic = match config.mode {
        Mode::Bridge => Logic::Bridge(Bridge::default()),
        Mode::Router => Logic::Router(Router::new(&config, index)),
    };
    let ports: Vec<Port> = config
        .ports
        .iter()
        .map(|p| Port::open(p.number, &p.iface, port::Xdp::Off, rx::RX_FRAMES))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| fail(&format!("{}: {e}", config.switch)));
    dplab_tool::stop_on_signals();
    sys::on_signals(&[libc::SIGUSR1], on_report_signal);
    let fds: Vec<i32> = ports.iter().map(Port::fd).collect();
    let mut fwd = Forwarder {
        out: ports.iter().map(|_| Vec::new()).collect(),
        tagging: config.vlan.as_ref().map(|vlan| {
            let access = config.ports.iter().map(|p| vlan.access.contains(&p.number));
            Tagging::new(vlan.vid, access.collect())
        }),
        lookups: Lookups::new(config.extra_lookups),
        ports,
        logic,
        spare: Vec::new(),
        segments: Segments::default(),
        counters: Counters::default(),
    };
    println!("ready");
    let _ = std::io::stdout().flush();
    while !dplab_tool::stopping() {
        if fwd.round() == 0 {
            wait_readable(&fds, IDLE_WAIT_MS);
        }
        if REPORT.swap(false, Ordering::Relaxed) {
            println!("{}", fwd.report());
            let _ = std::io::stdout().flush();
        }
    }
    println!("{}", fwd.report());
}
