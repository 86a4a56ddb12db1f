//! The compiled-code-object cache, in memory and on disk: the same two levels as chorus-cuda's
//! (`chorus-cuda/src/cache.rs`), written again here because that cache is private to
//! chorus-cuda and typed on its images and compilers; sharing it would mean moving it into a
//! crate both depend on, a change to chorus-cuda outside this back end.
//!
//! **Memory**: entries are found by a hash of the inputs and then compared with the full
//! inputs (compiler identity, architecture, options, source), so a collision never returns the
//! wrong code object. **Disk**: `KEY.hsaco` in the cache directory (`CHORUS_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/chorus`, else `~/.cache/chorus`), `KEY` the SHA-256 of the inputs; each
//! entry is a header (magic, payload length, SHA-256 of the payload) and the code object,
//! written to a temporary file and renamed into place. An entry whose header or checksum does
//! not match is ignored and rewritten. The directory is used only when it is the user's own and
//! writable by no one else (Unix); otherwise the disk level is skipped.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

const MAGIC: &[u8; 8] = b"CHORUSH\x01";
const HEADER_LEN: usize = 8 + 8 + 32;
/// The largest entry read back (code objects are far smaller).
const MAX_ENTRY_BYTES: u64 = 256 << 20;

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
        let mut hasher = Sha256::new();
        let options = self.options.join("\0");
        for part in [
            "chorus-hip".as_bytes(),
            env!("CARGO_PKG_VERSION").as_bytes(),
            self.compiler.as_bytes(),
            self.arch.as_bytes(),
            options.as_bytes(),
            self.source.as_bytes(),
        ] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        hex(&hasher.finalize())
    }

    fn fast_hash(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One memory entry: the full inputs, compared on lookup, and the code object.
struct Entry {
    compiler: String,
    arch: String,
    options: Vec<String>,
    source: String,
    code: Arc<[u8]>,
}

static MEMORY: Mutex<Option<HashMap<u64, Vec<Entry>>>> = Mutex::new(None);

/// The code object compiled from `inputs` in this process, if any.
pub fn memory_get(inputs: &Inputs<'_>) -> Option<Arc<[u8]>> {
    let memory = MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    memory
        .as_ref()?
        .get(&inputs.fast_hash())?
        .iter()
        .find(|e| {
            e.compiler == inputs.compiler
                && e.arch == inputs.arch
                && e.options == inputs.options
                && e.source == inputs.source
        })
        .map(|e| e.code.clone())
}

/// Keeps `code` for `inputs` in this process.
pub fn memory_put(inputs: &Inputs<'_>, code: Arc<[u8]>) {
    let mut memory = MEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    memory
        .get_or_insert_with(HashMap::new)
        .entry(inputs.fast_hash())
        .or_default()
        .push(Entry {
            compiler: inputs.compiler.into(),
            arch: inputs.arch.into(),
            options: inputs.options.to_vec(),
            source: inputs.source.into(),
            code,
        });
}

/// The cache directory (whether or not it exists or is usable).
pub fn dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(d) = var("CHORUS_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = var("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("chorus");
    }
    if let Some(h) = var("HOME") {
        return PathBuf::from(h).join(".cache/chorus");
    }
    std::env::temp_dir().join("chorus-cache")
}

/// True when `dir` exists, is a directory of this user, and no one else may write to it.
fn own_dir(dir: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return false;
    };
    if !meta.is_dir() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.uid() == rustix::process::geteuid().as_raw() && meta.mode() & 0o022 == 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// The directory, created (mode 0700) if missing, when it may be used.
fn usable_dir() -> Option<PathBuf> {
    let dir = dir();
    if !dir.exists() {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir).ok()?;
    }
    own_dir(&dir).then_some(dir)
}

/// The path of the entry for `key`.
pub fn entry_path(key: &str) -> PathBuf {
    dir().join(format!("{key}.hsaco"))
}

/// The code object stored under `key`, if a whole, uncorrupted entry is there.
pub fn disk_get(key: &str) -> Option<Vec<u8>> {
    let dir = usable_dir()?;
    let path = dir.join(format!("{key}.hsaco"));
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_ENTRY_BYTES {
        return None;
    }
    decode(&std::fs::read(&path).ok()?).map(<[u8]>::to_vec)
}

/// Stores `code` under `key`; failures leave the cache as it was (the compile went well).
pub fn disk_put(key: &str, code: &[u8]) {
    let Some(dir) = usable_dir() else {
        return;
    };
    let write = || -> std::io::Result<()> {
        let mut file = tempfile::Builder::new()
            .prefix(&format!("{key}.hsaco."))
            .suffix(".tmp")
            .tempfile_in(&dir)?;
        file.write_all(&encode(code))?;
        file.as_file().sync_all()?;
        file.persist(dir.join(format!("{key}.hsaco")))
            .map_err(|e| e.error)?;
        Ok(())
    };
    let _ = write();
}

/// An entry's bytes: header and payload.
pub fn encode(code: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + code.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(code.len() as u64).to_le_bytes());
    out.extend_from_slice(&Sha256::digest(code));
    out.extend_from_slice(code);
    out
}

/// The payload of an entry, or `None` when its header or checksum does not match.
pub fn decode(bytes: &[u8]) -> Option<&[u8]> {
    let (header, payload) = bytes.split_at_checked(HEADER_LEN)?;
    let len = u64::from_le_bytes(header[8..16].try_into().ok()?);
    (header[..8] == *MAGIC
        && len == payload.len() as u64
        && Sha256::digest(payload)[..] == header[16..])
        .then_some(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_corruption_is_detected() {
        let entry = encode(b"\x7fELF code");
        assert_eq!(decode(&entry), Some(&b"\x7fELF code"[..]));
        let mut bad = entry.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(decode(&bad), None);
        assert_eq!(decode(&entry[..entry.len() - 1]), None);
    }

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
    }
}
