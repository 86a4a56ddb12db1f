//! The JIT linker (`cuLinkCreate`, `cuLinkAddData`, `cuLinkComplete`): separate compilation.
//!
//! Relocatable device code (NVRTC or nvcc with `-rdc=true`: PTX, cubin, fatbin, object or
//! library inputs) from several compilations is linked into one cubin, which loads as a
//! module; a kernel of one input may then call an `extern` device function of another.
//! `chorus-cuda`'s `nvrtc_compile_relocatable` produces such inputs.
//!
//! LTO-IR (NVRTC's `-dlto`) is accepted as [`LinkInputKind::LtoIr`], but the driver's linker
//! only links LTO-IR made by toolkits before CUDA 12.0 (`CU_JIT_INPUT_NVVM` is deprecated);
//! newer LTO-IR needs nvJitLink. The driver's refusal comes back as [`Error::Link`].

use crate::call::{check, cu, cu_drop, ensure_driver};
use crate::error::{Error, Result};
use cudarc::driver::sys::{self, CUjit_option, CUjitInputType};
use std::ffi::{CString, c_void};

/// What one input of a [`Linker`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkInputKind {
    /// PTX text (compiled by the driver's JIT as it is added).
    Ptx,
    /// A relocatable cubin (`-rdc=true`).
    Cubin,
    /// A fat binary (`nvcc -fatbin -rdc=true`).
    Fatbin,
    /// A host object file holding device code (`nvcc -c -rdc=true`).
    Object,
    /// A static library of such objects (`.a`).
    Library,
    /// LTO-IR (`-dlto`); see the module documentation for what the driver accepts.
    LtoIr,
}

impl LinkInputKind {
    fn raw(self) -> CUjitInputType {
        use CUjitInputType::*;
        match self {
            LinkInputKind::Ptx => CU_JIT_INPUT_PTX,
            LinkInputKind::Cubin => CU_JIT_INPUT_CUBIN,
            LinkInputKind::Fatbin => CU_JIT_INPUT_FATBINARY,
            LinkInputKind::Object => CU_JIT_INPUT_OBJECT,
            LinkInputKind::Library => CU_JIT_INPUT_LIBRARY,
            LinkInputKind::LtoIr => CU_JIT_INPUT_NVVM,
        }
    }
}

/// Options of a [`Linker`] (the JIT options of `cuLinkCreate`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkOptions {
    /// Bytes for each of the info and error logs (at least 1; default 16 KiB).
    pub log_bytes: usize,
    /// Verbose info log (`CU_JIT_LOG_VERBOSE`): register and memory use of each function.
    pub verbose: bool,
    /// Optimization level of PTX inputs, 0 to 4 (`CU_JIT_OPTIMIZATION_LEVEL`; default 4).
    pub optimization_level: Option<u32>,
    /// Line information for profilers (`CU_JIT_GENERATE_LINE_INFO`).
    pub line_info: bool,
    /// Link-time optimization of LTO-IR inputs (`CU_JIT_LTO`).
    pub lto: bool,
}

impl Default for LinkOptions {
    fn default() -> LinkOptions {
        LinkOptions {
            log_bytes: 16 * 1024,
            verbose: false,
            optimization_level: None,
            line_info: false,
            lto: false,
        }
    }
}

impl LinkOptions {
    /// Checks the options before any driver call.
    fn validate(&self) -> Result<()> {
        if self.log_bytes == 0 || u32::try_from(self.log_bytes).is_err() {
            return Err(Error::InvalidArgument(format!(
                "link log size must be 1 to {} bytes, not {}",
                u32::MAX,
                self.log_bytes
            )));
        }
        if let Some(level) = self.optimization_level
            && level > 4
        {
            return Err(Error::InvalidArgument(format!(
                "JIT optimization level must be 0 to 4, not {level}"
            )));
        }
        Ok(())
    }
}

/// The linked image and what the linker said about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkedImage {
    /// The cubin, for `cuModuleLoadData` (`chorus_cuda::Module::load(…, ImageKind::Cubin)`).
    pub cubin: Vec<u8>,
    /// The info log (with [`LinkOptions::verbose`], each function's resources).
    pub info_log: String,
}

/// A link in progress (`CUlinkState`), in the current context; destroyed on drop.
///
/// ```no_run
/// # fn f(lib_cubin: &[u8], main_ptx: &[u8]) -> chorus_driver::Result<()> {
/// use chorus_driver::{LinkInputKind, LinkOptions, Linker};
/// let mut linker = Linker::new(&LinkOptions::default())?;
/// linker.add(LinkInputKind::Cubin, lib_cubin, "lib.cubin")?;
/// linker.add(LinkInputKind::Ptx, main_ptx, "main.ptx")?;
/// let linked = linker.complete()?; // linked.cubin loads as a module
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Linker {
    raw: sys::CUlinkState,
    // The driver writes the logs into these until the state is destroyed: boxed, so that they
    // stay where the driver was told they are.
    info_log: Box<[u8]>,
    error_log: Box<[u8]>,
    // The JIT options: the driver writes output options (the logs' used sizes) back into
    // `values` until the state is destroyed, so they live as long as it does.
    _keys: Box<[CUjit_option]>,
    _values: Box<[*mut c_void]>,
    inputs: usize,
}

// SAFETY: the link state and the buffers the driver writes are owned by this value and used
// only through `&mut self` or by value.
unsafe impl Send for Linker {}

/// The text of a NUL-padded log buffer.
fn log_text(buffer: &[u8]) -> String {
    let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end])
        .trim_end()
        .to_owned()
}

/// An input's bytes as the driver takes them: PTX and LTO-IR are given with a terminating NUL
/// (PTX is text the driver reads up to it).
pub(crate) fn input_bytes(kind: LinkInputKind, image: &[u8]) -> Result<Vec<u8>> {
    if image.is_empty() {
        return Err(Error::InvalidArgument(
            "a link input cannot be empty".into(),
        ));
    }
    let mut bytes = image.to_vec();
    if kind == LinkInputKind::Ptx && bytes.last() != Some(&0) {
        bytes.push(0);
    }
    Ok(bytes)
}

impl Linker {
    /// Starts a link in the current context with `options` (the device's architecture is
    /// the target).
    pub fn new(options: &LinkOptions) -> Result<Linker> {
        options.validate()?;
        ensure_driver()?;
        let mut info_log = vec![0u8; options.log_bytes].into_boxed_slice();
        let mut error_log = vec![0u8; options.log_bytes].into_boxed_slice();
        // Integer option values travel in the pointer-sized slots, as the driver API says.
        let int = |v: usize| v as *mut c_void;
        let mut keys = vec![
            CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            CUjit_option::CU_JIT_LOG_VERBOSE,
        ];
        let mut values = vec![
            info_log.as_mut_ptr().cast::<c_void>(),
            int(options.log_bytes),
            error_log.as_mut_ptr().cast::<c_void>(),
            int(options.log_bytes),
            int(usize::from(options.verbose)),
        ];
        if let Some(level) = options.optimization_level {
            keys.push(CUjit_option::CU_JIT_OPTIMIZATION_LEVEL);
            values.push(int(level as usize));
        }
        if options.line_info {
            keys.push(CUjit_option::CU_JIT_GENERATE_LINE_INFO);
            values.push(int(1));
        }
        if options.lto {
            keys.push(CUjit_option::CU_JIT_LTO);
            values.push(int(1));
        }
        let mut keys = keys.into_boxed_slice();
        let mut values = values.into_boxed_slice();
        let mut raw = std::ptr::null_mut();
        cu!(cuLinkCreate_v2(
            keys.len() as u32,
            keys.as_mut_ptr(),
            values.as_mut_ptr(),
            &mut raw
        ))?;
        Ok(Linker {
            raw,
            info_log,
            error_log,
            _keys: keys,
            _values: values,
            inputs: 0,
        })
    }

    /// Adds one input; `name` names it in the logs. PTX is JIT-compiled here, so a PTX error
    /// comes back from this call as [`Error::Link`] with the error log.
    pub fn add(&mut self, kind: LinkInputKind, image: &[u8], name: &str) -> Result<()> {
        let mut bytes = input_bytes(kind, image)?;
        let name = CString::new(name)
            .map_err(|_| Error::InvalidArgument("a link input's name contains NUL".into()))?;
        ensure_driver()?;
        // SAFETY: the state is live; `bytes` and `name` outlive the call (the driver copies
        // the input); no per-input options.
        let result = unsafe {
            sys::cuLinkAddData_v2(
                self.raw,
                kind.raw(),
                bytes.as_mut_ptr().cast(),
                bytes.len(),
                name.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        self.linker_result("cuLinkAddData_v2", result)?;
        self.inputs += 1;
        Ok(())
    }

    /// The number of inputs added so far.
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// The info log so far.
    pub fn info_log(&self) -> String {
        log_text(&self.info_log)
    }

    /// Links the inputs into a cubin. Unresolved symbols and the like come back as
    /// [`Error::Link`] with the linker's error log.
    pub fn complete(self) -> Result<LinkedImage> {
        if self.inputs == 0 {
            return Err(Error::InvalidArgument(
                "nothing to link: no inputs were added".into(),
            ));
        }
        ensure_driver()?;
        let mut cubin = std::ptr::null_mut();
        let mut size = 0;
        // SAFETY: the state is live; the driver returns a pointer to `size` bytes it owns
        // until the state is destroyed (they are copied out below, before the drop).
        let result = unsafe { sys::cuLinkComplete(self.raw, &mut cubin, &mut size) };
        self.linker_result("cuLinkComplete", result)?;
        if cubin.is_null() || size == 0 {
            return Err(Error::InvalidArgument(
                "the linker produced an empty image".into(),
            ));
        }
        // SAFETY: as above: `size` bytes at `cubin`, alive while `self` is.
        let cubin = unsafe { std::slice::from_raw_parts(cubin.cast::<u8>(), size) }.to_vec();
        Ok(LinkedImage {
            cubin,
            info_log: self.info_log(),
        })
    }

    /// `result` as a `Result`, with the error log in the error.
    fn linker_result(&self, call: &'static str, result: sys::CUresult) -> Result<()> {
        check(call, result).map_err(|e| match e {
            Error::Driver {
                call,
                code,
                name,
                message,
            } => Error::Link {
                call,
                code,
                name,
                message,
                log: log_text(&self.error_log),
            },
            other => other,
        })
    }
}

impl Drop for Linker {
    fn drop(&mut self) {
        cu_drop!(cuLinkDestroy(self.raw));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked_before_the_driver() {
        let zero_log = LinkOptions {
            log_bytes: 0,
            ..LinkOptions::default()
        };
        let e = Linker::new(&zero_log).unwrap_err().to_string();
        assert!(e.contains("log size"), "{e}");
        let level = LinkOptions {
            optimization_level: Some(5),
            ..LinkOptions::default()
        };
        let e = Linker::new(&level).unwrap_err().to_string();
        assert!(e.contains("0 to 4, not 5"), "{e}");
        assert!(LinkOptions::default().validate().is_ok());
    }

    #[test]
    fn inputs_are_nul_terminated_ptx_and_never_empty() {
        assert_eq!(
            input_bytes(LinkInputKind::Ptx, b".version 8.0")
                .unwrap()
                .last(),
            Some(&0)
        );
        assert_eq!(input_bytes(LinkInputKind::Ptx, b"x\0").unwrap(), b"x\0");
        assert_eq!(
            input_bytes(LinkInputKind::Cubin, b"\x7fELF").unwrap(),
            b"\x7fELF"
        );
        let e = input_bytes(LinkInputKind::Cubin, b"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty"), "{e}");
    }

    #[test]
    fn logs_end_at_the_first_nul() {
        assert_eq!(
            log_text(b"error: undefined\n\0\0garbage"),
            "error: undefined"
        );
        assert_eq!(log_text(b"\0"), "");
        assert_eq!(log_text(b"full"), "full");
    }

    #[test]
    fn every_input_kind_has_its_jit_input_type() {
        use CUjitInputType::*;
        assert_eq!(LinkInputKind::Ptx.raw(), CU_JIT_INPUT_PTX);
        assert_eq!(LinkInputKind::Cubin.raw(), CU_JIT_INPUT_CUBIN);
        assert_eq!(LinkInputKind::Fatbin.raw(), CU_JIT_INPUT_FATBINARY);
        assert_eq!(LinkInputKind::Object.raw(), CU_JIT_INPUT_OBJECT);
        assert_eq!(LinkInputKind::Library.raw(), CU_JIT_INPUT_LIBRARY);
        assert_eq!(LinkInputKind::LtoIr.raw(), CU_JIT_INPUT_NVVM);
    }
}
