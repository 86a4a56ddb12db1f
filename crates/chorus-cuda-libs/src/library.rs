//! Probing a CUDA library once, before its bindings are touched.
//!
//! cudarc's bindings panic when their library is absent; each library here has a static
//! [`Library`] that searches for it first (the system loader, then `CUDA_PATH`, `CUDA_HOME`,
//! `/usr/local/cuda*` and pip's `nvidia/*/lib`, through `chorus_driver::loader`), checks the
//! entry points the bindings call, and only then lets calls through. A library that is missing
//! is [`Error::LibraryNotFound`], never a panic. Libraries that need others loaded first (cuBLAS
//! needs cuBLASLt; cuSOLVER needs cuBLAS and cuSPARSE) name them as prerequisites, which are
//! probed (and preloaded by path) before them.

use crate::error::{Error, Result};
use chorus_driver::loader::{Probe, driver_dirs, probe_library};
use std::sync::OnceLock;

/// One CUDA library: its names, what it needs, and its probe (run once).
#[derive(Debug)]
pub struct Library {
    /// The name users know (`cuBLAS`).
    pub display_name: &'static str,
    /// cudarc's name for it (`cublas`), from which the file names are made (`libcublas.so.13`).
    pub file_stem: &'static str,
    /// Libraries loaded before it (the ones its own file links against).
    pub prerequisites: &'static [&'static Library],
    /// The entry points the bindings call, checked at probe time.
    pub symbols: &'static [&'static str],
    /// Whether the system loader finds it by cudarc's names (cudarc's `is_culib_present`).
    found_by_name: fn() -> bool,
    probe: OnceLock<Probe>,
}

impl Library {
    /// A library to probe. `found_by_name` asks the system loader (cudarc's
    /// `sys::is_culib_present`, or the same over the library's file names).
    pub const fn new(
        display_name: &'static str,
        file_stem: &'static str,
        prerequisites: &'static [&'static Library],
        symbols: &'static [&'static str],
        found_by_name: fn() -> bool,
    ) -> Library {
        Library {
            display_name,
            file_stem,
            prerequisites,
            symbols,
            found_by_name,
            probe: OnceLock::new(),
        }
    }

    /// What the probe found (probing on the first call, prerequisites first).
    pub fn probe(&self) -> &Probe {
        self.probe.get_or_init(|| {
            for needed in self.prerequisites {
                if let Some(why) = &needed.probe().missing {
                    return Probe {
                        path: None,
                        missing: Some(format!("it needs {}: {why}", needed.display_name)),
                    };
                }
            }
            let probe = probe_library(
                self.file_stem,
                &driver_dirs(),
                self.symbols,
                self.found_by_name,
            );
            match (&probe.missing, &probe.path) {
                (None, Some(path)) => tracing::debug!(
                    target: "chorus_cuda_libs",
                    "{} loaded from {}",
                    self.display_name,
                    path.display()
                ),
                (None, None) => {
                    tracing::debug!(target: "chorus_cuda_libs", "{} loaded", self.display_name)
                }
                (Some(why), _) => {
                    tracing::debug!(target: "chorus_cuda_libs", "no {}: {why}", self.display_name)
                }
            }
            probe
        })
    }

    /// True when the library loaded with every entry point the bindings call (the seed's
    /// `*…-not-found*` flags, negated).
    pub fn is_available(&self) -> bool {
        self.probe().present()
    }

    /// `Ok` when the library is available, else [`Error::LibraryNotFound`] saying what was
    /// searched. Every call into the bindings goes through here first.
    pub fn ensure(&self) -> Result<()> {
        match &self.probe().missing {
            None => Ok(()),
            Some(why) => Err(Error::LibraryNotFound {
                library: self.display_name,
                searched: why.clone(),
            }),
        }
    }
}

/// Whether the system loader finds one of cudarc's file names for `file_stem`: the
/// `found_by_name` of libraries whose bindings have no `is_culib_present` (NPP, nvJPEG).
pub fn found_by_system_loader(file_stem: &str) -> bool {
    cudarc::get_lib_name_candidates(file_stem)
        .iter()
        .any(|name| {
            // SAFETY: loading a CUDA library runs its initialisers, as its first use would.
            unsafe { libloading::Library::new(name) }.is_ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    static ABSENT: Library = Library::new(
        "chorus test library",
        "chorusnosuchlibrary",
        &[],
        &[],
        || found_by_system_loader("chorusnosuchlibrary"),
    );
    static NEEDS_ABSENT: Library =
        Library::new("dependent", "chorusdependent", &[&ABSENT], &[], || true);

    #[test]
    fn an_absent_library_is_not_found_with_what_was_searched() {
        assert!(!ABSENT.is_available());
        let Err(Error::LibraryNotFound { library, searched }) = ABSENT.ensure() else {
            panic!("expected LibraryNotFound");
        };
        assert_eq!(library, "chorus test library");
        assert!(searched.contains("libchorusnosuchlibrary.so"), "{searched}");
    }

    #[test]
    fn a_library_whose_prerequisite_is_absent_is_not_found() {
        let Err(Error::LibraryNotFound { library, searched }) = NEEDS_ABSENT.ensure() else {
            panic!("expected LibraryNotFound");
        };
        assert_eq!(library, "dependent");
        assert!(
            searched.starts_with("it needs chorus test library: "),
            "{searched}"
        );
    }
}
