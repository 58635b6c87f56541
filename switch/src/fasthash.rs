//! A small, fast, non-cryptographic hasher for table keys (the std SipHash is several
//! times slower, and table keys come from our own pipeline, not from an adversary who
//! controls the hash seed... but packets are adversarial, so the map still uses a random
//! per-process seed).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

#[derive(Clone, Copy)]
pub struct FastState {
    seed: u64,
}

impl Default for FastState {
    fn default() -> Self {
        FastState {
            seed: pktio::sys::random_u64() | 1,
        }
    }
}

pub struct FastHasher {
    state: u64,
}

const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.state = (self.state.rotate_left(5) ^ value).wrapping_mul(MULTIPLIER);
    }
    fn write_u128(&mut self, value: u128) {
        self.write_u64(value as u64);
        self.write_u64((value >> 64) as u64);
    }
    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
    fn finish(&self) -> u64 {
        let x = self.state;
        (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ (x >> 32)
    }
}

impl BuildHasher for FastState {
    type Hasher = FastHasher;
    fn build_hasher(&self) -> FastHasher {
        FastHasher { state: self.seed }
    }
}

pub type FastMap<K, V> = HashMap<K, V, FastState>;
