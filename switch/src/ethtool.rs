//! The interface ioctls of the ports in one place: an `ifreq` naming an interface, and the
//! SIOCETHTOOL commands they use: TSO on or off (ports.rs joins segments only while it is
//! on) and veth's statistics of the frames it took through XDP (`XmitCounter`, which
//! settles each XDP call: xdptx.rs).

use std::io;
use std::os::fd::RawFd;

/// ethtool's "get TCP segmentation offload" command (linux/ethtool.h).
const ETHTOOL_GTSO: u32 = 0x1e;

/// An interface request naming interface `name`.
pub fn ifreq(name: &str) -> libc::ifreq {
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    req
}

/// One ethtool command on interface `name`: `data` is its struct, the command first.
fn ethtool(fd: RawFd, name: &str, data: *mut libc::c_char) -> io::Result<()> {
    let mut req = ifreq(name);
    req.ifr_ifru.ifru_data = data;
    if unsafe { libc::ioctl(fd, libc::SIOCETHTOOL, &mut req) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the interface has TCP segmentation offload on (false if that cannot be read).
pub fn tso(fd: RawFd, name: &str) -> bool {
    let mut value = [ETHTOOL_GTSO, 0u32]; // struct ethtool_value: cmd, data
    let ok = ethtool(fd, name, value.as_mut_ptr() as *mut libc::c_char).is_ok();
    ok && value[1] != 0
}

/// How many frames an interface (a veth) took through ndo_xdp_xmit: the sum of its
/// `tx_queue_N_xdp_xmit` statistics (`ethtool -S`), read with one SIOCETHTOOL.
pub struct XmitCounter {
    fd: RawFd,
    name: String,
    /// Where the `tx_queue_N_xdp_xmit` values sit among the interface's statistics.
    at: Vec<usize>,
    values: Vec<u64>,
}

const ETHTOOL_GDRVINFO: u32 = 0x03;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSTATS: u32 = 0x1d;
const ETH_SS_STATS: u32 = 1;
const ETH_GSTRING_LEN: usize = 32;
/// struct ethtool_drvinfo: its size, and where n_stats sits in it.
const DRVINFO_LEN: usize = 196;
const DRVINFO_N_STATS: usize = 180;

impl XmitCounter {
    pub fn open(iface: &str) -> io::Result<XmitCounter> {
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut counter = XmitCounter {
            fd,
            name: iface.to_string(),
            at: Vec::new(),
            values: Vec::new(),
        };
        let mut info = [0u8; DRVINFO_LEN];
        info[..4].copy_from_slice(&ETHTOOL_GDRVINFO.to_ne_bytes());
        counter.ethtool(&mut info)?;
        let n = u32::from_ne_bytes(
            info[DRVINFO_N_STATS..DRVINFO_N_STATS + 4]
                .try_into()
                .unwrap(),
        );
        let mut names = vec![0u8; 12 + n as usize * ETH_GSTRING_LEN];
        names[..4].copy_from_slice(&ETHTOOL_GSTRINGS.to_ne_bytes());
        names[4..8].copy_from_slice(&ETH_SS_STATS.to_ne_bytes());
        names[8..12].copy_from_slice(&n.to_ne_bytes());
        counter.ethtool(&mut names)?;
        counter.at = names[12..]
            .chunks(ETH_GSTRING_LEN)
            .enumerate()
            .filter(|(_, name)| {
                let name = name.split(|&b| b == 0).next().unwrap_or(&[]);
                name.starts_with(b"tx_queue_") && name.ends_with(b"_xdp_xmit")
            })
            .map(|(i, _)| i)
            .collect();
        if counter.at.is_empty() {
            return Err(io::Error::other(
                "no tx_queue_N_xdp_xmit statistics (not a veth?)",
            ));
        }
        counter.values = vec![0; 1 + n as usize]; // cmd and n_stats, then the values
        counter.values[0] = ETHTOOL_GSTATS as u64 | ((n as u64) << 32);
        Ok(counter)
    }

    /// The count now (None if unreadable).
    pub fn read(&mut self) -> Option<u64> {
        let data = self.values.as_mut_ptr() as *mut libc::c_char;
        ethtool(self.fd, &self.name, data).ok()?;
        Some(self.at.iter().map(|&i| self.values[1 + i]).sum())
    }

    fn ethtool(&self, data: &mut [u8]) -> io::Result<()> {
        ethtool(self.fd, &self.name, data.as_mut_ptr() as *mut libc::c_char)
    }
}

impl Drop for XmitCounter {
    fn drop(&mut self) {
        unsafe { libc::close(self.fd) };
    }
}
