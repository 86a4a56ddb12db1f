//! Finding and loading NVRTC (through the driver layer's loader), and knowing which NVRTC a
//! compile would use without loading it.

use crate::cache;
use crate::nvcc::find_nvcc;
use chorus_driver::loader::{
    Probe, files_listing, find_library_file, library_files_listing, preload, probe_library,
};
use chorus_driver::search::{
    BINDINGS_VERSION, Platform, library_file_names, nvrtc_builtins_file_name,
};
use chorus_driver::toolkit;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

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
    "nvrtcGetLTOIRSize",
    "nvrtcGetLTOIR",
    "nvrtcGetErrorString",
];

/// NVRTC's probe (set once NVRTC has been asked for).
static NVRTC_PROBE: OnceLock<Probe> = OnceLock::new();

/// NVRTC, probed (and so loaded, with its builtins) once.
pub(crate) fn nvrtc() -> &'static Probe {
    NVRTC_PROBE.get_or_init(|| {
        let probe = probe_library("nvrtc", &toolkit_lib_dirs(), NVRTC_SYMBOLS, || {
            // SAFETY: only asks the system loader whether cudarc's names resolve.
            unsafe { cudarc::nvrtc::sys::is_culib_present() }
        });
        // NVRTC opens its builtins library by name at compile time; next to a library
        // loaded by path, the system loader would not find it (on Windows neither: the
        // folder of a DLL is not searched for the DLLs it loads at run time). Preloaded by
        // path, it is found among the loaded libraries.
        if let Some(dir) = probe.path.as_ref().and_then(|p| p.parent()) {
            preload_builtins(dir);
        }
        probe
    })
}

/// True when NVRTC loads.
pub fn nvrtc_available() -> bool {
    nvrtc().present()
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

/// The files NVRTC could be loaded from, identified without loading any (a hex SHA-256 of
/// the driver layer's [`library_files_listing`]), or `None` when no candidate file exists in
/// the places searched. Another toolkit (another path, or a library replaced in place) changes
/// the identity: a compile cache keyed by it never serves an image made by another compiler,
/// and asking it costs a few `stat` calls instead of loading NVRTC (about 100 MB, 30 ms).
pub(crate) fn nvrtc_fingerprint() -> Option<String> {
    library_files_listing("nvrtc").map(|listing| cache::key(&[listing.as_bytes()]))
}

/// The identity of the files among `paths` that exist (a hex SHA-256 of their paths, sizes
/// and modification times), `None` when none does.
pub(crate) fn files_identity(paths: &[PathBuf]) -> Option<String> {
    files_listing(paths).map(|listing| cache::key(&[listing.as_bytes()]))
}

/// The first of NVRTC's file names present in the toolkit's library directories, found
/// without loading it (where the probe loads it from when the system loader does not find it).
fn nvrtc_in_toolkit() -> Option<PathBuf> {
    let file_names = library_file_names(Platform::HOST, "nvrtc", BINDINGS_VERSION);
    find_library_file(&file_names, &toolkit_lib_dirs())
}

/// Preloads NVRTC's builtins library from `dir` (`libnvrtc-builtins.so.X.Y`,
/// `nvrtc-builtins64_XY.dll`; not the `.alt` variant).
fn preload_builtins(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    let builtins = nvrtc_builtins_file_name(Platform::HOST, names.iter().map(String::as_str));
    let loaded =
        builtins.is_some_and(|name| preload(&[name.to_owned()], &[dir.to_path_buf()]).is_some());
    if !loaded {
        crate::settings::message(format!("no NVRTC builtins library in {}", dir.display()));
    }
}

/// The `include` folders of the toolkit whose library folder is `lib`, nearest first: beside
/// it (`lib64`, `lib`, `bin`), or one level higher (`targets/x86_64-linux/lib`'s, Windows's
/// `bin\x64` in CUDA 13, a wheel's `bin\x86_64`).
fn include_dirs_near(lib: &Path) -> Vec<PathBuf> {
    lib.ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join("include"))
        .collect()
}

/// `$CUDA_PATH`, `$CUDA_HOME`, `$CUDA_ROOT`, the directory above the nvcc the settings find,
/// and the install roots.
fn toolkit_roots() -> Vec<PathBuf> {
    let mut roots = toolkit::env_roots();
    if let Some(nvcc) = find_nvcc()
        && let Some(root) = nvcc.parent().and_then(Path::parent)
    {
        roots.push(root.to_path_buf());
    }
    roots.extend(toolkit::install_roots());
    roots
}

/// The toolkit's library directories (those of [`toolkit_roots`], and pip's `nvidia/*/lib`).
fn toolkit_lib_dirs() -> Vec<PathBuf> {
    toolkit::lib_dirs(&toolkit_roots())
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
        dirs.extend(include_dirs_near(lib));
    }
    dirs.extend(toolkit::include_dirs(&toolkit_roots()));
    dirs.retain(|d| d.join("cuda_fp16.h").is_file());
    // NVRTC takes options as text: a path that is not Unicode cannot be passed whole.
    dirs.retain(|d| {
        let whole = d.to_str().is_some();
        if !whole {
            crate::settings::message(format!(
                "skipping the include directory {}: not Unicode",
                d.display()
            ));
        }
        whole
    });
    let mut seen = Vec::new();
    dirs.retain(|d| {
        let first = !seen.contains(d);
        seen.push(d.clone());
        first
    });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nvrtc_probe_does_not_panic_and_explains_absence() {
        if let Some(why) = &nvrtc().missing {
            assert!(!why.is_empty());
        }
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
                "nvrtc_loader::tests::identity_alone_in_its_process",
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

    #[test]
    fn include_dirs_are_found_near_the_library_folder_of_each_layout() {
        let root = Path::new("/r");
        let near = |lib: &Path| include_dirs_near(lib);
        assert_eq!(near(&root.join("lib64"))[0], root.join("include"));
        let targets = root.join("targets").join("x86_64-linux");
        assert_eq!(near(&targets.join("lib"))[0], targets.join("include"));
        // Windows: CUDA 12's bin, CUDA 13's bin\x64, the cu13 wheel's bin\x86_64.
        assert_eq!(near(&root.join("bin"))[0], root.join("include"));
        assert_eq!(near(&root.join("bin").join("x64"))[1], root.join("include"));
        assert_eq!(
            near(&root.join("bin").join("x86_64"))[1],
            root.join("include")
        );
    }
}
