//! 802.1Q tagging at the edges of a bridge (the VLAN workload): a frame from a host comes
//! in untagged on an access port and gets the tag pushed; switches pass it tagged over their
//! trunk ports; the port towards the destination host pops it. As an access port of an
//! 802.1Q bridge does, a tagged frame from a host, an untagged one on a trunk or one of
//! another VLAN is dropped.

use pktio::wire::ethernet::{pop_vlan, push_vlan, ETHERTYPE_VLAN};
use pktio::wire::{EthernetFrame, VlanTag};

pub struct Tagging {
    vid: u16,
    /// By port index: whether the port faces a host.
    access: Vec<bool>,
}

impl Tagging {
    /// Tagging with VLAN id `vid` (priority 0); `access[i]`: port index i faces a host.
    pub fn new(vid: u16, access: Vec<bool>) -> Tagging {
        Tagging { vid, access }
    }

    /// Admits the frame in `buf` that came in on port index `in_port`, tagged from here on;
    /// the drop counter's name when it is not admitted.
    pub fn ingress(&self, in_port: usize, buf: &mut Vec<u8>) -> Result<(), &'static str> {
        let frame = EthernetFrame::new_checked(&buf[..]).map_err(|_| "runt")?;
        let tagged = frame.ethertype() == ETHERTYPE_VLAN;
        if self.access[in_port] {
            if tagged {
                return Err("tagged_at_access");
            }
            return push_vlan(buf, self.vid).map_err(|_| "runt");
        }
        if !tagged {
            return Err("untagged_on_trunk");
        }
        match VlanTag::new_checked(frame.payload()) {
            Ok(tag) if tag.vid() == self.vid => Ok(()),
            Ok(_) => Err("other_vlan"),
            Err(_) => Err("runt"),
        }
    }

    /// Readies an admitted frame to leave by port index `out_port`: untagged towards a host.
    pub fn egress(&self, out_port: usize, buf: &mut Vec<u8>) {
        if self.access[out_port] {
            pop_vlan(buf).expect("every admitted frame carries the tag");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pktio::wire::ethernet::ETHERTYPE_IPV4;

    fn untagged() -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f
    }

    #[test]
    fn tags_at_access_ports_and_checks_trunks() {
        let t = Tagging::new(100, vec![true, false]);
        let mut f = untagged();
        assert_eq!(t.ingress(1, &mut f.clone()), Err("untagged_on_trunk"));
        assert_eq!(t.ingress(0, &mut f), Ok(()));
        let tag = VlanTag::new_checked(EthernetFrame::new_checked(&f[..]).unwrap().payload())
            .map(|tag| tag.vid());
        assert_eq!(tag, Ok(100));
        assert_eq!(t.ingress(0, &mut f.clone()), Err("tagged_at_access"));
        assert_eq!(t.ingress(1, &mut f.clone()), Ok(()));
        let mut other = untagged();
        Tagging::new(7, vec![true]).ingress(0, &mut other).unwrap();
        assert_eq!(t.ingress(1, &mut other), Err("other_vlan"));
        t.egress(1, &mut f);
        assert_eq!(f.len(), 64);
        t.egress(0, &mut f);
        assert_eq!(f, untagged());
    }
}
