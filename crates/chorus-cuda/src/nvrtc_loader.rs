//! Finding the CUDA driver and NVRTC, and loading them before cudarc does.
//!
//! cudarc's `culib()` panics when a library is missing, and it only asks the system loader. So
//! each library is probed once here: first by the names cudarc will use (the system loader),
//! then by absolute path in the places a toolkit lives (`CUDA_PATH`, `CUDA_HOME`,
//! `/usr/local/cuda*`, pip's `site-packages/nvidia/*/lib`). A library loaded by absolute path is
//! kept loaded for the life of the process, so that cudarc's later `dlopen` by soname finds it.
//! Every symbol this crate calls is checked at probe time, so a driver too old for the bindings
//! is reported as missing instead of panicking at the first call.

use crate::nvcc::toolkit_roots;
use libloading::Library;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What the probe of one library found.
#[derive(Debug)]
pub(crate) struct Probe {
    /// Where it was loaded from (`None` when the system loader found it by name).
    pub(crate) path: Option<PathBuf>,
    /// Why it is absent, when it is.
    pub(crate) missing: Option<String>,
}

impl Probe {
    pub(crate) fn present(&self) -> bool {
        self.missing.is_none()
    }
}

/// Driver entry points this crate calls (checked before the first call).
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

/// NVRTC entry points this crate calls.
const NVRTC_SYMBOLS: &[&str] = &[
    "nvrtcVersion",
    "nvrtcCreateProgram",
    "nvrtcCompileProgram",
    "nvrtcDestroyProgram",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetErrorString",
];

/// The driver library, probed once.
pub(crate) fn driver() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(|| {
        let probe = probe("cuda", &driver_dirs(), DRIVER_SYMBOLS, || unsafe {
            // SAFETY: only asks the system loader whether cudarc's names resolve.
            cudarc::driver::sys::is_culib_present()
        });
        match &probe.missing {
            None => crate::settings::message(format!(
                "CUDA driver loaded{}",
                probe
                    .path
                    .as_ref()
                    .map(|p| format!(" from {}", p.display()))
                    .unwrap_or_default()
            )),
            Some(why) => crate::settings::message(format!("no CUDA driver: {why}")),
        }
        probe
    })
}

/// NVRTC's probe (set once NVRTC has been asked for).
static NVRTC_PROBE: OnceLock<Probe> = OnceLock::new();

/// NVRTC, probed (and so loaded, with its builtins) once.
pub(crate) fn nvrtc() -> &'static Probe {
    NVRTC_PROBE.get_or_init(|| {
        let probe = probe("nvrtc", &toolkit_lib_dirs(), NVRTC_SYMBOLS, || unsafe {
            // SAFETY: as above, for NVRTC.
            cudarc::nvrtc::sys::is_culib_present()
        });
        // NVRTC opens its builtins library by soname at compile time; next to a library
        // loaded by path, the system loader would not find it.
        if let Some(dir) = probe.path.as_ref().and_then(|p| p.parent()) {
            preload_builtins(dir);
        }
        probe
    })
}

/// Whether NVRTC has been probed (loaded, when present), without probing it.
#[cfg(test)]
fn nvrtc_probed() -> bool {
    NVRTC_PROBE.get().is_some()
}

/// True when NVRTC has been probed and found unusable (without probing it).
pub(crate) fn nvrtc_known_missing() -> bool {
    NVRTC_PROBE.get().is_some_and(|probe| !probe.present())
}

/// The files NVRTC could be loaded from, identified without loading any (a hex SHA-256), or
/// `None` when no candidate file exists in the places searched.
///
/// The candidates are cudarc's file names in `LD_LIBRARY_PATH`, the toolkit's and the system's
/// library directories, and the paths the system loader's cache (`/etc/ld.so.cache`) lists for
/// those names; each existing one counts with its path, size and modification time, and the
/// loader cache itself too. Whichever of them the loader picks, another toolkit (another path,
/// or a library replaced in place) changes the identity: a compile cache keyed by it never
/// serves an image made by another compiler, and asking it costs a few `stat` calls instead of
/// loading NVRTC (about 100 MB, 30 ms).
pub(crate) fn nvrtc_fingerprint() -> Option<String> {
    let file_names = cudarc::get_lib_name_candidates("nvrtc");
    let mut dirs: Vec<PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(driver_dirs());
    let mut paths: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|dir| file_names.iter().map(|name| dir.join(name)))
        .collect();
    paths.extend(loader_cache_paths(LOADER_CACHE, &file_names));
    let fingerprint = files_fingerprint(&paths)?;
    let loader_cache = files_fingerprint(&[PathBuf::from(LOADER_CACHE)]).unwrap_or_default();
    Some(crate::cache::key(&[
        fingerprint.as_bytes(),
        loader_cache.as_bytes(),
    ]))
}

/// The identity of the files among `paths` that exist (a hex SHA-256 of their paths, sizes
/// and modification times, see [`files_fingerprint`]), `None` when none does.
pub(crate) fn files_identity(paths: &[PathBuf]) -> Option<String> {
    files_fingerprint(paths).map(|listing| crate::cache::key(&[listing.as_bytes()]))
}

/// The system loader's cache of library paths.
const LOADER_CACHE: &str = "/etc/ld.so.cache";

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
fn files_fingerprint(paths: &[PathBuf]) -> Option<String> {
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

/// The first of NVRTC's file names present in the toolkit's library directories, found
/// without loading it (where the probe loads it from when the system loader does not find it).
fn nvrtc_in_toolkit() -> Option<PathBuf> {
    let file_names = cudarc::get_lib_name_candidates("nvrtc");
    toolkit_lib_dirs()
        .iter()
        .flat_map(|dir| file_names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// Preloads `libnvrtc-builtins.so.X.Y` from `dir` (not the `.alt` variant).
fn preload_builtins(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("libnvrtc-builtins.so") || n.starts_with("nvrtc-builtins64"))
        .collect();
    if preload(&names, &[dir.to_path_buf()]).is_none() {
        crate::settings::message(format!("no NVRTC builtins library in {}", dir.display()));
    }
}

fn probe(
    name: &str,
    dirs: &[PathBuf],
    symbols: &[&str],
    cudarc_finds_it: impl Fn() -> bool,
) -> Probe {
    let file_names = cudarc::get_lib_name_candidates(name);
    let mut path = None;
    if !cudarc_finds_it() {
        match preload(&file_names, dirs) {
            Some(found) => path = Some(found),
            None => {
                return Probe {
                    path: None,
                    missing: Some(format!(
                        "none of {} in the system loader's path or in {}",
                        file_names.join(", "),
                        dirs.iter()
                            .map(|d| d.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                };
            }
        }
        if !cudarc_finds_it() {
            return Probe {
                path,
                missing: Some(format!("loaded {name} by path, but not by its soname")),
            };
        }
    }
    let missing = missing_symbols(&file_names, path.as_deref(), symbols);
    Probe {
        path,
        missing: (!missing.is_empty())
            .then(|| format!("the {name} library lacks {} (too old?)", missing.join(", "))),
    }
}

/// Loads the first of `file_names` found in `dirs` by absolute path and keeps it loaded.
fn preload(file_names: &[String], dirs: &[PathBuf]) -> Option<PathBuf> {
    static KEPT: std::sync::Mutex<Vec<Library>> = std::sync::Mutex::new(Vec::new());
    for dir in dirs {
        for file in file_names {
            let candidate = dir.join(file);
            if !candidate.is_file() {
                continue;
            }
            // SAFETY: loading a CUDA library runs its initialisers, which is what cudarc would do.
            if let Ok(lib) = unsafe { Library::new(&candidate) } {
                KEPT.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(lib);
                return Some(candidate);
            }
        }
    }
    None
}

/// The symbols of `symbols` the library lacks.
fn missing_symbols(file_names: &[String], path: Option<&Path>, symbols: &[&str]) -> Vec<String> {
    // SAFETY: the library is already loaded (by cudarc's names or our preload); this opens
    // another reference to it.
    let lib = match path {
        Some(p) => unsafe { Library::new(p) }.ok(),
        None => file_names
            .iter()
            .find_map(|n| unsafe { Library::new(n) }.ok()),
    };
    let Some(lib) = lib else {
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

/// Where the driver library may be when the system loader does not find it.
fn driver_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/nvidia/lib64",
        "/usr/local/nvidia/lib",
        "/usr/lib/wsl/lib",
        "/run/opengl-driver/lib",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    // A toolkit's lib64 holds only a stub libcuda under stubs/, which is not searched.
    dirs.extend(toolkit_lib_dirs());
    dirs
}

/// The toolkit's library directories: `$CUDA_PATH`, `$CUDA_HOME`, the conventional install
/// roots, the directory above a found nvcc, and pip's `nvidia/*/lib`.
pub(crate) fn toolkit_lib_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for root in toolkit_roots_all() {
        for sub in [
            "lib64",
            "lib",
            "targets/x86_64-linux/lib",
            "targets/sbsa-linux/lib",
        ] {
            dirs.push(root.join(sub));
        }
    }
    for site in site_packages() {
        let nvidia = site.join("nvidia");
        for sub in ["cu13/lib", "cu12/lib", "cuda_nvrtc/lib", "cuda_runtime/lib"] {
            dirs.push(nvidia.join(sub));
        }
    }
    dirs.retain(|d| d.is_dir());
    dirs.dedup();
    dirs
}

/// The toolkit's header directories (for `cuda_fp16.h` and friends under NVRTC), searched once:
/// every NVRTC compile needs them, and the search walks the file system.
pub(crate) fn toolkit_include_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(find_toolkit_include_dirs)
}

fn find_toolkit_include_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    // Found without loading NVRTC: compile options (and so cache keys) are known before a
    // cache hit decides whether NVRTC is needed at all.
    if let Some(lib) = nvrtc_in_toolkit().as_deref().and_then(Path::parent) {
        dirs.push(lib.with_file_name("include"));
    }
    for root in toolkit_roots_all() {
        dirs.push(root.join("include"));
        dirs.push(root.join("targets/x86_64-linux/include"));
    }
    for site in site_packages() {
        for sub in [
            "cu13/include",
            "cu12/include",
            "cuda_runtime/include",
            "cuda_nvrtc/include",
        ] {
            dirs.push(site.join("nvidia").join(sub));
        }
    }
    dirs.retain(|d| d.join("cuda_fp16.h").is_file());
    dirs.dedup();
    // CUDA 13 keeps libcu++ (`<cuda/std/...>`, which curand_kernel.h includes) under
    // include/cccl; nvcc adds it through nvcc.profile, NVRTC needs it named.
    let cccl: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.join("cccl"))
        .filter(|d| d.join("cuda/std").is_dir())
        .collect();
    dirs.extend(cccl);
    dirs
}

/// `$CUDA_PATH`, `$CUDA_HOME`, the directory above nvcc's `bin`, and the install roots.
fn toolkit_roots_all() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for var in ["CUDA_PATH", "CUDA_HOME", "CUDA_ROOT"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            roots.push(PathBuf::from(v));
        }
    }
    if let Some(nvcc) = crate::nvcc::find_nvcc()
        && let Some(root) = nvcc.parent().and_then(Path::parent)
    {
        roots.push(root.to_path_buf());
    }
    roots.extend(toolkit_roots());
    roots
}

/// Python `site-packages` / `dist-packages` directories that pip installs into.
fn site_packages() -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = vec!["/usr/local/lib".into(), "/usr/lib".into()];
    if let Some(home) = std::env::var_os("HOME") {
        bases.push(PathBuf::from(home).join(".local/lib"));
    }
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(v) = std::env::var_os(var) {
            bases.push(PathBuf::from(v).join("lib"));
        }
    }
    let mut out: Vec<PathBuf> = std::env::var_os("PYTHONPATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for base in bases {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with("python3") {
                out.push(entry.path().join("site-packages"));
                out.push(entry.path().join("dist-packages"));
            }
        }
    }
    out.retain(|d| d.is_dir());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_do_not_panic_and_explain_absence() {
        for probe in [driver(), nvrtc()] {
            if let Some(why) = &probe.missing {
                assert!(!why.is_empty());
            }
        }
    }

    #[test]
    fn file_fingerprints_follow_path_size_and_modification_time() {
        let dir = crate::tempdir::PrivateTempDir::new_in(&std::env::temp_dir()).unwrap();
        let (a, b) = (
            dir.path().join("libnvrtc.so.13"),
            dir.path().join("other.so"),
        );
        std::fs::write(&a, b"library").unwrap();
        std::fs::write(&b, b"library").unwrap();
        let of = |p: &PathBuf| files_fingerprint(std::slice::from_ref(p)).unwrap();
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
        // Absent files do not count; no file at all is no identity.
        let missing = dir.path().join("absent.so");
        assert_eq!(
            files_fingerprint(&[missing.clone(), a.clone()]),
            Some(of(&a))
        );
        assert_eq!(files_fingerprint(&[missing]), None);
        assert_eq!(files_fingerprint(&[dir.path().to_path_buf()]), None);
    }

    #[test]
    fn loader_cache_paths_are_the_named_files() {
        let dir = crate::tempdir::PrivateTempDir::new_in(&std::env::temp_dir()).unwrap();
        let cache = dir.path().join("ld.so.cache");
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
    }

    /// Run alone in a process of its own by the test below (other tests of this binary load
    /// NVRTC, on other threads).
    #[test]
    #[ignore = "run by the_nvrtc_identity_and_include_dirs_do_not_load_nvrtc in a process of its own"]
    fn identity_alone_in_its_process() {
        assert!(!nvrtc_probed());
        let first = nvrtc_fingerprint();
        assert_eq!(first, nvrtc_fingerprint());
        let _ = toolkit_include_dirs();
        assert!(!nvrtc_probed(), "NVRTC was loaded");
    }

    #[test]
    fn the_nvrtc_identity_and_include_dirs_do_not_load_nvrtc() {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "loader::tests::identity_alone_in_its_process",
                "--ignored",
                "--test-threads=1",
            ])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    #[test]
    fn include_dirs_hold_cuda_fp16_or_libcudacxx() {
        for dir in toolkit_include_dirs() {
            // A toolkit include directory, or CUDA 13's include/cccl next to one.
            let toolkit = dir.join("cuda_fp16.h").is_file();
            let cccl = dir.ends_with("cccl")
                && dir.join("cuda/std").is_dir()
                && dir
                    .parent()
                    .is_some_and(|p| p.join("cuda_fp16.h").is_file());
            assert!(toolkit || cccl, "{}", dir.display());
        }
    }
}
