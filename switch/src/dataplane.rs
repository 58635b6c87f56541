//! The data-plane thread: one poll loop over every port.
//!
//! One loop rather than a thread per port: the budget is "one core", a single loop needs
//! no locking between ports, and batching per port keeps system calls few. Each round
//! takes up to `BATCH` frames from every port under one lock of the runtime, then sends
//! what the pipeline produced with one `send()` per output port (ports.rs).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::pipeline::{Event, Worker};
use crate::ports::{wait_readable, Port};
use crate::segment::Segments;
use crate::shared::{add, drain, Shared};

const BATCH: usize = 64;
const IDLE_POLL_MS: i32 = 100;
/// Empty rounds spent spinning before sleeping in poll(): keeps latency low right after
/// traffic without burning a core when the switch is idle.
const SPIN_ROUNDS: u32 = 200;

struct Loop {
    shared: Arc<Shared>,
    ports: Vec<Port>,
    /// Port number → index into `ports` (port numbers are 9 bits).
    port_slot: Vec<Option<usize>>,
    worker: Option<Worker>,
    generation: u64,
    rx: Segments,
    out: Vec<(u32, Vec<u8>)>,
    events: Vec<Event>,
    tx: Vec<Vec<Vec<u8>>>,
}

pub fn run(shared: Arc<Shared>, ports: Vec<Port>, stop: Arc<AtomicBool>) {
    let mut port_slot = vec![None; 512];
    for (i, p) in ports.iter().enumerate() {
        port_slot[p.number as usize & 511] = Some(i);
    }
    let tx = ports.iter().map(|_| Vec::with_capacity(BATCH)).collect();
    let mut lp = Loop {
        shared,
        ports,
        port_slot,
        worker: None,
        generation: u64::MAX,
        rx: Segments::default(),
        out: Vec::with_capacity(BATCH * 4),
        events: Vec::new(),
        tx,
    };
    let mut fds: Vec<i32> = lp.ports.iter().map(|p| p.fd()).collect();
    fds.push(lp.shared.wake_dataplane);
    let mut idle_rounds = 0;
    while !stop.load(Ordering::Relaxed) {
        let started = lp.shared.now_ns();
        let cpu_started = thread_cpu_ns();
        let work = lp.round();
        if work > 0 {
            // Time spent on rounds that moved packets (kernel send work included): the
            // basis of the switch's own capacity figure, apart from idle spinning. The CPU
            // time leaves out the time other processes had the core (a shared machine).
            add(&lp.shared.counters.busy_ns, lp.shared.now_ns() - started);
            add(
                &lp.shared.counters.busy_cpu_ns,
                thread_cpu_ns() - cpu_started,
            );
            idle_rounds = 0;
            continue;
        }
        idle_rounds += 1;
        if idle_rounds > SPIN_ROUNDS {
            wait_readable(&fds, IDLE_POLL_MS);
            drain(lp.shared.wake_dataplane);
        }
    }
}

/// CPU time this thread has run (user and system, with the softirq work the kernel does
/// in its system calls).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Loop {
    /// One round over all ports and the packet-out queue; returns how many packets came in.
    fn round(&mut self) -> usize {
        let shared = self.shared.clone();
        let packet_outs: Vec<Vec<u8>> = {
            let mut q = shared.packet_out.lock().unwrap_or_else(|e| e.into_inner());
            q.drain(..).collect()
        };
        let mut work = packet_outs.len();
        let mut guard = shared.lock_runtime();
        let generation = shared.generation.load(Ordering::Acquire);
        if generation != self.generation {
            self.worker = guard.as_ref().map(|rt| Worker::new(&rt.prog));
            self.generation = generation;
        }
        let now = shared.now_ns();
        for bytes in packet_outs {
            add(&shared.counters.packet_out, 1);
            self.process(&mut guard, shared.cpu_port, &bytes, now);
        }
        for pi in 0..self.ports.len() {
            for _ in 0..BATCH {
                let Some(frame) = self.ports[pi].next_rx() else {
                    break;
                };
                let got = self.ports[pi].read_frame(&frame, &mut self.rx);
                self.ports[pi].release(frame);
                work += 1;
                let counters = &shared.port_counters[pi];
                add(&counters.rx_packets, got.packets);
                add(&counters.rx_bytes, got.bytes);
                if !got.ok {
                    add(&counters.drops, 1);
                    continue;
                }
                // Each wire packet (segment) goes through the pipeline on its own.
                let (number, rx) = (self.ports[pi].number, std::mem::take(&mut self.rx));
                for i in 0..rx.len() {
                    self.process(&mut guard, number, rx.get(i), now);
                }
                self.rx = rx;
            }
        }
        drop(guard);
        if let Some(w) = self.worker.as_mut() {
            let s = std::mem::take(&mut w.stats);
            add(&shared.counters.pipeline_packets, s.packets);
            add(&shared.counters.pipeline_drops, s.dropped);
            add(&shared.counters.loop_drops, s.loop_drops);
        }
        self.transmit();
        work
    }

    fn process(
        &mut self,
        runtime: &mut Option<crate::pipeline::Runtime>,
        port: u32,
        bytes: &[u8],
        now: u64,
    ) {
        let (Some(rt), Some(worker)) = (runtime.as_mut(), self.worker.as_mut()) else {
            add(&self.shared.counters.no_pipeline_drops, 1);
            return;
        };
        let (out, events) = (&mut self.out, &mut self.events);
        // The interpreter checks every index at load time; this only guards against a bug
        // taking the whole switch down on one packet.
        let result = catch_unwind(AssertUnwindSafe(|| {
            worker.process(rt, port, bytes, now, out, events)
        }));
        if result.is_err() {
            add(&self.shared.counters.pipeline_drops, 1);
        }
        if !self.events.is_empty() {
            self.shared.push_events(&rt.prog, &mut self.events);
        }
    }

    fn transmit(&mut self) {
        let shared = &self.shared;
        for (port, bytes) in self.out.drain(..) {
            if port == shared.cpu_port {
                add(&shared.counters.packet_in, 1);
                self.events.push(Event::PacketIn(bytes));
                continue;
            }
            match self.port_slot.get(port as usize).copied().flatten() {
                Some(i) => self.tx[i].push(bytes),
                None => add(&shared.counters.unknown_port_drops, 1),
            }
        }
        if !self.events.is_empty() {
            let prog = shared.lock_runtime().as_ref().map(|rt| rt.prog.clone());
            match prog {
                Some(p) => shared.push_events(&p, &mut self.events),
                None => self.events.clear(),
            }
        }
        for (i, batch) in self.tx.iter_mut().enumerate() {
            if batch.is_empty() {
                continue;
            }
            let sent = self.ports[i].send_batch(batch);
            let counters = &shared.port_counters[i];
            add(&counters.tx_packets, sent.packets);
            add(&counters.tx_bytes, sent.bytes);
            add(&counters.drops, batch.len() as u64 - sent.packets);
            batch.clear();
        }
    }
}
