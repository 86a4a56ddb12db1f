//! The one error type of the CUDA backend: the driver layer's errors (converted variant for
//! variant) and those of the compilers, the cache, the kernel manager and the language.

/// Everything that can go wrong in `chorus-cuda`.
///
/// Nothing in this crate panics on a missing driver, library or compiler: their absence is an
/// [`Error::SdkNotFound`], [`Error::NvrtcNotFound`] or [`Error::NvccNotFound`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The CUDA driver library (`libcuda.so.1`, `nvcuda.dll`) could not be loaded.
    #[error("CUDA driver not found: {reason}")]
    SdkNotFound {
        /// What was searched, or why loading failed.
        reason: String,
    },
    /// NVRTC (`libnvrtc.so.13`) could not be loaded, and NVRTC was asked for.
    #[error("NVRTC not found: {reason}")]
    NvrtcNotFound {
        /// What was searched.
        reason: String,
    },
    /// No `nvcc` was found, and nvcc was asked for (or NVRTC is absent too).
    #[error("nvcc not found: {searched}")]
    NvccNotFound {
        /// Where it was looked for, in order ([`crate::nvcc_search_description`]).
        searched: String,
    },
    /// A driver call returned an error.
    #[error("{call} failed: {name} ({code}): {message}")]
    Driver {
        /// The driver entry point (`cuModuleLoadData`).
        call: &'static str,
        /// The `CUresult` value.
        code: u32,
        /// Its name (`CUDA_ERROR_INVALID_VALUE`).
        name: String,
        /// The driver's description of it.
        message: String,
    },
    /// An allocation asked for more device memory than is free.
    #[error("out of device memory: asked for {requested} bytes, {free} of {total} bytes free")]
    OutOfMemory {
        /// Bytes asked for.
        requested: usize,
        /// Bytes free on the device when the allocation failed.
        free: usize,
        /// Total bytes of the device.
        total: usize,
    },
    /// The kernel compiler rejected the generated source.
    #[error("{compiler} failed to compile {name}:\n{log}{excerpt}")]
    Compile {
        /// `nvrtc` or the nvcc path.
        compiler: String,
        /// The compilation unit's name.
        name: String,
        /// The compiler's log.
        log: String,
        /// The source lines the log points at (`\n  42 | float x = …`), or empty.
        excerpt: String,
    },
    /// A file-system or process error.
    #[error("{context}: {source}")]
    Io {
        /// What was being done (`writing /tmp/…/kernel.cu`).
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An argument outside what the call accepts (a zero-sized allocation, a block of 0 threads).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An element index past the end of a memory block.
    #[error("index {index} out of range for a memory block of {len} elements")]
    IndexOutOfRange {
        /// The index asked for.
        index: usize,
        /// The number of elements.
        len: usize,
    },
    /// A kernel launched with arguments that do not match its signature.
    #[error("argument {index} of {kernel}: expected {expected}, got {got}")]
    ArgumentType {
        /// The kernel's kernel-language name.
        kernel: String,
        /// 1-based argument position.
        index: usize,
        /// The parameter type.
        expected: String,
        /// What was passed.
        got: String,
    },
    /// A kernel launched with the wrong number of arguments.
    #[error("{kernel} takes {expected} arguments, got {got}")]
    ArgumentCount {
        /// The kernel's kernel-language name.
        kernel: String,
        /// Parameters declared.
        expected: usize,
        /// Arguments passed.
        got: usize,
    },
    /// A typed access to a global with a Rust type that is not the global's kernel type.
    #[error("global {name} has type {expected}, not {got}")]
    GlobalType {
        /// The global's kernel-language name.
        name: String,
        /// The global's type.
        expected: String,
        /// The type asked for.
        got: String,
    },
    /// No function or global of that name in a program or module.
    #[error("no {what} named {name}")]
    NotFound {
        /// `kernel`, `function`, `global`.
        what: &'static str,
        /// The name looked for.
        name: String,
    },
    /// A kernel-manager transition that its current state does not allow.
    #[error("kernel manager: cannot {action} in the {state} state")]
    IllegalTransition {
        /// The attempted transition (`load-module`).
        action: &'static str,
        /// The state the manager was in.
        state: crate::state::State,
    },
    /// An error of the kernel language (reader, expander, checker).
    #[error(transparent)]
    Language(#[from] chorus_lang::Error),
    /// A cache entry could not be used (it is then rebuilt; this surfaces only from
    /// [`crate::cache::clear`] and friends).
    #[error("kernel cache: {0}")]
    Cache(String),
    /// A call that needs a current CUDA context ran outside [`crate::with_cuda`] or a
    /// [`crate::Context`].
    #[error("no current CUDA context (call it inside with_cuda or while a Context is current)")]
    NoContext,
    /// A driver feature that this driver or device does not offer (green contexts before CUDA
    /// 12.4, checkpointing before 12.8, memory pools on a device without them).
    #[error("{feature} is not supported here: {reason}")]
    Unsupported {
        /// The feature (`green contexts`).
        feature: &'static str,
        /// Why not (the entry points the driver lacks, the device attribute that says no).
        reason: String,
    },
    /// The JIT linker (`cuLinkAddData`, `cuLinkComplete`) failed; `log` is its error log.
    #[error("{call} failed: {name} ({code}): {message}\n{log}")]
    Link {
        /// The driver entry point.
        call: &'static str,
        /// The `CUresult` value.
        code: u32,
        /// Its name (`CUDA_ERROR_INVALID_IMAGE`).
        name: String,
        /// The driver's description of it.
        message: String,
        /// The linker's error log (unresolved symbols, bad inputs); boxed to keep this enum,
        /// which every `Result` of the crate carries, small.
        log: Box<str>,
    },
}

impl Error {
    /// An [`Error::Io`] with its context.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// An [`Error::Io`] naming a path.
    pub(crate) fn io_path(what: &str, path: &std::path::Path, source: std::io::Error) -> Error {
        Error::io(format!("{what} {}", path.display()), source)
    }

    /// True for [`Error::Driver`] with the given `CUresult` name.
    pub fn is_driver_error(&self, cu_name: &str) -> bool {
        matches!(self, Error::Driver { name, .. } | Error::Link { name, .. } if name == cu_name)
    }

    /// True for a driver error that leaves its context unusable: a kernel faulted (see
    /// [`chorus_driver::Error::is_sticky`]); recover with [`crate::reset_primary_context`].
    pub fn is_sticky(&self) -> bool {
        matches!(self, Error::Driver { code, .. } if chorus_driver::is_sticky_code(*code))
    }
}

impl From<chorus_driver::Error> for Error {
    fn from(error: chorus_driver::Error) -> Error {
        use chorus_driver::Error as Driver;
        match error {
            Driver::SdkNotFound { reason } => Error::SdkNotFound { reason },
            Driver::Driver {
                call,
                code,
                name,
                message,
            } => Error::Driver {
                call,
                code,
                name,
                message,
            },
            Driver::OutOfMemory {
                requested,
                free,
                total,
            } => Error::OutOfMemory {
                requested,
                free,
                total,
            },
            Driver::InvalidArgument(what) => Error::InvalidArgument(what),
            Driver::IndexOutOfRange { index, len } => Error::IndexOutOfRange { index, len },
            Driver::NoContext => Error::NoContext,
            Driver::Unsupported { feature, reason } => Error::Unsupported { feature, reason },
            Driver::Link {
                call,
                code,
                name,
                message,
                log,
            } => Error::Link {
                call,
                code,
                name,
                message,
                log: log.into_boxed_str(),
            },
        }
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_errors_convert_variant_for_variant_and_read_the_same() {
        let cases = [
            chorus_driver::Error::SdkNotFound {
                reason: "none of libcuda.so".into(),
            },
            chorus_driver::Error::Driver {
                call: "cuInit",
                code: 100,
                name: "CUDA_ERROR_NO_DEVICE".into(),
                message: "no CUDA-capable device is detected".into(),
            },
            chorus_driver::Error::OutOfMemory {
                requested: 3,
                free: 2,
                total: 1,
            },
            chorus_driver::Error::InvalidArgument("cannot allocate 0 bytes".into()),
            chorus_driver::Error::IndexOutOfRange { index: 4, len: 2 },
            chorus_driver::Error::NoContext,
            chorus_driver::Error::Unsupported {
                feature: "green contexts",
                reason: "the driver lacks cuGreenCtxCreate".into(),
            },
            chorus_driver::Error::Link {
                call: "cuLinkComplete",
                code: 218,
                name: "CUDA_ERROR_INVALID_PTX".into(),
                message: "a PTX JIT compilation failed".into(),
                log: "error   : Undefined reference to 'scale'".into(),
            },
        ];
        for driver in cases {
            let text = driver.to_string();
            let cuda = Error::from(driver.clone());
            assert_eq!(cuda.to_string(), text);
            let same_variant = matches!(
                (&driver, &cuda),
                (
                    chorus_driver::Error::SdkNotFound { .. },
                    Error::SdkNotFound { .. }
                ) | (chorus_driver::Error::Driver { .. }, Error::Driver { .. })
                    | (
                        chorus_driver::Error::OutOfMemory { .. },
                        Error::OutOfMemory { .. }
                    )
                    | (
                        chorus_driver::Error::InvalidArgument(_),
                        Error::InvalidArgument(_)
                    )
                    | (
                        chorus_driver::Error::IndexOutOfRange { .. },
                        Error::IndexOutOfRange { .. }
                    )
                    | (chorus_driver::Error::NoContext, Error::NoContext)
                    | (
                        chorus_driver::Error::Unsupported { .. },
                        Error::Unsupported { .. }
                    )
                    | (chorus_driver::Error::Link { .. }, Error::Link { .. })
            );
            assert!(same_variant, "{driver:?} became {cuda:?}");
        }
    }
}
