//! Every `unsafe` of the crate, and of the programs built on it: safe wrappers around the
//! system calls and shared memory that packet I/O needs.
//!
//! Each wrapper checks what the kernel cannot (lengths, bounds, alignment) and says why
//! its `unsafe` block is sound in a `SAFETY:` comment. The rest of the crate and the
//! programs that use it (`#![forbid(unsafe_code)]` outside this module) call only these.
//!
//! File descriptors are passed as `RawFd`: a stale or foreign descriptor makes the kernel
//! act on the wrong file or fail with EBADF, never touch this process's memory. Ownership
//! is `OwnedFd`: closed exactly once, when dropped.

use std::ffi::{CStr, CString};
use std::io::{self, IoSlice};
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::{self, NonNull};

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

/// `rc` (a system call's return) as a count, or the error it signals.
fn count(rc: isize) -> io::Result<usize> {
    usize::try_from(rc).map_err(|_| last_error())
}

/// The descriptor a system call just returned, now owned; or the error it signals.
fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(last_error());
    }
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::other("descriptor out of range"))?;
    // SAFETY: the kernel just made `fd` for this call; nothing else in the process knows
    // it, so the OwnedFd is its only owner and closes it once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

// ---------------------------------------------------------------------------------------
// Sockets

pub fn socket(domain: i32, kind: i32, protocol: i32) -> io::Result<OwnedFd> {
    // SAFETY: socket() takes no pointers.
    owned(unsafe { libc::socket(domain, kind, protocol) } as libc::c_long)
}

/// Sets socket option `opt` of `level` on `fd` to `value`, a plain C value or struct.
pub fn setsockopt<T: Copy>(fd: RawFd, level: i32, opt: i32, value: &T) -> io::Result<()> {
    let len = size_of::<T>() as libc::socklen_t;
    // SAFETY: the kernel reads `len` bytes from `value`, which is a live `T` of that size.
    let rc = unsafe { libc::setsockopt(fd, level, opt, value as *const T as *const _, len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(last_error())
    }
}

/// The counts of packet socket `fd` (PACKET_STATISTICS): packets received and dropped
/// since the last read, which the kernel resets on every read.
pub fn packet_statistics(fd: RawFd) -> io::Result<libc::tpacket_stats> {
    // SAFETY: tpacket_stats is two plain integers; all zeroes is a valid value.
    let mut stats: libc::tpacket_stats = unsafe { zeroed() };
    let mut len = size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `stats`, a live value of that size,
    // and stores the length it wrote in `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            &mut stats as *mut libc::tpacket_stats as *mut _,
            &mut len,
        )
    };
    if rc == 0 {
        Ok(stats)
    } else {
        Err(last_error())
    }
}

/// Takes socket `fd`'s pending error (SO_ERROR, which clears it; 0: none). A packet socket
/// gets ENETDOWN when its interface goes down or away, and polls POLLERR until it is taken.
pub fn take_socket_error(fd: RawFd) -> io::Result<i32> {
    let mut error: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `error`, a live c_int of that size,
    // and stores the length it wrote in `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            &mut error as *mut libc::c_int as *mut _,
            &mut len,
        )
    };
    if rc == 0 {
        Ok(error)
    } else {
        Err(last_error())
    }
}

/// Binds packet socket `fd` to interface `ifindex`, receiving `protocol` (an ETH_P_*
/// number; 0: nothing).
pub fn bind_packet(fd: RawFd, ifindex: i32, protocol: u16) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain data, for which all zero bytes are a valid value.
    let mut addr: libc::sockaddr_ll = unsafe { zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = protocol.to_be();
    addr.sll_ifindex = ifindex;
    bind_to(fd, &addr)
}

/// Binds netlink socket `fd` to a port id the kernel picks, member of the multicast
/// groups in bit mask `groups` (an unbound socket gets no multicast: the kernel skips
/// listeners whose port id is its own, 0).
pub fn bind_netlink(fd: RawFd, groups: u32) -> io::Result<()> {
    // SAFETY: sockaddr_nl is plain data, for which all zero bytes are a valid value.
    let mut addr: libc::sockaddr_nl = unsafe { zeroed() };
    addr.nl_family = libc::AF_NETLINK as u16;
    addr.nl_groups = groups;
    bind_to(fd, &addr)
}

/// Binds `fd` to `addr`, a socket address (`sockaddr_*`) of the socket's family.
fn bind_to<T>(fd: RawFd, addr: &T) -> io::Result<()> {
    let alen = size_of::<T>() as libc::socklen_t;
    let at = addr as *const T as *const libc::sockaddr;
    // SAFETY: the kernel reads `alen` bytes from `addr`, a live value of that size; a
    // family it does not expect there is refused (EINVAL), never read past.
    if unsafe { libc::bind(fd, at, alen) } != 0 {
        return Err(last_error());
    }
    Ok(())
}

/// One `send()` of `data`; the count the kernel took.
pub fn send(fd: RawFd, data: &[u8], flags: i32) -> io::Result<usize> {
    // SAFETY: the kernel reads at most `data.len()` bytes from `data`.
    count(unsafe { libc::send(fd, data.as_ptr() as *const libc::c_void, data.len(), flags) })
}

/// One `recv()` into `buf`; the length of the datagram (which with MSG_TRUNC may exceed
/// `buf.len()`: the kernel still writes no more than `buf` holds).
pub fn recv(fd: RawFd, buf: &mut [u8], flags: i32) -> io::Result<usize> {
    let at = buf.as_mut_ptr() as *mut libc::c_void;
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`, which we borrow
    // mutably for the call.
    count(unsafe { libc::recv(fd, at, buf.len(), flags) })
}

/// One `sendmsg()` on packet socket `fd` of the datagram made of `parts`, in order, to
/// interface `ifindex` (the address names it, so the socket need not be bound to it; its
/// protocol 0 has the kernel read the EtherType from the frame).
pub fn sendmsg_to(fd: RawFd, ifindex: i32, parts: &[IoSlice]) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain data, for which all zero bytes are a valid value.
    let mut addr: libc::sockaddr_ll = unsafe { zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_ifindex = ifindex;
    // SAFETY: msghdr is plain data, for which all zero bytes are a valid value (no
    // control data).
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_name = &mut addr as *mut libc::sockaddr_ll as *mut libc::c_void;
    msg.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // IoSlice is ABI-compatible with struct iovec on Unix (std guarantees it).
    msg.msg_iov = parts.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = parts.len();
    // SAFETY: the kernel only reads `msg` and, through it, `addr` (a live sockaddr_ll of
    // `msg_namelen` bytes) and the `parts`, each of which borrows live memory of its
    // length for the call.
    if unsafe { libc::sendmsg(fd, &msg, 0) } < 0 {
        return Err(last_error());
    }
    Ok(())
}

/// Attaches classic BPF program `insns` to socket `fd` as its filter (SO_ATTACH_FILTER):
/// the kernel runs it on every packet before queueing it; a packet it returns 0 for is
/// not received.
pub fn attach_filter(fd: RawFd, insns: &[libc::sock_filter]) -> io::Result<()> {
    let len = u16::try_from(insns.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "filter too long"))?;
    let prog = libc::sock_fprog {
        len,
        filter: insns.as_ptr() as *mut libc::sock_filter,
    };
    // The kernel copies the `len` instructions `prog` points to during the call (and
    // checks them); `insns` is borrowed for it.
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &prog)
}

/// Waits until one of `fds` has an event it asks for or `timeout_ns` passed; the number of
/// descriptors with events (0: the time passed or the wait was interrupted).
pub fn ppoll(fds: &mut [libc::pollfd], timeout_ns: u64) -> usize {
    let timeout = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    let n = fds.len() as libc::nfds_t;
    // SAFETY: the kernel reads and writes the `n` pollfds of `fds`, borrowed mutably,
    // and reads `timeout`; no signal mask is passed.
    let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), n, &timeout, ptr::null()) };
    usize::try_from(rc).unwrap_or(0)
}

// ---------------------------------------------------------------------------------------
// Interfaces

/// The index of interface `name` in this network namespace (None: there is none).
pub fn if_nametoindex(name: &str) -> Option<u32> {
    let cname = CString::new(name).ok()?;
    // SAFETY: `cname` is a NUL-terminated string the call only reads.
    match unsafe { libc::if_nametoindex(cname.as_ptr()) } {
        0 => None,
        index => Some(index),
    }
}

/// An interface request naming interface `name` (cut to IFNAMSIZ - 1 bytes).
fn ifreq(name: &str) -> libc::ifreq {
    // SAFETY: ifreq is plain data (a name and a union of integers and pointers), for which
    // all zero bytes are a valid value.
    let mut req: libc::ifreq = unsafe { zeroed() };
    let room = req.ifr_name.len() - 1; // the name stays NUL-terminated
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes().take(room)) {
        *dst = src as libc::c_char;
    }
    req
}

/// The MTU of interface `name`, asked on socket `fd`.
pub fn interface_mtu(fd: RawFd, name: &str) -> io::Result<usize> {
    let mut req = ifreq(name);
    // SAFETY: SIOCGIFMTU reads the name from and writes an int into `req`, a live ifreq.
    if unsafe { libc::ioctl(fd, libc::SIOCGIFMTU, &mut req) } != 0 {
        return Err(last_error());
    }
    // SAFETY: SIOCGIFMTU filled the union's `ifru_mtu` member; every int is valid.
    Ok(unsafe { req.ifr_ifru.ifru_mtu } as usize)
}

/// The flags (IFF_*) of interface `name`, asked on socket `fd`.
pub fn interface_flags(fd: RawFd, name: &str) -> io::Result<i32> {
    let mut req = ifreq(name);
    // SAFETY: SIOCGIFFLAGS reads the name from and writes a short into `req`.
    if unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut req) } != 0 {
        return Err(last_error());
    }
    // SAFETY: SIOCGIFFLAGS filled the union's `ifru_flags` member; every short is valid.
    Ok(unsafe { req.ifr_ifru.ifru_flags } as i32)
}

/// One SIOCETHTOOL command on interface `name`: `data` holds its struct, the command
/// number first, and must be as long as the kernel writes for it (the callers below).
fn ethtool(fd: RawFd, name: &str, data: &mut [u8]) -> io::Result<()> {
    let mut req = ifreq(name);
    req.ifr_ifru.ifru_data = data.as_mut_ptr() as *mut libc::c_char;
    // SAFETY: the kernel reads the name from `req` and the command's struct through
    // `ifru_data`, and writes no more of it than the command's size, which each caller
    // below gives room for in `data` (borrowed mutably for the call).
    if unsafe { libc::ioctl(fd, libc::SIOCETHTOOL, &mut req) } != 0 {
        return Err(last_error());
    }
    Ok(())
}

/// ethtool's GTSO and the like (struct ethtool_value: cmd, data): the value read.
pub fn ethtool_value(fd: RawFd, name: &str, cmd: u32) -> io::Result<u32> {
    let mut value = [0u8; 8];
    value[..4].copy_from_slice(&cmd.to_ne_bytes());
    ethtool(fd, name, &mut value)?;
    Ok(u32::from_ne_bytes(value[4..].try_into().expect("4 bytes")))
}

const ETHTOOL_GDRVINFO: u32 = 0x03;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSTATS: u32 = 0x1d;
pub const ETH_GSTRING_LEN: usize = 32;
/// struct ethtool_drvinfo: its size, and where n_stats sits in it.
const DRVINFO_LEN: usize = 196;
const DRVINFO_N_STATS: usize = 180;
/// Room for statistics beyond the count read before: the kernel writes the device's count
/// *now* (ethtool_get_stats, ethtool_get_strings ignore the caller's), which grows if a
/// veth gains queues (`ethtool -L`) in between. veth has a handful of values per queue.
const STATS_SLACK: usize = 4096;

/// How many statistics (`ethtool -S`) interface `name` has.
pub fn ethtool_stats_count(fd: RawFd, name: &str) -> io::Result<usize> {
    let mut info = [0u8; DRVINFO_LEN];
    info[..4].copy_from_slice(&ETHTOOL_GDRVINFO.to_ne_bytes());
    ethtool(fd, name, &mut info)?;
    let n = &info[DRVINFO_N_STATS..DRVINFO_N_STATS + 4];
    Ok(u32::from_ne_bytes(n.try_into().expect("4 bytes")) as usize)
}

/// The names of the interface's `n` statistics, ETH_GSTRING_LEN bytes each.
pub fn ethtool_stat_names(fd: RawFd, name: &str, n: usize) -> io::Result<Vec<u8>> {
    const ETH_SS_STATS: u32 = 1;
    let mut names = vec![0u8; 12 + (n + STATS_SLACK) * ETH_GSTRING_LEN];
    names[..4].copy_from_slice(&ETHTOOL_GSTRINGS.to_ne_bytes());
    names[4..8].copy_from_slice(&ETH_SS_STATS.to_ne_bytes());
    names[8..12].copy_from_slice(&(n as u32).to_ne_bytes());
    ethtool(fd, name, &mut names)?;
    names.drain(..12);
    names.truncate(n * ETH_GSTRING_LEN);
    Ok(names)
}

/// Buffer for [`ethtool_stats`]: the command word, then room for `n` values and slack.
pub fn ethtool_stats_buffer(n: usize) -> Vec<u64> {
    let mut values = vec![0u64; 1 + n + STATS_SLACK];
    values[0] = ETHTOOL_GSTATS as u64 | ((n as u64) << 32);
    values
}

/// Reads the interface's statistics into `values` (made by [`ethtool_stats_buffer`]):
/// value i is at `values[1 + i]`.
pub fn ethtool_stats(fd: RawFd, name: &str, values: &mut [u64]) -> io::Result<()> {
    let bytes = std::mem::size_of_val(values);
    let data = values.as_mut_ptr() as *mut u8;
    // SAFETY: the u64s of `values` (borrowed mutably) are `bytes` initialised bytes, and a
    // u8 view of them has no alignment need.
    ethtool(fd, name, unsafe {
        std::slice::from_raw_parts_mut(data, bytes)
    })
}

// ---------------------------------------------------------------------------------------
// Shared memory: packet rings and BPF array maps

/// A shared mapping of `len` bytes of a kernel object (a packet ring, a BPF array map),
/// unmapped when dropped. Its bytes are shared with the kernel: the owners of each part
/// take turns by a protocol (a ring frame's status word, a map value written by one side),
/// so accesses are checked for bounds here and the turn-taking is the caller's.
pub struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; nothing in it is tied to the
// thread that made it.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` (offset 0), readable and writable, shared with the kernel.
    pub fn shared(fd: RawFd, len: usize) -> io::Result<Mapping> {
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: a fresh mapping at an address the kernel picks overlaps nothing of ours.
        let map = unsafe { libc::mmap(ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
        if map == libc::MAP_FAILED {
            return Err(last_error());
        }
        let base = NonNull::new(map as *mut u8).ok_or_else(|| io::Error::other("mmap gave 0"))?;
        Ok(Mapping { base, len })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A pointer to a `T` at `at`, checked to lie inside the mapping and be aligned.
    fn at<T>(&self, at: usize) -> *mut T {
        let end = at.checked_add(size_of::<T>());
        assert!(
            end.is_some_and(|end| end <= self.len),
            "outside the mapping"
        );
        assert_eq!(at % std::mem::align_of::<T>(), 0, "misaligned");
        // SAFETY: `at` is inside the mapping (checked above), so the offset stays within
        // one allocation.
        unsafe { self.base.as_ptr().add(at) as *mut T }
    }

    /// The u32 at `at`, read once from memory (the kernel may have written it since).
    pub fn read_u32(&self, at: usize) -> u32 {
        // SAFETY: in bounds and aligned (`Mapping::at`); any bit pattern is a u32.
        unsafe { ptr::read_volatile(self.at::<u32>(at)) }
    }

    /// The u16 at `at`, read once from memory.
    pub fn read_u16(&self, at: usize) -> u16 {
        // SAFETY: in bounds and aligned (`Mapping::at`); any bit pattern is a u16.
        unsafe { ptr::read_volatile(self.at::<u16>(at)) }
    }

    /// The u64 at `at`, read once from memory.
    pub fn read_u64(&self, at: usize) -> u64 {
        // SAFETY: in bounds and aligned (`Mapping::at`); any bit pattern is a u64.
        unsafe { ptr::read_volatile(self.at::<u64>(at)) }
    }

    /// Writes the u32 at `at` to memory at once (the kernel reads it).
    pub fn write_u32(&self, at: usize, value: u32) {
        // SAFETY: in bounds and aligned (`Mapping::at`); a word store the kernel may read
        // at any time, as the ring protocol expects of a status word.
        unsafe { ptr::write_volatile(self.at::<u32>(at), value) }
    }

    /// The `len` bytes at `at`, to read: a part the kernel does not write while the
    /// caller holds its turn (a ring frame the kernel handed over).
    pub fn bytes(&self, at: usize, len: usize) -> &[u8] {
        assert!(
            at.checked_add(len).is_some_and(|end| end <= self.len),
            "outside the mapping"
        );
        // SAFETY: in bounds (checked above); bytes need no alignment, and every value is
        // a valid u8. The kernel leaves this part alone during the caller's turn.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(at), len) }
    }

    /// The `len` bytes at `at`, to write: a part the kernel does not touch during the
    /// caller's turn (a free ring frame, a map value only user space writes).
    pub fn bytes_mut(&mut self, at: usize, len: usize) -> &mut [u8] {
        assert!(
            at.checked_add(len).is_some_and(|end| end <= self.len),
            "outside the mapping"
        );
        // SAFETY: in bounds (checked above); `&mut self` keeps any other slice of this
        // mapping from living at the same time.
        unsafe { std::slice::from_raw_parts_mut(self.base.as_ptr().add(at), len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `Mapping::shared` with this length, and no slice
        // of it can outlive `self`.
        unsafe { libc::munmap(self.base.as_ptr() as *mut libc::c_void, self.len) };
    }
}

// ---------------------------------------------------------------------------------------
// eBPF

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_TEST_RUN: libc::c_long = 10;
const BPF_LINK_CREATE: libc::c_long = 28;

/// The bpf() system call with `attr` as its union bpf_attr (zero where unused).
fn bpf(cmd: libc::c_long, attr: &mut [u64]) -> io::Result<libc::c_long> {
    let size = std::mem::size_of_val(attr);
    // SAFETY: the kernel reads and writes at most `size` bytes of `attr` (borrowed
    // mutably); every pointer the callers put in it points to memory borrowed for the
    // call, of the length they put beside it.
    let rc = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), size) };
    if rc < 0 {
        Err(last_error())
    } else {
        Ok(rc)
    }
}

/// Packs two u32 fields of a bpf_attr into one u64 word (little-endian layout).
fn pair(low: u32, high: u32) -> u64 {
    low as u64 | (high as u64) << 32
}

/// Loads a program of `prog_type` made of the encoded instructions `insns` (GPL); on a
/// verifier error its log is in the message.
pub fn bpf_prog_load(prog_type: u32, insns: &[u64]) -> io::Result<OwnedFd> {
    let license = c"GPL";
    let mut log = vec![0u8; 1 << 16];
    // union bpf_attr for BPF_PROG_LOAD: prog_type, insn_cnt, insns, license, log_level,
    // log_size, log_buf, the rest 0.
    let mut attr = [0u64; 16];
    attr[0] = pair(prog_type, insns.len() as u32);
    attr[1] = insns.as_ptr() as u64;
    attr[2] = license.as_ptr() as u64;
    attr[3] = pair(1, log.len() as u32);
    attr[4] = log.as_mut_ptr() as u64;
    bpf(BPF_PROG_LOAD, &mut attr).and_then(owned).map_err(|e| {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        let why = String::from_utf8_lossy(&log[..end]);
        io::Error::new(e.kind(), format!("{e}: {}", why.trim()))
    })
}

/// A BPF array map of `entries` values of `value_size` bytes, with `flags`.
pub fn bpf_array_create(value_size: u32, entries: u32, flags: u32) -> io::Result<OwnedFd> {
    const BPF_MAP_TYPE_ARRAY: u32 = 2;
    // union bpf_attr for BPF_MAP_CREATE: map_type, key_size, value_size, max_entries,
    // map_flags.
    let mut attr = [0u64; 9];
    attr[0] = pair(BPF_MAP_TYPE_ARRAY, 4);
    attr[1] = pair(value_size, entries);
    attr[2] = pair(flags, 0);
    owned(bpf(BPF_MAP_CREATE, &mut attr)?)
}

/// BPF_PROG_TEST_RUN of XDP program `prog_fd` on `frame`, `repeat` times, with `flags`
/// and `batch` (live-frame mode).
pub fn bpf_test_run(
    prog_fd: RawFd,
    frame: &[u8],
    repeat: u32,
    flags: u32,
    batch: u32,
) -> io::Result<()> {
    // union bpf_attr for BPF_PROG_TEST_RUN (the `test` member): prog_fd, data_size_in,
    // data_in, repeat, flags, batch_size.
    let mut attr = [0u64; 10];
    attr[0] = pair(prog_fd as u32, 0);
    attr[1] = pair(frame.len() as u32, 0);
    attr[2] = frame.as_ptr() as u64;
    attr[4] = pair(repeat, 0);
    attr[8] = pair(flags, 0);
    attr[9] = pair(batch, 0);
    bpf(BPF_PROG_TEST_RUN, &mut attr).map(|_| ())
}

/// Attaches program `prog_fd` to interface `ifindex` (`attach_type`, `flags`); the link
/// holds it there until closed.
pub fn bpf_link_create(
    prog_fd: RawFd,
    ifindex: u32,
    attach_type: u32,
    flags: u32,
) -> io::Result<OwnedFd> {
    // union bpf_attr for BPF_LINK_CREATE: prog_fd, target_ifindex, attach_type, flags.
    let mut attr = [0u64; 8];
    attr[0] = pair(prog_fd as u32, ifindex);
    attr[1] = pair(attach_type, flags);
    owned(bpf(BPF_LINK_CREATE, &mut attr)?)
}

/// perf_event_open(attr, pid -1, cpu 0, no group, `flags`): `attr` is a whole struct
/// perf_event_attr, its size in its `size` field.
pub fn perf_event_open(attr: &[u8], flags: libc::c_ulong) -> io::Result<OwnedFd> {
    let size = attr
        .get(4..8)
        .map(|s| u32::from_ne_bytes(s.try_into().expect("4 bytes")));
    if size != Some(attr.len() as u32) {
        return Err(io::Error::other(
            "perf_event_attr: size field does not match",
        ));
    }
    // SAFETY: the kernel reads `size` bytes of `attr`, which is that long (checked above).
    let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, attr.as_ptr(), -1, 0, -1, flags) };
    owned(fd)
}

/// An ioctl whose argument is an integer, not a pointer (PERF_EVENT_IOC_SET_BPF, _ENABLE).
pub fn ioctl_int(fd: RawFd, request: libc::c_ulong, arg: libc::c_int) -> io::Result<()> {
    // SAFETY: the requests callers pass take an integer argument: no memory is touched.
    if unsafe { libc::ioctl(fd, request as _, arg) } < 0 {
        return Err(last_error());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Detached mounts (reading tracefs without touching any mount namespace)

/// A new instance of file system `fstype` (its source named the same), mounted nowhere
/// (fsopen, fsconfig, fsmount): no mount namespace sees it, none is copied, and it goes
/// when the returned descriptor closes. Its files are reached relative to the descriptor.
pub fn detached_mount(fstype: &CStr) -> io::Result<OwnedFd> {
    const FSOPEN_CLOEXEC: libc::c_uint = 1;
    const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
    const FSMOUNT_CLOEXEC: libc::c_uint = 1;
    // SAFETY: fstype is a NUL-terminated string; the call takes nothing else by pointer.
    let fs = owned(unsafe { libc::syscall(libc::SYS_fsopen, fstype.as_ptr(), FSOPEN_CLOEXEC) })?;
    let null = ptr::null::<libc::c_char>();
    // SAFETY: CMD_CREATE takes no key, value or aux: null pointers and 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            null,
            null,
            0,
        )
    };
    if rc < 0 {
        return Err(last_error());
    }
    // SAFETY: fsmount takes the file system context's descriptor and two flag words.
    owned(unsafe { libc::syscall(libc::SYS_fsmount, fs.as_raw_fd(), FSMOUNT_CLOEXEC, 0) })
}

// ---------------------------------------------------------------------------------------
// Threads, clocks, scheduling, signals

pub fn gettid() -> u32 {
    // SAFETY: gettid() takes nothing and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// Lets any other task waiting for this core run first.
pub fn sched_yield() {
    // SAFETY: sched_yield() takes nothing.
    unsafe { libc::sched_yield() };
}

/// struct sched_attr, its first version (the libc crate has no binding).
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// Asks for a `slice_ns` scheduler slice under the normal policy for the calling thread;
/// false if the kernel refused (before 6.12 it ignores the slice).
pub fn request_slice(slice_ns: u64) -> bool {
    let attr = SchedAttr {
        size: size_of::<SchedAttr>() as u32,
        policy: libc::SCHED_OTHER as u32,
        runtime: slice_ns,
        ..SchedAttr::default()
    };
    // SAFETY: the kernel reads `attr.size` bytes of `attr`, a live SchedAttr of that size.
    unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) == 0 }
}

/// Sets the calling thread's timer slack (how late the kernel may wake it).
pub fn set_timer_slack(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong) };
}

/// The time of `clock` in ns.
pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the call writes one timespec into `ts`, borrowed mutably.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The core the calling thread runs on (None if unknown).
pub fn current_core() -> Option<usize> {
    // SAFETY: sched_getcpu() takes nothing.
    usize::try_from(unsafe { libc::sched_getcpu() }).ok()
}

/// The cores the calling thread may run on (empty if unknown).
pub fn affinity() -> Vec<usize> {
    // SAFETY: cpu_set_t is a plain bit array, for which all zero bytes are the empty set.
    let mut set: libc::cpu_set_t = unsafe { zeroed() };
    let size = size_of::<libc::cpu_set_t>();
    // SAFETY: the kernel writes at most `size` bytes into `set`, borrowed mutably.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET reads bit `c` of `set`, and c < CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// Lets the calling thread run only on `cores`; false if the kernel refused.
pub fn set_affinity(cores: &[usize]) -> bool {
    // SAFETY: as in `affinity`: all zero bytes are the empty set.
    let mut set: libc::cpu_set_t = unsafe { zeroed() };
    for &c in cores.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: CPU_SET writes bit `c` of `set`, and c < CPU_SETSIZE (filtered).
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    let size = size_of::<libc::cpu_set_t>();
    // SAFETY: the kernel reads `size` bytes of `set`.
    unsafe { libc::sched_setaffinity(0, size, &set) == 0 }
}

/// 8 random bytes from the kernel (0 if it has none yet).
pub fn random_u64() -> u64 {
    let mut seed = 0u64;
    let at = &mut seed as *mut u64 as *mut libc::c_void;
    // SAFETY: the kernel writes at most 8 bytes into `seed`.
    unsafe { libc::getrandom(at, 8, 0) };
    seed
}

/// A non-blocking eventfd (a counter one thread bumps to wake another).
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd() takes no pointers.
    owned(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) } as libc::c_long)
}

/// Adds one to eventfd `fd`.
pub fn eventfd_signal(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: the kernel reads the 8 bytes of `one`.
    unsafe { libc::write(fd, &one as *const u64 as *const libc::c_void, 8) };
}

/// Resets eventfd `fd` to 0.
pub fn eventfd_drain(fd: RawFd) {
    let mut buf: u64 = 0;
    // SAFETY: the kernel writes at most 8 bytes into `buf`.
    unsafe { libc::read(fd, &mut buf as *mut u64 as *mut libc::c_void, 8) };
}

/// User + system CPU time this process has used so far, in seconds.
pub fn cpu_seconds() -> f64 {
    // SAFETY: rusage is plain data, for which all zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { zeroed() };
    // SAFETY: the kernel writes one rusage into `usage`, borrowed mutably.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// A set of signals (for [`block_signals`] and [`wait_signal`]).
pub struct SignalSet(libc::sigset_t);

impl SignalSet {
    pub fn new(signals: &[libc::c_int]) -> SignalSet {
        // SAFETY: sigset_t is plain data; sigemptyset then makes it a valid empty set.
        let mut set: libc::sigset_t = unsafe { zeroed() };
        // SAFETY: both calls write only into `set`, borrowed mutably.
        unsafe {
            libc::sigemptyset(&mut set);
            for &s in signals {
                libc::sigaddset(&mut set, s);
            }
        }
        SignalSet(set)
    }
}

/// Blocks `set` in the calling thread (and the threads it starts afterwards).
pub fn block_signals(set: &SignalSet) {
    // SAFETY: the call reads the set; no old mask is asked for.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set.0, ptr::null_mut()) };
}

/// Waits until one of the (blocked) signals of `set` arrives; returns it.
pub fn wait_signal(set: &SignalSet) -> libc::c_int {
    let mut signal = 0;
    // SAFETY: sigwait reads the set and writes one int into `signal`.
    while unsafe { libc::sigwait(&set.0, &mut signal) } != 0 {}
    signal
}

/// Ignores SIGPIPE: a write to a closed socket returns EPIPE instead of ending us.
pub fn ignore_sigpipe() {
    // SAFETY: SIG_IGN is a valid disposition for SIGPIPE.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

/// Runs `handler` on each of `signals`. The handler must be async-signal-safe (store
/// to an atomic, nothing more).
pub fn on_signals(signals: &[libc::c_int], handler: extern "C" fn(libc::c_int)) {
    let handler = handler as libc::sighandler_t;
    for &s in signals {
        // SAFETY: `handler` is a valid `extern "C" fn(c_int)`, which is what the kernel
        // calls; its async-signal safety is the caller's promise (see above).
        unsafe { libc::signal(s, handler) };
    }
}
