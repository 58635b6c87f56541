//! The SIOCETHTOOL commands the ports use: TSO on or off (port.rs joins segments only while
//! it is on) and veth's statistics of the frames it took through XDP (`XmitCounter`, which
//! settles each XDP call: xdp/tx.rs).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::sys;

/// ethtool's "get TCP segmentation offload" command (linux/ethtool.h).
const ETHTOOL_GTSO: u32 = 0x1e;

/// Whether the interface has TCP segmentation offload on (false if that cannot be read).
pub fn tso(fd: RawFd, name: &str) -> bool {
    sys::ethtool_value(fd, name, ETHTOOL_GTSO).is_ok_and(|on| on != 0)
}

/// How many frames an interface (a veth) took through ndo_xdp_xmit: the sum of its
/// `tx_queue_N_xdp_xmit` statistics (`ethtool -S`), read with one SIOCETHTOOL.
pub struct XmitCounter {
    fd: OwnedFd,
    name: String,
    /// Where the `tx_queue_N_xdp_xmit` values sit among the interface's statistics.
    at: Vec<usize>,
    /// The GSTATS buffer: the command word, then the values.
    values: Vec<u64>,
}

impl XmitCounter {
    pub fn open(iface: &str) -> io::Result<XmitCounter> {
        let fd = sys::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0)?;
        let raw = fd.as_raw_fd();
        let n = sys::ethtool_stats_count(raw, iface)?;
        let names = sys::ethtool_stat_names(raw, iface, n)?;
        let at: Vec<usize> = names
            .chunks(sys::ETH_GSTRING_LEN)
            .enumerate()
            .filter(|(_, name)| {
                let name = name.split(|&b| b == 0).next().unwrap_or(&[]);
                name.starts_with(b"tx_queue_") && name.ends_with(b"_xdp_xmit")
            })
            .map(|(i, _)| i)
            .collect();
        if at.is_empty() {
            return Err(io::Error::other(
                "no tx_queue_N_xdp_xmit statistics (not a veth?)",
            ));
        }
        Ok(XmitCounter {
            fd,
            name: iface.to_string(),
            at,
            values: sys::ethtool_stats_buffer(n),
        })
    }

    /// The count now (None if unreadable).
    pub fn read(&mut self) -> Option<u64> {
        sys::ethtool_stats(self.fd.as_raw_fd(), &self.name, &mut self.values).ok()?;
        Some(self.at.iter().map(|&i| self.values[1 + i]).sum())
    }
}
