//! dplab-linkem: a link emulator on dplab's packet I/O library. It sits between two
//! interfaces of its own namespace (AF_PACKET on both) and forwards each direction with
//! that direction's loss, rate and queue, delay and jitter (model.rs), as configured
//! (config.rs).
//!
//! usage: dplab-linkem --config PATH
//!
//! Prints `ready` once both ports are open; on SIGTERM or SIGINT it stops and prints its
//! counters per direction, with the seed, as one JSON line.
//!
//! Timing: a packet's arrival is the kernel's receive timestamp in the ring (so the time
//! this process took to wake is not added to the delay); each direction keeps its packets
//! in a binary heap by due time. Between rounds the process sleeps in ppoll on both ports
//! until 50 µs before the next due packet (timer slack lowered to 1 µs, a short scheduler
//! slice), so it wakes for a new packet or a due one, whichever comes first, then polls
//! its rings for those last 50 µs. The busy tail is short on purpose: emulators share
//! their cores with the hosts, switches and other emulators of the run, and a spinning one
//! would take the time they need; it costs at most 50 µs of CPU per due time.

#![forbid(unsafe_code)]

mod config;
mod model;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;

use pktio::offload::segment::Segments;
use pktio::phy::port::{self, Port};
use pktio::phy::rx;
use pktio::sys;

use config::Config;
use model::{Copy, Fate, Model};

/// Frames taken from one port per round, so one busy direction cannot starve the other.
const BURST: usize = 64;
/// How long before a due time the emulator stops sleeping and polls its rings instead: a
/// wake-up from ppoll's timeout comes tens of µs late on a virtual machine (the timer's
/// interrupt, the switch back in), more than the whole rest of a packet's way.
const SPIN_NS: u64 = 50_000;
/// Longest sleep before looking at the stop flag again.
const IDLE_WAIT_NS: u64 = 100_000_000;
/// How late the kernel may wake this process (its default, 50 µs, would add to every delay).
const TIMER_SLACK_NS: u64 = 1_000;
/// Under EEVDF (Linux 6.12+) a task with a shorter slice gets an earlier deadline, so when a
/// due time or a packet wakes the emulator it preempts the host or switch running on that
/// core instead of waiting for its slice to end (as the switch does, switch/src/dataplane.rs);
/// dplab's substrate then raises the process to SCHED_FIFO once it printed `ready`
/// (src/dplab/substrate/realtime.py), which supersedes the slice; the slice still counts
/// where the kernel refuses a real-time policy.
const SLICE_NS: u64 = 100_000;

#[derive(Default, serde::Serialize)]
struct Counters {
    received: u64,
    sent: u64,
    lost: u64,
    queue_full: u64,
    limit: u64,
    /// Copies made; a copy dropped on its own way counts in `lost`, `queue_full` or `limit`
    /// too.
    duplicated: u64,
    corrupted: u64,
    /// Frames the port could not read (truncated, malformed offload metadata).
    port_drops: u64,
    /// Packets the kernel did not take on send.
    refused: u64,
}

/// A packet waiting for its due time; ordered by (due, arrival order).
struct Pending {
    due_ns: u64,
    seq: u64,
    packet: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.due_ns, self.seq) == (other.due_ns, other.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due_ns, self.seq).cmp(&(other.due_ns, other.seq))
    }
}

/// One direction: packets in from one port, out of the other.
struct Way {
    model: Model,
    held: BinaryHeap<Reverse<Pending>>,
    counters: Counters,
    out: Vec<Vec<u8>>,
}

struct Emulator {
    /// Port 0 is `a`, port 1 is `b`; way 0 goes a→b, way 1 b→a.
    ports: [Port; 2],
    ways: [Way; 2],
    segments: Segments,
    spare: Vec<Vec<u8>>,
    seq: u64,
    /// Ports whose interface went away (see `take_port_errors`).
    gone: [bool; 2],
}

fn monotonic_ns() -> u64 {
    sys::clock_ns(libc::CLOCK_MONOTONIC)
}

impl Emulator {
    /// Takes what came in on both ports and decides each packet's fate; how many frames.
    fn receive(&mut self) -> usize {
        let now = monotonic_ns();
        // Ring timestamps are CLOCK_REALTIME; due times are on CLOCK_MONOTONIC.
        let realtime_ahead = sys::clock_ns(libc::CLOCK_REALTIME).saturating_sub(now);
        let mut frames = 0;
        for i in 0..2 {
            for _ in 0..BURST {
                let Some(frame) = self.ports[i].next_rx() else {
                    break;
                };
                let arrival = self.ports[i]
                    .rx_time_ns(&frame)
                    .saturating_sub(realtime_ahead)
                    .min(now);
                let got = self.ports[i].read_frame(&frame, &mut self.segments);
                self.ports[i].release(frame);
                frames += 1;
                self.ways[i].counters.received += got.packets;
                if got.dropped.is_some() {
                    self.ways[i].counters.port_drops += got.packets;
                    continue;
                }
                for k in 0..self.segments.len() {
                    self.admit(i, k, arrival);
                }
            }
        }
        frames
    }

    fn admit(&mut self, way: usize, k: usize, arrival: u64) {
        let w = &mut self.ways[way];
        let packet = self.segments.get(k);
        let (due_ns, copy, corrupt_bit) = match w.model.admit(arrival, packet.len(), w.held.len()) {
            Fate::Lost => return w.counters.lost += 1,
            Fate::QueueFull => return w.counters.queue_full += 1,
            Fate::OverLimit => return w.counters.limit += 1,
            Fate::Deliver {
                due_ns,
                copy,
                corrupt_bit,
            } => (due_ns, copy, corrupt_bit),
        };
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(packet);
        if let Some(bit) = corrupt_bit {
            buf[14 + bit / 8] ^= 1 << (bit % 8);
            w.counters.corrupted += 1;
        }
        self.seq += 1;
        w.held.push(Reverse(Pending {
            due_ns,
            seq: self.seq,
            packet: buf,
        }));
        if let Some(copy) = copy {
            w.counters.duplicated += 1;
            match copy {
                Copy::Lost => w.counters.lost += 1,
                Copy::QueueFull => w.counters.queue_full += 1,
                Copy::OverLimit => w.counters.limit += 1,
                Copy::Due(due_ns) => {
                    let mut buf = self.spare.pop().unwrap_or_default();
                    buf.clear();
                    buf.extend_from_slice(packet);
                    self.seq += 1;
                    w.held.push(Reverse(Pending {
                        due_ns,
                        seq: self.seq,
                        packet: buf,
                    }));
                }
            }
        }
    }

    /// Sends every packet that is due; the time until the next one is (None: none held).
    fn release_due(&mut self) -> Option<u64> {
        let now = monotonic_ns();
        let mut next: Option<u64> = None;
        for way in 0..2 {
            let w = &mut self.ways[way];
            while let Some(Reverse(p)) = w.held.peek() {
                if p.due_ns > now {
                    next = Some(next.map_or(p.due_ns, |n| n.min(p.due_ns)));
                    break;
                }
                let Reverse(p) = w.held.pop().expect("peeked");
                w.out.push(p.packet);
            }
            if w.out.is_empty() {
                continue;
            }
            let sent = self.ports[1 - way].send_batch(&w.out, None);
            w.counters.sent += sent.packets;
            w.counters.refused += (w.out.len() as u64).saturating_sub(sent.packets);
            self.spare.append(&mut w.out);
        }
        next.map(|due| due.saturating_sub(now))
    }

    /// Sleeps until a port has a frame, `timeout_ns` passed, or a signal came.
    fn wait(&mut self, timeout_ns: u64) {
        let gone = self.gone;
        let mut pfds = self.ports.each_ref().map(|p| libc::pollfd {
            fd: p.fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        for (pfd, gone) in pfds.iter_mut().zip(gone) {
            if gone {
                pfd.fd = -1;
            }
        }
        if sys::ppoll(&mut pfds, timeout_ns) > 0 {
            self.take_port_errors(&pfds);
        }
    }

    /// Takes the error of each port that polled one (its interface went down or away),
    /// which would otherwise wake every ppoll at once; a port whose interface is gone (its
    /// namespace's other end deleted under a running emulator) is polled no more.
    fn take_port_errors(&mut self, pfds: &[libc::pollfd; 2]) {
        for (i, pfd) in pfds.iter().enumerate() {
            if pfd.revents & (libc::POLLERR | libc::POLLNVAL) == 0 {
                continue;
            }
            let port = &self.ports[i];
            if port.take_error_is_gone() {
                eprintln!(
                    "dplab-linkem: {}: interface gone, no longer polled",
                    port.name
                );
                self.gone[i] = true;
            }
        }
    }

    fn report(&self, config: &Config) -> serde_json::Value {
        serde_json::json!({
            "link": config.link, "seed": config.seed,
            "a_to_b": self.ways[0].counters, "b_to_a": self.ways[1].counters,
            "cpu_s": sys::cpu_seconds(),
        })
    }
}

const PROGRAM: &str = "dplab-linkem";

fn fail(message: &str) -> ! {
    dplab_tool::fail(PROGRAM, message)
}

fn main() {
    let config: Config = dplab_tool::config_from_args(PROGRAM);
    let open = |number, name: &str| {
        Port::open(number, name, port::Xdp::Off, rx::RX_FRAMES)
            .unwrap_or_else(|e| fail(&format!("{}: {e}", config.link)))
    };
    let ports = [open(1, &config.a), open(2, &config.b)];
    // The two ways draw from different streams of the one seed.
    let way = |cfg: &config::Direction, stream: u64| Way {
        model: Model::new(cfg.clone(), config.seed ^ stream),
        held: BinaryHeap::new(),
        counters: Counters::default(),
        out: Vec::new(),
    };
    let mut emu = Emulator {
        ports,
        ways: [
            way(&config.a_to_b, 0),
            way(&config.b_to_a, 0x9e37_79b9_7f4a_7c15),
        ],
        segments: Segments::default(),
        spare: Vec::new(),
        seq: 0,
        gone: [false; 2],
    };
    sys::set_timer_slack(TIMER_SLACK_NS);
    // Kernels before 6.12 ignore the slice: that costs precision under load, nothing else.
    sys::request_slice(SLICE_NS);
    dplab_tool::stop_on_signals();
    println!("ready");
    let _ = std::io::stdout().flush();
    while !dplab_tool::stopping() {
        let got = emu.receive();
        let next = emu.release_due();
        match next {
            _ if got > 0 => {}
            Some(ns) if ns <= SPIN_NS => {}
            Some(ns) => emu.wait((ns - SPIN_NS).min(IDLE_WAIT_NS)),
            None => emu.wait(IDLE_WAIT_NS),
        }
    }
    println!("{}", emu.report(&config));
}
