//! State shared by the data-plane thread and the control-channel threads.
//!
//! The programmable state (`Runtime`) sits behind one mutex: the data plane takes it once
//! per batch of packets, the control channel once per request, so neither waits long.
//! Statistics are atomics so reading them never blocks the data path.

use std::collections::VecDeque;
use std::os::fd::IntoRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::pipeline::{Event, Runtime};
use crate::program::Program;
pub use pktio::phy::{PortDrop, RingDrops};
use pktio::sys;

#[derive(Default)]
pub struct PortCounters {
    pub rx_packets: AtomicU64,
    pub rx_bytes: AtomicU64,
    pub tx_packets: AtomicU64,
    pub tx_bytes: AtomicU64,
    /// Of `tx_packets`, those sent through XDP (`--tx xdp`).
    pub tx_xdp_packets: AtomicU64,
    /// Times the port's peer refused the XDP frames of a call (it runs no NAPI), which then
    /// went through the AF_PACKET ring.
    pub xdp_fallbacks: AtomicU64,
    /// Packets dropped at this port, for any of the reasons in `drop_reasons`; count them
    /// with [`PortCounters::drop`], which keeps the two in step.
    pub drops: AtomicU64,
    /// `drops` by reason, indexed by [`PortDrop`].
    drop_reasons: [AtomicU64; PortDrop::ALL.len()],
}

impl PortCounters {
    /// The port's transmit through XDP, as `stats` reports it.
    pub fn xdp_stats(&self) -> serde_json::Value {
        serde_json::json!({
            "tx_packets": get(&self.tx_xdp_packets),
            "fallbacks": get(&self.xdp_fallbacks),
        })
    }

    /// Counts `n` packets dropped at the port for `why`.
    pub fn drop(&self, why: PortDrop, n: u64) {
        if n > 0 {
            add(&self.drops, n);
            add(&self.drop_reasons[why as usize], n);
        }
    }

    /// `drops` by reason, as `stats` reports them: `{"truncated": 0, ...}`.
    pub fn drop_reasons(&self) -> serde_json::Value {
        PortDrop::ALL
            .iter()
            .map(|&why| {
                (
                    why.name().to_string(),
                    get(&self.drop_reasons[why as usize]).into(),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    }
}

#[derive(Default)]
pub struct SwitchCounters {
    pub pipeline_packets: AtomicU64,
    pub pipeline_drops: AtomicU64,
    pub loop_drops: AtomicU64,
    pub unknown_port_drops: AtomicU64,
    pub no_pipeline_drops: AtomicU64,
    pub packet_in: AtomicU64,
    pub packet_out: AtomicU64,
    pub digests: AtomicU64,
    pub events_dropped: AtomicU64,
    /// Nanoseconds the data-plane thread spent in rounds that handled packets.
    pub busy_ns: AtomicU64,
    /// CPU time of the data-plane thread in those rounds.
    pub busy_cpu_ns: AtomicU64,
    /// Packets run through the pipeline again, without effect, to warm the caches.
    pub rehearsals: AtomicU64,
    /// Throw-away frames sent into the namespace's loopback to warm the kernel's send path.
    pub warmups: AtomicU64,
    /// Times the data-plane thread moved to another core, crowded out of its own.
    pub moves: AtomicU64,
    /// Packet-ins and digests dropped unencoded: no client subscribed.
    pub events_unheard: AtomicU64,
    /// `table_read`s of a whole table and of one entry by its key: what reads cost.
    pub whole_table_reads: AtomicU64,
    pub key_reads: AtomicU64,
    /// Rounds of the data-plane loop begun and ended (an ended round has sent what its
    /// packets produced): a client that saw its frames counted in `rx_packets` knows the
    /// switch is done with them once `rounds_ended` reaches the `rounds_begun` it read then.
    pub rounds_begun: AtomicU64,
    pub rounds_ended: AtomicU64,
}

pub fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

pub fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// A connected control client; events go to those that subscribed.
pub struct Client {
    pub id: u64,
    pub writer: Mutex<UnixStream>,
    pub subscribed: std::sync::atomic::AtomicBool,
}

/// Most events waiting for delivery; past that new events are counted and dropped so a
/// slow client cannot make the switch grow without bound.
pub const EVENT_QUEUE_LIMIT: usize = 4096;
pub const PACKET_OUT_QUEUE_LIMIT: usize = 4096;

/// The receive ring every port shares (pktio phy/rx.rs), as `stats` reports it.
pub struct RxRing {
    /// Its depth, in frames.
    pub frames: usize,
    /// The kernel's count of packets the ring had no room for; read (and so reset) only by
    /// [`RxRing::stats`], which adds it to `dropped`.
    drops: RingDrops,
    dropped: AtomicU64,
}

impl RxRing {
    pub fn new(frames: usize, drops: RingDrops) -> RxRing {
        RxRing {
            frames,
            drops,
            dropped: AtomicU64::new(0),
        }
    }

    /// `{"frames", "drops"}`: the drops counted since the switch started. The kernel's count
    /// is read here, when `stats` is asked, not by the data plane: it lives in the kernel
    /// until read, so counting costs the data path nothing.
    pub fn stats(&self) -> serde_json::Value {
        // Unreadable (it never is for a live packet socket): counted at the next read.
        if let Ok(n) = self.drops.take() {
            add(&self.dropped, n);
        }
        serde_json::json!({"frames": self.frames, "drops": get(&self.dropped)})
    }
}

pub struct Shared {
    pub ports: Vec<(u32, String)>,
    pub rx_ring: RxRing,
    pub cpu_port: u32,
    pub runtime: Mutex<Option<Runtime>>,
    /// Bumped on every pipeline load so the data plane rebuilds its per-program scratch.
    pub generation: AtomicU64,
    pub port_counters: Vec<PortCounters>,
    pub counters: SwitchCounters,
    pub packet_out: Mutex<VecDeque<Vec<u8>>>,
    pub events: Mutex<VecDeque<(Arc<Program>, Event)>>,
    pub clients: Mutex<Vec<Arc<Client>>>,
    /// eventfds that wake the data plane (packet-out queued) and the event writer.
    pub wake_dataplane: i32,
    pub wake_events: i32,
    pub started: Instant,
}

/// An eventfd for the switch's life (-1 if none could be made: waits then time out).
fn new_eventfd() -> i32 {
    sys::eventfd().map_or(-1, IntoRawFd::into_raw_fd)
}

pub fn signal(fd: i32) {
    sys::eventfd_signal(fd);
}

fn queue_len<T>(queue: &Mutex<VecDeque<T>>) -> usize {
    queue.lock().unwrap_or_else(|e| e.into_inner()).len()
}

pub fn drain(fd: i32) {
    sys::eventfd_drain(fd);
}

impl Shared {
    pub fn new(ports: Vec<(u32, String)>, rx_ring: RxRing, cpu_port: u32) -> Shared {
        let port_counters = ports.iter().map(|_| PortCounters::default()).collect();
        Shared {
            ports,
            rx_ring,
            cpu_port,
            runtime: Mutex::new(None),
            generation: AtomicU64::new(0),
            port_counters,
            counters: SwitchCounters::default(),
            packet_out: Mutex::new(VecDeque::new()),
            events: Mutex::new(VecDeque::new()),
            clients: Mutex::new(Vec::new()),
            wake_dataplane: new_eventfd(),
            wake_events: new_eventfd(),
            started: Instant::now(),
        }
    }

    pub fn now_ns(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }

    pub fn lock_runtime(&self) -> std::sync::MutexGuard<'_, Option<Runtime>> {
        // A panic while holding the lock must not take the switch down with it.
        self.runtime.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The live heap and the queues that hold most of what varies in it, as `stats`
    /// reports them: read first, before the reply allocates.
    pub fn heap_stats(&self) -> serde_json::Value {
        let heap = crate::heap::counts();
        serde_json::json!({
            "live_bytes": heap.live_bytes,
            "live_blocks": heap.live_blocks,
            "allocations": heap.allocations,
            "queued_events": queue_len(&self.events),
            "queued_packet_outs": queue_len(&self.packet_out),
        })
    }

    pub fn push_events(&self, prog: &Arc<Program>, events: &mut Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let mut queue = self.events.lock().unwrap_or_else(|e| e.into_inner());
        for ev in events.drain(..) {
            if queue.len() >= EVENT_QUEUE_LIMIT {
                add(&self.counters.events_dropped, 1);
                continue;
            }
            queue.push_back((prog.clone(), ev));
        }
        drop(queue);
        signal(self.wake_events);
    }
}
