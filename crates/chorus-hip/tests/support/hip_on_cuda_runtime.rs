//! Building the HIP-on-CUDA runtime (`hip_on_cuda/runtime/hip_on_cuda_runtime.c`: a
//! `libamdhip64.so` over the CUDA driver and NVRTC) and pointing chorus-hip's loader at it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The runtime's C source (embedded: test binaries may run away from this checkout).
pub const SOURCE: &str = include_str!("../../hip_on_cuda/runtime/hip_on_cuda_runtime.c");

/// CUDA's include folder (for `cuda.h` and `nvrtc.h`): `$CUDA_PATH/include`, else
/// `/usr/local/cuda/include`.
pub fn cuda_include() -> Option<PathBuf> {
    std::env::var_os("CUDA_PATH")
        .map(|p| PathBuf::from(p).join("include"))
        .into_iter()
        .chain([PathBuf::from("/usr/local/cuda/include")])
        .find(|d| d.join("cuda.h").is_file() && d.join("nvrtc.h").is_file())
}

/// Builds the runtime as `root/lib/libamdhip64.so` (and `libhiprtc.so`, a link to it) and writes the HIP-on-CUDA headers under
/// `root/include`; returns the include folders hipRTC needs (the headers' and CUDA's).
pub fn build(root: &Path) -> Result<String, String> {
    let cuda = cuda_include().ok_or("no CUDA include folder with cuda.h and nvrtc.h")?;
    let lib = root.join("lib");
    std::fs::create_dir_all(&lib).map_err(|e| e.to_string())?;
    let source = root.join("hip_on_cuda_runtime.c");
    std::fs::write(&source, SOURCE).map_err(|e| e.to_string())?;
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let out = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror"])
        .arg(format!("-I{}", cuda.display()))
        .arg(&source)
        .arg("-o")
        .arg(lib.join("libamdhip64.so"))
        .arg("-ldl")
        .output()
        .map_err(|e| format!("{}: {e}", Path::new(&cc).display()))?;
    if !out.status.success() {
        return Err(format!(
            "building the HIP-on-CUDA runtime failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // hipRTC is the same library (found first on ROCM_PATH, before any other ROCm's); a hard
    // link, so the loader sees one file (and it builds on every host the workspace checks for).
    let hiprtc = lib.join("libhiprtc.so");
    let _ = std::fs::remove_file(&hiprtc);
    std::fs::hard_link(lib.join("libamdhip64.so"), &hiprtc).map_err(|e| e.to_string())?;
    let include = root.join("include");
    chorus_hip::write_hip_on_cuda_headers(&include).map_err(|e| e.to_string())?;
    Ok(format!("{}:{}", include.display(), cuda.display()))
}
