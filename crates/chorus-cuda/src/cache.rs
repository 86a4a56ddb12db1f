//! The compiled-module cache of the CUDA backend: in memory and on disk, through
//! [`chorus_cache`] (one implementation for every backend: its documentation says how each
//! level works and what the disk level checks). What is chorus-cuda's here: what identifies a
//! compile, the statistics, and the `CHORUS_DISK_CACHE` switch.
//!
//! **Memory** (this process): a compile is identified by the compiler, the device
//! architecture, the user's options, the image kind and the source (everything else that goes
//! into the options is fixed for the life of the process). A lookup hashes those with
//! [`chorus_cache::FastHasher`] and then compares the stored parts, source included, with the
//! ones asked for: a hash collision costs a second comparison, never the wrong kernel. A hit is
//! one pass of the hash over the source, one comparison of it, and the clone of a few `Arc`s.
//! The level holds at most [`MEMORY_CACHE_BYTES`] (or what [`set_memory_budget`] says),
//! counting every part of an entry and its bookkeeping: past that the oldest entries leave
//! first. [`stats`] says what it holds.
//!
//! **Disk**: an entry is keyed by SHA-256 over the generated source, the compiler's identity
//! (for NVRTC, the paths, sizes and modification times of its library files, known without
//! loading it: see [`Compiler::Nvrtc`]), the full options, the architecture, the image kind and
//! this crate's version; it is `KEY.ptx` or `KEY.cubin` in [`dir`] (see
//! [`chorus_cache::disk`]). A directory that is not the user's own turns the disk level off with
//! a `tracing` warning (once per process), and [`clear`] refuses it with an error.

use crate::error::{Error, Result};
use crate::image::{CompiledImage, Compiler, ImageKind};
use crate::settings::message;
use chorus_cache::FastHasher;
use chorus_cache::disk::{self, EntryKind, Read};
use chorus_cache::memory::MemoryCache;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

pub use chorus_cache::disk::{MAX_ENTRY_BYTES, dir, set_dir};
pub use chorus_cache::{MEMORY_CACHE_BYTES, key};

impl From<disk::Error> for Error {
    fn from(e: disk::Error) -> Error {
        match e {
            disk::Error::Refused(message) => Error::Cache(message),
            disk::Error::Io { what, path, source } => Error::io_path(what, &path, source),
        }
    }
}

/// The disk entry kind of an image kind.
fn entry_kind(kind: ImageKind) -> EntryKind {
    match kind {
        ImageKind::Ptx => EntryKind::PTX,
        ImageKind::Cubin => EntryKind::CUBIN,
    }
}

/// What identifies a compile within this process (the memory level's key, borrowed).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lookup<'a> {
    /// The compiler (its identity names its library files, or its version).
    pub(crate) compiler: &'a Compiler,
    /// The target architecture, `None` when no device was known.
    pub(crate) arch: Option<(u32, u32)>,
    /// The settings' options, before the compiler's own are added.
    pub(crate) user_options: &'a [String],
    /// PTX or cubin.
    pub(crate) kind: ImageKind,
    /// The CUDA C.
    pub(crate) source: &'a str,
}

impl Lookup<'_> {
    /// The fast hash of every part.
    fn fast_hash(&self) -> u64 {
        let mut hasher = FastHasher::default();
        self.compiler.hash(&mut hasher);
        self.arch.hash(&mut hasher);
        self.user_options.hash(&mut hasher);
        self.kind.hash(&mut hasher);
        hasher.write(self.source.as_bytes());
        hasher.finish()
    }
}

/// One image of the memory level with the parts it was compiled from (compared on every hit).
#[derive(Debug)]
struct MemoryEntry {
    arch: Option<(u32, u32)>,
    user_options: Vec<String>,
    source: Box<str>,
    image: CompiledImage,
}

impl MemoryEntry {
    fn answers(&self, lookup: &Lookup<'_>) -> bool {
        self.image.kind == lookup.kind
            && self.arch == lookup.arch
            && *self.source == *lookup.source
            && self.user_options == lookup.user_options
            && self.image.compiler == *lookup.compiler
    }

    /// The bytes it holds, as the memory level's budget counts them: every part it owns (the
    /// compiler is shared by all entries and not counted) and the entry itself (the level adds
    /// its bookkeeping, [`chorus_cache::memory::ENTRY_OVERHEAD`]).
    fn bytes(&self) -> usize {
        let strings = |list: &[String]| {
            list.iter()
                .map(|s| s.len() + std::mem::size_of::<String>())
                .sum::<usize>()
        };
        std::mem::size_of::<MemoryEntry>()
            + self.source.len()
            + self.image.bytes.len()
            + self.image.key.len()
            + strings(&self.user_options)
            + strings(&self.image.options)
    }
}

/// The memory level's budget in bytes ([`MEMORY_CACHE_BYTES`] unless [`set_memory_budget`]).
static BUDGET: AtomicUsize = AtomicUsize::new(MEMORY_CACHE_BYTES);

/// Bounds the memory level to `bytes` for the rest of the process (evicting the oldest entries
/// now if it holds more). 0 keeps nothing in memory (the disk level still answers). A process
/// that compiles many distinct kernels holds at most this much for them, plus the allocator's
/// slack.
pub fn set_memory_budget(bytes: usize) {
    BUDGET.store(bytes, Ordering::Relaxed);
    if let Some(memory) = MEMORY
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_mut()
    {
        let evicted = memory.evict(bytes);
        EVICTED.fetch_add(evicted as u64, Ordering::Relaxed);
    }
}

/// The memory level's budget in bytes (see [`set_memory_budget`]).
pub fn memory_budget() -> usize {
    BUDGET.load(Ordering::Relaxed)
}

static MEMORY: Mutex<Option<MemoryCache<MemoryEntry>>> = Mutex::new(None);

/// The image compiled for `lookup` earlier in this process, if any (a memory hit).
pub(crate) fn memory_get(lookup: &Lookup<'_>) -> Option<CompiledImage> {
    let hash = lookup.fast_hash();
    let memory = MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    let image = memory
        .as_ref()?
        .get(hash, |entry| entry.answers(lookup))?
        .image
        .clone();
    MEMORY_HITS.fetch_add(1, Ordering::Relaxed);
    Some(image)
}

/// Remembers `image` as the answer to `lookup` for the rest of the process.
pub(crate) fn memory_put(lookup: &Lookup<'_>, image: CompiledImage) {
    let hash = lookup.fast_hash();
    let entry = MemoryEntry {
        arch: lookup.arch,
        user_options: lookup.user_options.to_vec(),
        source: lookup.source.into(),
        image,
    };
    let bytes = entry.bytes();
    let mut memory = MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    let evicted = memory.get_or_insert_with(MemoryCache::default).put(
        hash,
        entry,
        bytes,
        memory_budget(),
        |entry| entry.answers(lookup),
    );
    EVICTED.fetch_add(evicted as u64, Ordering::Relaxed);
}

/// How often each level answered (since the process started), and what the memory level holds
/// now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Lookups answered from memory.
    pub memory_hits: u64,
    /// Lookups answered from disk.
    pub disk_hits: u64,
    /// Lookups that found nothing usable (and compiled).
    pub misses: u64,
    /// Disk entries found corrupted and deleted.
    pub corrupted: u64,
    /// Memory entries evicted to keep the budget ([`memory_budget`]).
    pub evicted: u64,
    /// Nanoseconds spent in the compiler (NVRTC or nvcc) on misses, in all threads.
    pub compile_nanos: u64,
    /// Entries the memory level holds now.
    pub memory_entries: u64,
    /// Bytes the memory level holds now, as its budget counts them (at most [`memory_budget`]).
    pub memory_bytes: u64,
}

static MEMORY_HITS: AtomicU64 = AtomicU64::new(0);
static DISK_HITS: AtomicU64 = AtomicU64::new(0);
static MISSES: AtomicU64 = AtomicU64::new(0);
static CORRUPTED: AtomicU64 = AtomicU64::new(0);
static EVICTED: AtomicU64 = AtomicU64::new(0);
static COMPILE_NANOS: AtomicU64 = AtomicU64::new(0);

/// Adds one compile's time to [`Stats::compile_nanos`].
pub(crate) fn count_compile_time(time: std::time::Duration) {
    let nanos = u64::try_from(time.as_nanos()).unwrap_or(u64::MAX);
    COMPILE_NANOS.fetch_add(nanos, Ordering::Relaxed);
}

/// The counters so far, and the memory level's size now.
pub fn stats() -> Stats {
    let (memory_entries, memory_bytes) = MEMORY
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .map_or((0, 0), |m| (m.entries() as u64, m.bytes() as u64));
    Stats {
        memory_hits: MEMORY_HITS.load(Ordering::Relaxed),
        disk_hits: DISK_HITS.load(Ordering::Relaxed),
        misses: MISSES.load(Ordering::Relaxed),
        corrupted: CORRUPTED.load(Ordering::Relaxed),
        evicted: EVICTED.load(Ordering::Relaxed),
        compile_nanos: COMPILE_NANOS.load(Ordering::Relaxed),
        memory_entries,
        memory_bytes,
    }
}

/// Empties the memory cache and deletes the entries of the disk cache (and temporary files of
/// interrupted writes) that Chorus wrote, of every backend (they share the directory), leaving
/// every other file alone; returns how many files were deleted (`chorus cache clear`). A
/// directory that is not the user's own is an error.
pub fn clear() -> Result<usize> {
    clear_memory();
    Ok(disk::clear(&dir())?)
}

/// Empties the memory cache only (the next lookups read the disk).
pub fn clear_memory() {
    *MEMORY.lock().unwrap_or_else(PoisonError::into_inner) = None;
}

/// The path of an entry.
pub fn entry_path(key: &str, kind: ImageKind) -> PathBuf {
    disk::entry_path(&dir(), key, entry_kind(kind))
}

/// The image stored on disk under `key` (when `disk` is set). Counts a disk hit, or a miss
/// when there is no usable entry (the caller then compiles).
pub(crate) fn disk_get(key: &str, kind: ImageKind, disk: bool) -> Option<Arc<[u8]>> {
    if disk {
        match disk::read(&dir(), key, entry_kind(kind)) {
            Read::Hit(image) => {
                DISK_HITS.fetch_add(1, Ordering::Relaxed);
                return Some(image.into());
            }
            Read::Absent => {}
            // Not Chorus's (a link, a FIFO, a device...): left alone, replaced by the next write.
            Read::Ignored(why) => message(why),
            Read::Corrupted(why) => {
                CORRUPTED.fetch_add(1, Ordering::Relaxed);
                message(why);
            }
            Read::Refused(e) => disk::warn_disk_cache_off(&e),
        }
    }
    MISSES.fetch_add(1, Ordering::Relaxed);
    None
}

/// Stores an image on disk (when `disk` is set). A failure is reported as a message, not an
/// error: the cache is an optimisation.
pub(crate) fn disk_put(key: &str, kind: ImageKind, image: &[u8], disk: bool) {
    if !disk {
        return;
    }
    match disk::write(&dir(), key, entry_kind(kind), image) {
        Ok(()) => {}
        Err(e @ disk::Error::Refused(_)) => disk::warn_disk_cache_off(&e),
        Err(e) => message(format!("not caching {key} on disk: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(compiler: &Compiler, kind: ImageKind, tag: &str) -> CompiledImage {
        CompiledImage {
            bytes: tag.as_bytes().into(),
            kind,
            compiler: compiler.clone(),
            options: Arc::from(vec!["--std=c++17".to_owned()]),
            key: key(&[tag.as_bytes()]).into(),
        }
    }

    #[test]
    fn the_memory_level_answers_only_the_same_compile() {
        let nvrtc = Compiler::Nvrtc {
            library: "nvrtc 13.0".into(),
        };
        let options = vec!["-lineinfo".to_owned()];
        let source = format!("// memory level {}\n__global__ void k() {{}}\n", line!());
        let lookup = Lookup {
            compiler: &nvrtc,
            arch: Some((9, 0)),
            user_options: &options,
            kind: ImageKind::Cubin,
            source: &source,
        };
        assert!(memory_get(&lookup).is_none());
        memory_put(&lookup, image(&nvrtc, ImageKind::Cubin, "first"));
        let hit = memory_get(&lookup).expect("a hit");
        assert_eq!(&*hit.bytes, b"first");
        // Replacing an entry keeps one answer.
        memory_put(&lookup, image(&nvrtc, ImageKind::Cubin, "second"));
        assert_eq!(&*memory_get(&lookup).unwrap().bytes, b"second");

        // Every part of the lookup counts.
        let other_source = format!("{source} ");
        let newer = Compiler::Nvrtc {
            library: "nvrtc 13.1".into(),
        };
        let no_options: Vec<String> = Vec::new();
        let misses = [
            Lookup {
                source: &other_source,
                ..lookup
            },
            Lookup {
                compiler: &newer,
                ..lookup
            },
            Lookup {
                arch: Some((8, 0)),
                ..lookup
            },
            Lookup {
                arch: None,
                ..lookup
            },
            Lookup {
                user_options: &no_options,
                ..lookup
            },
            Lookup {
                kind: ImageKind::Ptx,
                ..lookup
            },
        ];
        for miss in &misses {
            assert!(memory_get(miss).is_none(), "{miss:?}");
        }
    }

    #[test]
    fn a_fast_hash_collision_never_answers_with_another_source() {
        let nvrtc = Compiler::Nvrtc {
            library: "nvrtc 13.0".into(),
        };
        let wanted_source = format!("// wanted {}\n", line!());
        let stored_source = format!("// stored {}\n", line!());
        let wanted = Lookup {
            compiler: &nvrtc,
            arch: Some((9, 0)),
            user_options: &[],
            kind: ImageKind::Cubin,
            source: &wanted_source,
        };
        // Store another compile under the hash of the wanted one, as a collision would.
        MEMORY
            .lock()
            .unwrap()
            .get_or_insert_with(MemoryCache::default)
            .put(
                wanted.fast_hash(),
                MemoryEntry {
                    arch: wanted.arch,
                    user_options: Vec::new(),
                    source: stored_source.into(),
                    image: image(&nvrtc, ImageKind::Cubin, "stored"),
                },
                0,
                MEMORY_CACHE_BYTES,
                |_| false,
            );
        assert!(memory_get(&wanted).is_none());
        memory_put(&wanted, image(&nvrtc, ImageKind::Cubin, "wanted"));
        assert_eq!(&*memory_get(&wanted).unwrap().bytes, b"wanted");
    }

    /// The cost of a memory hit without a compiler or a driver (the lookup itself):
    /// `cargo test --release -p chorus-cuda --lib memory_hit_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, not a check; run on demand"]
    fn memory_hit_cost() {
        let nvrtc = Compiler::Nvrtc {
            library: "nvrtc 13.0".into(),
        };
        let options: Vec<String> = Vec::new();
        let kernel = "extern \"C\" __global__ void noop(float* a, float* b, int n) { if (n < 0) a[0] = b[0]; }\n";
        for source in [kernel.to_owned(), "// padding\n".repeat(400) + kernel] {
            let lookup = Lookup {
                compiler: &nvrtc,
                arch: Some((9, 0)),
                user_options: &options,
                kind: ImageKind::Cubin,
                source: &source,
            };
            memory_put(&lookup, image(&nvrtc, ImageKind::Cubin, "noop"));
            let mut samples: Vec<std::time::Duration> = (0..2001)
                .map(|_| {
                    let start = std::time::Instant::now();
                    std::hint::black_box(memory_get(std::hint::black_box(&lookup)));
                    start.elapsed()
                })
                .collect();
            samples.sort();
            let sha = {
                let start = std::time::Instant::now();
                for _ in 0..100 {
                    std::hint::black_box(key(&[source.as_bytes()]));
                }
                start.elapsed() / 100
            };
            println!(
                "memory hit, {} B source: median {:?} (SHA-256 key alone: {sha:?})",
                source.len(),
                samples[samples.len() / 2]
            );
        }
    }

    #[test]
    fn the_budget_counts_every_part_of_an_entry() {
        let nvrtc = Compiler::Nvrtc {
            library: Arc::from("test"),
        };
        let entry = MemoryEntry {
            arch: Some((9, 0)),
            user_options: vec!["-lineinfo".to_owned()],
            source: "// kernel 0000\n".into(),
            image: image(&nvrtc, ImageKind::Cubin, &"x".repeat(100)),
        };
        let parts = "// kernel 0000\n".len() + 100 + 64 + "-lineinfo".len() + "--std=c++17".len();
        assert!(entry.bytes() >= parts + std::mem::size_of::<MemoryEntry>());
    }

    #[test]
    fn image_kinds_are_distinct_disk_kinds() {
        assert_eq!(entry_kind(ImageKind::Ptx).extension(), "ptx");
        assert_eq!(entry_kind(ImageKind::Cubin).extension(), "cubin");
    }
}
