//! How many frames of the switch's XDP calls the driver took, without a system call: a
//! tracepoint program adds up the `sent` figure of each `xdp:xdp_devmap_xmit` event.
//!
//! At the end of each batch of redirected frames the kernel hands them to the driver's
//! ndo_xdp_xmit and fires `xdp:xdp_devmap_xmit` with the target interface, how many the
//! driver took (`sent`) and how many it refused (veth: its peer runs no NAPI, or the peer's
//! ring is full). The program counts `sent` into a memory-mapped map value, only for events
//! of the switch's data-plane thread to the port it sends to now: a tracepoint program runs
//! for every task that hits the tracepoint, so it filters by the current thread's id.
//! Reading veth's own count instead (../ethtool.rs `XmitCounter`) costs a SIOCETHTOOL per call,
//! ~3-5 µs under the rtnl lock; this costs a memory read.
//!
//! The tracepoint's number and field offsets are read from tracefs (its `format` file): where
//! this process sees none mounted (the host has not mounted it, or the switch runs under
//! `ip netns exec`, whose fresh sysfs has no tracefs under it), from a tracefs instance of
//! its own that is mounted nowhere (sys::detached_mount): no mount namespace is made or
//! copied for it, and the host's mounts stay as they were. Where that fails too, the switch
//! falls back to veth's count.

use std::io;
use std::os::fd::AsRawFd;

use super::bpf::{self, Fd, Insn, MappedArray};
use crate::sys;

/// The tracepoint's directory below tracefs's root.
const EVENT_DIR: &str = "events/xdp/xdp_devmap_xmit";
/// Where tracefs is usually mounted.
const TRACEFS_AT: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
const PERF_TYPE_TRACEPOINT: u32 = 2;
/// sizeof(struct perf_event_attr) as of PERF_ATTR_SIZE_VER8.
const PERF_ATTR_SIZE: usize = 136;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;

/// The map value: the running total of frames taken (u64), then the data-plane thread's
/// id and the interface it sends to now (u32 each), which the switch writes.
const TOTAL_AT: i16 = 0;
const TID_AT: i16 = 8;
const IFINDEX_AT: i16 = 12;
const VALUE_SIZE: usize = 16;

/// Where the fields the program reads sit in the tracepoint's record (whose common fields,
/// the task's pid among them, a tracepoint program may not read).
struct Layout {
    to_ifindex: i16,
    sent: i16,
}

/// The counting program, its map and the perf event that attaches it.
pub struct XdpSent {
    value: MappedArray,
    _prog: Fd,
    _event: Fd,
    /// The id of the thread whose events count, once it sent (0: none yet).
    tid: u32,
}

impl XdpSent {
    pub fn open() -> io::Result<XdpSent> {
        let (id, layout) = tracepoint()?;
        let value = MappedArray::new(VALUE_SIZE, 1)?;
        let prog = bpf::load_tracepoint(&program(value.fd.raw(), &layout))?;
        let event = attach(id, prog.raw())?;
        Ok(XdpSent {
            value,
            _prog: prog,
            _event: event,
            tid: 0,
        })
    }

    /// Frames taken so far by the interface the calling thread sends to (`aim` first).
    pub fn total(&self) -> u64 {
        let v = self.value.value(0);
        let at = TOTAL_AT as usize;
        // The program writes it from the same thread, inside the call: no tearing.
        u64::from_ne_bytes(v[at..at + 8].try_into().unwrap())
    }

    /// Counts, from now on, the calling thread's frames to interface `ifindex`.
    pub fn aim(&mut self, ifindex: i32) {
        if self.tid == 0 {
            self.tid = sys::gettid();
            self.put(TID_AT, self.tid);
        }
        self.put(IFINDEX_AT, ifindex as u32);
    }

    fn put(&mut self, at: i16, x: u32) {
        let at = at as usize;
        self.value.value_mut(0)[at..at + 4].copy_from_slice(&x.to_ne_bytes());
    }
}

/// Jump offset placeholder for "to `out`", patched by [`program`].
const TO_OUT: i16 = i16::MAX;

/// r6 the record, r0 (and r7 across the helper call) the map value.
fn program(map_fd: i32, at: &Layout) -> Vec<Insn> {
    use bpf::*;
    let mut p = vec![
        mov_reg(6, 1),        // r6 = the event's record
        mov_imm(1, 0),        // key = 0, on the stack
        store_u32(10, -4, 1), //
    ];
    p.extend(load_map_fd(1, map_fd));
    p.extend([
        mov_reg(2, 10),                  // r0 = &value
        add_imm(2, -4),                  //
        call(FUNC_MAP_LOOKUP_ELEM),      //
        jeq_imm(0, 0, TO_OUT),           // (never null: the key is in range)
        mov_reg(7, 0),                   // r7 = &value (r6..r9 survive helper calls)
        call(FUNC_GET_CURRENT_PID_TGID), // not the data-plane thread's event: out
        mov_reg(2, 0),                   // (the thread id is the low 32 bits)
        lsh_imm(2, 32),                  //
        rsh_imm(2, 32),                  //
        mov_reg(0, 7),                   // r0 = &value again
        load_u32(1, 0, TID_AT),          //
        jne_reg(1, 2, TO_OUT),           //
        load_u32(1, 0, IFINDEX_AT),      // not to the port it sends to: out
        load_u32(2, 6, at.to_ifindex),
        jne_reg(1, 2, TO_OUT),
        load_u32(1, 6, at.sent), // total += sent (never negative: 0 on error)
        load_u64(2, 0, TOTAL_AT), //
        add_reg(2, 1),           //
        store_u64(0, TOTAL_AT, 2),
    ]);
    let out_at = p.len();
    p.extend([mov_imm(0, 0), exit()]);
    for (pc, insn) in p.iter_mut().enumerate() {
        insn.jump_to(TO_OUT, (out_at - pc - 1) as i16);
    }
    p
}

/// The tracepoint's id and the offsets of the fields the program reads, from tracefs.
fn tracepoint() -> io::Result<(u64, Layout)> {
    let mounted = TRACEFS_AT
        .iter()
        .map(|root| format!("{root}/{EVENT_DIR}"))
        .find(|dir| std::path::Path::new(dir).join("id").exists());
    // Held until both files are read: the detached instance goes when it closes.
    let detached;
    let dir = match mounted {
        Some(dir) => dir,
        None => {
            detached = sys::detached_mount(c"tracefs")
                .map_err(|e| io::Error::other(format!("mount tracefs (detached): {e}")))?;
            format!("/proc/self/fd/{}/{EVENT_DIR}", detached.as_raw_fd())
        }
    };
    let read = |name: &str| {
        std::fs::read_to_string(format!("{dir}/{name}")).map_err(|e| {
            let what = if e.kind() == io::ErrorKind::NotFound {
                "tracefs has no xdp:xdp_devmap_xmit".to_string()
            } else {
                e.to_string()
            };
            io::Error::new(e.kind(), format!("xdp_devmap_xmit {name}: {what}"))
        })
    };
    let id = read("id")?
        .trim()
        .parse()
        .map_err(|_| io::Error::other("xdp_devmap_xmit: its id is not a number"))?;
    let format = read("format")?;
    let field = |name: &str| {
        field_offset(&format, name)
            .ok_or_else(|| io::Error::other(format!("xdp_devmap_xmit has no 4-byte {name}")))
    };
    let layout = Layout {
        to_ifindex: field("to_ifindex")?,
        sent: field("sent")?,
    };
    Ok((id, layout))
}

/// The offset of a 4-byte field in a tracepoint's `format` text, whose lines read
/// `field:int sent;`, `offset:24;`, `size:4;`, `signed:1;` separated by tabs.
fn field_offset(format: &str, name: &str) -> Option<i16> {
    format.lines().find_map(|line| {
        let mut parts = line.trim().split(';').map(str::trim);
        let decl = parts.next()?.strip_prefix("field:")?;
        if decl.rsplit(' ').next()? != name {
            return None;
        }
        let offset = parts.next()?.strip_prefix("offset:")?.parse().ok()?;
        (parts.next()? == "size:4").then_some(offset)
    })
}

/// Opens a perf event on tracepoint `id` and attaches program `prog_fd` to the tracepoint.
fn attach(id: u64, prog_fd: i32) -> io::Result<Fd> {
    // struct perf_event_attr: type, size, config; the rest zero (counting, never sampled).
    let mut attr = [0u8; PERF_ATTR_SIZE];
    attr[0..4].copy_from_slice(&PERF_TYPE_TRACEPOINT.to_ne_bytes());
    attr[4..8].copy_from_slice(&(PERF_ATTR_SIZE as u32).to_ne_bytes());
    attr[8..16].copy_from_slice(&id.to_ne_bytes());
    // pid -1, cpu 0: the program runs for every task wherever the tracepoint fires; the
    // event itself only anchors the attachment.
    let event = Fd::from(sys::perf_event_open(&attr, PERF_FLAG_FD_CLOEXEC)?);
    sys::ioctl_int(event.raw(), PERF_EVENT_IOC_SET_BPF, prog_fd)?;
    sys::ioctl_int(event.raw(), PERF_EVENT_IOC_ENABLE, 0)?;
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_come_from_the_format_text() {
        let format = "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
                      \tfield:int to_ifindex;\toffset:16;\tsize:4;\tsigned:1;\n\
                      \tfield:int sent;\toffset:24;\tsize:4;\tsigned:1;\n";
        assert_eq!(field_offset(format, "common_pid"), Some(4));
        assert_eq!(field_offset(format, "to_ifindex"), Some(16));
        assert_eq!(field_offset(format, "sent"), Some(24));
        assert_eq!(field_offset(format, "drops"), None);
    }
}
