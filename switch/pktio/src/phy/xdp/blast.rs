//! The XDP source: the kernel itself sends the frame, no socket buffer per frame.
//!
//! A four-instruction XDP program (`return bpf_redirect(ifindex, 0)`) is run with
//! BPF_PROG_TEST_RUN in "live frames" mode: the kernel builds each frame in a page pool
//! and redirects it out of the interface through the driver's `ndo_xdp_xmit`, in batches.
//! On veth that needs the *peer* to run NAPI (GRO on, or an XDP program on it); otherwise
//! veth refuses the frames and counts them as tx_dropped. The program is kept in the
//! kernel's XDP dispatcher by a `bpf::Holder`, which makes small calls cheap (bpf.rs).

use std::io;

use super::bpf::{self, Fd};

/// Frames the kernel builds and flushes at a time.
const BATCH: u32 = bpf::MAX_BATCH;

/// Loads `return bpf_redirect(ifindex, 0)` as an XDP program.
pub fn load_redirect(ifindex: i32) -> io::Result<Fd> {
    bpf::load_xdp(&[
        bpf::mov_imm(1, ifindex),      // r1 = ifindex
        bpf::mov_imm(2, 0),            // r2 = 0 (flags)
        bpf::call(bpf::FUNC_REDIRECT), // r0 = bpf_redirect(r1, r2)
        bpf::exit(),                   // return r0 (the verdict)
    ])
}

/// Has the kernel send `count` copies of `frame`; returns once they are handed to the
/// driver (or dropped by it: the interface counters tell).
pub fn send(prog: &Fd, frame: &[u8], count: u32) -> io::Result<()> {
    bpf::run_live(prog.raw(), frame, count, BATCH)
}
