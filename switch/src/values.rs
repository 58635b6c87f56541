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
    if bit_offset.is_multiple_of(8) && width.is_multiple_of(8) {
        let start = bit_offset / 8;
        let mut v: u128 = 0;
        for b in &data[start..start + width as usize / 8] {
            v = (v << 8) | *b as u128;
        }
        return Some(v);
    }
    let mut v: u128 = 0;
    for i in bit_offset..end_bit {
        let bit = (data[i / 8] >> (7 - (i % 8))) & 1;
        v = (v << 1) | bit as u128;
    }
    Some(v)
}

/// Appends `width` bits of `value` to a bit stream held in `out` with `bit_len` bits used.
#[inline]
pub fn write_bits(out: &mut Vec<u8>, bit_len: &mut usize, value: u128, width: u32) {
    if bit_len.is_multiple_of(8) && width.is_multiple_of(8) {
        for i in (0..width / 8).rev() {
            out.push((value >> (i * 8)) as u8);
        }
        *bit_len += width as usize;
        return;
    }
    for i in (0..width).rev() {
        let bit = ((value >> i) & 1) as u8;
        if bit_len.is_multiple_of(8) {
            out.push(0);
        }
        if bit != 0 {
            let last = out.len() - 1;
            out[last] |= 1 << (7 - (*bit_len % 8));
        }
        *bit_len += 1;
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
    }
}
