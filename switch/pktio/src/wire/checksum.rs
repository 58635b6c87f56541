//! The Internet checksum (RFC 1071): sums of 16-bit words, folded and complemented.

/// The Internet checksum: ones' complement of the ones' complement sum of 16-bit words.
pub fn csum16(data: &[u8]) -> u16 {
    !fold(sum_bytes(data))
}

/// Ones' complement sum of big-endian 16-bit words (a trailing odd byte padded with 0),
/// not yet folded: partial sums (a pseudo-header, then data) add up before one fold.
pub fn sum_bytes(data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(4);
    let mut sum: u64 = words
        .by_ref()
        .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]) as u64)
        .sum();
    let rest = words.remainder();
    let mut pairs = rest.chunks_exact(2);
    sum += pairs
        .by_ref()
        .map(|p| u16::from_be_bytes([p[0], p[1]]) as u64)
        .sum::<u64>();
    if let [last] = pairs.remainder() {
        sum += (*last as u64) << 8;
    }
    sum
}

/// Folds a [`sum_bytes`] sum into 16 bits (end-around carry).
pub fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_header_checksum() {
        let header = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(csum16(&header), 0xb861);
    }
}
