//! Bit-vector helpers: every P4 value up to 128 bits wide lives in a `u128`.

/// Mask of the low `width` bits.
#[inline]
pub fn mask(width: u32) -> u128 {
    if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

/// Reads `width` bits starting `bit_offset` bits into `data` (network order), or None when
/// the data is too short.
#[inline]
pub fn read_bits(data: &[u8], bit_offset: usize, width: u32) -> Option<u128> {
    let end_bit = bit_offset + width as usize;
    if end_bit > data.len() * 8 {
        return None;
    }
    // Fast path, nearly every header field: the bits lie within 8 bytes that can be
    // loaded at once.
    let (first, skew) = (bit_offset / 8, (bit_offset % 8) as u32);
    if width > 0 && skew + width <= 64 && first + 8 <= data.len() {
        let word: [u8; 8] = data[first..first + 8].try_into().unwrap_or([0; 8]);
        return Some(((u64::from_be_bytes(word) << skew) >> (64 - width)) as u128);
    }
    let mut value: u128 = 0;
    let mut pos = bit_offset;
    let mut remaining = width;
    while remaining > 0 {
        let used = (pos % 8) as u32;
        let take = (8 - used).min(remaining);
        let byte = data[pos / 8] as u128;
        // Whole bytes shift in directly; a partial byte contributes its bits [used, used+take).
        let bits = (byte >> (8 - used - take)) & mask(take);
        value = (value << take) | bits;
        pos += take as usize;
        remaining -= take;
    }
    Some(value)
}

/// Appends `width` bits of `value` to a bit stream held in `out` with `bit_len` bits used.
#[inline]
pub fn write_bits(out: &mut Vec<u8>, bit_len: &mut usize, value: u128, width: u32) {
    let mut remaining = width;
    while remaining > 0 {
        let used = (*bit_len % 8) as u32;
        if used == 0 {
            if remaining >= 8 {
                out.push((value >> (remaining - 8)) as u8);
                *bit_len += 8;
                remaining -= 8;
                continue;
            }
            out.push(0);
        }
        let take = (8 - used).min(remaining);
        let bits = ((value >> (remaining - take)) & mask(take)) as u8;
        if let Some(last) = out.last_mut() {
            *last |= bits << (8 - used - take);
        }
        *bit_len += take as usize;
        remaining -= take;
    }
}

/// A run of at most 56 bits of a field laid out in a byte string (network order). With
/// its bit skew it lies within the big-endian 8-byte window starting at `byte`, so reading
/// it is one load, a shift and a mask. Fields wider than 56 bits are cut into
/// several pieces, most significant first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// u32, not usize: `byte + 8` then cannot overflow, which spares a check per read.
    pub byte: u32,
    /// Right shift that brings the piece from its place in the window to the low bits.
    pub shift: u32,
    pub width: u32,
    /// Bits of the field's value below this piece.
    pub rest: u32,
    /// The low `width` bits (worked out once, not per packet).
    pub mask: u64,
}

const PIECE_BITS: u32 = 56;

impl Piece {
    /// Reads nothing (zero): the place of a wide field in a header's one-piece reads.
    pub const NONE: Piece = Piece {
        byte: 0,
        shift: 0,
        width: 0,
        rest: 0,
        mask: 0,
    };

    /// The pieces of a `width`-bit field starting `bit_offset` bits into a byte string.
    pub fn split(bit_offset: usize, width: u32) -> Vec<Piece> {
        let mut pieces = Vec::new();
        let mut done = 0;
        while done < width {
            let take = (width - done).min(PIECE_BITS);
            let at = bit_offset + done as usize;
            pieces.push(Piece {
                byte: (at / 8) as u32,
                shift: 64 - (at % 8) as u32 - take,
                width: take,
                rest: width - done - take,
                mask: mask(take) as u64,
            });
            done += take;
        }
        pieces
    }

    /// This piece's bits from `data`, placed where they belong in the field's value.
    /// `data` must reach 8 bytes past `byte`.
    #[inline]
    pub fn read(&self, data: &[u8]) -> u128 {
        (self.read_low(data) as u128) << self.rest
    }

    /// This piece's bits from `data` as the low bits (the whole value of a one-piece field).
    #[inline]
    pub fn read_low(&self, data: &[u8]) -> u64 {
        let window = u64::from_be_bytes(window(data, self.byte));
        (window >> self.shift) & self.mask
    }
}

#[inline]
fn window(data: &[u8], byte: u32) -> [u8; 8] {
    let byte = byte as usize;
    let mut w = [0u8; 8];
    w.copy_from_slice(&data[byte..byte + 8]);
    w
}

/// One field's share of a 64-bit word of a byte string: `((value >> rshift) & mask) << lshift`.
#[derive(Clone, Copy, Debug)]
struct Share {
    src: usize,
    rshift: u32,
    mask: u64,
    lshift: u32,
}

/// How to write fields laid out one after the other (MSB first, as P4 emits headers and
/// concatenates hash data) as bytes: word by word, each 64-bit word assembled in a
/// register from the fields' shares and appended once (writing field by field into
/// memory would make each write wait for the one before it). The shares are one flat
/// list, each marked where its word ends: a list per word would cost its own slice
/// bounds and loop per word.
#[derive(Clone, Debug, Default)]
pub struct WordPlan {
    parts: Vec<Part>,
    /// Bytes the fields fill (the last one zero-padded).
    pub bytes: usize,
    /// One past the highest source index: `emit_fields` checks this once, not each share.
    src_end: usize,
}

/// One share of a word, as `WordPlan` walks them.
#[derive(Clone, Copy, Debug)]
struct Part {
    share: Share,
    /// The field is wider than 64 bits: its value is shifted as a u128.
    wide: bool,
    /// The last share of its word: the word is complete after it.
    ends_word: bool,
}

/// Fields laid out one after the other, cut into `word_bits`-bit words: each word's
/// shares (with whether the field is wider than 64 bits), and the bits the fields fill.
fn split_words(
    fields: impl IntoIterator<Item = (usize, u32)>,
    word_bits: usize,
) -> (Vec<Vec<(bool, Share)>>, usize) {
    let mut words: Vec<Vec<(bool, Share)>> = Vec::new();
    let mut bit = 0usize;
    for (src, width) in fields {
        let end_bit = bit + width as usize;
        let mut at = bit;
        while at < end_bit {
            let word = at / word_bits;
            let end = end_bit.min(word_bits * (word + 1));
            let take = (end - at) as u32;
            if words.len() <= word {
                words.resize_with(word + 1, Vec::new);
            }
            words[word].push((
                width > 64,
                Share {
                    src,
                    rshift: (end_bit - end) as u32,
                    mask: (mask(take)) as u64,
                    lshift: (word_bits * (word + 1) - end) as u32,
                },
            ));
            at = end;
        }
        bit = end_bit;
    }
    (words, bit)
}

/// The Internet checksum (csum16) of fields laid out as a `WordPlan` lays them. It is the
/// ones'-complement sum of the 16-bit words, that is the bits' value modulo 2^16 - 1, and
/// as 2^16 is 1 modulo 2^16 - 1, a field whose lowest bit lies `p` bits above the end
/// counts as itself shifted left by `p mod 16`, wherever it sits. So the checksum is one
/// flat sum with one shift per field: no words assembled, no bytes written, no field cut
/// at word boundaries (only wider fields into 32-bit chunks, so that each term stays
/// below 2^47 and the u64 sum cannot overflow).
#[derive(Clone, Debug, Default)]
pub struct SumPlan {
    /// Fields of at most 32 bits (worked on as u64): `rshift` 0.
    narrow: Vec<Share>,
    /// The 32-bit chunks of wider fields.
    wide: Vec<Share>,
}

impl SumPlan {
    /// `fields`: (source index, width) in layout order.
    pub fn new(fields: impl IntoIterator<Item = (usize, u32)>) -> SumPlan {
        let mut plan = SumPlan::default();
        let mut end = 0u32;
        for (src, width) in fields {
            end += width;
            // The data is zero-padded to whole 16-bit words after the last field.
            let lshift = (16 - end % 16) % 16;
            let share = |rshift: u32| Share {
                src,
                rshift,
                mask: mask((width - rshift).min(32)) as u64,
                lshift,
            };
            match width <= 32 {
                true => plan.narrow.push(share(0)),
                false => plan.wide.extend((0..width).step_by(32).map(share)),
            }
        }
        plan
    }

    /// csum16 of the fields; `value(src)` gives each field's value.
    #[inline]
    pub fn csum16(&self, value: impl Fn(usize) -> u128) -> u16 {
        let narrow = self.narrow.iter().fold(0u64, |sum, s| {
            sum + (((value(s.src) as u64) & s.mask) << s.lshift)
        });
        let sum = self.wide.iter().fold(narrow, |sum, s| {
            sum + ((((value(s.src) >> s.rshift) as u64) & s.mask) << s.lshift)
        });
        !crate::hashes::fold(sum)
    }
}

impl WordPlan {
    /// `fields`: (source index, width) in layout order.
    pub fn new(fields: impl IntoIterator<Item = (usize, u32)>) -> WordPlan {
        let (words, bit) = split_words(fields, 64);
        let mut parts = Vec::new();
        for shares in words {
            let last = shares.len().saturating_sub(1);
            parts.extend(
                shares
                    .into_iter()
                    .enumerate()
                    .map(|(i, (wide, share))| Part {
                        share,
                        wide,
                        ends_word: i == last,
                    }),
            );
        }
        let src_end = parts.iter().map(|p| p.share.src + 1).max().unwrap_or(0);
        WordPlan {
            parts,
            bytes: bit.div_ceil(8),
            src_end,
        }
    }

    /// Appends the fields' bytes to `out`, each read as `fields[src]`: one length check
    /// for all of them, none per share (the deparser's hottest loop).
    #[inline]
    #[allow(unsafe_code)]
    pub fn emit_fields(&self, out: &mut Vec<u8>, fields: &[u128]) {
        assert!(
            self.src_end <= fields.len(),
            "emit: fields end before its sources"
        );
        // SAFETY: every share's src is below src_end (WordPlan::new), checked above.
        self.emit(out, |src| unsafe { *fields.get_unchecked(src) });
    }

    /// Appends the fields' bytes to `out`; `value(src)` gives each field's value.
    #[inline]
    pub fn emit(&self, out: &mut Vec<u8>, value: impl Fn(usize) -> u128) {
        let start = out.len();
        let mut word = 0u64;
        for part in &self.parts {
            let s = &part.share;
            let v = value(s.src);
            let bits = match part.wide {
                true => (v >> s.rshift) as u64,
                false => (v as u64) >> s.rshift,
            };
            word |= (bits & s.mask) << s.lshift;
            if part.ends_word {
                out.extend_from_slice(&word.to_be_bytes());
                word = 0;
            }
        }
        out.truncate(start + self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_unaligned() {
        let mut out = Vec::new();
        let mut len = 0;
        write_bits(&mut out, &mut len, 0x4, 4);
        write_bits(&mut out, &mut len, 0x5, 4);
        write_bits(&mut out, &mut len, 0x1ff, 9);
        write_bits(&mut out, &mut len, 0x3f, 7);
        assert_eq!(out, vec![0x45, 0xff, 0xbf]);
        assert_eq!(read_bits(&out, 0, 4), Some(4));
        assert_eq!(read_bits(&out, 8, 9), Some(0x1ff));
        assert_eq!(read_bits(&out, 17, 7), Some(0x3f));
        assert_eq!(read_bits(&out, 17, 8), None);
        assert_eq!(read_bits(&out, 4, 12), Some(0x5ff));
        assert_eq!(read_bits(&out, 3, 10), Some(0b00_1011_1111));
    }

    /// The 8-byte-window read against the bit-by-bit definition; whole-byte writes read back.
    #[test]
    fn fast_paths_agree_with_bit_by_bit() {
        let data: Vec<u8> = (0u8..40)
            .map(|i| i.wrapping_mul(37).wrapping_add(11))
            .collect();
        let slow = |off: usize, width: u32| -> u128 {
            (0..width as usize).fold(0, |v, i| {
                let bit = off + i;
                (v << 1) | ((data[bit / 8] >> (7 - bit % 8)) & 1) as u128
            })
        };
        for width in [1, 3, 8, 9, 16, 32, 48, 57, 64, 65, 128] {
            for off in [0usize, 1, 7, 8, 13, 64, 120, 250] {
                if off + width as usize <= data.len() * 8 {
                    assert_eq!(
                        read_bits(&data, off, width),
                        Some(slow(off, width)),
                        "{off}+{width}"
                    );
                }
            }
        }
        for width in [8u32, 16, 48, 128] {
            let (mut out, mut len) = (vec![0xaa], 8);
            let value = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128 & mask(width);
            write_bits(&mut out, &mut len, value, width);
            assert_eq!(len, 8 + width as usize);
            assert_eq!(read_bits(&out, 8, width), Some(value));
        }
    }

    /// Pieces read what the bit-by-bit helper does, for every width and skew.
    #[test]
    fn pieces_agree_with_read_bits() {
        let data: Vec<u8> = (0u8..40)
            .map(|i| i.wrapping_mul(73).wrapping_add(5))
            .collect();
        for width in [1u32, 3, 8, 13, 32, 55, 56, 57, 64, 100, 128] {
            for off in [0usize, 1, 5, 7, 8, 19, 64, 100] {
                let pieces = Piece::split(off, width);
                assert!(pieces.iter().all(|p| p.width <= PIECE_BITS));
                let value = pieces.iter().fold(0, |v, p| v | p.read(&data));
                assert_eq!(Some(value), read_bits(&data, off, width), "{off}+{width}");
            }
        }
    }

    /// A sum plan's checksum is the checksum of the bytes a word plan writes.
    #[test]
    fn sum_plan_agrees_with_the_checksum_of_the_bytes() {
        let widths = [4u32, 4, 8, 16, 3, 13, 57, 128, 1, 9, 7, 64, 2, 16, 32, 100];
        for seed in 0..20u128 {
            let values: Vec<u128> = widths
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    (0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834u128
                        ^ seed.wrapping_mul(0x1234_5678_9abc_def1) >> i)
                        .rotate_left(seed as u32 * 7)
                        & mask(*w)
                })
                .collect();
            for n in 1..=widths.len() {
                let fields = || widths[..n].iter().enumerate().map(|(i, w)| (i, *w));
                let mut bytes = Vec::new();
                WordPlan::new(fields()).emit(&mut bytes, |i| values[i]);
                let expected = crate::hashes::HashAlgorithm::Csum16.compute(&bytes) as u16;
                assert_eq!(
                    SumPlan::new(fields()).csum16(|i| values[i]),
                    expected,
                    "{seed} {n}"
                );
            }
        }
    }

    /// A word plan writes what the bit-by-bit helper does, fields crossing words included.
    #[test]
    fn word_plan_agrees_with_write_bits() {
        let widths = [4u32, 4, 8, 16, 3, 13, 57, 128, 1, 9, 7, 64, 2];
        let values: Vec<u128> = widths
            .iter()
            .enumerate()
            .map(|(i, w)| (0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834u128 >> i) & mask(*w))
            .collect();
        let (mut expected, mut len) = (vec![0xee], 8);
        for (v, w) in values.iter().zip(widths) {
            write_bits(&mut expected, &mut len, *v, w);
        }
        let plan = WordPlan::new(widths.iter().enumerate().map(|(i, w)| (i, *w)));
        let mut out = vec![0xee];
        plan.emit(&mut out, |i| values[i]);
        assert_eq!(plan.bytes, len.div_ceil(8) - 1);
        assert_eq!(out, expected);
    }
}
