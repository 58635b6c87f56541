//! Which core the data-plane thread runs on: away from a task that keeps taking it.
//!
//! The scheduler may wake a task on the core it last ran on even while that core
//! is busy and the other one idles. A paced sender whose timer fires on the switch's core
//! therefore runs there just when its packet is due; the switch, spinning for that packet,
//! gets its core back only when the sender has gone to sleep again, and picks the packet up
//! several times later than otherwise (docs/benchmarks.md). The sender's
//! wake-ups stay on their core, so the thread moves instead: after two expected packets in a
//! row found it crowded out, it goes to the next core it is allowed on. It is not pinned
//! there: its affinity is restored at once, so the kernel's balancing still applies.
//!
//! A move does not always help: in a chain of switches a packet reaches the next switch
//! inside the previous one's send(), so on two cores some neighbour crowds each switch
//! wherever it goes, and each move only costs it its warm caches. So a move is judged by the
//! first expected packets after it: if most were crowded again, the thread waits twice as
//! long before the next move. (Judged on the first packets only: on one hop the sender
//! tends to follow the switch to its new core some tens of packets later, and a move that
//! bought those packets was worth it.)

use pktio::sys;

/// Crowded pickups in a row before the thread moves.
const CROWDED_TO_MOVE: u32 = 2;
/// Expected packets after a move before another move (doubled after each move that did
/// not help, up to `SETTLE_MAX`; back to this after one that did).
const SETTLE_MIN: u32 = 8;
/// The expected packets after a move that judge it.
const JUDGED_PICKUPS: u32 = 8;
/// At 50 packets per second, about 20 s.
const SETTLE_MAX: u32 = 1024;

pub struct Placement {
    /// The cores the thread may run on, as it was started (a `--core` pin leaves one).
    allowed: Vec<usize>,
    crowded_in_row: u32,
    /// Expected pickups since the last move, and how many of the judged ones were crowded.
    since_move: u32,
    crowded_after_move: u32,
    /// Expected pickups after a move before the next.
    settle_for: u32,
    move_due: bool,
}

impl Placement {
    /// The calling thread's placement, from its affinity now.
    pub fn of_this_thread() -> Placement {
        Placement::new(affinity())
    }

    fn new(allowed: Vec<usize>) -> Placement {
        Placement {
            allowed,
            crowded_in_row: 0,
            since_move: SETTLE_MAX, // no move to judge or wait for
            crowded_after_move: 0,
            settle_for: SETTLE_MIN,
            move_due: false,
        }
    }

    /// Notes how an expected packet was picked up: `crowded` if it arrived while another
    /// task held the thread's core.
    pub fn on_expected_pickup(&mut self, crowded: bool) {
        self.since_move = self.since_move.saturating_add(1);
        if self.since_move <= JUDGED_PICKUPS {
            self.crowded_after_move += crowded as u32;
            if self.since_move == JUDGED_PICKUPS {
                self.judge_last_move();
            }
        }
        self.crowded_in_row = if crowded { self.crowded_in_row + 1 } else { 0 };
        let settled = self.since_move >= self.settle_for;
        if self.crowded_in_row >= CROWDED_TO_MOVE && settled && self.allowed.len() > 1 {
            self.move_due = true;
        }
    }

    /// Crowded for most of the pickups after it, the last move did not help: wait longer.
    fn judge_last_move(&mut self) {
        self.settle_for = if 2 * self.crowded_after_move > JUDGED_PICKUPS {
            (2 * self.settle_for).min(SETTLE_MAX)
        } else {
            SETTLE_MIN
        };
    }

    /// Moves the thread if a move is due (called once its packets are out, so the move
    /// delays none); true if it moved.
    pub fn settle(&mut self) -> bool {
        if !std::mem::take(&mut self.move_due) {
            return false;
        }
        self.crowded_in_row = 0;
        self.since_move = 0;
        self.crowded_after_move = 0;
        let Some(target) = next_core(&self.allowed, current_core()) else {
            return false;
        };
        set_affinity(&[target]) && set_affinity(&self.allowed)
    }
}

/// The allowed core after `current`, wrapping around.
fn next_core(allowed: &[usize], current: Option<usize>) -> Option<usize> {
    let current = current?;
    let after = allowed.iter().copied().find(|&c| c > current);
    after
        .or_else(|| allowed.first().copied())
        .filter(|&c| c != current)
}

fn current_core() -> Option<usize> {
    sys::current_core()
}

fn affinity() -> Vec<usize> {
    sys::affinity() // empty when unknown: never move
}

/// Lets the calling thread run only on `cores`; false if the kernel refused.
pub fn set_affinity(cores: &[usize]) -> bool {
    sys::set_affinity(cores)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_after_two_crowded_pickups_in_a_row() {
        let mut p = Placement::new(vec![0, 1]);
        p.on_expected_pickup(true);
        p.on_expected_pickup(false);
        p.on_expected_pickup(true);
        assert!(!p.move_due);
        p.on_expected_pickup(true);
        assert!(p.move_due);
    }

    /// What settle() does, without moving this test's thread.
    fn moved(p: &mut Placement) {
        assert!(std::mem::take(&mut p.move_due));
        p.crowded_in_row = 0;
        p.since_move = 0;
        p.crowded_after_move = 0;
    }

    /// Pickups until the next move is due.
    fn pickups_to_move(p: &mut Placement, crowded: impl Fn(u32) -> bool) -> u32 {
        (1..=10_000)
            .find(|&i| {
                p.on_expected_pickup(crowded(i));
                p.move_due
            })
            .expect("a move")
    }

    #[test]
    fn settles_before_moving_again() {
        let mut p = Placement::new(vec![0, 1]);
        pickups_to_move(&mut p, |_| true);
        moved(&mut p);
        // Two crowded pickups of the judged eight: the move helped.
        assert_eq!(pickups_to_move(&mut p, |i| i >= SETTLE_MIN - 1), SETTLE_MIN);
    }

    #[test]
    fn waits_longer_after_each_move_that_did_not_help() {
        let mut p = Placement::new(vec![0, 1]);
        pickups_to_move(&mut p, |_| true);
        let mut waits = Vec::new();
        for _ in 0..10 {
            moved(&mut p);
            waits.push(pickups_to_move(&mut p, |_| true));
        }
        assert_eq!(
            &waits[..4],
            &[
                2 * SETTLE_MIN,
                4 * SETTLE_MIN,
                8 * SETTLE_MIN,
                16 * SETTLE_MIN
            ]
        );
        assert_eq!(*waits.last().unwrap(), SETTLE_MAX);
    }

    #[test]
    fn a_move_that_helped_resets_the_wait() {
        let mut p = Placement::new(vec![0, 1]);
        pickups_to_move(&mut p, |_| true);
        for _ in 0..3 {
            moved(&mut p);
            pickups_to_move(&mut p, |_| true);
        }
        assert_eq!(p.settle_for, 8 * SETTLE_MIN);
        moved(&mut p);
        // Uncrowded after the move until the sender comes back, then crowded again.
        let settle = p.settle_for;
        let wait = pickups_to_move(&mut p, |i| i > settle);
        assert_eq!(wait, settle + CROWDED_TO_MOVE);
        assert_eq!(p.settle_for, SETTLE_MIN);
    }

    #[test]
    fn a_pinned_thread_never_moves() {
        let mut p = Placement::new(vec![1]);
        for _ in 0..10 {
            p.on_expected_pickup(true);
        }
        assert!(!p.move_due);
        assert!(!p.settle());
    }

    #[test]
    fn next_core_wraps_and_skips_the_current_one() {
        assert_eq!(next_core(&[0, 1], Some(0)), Some(1));
        assert_eq!(next_core(&[0, 1], Some(1)), Some(0));
        assert_eq!(next_core(&[0, 2, 5], Some(2)), Some(5));
        assert_eq!(next_core(&[0, 2, 5], Some(3)), Some(5));
        assert_eq!(next_core(&[3], Some(3)), None);
        assert_eq!(next_core(&[0, 1], None), None);
    }
}
