//! The v1model pipeline interpreter: parser, controls, traffic manager and deparser.
//!
//! One `Worker` processes a packet to completion: parse → verify_checksum → ingress →
//! traffic manager (resubmit, clone, multicast, drop, unicast) → egress →
//! compute_checksum → deparse, then recirculation if asked. Outputs and control-plane
//! events are appended to caller-owned vectors; buffers are reused between packets.

use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use crate::hashes::HashAlgorithm;
use crate::meters::{Color, MeterCell};
use crate::pre::{Pre, Replica};
use crate::profiles::Profile;
use crate::program::{
    sm, Algo, BinOp, Dest, Expr, KeySet, Packed, Program, Stmt, Transition, MAX_PARAMS,
};
use crate::tables::{ActionCall, EntryAction, Table};
use crate::value_sets::ValueSet;
use crate::values::{mask, read_bits};

#[cfg(test)]
mod bench;
mod lowered;

use lowered::{Code, Cond, Op, Switch};

const ERROR_PACKET_TOO_SHORT: u32 = 1;
const ERROR_NO_MATCH: u32 = 2;
const ERROR_STACK_OUT_OF_BOUNDS: u32 = 3;
const ERROR_PARSER_TIMEOUT: u32 = 5;
const MAX_PARSER_STEPS: usize = 1000;
/// Passes (resubmit/recirculate) one arriving packet may make before it is dropped.
const MAX_PASSES: u32 = 16;
pub const DROP_PORT: u128 = 511;

pub const INSTANCE_NORMAL: u128 = 0;
pub const INSTANCE_INGRESS_CLONE: u128 = 1;
pub const INSTANCE_EGRESS_CLONE: u128 = 2;
pub const INSTANCE_RECIRC: u128 = 4;
pub const INSTANCE_REPLICATION: u128 = 5;
pub const INSTANCE_RESUBMIT: u128 = 6;

/// The control-plane-programmable state of one loaded program.
pub struct Runtime {
    pub prog: Arc<Program>,
    /// The program's blocks as the worker runs them (lowered at load).
    code: Code,
    pub tables: Vec<Table>,
    /// Members and groups of each action profile/selector (`Program::profiles`).
    pub profiles: Vec<Profile>,
    pub counters: Vec<Vec<(u64, u64)>>,
    pub meters: Vec<Vec<MeterCell>>,
    pub registers: Vec<Vec<u128>>,
    pub pre: Pre,
    /// Members of the parser value sets (`Program::value_sets`), empty at load.
    pub value_sets: Vec<ValueSet>,
    /// The `tag` the pipeline was loaded with (`load_pipeline`), shown by `get_pipeline`: a
    /// P4Runtime server restarted against a running switch recognises its own pipeline by
    /// it and takes the switch over without reloading (and so clearing) it.
    pub tag: Option<String>,
}

/// A control-plane event the data path produced.
pub enum Event {
    PacketIn(Vec<u8>),
    Digest { digest: usize, values: Vec<u128> },
}

#[derive(Clone, Copy, Default, Debug)]
pub struct PipelineStats {
    pub packets: u64,
    pub dropped: u64,
    pub loop_drops: u64,
}

/// Per-packet state: every instance's fields, header validity and stack cursors.
#[derive(Clone)]
struct Phv {
    fields: Vec<u128>,
    valid: Vec<bool>,
    stack_next: Vec<usize>,
}

#[derive(Default, Clone, Copy)]
struct Flags {
    clone_i2e: Option<(u32, Option<u32>)>,
    clone_e2e: Option<(u32, Option<u32>)>,
    resubmit: Option<Option<u32>>,
    recirculate: Option<Option<u32>>,
    direct_color: u128,
}

enum Flow {
    Next,
    Return,
    Exit,
    Reject(u32),
}

struct Ingress<'a> {
    bytes: Cow<'a, [u8]>,
    port: u128,
    instance_type: u128,
    preserved: Vec<(usize, u128)>,
}

/// What one packet's processing works on: the program, the runtime's parts borrowed apart
/// (so an action can run while the table entry that chose it is still borrowed), and
/// where its outputs go.
struct Ctx<'a> {
    prog: &'a Program,
    code: &'a Code,
    /// Empty while an action runs (actions cannot apply tables; the loader checks that).
    tables: &'a mut [Table],
    profiles: &'a [Profile],
    counters: &'a mut [Vec<(u64, u64)>],
    meters: &'a mut [Vec<MeterCell>],
    registers: &'a mut [Vec<u128>],
    pre: &'a Pre,
    value_sets: &'a [ValueSet],
    out: &'a mut Vec<(u32, Vec<u8>)>,
    events: &'a mut Vec<Event>,
    /// Resubmitted and recirculated packets waiting for their next pass.
    pending: Vec<Ingress<'static>>,
}

pub struct Worker {
    phv: Phv,
    /// Validity of every instance at packet start: metadata valid, headers not.
    initial_valid: Vec<bool>,
    flags: Flags,
    key: Vec<u128>,
    key_scratch: Vec<u128>,
    /// Hash and checksum data: the items' values, then their bytes.
    values: Vec<u128>,
    bits: Vec<u8>,
    /// A header at the very end of a packet, copied and zero-padded for 8-byte reads.
    tail: Vec<u8>,
    rng: u64,
    now_ns: u64,
    /// `now_ns` as the timestamp fields hold it: microseconds, 48 bits.
    now_stamp: u128,
    /// Parser cursor in bytes, and whether a lookahead ran past the end.
    cursor: usize,
    short: bool,
    pub stats: PipelineStats,
    /// A rehearsal is running: nothing the packet does may last (see `rehearse`).
    rehearsing: bool,
    /// Output buffers handed back after sending, reused by the deparser: no allocation
    /// per packet.
    spare: Vec<Vec<u8>>,
    /// Packets in the caller's `out` per egress port: each port's queue (see `egress_pass`).
    queued: Vec<u32>,
    /// Ports with a non-zero `queued` count, so emptying the queues touches only them.
    queued_ports: Vec<usize>,
}

/// Most output buffers kept for reuse (a few batches' worth).
const SPARE_BUFFERS: usize = 256;
/// Zero bytes after a header copied for extract, so every 8-byte window read stays inside
/// the buffer.
const WINDOW_PAD: usize = 8;

fn preserved_fields(prog: &Program, phv: &Phv, list: Option<u32>) -> Vec<(usize, u128)> {
    match list.and_then(|l| prog.field_lists.get(&l)) {
        Some(slots) => slots.iter().map(|s| (*s, phv.fields[*s])).collect(),
        None => Vec::new(),
    }
}

fn write_dest(fields: &mut [u128], d: Dest, value: u128) {
    fields[d.slot] = match d.is_slice {
        false => value & d.mask,
        true => (fields[d.slot] & !d.mask) | ((value << d.lo) & d.mask),
    };
}

impl Worker {
    pub fn new(prog: &Program) -> Worker {
        let seed = pktio::sys::random_u64();
        let initial_valid: Vec<bool> = prog.instances.iter().map(|i| !i.is_header).collect();
        Worker {
            phv: Phv {
                fields: vec![0; prog.slot_count],
                valid: initial_valid.clone(),
                stack_next: vec![0; prog.stacks.len()],
            },
            initial_valid,
            flags: Flags::default(),
            key: Vec::with_capacity(16),
            key_scratch: Vec::with_capacity(16),
            values: Vec::with_capacity(16),
            bits: Vec::with_capacity(64),
            tail: Vec::with_capacity(64),
            rng: seed | 1,
            now_ns: 0,
            now_stamp: 0,
            cursor: 0,
            short: false,
            stats: PipelineStats::default(),
            rehearsing: false,
            spare: Vec::with_capacity(SPARE_BUFFERS),
            queued: vec![0; DROP_PORT as usize + 1],
            queued_ports: Vec::new(),
        }
    }

    /// Runs `packet` through the pipeline without leaving a trace: no counter, meter,
    /// register, table-hit or statistics update, and its output and digests are thrown
    /// away. Why: a lone packet after an idle spell costs ten times a warm one (the
    /// interpreter's code and the program's data left the caches), so the data-plane
    /// thread rehearses the latest packet just before the next one of a steady stream
    /// is due. Random numbers drawn are used up, which no program can tell apart.
    /// False if the pass panicked (a bug): caught here, so that the worker leaves
    /// rehearsal mode either way.
    pub fn rehearse(&mut self, rt: &mut Runtime, port: u32, packet: &[u8], now_ns: u64) -> bool {
        let (stats, mut out, mut events) = (self.stats, Vec::new(), Vec::new());
        self.rehearsing = true;
        let done = catch_unwind(AssertUnwindSafe(|| {
            self.process(rt, port, packet, now_ns, &mut out, &mut events)
        }));
        self.rehearsing = false;
        self.stats = stats;
        for (_, buf) in out {
            self.recycle(buf);
        }
        done.is_ok()
    }

    /// Takes back an output buffer the caller is done with, for a later packet.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        if self.spare.len() < SPARE_BUFFERS {
            self.spare.push(buf);
        }
    }

    fn reset(&mut self) {
        self.phv.fields.fill(0);
        self.phv.valid.copy_from_slice(&self.initial_valid);
        // Not on an empty slice: glibc's AVX-512 memset of 0 bytes does a masked store to
        // the slice's dangling address, whose fault suppression costs ~50 ns per packet on
        // these machines (perf: 12 % of the switch's time in that one instruction).
        if !self.phv.stack_next.is_empty() {
            self.phv.stack_next.fill(0);
        }
        self.flags = Flags::default();
    }

    fn random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// Runs one packet that arrived on `port` through the whole pipeline; transmissions go
    /// to `out` as (port, bytes), control-plane events to `events`.
    pub fn process(
        &mut self,
        rt: &mut Runtime,
        port: u32,
        packet: &[u8],
        now_ns: u64,
        out: &mut Vec<(u32, Vec<u8>)>,
        events: &mut Vec<Event>,
    ) {
        self.now_ns = now_ns;
        self.now_stamp = ((now_ns / 1000) as u128) & mask(48);
        self.stats.packets += 1;
        if out.is_empty() {
            // The caller sent everything queued: every port's queue is empty again.
            for port in self.queued_ports.drain(..) {
                self.queued[port] = 0;
            }
        }
        let mut cx = Ctx {
            prog: &rt.prog,
            code: &rt.code,
            tables: &mut rt.tables,
            profiles: &rt.profiles,
            counters: &mut rt.counters,
            meters: &mut rt.meters,
            registers: &mut rt.registers,
            pre: &rt.pre,
            value_sets: &rt.value_sets,
            out,
            events,
            pending: Vec::new(),
        };
        let first = Ingress {
            bytes: Cow::Borrowed(packet),
            port: port as u128,
            instance_type: INSTANCE_NORMAL,
            preserved: Vec::new(),
        };
        self.ingress_pass(&mut cx, first);
        let mut passes = 1;
        while let Some(job) = cx.pending.pop() {
            passes += 1;
            if passes > MAX_PASSES {
                self.stats.loop_drops += 1;
                break;
            }
            self.ingress_pass(&mut cx, job);
        }
    }

    fn start_packet(&mut self, bytes: &[u8], port: u128, itype: u128, preserved: &[(usize, u128)]) {
        self.reset();
        // One range check for the standard_metadata writes (instance 0 has them all).
        let f = &mut self.phv.fields[..sm::FIELD_COUNT];
        f[sm::INGRESS_PORT] = port;
        f[sm::INSTANCE_TYPE] = itype;
        f[sm::PACKET_LENGTH] = bytes.len() as u128;
        f[sm::INGRESS_TIMESTAMP] = self.now_stamp;
        for (slot, v) in preserved {
            self.phv.fields[*slot] = *v;
        }
    }

    fn ingress_pass(&mut self, cx: &mut Ctx, job: Ingress<'_>) {
        let (prog, code) = (cx.prog, cx.code);
        self.start_packet(&job.bytes, job.port, job.instance_type, &job.preserved);
        self.parse(cx, &job.bytes);
        let payload_at = self.cursor;
        self.run_control(cx, &code.verify_checksum);
        self.run_control(cx, &code.ingress);
        let flags = self.flags;
        if let Some((session, list)) = flags.clone_i2e {
            self.clone_ingress(cx, &job, session, list);
        }
        if let Some(list) = flags.resubmit {
            let preserved = preserved_fields(prog, &self.phv, list);
            let bytes = Cow::Owned(job.bytes.into_owned());
            cx.pending.push(Ingress {
                bytes,
                port: job.port,
                instance_type: INSTANCE_RESUBMIT,
                preserved,
            });
            return;
        }
        let payload = &job.bytes[payload_at.min(job.bytes.len())..];
        let mcast = self.phv.fields[sm::MCAST_GRP] as u32;
        if mcast != 0 {
            let replicas = cx.pre.groups.get(&mcast).cloned().unwrap_or_default();
            let phv = self.phv.clone();
            let queued = Instant::now();
            for Replica { port, rid } in replicas {
                self.phv = phv.clone();
                self.flags = Flags::default();
                self.phv.fields[sm::EGRESS_RID] = rid as u128;
                self.phv.fields[sm::INSTANCE_TYPE] = INSTANCE_REPLICATION;
                self.egress_pass(cx, port as u128, payload, true, Some(queued));
            }
            return;
        }
        let spec = self.phv.fields[sm::EGRESS_SPEC];
        if spec == DROP_PORT {
            self.stats.dropped += 1;
            return;
        }
        self.flags = Flags::default();
        self.egress_pass(cx, spec, payload, true, None);
    }

    fn clone_ingress(&mut self, cx: &mut Ctx, job: &Ingress<'_>, session: u32, list: Option<u32>) {
        let Some(sess) = cx.pre.clone_sessions.get(&session).cloned() else {
            return;
        };
        let preserved = preserved_fields(cx.prog, &self.phv, list);
        let (saved_phv, saved_flags, saved_cursor) = (self.phv.clone(), self.flags, self.cursor);
        let queued = Instant::now();
        for Replica { port, rid } in sess.replicas {
            let mut bytes = job.bytes.to_vec();
            if sess.packet_length_bytes > 0 {
                bytes.truncate(sess.packet_length_bytes as usize);
            }
            self.start_packet(&bytes, job.port, INSTANCE_INGRESS_CLONE, &preserved);
            self.parse(cx, &bytes);
            self.phv.fields[sm::EGRESS_RID] = rid as u128;
            let payload = &bytes[self.cursor.min(bytes.len())..];
            self.egress_pass(cx, port as u128, payload, true, Some(queued));
        }
        self.phv = saved_phv;
        self.flags = saved_flags;
        self.cursor = saved_cursor;
    }

    /// Runs egress for a packet the traffic manager queued for `port`. `queued`: when it
    /// queued the copies of a multicast group or clone session, made one after another
    /// (None: a lone packet, handed to egress at once).
    fn egress_pass(
        &mut self,
        cx: &mut Ctx,
        port: u128,
        payload: &[u8],
        allow_clone: bool,
        queued: Option<Instant>,
    ) {
        let (prog, code) = (cx.prog, cx.code);
        // Run to completion: the packet joins its port's queue behind the packets of this
        // round already waiting there for the round's send, and egress takes it as it
        // joins. Only a copy waits in between, for the egress passes of the copies made
        // before it: that wait is measured.
        let waited_us = queued.map_or(0, |t| t.elapsed().as_micros());
        let depth = self.queued[(port & mask(9)) as usize] as u128;
        let f = &mut self.phv.fields[..sm::FIELD_COUNT];
        f[sm::EGRESS_PORT] = port & mask(9);
        f[sm::EGRESS_SPEC] = port & mask(9);
        f[sm::EGRESS_TIMESTAMP] = (self.now_stamp + waited_us) & mask(48);
        f[sm::ENQ_TIMESTAMP] = self.now_stamp & mask(32);
        f[sm::ENQ_QDEPTH] = depth.min(mask(19));
        f[sm::DEQ_TIMEDELTA] = waited_us & mask(32);
        f[sm::DEQ_QDEPTH] = depth.min(mask(19));
        self.flags.clone_e2e = None;
        self.flags.recirculate = None;
        self.run_control(cx, &code.egress);
        if let (Some((session, list)), true) = (self.flags.clone_e2e, allow_clone) {
            self.clone_egress(cx, session, list, payload);
        }
        if self.phv.fields[sm::EGRESS_SPEC] == DROP_PORT {
            self.stats.dropped += 1;
            return;
        }
        self.run_control(cx, &code.compute_checksum);
        let bytes = self.deparse(prog, payload);
        if let Some(list) = self.flags.recirculate {
            let preserved = preserved_fields(prog, &self.phv, list);
            let port = self.phv.fields[sm::INGRESS_PORT];
            cx.pending.push(Ingress {
                bytes: Cow::Owned(bytes),
                port,
                instance_type: INSTANCE_RECIRC,
                preserved,
            });
            return;
        }
        let port = self.phv.fields[sm::EGRESS_PORT] as usize;
        if self.queued[port] == 0 {
            self.queued_ports.push(port);
        }
        self.queued[port] += 1;
        cx.out.push((port as u32, bytes));
    }

    fn clone_egress(&mut self, cx: &mut Ctx, session: u32, list: Option<u32>, payload: &[u8]) {
        let prog = cx.prog;
        let Some(sess) = cx.pre.clone_sessions.get(&session).cloned() else {
            return;
        };
        let preserved = preserved_fields(prog, &self.phv, list);
        let saved = (self.phv.clone(), self.flags);
        let queued = Instant::now();
        for Replica { port, rid } in sess.replicas {
            // The clone keeps the headers as egress left them; metadata starts afresh.
            self.phv = saved.0.clone();
            for (i, inst) in prog.instances.iter().enumerate().skip(1) {
                if !inst.is_header {
                    let range = inst.base..inst.base + inst.fields.len();
                    self.phv.fields[range].fill(0);
                    self.phv.valid[i] = true;
                }
            }
            for (slot, v) in &preserved {
                self.phv.fields[*slot] = *v;
            }
            self.phv.fields[sm::INSTANCE_TYPE] = INSTANCE_EGRESS_CLONE;
            self.phv.fields[sm::EGRESS_RID] = rid as u128;
            self.flags = Flags::default();
            // A clone of a clone is not cloned again, which also bounds the recursion.
            self.egress_pass(cx, port as u128, payload, false, Some(queued));
        }
        self.phv = saved.0;
        self.flags = saved.1;
    }

    // ---- parser and deparser ----

    fn parse(&mut self, cx: &mut Ctx, bytes: &[u8]) {
        let (prog, code) = (cx.prog, cx.code);
        self.cursor = 0;
        let mut state = prog.parser_start;
        for _ in 0..MAX_PARSER_STEPS {
            if state < 0 {
                return;
            }
            let st = &prog.parser_states[state as usize];
            let body = &code.states[state as usize];
            // A state of only a transition (the start state of many programs) runs no block.
            let flow = match body.is_empty() {
                true => Flow::Next,
                false => self.exec_block(cx, body, &[], Some(bytes)),
            };
            match flow {
                Flow::Reject(e) => return self.reject(e),
                Flow::Exit | Flow::Return => return,
                Flow::Next => {}
            }
            state = match &st.transition {
                Transition::Goto(next) => *next,
                Transition::Select { keys, cases } => {
                    self.short = false;
                    self.key.clear();
                    for k in keys {
                        let v = self.eval(k, &[], Some(bytes));
                        self.key.push(v);
                    }
                    if self.short {
                        return self.reject(ERROR_PACKET_TOO_SHORT);
                    }
                    match cases
                        .iter()
                        .find(|(sets, _)| case_matches(sets, &self.key, cx.value_sets))
                    {
                        Some((_, next)) => *next,
                        None => return self.reject(ERROR_NO_MATCH),
                    }
                }
            };
        }
        if state >= 0 {
            self.reject(ERROR_PARSER_TIMEOUT);
        }
    }

    fn reject(&mut self, error: u32) {
        self.phv.fields[sm::PARSER_ERROR] = error as u128;
    }

    fn extract(&mut self, prog: &Program, inst: usize, bytes: &[u8]) -> Flow {
        let header = &prog.instances[inst];
        let len = header.bits as usize / 8;
        let end = self.cursor + len;
        if end > bytes.len() {
            return Flow::Reject(ERROR_PACKET_TOO_SHORT);
        }
        // Every piece is read as an 8-byte window: read in place when the packet goes on
        // far enough, else from a zero-padded copy of the header.
        let data: &[u8] = if end + WINDOW_PAD <= bytes.len() {
            &bytes[self.cursor..]
        } else {
            padded_copy(&mut self.tail, &bytes[self.cursor..end])
        };
        let fields = &mut self.phv.fields;
        // One range check for the header's slots, none per field.
        let slots = header.base..header.base + header.wire_narrow.len();
        for (field, piece) in fields[slots].iter_mut().zip(&header.wire_narrow) {
            *field = piece.read_low(data) as u128;
        }
        for wb in &header.wire {
            let v = wb.piece.read(data);
            fields[wb.slot] = if wb.first { v } else { fields[wb.slot] | v };
        }
        self.phv.valid[inst] = true;
        self.cursor = end;
        Flow::Next
    }

    fn deparse(&mut self, prog: &Program, payload: &[u8]) -> Vec<u8> {
        let mut out = self.spare.pop().unwrap_or_default();
        out.clear();
        out.reserve(64 + payload.len());
        for &inst in &prog.deparser {
            if !self.phv.valid[inst] {
                continue;
            }
            prog.instances[inst]
                .emit
                .emit_fields(&mut out, &self.phv.fields);
        }
        out.extend_from_slice(payload);
        out
    }

    // ---- controls ----

    fn run_control(&mut self, cx: &mut Ctx, body: &[Op]) {
        if !body.is_empty() {
            let _ = self.exec_block(cx, body, &[], None);
        }
    }

    /// Runs a block: the plain assignments, `if` and `extract` (nearly all a forwarding
    /// program runs) right here, the rest through `exec`. The branch of an `if` that ends
    /// its block (the common case) runs in this same loop: each call level would cost a
    /// prologue and an epilogue.
    fn exec_block(
        &mut self,
        cx: &mut Ctx,
        ops: &[Op],
        params: &[u128],
        packet: Option<&[u8]>,
    ) -> Flow {
        let mut at = ops;
        while let Some((op, rest)) = at.split_first() {
            at = rest;
            let fields = &mut self.phv.fields;
            let flow = match *op {
                Op::SetConst { slot, value } => {
                    fields[slot] = value;
                    continue;
                }
                Op::Copy { dst, src, mask } => {
                    fields[dst] = fields[src] & mask;
                    continue;
                }
                Op::SetParam { slot, index, mask } => {
                    fields[slot] = params.get(index).copied().unwrap_or(0) & mask;
                    continue;
                }
                Op::AddConst {
                    dst,
                    src,
                    addend,
                    mask,
                } => {
                    fields[dst] = fields[src].wrapping_add(addend) & mask;
                    continue;
                }
                Op::If(ref c, ref then, ref other) => {
                    let branch = if self.test(c, params, packet) {
                        then
                    } else {
                        other
                    };
                    if at.is_empty() {
                        at = branch;
                        continue;
                    }
                    self.exec_block(cx, branch, params, packet)
                }
                Op::Extract(inst) => match packet {
                    Some(bytes) => self.extract(cx.prog, inst, bytes),
                    None => continue,
                },
                _ => self.exec(cx, op, params, packet),
            };
            if !matches!(flow, Flow::Next) {
                return flow;
            }
        }
        Flow::Next
    }

    #[inline(never)]
    fn exec(&mut self, cx: &mut Ctx, op: &Op, params: &[u128], packet: Option<&[u8]>) -> Flow {
        match op {
            Op::Apply {
                table,
                hit_dest,
                switch,
            } => self.apply(cx, *table, *hit_dest, switch.as_deref(), params, packet),
            Op::Call { action, args } => {
                if args.is_empty() {
                    return self.run_action(cx, *action, &[]);
                }
                let mut values = [0; MAX_PARAMS];
                for (slot, a) in values.iter_mut().zip(args.iter()) {
                    *slot = self.eval(a, params, packet);
                }
                let count = args.len().min(MAX_PARAMS);
                self.run_action(cx, *action, &values[..count])
            }
            Op::Assign(assign) => {
                let (d, e) = &**assign;
                self.short = false;
                let v = self.eval(e, params, packet);
                if self.short {
                    return Flow::Reject(ERROR_PACKET_TOO_SHORT);
                }
                write_dest(&mut self.phv.fields, *d, v);
                Flow::Next
            }
            Op::Leaf(s) => self.exec_leaf(cx, s, params, packet),
            // Run by `exec_block` itself.
            Op::SetConst { .. }
            | Op::Copy { .. }
            | Op::SetParam { .. }
            | Op::AddConst { .. }
            | Op::If(..)
            | Op::Extract(_) => Flow::Next,
        }
    }

    /// Whether a condition holds; the one-field tests without a call.
    #[inline(always)]
    fn test(&mut self, c: &Cond, params: &[u128], packet: Option<&[u8]>) -> bool {
        match c {
            Cond::Valid(inst) => self.phv.valid[*inst],
            Cond::FieldCmp { slot, op, value } => op.holds(self.phv.fields[*slot], *value),
            _ => self.test_node(c, params, packet),
        }
    }

    fn test_node(&mut self, c: &Cond, params: &[u128], packet: Option<&[u8]>) -> bool {
        match c {
            Cond::And(a, b) => self.test(a, params, packet) && self.test(b, params, packet),
            Cond::Or(a, b) => self.test(a, params, packet) || self.test(b, params, packet),
            Cond::Not(a) => !self.test(a, params, packet),
            Cond::Always(v) => *v,
            Cond::Expr(e) => self.eval(e, params, packet) != 0,
            Cond::Valid(_) | Cond::FieldCmp { .. } => self.test(c, params, packet),
        }
    }

    fn run_action(&mut self, cx: &mut Ctx, action: usize, params: &[u128]) -> Flow {
        let Some(body) = cx.code.actions.get(action) else {
            return Flow::Next;
        };
        match self.exec_block(cx, body, params, None) {
            Flow::Exit => Flow::Exit,
            _ => Flow::Next,
        }
    }

    /// Applies a table, runs the action it chose (with the entry's data read in place),
    /// then the `switch` case of that action.
    fn apply(
        &mut self,
        cx: &mut Ctx,
        table: usize,
        hit_dest: Option<Dest>,
        switch: Option<&Switch>,
        params: &[u128],
        packet: Option<&[u8]>,
    ) -> Flow {
        let tables = std::mem::take(&mut cx.tables);
        let (hit, call) = self.lookup(cx.prog, cx.profiles, table, &mut tables[table]);
        if let Some(d) = hit_dest {
            write_dest(&mut self.phv.fields, d, hit as u128);
        }
        let flow = self.run_action(cx, call.action, &call.params);
        let action = call.action;
        cx.tables = tables;
        if let Flow::Exit = flow {
            return Flow::Exit;
        }
        let Some(sw) = switch else {
            return Flow::Next;
        };
        let case = sw.cases.iter().find(|(acts, _)| acts.contains(&action));
        match case.map(|c| &c.1).or(sw.default.as_ref()) {
            Some(body) => self.exec_block(cx, body, params, packet),
            None => Flow::Next,
        }
    }

    /// The statements that hold no block and have no op of their own.
    fn exec_leaf(
        &mut self,
        cx: &mut Ctx,
        s: &Stmt,
        params: &[u128],
        packet: Option<&[u8]>,
    ) -> Flow {
        let prog = cx.prog;
        match s {
            Stmt::CopyHeader(dst, src) => {
                let (d, s) = (&prog.instances[*dst], &prog.instances[*src]);
                let n = d.fields.len().min(s.fields.len());
                self.phv.fields.copy_within(s.base..s.base + n, d.base);
                self.phv.valid[*dst] = self.phv.valid[*src];
            }
            Stmt::SetValid(inst, valid) => self.phv.valid[*inst] = *valid,
            Stmt::Exit => return Flow::Exit,
            Stmt::Return => return Flow::Return,
            Stmt::StackPush(stack, count) => self.stack_shift(prog, *stack, *count, true),
            Stmt::StackPop(stack, count) => self.stack_shift(prog, *stack, *count, false),
            Stmt::CounterCount(c, index) => {
                let i = self.eval(index, params, packet);
                let len = self.phv.fields[sm::PACKET_LENGTH] as u64;
                let cell = cx.counters[*c].get_mut(i.min(usize::MAX as u128) as usize);
                if let (Some(cell), false) = (cell, self.rehearsing) {
                    cell.0 += 1;
                    cell.1 += len;
                }
            }
            Stmt::MeterExecute(m, index, dst) => {
                let i = self.eval(index, params, packet).min(usize::MAX as u128) as usize;
                let len = self.phv.fields[sm::PACKET_LENGTH] as u64;
                let color = match cx.meters[*m].get_mut(i) {
                    Some(cell) if !self.rehearsing => {
                        cell.execute(prog.meters[*m].unit, len, self.now_ns)
                    }
                    _ => Color::Green,
                };
                write_dest(&mut self.phv.fields, *dst, color as u128);
            }
            Stmt::DirectMeterRead(dst) => {
                write_dest(&mut self.phv.fields, *dst, self.flags.direct_color)
            }
            Stmt::RegisterRead(r, index, dst) => {
                let i = self.eval(index, params, packet).min(usize::MAX as u128) as usize;
                let v = cx.registers[*r].get(i).copied().unwrap_or(0);
                write_dest(&mut self.phv.fields, *dst, v);
            }
            Stmt::RegisterWrite(r, index, value) => {
                let i = self.eval(index, params, packet).min(usize::MAX as u128) as usize;
                let v = self.eval(value, params, packet) & mask(prog.registers[*r].width);
                if let (Some(cell), false) = (cx.registers[*r].get_mut(i), self.rehearsing) {
                    *cell = v;
                }
            }
            Stmt::Hash {
                dst,
                algo,
                base,
                data,
                max,
            } => {
                let h = self.hash(*algo, data, params, packet);
                let (base, max) = (
                    self.eval(base, params, packet),
                    self.eval(max, params, packet),
                );
                let v = if max == 0 {
                    base.wrapping_add(h)
                } else {
                    base.wrapping_add(h % max)
                };
                write_dest(&mut self.phv.fields, *dst, v);
            }
            Stmt::Random(dst, lo, hi) => {
                let (lo, hi) = (self.eval(lo, params, packet), self.eval(hi, params, packet));
                let r = self.random() as u128;
                let v = if hi <= lo {
                    lo
                } else {
                    lo + r % (hi - lo + 1).max(1)
                };
                write_dest(&mut self.phv.fields, *dst, v);
            }
            Stmt::Clone {
                egress,
                session,
                field_list,
            } => {
                let sess = self.eval(session, params, packet) as u32;
                if *egress {
                    self.flags.clone_e2e = Some((sess, *field_list));
                } else {
                    self.flags.clone_i2e = Some((sess, *field_list));
                }
            }
            Stmt::Resubmit(list) => self.flags.resubmit = Some(*list),
            Stmt::Recirculate(list) => self.flags.recirculate = Some(*list),
            Stmt::Digest(d, data) => {
                let values = data
                    .iter()
                    .map(|(e, _)| self.eval(e, params, packet))
                    .collect();
                cx.events.push(Event::Digest { digest: *d, values });
            }
            Stmt::VerifyChecksum {
                cond,
                data,
                checksum,
                algo,
            } => {
                if self.eval(cond, params, packet) != 0 {
                    let h = self.hash(*algo, data, params, packet);
                    let expected = self.eval(checksum, params, packet);
                    if h != expected {
                        self.phv.fields[sm::CHECKSUM_ERROR] = 1;
                    }
                }
            }
            Stmt::UpdateChecksum {
                cond,
                data,
                dst,
                algo,
            } => {
                if self.eval(cond, params, packet) != 0 {
                    let h = self.hash(*algo, data, params, packet);
                    write_dest(&mut self.phv.fields, *dst, h);
                }
            }
            Stmt::Log => {}
            Stmt::ExtractStack(stack) => {
                let Some(bytes) = packet else {
                    return Flow::Next;
                };
                let members = &prog.stacks[*stack];
                let next = self.phv.stack_next[*stack];
                let Some(&inst) = members.get(next) else {
                    return Flow::Reject(ERROR_STACK_OUT_OF_BOUNDS);
                };
                let flow = self.extract(prog, inst, bytes);
                if let Flow::Next = flow {
                    self.phv.stack_next[*stack] = next + 1;
                }
                return flow;
            }
            Stmt::Advance(bits) => {
                let Some(bytes) = packet else {
                    return Flow::Next;
                };
                let n = (self.eval(bits, params, packet) / 8).min(usize::MAX as u128) as usize;
                if self.cursor.saturating_add(n) > bytes.len() {
                    return Flow::Reject(ERROR_PACKET_TOO_SHORT);
                }
                self.cursor += n;
            }
            Stmt::Verify(cond, error) => {
                if self.eval(cond, params, packet) == 0 {
                    return Flow::Reject(*error);
                }
            }
            Stmt::Assign(..)
            | Stmt::If(..)
            | Stmt::Apply { .. }
            | Stmt::Call(..)
            | Stmt::Extract(_) => {
                unreachable!("lowered into ops of their own")
            }
        }
        Flow::Next
    }

    fn stack_shift(&mut self, prog: &Program, stack: usize, count: usize, push: bool) {
        let members = &prog.stacks[stack];
        let n = members.len();
        let count = count.min(n);
        let order: Vec<usize> = if push {
            (0..n).rev().collect()
        } else {
            (0..n).collect()
        };
        for i in order {
            let src = if push {
                i.checked_sub(count)
            } else {
                Some(i + count).filter(|s| *s < n)
            };
            let dst_inst = &prog.instances[members[i]];
            match src {
                Some(s) => {
                    let src_inst = &prog.instances[members[s]];
                    let len = dst_inst.fields.len();
                    self.phv
                        .fields
                        .copy_within(src_inst.base..src_inst.base + len, dst_inst.base);
                    self.phv.valid[members[i]] = self.phv.valid[members[s]];
                }
                None => self.phv.valid[members[i]] = false,
            }
        }
        let next = self.phv.stack_next[stack];
        self.phv.stack_next[stack] = if push {
            (next + count).min(n)
        } else {
            next.saturating_sub(count)
        };
    }

    /// Looks a table up with the packet's key; counts the hit (or miss) and runs the direct
    /// meter of the entry hit (or of the default entry). Returns whether it hit and the
    /// action to run: the entry's own, its profile member's, or the member its group's
    /// selector picks. An entry naming an empty group acts as a miss (runs the default
    /// action, `hit` false; the P4Runtime spec leaves this to the target, and we have not
    /// checked BMv2's choice); its direct counter still counts the packet.
    fn lookup<'t>(
        &mut self,
        prog: &Program,
        profiles: &'t [Profile],
        table: usize,
        t: &'t mut Table,
    ) -> (bool, &'t ActionCall) {
        let def = &prog.tables[table];
        self.key.clear();
        for k in &def.keys {
            let v = self.eval(&k.expr, &[], None);
            self.key.push(v);
        }
        self.flags.direct_color = Color::Green as u128;
        let slot = if def.keys.is_empty() {
            None
        } else {
            t.lookup(&self.key, &mut self.key_scratch)
        };
        if !self.rehearsing {
            self.count_hit(prog, def.direct_meter, t, slot);
        }
        let chosen = match slot.and_then(|s| t.entry(s)).map(|e| &e.action) {
            Some(EntryAction::Direct(call)) => Some(call),
            Some(EntryAction::Member(id)) => {
                def.implementation.and_then(|p| profiles[p].member(*id))
            }
            Some(EntryAction::Group(id)) => def.implementation.and_then(|p| {
                let hash = self.selector_hash(prog, p, &def.selector_keys);
                profiles[p].pick(*id, hash)
            }),
            None => None,
        };
        match chosen {
            Some(call) => (true, call),
            None => (false, &t.default_action),
        }
    }

    /// The selector's hash of the table's selector keys, cut to its output width.
    fn selector_hash(&mut self, prog: &Program, profile: usize, keys: &Packed) -> u64 {
        let Some((algo, width)) = prog.profiles[profile].selector else {
            return 0;
        };
        (self.hash(algo, keys, &[], None) & mask(width)) as u64
    }

    /// A packet's marks on the table: the entry's (or the default entry's) counters, last
    /// hit and direct meter, whose colour the packet carries on.
    fn count_hit(
        &mut self,
        prog: &Program,
        meter: Option<usize>,
        t: &mut Table,
        slot: Option<usize>,
    ) {
        let len = self.phv.fields[sm::PACKET_LENGTH] as u64;
        let now = self.now_ns;
        let direct = if let Some(entry) = slot.and_then(|s| t.entry_mut(s)) {
            entry.last_hit_ns = now;
            &mut entry.direct
        } else {
            &mut t.default_direct
        };
        direct.packets += 1;
        direct.bytes += len;
        if let Some(dm) = meter {
            let unit = prog.direct_meters[dm].unit;
            self.flags.direct_color = direct.meter.execute(unit, len, now) as u128;
        }
    }

    // ---- expressions ----

    /// H(data): the items' values bit-concatenated into bytes as section 7 of the IR says.
    fn hash(&mut self, algo: Algo, data: &Packed, params: &[u128], packet: Option<&[u8]>) -> u128 {
        if !data.of_fields {
            self.values.clear();
            for e in &data.items {
                let v = self.eval(e, params, packet);
                self.values.push(v);
            }
        }
        let (fields, values, bits) = (&self.phv.fields, &self.values, &mut self.bits);
        // One closure per source, so that each compiles to plain indexing.
        if data.of_fields {
            hash_words(algo, data, |slot| fields[slot], bits)
        } else {
            hash_words(algo, data, |item| values[item], bits)
        }
    }

    /// Evaluates an expression; leaves (most operands) without a call.
    #[inline(always)]
    fn eval(&mut self, e: &Expr, params: &[u128], packet: Option<&[u8]>) -> u128 {
        match e {
            Expr::Const(v) => *v,
            Expr::Field(slot) => self.phv.fields[*slot],
            Expr::Valid(inst) => self.phv.valid[*inst] as u128,
            Expr::Param(i) => params.get(*i).copied().unwrap_or(0),
            _ => self.eval_node(e, params, packet),
        }
    }

    fn eval_node(&mut self, e: &Expr, params: &[u128], packet: Option<&[u8]>) -> u128 {
        match e {
            Expr::Const(_) | Expr::Field(_) | Expr::Valid(_) | Expr::Param(_) => {
                self.eval(e, params, packet)
            }
            Expr::Lookahead(w) => {
                let bytes = packet.unwrap_or(&[]);
                match read_bits(bytes, self.cursor * 8, *w) {
                    Some(v) => v,
                    None => {
                        self.short = true;
                        0
                    }
                }
            }
            Expr::Remaining(w) => {
                let left = packet.map_or(0, |bytes| bytes.len().saturating_sub(self.cursor));
                (left as u128 * 8).min(crate::values::mask(*w))
            }
            Expr::Un(op, a, w) => lowered::unary(*op, self.eval(a, params, packet), *w),
            Expr::Bin(op, a, b, w) => self.eval_binary(*op, a, b, *w, params, packet),
            Expr::Cond(c, a, b) => {
                if self.eval(c, params, packet) != 0 {
                    self.eval(a, params, packet)
                } else {
                    self.eval(b, params, packet)
                }
            }
            Expr::Slice(a, hi, lo) => lowered::slice(self.eval(a, params, packet), *hi, *lo),
            Expr::Concat(a, b, bw) => {
                let high = self.eval(a, params, packet);
                lowered::concat(high, self.eval(b, params, packet), *bw)
            }
            Expr::Cast(a, w) => self.eval(a, params, packet) & mask(*w),
        }
    }

    fn eval_binary(
        &mut self,
        op: BinOp,
        a: &Expr,
        b: &Expr,
        w: u32,
        params: &[u128],
        packet: Option<&[u8]>,
    ) -> u128 {
        let x = self.eval(a, params, packet);
        match op {
            BinOp::LAnd if x == 0 => return 0,
            BinOp::LOr if x != 0 => return 1,
            _ => {}
        }
        lowered::binary(op, x, self.eval(b, params, packet), w)
    }
}

/// `header` copied into `tail` with `WINDOW_PAD` zero bytes after it (a header that ends
/// less than a window before the packet does); out of line, as it is rare.
#[cold]
fn padded_copy<'a>(tail: &'a mut Vec<u8>, header: &[u8]) -> &'a [u8] {
    tail.clear();
    tail.extend_from_slice(header);
    tail.resize(header.len() + WINDOW_PAD, 0);
    tail
}

/// H(data) of the data `data` lays out from `value`s; `bits` is scratch space for the bytes.
fn hash_words(
    algo: Algo,
    data: &Packed,
    value: impl Fn(usize) -> u128,
    bits: &mut Vec<u8>,
) -> u128 {
    if algo == Algo::Standard(HashAlgorithm::Csum16) {
        // The checksum sums the fields' shares: no words assembled, no bytes written.
        return data.sum.csum16(value) as u128;
    }
    bits.clear();
    data.plan.emit(bits, value);
    match algo {
        Algo::Standard(a) => a.compute(bits),
        Algo::Xor16 => bits.chunks(2).fold(0u16, |acc, c| {
            acc ^ u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])
        }) as u128,
    }
}

/// Whether a select case matches the keys, keyset by keyset. A case of one `Any` or one
/// value set covers all the keys: `zip` stops after its one keyset.
fn case_matches(sets: &[KeySet], key: &[u128], value_sets: &[ValueSet]) -> bool {
    sets.iter().zip(key).all(|(s, k)| match *s {
        KeySet::Exact(v) => *k == v,
        KeySet::Mask(v, m) => *k & m == v,
        KeySet::Range(lo, hi) => lo <= *k && *k <= hi,
        KeySet::Any => true,
        KeySet::ValueSet(i) => value_sets[i].contains(key),
    })
}

impl Runtime {
    pub fn new(prog: Arc<Program>) -> Result<Runtime, String> {
        let mut tables = Vec::new();
        for t in &prog.tables {
            let kinds = t.keys.iter().map(|k| k.kind).collect();
            let widths = t.keys.iter().map(|k| k.width).collect();
            let default = ActionCall {
                action: t.default_action,
                params: t.default_args.clone(),
            };
            tables.push(Table::new(kinds, widths, t.size, default));
        }
        let mut rt = Runtime {
            code: Code::new(&prog),
            profiles: prog.profiles.iter().map(|_| Profile::default()).collect(),
            counters: prog.counters.iter().map(|c| vec![(0, 0); c.size]).collect(),
            meters: prog
                .meters
                .iter()
                .map(|m| vec![MeterCell::default(); m.size])
                .collect(),
            registers: prog.registers.iter().map(|r| vec![0; r.size]).collect(),
            pre: Pre::default(),
            value_sets: prog.value_sets.iter().map(ValueSet::new).collect(),
            tables,
            prog,
            tag: None,
        };
        rt.install_const_entries()?;
        Ok(rt)
    }

    fn install_const_entries(&mut self) -> Result<(), String> {
        let prog = self.prog.clone();
        for (ti, t) in prog.tables.iter().enumerate() {
            for (ei, e) in t.const_entries.iter().enumerate() {
                let at = format!("{}: const entry {ei}", t.name);
                let matches = crate::control::parse_matches(&e.matches, &at)?;
                let call = EntryAction::Direct(ActionCall {
                    action: e.action,
                    params: e.args.clone(),
                });
                let slot = self.tables[ti]
                    .insert(&matches, e.priority, call)
                    .map_err(|err| format!("{at}: {err}"))?;
                if let Some(entry) = self.tables[ti].entry_mut(slot) {
                    entry.is_const = t.is_const || e.is_const;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(inst: usize, field: usize, w: u32) -> serde_json::Value {
        json!({"op": "field", "w": w, "inst": inst, "field": field})
    }

    fn c(v: &str, w: u32) -> serde_json::Value {
        json!({"op": "const", "w": w, "v": v})
    }

    /// The `fuzz_ir` program's runtime and a worker for it.
    fn fuzz_rig() -> (Runtime, Worker) {
        let rt = Runtime::new(Arc::new(crate::program::load(&fuzz_ir()).unwrap())).unwrap();
        let worker = Worker::new(&rt.prog);
        (rt, worker)
    }

    /// A parser with everything that can run off a packet's end: extract, a header stack,
    /// lookahead, advance, verify; ingress forwards on a table hit and uses the fields.
    fn fuzz_ir() -> serde_json::Value {
        let sm_fields: Vec<_> = [9, 9, 9, 32, 32, 32, 19, 32, 19, 48, 48, 16, 16, 1, 32, 3]
            .iter()
            .enumerate()
            .map(|(i, w)| json!({"name": format!("f{i}"), "w": w, "offset": 0}))
            .collect();
        json!({
            "format": "dplab-p4-ir", "version": 1, "program": "fuzz",
            "instances": [
                {"name": "standard_metadata", "kind": "metadata", "bits": 0, "fields": sm_fields},
                {"name": "hdr.eth", "kind": "header", "bits": 112, "fields": [
                    {"name": "dst", "w": 48, "offset": 0}, {"name": "src", "w": 48, "offset": 48},
                    {"name": "type", "w": 16, "offset": 96}]},
                {"name": "hdr.mpls[0]", "kind": "header", "bits": 32, "fields": [
                    {"name": "label", "w": 20, "offset": 0}, {"name": "bos", "w": 1, "offset": 20},
                    {"name": "rest", "w": 11, "offset": 21}]},
                {"name": "hdr.mpls[1]", "kind": "header", "bits": 32, "fields": [
                    {"name": "label", "w": 20, "offset": 0}, {"name": "bos", "w": 1, "offset": 20},
                    {"name": "rest", "w": 11, "offset": 21}]},
                {"name": "hdr.ip", "kind": "header", "bits": 160, "fields": [
                    {"name": "version", "w": 4, "offset": 0}, {"name": "ihl", "w": 4, "offset": 4},
                    {"name": "ttl", "w": 8, "offset": 8}, {"name": "csum", "w": 16, "offset": 16},
                    {"name": "dst", "w": 32, "offset": 32}, {"name": "rest", "w": 96, "offset": 64}]},
                {"name": "$locals", "kind": "metadata", "bits": 8, "fields": [{"name": "peek", "w": 8, "offset": 0}]}
            ],
            "stacks": [{"name": "hdr.mpls", "size": 2, "instances": [2, 3]}],
            "errors": ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
                       "ParserTimeout", "ParserInvalidArgument", "BadVersion"],
            "parser": {"start": 0, "states": [
                {"name": "start", "body": [{"kind": "extract", "inst": 1}],
                 "transition": {"kind": "select", "keys": [f(1, 2, 16)], "cases": [
                     {"sets": [{"kind": "exact", "v": "0x8847"}], "next": 1},
                     {"sets": [{"kind": "mask", "v": "0x0800", "m": "0xff00"}], "next": 2},
                     {"sets": [{"kind": "range", "lo": "0x0600", "hi": "0x06ff"}], "next": -1}]}},
                {"name": "mpls", "body": [{"kind": "extract", "stack": 0}],
                 "transition": {"kind": "select", "keys": [{"op": "lookahead", "w": 4}], "cases": [
                     {"sets": [{"kind": "exact", "v": "0x4"}], "next": 2},
                     {"sets": [{"kind": "any"}], "next": 1}]}},
                {"name": "ip", "body": [
                    {"kind": "assign", "dst": {"inst": 5, "field": 0}, "src": {"op": "lookahead", "w": 8}},
                    {"kind": "extract", "inst": 4},
                    {"kind": "verify", "cond": {"op": "eq", "w": 1, "a": f(4, 0, 4), "b": c("0x4", 4)}, "error": 7},
                    {"kind": "advance", "bits": {"op": "shl", "w": 32,
                        "a": {"op": "cast", "w": 32, "a": {"op": "sub", "w": 4, "a": f(4, 1, 4), "b": c("0x5", 4)}},
                        "b": c("0x5", 32)}}],
                 "transition": {"kind": "goto", "next": -1}}]},
            "controls": {"ingress": {"name": "I", "body": [
                {"kind": "apply", "table": 0, "hit_dest": {"inst": 5, "field": 0}},
                {"kind": "if", "cond": {"op": "valid", "w": 1, "inst": 4}, "then": [
                    {"kind": "assign", "dst": {"inst": 4, "field": 2},
                     "src": {"op": "sub", "w": 8, "a": f(4, 2, 8), "b": c("0x1", 8)}},
                    {"kind": "assign", "dst": {"inst": 4, "field": 3, "hi": 7, "lo": 0},
                     "src": {"op": "concat", "w": 8, "a": {"op": "slice", "w": 4, "a": f(4, 4, 32), "hi": 3, "lo": 0},
                             "b": c("0x0", 4)}},
                    {"kind": "stack_pop", "stack": 0, "count": 1}], "else": []}]},
                "egress": {"name": "E", "body": [
                    {"kind": "update_checksum", "cond": {"op": "valid", "w": 1, "inst": 4},
                     "data": [f(4, 0, 4), f(4, 1, 4), f(4, 2, 8), f(4, 4, 32)], "dst": {"inst": 4, "field": 3},
                     "algo": "csum16"}]}},
            "deparser": {"emit": [1, 2, 3, 4]},
            "actions": [
                {"id": 1, "name": "fwd", "params": [{"id": 1, "name": "port", "w": 9}],
                 "body": [{"kind": "assign", "dst": {"inst": 0, "field": 1}, "src": {"op": "param", "w": 9, "index": 0}}]},
                {"id": 2, "name": "drop", "params": [],
                 "body": [{"kind": "assign", "dst": {"inst": 0, "field": 1}, "src": c("0x1ff", 9)}]}],
            "tables": [{"id": 9, "name": "t", "size": 16,
                "keys": [{"id": 1, "name": "k", "match": "ternary", "w": 16, "expr": f(1, 2, 16)}],
                "actions": [{"action": 0, "scope": "table_and_default"}, {"action": 1, "scope": "table_and_default"}],
                "default_action": {"action": 0, "args": ["0x2"], "const": false},
                "const_entries": [{"priority": 1, "matches": [{"kind": "ternary", "v": "0x0600", "m": "0xff00"}],
                                   "action": {"action": 1, "args": []}}]}]
        })
    }

    /// The data path relies on two things the compiler always gives: header fields that
    /// tile the header, and actions that apply no table. Other IR gets a clear error.
    #[test]
    fn loader_rejects_gapped_headers_and_actions_that_apply_tables() {
        let mut gapped = fuzz_ir();
        gapped["instances"][1]["fields"][1]["offset"] = json!(50);
        let err = crate::program::load(&gapped).unwrap_err();
        assert!(
            err.contains("hdr.eth") && err.contains("offset 50"),
            "{err}"
        );
        let mut short = fuzz_ir();
        short["instances"][1]["bits"] = json!(120);
        let err = crate::program::load(&short).unwrap_err();
        assert!(err.contains("fields make 112 bits"), "{err}");
        let mut applying = fuzz_ir();
        applying["actions"][0]["body"] = json!([{"kind": "apply", "table": 0}]);
        let err = crate::program::load(&applying).unwrap_err();
        assert!(
            err.contains("fwd") && err.contains("cannot apply a table"),
            "{err}"
        );
    }

    /// A small deterministic random source (xorshift64) for the packet fuzz tests.
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    #[test]
    fn random_bytes_never_panic_and_output_stays_bounded() {
        let (mut rt, mut worker) = fuzz_rig();
        let mut rand = xorshift(0x1234_5678_9abc_def1);
        let (mut out, mut events) = (Vec::new(), Vec::new());
        let mut forwarded = 0;
        for i in 0..50_000 {
            let len = (rand() % 120) as usize;
            let mut packet: Vec<u8> = (0..len).map(|_| rand() as u8).collect();
            // Steer a share of the packets into the deeper parser states.
            if len >= 14 && i % 3 == 0 {
                packet[12] = 0x88;
                packet[13] = 0x47;
            } else if len >= 14 && i % 3 == 1 {
                packet[12] = 0x08;
                packet[13] = 0x00;
            }
            worker.process(&mut rt, 1, &packet, i, &mut out, &mut events);
            for (port, bytes) in out.drain(..) {
                assert_eq!(port, 2);
                assert!(
                    bytes.len() <= packet.len() + 8,
                    "output grew: {} -> {}",
                    packet.len(),
                    bytes.len()
                );
                forwarded += 1;
            }
        }
        assert!(forwarded > 10_000, "only {forwarded} forwarded");
        assert!(worker.stats.dropped > 0);
    }

    /// Every output of 20,000 random packets, folded into one CRC: the figure the
    /// interpreter gave before its fast paths were written, so any change of behaviour on
    /// these packets (bytes, ports, drops) shows here.
    #[test]
    fn random_packets_give_the_recorded_outputs() {
        let (mut rt, mut worker) = fuzz_rig();
        let mut rand = xorshift(0x0bad_cafe_f00d_1234);
        let (mut out, mut events) = (Vec::new(), Vec::new());
        let mut record = Vec::new();
        for i in 0..20_000u64 {
            let len = (rand() % 100) as usize;
            let mut packet: Vec<u8> = (0..len).map(|_| rand() as u8).collect();
            if len >= 14 {
                let kind: [[u8; 2]; 4] = [[0x88, 0x47], [0x08, 0x00], [0x06, 0x12], [0x08, 0x33]];
                packet[12..14].copy_from_slice(&kind[(i % 4) as usize]);
            }
            if len >= 15 && i % 8 < 4 {
                packet[14] = 0x45; // a valid IPv4 version and header length, mostly
            }
            worker.process(&mut rt, 1, &packet, i, &mut out, &mut events);
            record.extend_from_slice(&(out.len() as u32).to_be_bytes());
            for (port, bytes) in out.drain(..) {
                record.extend_from_slice(&port.to_be_bytes());
                record.extend_from_slice(&bytes);
            }
            let error = worker.phv.fields[sm::PARSER_ERROR] as u8;
            record.push(error);
        }
        record.extend_from_slice(&worker.stats.dropped.to_be_bytes());
        let digest = crate::hashes::crc32(&record);
        assert_eq!(
            digest,
            0xcad1_20ac,
            "outputs changed: crc32 {digest:#010x} of {} bytes",
            record.len()
        );
    }

    #[test]
    fn short_header_sets_packet_too_short_and_keeps_earlier_headers() {
        let (mut rt, mut worker) = fuzz_rig();
        let mut packet = vec![0u8; 20];
        packet[12] = 0x08;
        let (mut out, mut events) = (Vec::new(), Vec::new());
        worker.process(&mut rt, 1, &packet, 0, &mut out, &mut events);
        assert_eq!(
            worker.phv.fields[sm::PARSER_ERROR],
            ERROR_PACKET_TOO_SHORT as u128
        );
        assert!(worker.phv.valid[1] && !worker.phv.valid[4]);
        // The deparser writes the Ethernet header and the unparsed rest back unchanged.
        assert_eq!(out, vec![(2, packet)]);
    }

    /// `remaining` (the bits after the parser's cursor) lets a parser check that a whole
    /// header is there before it reads any of it (the compiler's varbit extract): too few
    /// bytes leave the header invalid and its bytes in the payload.
    #[test]
    fn remaining_bits_let_the_parser_check_a_header_before_reading_it() {
        let mut ir = fuzz_ir();
        let check = json!({"kind": "verify", "error": 1, "cond": {"op": "ge", "w": 1,
            "a": {"op": "remaining", "w": 32}, "b": c("0xa0", 32)}});
        ir["parser"]["states"][2]["body"]
            .as_array_mut()
            .unwrap()
            .insert(0, check);
        let mut rt = Runtime::new(Arc::new(crate::program::load(&ir).unwrap())).unwrap();
        let mut worker = Worker::new(&rt.prog);
        let (mut out, mut events) = (Vec::new(), Vec::new());
        let mut short = vec![0u8; 14 + 19];
        short[12] = 0x08;
        short[14] = 0x45;
        worker.process(&mut rt, 1, &short, 0, &mut out, &mut events);
        assert_eq!(
            worker.phv.fields[sm::PARSER_ERROR],
            ERROR_PACKET_TOO_SHORT as u128
        );
        assert!(!worker.phv.valid[4]);
        assert_eq!(out, vec![(2, short)]);
        let mut whole = vec![0u8; 14 + 20];
        whole[12] = 0x08;
        whole[14] = 0x45;
        worker.process(&mut rt, 1, &whole, 1, &mut out, &mut events);
        assert_eq!(worker.phv.fields[sm::PARSER_ERROR], 0);
        assert!(worker.phv.valid[4]);
    }

    #[test]
    fn recycled_buffers_are_reused_and_hold_only_the_new_packet() {
        let (mut rt, mut worker) = fuzz_rig();
        let (mut out, mut events) = (Vec::new(), Vec::new());
        let long: Vec<u8> = (0..100u8).collect();
        worker.process(&mut rt, 1, &long, 0, &mut out, &mut events);
        let (_, first) = out.pop().expect("forwarded");
        let address = first.as_ptr();
        worker.recycle(first);
        let short: Vec<u8> = (0..30u8).rev().collect();
        worker.process(&mut rt, 1, &short, 1, &mut out, &mut events);
        let (_, second) = out.pop().expect("forwarded");
        assert_eq!(
            second.as_ptr(),
            address,
            "the recycled buffer was not reused"
        );
        assert_eq!(second, short, "leftovers of the longer packet came out");
    }
}
