//! The link emulator's configuration file (JSON, written by dplab's substrate), decoded with
//! serde's derive into typed structs (unknown keys refused), then checked once for what the
//! types cannot say (percentages within 0..=100, times not negative, a rate above zero).
//!
//! ```json
//! {"link": "h1–s1", "a": "ea", "b": "eb", "seed": 7,
//!  "a_to_b": {"delay_us": 10000, "jitter_us": 1000, "jitter": "normal",
//!             "loss": {"model": "gilbert_elliott", "p_pct": 1, "r_pct": 30},
//!             "rate_bps": 10000000, "queue_packets": 100},
//!  "b_to_a": {"delay_us": 10000}}
//! ```

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The link's name, for messages.
    pub link: String,
    /// The two interfaces the emulator joins (in its own namespace).
    pub a: String,
    pub b: String,
    /// Seeds every random choice (loss, jitter, duplication, corruption): a run with the same
    /// seed and the same packets makes the same choices.
    pub seed: u64,
    #[serde(default)]
    pub a_to_b: Direction,
    #[serde(default)]
    pub b_to_a: Direction,
}

/// How jitter is drawn around the constant delay.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Jitter {
    /// Uniform in [-jitter, +jitter].
    #[default]
    Uniform,
    /// Normal with standard deviation `jitter`.
    Normal,
}

/// Which packets are lost on the way in.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum Loss {
    #[default]
    None,
    /// Each packet independently with probability `pct` %.
    Random { pct: f64 },
    /// Gilbert-Elliott bursts, with netem's `gemodel` parameters: `p_pct` the chance of
    /// going from the good to the bad state per packet, `r_pct` of going back, and the loss
    /// chance in each state (netem's 1-h and 1-k).
    GilbertElliott {
        p_pct: f64,
        r_pct: f64,
        #[serde(default = "hundred")]
        bad_loss_pct: f64,
        #[serde(default)]
        good_loss_pct: f64,
    },
}

fn hundred() -> f64 {
    100.0
}

/// What one direction of the link does to the packets that cross it: loss on the way in,
/// then the rate's queue and serialisation, then the delay (constant plus jitter).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Direction {
    pub delay_us: f64,
    pub jitter_us: f64,
    pub jitter: Jitter,
    /// Whether jitter may reorder packets; without it a packet never leaves before the one
    /// that came in before it (its due time is raised to that one's).
    pub reorder: bool,
    pub loss: Loss,
    pub duplicate_pct: f64,
    pub corrupt_pct: f64,
    /// The link's rate in bit/s (None: as fast as packets come).
    pub rate_bps: Option<f64>,
    /// Packets the rate's queue holds (waiting to be serialised) before it drops new ones.
    pub queue_packets: usize,
    /// Packets this direction holds in all (queued or in flight through the delay), as
    /// netem's `limit`: beyond it new packets are dropped.
    pub limit_packets: usize,
}

impl Default for Direction {
    fn default() -> Direction {
        Direction {
            delay_us: 0.0,
            jitter_us: 0.0,
            jitter: Jitter::Uniform,
            reorder: false,
            loss: Loss::None,
            duplicate_pct: 0.0,
            corrupt_pct: 0.0,
            rate_bps: None,
            queue_packets: 1000,
            limit_packets: 100_000,
        }
    }
}

impl dplab_tool::Config for Config {
    fn check(&self) -> Result<(), String> {
        if self.a == self.b {
            return Err(format!("a and b are the same interface {:?}", self.a));
        }
        for (name, d) in [("a_to_b", &self.a_to_b), ("b_to_a", &self.b_to_a)] {
            d.check().map_err(|e| format!("{name}.{e}"))?;
        }
        Ok(())
    }
}

impl Direction {
    fn check(&self) -> Result<(), String> {
        let mut pcts = vec![
            ("duplicate_pct", self.duplicate_pct),
            ("corrupt_pct", self.corrupt_pct),
        ];
        match self.loss {
            Loss::None => {}
            Loss::Random { pct } => pcts.push(("loss.pct", pct)),
            Loss::GilbertElliott {
                p_pct,
                r_pct,
                bad_loss_pct,
                good_loss_pct,
            } => pcts.extend([
                ("loss.p_pct", p_pct),
                ("loss.r_pct", r_pct),
                ("loss.bad_loss_pct", bad_loss_pct),
                ("loss.good_loss_pct", good_loss_pct),
            ]),
        }
        for (field, v) in pcts {
            if !(0.0..=100.0).contains(&v) {
                return Err(format!("{field}: must be within 0..=100, not {v}"));
            }
        }
        for (field, v) in [("delay_us", self.delay_us), ("jitter_us", self.jitter_us)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(format!("{field}: must be >= 0, not {v}"));
            }
        }
        if let Some(rate) = self.rate_bps {
            if !(rate > 0.0 && rate.is_finite()) {
                return Err(format!("rate_bps: must be > 0, not {rate}"));
            }
        }
        if self.queue_packets == 0 || self.limit_packets == 0 {
            return Err("queue_packets and limit_packets must be >= 1".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        dplab_tool::parse(text)
    }

    #[test]
    fn reads_a_full_direction_and_defaults_the_other() {
        let c = parse(
            r#"{"link": "l", "a": "ea", "b": "eb", "seed": 1,
                "a_to_b": {"delay_us": 10, "loss": {"model": "gilbert_elliott",
                           "p_pct": 1, "r_pct": 20}, "rate_bps": 1e6}}"#,
        )
        .unwrap();
        assert_eq!(c.a_to_b.delay_us, 10.0);
        assert!(matches!(
            c.a_to_b.loss,
            Loss::GilbertElliott { bad_loss_pct, .. } if bad_loss_pct == 100.0
        ));
        assert_eq!(c.b_to_a.loss, Loss::None);
    }

    #[test]
    fn names_the_field_that_is_wrong() {
        let e = parse(
            r#"{"link": "l", "a": "x", "b": "y", "seed": 1,
                          "b_to_a": {"loss": {"model": "random", "pct": 120}}}"#,
        )
        .unwrap_err();
        assert!(e.contains("b_to_a.loss.pct"), "{e}");
        let e = parse(r#"{"link": "l", "a": "x", "b": "y", "seed": 1, "a_to_b": {"dealy_us": 1}}"#)
            .unwrap_err();
        assert!(e.contains("dealy_us"), "{e}");
    }
}
