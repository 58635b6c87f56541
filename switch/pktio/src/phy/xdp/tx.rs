//! Transmit through XDP: the kernel sends the switch's frames from an XDP program, with no
//! socket buffer per frame on the switch's side (the AF_PACKET path builds one per frame).
//!
//! The frames of a call are written into a BPF array map that is mapped into the switch
//! (BPF_F_MMAPABLE: no system call per frame). One BPF_PROG_TEST_RUN in live-frames mode
//! runs the program once per frame ("repeat"); each run takes the next frame from the map:
//!
//! - value 0 holds the cursor, which the switch sets to 0 before the call and each run
//!   advances; value k + 1 holds frame k: its length (u32), the interface index to send it
//!   out of (u32), then its bytes (`ROOM` at most);
//! - the run grows or shrinks the kernel's frame to that length (bpf_xdp_adjust_tail; a
//!   live frame is one page, which leaves room for ~3.3 KB), copies the bytes over it
//!   (bpf_xdp_store_bytes: the page keeps whatever the previous run left there) and
//!   redirects it to the interface (bpf_redirect). The kernel hands the frames of each
//!   batch to the driver's ndo_xdp_xmit at the end of the batch, in order.
//!
//! A frame redirected to an interface that takes no XDP frames vanishes without a trace;
//! veth takes them only while its peer runs NAPI. `XdpCheck` (check.rs) asks the kernel
//! which ports take them; the others send through the ring.
//!
//! Between the peer turning NAPI off and the switch seeing the feature gone (its netlink
//! notification, at most `FRESH_FOR` later) frames would vanish so, or be refused by
//! veth (no NAPI: counted in tx_dropped; the peer's ring full: in its ethtool statistics).
//! What veth took is counted exactly, though: the `sent` of the kernel's
//! `xdp:xdp_devmap_xmit` events (sent.rs), or else the sending veth's
//! `tx_queue_N_xdp_xmit` statistics, which port.rs reads after each call (ethtool.rs
//! `XmitCounter`). veth takes a call's frames in order, so the frames past that count were
//! not taken, and go out through the ring instead.

use std::io;

use super::bpf::{self, Fd, Holder, Insn, MappedArray};
use super::check::XdpCheck;
use super::sent::XdpSent;

/// Bytes before a frame's data in its map value: length, interface index.
const SLOT_HEADER: usize = 8;
/// Bytes per map value; a multiple of 8, as the map wants.
const SLOT_SIZE: usize = 2048;
/// The longest frame a slot holds.
pub const ROOM: usize = SLOT_SIZE - SLOT_HEADER;
/// Most frames per call: veth's receive ring holds 256, so a call never overfills it alone.
pub const MAX_FRAMES: usize = 256;
/// Frames per batch of a call. Each call makes a page pool of this many pages; between
/// batches the kernel runs pending softirqs, where veth's peer may already consume the
/// frames just sent, and their pages come back to the pool for the next batch instead of
/// new ones (a page allocation, its set-up and its freeing per frame otherwise: a tenth
/// of the switch's time in perf with one batch per call).
const BATCH: u32 = 16;
/// Fewest frames of a port sent in one XDP call by default (`--xdp-min-call`); fewer go
/// through the ring. For a lone frame an XDP call costs more than a ring send: from an
/// idle switch, the call's own set-up (a page pool per call), and without tracefs the read
/// of veth's count (SIOCETHTOOL GSTATS: rtnl, a vmalloc'ed buffer, ~3-5 µs); per frame it
/// saves ~1 µs (switch/PROTOCOL.md `--tx`). Set when the count was always read that way.
pub const MIN_CALL: usize = 8;
/// The frame every run starts from (the kernel copies it into each new page): an
/// Ethernet header's worth of zeros, the least the kernel takes.
const SEED: [u8; 14] = [0; 14];
/// Shortest frame the program sends: an Ethernet header.
const MIN_LEN: i32 = 14;

/// The program, the frame map and the holder that keeps the program cheap to run.
pub struct XdpTx {
    slots: MappedArray,
    prog: Fd,
    /// Frames written for the next call.
    count: usize,
    /// Fewest frames of a port worth a call (`MIN_CALL`).
    min_call: usize,
    check: XdpCheck,
    /// Counts what the driver took of each call (None: tracefs unreadable; the ports then
    /// read veth's own count).
    sent: Option<XdpSent>,
    _holder: Holder,
}

/// Jump offset placeholder for "to `drop`", patched by [`program`].
const TO_DROP: i16 = i16::MAX;

/// The program of the module's doc. Registers: r6 the context, r7 the frame's map value,
/// r8 its length (r6..r9 survive helper calls).
fn program(map_fd: i32) -> Vec<Insn> {
    use bpf::*;
    let mut p = vec![
        mov_reg(6, 1),        // r6 = ctx
        mov_imm(1, 0),        // r1 = 0
        store_u32(10, -4, 1), // key = 0 (the cursor's value), on the stack
    ];
    p.extend(load_map_fd(1, map_fd)); // r1 = the frame map
    p.extend([
        mov_reg(2, 10),             // r2 = &key
        add_imm(2, -4),             //
        call(FUNC_MAP_LOOKUP_ELEM), // r0 = &cursor
        jeq_imm(0, 0, TO_DROP),     // (never null: the key is in range)
        load_u32(1, 0, 0),          // r1 = cursor
        add_imm(1, 1),              // r1 = cursor + 1: this frame's key
        store_u32(0, 0, 1),         // cursor = r1 (the runs of a call are sequential)
        store_u32(10, -4, 1),       // key = r1
    ]);
    p.extend(load_map_fd(1, map_fd));
    p.extend([
        mov_reg(2, 10),               // r2 = &key
        add_imm(2, -4),               //
        call(FUNC_MAP_LOOKUP_ELEM),   // r0 = &slot
        jeq_imm(0, 0, TO_DROP),       // past the map's end
        mov_reg(7, 0),                // r7 = &slot
        load_u32(8, 7, 0),            // r8 = the frame's length
        jlt_imm(8, MIN_LEN, TO_DROP), // bounds the verifier needs for the copy
        jgt_imm(8, ROOM as i32, TO_DROP),
        mov_reg(1, 6),                  // r0 = the live frame's length
        call(FUNC_XDP_GET_BUFF_LEN),    //
        mov_reg(2, 8),                  // r2 = length wanted - length now
        sub_reg(2, 0),                  //
        mov_reg(1, 6),                  // r0 = bpf_xdp_adjust_tail(ctx, r2)
        call(FUNC_XDP_ADJUST_TAIL),     //
        jne_imm(0, 0, TO_DROP),         // failed
        mov_reg(1, 6),                  // r0 = bpf_xdp_store_bytes(ctx, 0, slot + 8, len)
        mov_imm(2, 0),                  //
        mov_reg(3, 7),                  //
        add_imm(3, SLOT_HEADER as i32), //
        mov_reg(4, 8),                  //
        call(FUNC_XDP_STORE_BYTES),     //
        jne_imm(0, 0, TO_DROP),         // failed
        load_u32(1, 7, 4),              // return bpf_redirect(slot.ifindex, 0)
        mov_imm(2, 0),                  //
        call(FUNC_REDIRECT),            //
        exit(),                         //
    ]);
    let drop_at = p.len();
    p.extend([mov_imm(0, XDP_DROP), exit()]); // drop: return XDP_DROP
    for (pc, insn) in p.iter_mut().enumerate() {
        insn.jump_to(TO_DROP, (drop_at - pc - 1) as i16);
    }
    p
}

impl XdpTx {
    /// Loads the program and its map; `holder` names the holder's veth pair (it carries
    /// the switch's port's name, so its run's prefix).
    pub fn open(holder: &str, min_call: usize) -> Result<XdpTx, String> {
        let slots = MappedArray::new(SLOT_SIZE, MAX_FRAMES + 1)
            .map_err(|e| format!("the XDP frame map: {e}"))?;
        let prog = bpf::load_xdp(&program(slots.fd.raw()))
            .map_err(|e| format!("loading the XDP transmit program: {e}"))?;
        let check = XdpCheck::open()?;
        let sent = XdpSent::open()
            .inspect_err(|e| {
                eprintln!("dplab-switch: no xdp_devmap_xmit count ({e}); reading veth's instead")
            })
            .ok();
        let holder = Holder::new(holder, prog.raw())?;
        Ok(XdpTx {
            slots,
            prog,
            count: 0,
            min_call,
            check,
            sent,
            _holder: holder,
        })
    }

    /// Whether interface `ifindex` takes XDP frames now (after the notifications that
    /// came since the last call).
    pub fn accepts(&mut self, ifindex: i32) -> bool {
        self.check.refresh();
        self.check.accepts(ifindex)
    }

    /// Whether the next call has no room for another frame.
    pub fn is_full(&self) -> bool {
        self.count == MAX_FRAMES
    }

    /// Adds `frame` (at most `ROOM` bytes, the caller checks) for interface `ifindex` to
    /// the next call.
    pub fn queue(&mut self, ifindex: i32, frame: &[u8]) {
        let slot = self.slots.value_mut(self.count + 1);
        slot[..4].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
        slot[4..8].copy_from_slice(&ifindex.to_ne_bytes());
        slot[SLOT_HEADER..SLOT_HEADER + frame.len()].copy_from_slice(frame);
        self.count += 1;
    }

    /// The frames queued for the next call, in order.
    pub fn queued(&self) -> impl Iterator<Item = &[u8]> {
        let count = self.count;
        let slots = &self.slots;
        (0..count).map(move |k| frame_in(slots.value(k + 1)))
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// Fewest frames of a port worth an XDP call; the port sends fewer through the ring.
    pub fn min_call(&self) -> usize {
        self.min_call
    }

    /// Whether [`XdpTx::send`] says how many frames the driver took.
    pub fn counts_taken(&self) -> bool {
        self.sent.is_some()
    }

    /// Has the kernel send the queued frames, all to interface `ifindex`; returns once the
    /// driver has them (or refused them), with how many it took when the switch counts
    /// that itself (`counts_taken`; veth takes a call's frames in order, so they are the
    /// first ones). They stay queued until [`XdpTx::clear`] (to be sent another way if
    /// refused).
    pub fn send(&mut self, ifindex: i32) -> io::Result<Option<usize>> {
        let n = self.count;
        if n == 0 {
            return Ok(Some(0));
        }
        self.slots.value_mut(0)[..4].copy_from_slice(&0u32.to_ne_bytes());
        let before = self.sent.as_mut().map(|sent| {
            sent.aim(ifindex);
            sent.total()
        });
        loop {
            match bpf::run_live(self.prog.raw(), &SEED, n as u32, BATCH) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
                Ok(()) => break,
            }
        }
        Ok(before
            .zip(self.sent.as_ref())
            .map(|(before, sent)| (sent.total() - before).min(n as u64) as usize))
    }

    /// Forgets the queued frames.
    pub fn clear(&mut self) {
        self.count = 0;
    }
}

/// The frame a map value holds (its bytes, as `XdpTx::queue` wrote them).
fn frame_in(slot: &[u8]) -> &[u8] {
    let len = u32::from_ne_bytes(slot[..4].try_into().unwrap()) as usize;
    &slot[SLOT_HEADER..SLOT_HEADER + len.min(ROOM)]
}
