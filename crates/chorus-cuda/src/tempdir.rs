//! Private temporary directories for nvcc's input and output files.

use crate::error::{Error, Result};
use chorus_cache::disk::create_private_dir;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A directory only this user can enter (mode 0700 on Unix), created under a fresh name that no
/// other process can have prepared (creation fails if the name exists, so a planted directory or
/// link is never reused), and removed with its contents on drop.
#[derive(Debug)]
pub(crate) struct PrivateTempDir {
    path: PathBuf,
}

impl PrivateTempDir {
    /// Creates `PARENT/chorus-PID-NANOS-N`.
    pub(crate) fn new_in(parent: &Path) -> Result<PrivateTempDir> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut last_error = None;
        for _ in 0..16 {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = parent.join(format!("chorus-{}-{nanos:x}-{n}", std::process::id()));
            match create_private_dir(&path) {
                Ok(()) => return Ok(PrivateTempDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last_error = Some(e),
                Err(e) => return Err(Error::io_path("creating temporary directory", &path, e)),
            }
        }
        Err(Error::io_path(
            "creating temporary directory in",
            parent,
            last_error.unwrap_or_else(|| std::io::Error::other("no free name")),
        ))
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTempDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            tracing::warn!("could not remove {}: {e}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_dirs_are_unique_owner_only_and_removed() {
        let a = PrivateTempDir::new_in(&std::env::temp_dir()).unwrap();
        let b = PrivateTempDir::new_in(&std::env::temp_dir()).unwrap();
        assert_ne!(a.path(), b.path());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(a.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        std::fs::write(a.path().join("x.cu"), "x").unwrap();
        let path = a.path().to_path_buf();
        drop(a);
        assert!(!path.exists());
    }

    #[test]
    fn missing_parent_is_an_error() {
        let e = PrivateTempDir::new_in(Path::new("/nonexistent/chorus/parent")).unwrap_err();
        assert!(
            e.to_string().contains("creating temporary directory"),
            "{e}"
        );
    }
}
