//! The eBPF plumbing the switch's XDP transmit (tx.rs) and dplab-pktblast's XDP source
//! (blast.rs) share: the bpf() system call, instruction encoding, program load, BPF_F_MMAPABLE
//! array maps, live-frame test runs, and the `Holder` that keeps a program in the
//! kernel's XDP dispatcher.
//!
//! There is no clang on the machines the lab runs on, so programs are hand-assembled: each
//! is a few instructions built with the encoders below.
//!
//! Each live-frame test run puts its program into the kernel's XDP dispatcher and takes it
//! out again, and each change of the dispatcher waits for an RCU grace period: ~25 ms a call
//! here, whatever its size. The dispatcher counts its users, so while the same program is
//! also attached in driver mode to an interface (`Holder`: a veth pair of our own that stays
//! down and carries nothing), the calls leave it alone and cost ~0.2 ms per 256 frames.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use super::check::{attr, route_request};
use crate::sys::{self, Mapping};

const BPF_XDP: u32 = 37; // enum bpf_attach_type
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_PROG_TYPE_TRACEPOINT: u32 = 5;
const BPF_F_MMAPABLE: u32 = 1 << 10;
const BPF_F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;
/// Most frames the kernel builds and flushes at a time in a live-frame run.
pub const MAX_BATCH: u32 = 256;

/// Helper function numbers (enum bpf_func_id).
pub const FUNC_MAP_LOOKUP_ELEM: i32 = 1;
pub const FUNC_GET_CURRENT_PID_TGID: i32 = 14;
pub const FUNC_REDIRECT: i32 = 23;
pub const FUNC_XDP_ADJUST_TAIL: i32 = 65;
pub const FUNC_XDP_GET_BUFF_LEN: i32 = 188;
pub const FUNC_XDP_STORE_BYTES: i32 = 190;

/// XDP verdicts.
pub const XDP_DROP: i32 = 1;

/// One eBPF instruction (struct bpf_insn).
#[derive(Clone, Copy)]
pub struct Insn {
    code: u8,
    regs: u8, // dst in the low nibble, src in the high one
    off: i16,
    imm: i32,
}

impl Insn {
    /// The instruction as the kernel reads it: code, registers, offset, immediate, in a
    /// little-endian 64-bit word.
    fn encode(self) -> u64 {
        self.code as u64
            | (self.regs as u64) << 8
            | (self.off as u16 as u64) << 16
            | (self.imm as u32 as u64) << 32
    }

    /// Sets the offset of a jump whose offset is the placeholder `mark` to `off`.
    pub fn jump_to(&mut self, mark: i16, off: i16) {
        let is_jump = self.code & 0x07 == 0x05 && self.code != 0x85 && self.code != 0x95;
        if is_jump && self.off == mark {
            self.off = off;
        }
    }
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | src << 4,
        off,
        imm,
    }
}

// Instruction encoders, named after the assembly they stand for (r = 64-bit register,
// w = its lower 32 bits, `*(u32 *)` = a 4-byte memory access).

/// `dst = imm` (64-bit move of a sign-extended immediate).
pub const fn mov_imm(dst: u8, imm: i32) -> Insn {
    insn(0xb7, dst, 0, 0, imm)
}
/// `dst = src`.
pub const fn mov_reg(dst: u8, src: u8) -> Insn {
    insn(0xbf, dst, src, 0, 0)
}
/// `dst += imm`.
pub const fn add_imm(dst: u8, imm: i32) -> Insn {
    insn(0x07, dst, 0, 0, imm)
}
/// `dst += src`.
pub const fn add_reg(dst: u8, src: u8) -> Insn {
    insn(0x0f, dst, src, 0, 0)
}
/// `dst <<= imm`.
pub const fn lsh_imm(dst: u8, imm: i32) -> Insn {
    insn(0x67, dst, 0, 0, imm)
}
/// `dst >>= imm` (logical).
pub const fn rsh_imm(dst: u8, imm: i32) -> Insn {
    insn(0x77, dst, 0, 0, imm)
}
/// `dst -= src`.
pub const fn sub_reg(dst: u8, src: u8) -> Insn {
    insn(0x1f, dst, src, 0, 0)
}
/// `dst = *(u32 *)(src + off)`.
pub const fn load_u32(dst: u8, src: u8, off: i16) -> Insn {
    insn(0x61, dst, src, off, 0)
}
/// `dst = *(u64 *)(src + off)`.
pub const fn load_u64(dst: u8, src: u8, off: i16) -> Insn {
    insn(0x79, dst, src, off, 0)
}
/// `*(u64 *)(dst + off) = src`.
pub const fn store_u64(dst: u8, off: i16, src: u8) -> Insn {
    insn(0x7b, dst, src, off, 0)
}
/// `*(u32 *)(dst + off) = src`.
pub const fn store_u32(dst: u8, off: i16, src: u8) -> Insn {
    insn(0x63, dst, src, off, 0)
}
/// `if dst == imm goto +off`.
pub const fn jeq_imm(dst: u8, imm: i32, off: i16) -> Insn {
    insn(0x15, dst, 0, off, imm)
}
/// `if dst != imm goto +off`.
pub const fn jne_imm(dst: u8, imm: i32, off: i16) -> Insn {
    insn(0x55, dst, 0, off, imm)
}
/// `if dst != src goto +off`.
pub const fn jne_reg(dst: u8, src: u8, off: i16) -> Insn {
    insn(0x5d, dst, src, off, 0)
}
/// `if dst > imm goto +off` (unsigned).
pub const fn jgt_imm(dst: u8, imm: i32, off: i16) -> Insn {
    insn(0x25, dst, 0, off, imm)
}
/// `if dst < imm goto +off` (unsigned).
pub const fn jlt_imm(dst: u8, imm: i32, off: i16) -> Insn {
    insn(0xa5, dst, 0, off, imm)
}
/// `call helper`: arguments in r1..r5, result in r0; r1..r5 are clobbered.
pub const fn call(helper: i32) -> Insn {
    insn(0x85, 0, 0, 0, helper)
}
/// `exit`: returns r0.
pub const fn exit() -> Insn {
    insn(0x95, 0, 0, 0, 0)
}
/// `dst = map` (the map's fd, which the loader turns into the map): two instruction slots.
pub const fn load_map_fd(dst: u8, map_fd: i32) -> [Insn; 2] {
    const BPF_PSEUDO_MAP_FD: u8 = 1;
    [
        insn(0x18, dst, BPF_PSEUDO_MAP_FD, 0, map_fd),
        insn(0, 0, 0, 0, 0),
    ]
}

/// A file descriptor of a BPF object (program, map, link), closed when dropped: closing
/// the last reference frees the object, also when the process dies.
pub struct Fd(OwnedFd);

impl From<OwnedFd> for Fd {
    fn from(fd: OwnedFd) -> Fd {
        Fd(fd)
    }
}

impl Fd {
    pub fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Loads `program` as an XDP program. On a verifier error, its log is in the message.
pub fn load_xdp(program: &[Insn]) -> io::Result<Fd> {
    load(BPF_PROG_TYPE_XDP, program)
}

/// Loads `program` as a tracepoint program (its context: the tracepoint's record).
pub fn load_tracepoint(program: &[Insn]) -> io::Result<Fd> {
    load(BPF_PROG_TYPE_TRACEPOINT, program)
}

fn load(prog_type: u32, program: &[Insn]) -> io::Result<Fd> {
    let insns: Vec<u64> = program.iter().map(|i| i.encode()).collect();
    sys::bpf_prog_load(prog_type, &insns).map(Fd)
}

/// A BPF array map of `entries` values of `value_size` bytes (a multiple of 8), mapped
/// into this process: writing the memory writes the map, no system call per value.
pub struct MappedArray {
    // Declared before `fd`: the mapping goes before the map's last descriptor.
    map: Mapping,
    pub fd: Fd,
    pub value_size: usize,
}

impl MappedArray {
    pub fn new(value_size: usize, entries: usize) -> io::Result<MappedArray> {
        let fd = sys::bpf_array_create(value_size as u32, entries as u32, BPF_F_MMAPABLE)?;
        let page = 4096;
        let len = (value_size * entries).div_ceil(page) * page;
        Ok(MappedArray {
            map: Mapping::shared(fd.as_raw_fd(), len)?,
            fd: Fd(fd),
            value_size,
        })
    }

    /// The value at `index`.
    pub fn value(&self, index: usize) -> &[u8] {
        self.map.bytes(index * self.value_size, self.value_size)
    }

    /// The value at `index`, to write.
    pub fn value_mut(&mut self, index: usize) -> &mut [u8] {
        self.map.bytes_mut(index * self.value_size, self.value_size)
    }
}

/// Runs XDP program `prog_fd` `count` times on live frames built from `frame`, at most
/// `batch` frames at a time (each batch ends with the redirected frames handed to their
/// drivers); returns once done. The kernel reports nothing per frame: a driver that refused
/// frames counts them (veth: the sending interface's tx_dropped).
pub fn run_live(prog_fd: i32, frame: &[u8], count: u32, batch: u32) -> io::Result<()> {
    let flags = BPF_F_TEST_XDP_LIVE_FRAMES;
    sys::bpf_test_run(prog_fd, frame, count, flags, batch.clamp(1, MAX_BATCH))
}

/// The index of interface `iface` in this network namespace.
pub fn interface_index(iface: &str) -> Result<i32, String> {
    match sys::if_nametoindex(iface) {
        None => Err(format!("no interface {iface}")),
        Some(index) => Ok(index as i32),
    }
}

/// A veth pair of our own, down, with a program attached to one end in driver mode: it
/// keeps the program in the XDP dispatcher for as long as it lives (see the top). Dropping
/// it closes the attachment's link and deletes the pair; if the process dies first, the
/// kernel closes the link, and the pair goes with its namespace (its name carries the
/// owner's prefix).
pub struct Holder {
    name: String,
    link: Option<Fd>,
}

impl Holder {
    /// Makes the pair `name` / `name` + "p" (at most 14 characters of `name` are used for
    /// the peer's) in this network namespace and attaches `prog_fd` to `name`.
    pub fn new(name: &str, prog_fd: i32) -> Result<Holder, String> {
        let peer = format!("{}p", &name[..name.len().min(14)]);
        new_veth_pair(name, &peer).map_err(|e| format!("making veth pair {name}: {e}"))?;
        // From here on, dropping `holder` deletes the pair again.
        let mut holder = Holder {
            name: name.to_string(),
            link: None,
        };
        let ifindex = interface_index(name)? as u32;
        let link = sys::bpf_link_create(prog_fd, ifindex, BPF_XDP, XDP_FLAGS_DRV_MODE)
            .map_err(|e| format!("attaching the program to {name}: {e}"))?;
        holder.link = Some(Fd(link));
        Ok(holder)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.link = None; // detaches the program
        let _ = delete_link(&self.name); // the peer goes with it
    }
}

/// The holder's name for interface `iface`: its name (which carries the run's prefix when
/// the run made it) cut to 13 characters, + "x".
pub fn holder_name(iface: &str) -> String {
    let cut = iface.char_indices().nth(13).map_or(iface.len(), |(i, _)| i);
    format!("{}x", &iface[..cut])
}

// rtnetlink (linux/rtnetlink.h, if_link.h, veth.h): a request from this process, not an
// `ip` process per switch.
const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
const IFLA_IFNAME: u16 = 3;
const IFLA_LINKINFO: u16 = 18;
const IFLA_INFO_KIND: u16 = 1;
const IFLA_INFO_DATA: u16 = 2;
const VETH_INFO_PEER: u16 = 1;
/// struct ifinfomsg, all zero: any family, type, index and flags.
const IFINFOMSG: [u8; 16] = [0; 16];

/// `ip link add NAME type veth peer name PEER`.
fn new_veth_pair(name: &str, peer: &str) -> io::Result<()> {
    let peer_info = [&IFINFOMSG[..], &ifname(peer)].concat();
    let data = attr(VETH_INFO_PEER, &peer_info);
    let info = [attr(IFLA_INFO_KIND, b"veth\0"), attr(IFLA_INFO_DATA, &data)].concat();
    let body = [&IFINFOMSG[..], &ifname(name), &attr(IFLA_LINKINFO, &info)].concat();
    route_request(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &body)
}

/// `ip link del NAME`.
fn delete_link(name: &str) -> io::Result<()> {
    route_request(RTM_DELLINK, 0, &[&IFINFOMSG[..], &ifname(name)].concat())
}

fn ifname(name: &str) -> Vec<u8> {
    attr(IFLA_IFNAME, &[name.as_bytes(), b"\0"].concat())
}
