//! The compiled-module cache: in memory and on disk.
//!
//! **Memory** (this process): a compile is identified by the compiler, the device
//! architecture, the user's options, the image kind and the source (everything else that goes
//! into the options is fixed for the life of the process). A lookup hashes those with a fast
//! non-cryptographic hash (`FastHasher`, word-at-a-time, four lanes) and then compares the
//! stored parts, source included, with the ones asked for: a hash collision costs a second
//! comparison, never the wrong kernel. A hit is one pass of the hash over the source, one
//! comparison of it, and the clone of a few `Arc`s: well under a microsecond for sources of a
//! few KB, where hashing with SHA-256 alone costs about 5 µs. The level holds at most
//! [`MEMORY_CACHE_BYTES`] (or what [`set_memory_budget`] says), counting every part of an
//! entry and its bookkeeping: past that the oldest entries leave first, at a constant cost per
//! entry (a process that compiles distinct kernels for ever keeps flat memory; the disk keeps
//! them). [`stats`] says what it holds.
//!
//! **Disk**: an entry is keyed by SHA-256 over the generated source, the compiler's identity
//! (for NVRTC, the paths, sizes and modification times of its library files, known without
//! loading it: see [`Compiler::Nvrtc`]), the full options, the architecture, the image kind and this crate's version.
//! SHA-256 because there the key *is* the identity of the kernel (nothing else is compared on
//! read): two sources with one key would silently load the wrong code, so a 64- or 128-bit
//! non-cryptographic hash is not enough, and the microseconds it costs are paid only when the
//! memory level misses (before a file read or a compile).
//!
//! On disk (`CHORUS_CACHE_DIR`, else `$XDG_CACHE_HOME/chorus`, else `~/.cache/chorus`, else
//! `chorus-cache-UID` in the temp dir; made with mode 0700; on Windows `CHORUS_CACHE_DIR`, else
//! `%LOCALAPPDATA%\chorus\cache`, else `chorus-cache-USERNAME` in the temp dir) each entry is
//! `KEY.ptx` or
//! `KEY.cubin` (`KEY` 64 hex digits): a header (magic, kind, payload length, SHA-256 of the
//! payload) and the image. Entries are written to a temporary file `KEY.EXT.RANDOM.tmp` and
//! renamed into place, so readers see a whole entry or none; an entry whose header or checksum
//! does not match (truncated, corrupted, foreign) is deleted and rebuilt.
//!
//! The disk level trusts what it reads (the key is the only check), so it is careful where it
//! reads from:
//! - **The directory must be the user's own**: on Unix, owned by this process's effective user
//!   and writable by no one else (no group or other write bit). One that is not is not used: the
//!   disk level is off for that lookup, with a `tracing` warning (once per process), and compiles
//!   go on without it; [`clear`] refuses it with an error. On Windows, where access is a matter
//!   of ACLs rather than owner and mode bits, the default places are the user's own by
//!   construction: `%LOCALAPPDATA%` and the temp dir (`%LOCALAPPDATA%\Temp`) lie in the user's
//!   profile, which grants access to the user, SYSTEM and the administrators only, and a new
//!   directory inherits that. Only the is-a-directory check applies there: reading a
//!   directory's ACL would take the Win32 security API (a `windows-sys` dependency) to guard
//!   a `CHORUS_CACHE_DIR` the user chose.
//! - **Entries are opened without following links and without blocking** (`O_NOFOLLOW |
//!   O_NONBLOCK` on Unix), must be regular files, and are read up to [`MAX_ENTRY_BYTES`]; anything
//!   else at an entry's path is ignored (and replaced by the next write), never deleted.
//! - **[`clear`] deletes only Chorus's files**: names of the entry or temporary shape whose
//!   content starts with the entry magic (an empty temporary file too), so pointing
//!   `CHORUS_CACHE_DIR` at a folder of other files is safe.

use crate::error::{Error, Result};
use crate::image::{CompiledImage, Compiler, ImageKind};
use crate::settings::message;
use chorus_driver::search::Platform;
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
    /// When it was put (the eviction order's identity of the entry; set by [`MemoryCache::put`]).
    seq: u64,
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

/// How many bytes the memory level keeps by default (see the module docs and
/// [`set_memory_budget`]).
pub const MEMORY_CACHE_BYTES: usize = 64 << 20;

/// What an entry costs beyond the bytes of its parts: the entry itself, its slot in the map and
/// the eviction order, and the allocator's header of each of its six allocations (source, image,
/// options, key, user options, the map's list). An estimate on the high side, so that the
/// budget bounds the memory the level really holds, not only its payload.
const ENTRY_OVERHEAD: usize = std::mem::size_of::<MemoryEntry>() + 64 + 6 * 16;

impl MemoryEntry {
    /// The bytes it holds, as the memory level's budget counts them: every part it owns
    /// (the compiler is shared by all entries and not counted) and [`ENTRY_OVERHEAD`].
    fn bytes(&self) -> usize {
        let strings = |list: &[String]| {
            list.iter()
                .map(|s| s.len() + std::mem::size_of::<String>())
                .sum::<usize>()
        };
        ENTRY_OVERHEAD
            + self.source.len()
            + self.image.bytes.len()
            + self.image.key.len()
            + strings(&self.user_options)
            + strings(&self.image.options)
    }
}

/// The memory level: entries under their fast hash (a list, for the rare collision), and the
/// order they came in, for evicting the oldest past the budget.
#[derive(Default)]
struct MemoryCache {
    map: HashMap<u64, Vec<MemoryEntry>>,
    /// `(hash, seq)` of each entry put, oldest first. An entry replaced or evicted leaves a
    /// stale record, skipped when it comes up; the records are compacted when the stale ones
    /// outnumber the live entries, so the queue stays proportional to what the level holds.
    order: std::collections::VecDeque<(u64, u64)>,
    next_seq: u64,
    entries: usize,
    bytes: usize,
}

impl MemoryCache {
    /// Adds `entry` under `hash`, then evicts the oldest entries until `budget` holds (an entry
    /// larger than the budget leaves at once: the caller keeps its image).
    fn put(&mut self, hash: u64, mut entry: MemoryEntry, budget: usize) {
        entry.seq = self.next_seq;
        self.next_seq += 1;
        self.bytes += entry.bytes();
        self.entries += 1;
        self.order.push_back((hash, entry.seq));
        self.map.entry(hash).or_default().push(entry);
        self.evict(budget);
        if self.order.len() > 2 * self.entries + 64 {
            let map = &self.map;
            self.order.retain(|(hash, seq)| {
                map.get(hash)
                    .is_some_and(|l| l.iter().any(|e| e.seq == *seq))
            });
        }
    }

    /// Removes the entries under `hash` for which `remove` is true.
    fn remove_where(&mut self, hash: u64, mut remove: impl FnMut(&MemoryEntry) -> bool) {
        let Some(list) = self.map.get_mut(&hash) else {
            return;
        };
        list.retain(|entry| {
            let gone = remove(entry);
            if gone {
                self.bytes -= entry.bytes();
                self.entries -= 1;
            }
            !gone
        });
        if list.is_empty() {
            self.map.remove(&hash);
        }
    }

    /// Evicts the oldest entries until the level holds at most `budget` bytes.
    fn evict(&mut self, budget: usize) {
        while self.bytes > budget {
            let Some((hash, seq)) = self.order.pop_front() else {
                break;
            };
            let before = self.entries;
            self.remove_where(hash, |entry| entry.seq == seq);
            if self.entries < before {
                EVICTED.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The memory level's budget in bytes ([`MEMORY_CACHE_BYTES`] unless [`set_memory_budget`]).
static BUDGET: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(MEMORY_CACHE_BYTES);

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
        memory.evict(bytes);
    }
}

/// The memory level's budget in bytes (see [`set_memory_budget`]).
pub fn memory_budget() -> usize {
    BUDGET.load(Ordering::Relaxed)
}

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
        .map
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
    let memory = memory.get_or_insert_with(MemoryCache::default);
    memory.remove_where(hash, |entry| entry.answers(lookup));
    let entry = MemoryEntry {
        arch: lookup.arch,
        user_options: lookup.user_options.to_vec(),
        source: lookup.source.into(),
        image,
        seq: 0,
    };
    memory.put(hash, entry, memory_budget());
}
static DIR_OVERRIDE: RwLock<Option<PathBuf>> = RwLock::new(None);

/// The largest disk entry read (a cubin of a very large module is a few tens of MB); a bigger
/// file at an entry's path is not an entry.
pub const MAX_ENTRY_BYTES: u64 = 512 << 20;

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
        .map_or((0, 0), |m| (m.entries as u64, m.bytes as u64));
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

/// The disk cache directory: the override ([`set_dir`]), `CHORUS_CACHE_DIR`,
/// `$XDG_CACHE_HOME/chorus`, `~/.cache/chorus`, or, when there is no home, the temp dir's
/// `chorus-cache-UID` (one per user; like every cache directory, used only when it is the
/// user's own: see the module documentation). On Windows: the override, `CHORUS_CACHE_DIR`,
/// `%LOCALAPPDATA%\chorus\cache`, or the temp dir's `chorus-cache-USERNAME`.
pub fn dir() -> PathBuf {
    if let Some(d) = DIR_OVERRIDE
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
    {
        return d;
    }
    dir_from_env(Platform::HOST, |name| std::env::var_os(name))
}

/// [`dir`] on `platform` from the variables `get` gives.
fn dir_from_env(platform: Platform, get: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    let var = |name| get(name).filter(|v| !v.is_empty());
    let path = |name| var(name).map(PathBuf::from);
    let configured = match platform {
        Platform::Unix => path("CHORUS_CACHE_DIR")
            .or_else(|| path("XDG_CACHE_HOME").map(|d| d.join("chorus")))
            .or_else(|| path("HOME").map(|d| d.join(".cache").join("chorus"))),
        Platform::Windows => path("CHORUS_CACHE_DIR")
            .or_else(|| path("LOCALAPPDATA").map(|d| d.join("chorus").join("cache"))),
    };
    configured.unwrap_or_else(|| {
        // Built as an OsString: a user name need not be ASCII (nor, on Windows, valid UTF-16).
        let mut name = std::ffi::OsString::from("chorus-cache-");
        match (platform, effective_uid(), var("USERNAME")) {
            (Platform::Unix, Some(uid), _) => name.push(uid.to_string()),
            (Platform::Windows, _, Some(user)) => name.push(user),
            _ => name.push("user"),
        }
        std::env::temp_dir().join(name)
    })
}

/// This process's effective user id (`None` where there are no user ids).
fn effective_uid() -> Option<u32> {
    #[cfg(unix)]
    return Some(rustix::process::geteuid().as_raw());
    #[cfg(not(unix))]
    return None;
}

/// Whether the existing directory `dir` may hold this user's cache: on Unix, a directory (after
/// links) owned by the effective user that no one else may write to. `Ok(false)` when it does
/// not exist.
fn check_own_dir(dir: &Path) -> Result<bool> {
    let metadata = match std::fs::metadata(dir) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io_path("inspecting", dir, e)),
    };
    if !metadata.is_dir() {
        return Err(Error::Cache(format!(
            "{} is not a directory; not using it",
            dir.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = rustix::process::geteuid().as_raw();
        if metadata.uid() != me {
            return Err(Error::Cache(format!(
                "the cache directory {} belongs to user id {}, not to this user ({me}); not \
                 using it (set CHORUS_CACHE_DIR to a directory of your own)",
                dir.display(),
                metadata.uid()
            )));
        }
        if metadata.mode() & 0o022 != 0 {
            return Err(Error::Cache(format!(
                "the cache directory {} may be written by other users (mode {:o}); not using it \
                 (chmod go-w it, or set CHORUS_CACHE_DIR to a private directory)",
                dir.display(),
                metadata.mode() & 0o7777
            )));
        }
    }
    Ok(true)
}

/// Warns, once per process, that the disk cache is off because of `error`.
fn warn_disk_cache_off(error: &Error) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| tracing::warn!(target: "chorus_cuda", "{error}; the disk cache is off"));
}

/// Uses `dir` instead of the environment's cache directory (`None` restores it).
pub fn set_dir(dir: Option<PathBuf>) {
    *DIR_OVERRIDE.write().unwrap_or_else(PoisonError::into_inner) = dir;
}

/// Empties the memory cache and deletes the entries of the disk cache (and temporary files of
/// interrupted writes) that Chorus wrote, leaving every other file alone; returns how many files
/// were deleted (`chorus cache clear`). A directory that is not the user's own is an error.
pub fn clear() -> Result<usize> {
    clear_memory();
    let dir = dir();
    if !check_own_dir(&dir)? {
        return Ok(0);
    }
    let entries = std::fs::read_dir(&dir).map_err(|e| Error::io_path("reading", &dir, e))?;
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if is_chorus_file(&path) {
            std::fs::remove_file(&path).map_err(|e| Error::io_path("removing", &path, e))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Whether `path` is a file the disk cache wrote: an entry (`KEY.ptx`, `KEY.cubin`) or a
/// temporary file (`KEY.EXT.SUFFIX.tmp`) by name, and by content (the entry magic; a temporary
/// file may also be empty, as it is just after its creation).
fn is_chorus_file(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let Some((key, rest)) = name.split_once('.') else {
        return false;
    };
    if key.len() != 64 || !key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return false;
    }
    let (extension, temporary) = match rest.split_once('.') {
        None => (rest, false),
        Some((extension, suffix)) => {
            let Some(middle) = suffix.strip_suffix("tmp") else {
                return false;
            };
            if !middle
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.')
            {
                return false;
            }
            (extension, true)
        }
    };
    if !matches!(extension, "ptx" | "cubin") {
        return false;
    }
    let mut head = Vec::new();
    match open_regular_file(path) {
        Ok(Some((file, _))) => {
            use std::io::Read;
            file.take(MAGIC.len() as u64).read_to_end(&mut head).is_ok()
                && (head.as_slice() == MAGIC || (temporary && head.is_empty()))
        }
        _ => false,
    }
}

/// The regular file at `path` and its length (`None` when there is nothing there), opened for
/// reading without following a link or blocking (a FIFO or a device is an error, not a wait).
fn open_regular_file(path: &Path) -> std::io::Result<Option<(std::fs::File, u64)>> {
    #[cfg(unix)]
    let opened = {
        use rustix::fs::{Mode, OFlags};
        rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map(std::fs::File::from)
        .map_err(std::io::Error::from)
    };
    #[cfg(not(unix))]
    let opened = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(std::io::Error::other("a link")),
        _ => std::fs::File::open(path),
    };
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Err(std::io::Error::other("a symbolic link"));
        }
        Err(e) => return Err(e),
    };
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(Some((file, metadata.len())))
}

/// The bytes of the regular file at `path` (see [`open_regular_file`]), `None` when there is
/// nothing there; a file longer than [`MAX_ENTRY_BYTES`] (even one that grows while read) is an
/// error, and is not read.
fn read_entry_file(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let too_large = || std::io::Error::other("larger than a cache entry may be");
    let Some((file, len)) = open_regular_file(path)? else {
        return Ok(None);
    };
    if len > MAX_ENTRY_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // One byte past the limit tells a file that grew past it from one exactly at it.
    file.take(MAX_ENTRY_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_ENTRY_BYTES {
        return Err(too_large());
    }
    Ok(Some(bytes))
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
    if disk && let Some(image) = read_entry_in(&dir(), key, kind) {
        DISK_HITS.fetch_add(1, Ordering::Relaxed);
        return Some(image.into());
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
    let dir = dir();
    if let Err(e) = ensure_dir(&dir) {
        match e {
            Error::Cache(_) => warn_disk_cache_off(&e),
            _ => message(format!("not caching {key} on disk: {e}")),
        }
        return;
    }
    if let Err(e) = write_entry(&entry_path(key, kind), kind, image) {
        message(format!("not caching {key} on disk: {e}"));
    }
}

/// The image of the entry `key` in the cache directory `dir`, when `dir` is the user's own
/// (else a warning, and `None`).
fn read_entry_in(dir: &Path, key: &str, kind: ImageKind) -> Option<Vec<u8>> {
    match check_own_dir(dir) {
        Ok(true) => read_entry(&dir.join(format!("{key}.{}", kind.extension())), kind),
        Ok(false) => None,
        Err(e) => {
            warn_disk_cache_off(&e);
            None
        }
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
    let bytes = match read_entry_file(path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return None,
        // Not Chorus's (a link, a FIFO, a device...): left alone, replaced by the next write.
        Err(e) => {
            message(format!("ignoring {}: {e}", path.display()));
            return None;
        }
    };
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

/// Writes the entry at `path` (in a directory [`ensure_dir`] accepted): a temporary file
/// `NAME.RANDOM.tmp` beside it (created new, never an existing file or link), then a rename.
fn write_entry(path: &Path, kind: ImageKind, image: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = path.parent().expect("entries live in the cache directory");
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
    let mut temp = tempfile::Builder::new()
        .prefix(&format!("{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| Error::io_path("creating a temporary file in", dir, e))?;
    temp.write_all(&encode(kind, image))
        .map_err(|e| Error::io_path("writing", temp.path(), e))?;
    // On failure the temporary file is deleted when `e.file` drops.
    temp.persist(path)
        .map_err(|e| Error::io_path("renaming into", path, e.error))?;
    Ok(())
}

/// Creates the cache directory (its parents as usual, itself with mode 0700), or checks that
/// the existing one is the user's own.
fn ensure_dir(dir: &Path) -> Result<()> {
    if check_own_dir(dir)? {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io_path("creating", parent, e))?;
    }
    match crate::tempdir::create_private_dir(dir) {
        Ok(()) => Ok(()),
        // Made meanwhile by another process: it must pass the same check.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => check_own_dir(dir).map(drop),
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

    /// A fresh private directory for one test (removed by the test).
    fn scratch(test: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("chorus-cache-unit-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        crate::tempdir::create_private_dir(&dir).unwrap();
        dir
    }

    const KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_fifo_at_an_entry_path_is_ignored_without_blocking() {
        let dir = scratch("fifo");
        let fifo = dir.join(format!("{KEY}.ptx"));
        match std::process::Command::new("mkfifo").arg(&fifo).status() {
            Ok(status) if status.success() => {}
            other => {
                eprintln!("skipped: `mkfifo` is not available here ({other:?})");
                let _ = std::fs::remove_dir_all(&dir);
                return;
            }
        }
        // On another thread, so that a read that blocks fails the test instead of hanging it.
        let (sender, receiver) = std::sync::mpsc::channel();
        let reader_dir = dir.clone();
        std::thread::spawn(move || {
            let read = read_entry_in(&reader_dir, KEY, ImageKind::Ptx);
            let chorus_file = is_chorus_file(&reader_dir.join(format!("{KEY}.ptx")));
            let _ = sender.send((read, chorus_file));
        });
        let outcome = receiver.recv_timeout(std::time::Duration::from_secs(10));
        // Unblock a reader stuck in open (a writer's open completes it), then clean up.
        if outcome.is_err() {
            let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
        }
        let still_there = std::fs::symlink_metadata(&fifo).is_ok();
        std::fs::remove_dir_all(&dir).unwrap();
        let (read, chorus_file) = outcome.expect("reading a FIFO entry returned");
        assert_eq!(read, None);
        assert!(!chorus_file, "a FIFO is not an entry to clear");
        assert!(still_there, "a file Chorus did not write is not deleted");
    }

    #[test]
    fn entries_are_read_only_from_regular_files_without_following_links() {
        let dir = scratch("links");
        let image = b"//\n.version 9.0\n".to_vec();
        let valid = dir.join("elsewhere.bin");
        std::fs::write(&valid, encode(ImageKind::Ptx, &image)).unwrap();
        let entry = dir.join(format!("{KEY}.ptx"));
        #[cfg(unix)]
        std::os::unix::fs::symlink(&valid, &entry).unwrap();
        #[cfg(unix)]
        let through_link = read_entry_in(&dir, KEY, ImageKind::Ptx);
        #[cfg(unix)]
        std::fs::remove_file(&entry).unwrap();
        std::fs::rename(&valid, &entry).unwrap();
        let regular = read_entry_in(&dir, KEY, ImageKind::Ptx);
        // A file over the size limit is not read (a sparse file: no disk space used).
        let huge = dir.join(format!("{KEY}.cubin"));
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(MAX_ENTRY_BYTES + 1)
            .unwrap();
        let oversized = read_entry_in(&dir, KEY, ImageKind::Cubin);
        let huge_kept = huge.exists();
        std::fs::remove_dir_all(&dir).unwrap();
        #[cfg(unix)]
        assert_eq!(through_link, None, "a link is not followed");
        assert_eq!(regular.as_deref(), Some(&image[..]));
        assert_eq!(oversized, None);
        assert!(huge_kept);
    }

    #[test]
    fn only_files_of_the_cache_layout_with_the_magic_are_chorus_files() {
        let dir = scratch("layout");
        let entry = encode(ImageKind::Ptx, b"image");
        let cases: &[(String, &[u8], bool)] = &[
            (format!("{KEY}.ptx"), &entry, true),
            (format!("{KEY}.cubin"), b"CHORUSK\x01damaged", true),
            (format!("{KEY}.ptx.Ab12Cd.tmp"), b"", true),
            (format!("{KEY}.ptx.4242.7.tmp"), &entry, true),
            (format!("{KEY}.ptx"), b"a user's file", false),
            ("notes.ptx".into(), &entry, false),
            ("kernel.cubin".into(), b"\x7fELF", false),
            ("build.tmp".into(), b"", false),
            (format!("{KEY}.txt"), &entry, false),
            (format!("{}.ptx", &KEY[1..]), &entry, false),
            (format!("{KEY}.ptx.x.tmp"), b"a user's file", false),
        ];
        let mut verdicts = Vec::new();
        for (name, content, _) in cases {
            let path = dir.join(name);
            std::fs::write(&path, content).unwrap();
            verdicts.push(is_chorus_file(&path));
            std::fs::remove_file(&path).unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
        for ((name, _, expected), verdict) in cases.iter().zip(verdicts) {
            assert_eq!(verdict, *expected, "{name}");
        }
    }

    #[test]
    fn without_a_home_the_cache_is_per_user() {
        let vars = |name: &str| match name {
            "PATH" => Some("/usr/bin".into()),
            _ => None,
        };
        let dir = dir_from_env(Platform::Unix, vars);
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        #[cfg(unix)]
        assert_eq!(
            name,
            format!("chorus-cache-{}", rustix::process::geteuid().as_raw())
        );
        assert!(name.starts_with("chorus-cache-"), "{name}");
        let home = dir_from_env(Platform::Unix, |name| {
            (name == "HOME").then(|| "/home/u".into())
        });
        assert_eq!(home, Path::new("/home/u/.cache/chorus"));
    }

    #[test]
    fn the_windows_cache_is_under_localappdata() {
        let profile = Path::new("/c").join("Users").join("Zoë Ångström");
        let local = profile.join("AppData").join("Local");
        let vars = |name: &str| match name {
            "LOCALAPPDATA" => Some(local.clone().into_os_string()),
            "USERNAME" => Some("Zoë Ångström".into()),
            // Unix's variables do not count on Windows.
            "XDG_CACHE_HOME" | "HOME" => Some("/unix".into()),
            _ => None,
        };
        assert_eq!(
            dir_from_env(Platform::Windows, vars),
            local.join("chorus").join("cache")
        );
        let chosen = |name: &str| (name == "CHORUS_CACHE_DIR").then(|| "D:\\caches\\mine".into());
        assert_eq!(
            dir_from_env(Platform::Windows, |n| chosen(n).or_else(|| vars(n))),
            Path::new("D:\\caches\\mine")
        );
        // No LOCALAPPDATA: the temp dir, one per user name.
        let without = dir_from_env(Platform::Windows, |n| {
            (n != "LOCALAPPDATA").then(|| vars(n)).flatten()
        });
        assert_eq!(
            without,
            std::env::temp_dir().join("chorus-cache-Zoë Ångström")
        );
        let nobody = dir_from_env(Platform::Windows, |_| None);
        assert_eq!(nobody, std::env::temp_dir().join("chorus-cache-user"));
    }

    #[cfg(unix)]
    #[test]
    fn a_cache_directory_others_may_write_or_own_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("shared");
        std::fs::write(
            dir.join(format!("{KEY}.ptx")),
            encode(ImageKind::Ptx, b"planted"),
        )
        .unwrap();
        let private = read_entry_in(&dir, KEY, ImageKind::Ptx);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let world_writable = read_entry_in(&dir, KEY, ImageKind::Ptx);
        let refused = ensure_dir(&dir).unwrap_err().to_string();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o770)).unwrap();
        let group_writable = read_entry_in(&dir, KEY, ImageKind::Ptx);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Another user's directory: only root can make one here.
        let nobody = 65534;
        let foreign = rustix::fs::chown(&dir, Some(rustix::fs::Uid::from_raw(nobody)), None)
            .ok()
            .map(|()| read_entry_in(&dir, KEY, ImageKind::Ptx));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(private.as_deref(), Some(&b"planted"[..]));
        assert_eq!(world_writable, None);
        assert!(
            refused.contains("may be written by other users"),
            "{refused}"
        );
        assert_eq!(group_writable, None);
        match foreign {
            Some(read) => assert_eq!(read, None, "another user's directory is not used"),
            None => eprintln!("skipped the other-owner case: chown needs root"),
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_new_cache_directory_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let parent = scratch("create");
        let dir = parent.join("nested").join("chorus");
        ensure_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        ensure_dir(&dir).unwrap();
        std::fs::remove_dir_all(&parent).unwrap();
        assert_eq!(mode & 0o777, 0o700);
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
    fn the_memory_level_keeps_its_budget_and_evicts_the_oldest_first() {
        let nvrtc = Compiler::Nvrtc {
            library: Arc::from("test"),
        };
        let mut cache = MemoryCache::default();
        let entry = |n: usize| MemoryEntry {
            arch: Some((9, 0)),
            user_options: Vec::new(),
            source: format!("// kernel {n:04}\n").into(),
            image: image(&nvrtc, ImageKind::Cubin, &"x".repeat(100)),
            seq: 0,
        };
        let size = entry(0).bytes();
        // Room for 10 entries: 1000 distinct compiles keep the last 10.
        for n in 0..1000 {
            cache.put(n as u64, entry(n), 10 * size);
            assert!(cache.bytes <= 10 * size);
        }
        assert_eq!(cache.bytes, 10 * size);
        assert_eq!((cache.map.len(), cache.entries), (10, 10));
        assert!((990..1000).all(|n| cache.map.contains_key(&n)));
        assert!(cache.order.len() <= 2 * 10 + 64);
        // The budget counts what an entry holds beyond its source and image.
        assert!(size >= ENTRY_OVERHEAD + 100 + "// kernel 0000\n".len());
        // A smaller budget evicts the oldest now.
        cache.evict(3 * size);
        assert_eq!(cache.entries, 3);
        assert!((997..1000).all(|n| cache.map.contains_key(&n)));
    }

    #[test]
    fn replacing_entries_keeps_the_eviction_order_bounded() {
        let nvrtc = Compiler::Nvrtc {
            library: Arc::from("test"),
        };
        let mut cache = MemoryCache::default();
        let entry = |n: usize| MemoryEntry {
            arch: None,
            user_options: Vec::new(),
            source: format!("// kernel {n}\n").into(),
            image: image(&nvrtc, ImageKind::Ptx, "ptx"),
            seq: 0,
        };
        // The same two compiles put again and again (threads racing on one miss do this),
        // under a budget they never reach: the stale records must not pile up.
        for round in 0..10_000 {
            let n = round % 2;
            cache.remove_where(n as u64, |e| *e.source == *entry(n).source);
            cache.put(n as u64, entry(n), usize::MAX);
            assert!(cache.order.len() <= 2 * 2 + 64 + 1, "{}", cache.order.len());
        }
        assert_eq!(cache.entries, 2);
        // Oldest first, by the time an entry was put (not by when its hash was first seen).
        cache.put(7, entry(7), cache.bytes);
        let kept: Vec<u64> = cache.map.keys().copied().collect();
        assert_eq!(cache.entries, 2);
        assert!(
            !kept.contains(&0),
            "entry 0 was put before entry 1: {kept:?}"
        );
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
                    seq: 0,
                },
                MEMORY_CACHE_BYTES,
            );
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
