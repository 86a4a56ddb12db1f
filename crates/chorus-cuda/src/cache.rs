//! The compiled-module cache: in memory and on disk.
//!
//! An entry is keyed by SHA-256 over the generated source, the compiler and its version, the
//! options, the architecture, the image kind and this crate's version. SHA-256 because the key
//! *is* the identity of the kernel: two sources with one key would silently load the wrong
//! code, so a 64- or 128-bit non-cryptographic hash (FNV) is not enough, and a collision-
//! resistant hash costs microseconds against milliseconds of compile time.
//!
//! On disk (`CHORUS_CACHE_DIR`, else `$XDG_CACHE_HOME/chorus`, else `~/.cache/chorus`, made with
//! mode 0700) each entry is `KEY.ptx` or `KEY.cubin`: a header (magic, kind, payload length,
//! SHA-256 of the payload) and the image. Entries are written to a temporary file and renamed
//! into place, so readers see a whole entry or none; an entry whose header or checksum does not
//! match (truncated, corrupted, foreign) is deleted and rebuilt.

use crate::compile::ImageKind;
use crate::error::{Error, Result};
use crate::settings::message;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
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

type MemoryCache = HashMap<(String, ImageKind), Arc<[u8]>>;

static MEMORY: Mutex<Option<MemoryCache>> = Mutex::new(None);
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

/// The image stored under `key`, from memory or else from disk (when `disk` is set).
pub(crate) fn get(key: &str, kind: ImageKind, disk: bool) -> Option<Arc<[u8]>> {
    let memory = MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(image) = memory.as_ref().and_then(|m| m.get(&(key.to_owned(), kind))) {
        MEMORY_HITS.fetch_add(1, Ordering::Relaxed);
        return Some(image.clone());
    }
    drop(memory);
    if disk && let Some(image) = read_entry(&entry_path(key, kind), kind) {
        DISK_HITS.fetch_add(1, Ordering::Relaxed);
        let image: Arc<[u8]> = image.into();
        remember(key, kind, image.clone());
        return Some(image);
    }
    MISSES.fetch_add(1, Ordering::Relaxed);
    None
}

/// Stores an image in memory and (when `disk` is set) on disk. A disk failure is reported as a
/// message, not an error: the cache is an optimisation.
pub(crate) fn put(key: &str, kind: ImageKind, image: Arc<[u8]>, disk: bool) {
    if disk && let Err(e) = write_entry(&entry_path(key, kind), kind, &image) {
        message(format!("not caching {key} on disk: {e}"));
    }
    remember(key, kind, image);
}

fn remember(key: &str, kind: ImageKind, image: Arc<[u8]>) {
    MEMORY
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashMap::new)
        .insert((key.to_owned(), kind), image);
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
}
