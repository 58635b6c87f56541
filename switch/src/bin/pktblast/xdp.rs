//! The XDP source: the kernel itself sends the frame, no socket buffer per frame.
//!
//! A four-instruction XDP program (`return bpf_redirect(ifindex, 0)`) is run with
//! BPF_PROG_TEST_RUN in "live frames" mode: the kernel builds each frame in a page pool
//! and redirects it out of the interface through the driver's `ndo_xdp_xmit`, in batches.
//! On veth that needs the *peer* to run NAPI (GRO on, or an XDP program on it); otherwise
//! veth refuses the frames and counts them as tx_dropped.
//!
//! Each test run puts the program into the kernel's XDP dispatcher and takes it out again,
//! and each change of the dispatcher waits for an RCU grace period: ~25 ms a call here,
//! whatever its size. The dispatcher counts its users, so while the same program is also
//! attached in driver mode to an interface (`Holder`: a veth pair of our own that stays
//! down and carries nothing), the calls leave it alone and cost ~0.2 ms per 256 frames.
//! That makes small calls, and so a fine-grained set rate, possible.

use std::io;

const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_TEST_RUN: libc::c_long = 10;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_XDP: u32 = 37; // enum bpf_attach_type
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
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

/// A veth pair of our own, down, with the program attached to one end in driver mode: it
/// keeps the program in the XDP dispatcher for as long as it lives (see the top). Dropping
/// it closes the attachment's link and deletes the pair.
pub struct Holder {
    name: String,
    link_fd: i32,
}

impl Holder {
    /// Makes the pair `name` / `name` + "p" (at most 14 characters of `name` are used for
    /// the peer's) in this network namespace and attaches `prog_fd` to `name`.
    pub fn new(name: &str, prog_fd: i32) -> Result<Holder, String> {
        let peer = format!("{}p", &name[..name.len().min(14)]);
        ip(&["link", "add", name, "type", "veth", "peer", "name", &peer])?;
        // From here on, dropping `holder` deletes the pair again.
        let mut holder = Holder {
            name: name.to_string(),
            link_fd: -1,
        };
        let ifindex = crate::interface_index(name)? as u32;
        // union bpf_attr for BPF_LINK_CREATE: prog_fd, target_ifindex, attach_type, flags.
        let mut attr = [0u64; 8];
        attr[0] = pair(prog_fd as u32, ifindex);
        attr[1] = pair(BPF_XDP, XDP_FLAGS_DRV_MODE);
        let link_fd = bpf(BPF_LINK_CREATE, &mut attr)
            .map_err(|e| format!("attaching the program to {name}: {e}"))?;
        holder.link_fd = link_fd as i32;
        Ok(holder)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        if self.link_fd >= 0 {
            unsafe { libc::close(self.link_fd) };
        }
        let _ = ip(&["link", "del", &self.name]); // the peer goes with it
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    let done = std::process::Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if done.status.success() {
        Ok(())
    } else {
        let why = String::from_utf8_lossy(&done.stderr);
        Err(format!("ip {}: {}", args.join(" "), why.trim()))
    }
}
