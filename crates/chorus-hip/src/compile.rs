//! Compiling HIP C++ to code objects: hipRTC in process (through the cache), or hipcc ahead of
//! time.

use crate::cache::{self, Inputs};
use crate::error::{Error, Result};
use crate::loader::{Loaded, loaded};
use crate::sys;
use std::ffi::{CStr, CString, c_int};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// hipRTC's version (major, minor).
pub fn hiprtc_version() -> Result<(i32, i32)> {
    let l = loaded()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: valid out-pointers.
    rtc_check(l, "hiprtcVersion", unsafe {
        (l.hiprtc.hiprtcVersion)(&mut major, &mut minor)
    })?;
    Ok((major, minor))
}

fn rtc_check(l: &Loaded, call: &'static str, code: sys::hiprtcResult) -> Result<()> {
    if code == sys::HIPRTC_SUCCESS {
        return Ok(());
    }
    // SAFETY: returns a static NUL-terminated string (or null).
    let text = unsafe { (l.hiprtc.hiprtcGetErrorString)(code) };
    let message = if text.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-null and NUL-terminated.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    };
    Err(Error::Hiprtc {
        call,
        code,
        message,
    })
}

/// The options hipRTC gets for `arch` (a `gcnArchName`, feature suffixes included): the
/// architecture, `-O3` and C++17.
pub fn hiprtc_options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "-O3".into(),
        "-std=c++17".into(),
    ]
}

/// Compiles `source` (named `name` in messages) with hipRTC for `arch`, through the memory and
/// disk caches: a hit compiles nothing.
pub fn hiprtc_compile(source: &str, name: &str, arch: &str) -> Result<Arc<[u8]>> {
    let l = loaded()?;
    let (major, minor) = hiprtc_version()?;
    let compiler = format!("hiprtc {major}.{minor} {}", l.hip_path);
    let options = hiprtc_options(arch);
    let inputs = Inputs {
        compiler: &compiler,
        arch,
        options: &options,
        source,
    };
    if let Some(code) = cache::memory_get(&inputs) {
        return Ok(code);
    }
    // `CHORUS_DISK_CACHE=off` keeps the disk level out, as on CUDA.
    let disk = chorus_cache::disk_cache_setting().map_err(Error::Invalid)?;
    let key = inputs.key();
    let code: Arc<[u8]> = match disk.then(|| cache::disk_get(&key)).flatten() {
        Some(code) => code.into(),
        None => {
            let code: Arc<[u8]> = hiprtc_compile_uncached(l, source, name, &options)?.into();
            if disk {
                cache::disk_put(&key, &code);
            }
            code
        }
    };
    cache::memory_put(&inputs, code.clone());
    Ok(code)
}

/// One hipRTC compile, no cache.
fn hiprtc_compile_uncached(
    l: &Loaded,
    source: &str,
    name: &str,
    options: &[String],
) -> Result<Vec<u8>> {
    let nul = |what: &str| Error::Invalid(format!("{what} contains a NUL byte"));
    let c_source = CString::new(source).map_err(|_| nul("the source"))?;
    let c_name = CString::new(name).map_err(|_| nul("the name"))?;
    let c_options: Vec<CString> = options
        .iter()
        .map(|o| CString::new(o.as_str()).map_err(|_| nul("an option")))
        .collect::<Result<_>>()?;
    let option_ptrs: Vec<*const std::ffi::c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
    let mut program: sys::hiprtcProgram = std::ptr::null_mut();
    // SAFETY: NUL-terminated strings, no headers, a valid out-pointer.
    rtc_check(l, "hiprtcCreateProgram", unsafe {
        (l.hiprtc.hiprtcCreateProgram)(
            &mut program,
            c_source.as_ptr(),
            c_name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    })?;
    let result = (|| {
        // SAFETY: a live program; `option_ptrs` holds `len` NUL-terminated strings.
        let compiled = unsafe {
            (l.hiprtc.hiprtcCompileProgram)(
                program,
                option_ptrs.len() as c_int,
                option_ptrs.as_ptr(),
            )
        };
        if compiled != sys::HIPRTC_SUCCESS {
            let mut size = 0usize;
            // SAFETY: a live program, valid out-pointer.
            unsafe { (l.hiprtc.hiprtcGetProgramLogSize)(program, &mut size) };
            let mut log = vec![0u8; size.max(1)];
            // SAFETY: the buffer holds the log's size.
            unsafe { (l.hiprtc.hiprtcGetProgramLog)(program, log.as_mut_ptr().cast()) };
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            return Err(Error::Compile {
                name: name.into(),
                log: String::from_utf8_lossy(&log[..end]).into_owned(),
            });
        }
        let mut size = 0usize;
        // SAFETY: a compiled program, valid out-pointer.
        rtc_check(l, "hiprtcGetCodeSize", unsafe {
            (l.hiprtc.hiprtcGetCodeSize)(program, &mut size)
        })?;
        let mut code = vec![0u8; size];
        // SAFETY: the buffer holds the code's size.
        rtc_check(l, "hiprtcGetCode", unsafe {
            (l.hiprtc.hiprtcGetCode)(program, code.as_mut_ptr().cast())
        })?;
        Ok(code)
    })();
    // SAFETY: destroys the program created above, once.
    unsafe { (l.hiprtc.hiprtcDestroyProgram)(&mut program) };
    result
}

/// hipcc, the offline compiler: `CHORUS_HIPCC`, else `$ROCM_PATH/bin/hipcc`,
/// `/opt/rocm/bin/hipcc`, then `hipcc` on `PATH`.
pub fn find_hipcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHORUS_HIPCC").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(root) = std::env::var_os("ROCM_PATH").filter(|r| !r.is_empty()) {
        candidates.push(PathBuf::from(root).join("bin/hipcc"));
    }
    candidates.push(PathBuf::from("/opt/rocm/bin/hipcc"));
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("hipcc")));
    }
    candidates.into_iter().find(|p| p.is_file())
}

/// Compiles `source` with `hipcc` to a code object for `arch` (`gfx90a`): `hipcc -x hip
/// --offload-arch=ARCH --genco -O3`, with `HIP_PLATFORM=amd` (hipcc otherwise targets NVIDIA
/// when it finds nvcc), in a private temporary directory.
pub fn hipcc_compile(
    hipcc: &Path,
    source: &str,
    arch: &str,
    options: &[String],
) -> Result<Vec<u8>> {
    let fail = |log: String| Error::Hipcc {
        path: hipcc.to_path_buf(),
        log,
    };
    let dir = tempfile::tempdir()?;
    let input = dir.path().join("module.hip");
    let output = dir.path().join("module.hsaco");
    std::fs::write(&input, source)?;
    let run = std::process::Command::new(hipcc)
        .env("HIP_PLATFORM", "amd")
        .args([
            "-x",
            "hip",
            &format!("--offload-arch={arch}"),
            "--genco",
            "-O3",
        ])
        .args(options)
        .arg("-o")
        .arg(&output)
        .arg(&input)
        .output()
        .map_err(|e| fail(e.to_string()))?;
    if !run.status.success() {
        return Err(fail(format!(
            "{}{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        )));
    }
    let code = std::fs::read(&output)?;
    if !code.starts_with(b"\x7fELF") && !code.starts_with(b"__CLANG_OFFLOAD_BUNDLE__") {
        return Err(fail("the output is not a code object".into()));
    }
    Ok(code)
}
