//! The driver layer's error type.

/// Everything that can go wrong in `chorus-driver`.
///
/// Nothing in this crate panics on a missing driver: its absence is an
/// [`Error::SdkNotFound`]. `chorus-cuda`'s error has each of these variants under the same
/// name and converts from this one variant for variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The CUDA driver library (`libcuda.so.1`, `nvcuda.dll`) could not be loaded.
    #[error("CUDA driver not found: {reason}")]
    SdkNotFound {
        /// What was searched, or why loading failed.
        reason: String,
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
    /// An argument outside what the call accepts (a zero-sized allocation, a null stream to
    /// capture).
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
        /// The linker's error log (unresolved symbols, bad inputs).
        log: String,
    },
}

impl Error {
    /// True for [`Error::Driver`] with the given `CUresult` name.
    pub fn is_driver_error(&self, cu_name: &str) -> bool {
        matches!(self, Error::Driver { name, .. } | Error::Link { name, .. } if name == cu_name)
    }

    /// True for a driver error that leaves its context unusable (CUDA's "sticky" errors: a
    /// kernel's illegal address, misaligned address, illegal instruction, trap or assertion,
    /// hardware stack error, launch failure or timeout, an uncorrectable ECC error). Every later
    /// call in that context fails the same way until the context is destroyed, or, for a
    /// primary context, reset ([`crate::reset_primary_context`]).
    pub fn is_sticky(&self) -> bool {
        matches!(self, Error::Driver { code, .. } if is_sticky_code(*code))
    }
}

/// Whether the `CUresult` `code` is one of CUDA's sticky errors (see [`Error::is_sticky`]).
pub fn is_sticky_code(code: u32) -> bool {
    // 214 ECC_UNCORRECTABLE, 700 ILLEGAL_ADDRESS, 702 LAUNCH_TIMEOUT, 710 ASSERT,
    // 714 HARDWARE_STACK_ERROR, 715 ILLEGAL_INSTRUCTION, 716 MISALIGNED_ADDRESS,
    // 717 INVALID_ADDRESS_SPACE, 718 INVALID_PC, 719 LAUNCH_FAILED.
    matches!(code, 214 | 700 | 702 | 710 | 714..=719)
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_call_the_result_and_its_message() {
        let e = Error::Driver {
            call: "cuMemAlloc_v2",
            code: 2,
            name: "CUDA_ERROR_OUT_OF_MEMORY".into(),
            message: "out of memory".into(),
        };
        assert_eq!(
            e.to_string(),
            "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"
        );
        assert!(e.is_driver_error("CUDA_ERROR_OUT_OF_MEMORY"));
        assert!(!e.is_driver_error("CUDA_ERROR_INVALID_VALUE"));
        assert!(!e.is_sticky());
        let fault = Error::Driver {
            call: "cuCtxSynchronize",
            code: 700,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            message: "an illegal memory access was encountered".into(),
        };
        assert!(fault.is_sticky());
        let missing = Error::SdkNotFound {
            reason: "none of libcuda.so".into(),
        };
        assert_eq!(
            missing.to_string(),
            "CUDA driver not found: none of libcuda.so"
        );
        assert!(!missing.is_driver_error("CUDA_ERROR_OUT_OF_MEMORY"));
        let oom = Error::OutOfMemory {
            requested: 10,
            free: 4,
            total: 8,
        };
        assert_eq!(
            oom.to_string(),
            "out of device memory: asked for 10 bytes, 4 of 8 bytes free"
        );
        assert_eq!(
            Error::IndexOutOfRange { index: 5, len: 3 }.to_string(),
            "index 5 out of range for a memory block of 3 elements"
        );
        let unsupported = Error::Unsupported {
            feature: "green contexts",
            reason: "the driver lacks cuGreenCtxCreate".into(),
        };
        assert_eq!(
            unsupported.to_string(),
            "green contexts is not supported here: the driver lacks cuGreenCtxCreate"
        );
        let link = Error::Link {
            call: "cuLinkComplete",
            code: 218,
            name: "CUDA_ERROR_INVALID_PTX".into(),
            message: "a PTX JIT compilation failed".into(),
            log: "error   : Undefined reference to 'scale'".into(),
        };
        assert!(link.is_driver_error("CUDA_ERROR_INVALID_PTX"));
        assert!(
            link.to_string()
                .ends_with("\nerror   : Undefined reference to 'scale'")
        );
    }
}
