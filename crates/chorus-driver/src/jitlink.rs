//! nvJitLink (`libnvJitLink.so.13`, `nvJitLink_130_0.dll`): the toolkit's linker, which links
//! LTO-IR of CUDA 12 and later.
//!
//! The driver's linker ([`crate::Linker`]) takes LTO-IR only from toolkits before CUDA 12.0:
//! on CUDA 13 `cuLinkAddData` answers `CUDA_ERROR_JIT_COMPILER_NOT_FOUND` for NVRTC's `-dlto`
//! output. [`JitLinker`] links LTO-IR, PTX, cubins, fat binaries, objects and libraries with
//! nvJitLink instead, on the host (no driver, no context), for the architecture it is told;
//! the cubin it returns loads as a module like the driver linker's.
//!
//! The library is loaded at run time, once, as the driver is ([`crate::loader`]): first by
//! its file names through the system loader, then by path in the toolkits' library
//! directories ([`crate::toolkit::lib_dirs`]: `CUDA_PATH`, `CUDA_HOME`, `/usr/local/cuda*`,
//! pip's `nvidia/*/lib`). Without it every call answers [`Error::Unsupported`] naming what
//! was searched; nothing panics.

use crate::error::{Error, Result};
use crate::link::{LinkInputKind, input_bytes};
use crate::messages::message;
use crate::search::{BINDINGS_VERSION, Platform, SearchEnv};
use crate::toolkit;
use libloading::Library;
use std::ffi::{CString, c_char, c_void};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `nvJitLinkHandle`.
type Handle = *mut c_void;
/// `nvJitLinkResult`.
type JitResult = u32;

/// The entry points Chorus calls, resolved once (the unversioned names, which nvJitLink 12.0
/// and later export next to the versioned `__nvJitLinkCreate_13_0` ones).
struct Api {
    create: unsafe extern "C" fn(*mut Handle, u32, *const *const c_char) -> JitResult,
    destroy: unsafe extern "C" fn(*mut Handle) -> JitResult,
    add_data: unsafe extern "C" fn(Handle, u32, *const c_void, usize, *const c_char) -> JitResult,
    complete: unsafe extern "C" fn(Handle) -> JitResult,
    cubin_size: unsafe extern "C" fn(Handle, *mut usize) -> JitResult,
    cubin: unsafe extern "C" fn(Handle, *mut c_void) -> JitResult,
    ptx_size: unsafe extern "C" fn(Handle, *mut usize) -> JitResult,
    ptx: unsafe extern "C" fn(Handle, *mut c_char) -> JitResult,
    error_log_size: unsafe extern "C" fn(Handle, *mut usize) -> JitResult,
    error_log: unsafe extern "C" fn(Handle, *mut c_char) -> JitResult,
    info_log_size: unsafe extern "C" fn(Handle, *mut usize) -> JitResult,
    info_log: unsafe extern "C" fn(Handle, *mut c_char) -> JitResult,
    /// `nvJitLinkVersion` (12.3 and later).
    version: Option<unsafe extern "C" fn(*mut u32, *mut u32) -> JitResult>,
    /// Where it was loaded from (the file name when the system loader found it).
    path: PathBuf,
    // Keeps the functions above loaded.
    _library: Library,
}

/// The file names nvJitLink may have on `platform`, the bindings' CUDA major version
/// `major` first, then older and newer majors, then the unversioned development name.
/// LTO-IR must come from an NVRTC no newer than the nvJitLink that links it.
pub fn jitlink_file_names(platform: Platform, major: u32) -> Vec<String> {
    let mut majors = vec![major];
    majors.extend((12..=major + 1).rev().filter(|m| *m != major));
    match platform {
        Platform::Unix => {
            let mut names: Vec<String> = majors
                .iter()
                .map(|m| format!("libnvJitLink.so.{m}"))
                .collect();
            names.push("libnvJitLink.so".into());
            names
        }
        Platform::Windows => majors
            .iter()
            .map(|m| format!("nvJitLink_{m}0_0.dll"))
            .collect(),
    }
}

/// Where nvJitLink is looked for by path when the system loader does not find it by name: the
/// toolkits' and pip wheels' library directories ([`toolkit::lib_dirs_in`] of
/// [`toolkit::toolkit_roots_in`]) that exist.
pub fn jitlink_dirs_in(env: &SearchEnv) -> Vec<PathBuf> {
    toolkit::lib_dirs_in(env, &toolkit::toolkit_roots_in(env))
}

/// The loaded library, or why it is not there.
fn api() -> Result<&'static Api> {
    static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| {
        let loaded = load(
            &jitlink_file_names(Platform::HOST, BINDINGS_VERSION.0),
            &jitlink_dirs_in(&SearchEnv::host()),
        );
        match &loaded {
            Ok(api) => message(format!("nvJitLink loaded from {}", api.path.display())),
            Err(why) => message(format!("no nvJitLink: {why}")),
        }
        loaded
    })
    .as_ref()
    .map_err(|why| Error::Unsupported {
        feature: "nvJitLink (linking LTO-IR)",
        reason: why.clone(),
    })
}

/// Loads the first of `names` the system loader finds, else the first found in `dirs`, and
/// resolves its entry points.
fn load(names: &[String], dirs: &[PathBuf]) -> std::result::Result<Api, String> {
    let by_name = names.iter().find_map(|name| {
        // SAFETY: loading nvJitLink runs its initialisers, which any user of it does.
        unsafe { Library::new(name) }
            .ok()
            .map(|lib| (lib, PathBuf::from(name)))
    });
    let found = by_name.or_else(|| {
        dirs.iter()
            .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
            .filter(|path| path.is_file())
            .find_map(|path| {
                // SAFETY: as above.
                unsafe { Library::new(&path) }.ok().map(|lib| (lib, path))
            })
    });
    let Some((library, path)) = found else {
        return Err(format!(
            "none of {} in the system loader's path or in {}",
            names.join(", "),
            if dirs.is_empty() {
                "any toolkit directory (none exists)".to_owned()
            } else {
                dirs.iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ));
    };
    resolve(library, path)
}

/// The entry points of `library` (loaded from `path`).
fn resolve(library: Library, path: PathBuf) -> std::result::Result<Api, String> {
    macro_rules! symbol {
        ($name:literal) => {
            // SAFETY: the symbol is nvJitLink's function of this name, whose C signature is
            // the field's type (nvJitLink.h); the library stays loaded in `_library`.
            match unsafe { library.get($name.as_bytes()) } {
                Ok(f) => *f,
                Err(e) => return Err(format!("{} lacks {} ({e})", path.display(), $name)),
            }
        };
    }
    Ok(Api {
        create: symbol!("nvJitLinkCreate"),
        destroy: symbol!("nvJitLinkDestroy"),
        add_data: symbol!("nvJitLinkAddData"),
        complete: symbol!("nvJitLinkComplete"),
        cubin_size: symbol!("nvJitLinkGetLinkedCubinSize"),
        cubin: symbol!("nvJitLinkGetLinkedCubin"),
        ptx_size: symbol!("nvJitLinkGetLinkedPtxSize"),
        ptx: symbol!("nvJitLinkGetLinkedPtx"),
        error_log_size: symbol!("nvJitLinkGetErrorLogSize"),
        error_log: symbol!("nvJitLinkGetErrorLog"),
        info_log_size: symbol!("nvJitLinkGetInfoLogSize"),
        info_log: symbol!("nvJitLinkGetInfoLog"),
        // SAFETY: as in `symbol!`; absent before 12.3.
        version: unsafe { library.get(b"nvJitLinkVersion") }.ok().map(|f| *f),
        path,
        _library: library,
    })
}

/// Whether nvJitLink loads here, and from where (`Err` says what was searched).
pub fn jitlink_library() -> Result<&'static Path> {
    api().map(|api| api.path.as_path())
}

/// nvJitLink's version `(major, minor)` (`nvJitLinkVersion`; [`Error::Unsupported`] before
/// 12.3, which lacks it).
pub fn jitlink_version() -> Result<(u32, u32)> {
    let api = api()?;
    let Some(version) = api.version else {
        return Err(Error::Unsupported {
            feature: "nvJitLinkVersion",
            reason: format!("{} predates CUDA 12.3", api.path.display()),
        });
    };
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two out-parameters.
    let result = unsafe { version(&mut major, &mut minor) };
    jit_result("nvJitLinkVersion", result, String::new)?;
    Ok((major, minor))
}

/// The name of an `nvJitLinkResult`.
fn result_name(code: JitResult) -> &'static str {
    match code {
        0 => "NVJITLINK_SUCCESS",
        1 => "NVJITLINK_ERROR_UNRECOGNIZED_OPTION",
        2 => "NVJITLINK_ERROR_MISSING_ARCH",
        3 => "NVJITLINK_ERROR_INVALID_INPUT",
        4 => "NVJITLINK_ERROR_PTX_COMPILE",
        5 => "NVJITLINK_ERROR_NVVM_COMPILE",
        6 => "NVJITLINK_ERROR_INTERNAL",
        7 => "NVJITLINK_ERROR_THREADPOOL",
        8 => "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
        9 => "NVJITLINK_ERROR_FINALIZE",
        10 => "NVJITLINK_ERROR_NULL_INPUT",
        11 => "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
        12 => "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE",
        13 => "NVJITLINK_ERROR_ARCH_MISMATCH",
        14 => "NVJITLINK_ERROR_OUTDATED_LIBRARY",
        15 => "NVJITLINK_ERROR_MISSING_FATBIN",
        16 => "NVJITLINK_ERROR_UNRECOGNIZED_ARCH",
        17 => "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
        18 => "NVJITLINK_ERROR_LTO_NOT_ENABLED",
        _ => "NVJITLINK_ERROR_UNKNOWN",
    }
}

/// What an `nvJitLinkResult` means (nvJitLink.h's descriptions; nvJitLink has no call for them).
fn result_message(code: JitResult) -> &'static str {
    match code {
        0 => "success",
        1 => "unrecognized option",
        2 => "option -arch=sm_NN not specified",
        3 => "invalid input",
        4 => "PTX compilation failed",
        5 => "NVVM compilation failed",
        6 => "internal error",
        7 => "thread pool error",
        8 => "unrecognized input",
        9 => "finalizer error",
        10 => "null input",
        11 => "incompatible options",
        12 => "incorrect input type",
        13 => "architecture mismatch",
        14 => "the library is older than an input (LTO-IR from a newer toolkit)",
        15 => "missing fatbin",
        16 => "unrecognized -arch value",
        17 => "unsupported -arch value",
        18 => "the input requires -lto",
        _ => "unknown nvJitLink result",
    }
}

/// The [`Error::Link`] of a failed call, carrying `log` (nvJitLink's error log).
fn jit_error(call: &'static str, code: JitResult, log: String) -> Error {
    Error::Link {
        call,
        code,
        name: result_name(code).into(),
        message: result_message(code).into(),
        log,
    }
}

/// `code` as a `Result`; on failure the error carries `log()`.
fn jit_result(call: &'static str, code: JitResult, log: impl FnOnce() -> String) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(jit_error(call, code, log()))
    }
}

/// Options of a [`JitLinker`] (nvJitLink's option strings).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitLinkOptions {
    /// The target's compute capability `(major, minor)`: `-arch=sm_<major><minor>` (required:
    /// nvJitLink has no current device to take it from).
    pub arch: (u32, u32),
    /// Link-time optimization (`-lto`): needed for LTO-IR inputs.
    pub lto: bool,
    /// The linked program as PTX (`-ptx`, needs `lto`) instead of a cubin.
    pub ptx: bool,
    /// Optimization level 0 to 3 (`-O<n>`; nvJitLink's default is 3).
    pub optimization_level: Option<u32>,
    /// Line information for profilers (`-lineinfo`).
    pub line_info: bool,
    /// Resource use of each function in the info log (`-verbose`).
    pub verbose: bool,
    /// Further options, passed as they are (`-maxrregcount=64`, `-ftz=true`, `-Xptxas=…`).
    pub extra: Vec<String>,
}

impl JitLinkOptions {
    /// Options for `arch` with link-time optimization on: what NVRTC's `-dlto` output needs.
    pub fn lto(arch: (u32, u32)) -> JitLinkOptions {
        JitLinkOptions {
            arch,
            lto: true,
            ptx: false,
            optimization_level: None,
            line_info: false,
            verbose: false,
            extra: Vec::new(),
        }
    }

    /// The option strings, checked before nvJitLink is asked.
    pub fn strings(&self) -> Result<Vec<String>> {
        let (major, minor) = self.arch;
        if !(1..=20).contains(&major) || minor > 9 {
            return Err(Error::InvalidArgument(format!(
                "compute capability {major}.{minor} is not one nvJitLink can target"
            )));
        }
        if self.ptx && !self.lto {
            return Err(Error::InvalidArgument(
                "nvJitLink writes linked PTX only with link-time optimization (-ptx needs -lto)"
                    .into(),
            ));
        }
        let mut strings = vec![format!("-arch=sm_{major}{minor}")];
        if self.lto {
            strings.push("-lto".into());
        }
        if self.ptx {
            strings.push("-ptx".into());
        }
        if let Some(level) = self.optimization_level {
            if level > 3 {
                return Err(Error::InvalidArgument(format!(
                    "nvJitLink's optimization level must be 0 to 3, not {level}"
                )));
            }
            strings.push(format!("-O{level}"));
        }
        if self.line_info {
            strings.push("-lineinfo".into());
        }
        if self.verbose {
            strings.push("-verbose".into());
        }
        strings.extend(self.extra.iter().cloned());
        Ok(strings)
    }
}

/// The result of [`JitLinker::complete`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitLinked {
    /// The linked cubin (for `cuModuleLoadData`); `None` with [`JitLinkOptions::ptx`].
    pub cubin: Option<Vec<u8>>,
    /// The linked PTX, with [`JitLinkOptions::ptx`].
    pub ptx: Option<String>,
    /// nvJitLink's info log (with [`JitLinkOptions::verbose`], each function's resources).
    pub info_log: String,
}

/// A link by nvJitLink in progress (`nvJitLinkHandle`), destroyed on drop. Needs no driver
/// and no context.
///
/// ```no_run
/// # fn f(library: &[u8], main: &[u8]) -> chorus_driver::Result<()> {
/// use chorus_driver::{JitLinkOptions, JitLinker, LinkInputKind};
/// let mut linker = JitLinker::new(&JitLinkOptions::lto((9, 0)))?;
/// linker.add(LinkInputKind::LtoIr, library, "library.ltoir")?;
/// linker.add(LinkInputKind::LtoIr, main, "main.ltoir")?;
/// let cubin = linker.complete()?.cubin; // Some(cubin) for sm_90
/// # Ok(()) }
/// ```
pub struct JitLinker {
    api: &'static Api,
    handle: Handle,
    ptx: bool,
    inputs: usize,
}

impl std::fmt::Debug for JitLinker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitLinker")
            .field("library", &self.api.path)
            .field("inputs", &self.inputs)
            .finish_non_exhaustive()
    }
}

// SAFETY: the handle is owned by this value and used only through `&mut self` or by value
// (nvJitLink allows a handle on any thread, one call at a time).
unsafe impl Send for JitLinker {}

impl JitLinker {
    /// Starts a link with `options` (`nvJitLinkCreate`). An option nvJitLink refuses comes
    /// back as [`Error::Link`] with its error log.
    pub fn new(options: &JitLinkOptions) -> Result<JitLinker> {
        let strings = options.strings()?;
        let strings: Vec<CString> = strings
            .into_iter()
            .map(|s| {
                CString::new(s)
                    .map_err(|_| Error::InvalidArgument("an nvJitLink option contains NUL".into()))
            })
            .collect::<Result<_>>()?;
        let pointers: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
        let api = api()?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: `pointers` holds `len` NUL-terminated strings alive for the call (nvJitLink
        // copies them).
        let result = unsafe { (api.create)(&mut handle, pointers.len() as u32, pointers.as_ptr()) };
        if result != 0 {
            // A failed create may still return a handle holding the error log (dropping it
            // destroys it).
            let log = if handle.is_null() {
                String::new()
            } else {
                JitLinker {
                    api,
                    handle,
                    ptx: options.ptx,
                    inputs: 0,
                }
                .error_log()
            };
            return Err(jit_error("nvJitLinkCreate", result, log));
        }
        Ok(JitLinker {
            api,
            handle,
            ptx: options.ptx,
            inputs: 0,
        })
    }

    /// Adds one input (`nvJitLinkAddData`); `name` names it in the logs.
    pub fn add(&mut self, kind: LinkInputKind, image: &[u8], name: &str) -> Result<()> {
        let bytes = input_bytes(kind, image)?;
        let name = CString::new(name)
            .map_err(|_| Error::InvalidArgument("a link input's name contains NUL".into()))?;
        // SAFETY: the handle is live; `bytes` and `name` outlive the call (nvJitLink copies
        // the input).
        let result = unsafe {
            (self.api.add_data)(
                self.handle,
                input_type(kind),
                bytes.as_ptr().cast(),
                bytes.len(),
                name.as_ptr(),
            )
        };
        jit_result("nvJitLinkAddData", result, || self.error_log())?;
        self.inputs += 1;
        Ok(())
    }

    /// The number of inputs added so far.
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// Links the inputs (`nvJitLinkComplete`) and returns the cubin, or the PTX with
    /// [`JitLinkOptions::ptx`]. Unresolved symbols, an LTO-IR input without `-lto` and the
    /// like come back as [`Error::Link`] with nvJitLink's error log.
    pub fn complete(self) -> Result<JitLinked> {
        if self.inputs == 0 {
            return Err(Error::InvalidArgument(
                "nothing to link: no inputs were added".into(),
            ));
        }
        // SAFETY: the handle is live.
        let result = unsafe { (self.api.complete)(self.handle) };
        jit_result("nvJitLinkComplete", result, || self.error_log())?;
        let (cubin, ptx) = if self.ptx {
            let mut text = self.fetch(
                "nvJitLinkGetLinkedPtx",
                self.api.ptx_size,
                |h, p: *mut u8| {
                    // SAFETY: `p` has room for the size nvJitLink reported.
                    unsafe { (self.api.ptx)(h, p.cast()) }
                },
            )?;
            if let Some(end) = text.iter().position(|b| *b == 0) {
                text.truncate(end);
            }
            (None, Some(String::from_utf8_lossy(&text).into_owned()))
        } else {
            let cubin = self.fetch(
                "nvJitLinkGetLinkedCubin",
                self.api.cubin_size,
                |h, p: *mut u8| {
                    // SAFETY: as above.
                    unsafe { (self.api.cubin)(h, p.cast()) }
                },
            )?;
            (Some(cubin), None)
        };
        if cubin.as_ref().is_some_and(Vec::is_empty) || ptx.as_ref().is_some_and(String::is_empty) {
            return Err(Error::InvalidArgument(
                "nvJitLink produced an empty image".into(),
            ));
        }
        Ok(JitLinked {
            cubin,
            ptx,
            info_log: self.info_log(),
        })
    }

    /// One of nvJitLink's sized outputs: its size, then its bytes.
    fn fetch(
        &self,
        call: &'static str,
        size_of: unsafe extern "C" fn(Handle, *mut usize) -> JitResult,
        get: impl FnOnce(Handle, *mut u8) -> JitResult,
    ) -> Result<Vec<u8>> {
        let mut size = 0;
        // SAFETY: the handle is live; one out-parameter.
        let result = unsafe { size_of(self.handle, &mut size) };
        jit_result(call, result, || self.error_log())?;
        let mut bytes = vec![0u8; size];
        if size > 0 {
            jit_result(call, get(self.handle, bytes.as_mut_ptr()), || {
                self.error_log()
            })?;
        }
        Ok(bytes)
    }

    /// A log: its size, then its text (empty when nvJitLink cannot say).
    fn log(
        &self,
        size_of: unsafe extern "C" fn(Handle, *mut usize) -> JitResult,
        get: unsafe extern "C" fn(Handle, *mut c_char) -> JitResult,
    ) -> String {
        let mut size = 0;
        // SAFETY: the handle is live; one out-parameter.
        if unsafe { size_of(self.handle, &mut size) } != 0 || size == 0 {
            return String::new();
        }
        let mut bytes = vec![0u8; size];
        // SAFETY: `bytes` has room for the size nvJitLink reported (its NUL included).
        if unsafe { get(self.handle, bytes.as_mut_ptr().cast()) } != 0 {
            return String::new();
        }
        let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end]).trim_end().to_owned()
    }

    /// nvJitLink's error log so far (`nvJitLinkGetErrorLog`).
    pub fn error_log(&self) -> String {
        self.log(self.api.error_log_size, self.api.error_log)
    }

    /// nvJitLink's info log so far (`nvJitLinkGetInfoLog`).
    pub fn info_log(&self) -> String {
        self.log(self.api.info_log_size, self.api.info_log)
    }
}

impl Drop for JitLinker {
    fn drop(&mut self) {
        // SAFETY: the handle is live and destroyed once; nvJitLink nulls it.
        let result = unsafe { (self.api.destroy)(&mut self.handle) };
        if result != 0 {
            tracing::debug!(
                target: "chorus_driver",
                "nvJitLinkDestroy failed: {}",
                result_name(result)
            );
        }
    }
}

/// The `nvJitLinkInputType` of `kind`.
fn input_type(kind: LinkInputKind) -> u32 {
    match kind {
        LinkInputKind::Cubin => 1,
        LinkInputKind::Ptx => 2,
        LinkInputKind::LtoIr => 3,
        LinkInputKind::Fatbin => 4,
        LinkInputKind::Object => 5,
        LinkInputKind::Library => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_become_nvjitlink_strings_and_bad_ones_are_refused_first() {
        let mut options = JitLinkOptions::lto((9, 0));
        assert_eq!(options.strings().unwrap(), ["-arch=sm_90", "-lto"]);
        options.optimization_level = Some(2);
        options.line_info = true;
        options.verbose = true;
        options.ptx = true;
        options.extra = vec!["-maxrregcount=64".into()];
        assert_eq!(
            options.strings().unwrap(),
            [
                "-arch=sm_90",
                "-lto",
                "-ptx",
                "-O2",
                "-lineinfo",
                "-verbose",
                "-maxrregcount=64"
            ]
        );
        options.optimization_level = Some(4);
        let e = options.strings().unwrap_err().to_string();
        assert!(e.contains("0 to 3, not 4"), "{e}");
        let mut no_lto = JitLinkOptions::lto((8, 6));
        no_lto.lto = false;
        assert_eq!(no_lto.strings().unwrap(), ["-arch=sm_86"]);
        no_lto.ptx = true;
        let e = no_lto.strings().unwrap_err().to_string();
        assert!(e.contains("-ptx needs -lto"), "{e}");
        let e = JitLinkOptions::lto((9, 12))
            .strings()
            .unwrap_err()
            .to_string();
        assert!(e.contains("9.12"), "{e}");
        let e = JitLinker::new(&JitLinkOptions::lto((0, 0)))
            .unwrap_err()
            .to_string();
        assert!(e.contains("0.0"), "{e}");
    }

    #[test]
    fn file_names_put_the_bindings_major_first() {
        assert_eq!(
            jitlink_file_names(Platform::Unix, 13),
            [
                "libnvJitLink.so.13",
                "libnvJitLink.so.14",
                "libnvJitLink.so.12",
                "libnvJitLink.so"
            ]
        );
        assert_eq!(
            jitlink_file_names(Platform::Windows, 12),
            ["nvJitLink_120_0.dll", "nvJitLink_130_0.dll"]
        );
    }

    #[test]
    fn results_have_names_and_carry_the_log() {
        assert!(jit_result("nvJitLinkComplete", 0, || unreachable!()).is_ok());
        let e = jit_result("nvJitLinkComplete", 18, || "needs -lto".into()).unwrap_err();
        match &e {
            Error::Link { name, log, .. } => {
                assert_eq!(name, "NVJITLINK_ERROR_LTO_NOT_ENABLED");
                assert_eq!(log, "needs -lto");
            }
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("requires -lto"), "{e}");
        assert_eq!(result_name(99), "NVJITLINK_ERROR_UNKNOWN");
    }

    #[test]
    fn a_missing_library_is_an_error_naming_what_was_searched() {
        let dir = tempfile::tempdir().unwrap();
        let names = vec!["libnvJitLink-not-there.so.13".to_owned()];
        let why = load(&names, &[dir.path().to_path_buf()])
            .err()
            .expect("nothing to load");
        assert!(
            why.contains("libnvJitLink-not-there.so.13")
                && why.contains(&dir.path().display().to_string()),
            "{why}"
        );
        // A file of that name that is no library is skipped, not a panic.
        std::fs::write(dir.path().join(&names[0]), b"not an ELF").unwrap();
        assert!(load(&names, &[dir.path().to_path_buf()]).is_err());
    }

    #[test]
    fn the_search_covers_pip_wheels_and_cuda_path() {
        let root = tempfile::tempdir().unwrap();
        let toolkit = root.path().join("toolkit");
        std::fs::create_dir_all(toolkit.join("lib64")).unwrap();
        let site = root.path().join("site");
        std::fs::create_dir_all(site.join("nvidia/cu13/lib")).unwrap();
        let env = SearchEnv::new(
            Platform::Unix,
            [
                ("CUDA_PATH", toolkit.clone().into_os_string()),
                ("PYTHONPATH", site.clone().into_os_string()),
            ],
            root.path(),
        );
        let dirs = jitlink_dirs_in(&env);
        assert!(dirs.contains(&toolkit.join("lib64")), "{dirs:?}");
        assert!(dirs.contains(&site.join("nvidia/cu13/lib")), "{dirs:?}");
    }
}
