//! Two-rate three-colour meter (RFC 2698, colour-blind mode), counting packets or bytes.

use crate::program::Unit;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    Green = 0,
    Yellow = 1,
    Red = 2,
}

/// Also a request's meter config (switch/PROTOCOL.md): `{"cir", "cburst", "pir", "pburst"}`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeterConfig {
    /// Committed and peak rates in units (packets or bytes) per second.
    pub cir: u64,
    pub cburst: u64,
    pub pir: u64,
    pub pburst: u64,
}

/// Packets and bytes a meter marked with each colour, indexed by `Color` (P4Runtime's
/// MeterCounterData).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ColourCounts {
    pub packets: [u64; 3],
    pub bytes: [u64; 3],
}

/// One meter cell (of a meter array, or a table entry's direct meter): its configuration
/// (`None`: unconfigured, every packet GREEN) and what it marked so far.
#[derive(Clone, Debug, Default)]
pub struct MeterCell {
    pub meter: Option<Meter>,
    pub counts: ColourCounts,
}

impl MeterCell {
    /// A first configuration starts with full buckets. A new one for a configured cell
    /// keeps what its buckets hold (refilled to now at the old rates, capped by the new
    /// bursts): a controller that re-rates a meter every interval (study 004's loop) must
    /// not hand out a fresh burst each time. The colour counts stay.
    pub fn configure(&mut self, config: Option<MeterConfig>, now_ns: u64) {
        self.meter = match (self.meter.take(), config) {
            (Some(old), Some(c)) => Some(old.rerated(c, now_ns)),
            (None, Some(c)) => Some(Meter::new(c, now_ns)),
            (_, None) => None,
        };
    }

    pub fn config(&self) -> Option<MeterConfig> {
        self.meter.as_ref().map(|m| m.config)
    }

    /// Colours a packet of `len` bytes (`len` units for a meter in bytes, else 1) and
    /// counts it under its colour; an unconfigured cell marks every packet GREEN.
    pub fn execute(&mut self, unit: Unit, len: u64, now_ns: u64) -> Color {
        let amount = if unit == Unit::Bytes { len } else { 1 };
        let colour = match self.meter.as_mut() {
            Some(m) => m.execute(amount, now_ns),
            None => Color::Green,
        };
        self.counts.packets[colour as usize] += 1;
        self.counts.bytes[colour as usize] += len;
        colour
    }
}

#[derive(Clone, Debug)]
pub struct Meter {
    pub config: MeterConfig,
    committed_tokens: f64,
    peak_tokens: f64,
    last_ns: u64,
}

impl Meter {
    pub fn new(config: MeterConfig, now_ns: u64) -> Meter {
        Meter {
            config,
            committed_tokens: config.cburst as f64,
            peak_tokens: config.pburst as f64,
            last_ns: now_ns,
        }
    }

    /// This meter under `config`, its buckets as full as they are now.
    fn rerated(mut self, config: MeterConfig, now_ns: u64) -> Meter {
        self.refill(now_ns);
        Meter {
            config,
            committed_tokens: self.committed_tokens.min(config.cburst as f64),
            peak_tokens: self.peak_tokens.min(config.pburst as f64),
            last_ns: self.last_ns,
        }
    }

    fn refill(&mut self, now_ns: u64) {
        let dt = now_ns.saturating_sub(self.last_ns) as f64 / 1e9;
        self.last_ns = self.last_ns.max(now_ns);
        let c = &self.config;
        self.committed_tokens = (self.committed_tokens + dt * c.cir as f64).min(c.cburst as f64);
        self.peak_tokens = (self.peak_tokens + dt * c.pir as f64).min(c.pburst as f64);
    }

    /// Colours an arrival of `amount` units (1 for packet meters, the length for byte meters).
    pub fn execute(&mut self, amount: u64, now_ns: u64) -> Color {
        self.refill(now_ns);
        let b = amount as f64;
        if self.peak_tokens < b {
            return Color::Red;
        }
        if self.committed_tokens < b {
            self.peak_tokens -= b;
            return Color::Yellow;
        }
        self.peak_tokens -= b;
        self.committed_tokens -= b;
        Color::Green
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meter(cir: u64, cburst: u64, pir: u64, pburst: u64) -> Meter {
        Meter::new(
            MeterConfig {
                cir,
                cburst,
                pir,
                pburst,
            },
            0,
        )
    }

    #[test]
    fn burst_then_colours_in_order() {
        let mut m = meter(10, 2, 20, 4);
        let colours: Vec<Color> = (0..5).map(|_| m.execute(1, 0)).collect();
        assert_eq!(
            colours,
            vec![
                Color::Green,
                Color::Green,
                Color::Yellow,
                Color::Yellow,
                Color::Red
            ]
        );
    }

    #[test]
    fn tokens_refill_at_the_configured_rates() {
        let mut m = meter(1000, 1000, 2000, 2000);
        assert_eq!(m.execute(2000, 0), Color::Yellow);
        assert_eq!(m.execute(1, 0), Color::Red);
        // after 0.5 s: committed 1000 + 500 capped at 1000, peak 0 + 1000
        assert_eq!(m.execute(1000, 500_000_000), Color::Green);
    }

    #[test]
    fn cells_count_packets_and_bytes_per_colour() {
        let mut cell = MeterCell::default();
        assert_eq!(cell.execute(Unit::Packets, 100, 0), Color::Green); // unconfigured
        cell.configure(Some(meter(10, 1, 20, 2).config), 0);
        let colours: Vec<Color> = (0..3).map(|_| cell.execute(Unit::Packets, 60, 0)).collect();
        assert_eq!(colours, vec![Color::Green, Color::Yellow, Color::Red]);
        assert_eq!(cell.counts.packets, [2, 1, 1]);
        assert_eq!(cell.counts.bytes, [160, 60, 60]);
        cell.configure(None, 0); // a new configuration keeps the counts
        assert_eq!(cell.counts.packets, [2, 1, 1]);
    }

    #[test]
    fn a_new_rate_keeps_the_buckets_as_they_are() {
        let mut cell = MeterCell::default();
        cell.configure(Some(meter(10, 3, 10, 3).config), 0);
        for _ in 0..3 {
            assert_eq!(cell.execute(Unit::Packets, 64, 0), Color::Green);
        }
        // Re-rated with the buckets empty: no fresh burst, and 0.1 s at the new
        // rate (20/s) refills two tokens.
        cell.configure(Some(meter(20, 5, 20, 5).config), 0);
        assert_eq!(cell.execute(Unit::Packets, 64, 0), Color::Red);
        assert_eq!(cell.execute(Unit::Packets, 64, 100_000_000), Color::Green);
        assert_eq!(cell.execute(Unit::Packets, 64, 100_000_000), Color::Green);
        assert_eq!(cell.execute(Unit::Packets, 64, 100_000_000), Color::Red);
        // Full buckets stay full only up to the new, smaller bursts.
        cell.configure(Some(meter(20, 1, 20, 1).config), 10_000_000_000);
        assert_eq!(
            cell.execute(Unit::Packets, 64, 10_000_000_000),
            Color::Green
        );
        assert_eq!(cell.execute(Unit::Packets, 64, 10_000_000_000), Color::Red);
        // Unconfigured, then configured again: full buckets.
        cell.configure(None, 10_000_000_000);
        cell.configure(Some(meter(1, 2, 1, 2).config), 10_000_000_000);
        assert_eq!(
            cell.execute(Unit::Packets, 64, 10_000_000_000),
            Color::Green
        );
        assert_eq!(
            cell.execute(Unit::Packets, 64, 10_000_000_000),
            Color::Green
        );
    }

    #[test]
    fn steady_rate_above_cir_gives_mostly_yellow() {
        // 1500 units/s offered against cir 1000, pir 2000 for 10 s.
        let mut m = meter(1000, 10, 2000, 10);
        let mut counts = [0u32; 3];
        for i in 0..15_000u64 {
            counts[m.execute(1, i * 1_000_000_000 / 1500) as usize] += 1;
        }
        let green_rate = counts[0] as f64 / 10.0;
        assert!((green_rate - 1000.0).abs() < 20.0, "green {green_rate}/s");
        assert_eq!(counts[2], 0);
    }
}
