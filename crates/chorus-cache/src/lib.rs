//! The compile cache of every Chorus backend (chorus-cuda's PTX and cubin images, chorus-hip's
//! code objects): one implementation of each idea, so that a hardening fix reaches every
//! backend at once.
//!
//! - [`key`]: the disk key, hex SHA-256 of length-prefixed parts. SHA-256 because on disk the
//!   key *is* the identity of the kernel (nothing else is compared on read): two inputs with one
//!   key would silently load the wrong code.
//! - [`FastHasher`] and [`memory::MemoryCache`]: the memory level, found by a fast hash and
//!   confirmed by comparing the stored inputs (a collision costs a comparison, never the wrong
//!   code), holding at most a budget of bytes ([`MEMORY_CACHE_BYTES`] by default), oldest out
//!   first.
//! - [`disk`]: the disk level, in one directory for all backends (its place: [`disk::dir`]);
//!   used only when it is the user's own, entries read only from regular files without
//!   following links and up to [`disk::MAX_ENTRY_BYTES`], written atomically with a checksum,
//!   and [`disk::clear`] deletes only the files it wrote.
//!
//! The backends keep what is theirs: what identifies a compile (their compilers, options and
//! image kinds), their statistics and their error types.

pub mod disk;
pub mod memory;

use sha2::{Digest, Sha256};
use std::hash::Hasher;

/// The setting that turns the disk level off for every backend.
pub const DISK_CACHE_VARIABLE: &str = "CHORUS_DISK_CACHE";

/// The spellings an on/off `CHORUS_*` setting accepts, for error messages.
pub const FLAG_VALUES: &str = "1, true, yes, on, or 0, false, no, off (or empty)";

/// An on/off setting's value, `None` when it is none of [`FLAG_VALUES`].
pub fn parse_flag(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

/// Whether the disk level is on for a value of [`DISK_CACHE_VARIABLE`] (`None`: unset, on); an
/// invalid value is an error naming the variable and the accepted values.
pub fn disk_cache_from(value: Option<&str>) -> Result<bool, String> {
    match value {
        None => Ok(true),
        Some(v) => parse_flag(v).ok_or_else(|| {
            format!("{DISK_CACHE_VARIABLE}={v:?} is not valid: expected {FLAG_VALUES}")
        }),
    }
}

/// [`disk_cache_from`] the environment, for backends without a settings layer of their own
/// (chorus-cuda reads the variable with its other settings).
pub fn disk_cache_setting() -> Result<bool, String> {
    let value = std::env::var_os(DISK_CACHE_VARIABLE).map(|v| v.to_string_lossy().into_owned());
    disk_cache_from(value.as_deref())
}

/// How many bytes a backend's memory level keeps by default.
pub const MEMORY_CACHE_BYTES: usize = 64 << 20;

/// A cache key: hex SHA-256 of its parts (each length-prefixed, so part boundaries count).
pub fn key(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fast non-cryptographic hasher (the FxHash step, `(h.rotl(5) ^ word) * K`, over four
/// independent lanes of 8-byte words, so that long inputs are not bound by one multiply chain):
/// one pass over a source of a few KB is well under a microsecond, where SHA-256 costs about
/// 5 µs. Not collision-resistant: the memory level compares what it stored on every hit.
#[derive(Clone, Debug, Default)]
pub struct FastHasher {
    lanes: [u64; 4],
    len: u64,
}

impl FastHasher {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    fn step(lane: u64, word: u64) -> u64 {
        (lane.rotate_left(5) ^ word).wrapping_mul(Self::K)
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.len = self.len.wrapping_add(bytes.len() as u64);
        let mut blocks = bytes.chunks_exact(32);
        for block in &mut blocks {
            for (lane, word) in self.lanes.iter_mut().zip(block.chunks_exact(8)) {
                let mut w = [0u8; 8];
                w.copy_from_slice(word);
                *lane = Self::step(*lane, u64::from_le_bytes(w));
            }
        }
        let mut words = blocks.remainder().chunks(8);
        for (lane, word) in self.lanes.iter_mut().zip(&mut words) {
            let mut padded = [0u8; 8];
            padded[..word.len()].copy_from_slice(word);
            *lane = Self::step(*lane, u64::from_le_bytes(padded));
        }
    }

    fn finish(&self) -> u64 {
        let [a, b, c, d] = self.lanes;
        [b, c, d, self.len].into_iter().fold(a, Self::step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disk_cache_setting_is_on_unless_turned_off_and_refuses_other_values() {
        assert_eq!(disk_cache_from(None), Ok(true));
        for on in ["1", "true", "Yes", " on "] {
            assert_eq!(disk_cache_from(Some(on)), Ok(true), "{on}");
        }
        for off in ["0", "false", "NO", "off", ""] {
            assert_eq!(disk_cache_from(Some(off)), Ok(false), "{off:?}");
        }
        let e = disk_cache_from(Some("nope")).unwrap_err();
        assert!(
            e.contains("CHORUS_DISK_CACHE") && e.contains("true, yes, on"),
            "{e}"
        );
    }

    #[test]
    fn keys_depend_on_every_part_and_its_boundaries() {
        let a = key(&[b"ab", b"c"]);
        assert_eq!(a.len(), 64);
        assert_ne!(a, key(&[b"a", b"bc"]));
        assert_ne!(a, key(&[b"ab", b"d"]));
        assert_eq!(a, key(&[b"ab", b"c"]));
    }

    #[test]
    fn the_fast_hash_sees_every_byte_and_the_length() {
        let hash = |bytes: &[u8]| {
            let mut h = FastHasher::default();
            h.write(bytes);
            h.finish()
        };
        let base: Vec<u8> = (0..100u8).collect();
        let mut seen = std::collections::HashSet::new();
        seen.insert(hash(&base));
        for i in 0..base.len() {
            let mut changed = base.clone();
            changed[i] ^= 1;
            assert!(seen.insert(hash(&changed)), "byte {i}");
        }
        // Trailing zeros are not padding.
        assert_ne!(hash(b"abc"), hash(b"abc\0"));
        assert_ne!(hash(b""), hash(b"\0"));
        assert_eq!(hash(&base), hash(&base));
    }
}
