//! When to spin and when to sleep: a model of recent packet arrivals.
//!
//! Waking a sleeping thread costs tens of microseconds on a VM (the scheduler, and an idle
//! vCPU must be brought back from halt), more than the whole forwarding work; spinning costs
//! a core. So the data-plane thread spins only where a packet is likely soon:
//!
//! * after traffic, for a window tied to the recent gap between arrivals (a stream with short
//!   gaps is spun through; after a lone packet only a short tail, for the rest of its burst);
//! * before an expected packet of a steady stream (a paced flow such as voice or video, whose
//!   arrivals repeat with one period): the thread sleeps with a timer that wakes it shortly
//!   before the next arrival is due and spins until it comes or is clearly late.
//!
//! An idle switch sleeps in poll(): nothing here runs without recent packets. All times are
//! CLOCK_REALTIME nanoseconds, the clock of the receive ring's timestamps.

/// Packets closer than this belong to one burst: arrivals are counted per burst.
const BURST_NS: u64 = 20_000;
/// Burst starts remembered (HISTORY - 1 gaps); a stream is steady when the gaps agree.
const HISTORY: usize = 6;
/// Spin after the last packet when gaps are unknown or long: the rest of a burst, or a
/// reply coming straight back.
const SPIN_MIN_NS: u64 = 50_000;
/// Longest spin after traffic: gaps up to this are spun through.
const SPIN_MAX_NS: u64 = 200_000;
/// Longest period worth waking early for (50 ms: 20 packets per second).
const PERIOD_MAX_NS: u64 = 50_000_000;
/// Margin spun before and after an expected arrival, beyond the measured jitter.
const MARGIN_NS: u64 = 20_000;
/// The most of a period spent spinning for one expected packet (1/8: 12.5 % of a core).
const WINDOW_SHARE: u64 = 8;
/// A stamp further than this from the clock is not a CLOCK_REALTIME stamp.
const STAMP_SANE_NS: u64 = 1_000_000_000;

#[derive(Default)]
pub struct Arrivals {
    /// Stamp of the latest packet.
    last_ns: u64,
    /// First stamps of the latest bursts (a ring; `bursts` counts all ever written).
    starts: [u64; HISTORY],
    bursts: usize,
    /// How late timer wake-ups came, smoothed (1/8 of each new sample).
    wake_late_ns: u64,
}

/// A planned early wake-up for an expected packet.
#[derive(Debug, PartialEq, Eq)]
pub struct Anticipation {
    /// When to be awake and spinning.
    pub wake_at_ns: u64,
    /// When to stop spinning if nothing came.
    pub give_up_ns: u64,
}

/// The period of a steady stream and when its next packet is due.
struct Rhythm {
    period: u64,
    expected: u64,
    /// How far the arrivals stray from their schedule: the spread of its estimates (their
    /// full range, not half: a paced sender on a shared machine strays further than six
    /// arrivals show).
    jitter: u64,
}

impl Arrivals {
    /// Notes a packet the kernel stamped `stamp_ns`; `now_ns` stands in for a stamp that is
    /// not on the real-time clock (the kernel may keep a socket's delivery time instead).
    pub fn on_packet(&mut self, stamp_ns: u64, now_ns: u64) {
        let stamp = if stamp_ns.abs_diff(now_ns) > STAMP_SANE_NS {
            now_ns
        } else {
            stamp_ns
        };
        if stamp.saturating_sub(self.last_ns) >= BURST_NS {
            self.starts[self.bursts % HISTORY] = stamp;
            self.bursts += 1;
        }
        self.last_ns = self.last_ns.max(stamp);
    }

    /// Notes that a timer wake-up asked for `wanted_ns` came at `woke_ns`.
    pub fn on_timer_wake(&mut self, wanted_ns: u64, woke_ns: u64) {
        let late = woke_ns.saturating_sub(wanted_ns).min(PERIOD_MAX_NS);
        self.wake_late_ns = self.wake_late_ns - self.wake_late_ns / 8 + late / 8;
    }

    /// The remembered burst starts, oldest first, once there are enough.
    fn history(&self) -> Option<[u64; HISTORY]> {
        if self.bursts < HISTORY {
            return None;
        }
        Some(std::array::from_fn(|i| {
            self.starts[(self.bursts + i) % HISTORY]
        }))
    }

    /// The median gap between burst starts and how far the gaps spread.
    fn gap_stats(&self) -> Option<(u64, u64)> {
        let starts = self.history()?;
        let mut gaps: [u64; HISTORY - 1] = std::array::from_fn(|i| starts[i + 1] - starts[i]);
        gaps.sort_unstable();
        Some((gaps[gaps.len() / 2], gaps[gaps.len() - 1] - gaps[0]))
    }

    /// The stream's rhythm, if its gaps agree. The next packet is due where the remembered
    /// arrivals, each carried forward by whole periods, put it (their median): a sender
    /// pacing on a fixed schedule strays around it without drifting.
    fn rhythm(&self) -> Option<Rhythm> {
        let (period, spread) = self.gap_stats()?;
        if spread > period / 4 || period <= SPIN_MAX_NS || period > PERIOD_MAX_NS {
            return None;
        }
        let starts = self.history()?;
        let mut due: [u64; HISTORY] =
            std::array::from_fn(|i| starts[i] + (HISTORY - i) as u64 * period);
        due.sort_unstable();
        Some(Rhythm {
            period,
            expected: due[HISTORY / 2],
            jitter: due[HISTORY - 1] - due[0],
        })
    }

    /// Until when to keep spinning now that the rings are empty.
    pub fn spin_until(&self) -> u64 {
        let window = match self.gap_stats() {
            Some((gap, _)) if gap <= SPIN_MAX_NS => (2 * gap).clamp(SPIN_MIN_NS, SPIN_MAX_NS),
            _ => SPIN_MIN_NS,
        };
        self.last_ns + window
    }

    /// An early wake-up for the next packet of a steady stream, if one is due after `now_ns`.
    pub fn anticipate(&self, now_ns: u64) -> Option<Anticipation> {
        let r = self.rhythm()?;
        let window = r.period / WINDOW_SHARE;
        let tail = (r.jitter + MARGIN_NS).min(window / 2);
        let lead = (self.wake_late_ns + r.jitter + MARGIN_NS).min(window - tail);
        let wake_at = r.expected.saturating_sub(lead);
        // Only for the packet still to come: a late or lost one ends the anticipation.
        (wake_at > now_ns).then_some(Anticipation {
            wake_at_ns: wake_at,
            give_up_ns: r.expected + tail,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000_000_000;
    const P: u64 = 5_000_000; // 200 packets per second

    /// Packets on a schedule of `period`, each off it by its `jitter`.
    fn stream(period: u64, jitter: &[u64]) -> Arrivals {
        let mut a = Arrivals::default();
        for (i, j) in jitter.iter().enumerate() {
            let t = T0 + i as u64 * period + j;
            a.on_packet(t, t);
        }
        a
    }

    #[test]
    fn steady_stream_is_anticipated_around_its_schedule() {
        // The latest packet came 60 µs late; the next is due on the schedule, not after it.
        let a = stream(P, &[0, 30_000, 10_000, 40_000, 20_000, 10_000, 60_000]);
        let on_schedule = T0 + 7 * P;
        let plan = a
            .anticipate(T0 + 6 * P + 100_000)
            .expect("a steady 200 pps stream");
        assert!(plan.wake_at_ns < on_schedule && plan.give_up_ns > on_schedule + 20_000);
        assert!(
            plan.give_up_ns - plan.wake_at_ns <= P / WINDOW_SHARE,
            "{plan:?}"
        );
    }

    #[test]
    fn irregular_or_short_or_young_streams_are_not_anticipated() {
        let irregular = stream(P, &[0, 2_000_000, 0, 1_500_000, 0, 2_000_000, 0]);
        assert_eq!(irregular.anticipate(T0), None);
        let fast = stream(100_000, &[0; 8]);
        assert_eq!(
            fast.anticipate(T0),
            None,
            "short gaps are spun through instead"
        );
        let young = stream(P, &[0; 4]);
        assert_eq!(young.anticipate(T0), None, "too few gaps to call it steady");
    }

    #[test]
    fn an_overdue_packet_ends_the_anticipation() {
        let a = stream(P, &[0; 7]);
        let due = T0 + 7 * P;
        assert!(a.anticipate(due - 1_000_000).is_some());
        assert_eq!(a.anticipate(due), None);
    }

    #[test]
    fn spin_window_follows_the_gap_between_bursts() {
        let fast = stream(50_000, &[0; 7]);
        assert_eq!(fast.spin_until(), T0 + 6 * 50_000 + 100_000, "two gaps");
        let slow = stream(P, &[0; 7]);
        assert_eq!(slow.spin_until(), T0 + 6 * P + SPIN_MIN_NS);
        let fresh = Arrivals::default();
        assert_eq!(fresh.spin_until(), SPIN_MIN_NS);
    }

    #[test]
    fn packets_of_one_burst_make_one_arrival() {
        let mut a = Arrivals::default();
        for burst in 0..7u64 {
            for k in 0..3u64 {
                let t = T0 + burst * 1_000_000 + k * 2_000; // three packets 2 µs apart
                a.on_packet(t, t);
            }
        }
        assert_eq!(a.gap_stats(), Some((1_000_000, 0)));
    }

    #[test]
    fn stamps_off_the_real_time_clock_are_replaced_by_the_clock() {
        let mut a = Arrivals::default();
        for i in 0..7u64 {
            let now = T0 + i * 1_000_000;
            a.on_packet(12_345 + i, now); // a monotonic delivery time, not a wall stamp
        }
        assert_eq!(a.gap_stats(), Some((1_000_000, 0)));
    }

    #[test]
    fn late_timer_wake_ups_move_the_wake_earlier_within_the_window() {
        let mut a = stream(P, &[0; 7]);
        let before = a.anticipate(T0).unwrap();
        for _ in 0..50 {
            a.on_timer_wake(0, 200_000);
        }
        let after = a.anticipate(T0).unwrap();
        assert!(
            before.wake_at_ns - after.wake_at_ns > 150_000,
            "{before:?} {after:?}"
        );
        assert!(after.give_up_ns - after.wake_at_ns <= P / WINDOW_SHARE);
    }
}
