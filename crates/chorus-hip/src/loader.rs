//! Finding and loading the HIP runtime (`libamdhip64`) and hipRTC (`libhiprtc`) at run time.
//!
//! Candidates, in order: `$ROCM_PATH/lib` when set, the system loader's search
//! (`LD_LIBRARY_PATH`, the cache) for the unversioned and versioned names (7, 6, 5), then
//! `/opt/rocm/lib` and every `/opt/rocm-*/lib` (newest name first). hipRTC is looked for the same way and, failing that,
//! in `libamdhip64` itself (ROCm 5.2 and older export hipRTC from it). Every symbol is resolved
//! when the library loads, so an old or partial ROCm is [`Error::HipNotFound`] at the first
//! call, never a crash later; the result is kept for the process.

use crate::error::{Error, Result};
use crate::sys::{HipApi, HiprtcApi};
use libloading::Library;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The file names of the HIP runtime, newest first.
const HIP_NAMES: &[&str] = &[
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
];

/// The file names of hipRTC, newest first.
const HIPRTC_NAMES: &[&str] = &[
    "libhiprtc.so",
    "libhiprtc.so.7",
    "libhiprtc.so.6",
    "libhiprtc.so.5",
];

/// The loaded libraries with their resolved functions.
pub(crate) struct Loaded {
    /// The HIP runtime's functions.
    pub hip: HipApi,
    /// hipRTC's functions.
    pub hiprtc: HiprtcApi,
    /// `hipGetDevicePropertiesR0600` (ROCm 6 and newer), which fills ROCm 6's layout of
    /// `hipDeviceProp_t`; `None` before ROCm 6, where `hipGetDeviceProperties` fills ROCm 5's.
    pub properties_r0600: Option<PropertiesFn>,
    /// Where the runtime was loaded from.
    pub hip_path: String,
    // The libraries stay loaded for the process: the function pointers above point into them.
    _libraries: Vec<Library>,
}

/// `hipGetDevicePropertiesR0600`'s type.
pub(crate) type PropertiesFn =
    unsafe extern "C" fn(*mut std::ffi::c_void, std::ffi::c_int) -> crate::sys::hipError_t;

/// `hipGetDevicePropertiesR0600` in `lib`, if it has it.
fn properties_r0600(lib: &Library) -> Option<PropertiesFn> {
    // SAFETY: the symbol, where present, has this C signature (ROCm 6's hip_runtime_api.h).
    unsafe {
        lib.get::<PropertiesFn>(b"hipGetDevicePropertiesR0600\0")
            .ok()
            .map(|f| *f)
    }
}

static LOADED: OnceLock<std::result::Result<Loaded, (String, String)>> = OnceLock::new();

/// The loaded runtime, loading it on first use.
pub(crate) fn loaded() -> Result<&'static Loaded> {
    LOADED
        .get_or_init(|| load(&candidates(HIP_NAMES), &candidates(HIPRTC_NAMES)))
        .as_ref()
        .map_err(|(reason, tried)| Error::HipNotFound {
            reason: reason.clone(),
            tried: tried.clone(),
        })
}

/// True when the HIP runtime and hipRTC load (with every symbol this crate calls).
pub fn hip_available() -> bool {
    loaded().is_ok()
}

/// Where the HIP runtime was loaded from, or why it was not.
pub fn hip_library() -> Result<&'static str> {
    loaded().map(|l| l.hip_path.as_str())
}

/// The candidate paths for `names`: `$ROCM_PATH/lib` when it is set (an explicit choice wins
/// over whatever runtime the system loader would find), bare names for the system loader, then
/// `/opt/rocm/lib` and `/opt/rocm-*/lib`.
pub fn candidates(names: &[&str]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    if let Some(root) = std::env::var_os("ROCM_PATH").filter(|r| !r.is_empty()) {
        let lib = PathBuf::from(root).join("lib");
        out.extend(names.iter().map(|n| lib.join(n)));
    }
    out.extend(names.iter().map(PathBuf::from));
    let mut dirs: Vec<PathBuf> = vec![PathBuf::from("/opt/rocm/lib")];
    let mut versioned: Vec<PathBuf> = std::fs::read_dir("/opt")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rocm-"))
        })
        .map(|p| p.join("lib"))
        .collect();
    versioned.sort();
    versioned.reverse();
    dirs.extend(versioned);
    for dir in dirs {
        out.extend(names.iter().map(|n| dir.join(n)));
    }
    out
}

/// Loads the first of `hip` that has every runtime symbol and the first of `hiprtc` (else the
/// runtime itself) that has every hipRTC symbol. The error is the last reason and every path
/// tried.
pub(crate) fn load(
    hip: &[PathBuf],
    hiprtc: &[PathBuf],
) -> std::result::Result<Loaded, (String, String)> {
    let mut tried = Vec::new();
    let mut reason = String::from("no candidate");
    let mut runtime = None;
    for path in hip {
        tried.push(path.display().to_string());
        // SAFETY: loading a shared library runs its initialisers; ROCm's runtime is meant to
        // be loaded this way (it is what `dlopen` in HIP's own tools does).
        match unsafe { Library::new(path) } {
            // SAFETY: the symbols are resolved with the signatures of HIP's C API (sys.rs).
            Ok(lib) => match unsafe { HipApi::resolve(&lib) } {
                Ok(api) => {
                    runtime = Some((lib, api, path.display().to_string()));
                    break;
                }
                Err(e) => reason = format!("{}: {e}", path.display()),
            },
            Err(e) => reason = e.to_string(),
        }
    }
    let Some((hip_lib, hip_api, hip_path)) = runtime else {
        return Err((reason, tried.join(", ")));
    };
    for path in hiprtc {
        tried.push(path.display().to_string());
        // SAFETY: as above.
        match unsafe { Library::new(path) } {
            // SAFETY: hipRTC's C API (sys.rs).
            Ok(lib) => match unsafe { HiprtcApi::resolve(&lib) } {
                Ok(rtc) => {
                    return Ok(Loaded {
                        properties_r0600: properties_r0600(&hip_lib),
                        hip: hip_api,
                        hiprtc: rtc,
                        hip_path,
                        _libraries: vec![hip_lib, lib],
                    });
                }
                Err(e) => reason = format!("{}: {e}", path.display()),
            },
            Err(e) => reason = e.to_string(),
        }
    }
    // ROCm 5.2 and older: hipRTC lives in the runtime.
    // SAFETY: hipRTC's C API (sys.rs).
    match unsafe { HiprtcApi::resolve(&hip_lib) } {
        Ok(rtc) => Ok(Loaded {
            properties_r0600: properties_r0600(&hip_lib),
            hip: hip_api,
            hiprtc: rtc,
            hip_path,
            _libraries: vec![hip_lib],
        }),
        Err(e) => Err((
            format!("hipRTC: {reason}; not in {hip_path}: {e}"),
            tried.join(", "),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_libraries_are_hip_not_found() {
        let nowhere = [PathBuf::from("/nonexistent/libamdhip64.so")];
        let Err((reason, tried)) = load(&nowhere, &nowhere) else {
            panic!("a library loaded from /nonexistent");
        };
        assert!(tried.contains("/nonexistent/libamdhip64.so"), "{tried}");
        assert!(!reason.is_empty());
    }

    #[test]
    fn candidates_start_with_the_system_loader_and_include_opt_rocm() {
        let c = candidates(HIP_NAMES);
        let first_bare = c.iter().position(|p| p == &PathBuf::from("libamdhip64.so"));
        assert!(first_bare.is_some(), "{c:?}");
        // Before the bare names: only `$ROCM_PATH/lib`'s, when it is set.
        match std::env::var_os("ROCM_PATH").filter(|r| !r.is_empty()) {
            Some(root) => assert_eq!(c[0], PathBuf::from(root).join("lib/libamdhip64.so")),
            None => assert_eq!(first_bare, Some(0)),
        }
        assert!(c.contains(&PathBuf::from("/opt/rocm/lib/libamdhip64.so.6")));
    }
}
