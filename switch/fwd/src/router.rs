//! An IPv4 router: longest-prefix match over the configured routes, then what RFC 1812
//! asks of a forwarding router: the TTL lowered (a packet that would leave with TTL 0 is
//! dropped), the header checksum updated, the Ethernet header rewritten (source: the out
//! port's MAC, destination: the next hop's). ARP and packets to the switch's own
//! addresses are left to the kernel of the switch's namespace, which answers them.

use std::net::Ipv4Addr;

use pktio::wire::ethernet::{MacAddr, ETHERTYPE_IPV4};
use pktio::wire::{EthernetFrame, Ipv4Packet};

use crate::config::{self, Config};
use crate::Verdict;

struct Entry {
    network: u32,
    mask: u32,
    port: usize,
    next_hop_mac: MacAddr,
}

pub struct Router {
    /// Longest prefix first: the first match is the longest.
    routes: Vec<Entry>,
    /// Each port's own MAC, by port index.
    macs: Vec<MacAddr>,
    local: Vec<Ipv4Addr>,
}

impl Router {
    /// The router of `config`; `index` turns a port number into its index.
    pub fn new(config: &Config, index: impl Fn(u32) -> usize) -> Router {
        let mut routes: Vec<(u8, Entry)> = config
            .routes
            .iter()
            .map(|r| {
                let (addr, len) = r.prefix;
                let mask = config::mask(len).expect("checked when decoded");
                let entry = Entry {
                    network: u32::from(addr),
                    mask,
                    port: index(r.port),
                    next_hop_mac: r.next_hop_mac,
                };
                (len, entry)
            })
            .collect();
        routes.sort_by_key(|(len, _)| std::cmp::Reverse(*len));
        Router {
            routes: routes.into_iter().map(|(_, e)| e).collect(),
            macs: config.ports.iter().map(|p| p.mac).collect(),
            local: config.local.clone(),
        }
    }

    fn lookup(&self, dst: Ipv4Addr) -> Option<&Entry> {
        let dst = u32::from(dst);
        self.routes.iter().find(|e| dst & e.mask == e.network)
    }

    /// Where the frame that came in on port `in_port` goes, rewritten for it in place.
    pub fn route(&self, in_port: usize, frame: &mut [u8]) -> Verdict {
        let Ok(mut eth) = EthernetFrame::new_checked(&mut *frame) else {
            return Verdict::Drop("runt");
        };
        if eth.dst_addr() != self.macs[in_port] {
            return Verdict::Drop("not_for_us"); // broadcast (ARP) and others: the kernel's
        }
        if eth.ethertype() != ETHERTYPE_IPV4 {
            return Verdict::Drop("not_ipv4");
        }
        let Ok(mut ip) = Ipv4Packet::new_checked(eth.payload_mut()) else {
            return Verdict::Drop("bad_ipv4");
        };
        if !ip.verify_checksum() {
            return Verdict::Drop("bad_ipv4");
        }
        let dst = Ipv4Addr::from(ip.dst_addr());
        if self.local.contains(&dst) {
            return Verdict::Drop("local");
        }
        let Some(route) = self.lookup(dst) else {
            return Verdict::Drop("no_route");
        };
        if ip.ttl() <= 1 {
            return Verdict::Drop("ttl_expired");
        }
        ip.decrement_ttl();
        eth.set_src_addr(self.macs[route.port]);
        eth.set_dst_addr(route.next_hop_mac);
        Verdict::Out(route.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"{"switch": "s1", "mode": "router",
        "ports": [{"number": 1, "iface": "a", "mac": "02:00:00:00:01:01"},
                  {"number": 2, "iface": "b", "mac": "02:00:00:00:01:02"}],
        "routes": [{"prefix": "10.0.0.0/8", "port": 2, "next_hop_mac": "02:00:00:00:02:01"},
                   {"prefix": "10.0.1.0/24", "port": 1, "next_hop_mac": "02:00:00:00:00:01"}],
        "local": ["10.0.1.254"]}"#;

    fn router() -> Router {
        let config: Config = serde_json::from_str(CONFIG).unwrap();
        Router::new(&config, |n| n as usize - 1)
    }

    /// A UDP packet to `dst` with `ttl`, sent to port 1's MAC, its IPv4 checksum right.
    fn packet(dst: [u8; 4], ttl: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 28];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 1, 1]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f[14] = 0x45;
        f[16..18].copy_from_slice(&28u16.to_be_bytes());
        f[22] = ttl;
        f[23] = 17;
        f[26..30].copy_from_slice(&[10, 0, 9, 1]);
        f[30..34].copy_from_slice(&dst);
        Ipv4Packet::new_checked(&mut f[14..])
            .unwrap()
            .fill_checksum();
        f
    }

    #[test]
    fn longest_prefix_wins_and_the_packet_is_rewritten() {
        let r = router();
        let mut p = packet([10, 0, 1, 1], 64);
        assert_eq!(r.route(0, &mut p), Verdict::Out(0));
        let eth = EthernetFrame::new_checked(&p[..]).unwrap();
        assert_eq!(eth.src_addr(), [2, 0, 0, 0, 1, 1]);
        assert_eq!(eth.dst_addr(), [2, 0, 0, 0, 0, 1]);
        let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
        assert_eq!(ip.ttl(), 63);
        assert!(ip.verify_checksum());
        let mut far = packet([10, 7, 0, 1], 64);
        assert_eq!(r.route(0, &mut far), Verdict::Out(1));
        assert_eq!(&far[6..12], &[2, 0, 0, 0, 1, 2]);
    }

    #[test]
    fn drops_what_it_must_not_forward() {
        let r = router();
        assert_eq!(
            r.route(0, &mut packet([10, 0, 1, 1], 1)),
            Verdict::Drop("ttl_expired")
        );
        assert_eq!(
            r.route(0, &mut packet([192, 168, 0, 1], 64)),
            Verdict::Drop("no_route")
        );
        assert_eq!(
            r.route(0, &mut packet([10, 0, 1, 254], 64)),
            Verdict::Drop("local")
        );
        assert_eq!(
            r.route(1, &mut packet([10, 0, 1, 1], 64)),
            Verdict::Drop("not_for_us")
        );
        let mut bad = packet([10, 0, 1, 1], 64);
        bad[24] ^= 1; // checksum
        assert_eq!(r.route(0, &mut bad), Verdict::Drop("bad_ipv4"));
    }
}
