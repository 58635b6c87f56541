//! The medium's configuration file (JSON, written by dplab's substrate), decoded with serde's
//! derive into typed structs (unknown keys refused; serde_path_to_error names the field, as
//! `stations[1].rate_mbit`), then checked once for what the types cannot say (rates above
//! zero, percentages within 0..=100, every interface named once, a folder for the stats).
//!
//! ```json
//! {"name": "ap1", "seed": 1, "basic_rate_mbit": 6.0, "queue_frames": 100, "overhead_us": 0,
//!  "stats_path": "/run/dplab/dl1a2b/wmedium-ap1.json",
//!  "ap": {"ifname": "wap1"},
//!  "stations": [{"ifname": "wsta1", "rate_mbit": 54.0, "loss_pct": 0.0}]}
//! ```

use std::collections::HashSet;
use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The access point's name, for messages and the stats.
    pub name: String,
    /// Seeds every loss draw: the same seed and the same frames in the same order lose the
    /// same frames.
    pub seed: u64,
    /// The rate of frames sent to every station: broadcasts, multicasts and unicasts to a
    /// MAC the medium has not learnt.
    pub basic_rate_mbit: f64,
    /// Frames each sender's queue holds (waiting for the medium) before it drops new ones.
    #[serde(default = "default_queue_frames")]
    pub queue_frames: usize,
    /// Airtime added to every frame (preamble, inter-frame spaces, the acknowledgement), in
    /// µs; 0 unless set, so a frame takes exactly its bits over the rate.
    #[serde(default)]
    pub overhead_us: f64,
    /// Where the counters go, as JSON, when the medium stops.
    pub stats_path: PathBuf,
    pub ap: Ap,
    pub stations: Vec<Station>,
}

fn default_queue_frames() -> usize {
    100
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ap {
    /// The medium's end of the veth pair whose other end is the access point's interface.
    pub ifname: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Station {
    /// The medium's end of the veth pair whose other end is the station's interface.
    pub ifname: String,
    /// The station's link rate, both ways (to and from the access point).
    pub rate_mbit: f64,
    /// The chance that a frame between this station and the access point is lost, both ways.
    pub loss_pct: f64,
}

impl Config {
    /// Whether the folder of `stats_path` exists (checked at start, not when decoding: the
    /// file is written only at the end).
    pub fn check_stats_folder(&self) -> Result<(), String> {
        match self.stats_path.parent() {
            Some(dir) if dir.as_os_str().is_empty() || dir.is_dir() => Ok(()),
            _ => Err(format!(
                "stats_path: no folder for {}",
                self.stats_path.display()
            )),
        }
    }

    /// Every interface the medium joins: the access point's first, then the stations' in
    /// their order (a node's number is its place here).
    pub fn ifnames(&self) -> Vec<&str> {
        std::iter::once(self.ap.ifname.as_str())
            .chain(self.stations.iter().map(|s| s.ifname.as_str()))
            .collect()
    }
}

impl dplab_tool::Config for Config {
    fn check(&self) -> Result<(), String> {
        positive("basic_rate_mbit", self.basic_rate_mbit)?;
        if self.queue_frames == 0 {
            return Err("queue_frames: must be >= 1".into());
        }
        if !(self.overhead_us >= 0.0 && self.overhead_us.is_finite()) {
            return Err(format!(
                "overhead_us: must be >= 0, not {}",
                self.overhead_us
            ));
        }
        for (i, s) in self.stations.iter().enumerate() {
            positive(&format!("stations[{i}].rate_mbit"), s.rate_mbit)?;
            if !(0.0..=100.0).contains(&s.loss_pct) {
                return Err(format!(
                    "stations[{i}].loss_pct: must be within 0..=100, not {}",
                    s.loss_pct
                ));
            }
        }
        let mut seen = HashSet::new();
        for name in self.ifnames() {
            if !seen.insert(name) {
                return Err(format!("ifname {name:?} is named twice"));
            }
        }
        Ok(())
    }
}

fn positive(field: &str, v: f64) -> Result<(), String> {
    if v > 0.0 && v.is_finite() {
        Ok(())
    } else {
        Err(format!("{field}: must be > 0, not {v}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        dplab_tool::parse(text)
    }

    const GOOD: &str = r#"{"name": "ap1", "seed": 1, "basic_rate_mbit": 6,
        "stats_path": "/tmp/s.json", "ap": {"ifname": "wap"},
        "stations": [{"ifname": "ws1", "rate_mbit": 54, "loss_pct": 0},
                     {"ifname": "ws2", "rate_mbit": 12, "loss_pct": 5}]}"#;

    #[test]
    fn reads_a_medium_with_defaults() {
        let c = parse(GOOD).unwrap();
        assert_eq!((c.queue_frames, c.overhead_us), (100, 0.0));
        assert_eq!(c.ifnames(), ["wap", "ws1", "ws2"]);
    }

    #[test]
    fn names_the_field_that_is_wrong() {
        let e = parse(&GOOD.replace("\"loss_pct\": 5", "\"loss_pct\": 120")).unwrap_err();
        assert!(e.starts_with("stations[1].loss_pct"), "{e}");
        let e = parse(&GOOD.replace("\"rate_mbit\": 12", "\"rate_mbit\": \"x\"")).unwrap_err();
        assert!(e.starts_with("stations[1].rate_mbit"), "{e}");
        let e = parse(&GOOD.replace("\"seed\"", "\"sead\"")).unwrap_err();
        assert!(e.contains("sead"), "{e}");
        let e = parse(&GOOD.replace("ws2", "wap")).unwrap_err();
        assert!(e.contains("\"wap\" is named twice"), "{e}");
    }
}
