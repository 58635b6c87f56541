//! v1model hash algorithms over a byte string (the bit-concatenated field list).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashAlgorithm {
    Crc16,
    Crc32,
    Identity,
    Csum16,
}

impl HashAlgorithm {
    pub fn parse(name: &str) -> Option<HashAlgorithm> {
        Some(match name {
            "crc16" => HashAlgorithm::Crc16,
            "crc32" => HashAlgorithm::Crc32,
            "identity" => HashAlgorithm::Identity,
            "csum16" => HashAlgorithm::Csum16,
            _ => return None,
        })
    }

    pub fn compute(self, data: &[u8]) -> u128 {
        match self {
            HashAlgorithm::Crc16 => crc16(data) as u128,
            HashAlgorithm::Crc32 => crc32(data) as u128,
            HashAlgorithm::Identity => data.iter().fold(0u128, |acc, b| (acc << 8) | *b as u128),
            HashAlgorithm::Csum16 => csum16(data) as u128,
        }
    }
}

/// CRC-16/ARC (polynomial 0x8005 reflected, initial 0), as BMv2's `crc16`.
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for b in data {
        crc ^= *b as u16;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xA001
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// CRC-32 (IEEE 802.3, reflected, initial and final xor 0xFFFFFFFF).
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc: u32 = 0xFFFF_FFFF;
    for b in data {
        crc ^= *b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

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
    fn standard_check_values() {
        assert_eq!(crc16(b"123456789"), 0xBB3D);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn ipv4_header_checksum() {
        let header = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(csum16(&header), 0xb861);
    }
}
