//! The compiled-module cache: in memory and on disk.
//!
//! **Memory** (this process): a compile is identified by the compiler, the device
//! architecture, the user's options, the image kind and the source (everything else that goes
//! into the options is fixed for the life of the process). A lookup hashes those with a fast
//! non-cryptographic hash (`FastHasher`, word-at-a-time, four lanes) and then compares the
//! stored parts, source included, with the ones asked for: a hash collision costs a second
//! comparison, never the wrong kernel. A hit is one pass of the hash over the source, one
//! comparison of it, and the clone of a few `Arc`s: well under a microsecond for sources of a
//! few KB, where hashing with SHA-256 alone costs about 5 µs.
//!
//! **Disk**: an entry is keyed by SHA-256 over the generated source, the compiler's identity
//! (for NVRTC, the paths, sizes and modification times of its library files, known without
//! loading it: see [`Compiler::Nvrtc`]), the full options, the architecture, the image kind and this crate's version.
//! SHA-256 because there the key *is* the identity of the kernel (nothing else is compared on
//! read): two sources with one key would silently load the wrong code, so a 64- or 128-bit
//! non-cryptographic hash is not enough, and the microseconds it costs are paid only when the
//! memory level misses (before a file read or a compile).
//!
//! On disk (`CHORUS_CACHE_DIR`, else `$XDG_CACHE_HOME/chorus`, else `~/.cache/chorus`, made with
//! mode 0700) each entry is `KEY.ptx` or `KEY.cubin`: a header (magic, kind, payload length,
//! SHA-256 of the payload) and the image. Entries are written to a temporary file and renamed
//! into place, so readers see a whole entry or none; an entry whose header or checksum does not
//! match (truncated, corrupted, foreign) is deleted and rebuilt.

use crate::error::{Error, Result};
use crate::image::{CompiledImage, Compiler, ImageKind};
use crate::settings::message;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

const MAGIC: &[u8; 8] = b"CHORUSK\x01";
const HEADER_LEN: usize = 8 + 8 + 8 + 32;

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
}

/// The memory level: entries under their fast hash (a list, for the rare collision).
type MemoryCache = HashMap<u64, Vec<MemoryEntry>>;

static MEMORY: Mutex<Option<MemoryCache>> = Mutex::new(None);

/// A fast non-cryptographic hasher (the FxHash step, `(h.rotl(5) ^ word) * K`, over four
/// independent lanes of 8-byte words, so that long inputs are not bound by one multiply chain).
/// Not collision-resistant: the memory level compares what it stored on every hit.
#[derive(Clone, Debug, Default)]
pub(crate) struct FastHasher {
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
                *lane = Self::step(*lane, u64::from_le_bytes(word.try_into().expect("8 bytes")));
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

/// The image compiled for `lookup` earlier in this process, if any (a memory hit).
pub(crate) fn memory_get(lookup: &Lookup<'_>) -> Option<CompiledImage> {
    let hash = lookup.fast_hash();
    let memory = MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    let image = memory
        .as_ref()?
        .get(&hash)?
        .iter()
        .find(|entry| entry.answers(lookup))?
        .image
        .clone();
    MEMORY_HITS.fetch_add(1, Ordering::Relaxed);
    Some(image)
}

/// Remembers `image` as the answer to `lookup` for the rest of the process.
pub(crate) fn memory_put(lookup: &Lookup<'_>, image: CompiledImage) {
    let hash = lookup.fast_hash();
    let mut memory = MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    let entries = memory
        .get_or_insert_with(HashMap::new)
        .entry(hash)
        .or_default();
    entries.retain(|entry| !entry.answers(lookup));
    entries.push(MemoryEntry {
        arch: lookup.arch,
        user_options: lookup.user_options.to_vec(),
        source: lookup.source.into(),
        image,
    });
}
static DIR_OVERRIDE: RwLock<Option<PathBuf>> = RwLock::new(None);

/// How often each level answered (since the process started).
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
}

static MEMORY_HITS: AtomicU64 = AtomicU64::new(0);
static DISK_HITS: AtomicU64 = AtomicU64::new(0);
static MISSES: AtomicU64 = AtomicU64::new(0);
static CORRUPTED: AtomicU64 = AtomicU64::new(0);

/// The counters so far.
pub fn stats() -> Stats {
    Stats {
        memory_hits: MEMORY_HITS.load(Ordering::Relaxed),
        disk_hits: DISK_HITS.load(Ordering::Relaxed),
        misses: MISSES.load(Ordering::Relaxed),
        corrupted: CORRUPTED.load(Ordering::Relaxed),
    }
}

/// The disk cache directory: the override ([`set_dir`]), `CHORUS_CACHE_DIR`,
/// `$XDG_CACHE_HOME/chorus`, `~/.cache/chorus`, or the temp dir's `chorus-cache` when there is
/// no home.
pub fn dir() -> PathBuf {
    if let Some(d) = DIR_OVERRIDE
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
    {
        return d;
    }
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("CHORUS_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("chorus")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("chorus")))
        .unwrap_or_else(|| std::env::temp_dir().join("chorus-cache"))
}

/// Uses `dir` instead of the environment's cache directory (`None` restores it).
pub fn set_dir(dir: Option<PathBuf>) {
    *DIR_OVERRIDE.write().unwrap_or_else(PoisonError::into_inner) = dir;
}

/// Empties the memory cache and deletes every entry of the disk cache; returns how many disk
/// entries were deleted (`chorus cache clear`).
pub fn clear() -> Result<usize> {
    clear_memory();
    let dir = dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io_path("reading", &dir, e)),
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("ptx" | "cubin" | "tmp")
        ) {
            std::fs::remove_file(&path).map_err(|e| Error::io_path("removing", &path, e))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Empties the memory cache only (the next lookups read the disk).
pub fn clear_memory() {
    *MEMORY.lock().unwrap_or_else(PoisonError::into_inner) = None;
}

/// The path of an entry.
pub fn entry_path(key: &str, kind: ImageKind) -> PathBuf {
    dir().join(format!("{key}.{}", kind.extension()))
}

/// The image stored on disk under `key` (when `disk` is set). Counts a disk hit, or a miss
/// when there is no usable entry (the caller then compiles).
pub(crate) fn disk_get(key: &str, kind: ImageKind, disk: bool) -> Option<Arc<[u8]>> {
    if disk && let Some(image) = read_entry(&entry_path(key, kind), kind) {
        DISK_HITS.fetch_add(1, Ordering::Relaxed);
        return Some(image.into());
    }
    MISSES.fetch_add(1, Ordering::Relaxed);
    None
}

/// Stores an image on disk (when `disk` is set). A failure is reported as a message, not an
/// error: the cache is an optimisation.
pub(crate) fn disk_put(key: &str, kind: ImageKind, image: &[u8], disk: bool) {
    if disk && let Err(e) = write_entry(&entry_path(key, kind), kind, image) {
        message(format!("not caching {key} on disk: {e}"));
    }
}

fn kind_byte(kind: ImageKind) -> u8 {
    match kind {
        ImageKind::Ptx => 1,
        ImageKind::Cubin => 2,
    }
}

/// The bytes of a disk entry holding `image`.
fn encode(kind: ImageKind, image: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + image.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[kind_byte(kind), 0, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&(image.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(image));
    out.extend_from_slice(image);
    out
}

/// The image of a disk entry, or why it is unusable.
fn decode(kind: ImageKind, bytes: &[u8]) -> std::result::Result<&[u8], &'static str> {
    if bytes.len() < HEADER_LEN || &bytes[..8] != MAGIC {
        return Err("not a Chorus cache entry");
    }
    if bytes[8] != kind_byte(kind) {
        return Err("wrong image kind");
    }
    let len = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes")) as usize;
    let payload = &bytes[HEADER_LEN..];
    if payload.len() != len {
        return Err("truncated");
    }
    if Sha256::digest(payload).as_slice() != &bytes[24..56] {
        return Err("checksum mismatch");
    }
    Ok(payload)
}

fn read_entry(path: &Path, kind: ImageKind) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    match decode(kind, &bytes) {
        Ok(image) => Some(image.to_vec()),
        Err(why) => {
            CORRUPTED.fetch_add(1, Ordering::Relaxed);
            message(format!(
                "discarding cache entry {} ({why}); rebuilding",
                path.display()
            ));
            let _ = std::fs::remove_file(path);
            None
        }
    }
}

fn write_entry(path: &Path, kind: ImageKind, image: &[u8]) -> Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().expect("entries live in the cache directory");
    ensure_dir(dir)?;
    let tmp = dir.join(format!(
        "{}.{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry"),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&tmp, encode(kind, image)).map_err(|e| Error::io_path("writing", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io_path("renaming into", path, e)
    })
}

/// Creates the cache directory (its parents as usual, itself with mode 0700).
fn ensure_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io_path("creating", parent, e))?;
    }
    match crate::tempdir::create_private_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::io_path("creating", dir, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_depend_on_every_part_and_its_boundaries() {
        let a = key(&[b"ab", b"c"]);
        assert_eq!(a.len(), 64);
        assert_ne!(a, key(&[b"a", b"bc"]));
        assert_ne!(a, key(&[b"ab", b"d"]));
        assert_eq!(a, key(&[b"ab", b"c"]));
    }

    #[test]
    fn entries_round_trip_and_damage_is_detected() {
        let image = b"//\n.version 9.0\n.target sm_90\n".to_vec();
        let bytes = encode(ImageKind::Ptx, &image);
        assert_eq!(decode(ImageKind::Ptx, &bytes).unwrap(), &image[..]);
        assert_eq!(decode(ImageKind::Cubin, &bytes), Err("wrong image kind"));
        assert_eq!(
            decode(ImageKind::Ptx, &bytes[..bytes.len() - 1]),
            Err("truncated")
        );
        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(decode(ImageKind::Ptx, &flipped), Err("checksum mismatch"));
        assert_eq!(
            decode(ImageKind::Ptx, b"garbage"),
            Err("not a Chorus cache entry")
        );
    }

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
            .get_or_insert_with(HashMap::new)
            .entry(wanted.fast_hash())
            .or_default()
            .push(MemoryEntry {
                arch: wanted.arch,
                user_options: Vec::new(),
                source: stored_source.into(),
                image: image(&nvrtc, ImageKind::Cubin, "stored"),
            });
        assert!(memory_get(&wanted).is_none());
        memory_put(&wanted, image(&nvrtc, ImageKind::Cubin, "wanted"));
        assert_eq!(&*memory_get(&wanted).unwrap().bytes, b"wanted");
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
}
