//! Finding CUDA libraries and loading them before cudarc does.
//!
//! cudarc's `culib()` panics when a library is missing, and it only asks the system loader. So
//! each library is probed once: first by the names cudarc will use (the system loader), then by
//! absolute path in the places a toolkit lives ([`crate::toolkit`]). A library loaded by
//! absolute path is kept loaded for the life of the process, so that cudarc's later `dlopen` by
//! soname finds it. Every symbol a caller will use is checked at probe time, so a library too
//! old for the bindings is reported as missing instead of panicking at the first call.
//!
//! [`driver`] probes libcuda; the compilers and the library bindings probe theirs with
//! [`probe_library`].

use crate::messages::message;
use crate::search::{BINDINGS_VERSION, Platform, SearchEnv, library_file_names};
use crate::toolkit;
use libloading::Library;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

/// What the probe of one library found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// Where it was loaded from (`None` when the system loader found it by name).
    pub path: Option<PathBuf>,
    /// Why it is absent, when it is.
    pub missing: Option<String>,
}

impl Probe {
    /// True when the library loaded and has every symbol asked for.
    pub fn present(&self) -> bool {
        self.missing.is_none()
    }
}

/// Driver entry points this crate and `chorus-cuda` call (checked before the first call).
const DRIVER_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuDeviceGet",
    "cuDeviceGetCount",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuDeviceCanAccessPeer",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxCreate_v4",
    "cuCtxDestroy_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxGetDevice",
    "cuCtxPushCurrent_v2",
    "cuCtxPopCurrent_v2",
    "cuCtxSynchronize",
    "cuCtxEnablePeerAccess",
    "cuCtxDisablePeerAccess",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemAllocHost_v2",
    "cuMemFreeHost",
    "cuMemAllocManaged",
    "cuMemGetInfo_v2",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemcpyDtoD_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpy2D_v2",
    "cuMemsetD8_v2",
    "cuMemsetD16_v2",
    "cuMemsetD32_v2",
    "cuModuleLoadData",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuModuleGetGlobal_v2",
    "cuFuncGetAttribute",
    "cuFuncSetAttribute",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuOccupancyMaxPotentialBlockSize",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamQuery",
    "cuStreamWaitEvent",
    "cuStreamBeginCapture_v2",
    "cuStreamEndCapture",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventElapsedTime_v2",
    "cuGraphInstantiateWithFlags",
    "cuGraphLaunch",
    "cuGraphDestroy",
    "cuGraphExecDestroy",
];

/// The driver library, probed once.
pub fn driver() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(|| {
        let probe = probe_library("cuda", &driver_dirs(), DRIVER_SYMBOLS, || {
            // SAFETY: only asks the system loader whether cudarc's names resolve.
            unsafe { cudarc::driver::sys::is_culib_present() }
        });
        match (&probe.missing, &probe.path) {
            (None, Some(path)) => message(format!("CUDA driver loaded from {}", path.display())),
            (None, None) => message("CUDA driver loaded"),
            (Some(why), _) => message(format!("no CUDA driver: {why}")),
        }
        probe
    })
}

/// Probes the library cudarc calls `name` (`cuda`, `nvrtc`, `cublas`): loaded by the system
/// loader when `found_by_name` (cudarc's own presence check) says so, else from the first of
/// `dirs` that holds one of cudarc's file names for it (and kept loaded). Present when it
/// loaded and has every one of `symbols`; otherwise [`Probe::missing`] says why. Never panics.
pub fn probe_library(
    name: &str,
    dirs: &[PathBuf],
    symbols: &[&str],
    found_by_name: impl Fn() -> bool,
) -> Probe {
    let file_names = library_file_names(Platform::HOST, name, BINDINGS_VERSION);
    probe_library_files(name, &file_names, dirs, symbols, found_by_name)
}

/// [`probe_library`] over the file names `file_names` (in order) rather than cudarc's for
/// `name`: for a library whose soname cudarc does not know (NCCL's `libnccl.so.2`). `name`
/// only names the library in messages.
pub fn probe_library_files(
    name: &str,
    file_names: &[String],
    dirs: &[PathBuf],
    symbols: &[&str],
    found_by_name: impl Fn() -> bool,
) -> Probe {
    let mut path = None;
    if !found_by_name() {
        match preload(file_names, dirs) {
            Some(found) => path = Some(found),
            None => {
                return Probe {
                    path: None,
                    missing: Some(format!(
                        "none of {} in the system loader's path or in {}",
                        distinct(file_names).join(", "),
                        dirs.iter()
                            .map(|d| d.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                };
            }
        }
        if !found_by_name() {
            return Probe {
                path,
                missing: Some(format!("loaded {name} by path, but not by its soname")),
            };
        }
    }
    let missing = missing_symbols(file_names, path.as_deref(), symbols);
    Probe {
        path,
        missing: (!missing.is_empty())
            .then(|| format!("the {name} library lacks {} (too old?)", missing.join(", "))),
    }
}

/// Loads the first of `file_names` found in `dirs` by absolute path and keeps it loaded for
/// the life of the process; returns its path.
pub fn preload(file_names: &[String], dirs: &[PathBuf]) -> Option<PathBuf> {
    static KEPT: Mutex<Vec<Library>> = Mutex::new(Vec::new());
    for dir in dirs {
        for file in file_names {
            let candidate = dir.join(file);
            if !candidate.is_file() {
                continue;
            }
            // SAFETY: loading a CUDA library runs its initialisers, which is what cudarc would do.
            if let Ok(lib) = unsafe { load_by_path(&candidate) } {
                KEPT.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(lib);
                return Some(candidate);
            }
        }
    }
    None
}

/// The symbols of `symbols` the library lacks.
fn missing_symbols(file_names: &[String], path: Option<&Path>, symbols: &[&str]) -> Vec<String> {
    let Some(lib) = reopen(file_names, path) else {
        return vec!["(could not reopen the library)".into()];
    };
    symbols
        .iter()
        .filter(|s| {
            // SAFETY: only the address is looked up; nothing is called.
            unsafe { lib.get::<unsafe extern "C" fn()>(s.as_bytes()) }.is_err()
        })
        .map(|s| (*s).to_owned())
        .collect()
}

/// Another reference to a library already loaded from `path`, or by one of `file_names`.
pub(crate) fn reopen(file_names: &[String], path: Option<&Path>) -> Option<Library> {
    match path {
        // SAFETY: the library is already loaded (by our preload); this opens another
        // reference to it, running no initialiser again.
        Some(p) => unsafe { Library::new(p) }.ok(),
        None => file_names.iter().find_map(|n| {
            // SAFETY: as above: the system loader found it under one of these names.
            unsafe { Library::new(n) }.ok()
        }),
    }
}

/// The system's library directories, where a driver lives when the system loader's cache does
/// not list it.
const SYSTEM_LIB_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/wsl/lib",
    "/run/opengl-driver/lib",
];

/// Where the driver library may be when the system loader does not find it: the system's
/// library directories (on Windows `System32`, where the display driver puts `nvcuda.dll`),
/// then the toolkits' ([`toolkit::lib_dirs`] of [`toolkit::toolkit_roots`]).
pub fn driver_dirs() -> Vec<PathBuf> {
    driver_dirs_in(&SearchEnv::host())
}

/// [`driver_dirs`] in `env`.
pub fn driver_dirs_in(env: &SearchEnv) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = match env.platform() {
        Platform::Unix => SYSTEM_LIB_DIRS.iter().map(|d| env.unix_path(d)).collect(),
        Platform::Windows => vec![env.system32()],
    };
    // A toolkit's lib64 holds only a stub libcuda under stubs/, which is not searched (nor
    // its lib\x64, which holds import libraries).
    dirs.extend(toolkit::lib_dirs_in(env, &toolkit::toolkit_roots_in(env)));
    dirs
}

/// The first file of `file_names` in `dirs` (directory by directory), found without loading
/// anything: where [`preload`] would load the library from.
pub fn find_library_file(file_names: &[String], dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter()
        .flat_map(|dir| file_names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// The directories the system loader searches by name before any of ours: `LD_LIBRARY_PATH`
/// on Unix; on Windows the program's own folder (`program_dir`) and `PATH` (`System32` is
/// among [`driver_dirs_in`]).
fn loader_path_dirs(env: &SearchEnv, program_dir: Option<&Path>) -> Vec<PathBuf> {
    match env.platform() {
        Platform::Unix => env.paths_var("LD_LIBRARY_PATH"),
        Platform::Windows => {
            let mut dirs: Vec<PathBuf> = program_dir.map(Path::to_path_buf).into_iter().collect();
            dirs.extend(env.paths_var("PATH"));
            dirs
        }
    }
}

/// The system loader's cache of library paths.
const LOADER_CACHE: &str = "/etc/ld.so.cache";

/// The files the library cudarc calls `name` could be loaded from, identified without loading
/// any: `path size mtime` of each candidate that exists, one a line, then the same of the
/// system loader's cache; `None` when no candidate file exists in the places searched.
///
/// The candidates are cudarc's file names in `LD_LIBRARY_PATH`, [`driver_dirs`], and the paths
/// the system loader's cache lists for those names (on Windows: in the program's folder, on
/// `PATH` and in [`driver_dirs`]; there is no loader cache). Whichever of them the loader picks,
/// another installation (another path, or a library replaced in place) changes the listing,
/// and asking costs a few `stat` calls instead of loading the library. `chorus-cuda` keys its
/// compile cache by NVRTC's listing.
pub fn library_files_listing(name: &str) -> Option<String> {
    let env = SearchEnv::host();
    let file_names = library_file_names(env.platform(), name, BINDINGS_VERSION);
    let program = std::env::current_exe().ok();
    let mut dirs = loader_path_dirs(&env, program.as_deref().and_then(Path::parent));
    dirs.extend(driver_dirs_in(&env));
    let mut paths: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|dir| file_names.iter().map(|name| dir.join(name)))
        .collect();
    if env.platform() == Platform::Unix {
        paths.extend(loader_cache_paths(LOADER_CACHE, &file_names));
    }
    let listing = files_listing(&paths)?;
    let loader_cache = files_listing(&[PathBuf::from(LOADER_CACHE)]).unwrap_or_default();
    Some(listing + &loader_cache)
}

/// The paths in the loader cache at `cache` whose file name is one of `file_names` (the cache
/// stores them as NUL-terminated strings; an unreadable cache lists none).
fn loader_cache_paths(cache: &str, file_names: &[String]) -> Vec<PathBuf> {
    let Ok(bytes) = std::fs::read(cache) else {
        return Vec::new();
    };
    bytes
        .split(|b| *b == 0)
        .filter(|s| s.first() == Some(&b'/'))
        .filter_map(|s| std::str::from_utf8(s).ok())
        .map(PathBuf::from)
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| file_names.iter().any(|f| f == n))
        })
        .collect()
}

/// `path size mtime` of each of `paths` that is a file (links followed), one a line, in the
/// order given; `None` when none is.
pub fn files_listing(paths: &[PathBuf]) -> Option<String> {
    let mut listing = String::new();
    for path in paths {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        listing.push_str(&format!("{} {} {modified}\n", path.display(), meta.len()));
    }
    (!listing.is_empty()).then_some(listing)
}

/// Loads the library at `path` by that path.
///
/// On Windows the library's own folder is searched for the DLLs it imports
/// (`LoadLibraryExW` with `LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR`, plus the default folders), so that
/// a DLL found in a toolkit's `bin\x64` or a wheel's `bin\x86_64` finds its neighbours (cuBLAS
/// needs cuBLASLt) without that folder on `PATH`; failing that (a dependency elsewhere on
/// `PATH`), the standard search. The process-wide search path (`SetDllDirectoryW`,
/// `AddDllDirectory`) is left alone: it belongs to the application. Libraries a DLL opens by
/// name later (NVRTC its builtins) are preloaded by path instead: Windows then finds them among
/// the loaded modules.
///
/// # Safety
///
/// Loading a library runs its initialisers (see [`Library::new`]).
unsafe fn load_by_path(path: &Path) -> Result<Library, libloading::Error> {
    #[cfg(windows)]
    {
        use libloading::os::windows::{
            LOAD_LIBRARY_SEARCH_DEFAULT_DIRS, LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR,
            Library as WindowsLibrary,
        };
        // The flag needs an absolute path.
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let flags = LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR | LOAD_LIBRARY_SEARCH_DEFAULT_DIRS;
        // SAFETY: the caller's.
        if let Ok(lib) = unsafe { WindowsLibrary::load_with_flags(&absolute, flags) } {
            return Ok(lib.into());
        }
    }
    // SAFETY: the caller's.
    unsafe { Library::new(path) }
}

/// `names` without repeats, in their order (cudarc's candidate lists name some files twice; a
/// message lists each once).
fn distinct(names: &[String]) -> Vec<&str> {
    let mut seen = std::collections::HashSet::new();
    names
        .iter()
        .map(String::as_str)
        .filter(|n| seen.insert(*n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "chorus-driver-loader-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_driver_probe_does_not_panic_and_explains_absence() {
        if let Some(why) = &driver().missing {
            assert!(!why.is_empty());
        }
    }

    #[test]
    fn a_library_found_nowhere_is_missing_with_the_places_searched() {
        let dir = scratch("nowhere");
        let probe = probe_library("chorusnosuchlib", std::slice::from_ref(&dir), &[], || false);
        assert!(!probe.present());
        assert_eq!(probe.path, None);
        let why = probe.missing.unwrap();
        assert!(why.contains("libchorusnosuchlib.so"), "{why}");
        assert!(why.contains(&dir.display().to_string()), "{why}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_that_is_not_a_library_is_not_loaded() {
        let dir = scratch("not-a-library");
        std::fs::write(dir.join("libchorusfake.so"), b"not an ELF file").unwrap();
        let names = vec!["libchorusfake.so".to_owned()];
        assert_eq!(preload(&names, std::slice::from_ref(&dir)), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_driver_is_searched_in_system_then_toolkit_directories() {
        let dirs = driver_dirs();
        assert_eq!(
            dirs[..SYSTEM_LIB_DIRS.len()],
            SYSTEM_LIB_DIRS
                .iter()
                .map(PathBuf::from)
                .collect::<Vec<_>>()[..]
        );
        assert!(dirs[SYSTEM_LIB_DIRS.len()..].iter().all(|d| d.is_dir()));
    }

    #[test]
    fn file_listings_follow_path_size_and_modification_time() {
        let dir = scratch("listing");
        let (a, b) = (dir.join("libnvrtc.so.13"), dir.join("other.so"));
        std::fs::write(&a, b"library").unwrap();
        std::fs::write(&b, b"library").unwrap();
        let of = |p: &PathBuf| files_listing(std::slice::from_ref(p)).unwrap();
        let first = of(&a);
        assert_eq!(first, of(&a));
        assert_ne!(first, of(&b), "another path");
        // The same size, another modification time.
        let file = std::fs::File::options().write(true).open(&a).unwrap();
        file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1))
            .unwrap();
        let touched = of(&a);
        assert_ne!(first, touched, "touched");
        // Another size, the same modification time.
        std::fs::write(&a, b"library, replaced").unwrap();
        file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1))
            .unwrap();
        assert_ne!(touched, of(&a), "resized");
        // Absent files do not count; no file at all is no listing.
        let missing = dir.join("absent.so");
        assert_eq!(files_listing(&[missing.clone(), a.clone()]), Some(of(&a)));
        assert_eq!(files_listing(&[missing]), None);
        assert_eq!(files_listing(std::slice::from_ref(&dir)), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn loader_cache_paths_are_the_named_files() {
        let dir = scratch("ld-cache");
        let cache = dir.join("ld.so.cache");
        std::fs::write(
            &cache,
            b"glibc-ld.so.cache1.1\0\x07\0/usr/lib/libnvrtc.so.13\0/usr/lib/libm.so.6\0\
              /opt/cuda/lib64/libnvrtc.so\0libnvrtc.so.13\0",
        )
        .unwrap();
        let names = vec!["libnvrtc.so".to_owned(), "libnvrtc.so.13".to_owned()];
        assert_eq!(
            loader_cache_paths(cache.to_str().unwrap(), &names),
            [
                PathBuf::from("/usr/lib/libnvrtc.so.13"),
                PathBuf::from("/opt/cuda/lib64/libnvrtc.so")
            ]
        );
        assert!(loader_cache_paths("/nonexistent/ld.so.cache", &names).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
