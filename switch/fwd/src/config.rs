//! The forwarder's configuration file (JSON, written by dplab's `userspace` plane), decoded
//! with serde's derive into typed structs, then checked once for what types cannot say
//! (unique ports, routes through known ports, routes only when routing).
//!
//! ```json
//! {"switch": "s1", "mode": "router",
//!  "ports": [{"number": 1, "iface": "s1-eth1", "mac": "02:..."}],
//!  "routes": [{"prefix": "10.0.1.0/24", "port": 1, "next_hop_mac": "02:00:00:00:00:01"}],
//!  "local": ["10.0.1.254"]}
//! ```
//!
//! A bridge may also take `"vlan": {"vid": 100, "access": [1]}` (802.1Q tagging: the
//! listed ports face hosts, the others are trunks) and either mode `"extra_lookups": 40`
//! (the complex pipeline's tables every packet is looked up in).

use std::collections::HashSet;
use std::net::Ipv4Addr;

use pktio::wire::ethernet::MacAddr;
use serde::{Deserialize, Deserializer};

#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// A learning bridge: frames go by destination MAC, unknown ones are flooded.
    Bridge,
    /// A router: IPv4 packets go by longest-prefix match, MACs rewritten, TTL lowered.
    Router,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The switch's name, for messages.
    pub switch: String,
    pub mode: Mode,
    /// The ports that forward (a bridge's ports off its spanning tree are left out).
    pub ports: Vec<PortConfig>,
    #[serde(default)]
    pub routes: Vec<Route>,
    /// Addresses of this switch's own interfaces: packets to them are the kernel's (ARP
    /// and ping of the gateway), not forwarded.
    #[serde(default)]
    pub local: Vec<Ipv4Addr>,
    /// 802.1Q tagging at the edges (a bridge only).
    #[serde(default)]
    pub vlan: Option<Vlan>,
    /// Match-action tables each packet goes through before it is forwarded.
    #[serde(default)]
    pub extra_lookups: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vlan {
    /// The VLAN id frames cross the trunks with.
    pub vid: u16,
    /// The ports facing hosts: frames come in there untagged and leave untagged.
    pub access: Vec<u32>,
}

/// 802.1Q's usable VLAN ids (0 means none, 4095 is reserved).
const VIDS: std::ops::RangeInclusive<u16> = 1..=4094;
/// More tables than any pipeline study asks for: a typo, not a workload.
const MAX_EXTRA_LOOKUPS: usize = 4096;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortConfig {
    pub number: u32,
    pub iface: String,
    /// The interface's own MAC: a router's source address on this port.
    #[serde(deserialize_with = "mac")]
    pub mac: MacAddr,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    #[serde(deserialize_with = "prefix")]
    pub prefix: (Ipv4Addr, u8),
    pub port: u32,
    /// Where the packet goes on that port: the next router's port, or the host itself.
    #[serde(deserialize_with = "mac")]
    pub next_hop_mac: MacAddr,
}

/// A MAC address written `aa:bb:cc:dd:ee:ff`.
fn mac<'de, D: Deserializer<'de>>(d: D) -> Result<MacAddr, D::Error> {
    let text = String::deserialize(d)?;
    parse_mac(&text).ok_or_else(|| serde::de::Error::custom(format!("bad MAC address {text:?}")))
}

pub fn parse_mac(text: &str) -> Option<MacAddr> {
    let bytes: Vec<u8> = text
        .split(':')
        .map(|b| {
            (b.len() == 2)
                .then(|| u8::from_str_radix(b, 16).ok())
                .flatten()
        })
        .collect::<Option<_>>()?;
    bytes.try_into().ok()
}

/// An IPv4 prefix written `a.b.c.d/len`, its host bits zero.
fn prefix<'de, D: Deserializer<'de>>(d: D) -> Result<(Ipv4Addr, u8), D::Error> {
    let text = String::deserialize(d)?;
    parse_prefix(&text).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "bad prefix {text:?} (want a.b.c.d/len, host bits 0)"
        ))
    })
}

pub fn parse_prefix(text: &str) -> Option<(Ipv4Addr, u8)> {
    let (addr, len) = text.split_once('/')?;
    let (addr, len): (Ipv4Addr, u8) = (addr.parse().ok()?, len.parse().ok()?);
    let host_bits = u32::from(addr) & !mask(len)?;
    (host_bits == 0).then_some((addr, len))
}

/// The netmask of a prefix of `len` bits (None beyond 32).
pub fn mask(len: u8) -> Option<u32> {
    match len {
        0 => Some(0),
        1..=32 => Some(u32::MAX << (32 - len)),
        _ => None,
    }
}

impl dplab_tool::Config for Config {
    fn check(&self) -> Result<(), String> {
        if self.ports.is_empty() {
            return Err("ports: none given".into());
        }
        let mut numbers = HashSet::new();
        for (i, p) in self.ports.iter().enumerate() {
            if !numbers.insert(p.number) {
                return Err(format!("ports[{i}].number: port {} given twice", p.number));
            }
        }
        if self.mode == Mode::Bridge && !self.routes.is_empty() {
            return Err("routes: a bridge takes none (mode is \"bridge\")".into());
        }
        for (i, r) in self.routes.iter().enumerate() {
            if !numbers.contains(&r.port) {
                return Err(format!("routes[{i}].port: no port {}", r.port));
            }
        }
        if self.extra_lookups > MAX_EXTRA_LOOKUPS {
            return Err(format!(
                "extra_lookups: {} is more than {MAX_EXTRA_LOOKUPS}",
                self.extra_lookups
            ));
        }
        match &self.vlan {
            Some(vlan) => check_vlan(vlan, self.mode, &numbers),
            None => Ok(()),
        }
    }
}

fn check_vlan(vlan: &Vlan, mode: Mode, numbers: &HashSet<u32>) -> Result<(), String> {
    if mode != Mode::Bridge {
        return Err("vlan: tagging is a bridge's (mode is \"router\")".into());
    }
    if !VIDS.contains(&vlan.vid) {
        return Err(format!("vlan.vid: {} is not a VLAN id 1..4094", vlan.vid));
    }
    match vlan.access.iter().find(|p| !numbers.contains(p)) {
        Some(p) => Err(format!("vlan.access: no port {p}")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(text: &str) -> Result<Config, String> {
        dplab_tool::parse(text)
    }

    const PORT: &str = r#"{"number": 1, "iface": "s1-eth1", "mac": "02:00:00:00:00:01"}"#;

    #[test]
    fn reads_a_router_config() {
        let text = format!(
            r#"{{"switch": "s1", "mode": "router", "ports": [{PORT}],
                "routes": [{{"prefix": "10.0.1.0/24", "port": 1,
                             "next_hop_mac": "02:00:00:00:00:01"}}],
                "local": ["10.0.1.254"]}}"#
        );
        let config = decode(&text).unwrap();
        assert_eq!(config.mode, Mode::Router);
        assert_eq!(config.routes[0].prefix, (Ipv4Addr::new(10, 0, 1, 0), 24));
        assert_eq!(config.ports[0].mac, [2, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn names_what_is_wrong() {
        let cases = [
            (
                r#"{"switch": "s1", "mode": "hub", "ports": []}"#,
                "unknown variant `hub`",
            ),
            (
                r#"{"switch": "s1", "mode": "bridge", "ports": [], "x": 1}"#,
                "unknown field `x`",
            ),
            (
                r#"{"switch": "s1", "mode": "bridge", "ports": []}"#,
                "ports: none given",
            ),
        ];
        for (text, message) in cases {
            let e = decode(text).unwrap_err();
            assert!(e.contains(message), "{e}");
        }
        let bad_route = format!(
            r#"{{"switch": "s1", "mode": "router", "ports": [{PORT}],
                "routes": [{{"prefix": "10.0.1.1/24", "port": 1, "next_hop_mac": "02:00:00:00:00:01"}}]}}"#
        );
        assert!(decode(&bad_route).unwrap_err().contains("host bits 0"));
        let no_port = bad_route
            .replace("10.0.1.1/24", "10.0.1.0/24")
            .replace("\"port\": 1", "\"port\": 7");
        assert!(decode(&no_port)
            .unwrap_err()
            .contains("routes[0].port: no port 7"));
        let bad_mac = format!(
            r#"{{"switch": "s1", "mode": "bridge", "ports": [{}]}}"#,
            PORT.replace("02:00", "2:000")
        );
        assert!(decode(&bad_mac).unwrap_err().contains("bad MAC address"));
    }

    #[test]
    fn reads_and_checks_tagging_and_lookups() {
        let bridge = |extra: &str| {
            format!(r#"{{"switch": "s1", "mode": "bridge", "ports": [{PORT}], {extra}}}"#)
        };
        let config = decode(&bridge(
            r#""vlan": {"vid": 100, "access": [1]}, "extra_lookups": 40"#,
        ))
        .unwrap();
        assert_eq!(config.vlan.map(|v| (v.vid, v.access)), Some((100, vec![1])));
        assert_eq!(config.extra_lookups, 40);
        let cases = [
            (r#""vlan": {"vid": 4095, "access": []}"#, "vlan.vid: 4095"),
            (
                r#""vlan": {"vid": 1, "access": [2]}"#,
                "vlan.access: no port 2",
            ),
            (r#""extra_lookups": 5000"#, "extra_lookups: 5000"),
        ];
        for (extra, message) in cases {
            let e = decode(&bridge(extra)).unwrap_err();
            assert!(e.contains(message), "{e}");
        }
        let router = bridge(r#""vlan": {"vid": 1, "access": []}"#).replace("bridge", "router");
        assert!(decode(&router)
            .unwrap_err()
            .contains("tagging is a bridge's"));
    }
}
