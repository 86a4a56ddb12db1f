//! Calling the driver: presence, `cuInit`, and `CUresult` to [`Error`].

use crate::error::{Error, Result};
use crate::loader;
use cudarc::driver::sys::{self, CUresult};
use std::ffi::CStr;
use std::sync::OnceLock;

/// Calls a driver function through [`ensure_driver`] and turns its `CUresult` into a `Result`.
///
/// `cu!(cuMemAlloc_v2(&mut ptr, bytes))` names the entry point in the error.
macro_rules! cu {
    ($f:ident ( $($arg:expr),* $(,)? )) => {{
        $crate::call::ensure_driver()?;
        // SAFETY: the driver is loaded and initialised (checked above); each call site passes
        // arguments that satisfy the entry point's contract.
        $crate::call::check(stringify!($f), unsafe { ::cudarc::driver::sys::$f($($arg),*) })
    }};
}
pub(crate) use cu;

/// Calls a driver function in a `Drop` (the driver is loaded: the object being dropped was made
/// through it); a failure is logged, not returned.
macro_rules! cu_drop {
    ($f:ident ( $($arg:expr),* $(,)? )) => {{
        // SAFETY: as in `cu!`; the handle released here was created by this crate.
        let result = unsafe { ::cudarc::driver::sys::$f($($arg),*) };
        if let Err(e) = $crate::call::check(stringify!($f), result) {
            ::tracing::debug!(target: "chorus_driver", "{e}");
        }
    }};
}
pub(crate) use cu_drop;

/// True when the CUDA driver library could not be loaded (the seed's `*sdk-not-found*`). Every
/// driver call then returns [`Error::SdkNotFound`]. This says nothing about the toolkit (NVRTC,
/// nvcc), which `chorus-cuda` probes.
pub fn sdk_not_found() -> bool {
    !loader::driver().present()
}

/// Loads the driver (once) and calls `cuInit(0)` (once). Every entry point of this crate that
/// touches the driver goes through here first.
pub fn ensure_driver() -> Result<()> {
    static INIT: OnceLock<std::result::Result<(), CUresult>> = OnceLock::new();
    let probe = loader::driver();
    if let Some(why) = &probe.missing {
        return Err(Error::SdkNotFound {
            reason: why.clone(),
        });
    }
    // SAFETY: the library and its symbols are present (probed above).
    let init = INIT.get_or_init(|| match unsafe { sys::cuInit(0) } {
        CUresult::CUDA_SUCCESS => Ok(()),
        other => Err(other),
    });
    match init {
        Ok(()) => Ok(()),
        Err(code) => check("cuInit", *code),
    }
}

/// `Ok(())` for `CUDA_SUCCESS`, else an [`Error::Driver`] naming `call`, with the result's
/// name and message (from `cuGetErrorName` / `cuGetErrorString`). For callers of [`crate::sys`]
/// after [`ensure_driver`].
pub fn check(call: &'static str, result: CUresult) -> Result<()> {
    if result == CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let (name, message) = error_text(result);
    Err(Error::Driver {
        call,
        code: result as u32,
        name,
        message,
    })
}

/// The name and description of a `CUresult` (`CUDA_ERROR_OUT_OF_MEMORY`, `out of memory`);
/// without a driver, the enum's Rust name and `unknown error`.
pub fn error_text(result: CUresult) -> (String, String) {
    let mut name = std::ptr::null();
    let mut message = std::ptr::null();
    if loader::driver().present() {
        // SAFETY: the driver is loaded with both symbols (probed); each function writes a
        // pointer to a static string, or leaves it null on failure.
        unsafe {
            sys::cuGetErrorName(result, &mut name);
            sys::cuGetErrorString(result, &mut message);
        }
    }
    let text = |p: *const std::ffi::c_char| {
        // SAFETY: non-null pointers from the driver are NUL-terminated static strings.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    (
        text(name).unwrap_or_else(|| format!("{result:?}")),
        text(message).unwrap_or_else(|| "unknown error".to_owned()),
    )
}

/// The CUDA version the driver supports, as `(major, minor)` (`(13, 0)` for driver 580).
pub fn driver_version() -> Result<(u32, u32)> {
    // Asked once: every compile compares it with the toolkit's.
    static VERSION: OnceLock<(u32, u32)> = OnceLock::new();
    if let Some(v) = VERSION.get() {
        return Ok(*v);
    }
    let mut version = 0;
    cu!(cuDriverGetVersion(&mut version))?;
    Ok(*VERSION.get_or_init(|| split_version(version)))
}

/// `13000` → `(13, 0)`.
pub(crate) fn split_version(version: i32) -> (u32, u32) {
    let v = version.max(0) as u32;
    (v / 1000, (v % 1000) / 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_split_as_cuda_encodes_them() {
        assert_eq!(split_version(13000), (13, 0));
        assert_eq!(split_version(12090), (12, 9));
        assert_eq!(split_version(11080), (11, 8));
    }

    #[test]
    fn without_a_driver_results_are_named_by_their_enum() {
        if !sdk_not_found() {
            return;
        }
        let (name, message) = error_text(CUresult::CUDA_ERROR_OUT_OF_MEMORY);
        assert_eq!(name, "CUDA_ERROR_OUT_OF_MEMORY");
        assert_eq!(message, "unknown error");
        let e = check("cuMemAlloc_v2", CUresult::CUDA_ERROR_OUT_OF_MEMORY).unwrap_err();
        assert!(e.is_driver_error("CUDA_ERROR_OUT_OF_MEMORY"), "{e}");
        assert_eq!(
            e.to_string(),
            format!(
                "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY ({}): unknown error",
                CUresult::CUDA_ERROR_OUT_OF_MEMORY as u32
            )
        );
        assert!(check("cuInit", CUresult::CUDA_SUCCESS).is_ok());
    }

    #[test]
    fn without_a_driver_every_call_is_sdk_not_found() {
        if !sdk_not_found() {
            return;
        }
        assert!(matches!(ensure_driver(), Err(Error::SdkNotFound { .. })));
        assert!(matches!(driver_version(), Err(Error::SdkNotFound { .. })));
    }
}
