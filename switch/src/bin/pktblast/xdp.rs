//! The XDP source: the kernel itself sends the frame, no socket buffer per frame.
//!
//! A four-instruction XDP program (`return bpf_redirect(ifindex, 0)`) is run with
//! BPF_PROG_TEST_RUN in "live frames" mode: the kernel builds each frame in a page pool
//! and redirects it out of the interface through the driver's `ndo_xdp_xmit`, in batches.
//! On veth that needs the *peer* to run NAPI (GRO on, or an XDP program on it); otherwise
//! veth refuses the frames and counts them as tx_dropped.

use std::io;

const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_TEST_RUN: libc::c_long = 10;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_FUNC_REDIRECT: i32 = 23;
const BPF_F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;
/// Frames the kernel builds and flushes at a time (its maximum is 256).
const BATCH: u32 = 256;

/// One eBPF instruction (struct bpf_insn).
#[repr(C)]
struct Insn {
    code: u8,
    regs: u8, // dst in the low nibble, src in the high one
    off: i16,
    imm: i32,
}

fn bpf(cmd: libc::c_long, attr: &mut [u64]) -> io::Result<i64> {
    let size = std::mem::size_of_val(attr);
    let rc = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), size) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Packs two u32 fields of a bpf_attr into one u64 word (little-endian layout).
fn pair(low: u32, high: u32) -> u64 {
    low as u64 | (high as u64) << 32
}

/// Loads `return bpf_redirect(ifindex, 0)` as an XDP program; returns its fd.
pub fn load_redirect(ifindex: i32) -> io::Result<i32> {
    let program = [
        Insn {
            code: 0xb7,
            regs: 1,
            off: 0,
            imm: ifindex,
        }, // r1 = ifindex
        Insn {
            code: 0xb7,
            regs: 2,
            off: 0,
            imm: 0,
        }, // r2 = 0 (flags)
        Insn {
            code: 0x85,
            regs: 0,
            off: 0,
            imm: BPF_FUNC_REDIRECT,
        }, // call
        Insn {
            code: 0x95,
            regs: 0,
            off: 0,
            imm: 0,
        }, // exit (r0 = verdict)
    ];
    let license = c"GPL";
    // union bpf_attr for BPF_PROG_LOAD: prog_type, insn_cnt, insns, license, the rest 0.
    let mut attr = [0u64; 16];
    attr[0] = pair(BPF_PROG_TYPE_XDP, program.len() as u32);
    attr[1] = program.as_ptr() as u64;
    attr[2] = license.as_ptr() as u64;
    bpf(BPF_PROG_LOAD, &mut attr).map(|fd| fd as i32)
}

/// Has the kernel send `count` copies of `frame`; returns once they are handed to the
/// driver (or dropped by it: the interface counters tell).
pub fn send(prog_fd: i32, frame: &[u8], count: u32) -> io::Result<()> {
    // union bpf_attr for BPF_PROG_TEST_RUN (the `test` member).
    let mut attr = [0u64; 10];
    attr[0] = pair(prog_fd as u32, 0);
    attr[1] = pair(frame.len() as u32, 0);
    attr[2] = frame.as_ptr() as u64;
    attr[4] = pair(count, 0);
    attr[8] = pair(BPF_F_TEST_XDP_LIVE_FRAMES, 0);
    attr[9] = pair(BATCH, 0);
    bpf(BPF_PROG_TEST_RUN, &mut attr).map(|_| ())
}
