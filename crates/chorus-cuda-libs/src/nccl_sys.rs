//! NCCL's entry points, loaded from the library file itself.
//!
//! cudarc's `nccl::sys` functions load NCCL by cudarc's file names (`libnccl.so`,
//! `libnccl.so.13`, …), none of which is NCCL's soname `libnccl.so.2`: where only the runtime
//! file is installed (pip's `nvidia-nccl-cu13`, Debian's `libnccl2`) their first call would
//! panic. So the types come from cudarc's `nccl::sys` (the unique id, the communicator handle,
//! the 2.28 config), and the functions are looked up here, once, in the file [`LIBRARY`] found
//! (the same probe as every other library's, `crate::library`, with NCCL's own file names
//! `libnccl.so.2` and `libnccl.so` tried first): by the system loader, then in the places the
//! other libraries are searched (`CUDA_PATH`, `/usr/local/cuda*`, pip's `nvidia/nccl/lib`).
//! Every entry point the bindings call is checked then, so an NCCL too old for them is
//! [`Error::LibraryNotFound`] rather than a failure at the first call. Status values, data
//! types and operations are passed as plain integers, so that a value this build does not know
//! (from a newer NCCL) is never an invalid Rust enum.

use crate::error::{Error, Result};
use crate::library::{Library, found_by_names};
use cudarc::nccl::sys::{ncclComm_t, ncclConfig_t, ncclUniqueId};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The name NCCL's errors give.
pub(crate) const NAME: &str = "NCCL";

/// NCCL's file names, newest interface first (the soname, then the development link).
const FILE_NAMES: &[&str] = &["libnccl.so.2", "libnccl.so"];

/// NCCL, probed like the other libraries, with its own file names first.
pub(crate) static LIBRARY: Library =
    Library::with_files(NAME, "nccl", FILE_NAMES, &[], SYMBOLS, || {
        found_by_names(FILE_NAMES)
    });

/// A raw CUDA stream, as NCCL takes it.
pub(crate) type RawStream = *mut c_void;

type Res = c_int;

/// The entry points the bindings call.
pub(crate) struct Api {
    pub(crate) get_unique_id: unsafe extern "C" fn(*mut ncclUniqueId) -> Res,
    pub(crate) comm_init_rank_config:
        unsafe extern "C" fn(*mut ncclComm_t, c_int, ncclUniqueId, c_int, *mut ncclConfig_t) -> Res,
    pub(crate) comm_init_all: unsafe extern "C" fn(*mut ncclComm_t, c_int, *const c_int) -> Res,
    pub(crate) comm_finalize: unsafe extern "C" fn(ncclComm_t) -> Res,
    pub(crate) comm_destroy: unsafe extern "C" fn(ncclComm_t) -> Res,
    pub(crate) comm_abort: unsafe extern "C" fn(ncclComm_t) -> Res,
    pub(crate) comm_get_async_error: unsafe extern "C" fn(ncclComm_t, *mut Res) -> Res,
    pub(crate) comm_count: unsafe extern "C" fn(ncclComm_t, *mut c_int) -> Res,
    pub(crate) comm_cu_device: unsafe extern "C" fn(ncclComm_t, *mut c_int) -> Res,
    pub(crate) comm_user_rank: unsafe extern "C" fn(ncclComm_t, *mut c_int) -> Res,
    pub(crate) get_error_string: unsafe extern "C" fn(Res) -> *const c_char,
    pub(crate) get_last_error: unsafe extern "C" fn(ncclComm_t) -> *const c_char,
    pub(crate) all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        ncclComm_t,
        RawStream,
    ) -> Res,
    pub(crate) broadcast: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        ncclComm_t,
        RawStream,
    ) -> Res,
    pub(crate) reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        c_int,
        ncclComm_t,
        RawStream,
    ) -> Res,
    pub(crate) all_gather: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        ncclComm_t,
        RawStream,
    ) -> Res,
    pub(crate) reduce_scatter: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        ncclComm_t,
        RawStream,
    ) -> Res,
    pub(crate) send:
        unsafe extern "C" fn(*const c_void, usize, c_int, c_int, ncclComm_t, RawStream) -> Res,
    pub(crate) recv:
        unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, ncclComm_t, RawStream) -> Res,
    pub(crate) group_start: unsafe extern "C" fn() -> Res,
    pub(crate) group_end: unsafe extern "C" fn() -> Res,
    /// The library's version (`NCCL_VERSION_CODE`: 22805 for 2.28.5).
    pub(crate) version: u32,
    /// Where it was loaded from (`None`: the system loader found it by name).
    pub(crate) path: Option<PathBuf>,
    // Kept loaded for the process: the function pointers above point into it.
    _library: libloading::Library,
}

/// The entry points the bindings call (checked at probe time).
pub(crate) const SYMBOLS: &[&str] = &[
    "ncclGetVersion",
    "ncclGetUniqueId",
    "ncclCommInitRankConfig",
    "ncclCommInitAll",
    "ncclCommFinalize",
    "ncclCommDestroy",
    "ncclCommAbort",
    "ncclCommGetAsyncError",
    "ncclCommCount",
    "ncclCommCuDevice",
    "ncclCommUserRank",
    "ncclGetErrorString",
    "ncclGetLastError",
    "ncclAllReduce",
    "ncclBroadcast",
    "ncclReduce",
    "ncclAllGather",
    "ncclReduceScatter",
    "ncclSend",
    "ncclRecv",
    "ncclGroupStart",
    "ncclGroupEnd",
];

/// The oldest NCCL the bindings take: 2.28, whose `ncclConfig_t` they pass (an older NCCL
/// would read a config of a version it does not know).
pub(crate) const OLDEST: u32 = 22800;

/// NCCL, loaded on the first call; why not, where it cannot be.
pub(crate) fn api() -> Result<&'static Api> {
    static API: OnceLock<Result<Api>> = OnceLock::new();
    API.get_or_init(|| {
        let loaded = load();
        match &loaded {
            Ok(api) => tracing::debug!(
                target: "chorus_cuda_libs",
                "NCCL {} loaded from {}",
                version_text(api.version),
                api.path
                    .as_ref()
                    .map_or("the system loader's path".into(), |p| p.display().to_string())
            ),
            Err(why) => tracing::debug!(target: "chorus_cuda_libs", "no NCCL: {why}"),
        }
        loaded
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// `22805` as `2.28.5`.
pub(crate) fn version_text(code: u32) -> String {
    format!("{}.{}.{}", code / 10000, code / 100 % 100, code % 100)
}

fn load() -> Result<Api> {
    // The probe checked every entry point of SYMBOLS in this file.
    let library = LIBRARY.open()?;
    let path = LIBRARY.probe().path.clone();
    let not_found = |searched: String| Error::LibraryNotFound {
        library: NAME,
        searched,
    };
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the symbol exists (checked above) and has the C signature of nccl.h
            // 2.28 that the field's type spells (enums as `int`, as C passes them).
            *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| not_found(format!("{}: {e}", $name)))?
        };
    }
    let get_version: unsafe extern "C" fn(*mut c_int) -> Res = sym!("ncclGetVersion");
    let mut code = 0;
    // SAFETY: `code` is a valid place for the version; the call has no other effect.
    let status = unsafe { get_version(&mut code) };
    if status != 0 || code <= 0 {
        return Err(not_found(format!("ncclGetVersion failed ({status})")));
    }
    let version = code as u32;
    if version < OLDEST {
        return Err(not_found(format!(
            "NCCL {} is older than 2.28, the oldest these bindings take",
            version_text(version)
        )));
    }
    Ok(Api {
        get_unique_id: sym!("ncclGetUniqueId"),
        comm_init_rank_config: sym!("ncclCommInitRankConfig"),
        comm_init_all: sym!("ncclCommInitAll"),
        comm_finalize: sym!("ncclCommFinalize"),
        comm_destroy: sym!("ncclCommDestroy"),
        comm_abort: sym!("ncclCommAbort"),
        comm_get_async_error: sym!("ncclCommGetAsyncError"),
        comm_count: sym!("ncclCommCount"),
        comm_cu_device: sym!("ncclCommCuDevice"),
        comm_user_rank: sym!("ncclCommUserRank"),
        get_error_string: sym!("ncclGetErrorString"),
        get_last_error: sym!("ncclGetLastError"),
        all_reduce: sym!("ncclAllReduce"),
        broadcast: sym!("ncclBroadcast"),
        reduce: sym!("ncclReduce"),
        all_gather: sym!("ncclAllGather"),
        reduce_scatter: sym!("ncclReduceScatter"),
        send: sym!("ncclSend"),
        recv: sym!("ncclRecv"),
        group_start: sym!("ncclGroupStart"),
        group_end: sym!("ncclGroupEnd"),
        version,
        path,
        _library: library,
    })
}

/// NCCL's status values (`ncclResult_t`).
pub(crate) const SUCCESS: c_int = 0;
/// `ncclInProgress`: a non-blocking communicator's operation has not finished.
pub(crate) const IN_PROGRESS: c_int = 7;

/// The name of a status value (`ncclInvalidArgument`).
pub(crate) fn status_name(code: c_int) -> String {
    match code {
        0 => "ncclSuccess".into(),
        1 => "ncclUnhandledCudaError".into(),
        2 => "ncclSystemError".into(),
        3 => "ncclInternalError".into(),
        4 => "ncclInvalidArgument".into(),
        5 => "ncclInvalidUsage".into(),
        6 => "ncclRemoteError".into(),
        7 => "ncclInProgress".into(),
        8 => "ncclTimeout".into(),
        other => format!("ncclResult {other}"),
    }
}

/// A C string NCCL owns, as text (empty for null).
fn text(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: NCCL returns NUL-terminated strings it keeps alive (static tables, or its
    // per-thread last-error buffer, read before the next NCCL call on this thread).
    unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .trim()
        .to_string()
}

impl Api {
    /// `Ok` for `ncclSuccess`, else [`Error::Status`] with the status's name, NCCL's text for
    /// it and `ncclGetLastError`'s text (for `comm`, or the thread's last error when null).
    pub(crate) fn check(&self, call: &'static str, code: c_int, comm: ncclComm_t) -> Result<()> {
        if code == SUCCESS {
            return Ok(());
        }
        Err(self.status_error(call, code, comm))
    }

    /// [`Error::Status`] for `code`, with NCCL's texts.
    pub(crate) fn status_error(&self, call: &'static str, code: c_int, comm: ncclComm_t) -> Error {
        // SAFETY: both take any value / handle (null included) and return static or
        // thread-local strings.
        let (meaning, last) = unsafe {
            (
                text((self.get_error_string)(code)),
                text((self.get_last_error)(comm)),
            )
        };
        let message = if last.is_empty() || last == meaning {
            meaning
        } else {
            format!("{meaning}; last error: {last}")
        };
        Error::Status {
            library: NAME,
            call,
            code: i64::from(code),
            name: status_name(code),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_and_versions_read_as_nccl_writes_them() {
        assert_eq!(status_name(4), "ncclInvalidArgument");
        assert_eq!(status_name(IN_PROGRESS), "ncclInProgress");
        assert_eq!(status_name(8), "ncclTimeout");
        assert_eq!(status_name(42), "ncclResult 42");
        assert_eq!(version_text(22805), "2.28.5");
        assert_eq!(version_text(22900), "2.29.0");
    }
}
