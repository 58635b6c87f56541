//! A learning bridge (IEEE 802.1D forwarding without the spanning tree, which the plane
//! computes up front by leaving the ports off the tree out): the source MAC of every frame
//! teaches which port reaches it; a frame to a known unicast MAC goes out of that port
//! alone, any other (broadcast, multicast, unknown) to every port but the one it came in.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use pktio::wire::ethernet::{is_group, MacAddr};
use pktio::wire::EthernetFrame;

use crate::Verdict;

/// How long a learned address stays without frames from it (802.1D's default ageing time).
const AGEING: Duration = Duration::from_secs(300);

#[derive(Default)]
pub struct Bridge {
    /// MAC -> (port index, when last seen there).
    table: HashMap<MacAddr, (usize, Instant)>,
}

impl Bridge {
    /// Where the frame that came in on port `in_port` goes.
    pub fn decide(&mut self, in_port: usize, frame: &[u8], now: Instant) -> Verdict {
        let Ok(eth) = EthernetFrame::new_checked(frame) else {
            return Verdict::Drop("runt");
        };
        let src = eth.src_addr();
        if !is_group(&src) {
            self.table.insert(src, (in_port, now));
        }
        let dst = eth.dst_addr();
        match self.table.get(&dst) {
            Some(&(port, seen)) if !is_group(&dst) && now.duration_since(seen) < AGEING => {
                if port == in_port {
                    Verdict::Drop("same_port") // the destination is behind the port it came from
                } else {
                    Verdict::Out(port)
                }
            }
            _ => Verdict::Flood,
        }
    }

    /// Addresses learned so far.
    pub fn learned(&self) -> usize {
        self.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(dst: MacAddr, src: MacAddr) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&src);
        f
    }

    #[test]
    fn learns_floods_unknown_and_forwards_known() {
        let (a, b) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        let mut bridge = Bridge::default();
        let now = Instant::now();
        assert_eq!(bridge.decide(0, &frame(b, a), now), Verdict::Flood);
        assert_eq!(bridge.decide(1, &frame(a, b), now), Verdict::Out(0));
        assert_eq!(bridge.decide(0, &frame(b, a), now), Verdict::Out(1));
        assert_eq!(bridge.decide(0, &frame([0xff; 6], a), now), Verdict::Flood);
        assert_eq!(
            bridge.decide(1, &frame(b, a), now),
            Verdict::Drop("same_port")
        );
        assert_eq!(bridge.decide(1, &frame(a, b), now + AGEING), Verdict::Flood);
        assert_eq!(
            bridge.decide(0, &frame(a, a)[..13], now),
            Verdict::Drop("runt")
        );
    }
}
