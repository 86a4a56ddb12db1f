//! Cache keys and the disk cache's place, as the CUDA backend keys its cache: a key is the hex
//! SHA-256 of its parts, each length-prefixed (the MSL text, the language version, the device),
//! so that a program compiled once is found again in memory, and its pipelines' binaries on disk
//! (Metal binary archives, `KEY.metallib-archive`, under `CHORUS_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/chorus`, else `~/.cache/chorus`, in a `metal` folder).

use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// A cache key: hex SHA-256 of its parts (each length-prefixed, so part boundaries count).
pub fn key(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The disk cache's folder for Metal, created (private to the user) if missing; `None` when
/// `CHORUS_DISK_CACHE` turns it off, no folder can be found, or the folder is writable by
/// others (then nothing is read from it).
pub fn directory() -> Option<PathBuf> {
    if let Ok(flag) = std::env::var("CHORUS_DISK_CACHE")
        && matches!(
            flag.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | "no" | "off"
        )
    {
        return None;
    }
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let base = var("CHORUS_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| var("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("chorus")))
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache").join("chorus")))?;
    let dir = base.join("metal");
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(&dir).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&dir).ok()?.permissions().mode();
        if mode & 0o022 != 0 {
            tracing::warn!(
                target: "chorus_metal",
                "the Metal disk cache {} is writable by others; not using it",
                dir.display()
            );
            return None;
        }
    }
    Some(dir)
}

#[cfg(test)]
mod tests {
    use super::key;

    #[test]
    fn keys_depend_on_every_part_and_its_boundaries() {
        assert_ne!(key(&[b"ab", b"c"]), key(&[b"a", b"bc"]));
        assert_ne!(key(&[b"a"]), key(&[b"b"]));
        assert_eq!(key(&[b"a"]).len(), 64);
    }
}
