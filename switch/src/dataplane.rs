//! The data-plane thread: one poll loop over every port.
//!
//! One loop rather than a thread per port: the budget is "one core", a single loop needs
//! no locking between ports, and batching per port keeps system calls few. Every port's
//! frames come through one receive ring (pktio::phy::Receiver), in the order they arrived.
//! Each round takes up to `BATCH` frames per port from it under one lock of the runtime
//! (whichever ports they came in on: a busy port may fill a round), then sends what the
//! pipeline produced with one `send()` per output port (pktio::phy::Port). Between packets
//! the thread spins or sleeps as the recent arrivals suggest (arrivals.rs).

mod arrivals;
mod placement;
mod warmup;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, TryLockError};

use crate::pipeline::{Event, Worker};
use crate::shared::{add, drain, Shared};
use arrivals::Arrivals;
use pktio::offload::segment::Segments;
use pktio::phy::xdp::tx::XdpTx;
use pktio::phy::{Port, PortDrop, Receiver};
use pktio::sys;
pub use placement::set_affinity;
use placement::Placement;
use warmup::KernelWarmer;

const BATCH: usize = 64;
/// Longest sleep without traffic: how soon an idle switch notices it should stop.
const IDLE_POLL_NS: u64 = 100_000_000;
/// Longest spin, whatever the arrivals and the wall clock say.
const SPIN_LIMIT_NS: u64 = 10_000_000;
/// A `sched_yield` that returns later than this let another task run on the core.
const YIELDED_CORE_NS: u64 = 3_000;
/// Timer slack of the data-plane thread: its early wake-ups must come on time (the default
/// lets the kernel defer a timer by 50 µs).
const TIMER_SLACK_NS: libc::c_ulong = 1_000;
/// The scheduler slice the data-plane thread asks for (the shortest the kernel grants).
/// Under EEVDF (Linux 6.12+) a task with a shorter slice gets an earlier deadline, so when
/// a packet wakes it, it preempts the task running on that core instead of waiting for
/// that task's slice to end. Its share of the CPU stays that of any other task: this
/// cannot starve the machine, unlike a real-time policy.
const SLICE_NS: u64 = 100_000;

struct Loop {
    shared: Arc<Shared>,
    /// Every port's receive ring.
    receiver: Receiver,
    ports: Vec<Port>,
    /// Port number → index into `ports` (port numbers are 9 bits).
    port_slot: Vec<Option<usize>>,
    /// (interface index, index into `ports`), sorted: whose a received frame is.
    by_ifindex: Vec<(i32, usize)>,
    /// Packets and bytes received per port this round, in the order of `ports`.
    rx_tally: Vec<(u64, u64)>,
    worker: Option<Worker>,
    generation: u64,
    /// The latest frame's wire packets, and the port it came in on.
    rx: Segments,
    rx_port: u32,
    out: Vec<(u32, Vec<u8>)>,
    events: Vec<Event>,
    tx: Vec<Vec<Vec<u8>>>,
    /// The XDP transmit (`--tx xdp`), shared by the ports.
    xdp: Option<XdpTx>,
    arrivals: Arrivals,
    placement: Placement,
    /// Set by a spin that waits for an expected packet, until that packet's round.
    expecting: bool,
    /// When the thread last got its core back from another task while spinning (0: not
    /// since the spin began).
    core_back_ns: u64,
    /// The receive socket, then the eventfd that signals queued packet-outs.
    wait_fds: Vec<libc::pollfd>,
    warmer: Option<KernelWarmer>,
}

/// `warm_loopback`: the switch has a network namespace of its own, whose loopback may carry
/// warm-up frames (dataplane/warmup.rs). `xdp`: the ports transmit through it.
pub fn run(
    shared: Arc<Shared>,
    receiver: Receiver,
    ports: Vec<Port>,
    xdp: Option<XdpTx>,
    stop: Arc<AtomicBool>,
    warm_loopback: bool,
) {
    sys::set_timer_slack(TIMER_SLACK_NS);
    request_short_slice();
    let mut port_slot = vec![None; 512];
    for (i, p) in ports.iter().enumerate() {
        port_slot[p.number as usize & 511] = Some(i);
    }
    let mut by_ifindex: Vec<(i32, usize)> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| (p.ifindex, i))
        .collect();
    by_ifindex.sort_unstable();
    let tx = ports.iter().map(|_| Vec::with_capacity(BATCH)).collect();
    let wait_fds = vec![readable(receiver.fd()), readable(shared.wake_dataplane)];
    let mut lp = Loop {
        shared,
        receiver,
        rx_tally: vec![(0, 0); ports.len()],
        ports,
        port_slot,
        by_ifindex,
        worker: None,
        generation: u64::MAX,
        rx: Segments::default(),
        rx_port: 0,
        out: Vec::with_capacity(BATCH * 4),
        events: Vec::new(),
        tx,
        xdp,
        arrivals: Arrivals::default(),
        placement: Placement::of_this_thread(),
        expecting: false,
        core_back_ns: 0,
        wait_fds,
        warmer: warm_loopback.then(KernelWarmer::open).flatten(),
    };
    // Thread CPU time at the end of the previous round, if that round moved packets.
    let mut cpu_mark: Option<u64> = None;
    while !stop.load(Ordering::Relaxed) {
        let started = lp.shared.now_ns();
        let work = lp.round();
        if work == 0 {
            cpu_mark = None;
            lp.wait_for_traffic(&stop);
            continue;
        }
        // Time spent on rounds that moved packets (kernel send work included): the basis
        // of the switch's own capacity figure, apart from idle spinning. The CPU time
        // leaves out the time other processes had the core (a shared machine). It is read
        // after the packets went out, once per round; the first round after idling has no
        // reading before it (taking one would delay its packets), so its wall time stands in.
        let wall = lp.shared.now_ns() - started;
        let cpu = thread_cpu_ns();
        add(&lp.shared.counters.busy_ns, wall);
        add(
            &lp.shared.counters.busy_cpu_ns,
            cpu_mark.map_or(wall, |mark| cpu.saturating_sub(mark)),
        );
        cpu_mark = Some(cpu);
    }
    close_in_parallel(std::mem::take(&mut lp.ports));
}

/// Closes the ports on threads of their own. Closing a packet socket waits for an RCU
/// grace period (tens of ms on a VM); waits that overlap end together, so the switch
/// stops in about one grace period instead of one per socket (a port's transmit socket;
/// the receive socket closes with the last port's descriptor of it).
fn close_in_parallel(ports: Vec<Port>) {
    let closers: Vec<_> = ports
        .into_iter()
        .map(|port| std::thread::spawn(move || drop(port)))
        .collect();
    for closer in closers {
        let _ = closer.join();
    }
}

/// Asks for a `SLICE_NS` slice under the normal policy; kernels before 6.12 ignore it,
/// which only costs latency, so a failure is not an error.
fn request_short_slice() {
    sys::request_slice(SLICE_NS);
}

/// Lets any other task waiting for this core run first. Spinning switches of one topology
/// share two cores with their hosts: without yielding, a spinner keeps the core for its
/// whole scheduler slice while the switch (or host) that has a packet waits behind it.
/// Alone on its core, this returns at once (a system call, well under a microsecond).
fn yield_core() {
    sys::sched_yield();
}

fn readable(fd: i32) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// CPU time this thread has run (user and system, with the softirq work the kernel does
/// in its system calls).
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The wall clock the receive ring stamps frames with (a vDSO call, no system call).
fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    sys::clock_ns(clock)
}

impl Loop {
    /// One round over all ports and the packet-out queue; returns how many packets came in.
    fn round(&mut self) -> usize {
        let shared = self.shared.clone();
        // The fence: whoever sees a count this round makes sees its begin too (stats).
        add(&shared.counters.rounds_begun, 1);
        fence(Ordering::Release);
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
        let wall = realtime_ns();
        for _ in 0..BATCH * self.ports.len() {
            let Some(frame) = self.receiver.next_rx() else {
                break;
            };
            work += 1;
            let Some(pi) = self.port_of(self.receiver.ifindex(&frame)) else {
                // Not a port's (the socket filter admits none such): not ours to count.
                self.receiver.release(frame);
                continue;
            };
            let stamp = self.receiver.rx_time_ns(&frame);
            self.arrivals.on_packet(stamp, wall);
            if std::mem::take(&mut self.expecting) {
                // Stamped before the thread had its core back: it waited for the core.
                self.placement
                    .on_expected_pickup(stamp <= self.core_back_ns);
            }
            let got = self.receiver.read_frame(&frame, &mut self.rx);
            self.receiver.release(frame);
            // Tallied per port and round: the shared counters are atomics.
            self.rx_tally[pi].0 += got.packets;
            self.rx_tally[pi].1 += got.bytes;
            if let Some(why) = got.dropped {
                shared.port_counters[pi].drop(why, 1);
                continue;
            }
            // Each wire packet (segment) goes through the pipeline on its own.
            let (number, rx) = (self.ports[pi].number, std::mem::take(&mut self.rx));
            for i in 0..rx.len() {
                self.process(&mut guard, number, rx.get(i), now);
            }
            self.rx = rx;
            self.rx_port = number;
        }
        for (pi, tally) in self.rx_tally.iter_mut().enumerate() {
            if tally.0 > 0 {
                add(&shared.port_counters[pi].rx_packets, tally.0);
                add(&shared.port_counters[pi].rx_bytes, tally.1);
                *tally = (0, 0);
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
        // Release: whoever sees the round's end sees what it sent counted (stats).
        shared.counters.rounds_ended.fetch_add(1, Ordering::Release);
        if self.placement.settle() {
            add(&shared.counters.moves, 1);
        }
        work
    }

    /// The index into `ports` of the port on interface `ifindex`.
    fn port_of(&self, ifindex: i32) -> Option<usize> {
        let at = self
            .by_ifindex
            .binary_search_by_key(&ifindex, |&(i, _)| i)
            .ok()?;
        Some(self.by_ifindex[at].1)
    }

    /// Returns once a port has a frame or a packet-out is queued, spinning or sleeping
    /// as the recent arrivals suggest; after at most `IDLE_POLL_NS` in any case.
    fn wait_for_traffic(&mut self, stop: &AtomicBool) {
        if self.spin(self.arrivals.spin_until(), stop) {
            return;
        }
        let now = realtime_ns();
        let Some(plan) = self.arrivals.anticipate(now) else {
            self.sleep(IDLE_POLL_NS);
            return;
        };
        if self.sleep((plan.wake_at_ns - now).min(IDLE_POLL_NS)) {
            return;
        }
        self.arrivals.on_timer_wake(plan.wake_at_ns, realtime_ns());
        self.warm_kernel();
        self.rehearse();
        self.core_back_ns = 0;
        self.expecting = self.spin(plan.give_up_ns, stop);
    }

    /// Spins until a port has a frame or a packet-out is queued (true), or until
    /// `deadline_ns` (false). Reads only the rings' status words: no system call. Timed
    /// on the monotonic clock, so a step of the wall clock cannot make it spin on.
    fn spin(&mut self, deadline_ns: u64, stop: &AtomicBool) -> bool {
        let budget = deadline_ns.saturating_sub(realtime_ns()).min(SPIN_LIMIT_NS);
        let end = self.shared.now_ns() + budget;
        loop {
            if self.receiver.rx_ready() || self.packet_out_queued() {
                return true;
            }
            let now = self.shared.now_ns();
            if now >= end || stop.load(Ordering::Relaxed) {
                return false;
            }
            yield_core();
            if self.shared.now_ns() - now > YIELDED_CORE_NS {
                self.core_back_ns = realtime_ns();
            }
        }
    }

    /// Sends a throw-away frame into the namespace's loopback, so the packet about to come
    /// finds the kernel's send path in the caches (dataplane/warmup.rs).
    fn warm_kernel(&mut self) {
        if let Some(warmer) = self.warmer.as_mut() {
            if warmer.warm() {
                add(&self.shared.counters.warmups, 1);
            }
        }
    }

    /// Runs the latest packet through the pipeline once more, leaving no trace
    /// (`Worker::rehearse`), so that the packet about to come finds the interpreter's code
    /// and the program's data in the caches: after an idle spell a lone packet costs
    /// about ten times a warm one.
    fn rehearse(&mut self) {
        let Some(last) = self.rx.len().checked_sub(1) else {
            return;
        };
        let shared = self.shared.clone();
        let mut guard = shared.lock_runtime();
        if shared.generation.load(Ordering::Acquire) != self.generation {
            return; // a new program: the worker is rebuilt by the next round
        }
        let (Some(rt), Some(worker)) = (guard.as_mut(), self.worker.as_mut()) else {
            return;
        };
        if worker.rehearse(rt, self.rx_port, self.rx.get(last), shared.now_ns()) {
            add(&shared.counters.rehearsals, 1);
        }
    }

    fn packet_out_queued(&self) -> bool {
        match self.shared.packet_out.try_lock() {
            Ok(q) => !q.is_empty(),
            Err(TryLockError::WouldBlock) => true, // being queued right now
            Err(TryLockError::Poisoned(q)) => !q.into_inner().is_empty(),
        }
    }

    /// Sleeps in poll() until a port or the packet-out eventfd is readable (true) or
    /// `timeout_ns` passed (false).
    fn sleep(&mut self, timeout_ns: u64) -> bool {
        let fds = &mut self.wait_fds;
        let n = sys::ppoll(fds, timeout_ns);
        let wake = fds.last().expect("the eventfd is always there");
        if wake.revents & libc::POLLIN != 0 {
            drain(wake.fd);
        }
        n > 0
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
            let sent = self.ports[i].send_batch(batch, self.xdp.as_mut());
            let counters = &shared.port_counters[i];
            add(&counters.tx_packets, sent.packets);
            add(&counters.tx_bytes, sent.bytes);
            add(&counters.tx_xdp_packets, sent.xdp_packets);
            add(&counters.xdp_fallbacks, sent.xdp_fallbacks);
            counters.drop(PortDrop::TooLong, sent.too_long);
            let refused = batch.len() as u64 - sent.packets - sent.too_long;
            counters.drop(PortDrop::Refused, refused);
            match self.worker.as_mut() {
                Some(w) => batch.drain(..).for_each(|buf| w.recycle(buf)),
                None => batch.clear(),
            }
        }
    }
}
