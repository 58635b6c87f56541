//! Deparsing in place: when the deparser would write back exactly the headers the parser
//! extracted, where they were, the output is the received packet with the fields the
//! pipeline wrote patched in. Copying the packet and patching a few fields is much cheaper
//! than assembling every header field by field (most programs change a few fields: MAC
//! addresses, TTL, checksum).

use crate::program::Program;
use crate::values::put_bits;

/// What in-place deparsing needs to know about one packet's pass.
#[derive(Clone)]
pub(super) struct WireState {
    /// Bitmap of the slots written since the packet started: they may differ from the
    /// received bytes (extract does not clear a bit: patching an unchanged field is harmless).
    dirty: Vec<u64>,
    /// The headers extracted, in order, with their byte offsets in the packet.
    parsed: Vec<(usize, usize)>,
    /// False once header fields were copied wholesale (copy_header, stack push/pop),
    /// which marks no slot: the deparser then assembles the headers.
    kept: bool,
}

impl WireState {
    pub(super) fn new(slots: usize) -> WireState {
        WireState {
            dirty: vec![0; slots.div_ceil(64)],
            parsed: Vec::with_capacity(8),
            kept: true,
        }
    }

    pub(super) fn reset(&mut self) {
        self.dirty.fill(0);
        self.parsed.clear();
        self.kept = true;
    }

    #[inline]
    pub(super) fn mark(&mut self, slot: usize) {
        self.dirty[slot / 64] |= 1 << (slot % 64);
    }

    pub(super) fn extracted(&mut self, inst: usize, at: usize) {
        // A header extracted twice shows only its second copy's values: leave it to emit.
        if self.parsed.iter().any(|(i, _)| *i == inst) {
            self.kept = false;
        }
        self.parsed.push((inst, at));
    }

    pub(super) fn moved(&mut self) {
        self.kept = false;
    }

    /// Whether the valid headers, in deparser order, are the extracted ones in extraction
    /// order, back to back from byte 0 up to `header_end` (where the payload starts).
    pub(super) fn fits(&self, prog: &Program, valid: &[bool], header_end: usize) -> bool {
        if !self.kept {
            return false;
        }
        let mut parsed = self.parsed.iter();
        let mut end = 0;
        for &inst in prog.deparser.iter().filter(|i| valid[**i]) {
            match parsed.next() {
                Some(&(i, at)) if i == inst && at == end => {
                    end += prog.instances[inst].bits as usize / 8;
                }
                _ => return false,
            }
        }
        parsed.next().is_none() && end == header_end
    }

    /// Writes the written fields of the extracted headers into `out`, the received packet.
    pub(super) fn patch(&self, prog: &Program, fields: &[u128], out: &mut [u8]) {
        for (word, bits) in self.dirty.iter().enumerate() {
            let mut bits = *bits;
            while bits != 0 {
                let slot = word * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let (inst, field) = prog.slot_owner[slot];
                if let Some(&(_, at)) = self.parsed.iter().find(|(i, _)| *i == inst) {
                    let (width, offset) = prog.instances[inst].fields[field];
                    put_bits(out, at * 8 + offset as usize, width, fields[slot]);
                }
            }
        }
    }
}
