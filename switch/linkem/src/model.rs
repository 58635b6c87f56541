//! What one direction of a link does to each packet, decided when the packet comes in: lost,
//! dropped at a full queue, or delivered at a due time (maybe twice, maybe with a bit
//! flipped). A duplicate goes through the loss, the rate's queue and the delay on its own,
//! as netem enqueues its copy again: it takes its own time at the rate. Pure arithmetic over the packet's arrival time and length and a seeded random
//! generator, so it is tested without interfaces.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::config::{Direction, Jitter, Loss};

/// The fate of one packet.
#[derive(Debug, PartialEq)]
pub enum Fate {
    /// Lost by the loss model (counter `lost`).
    Lost,
    /// The rate's queue was full (counter `queue_full`).
    QueueFull,
    /// The direction already held `limit_packets` (counter `limit`).
    OverLimit,
    Deliver {
        /// When it leaves, on CLOCK_MONOTONIC in ns.
        due_ns: u64,
        /// Duplicated: what became of the copy (counter `duplicated`, and its drop's).
        copy: Option<Copy>,
        /// The bit to flip, counted from the end of the Ethernet header (in the packet
        /// only: as netem, the copy is taken before the corruption).
        corrupt_bit: Option<usize>,
    },
}

/// The fate of a duplicate: delivered at its own due time, or dropped as a packet can be.
#[derive(Debug, PartialEq)]
pub enum Copy {
    Due(u64),
    Lost,
    QueueFull,
    OverLimit,
}

const ETH_HLEN: usize = 14;

pub struct Model {
    cfg: Direction,
    rng: Xoshiro256PlusPlus,
    normal: Option<Normal<f64>>,
    /// Gilbert-Elliott state: in the bad state now.
    bad: bool,
    /// When the serialisation of each packet in the rate's queue ends, oldest first.
    serialising: VecDeque<u64>,
    /// The latest due time given so far (no packet leaves before it without reordering).
    last_due_ns: u64,
}

impl Model {
    pub fn new(cfg: Direction, seed: u64) -> Model {
        let normal = (cfg.jitter == Jitter::Normal && cfg.jitter_us > 0.0)
            .then(|| Normal::new(0.0, cfg.jitter_us).expect("jitter checked >= 0"));
        Model {
            cfg,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            normal,
            bad: false,
            serialising: VecDeque::new(),
            last_due_ns: 0,
        }
    }

    /// Decides the fate of a packet of `len` bytes that came in at `arrival_ns` while the
    /// direction holds `held` packets.
    pub fn admit(&mut self, arrival_ns: u64, len: usize, held: usize) -> Fate {
        let due_ns = match self.pass(arrival_ns, len, held) {
            Ok(due_ns) => due_ns,
            Err(fate) => return fate,
        };
        let copy = self.chance(self.cfg.duplicate_pct).then(|| {
            match self.pass(arrival_ns, len, held + 1) {
                Ok(due_ns) => Copy::Due(due_ns),
                Err(Fate::Lost) => Copy::Lost,
                Err(Fate::QueueFull) => Copy::QueueFull,
                Err(_) => Copy::OverLimit,
            }
        });
        let corrupt_bit = (self.chance(self.cfg.corrupt_pct) && len > ETH_HLEN)
            .then(|| self.rng.gen_range(0..(len - ETH_HLEN) * 8));
        Fate::Deliver {
            due_ns,
            copy,
            corrupt_bit,
        }
    }

    /// A packet's way through the loss, the limit, the rate's queue and the delay: its due
    /// time, or the fate that stopped it.
    fn pass(&mut self, arrival_ns: u64, len: usize, held: usize) -> Result<u64, Fate> {
        if self.lose() {
            return Err(Fate::Lost);
        }
        if held >= self.cfg.limit_packets {
            return Err(Fate::OverLimit);
        }
        let Some(sent_ns) = self.serialise(arrival_ns, len) else {
            return Err(Fate::QueueFull);
        };
        let mut due_ns = sent_ns + self.delay_ns();
        if !self.cfg.reorder {
            due_ns = due_ns.max(self.last_due_ns);
        }
        self.last_due_ns = self.last_due_ns.max(due_ns);
        Ok(due_ns)
    }

    fn chance(&mut self, pct: f64) -> bool {
        pct > 0.0 && self.rng.gen::<f64>() * 100.0 < pct
    }

    fn lose(&mut self) -> bool {
        match self.cfg.loss {
            Loss::None => false,
            Loss::Random { pct } => self.chance(pct),
            Loss::GilbertElliott {
                p_pct,
                r_pct,
                bad_loss_pct,
                good_loss_pct,
            } => {
                // As netem's gemodel: the packet's fate by the state it finds, then the move.
                let lost = self.chance(if self.bad {
                    bad_loss_pct
                } else {
                    good_loss_pct
                });
                let moves = self.chance(if self.bad { r_pct } else { p_pct });
                self.bad ^= moves;
                lost
            }
        }
    }

    /// When the packet has been serialised at the rate (None: the queue is full). Without a
    /// rate it is at once.
    fn serialise(&mut self, arrival_ns: u64, len: usize) -> Option<u64> {
        let Some(rate) = self.cfg.rate_bps else {
            return Some(arrival_ns);
        };
        while self
            .serialising
            .front()
            .is_some_and(|&end| end <= arrival_ns)
        {
            self.serialising.pop_front();
        }
        if self.serialising.len() >= self.cfg.queue_packets {
            return None;
        }
        let start = self
            .serialising
            .back()
            .copied()
            .unwrap_or(0)
            .max(arrival_ns);
        let end = start + (len as f64 * 8.0 * 1e9 / rate).round() as u64;
        self.serialising.push_back(end);
        Some(end)
    }

    /// The constant delay plus this packet's jitter, never below zero.
    fn delay_ns(&mut self) -> u64 {
        let j = self.cfg.jitter_us;
        let jitter_us = match &self.normal {
            _ if j == 0.0 => 0.0,
            Some(normal) => normal.sample(&mut self.rng),
            None => self.rng.gen_range(-j..=j),
        };
        ((self.cfg.delay_us + jitter_us) * 1e3).max(0.0).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(f: impl FnOnce(&mut Direction)) -> Direction {
        let mut d = Direction::default();
        f(&mut d);
        d
    }

    fn losses(model: &mut Model, n: usize) -> Vec<bool> {
        (0..n)
            .map(|i| model.admit(i as u64 * 1000, 100, 0) == Fate::Lost)
            .collect()
    }

    #[test]
    fn random_loss_is_near_its_rate_and_repeats_with_the_seed() {
        let d = dir(|d| d.loss = Loss::Random { pct: 5.0 });
        let a = losses(&mut Model::new(d.clone(), 9), 100_000);
        let rate = a.iter().filter(|&&l| l).count() as f64 / a.len() as f64;
        // 5 standard deviations of a binomial(100000, 0.05): 0.0035.
        assert!((rate - 0.05).abs() < 0.0035, "{rate}");
        assert_eq!(a, losses(&mut Model::new(d, 9), 100_000));
    }

    #[test]
    fn gilbert_elliott_loses_in_bursts_at_its_stationary_rate() {
        // Bad state 1/(1 + r/p) = 1/(1 + 25/1) of the time, losing all there.
        let d = dir(|d| {
            d.loss = Loss::GilbertElliott {
                p_pct: 1.0,
                r_pct: 25.0,
                bad_loss_pct: 100.0,
                good_loss_pct: 0.0,
            }
        });
        let l = losses(&mut Model::new(d, 3), 200_000);
        let rate = l.iter().filter(|&&x| x).count() as f64 / l.len() as f64;
        assert!((rate - 1.0 / 26.0).abs() < 0.006, "{rate}");
        let bursts = l.windows(2).filter(|w| w[1] && !w[0]).count() as f64;
        let mean_burst = l.iter().filter(|&&x| x).count() as f64 / bursts;
        assert!(
            (mean_burst - 4.0).abs() < 0.5,
            "mean burst {mean_burst}, want 1/r = 4"
        );
    }

    #[test]
    fn rate_spaces_packets_and_its_queue_drops_beyond_its_limit() {
        // 1500 bytes at 12 Mbit/s: 1 ms each; 3 queued at most.
        let mut m = Model::new(
            dir(|d| {
                d.rate_bps = Some(12e6);
                d.queue_packets = 3;
                d.delay_us = 500.0;
            }),
            1,
        );
        let fates: Vec<Fate> = (0..5).map(|_| m.admit(0, 1500, 0)).collect();
        let due: Vec<u64> = fates
            .iter()
            .filter_map(|f| match f {
                Fate::Deliver { due_ns, .. } => Some(*due_ns),
                _ => None,
            })
            .collect();
        assert_eq!(due, [1_500_000, 2_500_000, 3_500_000]);
        assert_eq!(fates[3], Fate::QueueFull);
        // Once the first is out, there is room again.
        assert!(matches!(
            m.admit(1_000_000, 1500, 0),
            Fate::Deliver {
                due_ns: 4_500_000,
                ..
            }
        ));
    }

    #[test]
    fn a_duplicate_takes_its_own_time_at_the_rate_and_its_own_place_in_the_queue() {
        // 1500 bytes at 12 Mbit/s: 1 ms each; every packet duplicated; 3 queued at most.
        let mut m = Model::new(
            dir(|d| {
                d.rate_bps = Some(12e6);
                d.queue_packets = 3;
                d.duplicate_pct = 100.0;
            }),
            1,
        );
        assert_eq!(
            m.admit(0, 1500, 0),
            Fate::Deliver {
                due_ns: 1_000_000,
                copy: Some(Copy::Due(2_000_000)),
                corrupt_bit: None
            }
        );
        // The third slot is the next packet's; its copy finds the queue full.
        assert_eq!(
            m.admit(0, 1500, 2),
            Fate::Deliver {
                due_ns: 3_000_000,
                copy: Some(Copy::QueueFull),
                corrupt_bit: None
            }
        );
    }

    #[test]
    fn jitter_keeps_order_unless_reordering_is_asked_for() {
        let jittery = |reorder| {
            dir(|d| {
                d.delay_us = 1000.0;
                d.jitter_us = 500.0;
                d.jitter = Jitter::Normal;
                d.reorder = reorder;
            })
        };
        let dues = |reorder| {
            let mut m = Model::new(jittery(reorder), 5);
            (0..1000)
                .map(|i| match m.admit(i * 10_000, 100, 0) {
                    Fate::Deliver { due_ns, .. } => due_ns,
                    f => panic!("{f:?}"),
                })
                .collect::<Vec<u64>>()
        };
        assert!(dues(false).windows(2).all(|w| w[0] <= w[1]));
        assert!(dues(true).windows(2).any(|w| w[0] > w[1]));
    }
}
