//! The compiled-code-object cache, in memory and on disk, through [`chorus_cache`]: the one
//! implementation chorus-cuda's cache uses too (its documentation says how each level works and
//! what the disk level checks). What is chorus-hip's here: what identifies a compile.
//!
//! **Memory**: entries are found by a hash of the inputs and then compared with the full
//! inputs (compiler identity, architecture, options, source), so a collision never returns the
//! wrong code object; the level holds at most [`chorus_cache::MEMORY_CACHE_BYTES`], the oldest
//! entries leaving first. **Disk**: `KEY.hsaco` in the cache directory every backend shares
//! ([`dir`]), `KEY` the SHA-256 of the inputs: checksummed, written atomically, read only from
//! regular files of a directory that is the user's own, and deleted by `chorus cache clear`
//! (which deletes nothing Chorus did not write).

use chorus_cache::FastHasher;
use chorus_cache::disk::{self, EntryKind, Read};
use chorus_cache::memory::MemoryCache;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

pub use chorus_cache::disk::dir;

/// What identifies one compile.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Inputs<'a> {
    /// The compiler and its version (`hiprtc 6.2 /opt/rocm/lib/libhiprtc.so`).
    pub compiler: &'a str,
    /// The processor (`gfx942:sramecc+:xnack-`).
    pub arch: &'a str,
    /// Every option passed.
    pub options: &'a [String],
    /// The source.
    pub source: &'a str,
}

impl Inputs<'_> {
    /// The disk key: hex SHA-256 of the length-prefixed parts and this crate's version.
    pub fn key(&self) -> String {
        let options = self.options.join("\0");
        chorus_cache::key(&[
            "chorus-hip".as_bytes(),
            env!("CARGO_PKG_VERSION").as_bytes(),
            self.compiler.as_bytes(),
            self.arch.as_bytes(),
            options.as_bytes(),
            self.source.as_bytes(),
        ])
    }

    fn fast_hash(&self) -> u64 {
        let mut h = FastHasher::default();
        self.hash(&mut h);
        h.finish()
    }
}

/// One memory entry: the full inputs, compared on lookup, and the code object.
struct Entry {
    compiler: String,
    arch: String,
    options: Vec<String>,
    source: String,
    code: Arc<[u8]>,
}

impl Entry {
    fn answers(&self, inputs: &Inputs<'_>) -> bool {
        self.compiler == inputs.compiler
            && self.arch == inputs.arch
            && self.options == inputs.options
            && self.source == inputs.source
    }

    /// The bytes it holds, as the memory level's budget counts them.
    fn bytes(&self) -> usize {
        std::mem::size_of::<Entry>()
            + self.compiler.len()
            + self.arch.len()
            + self
                .options
                .iter()
                .map(|o| o.len() + std::mem::size_of::<String>())
                .sum::<usize>()
            + self.source.len()
            + self.code.len()
    }
}

static MEMORY: Mutex<Option<MemoryCache<Entry>>> = Mutex::new(None);

/// The code object compiled from `inputs` in this process, if any.
pub fn memory_get(inputs: &Inputs<'_>) -> Option<Arc<[u8]>> {
    let memory = MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    memory
        .as_ref()?
        .get(inputs.fast_hash(), |e| e.answers(inputs))
        .map(|e| e.code.clone())
}

/// Keeps `code` for `inputs` in this process (within the memory level's budget).
pub fn memory_put(inputs: &Inputs<'_>, code: Arc<[u8]>) {
    let entry = Entry {
        compiler: inputs.compiler.into(),
        arch: inputs.arch.into(),
        options: inputs.options.to_vec(),
        source: inputs.source.into(),
        code,
    };
    let bytes = entry.bytes();
    let mut memory = MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    memory.get_or_insert_with(MemoryCache::default).put(
        inputs.fast_hash(),
        entry,
        bytes,
        chorus_cache::MEMORY_CACHE_BYTES,
        |e| e.answers(inputs),
    );
}

/// The path of the entry for `key`.
pub fn entry_path(key: &str) -> PathBuf {
    disk::entry_path(&dir(), key, EntryKind::HSACO)
}

/// The code object stored under `key`, if a whole, uncorrupted entry is there (anything else at
/// its path is ignored; a damaged entry is deleted).
pub fn disk_get(key: &str) -> Option<Vec<u8>> {
    match disk::read(&dir(), key, EntryKind::HSACO) {
        Read::Hit(code) => Some(code),
        Read::Absent => None,
        Read::Ignored(why) | Read::Corrupted(why) => {
            tracing::debug!(target: "chorus_hip", "{why}");
            None
        }
        Read::Refused(e) => {
            disk::warn_disk_cache_off(&e);
            None
        }
    }
}

/// Stores `code` under `key`; failures leave the cache as it was (the compile went well).
pub fn disk_put(key: &str, code: &[u8]) {
    match disk::write(&dir(), key, EntryKind::HSACO, code) {
        Ok(()) => {}
        Err(e @ disk::Error::Refused(_)) => disk::warn_disk_cache_off(&e),
        Err(e) => tracing::debug!(target: "chorus_hip", "not caching {key} on disk: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_hits_compare_the_whole_inputs() {
        let options = vec!["-O3".to_string()];
        let a = Inputs {
            compiler: "test",
            arch: "gfx90a",
            options: &options,
            source: "kernel a",
        };
        memory_put(&a, Arc::from(&b"A"[..]));
        assert_eq!(memory_get(&a).as_deref(), Some(&b"A"[..]));
        let b = Inputs {
            source: "kernel b",
            ..a.clone()
        };
        assert_eq!(memory_get(&b), None);
        assert_ne!(a.key(), b.key());
        assert_eq!(a.key().len(), 64);
        // Putting the same compile again replaces it.
        memory_put(&a, Arc::from(&b"A2"[..]));
        assert_eq!(memory_get(&a).as_deref(), Some(&b"A2"[..]));
    }

    #[test]
    fn the_memory_level_is_bounded() {
        let source = "x".repeat(1 << 20);
        let options = Vec::new();
        let arch = format!("gfx-bounded-{}", line!());
        let budget = chorus_cache::MEMORY_CACHE_BYTES;
        for n in 0..(budget >> 20) + 8 {
            let compiler = format!("test {n}");
            let inputs = Inputs {
                compiler: &compiler,
                arch: &arch,
                options: &options,
                source: &source,
            };
            memory_put(&inputs, Arc::from(&b"code"[..]));
        }
        let memory = MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
        let held = memory.as_ref().map_or(0, MemoryCache::bytes);
        assert!(held <= budget, "{held} bytes held, budget {budget}");
    }
}
