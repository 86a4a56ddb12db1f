//! Cache keys and the disk cache's place, as every backend keys its cache
//! ([`chorus_cache`]): a key is the hex SHA-256 of its parts, each length-prefixed (the MSL
//! text, the language version, the device), so that a program compiled once is found again in
//! memory, and its pipelines' binaries on disk (Metal binary archives, `KEY.metallib-archive`,
//! in a `metal` folder of the cache directory every backend shares, [`chorus_cache::disk::dir`],
//! used only when it is the user's own).

use std::path::PathBuf;

pub use chorus_cache::key;

/// The disk cache's folder for Metal, created (private to the user) if missing; `None` when
/// `CHORUS_DISK_CACHE` turns it off, or the cache directory or the folder cannot be made or is
/// not the user's own (another user's, or writable by others: then nothing is read from it).
pub fn directory() -> Option<PathBuf> {
    if let Ok(flag) = std::env::var("CHORUS_DISK_CACHE")
        && matches!(
            flag.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | "no" | "off"
        )
    {
        return None;
    }
    let base = chorus_cache::disk::dir();
    let dir = base.join("metal");
    match chorus_cache::disk::ensure_dir(&base).and_then(|()| chorus_cache::disk::ensure_dir(&dir))
    {
        Ok(()) => Some(dir),
        Err(e) => {
            chorus_cache::disk::warn_disk_cache_off(&e);
            None
        }
    }
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
