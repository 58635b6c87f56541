//! The medium itself: senders' queues, one transmission at a time, round-robin turns, who
//! hears a frame and whether it is lost. Pure arithmetic over the frames' bytes and the
//! times the caller gives (ns on any clock that only moves forward), with a seeded random
//! generator, so it is tested with a fake clock and no interfaces.
//!
//! Node 0 is the access point, node 1 + i the configuration's station i.

use std::collections::{HashMap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;

use crate::config::Config;

pub const AP: usize = 0;

/// What one node did on the medium; the stats file's entry for its interface.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NodeStats {
    /// Frames (and their bytes) this node put on the air.
    pub tx_frames: u64,
    pub tx_bytes: u64,
    /// How long its frames occupied the medium.
    pub airtime_ns: u64,
    /// Frames its full queue refused.
    pub queue_drops: u64,
    /// Copies of its frames the loss draw took (a frame to every station counts one per
    /// station that lost it).
    pub lost: u64,
    /// Frames (and their bytes) delivered to it.
    pub rx_frames: u64,
    pub rx_bytes: u64,
}

/// Who hears a transmission.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Hearers {
    Ap,
    Station(usize),
    AllStations,
}

struct Queued {
    arrival_ns: u64,
    frame: Vec<u8>,
}

struct OnAir {
    sender: usize,
    hearers: Hearers,
    end_ns: u64,
    frame: Vec<u8>,
}

pub struct Medium {
    /// Station i's rate in bit/s and loss chance in %, at index 1 + i (index 0 unused).
    rate_bps: Vec<f64>,
    loss_pct: Vec<f64>,
    basic_rate_bps: f64,
    overhead_ns: u64,
    queue_frames: usize,
    queues: Vec<VecDeque<Queued>>,
    /// The sender whose turn comes first when the medium is next free.
    next_turn: usize,
    /// When the medium was last free (the end of the last transmission).
    free_since_ns: u64,
    on_air: Option<OnAir>,
    /// Station MACs learnt from the source address of the frames they send.
    stations_by_mac: HashMap<[u8; 6], usize>,
    rng: Xoshiro256PlusPlus,
    pub stats: Vec<NodeStats>,
    spare: Vec<Vec<u8>>,
}

impl Medium {
    pub fn new(config: &Config) -> Medium {
        let nodes = 1 + config.stations.len();
        let per_station = |f: fn(&crate::config::Station) -> f64| {
            std::iter::once(0.0)
                .chain(config.stations.iter().map(f))
                .collect()
        };
        Medium {
            rate_bps: per_station(|s| s.rate_mbit * 1e6),
            loss_pct: per_station(|s| s.loss_pct),
            basic_rate_bps: config.basic_rate_mbit * 1e6,
            overhead_ns: (config.overhead_us * 1e3).round() as u64,
            queue_frames: config.queue_frames,
            queues: (0..nodes).map(|_| VecDeque::new()).collect(),
            next_turn: 0,
            free_since_ns: 0,
            on_air: None,
            stations_by_mac: HashMap::new(),
            rng: Xoshiro256PlusPlus::seed_from_u64(config.seed),
            stats: vec![NodeStats::default(); nodes],
            spare: Vec::new(),
        }
    }

    /// Queues a frame `sender` handed over at `arrival_ns`, or drops it if its queue is
    /// full. Call [`Medium::advance`] up to `arrival_ns` first, so the queue is as long as
    /// it was then.
    pub fn enqueue(&mut self, sender: usize, frame: &[u8], arrival_ns: u64) {
        if self.queues[sender].len() >= self.queue_frames {
            self.stats[sender].queue_drops += 1;
            return;
        }
        if sender != AP {
            if let Some(src) = unicast_mac(frame, 6) {
                self.stations_by_mac.insert(src, sender);
            }
        }
        let mut copy = self.spare.pop().unwrap_or_default();
        copy.clear();
        copy.extend_from_slice(frame);
        self.queues[sender].push_back(Queued {
            arrival_ns,
            frame: copy,
        });
    }

    /// Ends every transmission due by `now_ns` (handing each frame that was not lost to
    /// `deliver` with the node that hears it) and starts the next ones; returns when the
    /// one on the air ends (None: the medium is idle).
    pub fn advance(&mut self, now_ns: u64, deliver: &mut impl FnMut(usize, &[u8])) -> Option<u64> {
        loop {
            if let Some(air) = &self.on_air {
                if air.end_ns > now_ns {
                    return Some(air.end_ns);
                }
                let air = self.on_air.take().expect("checked above");
                self.free_since_ns = air.end_ns;
                self.end(air, deliver);
            }
            if !self.start_next() {
                return None;
            }
        }
    }

    /// Gives the next turn: the first sender, round-robin from `next_turn`, whose oldest
    /// frame was there when the medium became free (or, if the medium has been idle, when
    /// the first of those frames came). False if no frame waits.
    fn start_next(&mut self) -> bool {
        let heads = self.queues.iter().filter_map(|q| q.front());
        let Some(first) = heads.map(|f| f.arrival_ns).min() else {
            return false;
        };
        let start_ns = self.free_since_ns.max(first);
        let n = self.queues.len();
        let sender = (0..n)
            .map(|k| (self.next_turn + k) % n)
            .find(|&s| {
                self.queues[s]
                    .front()
                    .is_some_and(|f| f.arrival_ns <= start_ns)
            })
            .expect("the first frame's sender is eligible");
        self.next_turn = (sender + 1) % n;
        let Queued { frame, .. } = self.queues[sender].pop_front().expect("found above");
        let (hearers, rate_bps) = self.route(sender, &frame);
        let airtime_ns =
            (frame.len() as f64 * 8.0 * 1e9 / rate_bps).round() as u64 + self.overhead_ns;
        let stats = &mut self.stats[sender];
        stats.tx_frames += 1;
        stats.tx_bytes += frame.len() as u64;
        stats.airtime_ns += airtime_ns;
        self.on_air = Some(OnAir {
            sender,
            hearers,
            end_ns: start_ns + airtime_ns,
            frame,
        });
        true
    }

    /// Who hears a frame and at what rate it is sent: a station's frame goes to the access
    /// point at the station's rate; the access point's goes to the station it is for at
    /// that station's rate, or to every station at the basic rate when it is for a group or
    /// for a MAC no station has sent from.
    fn route(&self, sender: usize, frame: &[u8]) -> (Hearers, f64) {
        if sender != AP {
            return (Hearers::Ap, self.rate_bps[sender]);
        }
        match unicast_mac(frame, 0).and_then(|dst| self.stations_by_mac.get(&dst)) {
            Some(&station) => (Hearers::Station(station), self.rate_bps[station]),
            None => (Hearers::AllStations, self.basic_rate_bps),
        }
    }

    /// Delivers a frame whose transmission ended to each hearer that does not lose it: a
    /// draw per hearer, with the loss of the station at the far end (the sender when the
    /// access point hears it).
    fn end(&mut self, air: OnAir, deliver: &mut impl FnMut(usize, &[u8])) {
        let far_ends = match air.hearers {
            Hearers::Ap => air.sender..air.sender + 1,
            Hearers::Station(s) => s..s + 1,
            Hearers::AllStations => 1..self.queues.len(),
        };
        for station in far_ends {
            let pct = self.loss_pct[station];
            if pct > 0.0 && self.rng.gen::<f64>() * 100.0 < pct {
                self.stats[air.sender].lost += 1;
                continue;
            }
            let node = if air.hearers == Hearers::Ap {
                AP
            } else {
                station
            };
            let stats = &mut self.stats[node];
            stats.rx_frames += 1;
            stats.rx_bytes += air.frame.len() as u64;
            deliver(node, &air.frame);
        }
        self.spare.push(air.frame);
    }
}

/// The MAC at `at` in an Ethernet frame if it is one node's (the group bit clear).
fn unicast_mac(frame: &[u8], at: usize) -> Option<[u8; 6]> {
    let mac: [u8; 6] = frame.get(at..at + 6)?.try_into().ok()?;
    (mac[0] & 1 == 0).then_some(mac)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Ap, Station};

    fn medium(stations: &[(f64, f64)], queue_frames: usize, seed: u64) -> Medium {
        Medium::new(&Config {
            name: "ap".into(),
            seed,
            basic_rate_mbit: 6.0,
            queue_frames,
            overhead_us: 0.0,
            stats_path: "/dev/null".into(),
            ap: Ap {
                ifname: "wap".into(),
            },
            stations: stations
                .iter()
                .enumerate()
                .map(|(i, &(rate_mbit, loss_pct))| Station {
                    ifname: format!("ws{i}"),
                    rate_mbit,
                    loss_pct,
                })
                .collect(),
        })
    }

    const BROADCAST: [u8; 6] = [0xff; 6];

    fn mac(node: usize) -> [u8; 6] {
        [2, 0, 0, 0, 0, node as u8]
    }

    /// A frame of `len` bytes from `src` to `dst`.
    fn frame(dst: [u8; 6], src: [u8; 6], len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&src);
        f
    }

    /// Runs the medium to `until_ns` with the fake clock, every sender in `saturated`
    /// keeping its queue full with `len`-byte frames; the frames each node received.
    fn saturate(m: &mut Medium, saturated: &[usize], len: usize, until_ns: u64) -> Vec<u64> {
        let mut got = vec![0u64; m.queues.len()];
        let mut now = 0;
        loop {
            for &s in saturated {
                while m.queues[s].len() < m.queue_frames {
                    m.enqueue(s, &frame(mac(AP), mac(s), len), now);
                }
            }
            match m.advance(now, &mut |node, _| got[node] += 1) {
                Some(end) if end <= until_ns => now = end,
                _ => return got,
            }
        }
    }

    #[test]
    fn two_saturated_stations_at_equal_rates_share_the_airtime_evenly() {
        let mut m = medium(&[(54.0, 0.0), (54.0, 0.0)], 10, 1);
        let got = saturate(&mut m, &[1, 2], 1500, 1_000_000_000);
        let (a, b) = (m.stats[1].airtime_ns, m.stats[2].airtime_ns);
        assert!(
            a.abs_diff(b) <= 222_223,
            "airtime {a} and {b} ns: more than one frame apart"
        );
        // One frame of 1500 bytes at 54 Mbit/s takes 222.2 µs: 4500 in a second, in all.
        assert!((4499..=4501).contains(&got[AP]), "{got:?}");
    }

    #[test]
    fn a_slower_station_gets_as_many_turns_so_less_throughput_and_more_airtime() {
        // 802.11's performance anomaly: equal turns, so the 6 Mbit/s station's frames take
        // 9 times the airtime of the 54 Mbit/s station's and both send as many.
        let mut m = medium(&[(54.0, 0.0), (6.0, 0.0)], 10, 1);
        saturate(&mut m, &[1, 2], 1000, 500_000_000);
        let (fast, slow) = (&m.stats[1], &m.stats[2]);
        assert!(fast.tx_frames.abs_diff(slow.tx_frames) <= 1);
        let ratio = slow.airtime_ns as f64 / fast.airtime_ns as f64;
        assert!((ratio - 9.0).abs() < 0.01, "{ratio}");
    }

    #[test]
    fn a_full_queue_drops_and_counts_the_frames_it_refuses() {
        let mut m = medium(&[(6.0, 0.0)], 3, 1);
        for _ in 0..5 {
            m.enqueue(1, &frame(mac(AP), mac(1), 750), 0);
        }
        assert_eq!(m.stats[1].queue_drops, 2);
        // 750 bytes at 6 Mbit/s: 1 ms each; the first is on the air, two wait.
        let mut delivered = Vec::new();
        assert_eq!(
            m.advance(0, &mut |n, f| delivered.push((n, f.len()))),
            Some(1_000_000)
        );
        m.enqueue(1, &frame(mac(AP), mac(1), 750), 10);
        assert_eq!(m.stats[1].queue_drops, 2, "one left the queue for the air");
        assert_eq!(
            m.advance(3_500_000, &mut |n, f| delivered.push((n, f.len()))),
            Some(4_000_000)
        );
        assert_eq!(delivered, [(AP, 750); 3]);
    }

    #[test]
    fn a_broadcast_reaches_every_station_once_and_learnt_unicast_only_its_station() {
        let mut m = medium(&[(54.0, 0.0), (54.0, 0.0), (54.0, 0.0)], 10, 1);
        let mut heard = Vec::new();
        m.enqueue(AP, &frame(BROADCAST, mac(AP), 100), 0);
        m.advance(1_000_000, &mut |n, _| heard.push(n));
        assert_eq!(heard, [1, 2, 3]);
        // 100 bytes at the basic 6 Mbit/s.
        assert_eq!(m.stats[AP].airtime_ns, 133_333);
        // Unknown unicast floods at the basic rate; once station 2 has sent, only it hears.
        heard.clear();
        m.enqueue(AP, &frame(mac(2), mac(AP), 100), 2_000_000);
        m.advance(3_000_000, &mut |n, _| heard.push(n));
        assert_eq!(heard, [1, 2, 3]);
        heard.clear();
        m.enqueue(2, &frame(mac(AP), mac(2), 100), 4_000_000);
        m.enqueue(AP, &frame(mac(2), mac(AP), 100), 4_000_000);
        m.advance(5_000_000, &mut |n, _| heard.push(n));
        assert_eq!(heard, [AP, 2]);
    }

    #[test]
    fn each_station_draws_its_own_loss_of_a_broadcast_and_a_loss_costs_its_airtime() {
        let mut m = medium(&[(6.0, 0.0), (6.0, 100.0)], 10, 1);
        let mut heard = Vec::new();
        for _ in 0..3 {
            m.enqueue(AP, &frame(BROADCAST, mac(AP), 750), 0);
        }
        m.advance(10_000_000, &mut |n, _| heard.push(n));
        assert_eq!(heard, [1, 1, 1]);
        assert_eq!(m.stats[AP].lost, 3);
        // The lossy station's own frame is lost on its way up, after 1 ms on the air.
        m.enqueue(2, &frame(mac(AP), mac(2), 750), 10_000_000);
        assert_eq!(
            m.advance(10_000_000, &mut |n, _| heard.push(n)),
            Some(11_000_000)
        );
        m.advance(11_000_000, &mut |n, _| heard.push(n));
        assert_eq!(
            (m.stats[2].lost, m.stats[2].airtime_ns, heard.len()),
            (1, 1_000_000, 3)
        );
    }

    #[test]
    fn loss_is_within_binomial_bounds_and_repeats_with_the_seed() {
        let run = |seed| {
            let mut m = medium(&[(54.0, 10.0)], 100_000, seed);
            for _ in 0..100_000 {
                m.enqueue(1, &frame(mac(AP), mac(1), 100), 0);
            }
            m.advance(u64::MAX, &mut |_, _| {});
            (m.stats[1].lost, m.stats[AP].rx_frames)
        };
        let (lost, delivered) = run(7);
        assert_eq!(lost + delivered, 100_000);
        // 5 standard deviations of a binomial(100000, 0.1): 474 frames.
        assert!(lost.abs_diff(10_000) < 474, "lost {lost}");
        assert_eq!(run(7), (lost, delivered));
        assert_ne!(run(8), (lost, delivered));
    }

    #[test]
    fn an_idle_medium_starts_a_frame_when_it_arrives_and_a_busy_one_when_it_is_free() {
        let mut m = medium(&[(8.0, 0.0), (8.0, 0.0)], 10, 1);
        let mut ends = Vec::new();
        // 1000 bytes at 8 Mbit/s: 1 ms.
        m.enqueue(1, &frame(mac(AP), mac(1), 1000), 5_000_000);
        m.enqueue(2, &frame(mac(AP), mac(2), 1000), 5_500_000);
        let mut t = 5_500_000;
        while let Some(end) = m.advance(t, &mut |_, _| {}) {
            ends.push(end);
            t = end;
        }
        assert_eq!(ends, [6_000_000, 7_000_000]);
    }
}
