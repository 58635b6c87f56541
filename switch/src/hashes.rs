//! v1model hash algorithms over a byte string (the bit-concatenated field list).

pub use pktio::wire::checksum::{csum16, fold};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_check_values() {
        assert_eq!(crc16(b"123456789"), 0xBB3D);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }
}
