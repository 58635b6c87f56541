//! The complex pipeline (study 002's workload complexity): match-action tables every packet
//! is looked up in before it is forwarded, as ACL or counter tables whose one rule matches
//! everything and does nothing but count (dplab.planes.pipeline has the P4 and OVS ones).
//! A table's rule is ternary over the Ethernet header, as the P4 tables' keys are.

use pktio::wire::ethernet::HEADER_LEN;
use pktio::wire::EthernetFrame;

/// The lookup key: destination, source, EtherType.
type Key = [u8; HEADER_LEN];

/// A ternary rule: a key matches when its bits under `mask` equal `value`'s.
struct Rule {
    value: Key,
    mask: Key,
}

impl Rule {
    /// The rule that matches every key (all bits wildcarded).
    fn any() -> Rule {
        Rule {
            value: [0; HEADER_LEN],
            mask: [0; HEADER_LEN],
        }
    }

    fn matches(&self, key: &Key) -> bool {
        key.iter()
            .zip(&self.mask)
            .zip(&self.value)
            .all(|((k, m), v)| k & m == *v)
    }
}

pub struct Lookups {
    tables: Vec<Vec<Rule>>,
    /// Packets each table's rule matched.
    hits: Vec<u64>,
}

impl Lookups {
    /// `n` tables, each with one catch-all rule (none: the plain pipeline).
    pub fn new(n: usize) -> Lookups {
        Lookups {
            tables: (0..n).map(|_| vec![Rule::any()]).collect(),
            hits: vec![0; n],
        }
    }

    /// Looks `frame` up in every table in turn, counting the rule that matched.
    pub fn apply(&mut self, frame: &[u8]) {
        let Ok(eth) = EthernetFrame::new_checked(frame) else {
            return;
        };
        let mut key: Key = [0; HEADER_LEN];
        key[..6].copy_from_slice(&eth.dst_addr());
        key[6..12].copy_from_slice(&eth.src_addr());
        key[12..].copy_from_slice(&eth.ethertype().to_be_bytes());
        for (rules, hits) in self.tables.iter().zip(&mut self.hits) {
            if rules.iter().any(|rule| rule.matches(&key)) {
                *hits += 1;
            }
        }
    }

    /// Each table's matched packets.
    pub fn hits(&self) -> &[u64] {
        &self.hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_counts_every_packet_once() {
        let mut lookups = Lookups::new(40);
        for _ in 0..3 {
            lookups.apply(&[0u8; 60]);
        }
        lookups.apply(&[0u8; 10]); // no Ethernet header: looked up nowhere
        assert_eq!(lookups.hits(), &[3; 40][..]);
        let rule = Rule {
            value: [0; HEADER_LEN],
            mask: [0xff; HEADER_LEN],
        };
        assert!(rule.matches(&[0; HEADER_LEN]) && !rule.matches(&[1; HEADER_LEN]));
        assert!(Lookups::new(0).hits().is_empty());
    }
}
