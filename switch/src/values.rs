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
    // Fast path, nearly every header field: whole bytes on a byte boundary.
    if bit_len.is_multiple_of(8) && width.is_multiple_of(8) {
        // Byte by byte: a copy of a few bytes of varying length would cost a memcpy call.
        for shift in (0..width).step_by(8).rev() {
            out.push((value >> shift) as u8);
        }
        *bit_len += width as usize;
        return;
    }
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

    /// The fast paths (8-byte window, whole bytes) against the bit-by-bit definition.
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
}
