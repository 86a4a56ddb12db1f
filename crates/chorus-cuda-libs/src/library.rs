//! Probing a CUDA library once, before its bindings are touched.
//!
//! cudarc's bindings panic when their library is absent; each library here has a static
//! [`Library`] that searches for it first (the system loader, then `CUDA_PATH`, `CUDA_HOME`,
//! `/usr/local/cuda*` and pip's `nvidia/*/lib`, through `chorus_driver::loader`), checks the
//! entry points the bindings call, and only then lets calls through. A library that is missing
//! is [`Error::LibraryNotFound`], never a panic. Libraries that need others loaded first (cuBLAS
//! needs cuBLASLt; cuSOLVER needs cuBLAS and cuSPARSE) name them as prerequisites, which are
//! probed (and preloaded by path) before them. A library whose file names cudarc does not make
//! (NCCL's soname `libnccl.so.2`) names its own ([`Library::with_files`]), and the bindings that
//! look their functions up themselves (NPP, nvJPEG, NCCL) take the probed file from
//! [`Library::open`].

use crate::error::{Error, Result};
use chorus_driver::loader::{Probe, driver_dirs, probe_library_files};
use std::sync::OnceLock;

/// One CUDA library: its names, what it needs, and its probe (run once).
#[derive(Debug)]
pub struct Library {
    /// The name users know (`cuBLAS`).
    pub display_name: &'static str,
    /// cudarc's name for it (`cublas`), from which the file names are made (`libcublas.so.13`).
    pub file_stem: &'static str,
    /// File names tried before those made from `file_stem` (empty for most libraries).
    pub file_names: &'static [&'static str],
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
        Library::with_files(
            display_name,
            file_stem,
            &[],
            prerequisites,
            symbols,
            found_by_name,
        )
    }

    /// As [`Library::new`], trying `file_names` first (NCCL: `libnccl.so.2`, the soname of its
    /// runtime packages, which is none of cudarc's names).
    pub const fn with_files(
        display_name: &'static str,
        file_stem: &'static str,
        file_names: &'static [&'static str],
        prerequisites: &'static [&'static Library],
        symbols: &'static [&'static str],
        found_by_name: fn() -> bool,
    ) -> Library {
        Library {
            display_name,
            file_stem,
            file_names,
            prerequisites,
            symbols,
            found_by_name,
            probe: OnceLock::new(),
        }
    }

    /// The file names searched, in order: [`Library::file_names`], then cudarc's for the stem.
    pub fn candidates(&self) -> Vec<String> {
        let mut names: Vec<String> = self.file_names.iter().map(|n| (*n).to_owned()).collect();
        for name in cudarc::get_lib_name_candidates(self.file_stem) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
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
            let probe = probe_library_files(
                self.file_stem,
                &self.candidates(),
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

    /// Another handle on the probed file, for bindings that look their functions up themselves
    /// (NPP, nvJPEG, NCCL): by the path the probe loaded it from, else by the first of
    /// [`Library::candidates`] the system loader opens. [`Error::LibraryNotFound`] when absent.
    pub fn open(&self) -> Result<libloading::Library> {
        self.ensure()?;
        let not_found = |searched: String| Error::LibraryNotFound {
            library: self.display_name,
            searched,
        };
        if let Some(path) = &self.probe().path {
            // SAFETY: already loaded from this path by the probe; this adds a reference.
            return unsafe { libloading::Library::new(path) }
                .map_err(|e| not_found(format!("{}: {e}", path.display())));
        }
        let names = self.candidates();
        names
            .iter()
            .find_map(|name| {
                // SAFETY: as above, by the name the system loader found it under.
                unsafe { libloading::Library::new(name) }.ok()
            })
            .ok_or_else(|| not_found(format!("could not reopen any of {}", names.join(", "))))
    }
}

/// Whether the system loader finds one of cudarc's file names for `file_stem`: the
/// `found_by_name` of libraries whose bindings have no `is_culib_present` (NPP, nvJPEG).
pub fn found_by_system_loader(file_stem: &str) -> bool {
    found_by_names(&cudarc::get_lib_name_candidates(file_stem))
}

/// Whether the system loader opens one of `names` (NCCL's `found_by_name` over its sonames).
pub fn found_by_names(names: &[impl AsRef<std::ffi::OsStr>]) -> bool {
    names.iter().any(|name| {
        // SAFETY: loading a CUDA library runs its initialisers, as its first use would.
        unsafe { libloading::Library::new(name.as_ref()) }.is_ok()
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

    static OWN_NAMES: Library = Library::with_files(
        "chorus test library with its own names",
        "chorusnosuchstem",
        &["libchorusownname.so.7"],
        &[],
        &[],
        || found_by_names(&["libchorusownname.so.7"]),
    );

    #[test]
    fn own_file_names_come_first_and_are_searched() {
        let names = OWN_NAMES.candidates();
        assert_eq!(names[0], "libchorusownname.so.7");
        assert!(
            names.iter().any(|n| n.contains("chorusnosuchstem")),
            "{names:?}"
        );
        let Err(Error::LibraryNotFound { searched, .. }) = OWN_NAMES.open() else {
            panic!("expected LibraryNotFound");
        };
        assert!(searched.contains("libchorusownname.so.7"), "{searched}");
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
