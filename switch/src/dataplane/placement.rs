//! Which core the data-plane thread runs on: away from a task that keeps taking it.
//!
//! On these VMs the scheduler wakes a task on the core it last ran on even while that core
//! is busy and the other one idles. A paced sender whose timer fires on the switch's core
//! therefore runs there just when its packet is due; the switch, spinning for that packet,
//! gets its core back only when the sender has gone to sleep again, and picks the packet up
//! about 15 µs late instead of 4 (measured with a traced switch, session 6). The sender's
//! wake-ups stay on their core, so the thread moves instead: after two expected packets in a
//! row found it crowded out, it goes to the next core it is allowed on. It is not pinned
//! there: its affinity is restored at once, so the kernel's balancing still applies.

/// Crowded pickups in a row before the thread moves.
const CROWDED_TO_MOVE: u32 = 2;
/// Expected packets after a move before another move: a core crowded for good (two busy
/// streams, one on each core) must not make the thread bounce on every packet.
const SETTLE_PICKUPS: u32 = 8;

pub struct Placement {
    /// The cores the thread may run on, as it was started (a `--core` pin leaves one).
    allowed: Vec<usize>,
    crowded_in_row: u32,
    settling: u32,
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
            settling: 0,
            move_due: false,
        }
    }

    /// Notes how an expected packet was picked up: `crowded` if it arrived while another
    /// task held the thread's core.
    pub fn on_expected_pickup(&mut self, crowded: bool) {
        self.settling = self.settling.saturating_sub(1);
        self.crowded_in_row = if crowded { self.crowded_in_row + 1 } else { 0 };
        if self.crowded_in_row >= CROWDED_TO_MOVE && self.settling == 0 && self.allowed.len() > 1 {
            self.move_due = true;
        }
    }

    /// Moves the thread if a move is due (called once its packets are out, so the move
    /// delays none); true if it moved.
    pub fn settle(&mut self) -> bool {
        if !std::mem::take(&mut self.move_due) {
            return false;
        }
        self.crowded_in_row = 0;
        self.settling = SETTLE_PICKUPS;
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
    usize::try_from(unsafe { libc::sched_getcpu() }).ok()
}

fn affinity() -> Vec<usize> {
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return Vec::new(); // unknown: never move
    }
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

fn set_affinity(cores: &[usize]) -> bool {
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cores {
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    let size = std::mem::size_of::<libc::cpu_set_t>();
    unsafe { libc::sched_setaffinity(0, size, &set) == 0 }
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

    #[test]
    fn settles_before_moving_again() {
        let mut p = Placement::new(vec![0, 1]);
        p.on_expected_pickup(true);
        p.on_expected_pickup(true);
        p.move_due = false; // as settle() leaves it, without touching this test's thread
        p.crowded_in_row = 0;
        p.settling = SETTLE_PICKUPS;
        for _ in 0..SETTLE_PICKUPS - 1 {
            p.on_expected_pickup(true);
            assert!(!p.move_due);
        }
        p.on_expected_pickup(true);
        assert!(p.move_due);
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
