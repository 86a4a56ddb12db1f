//! The one error type of the library bindings.

/// Everything a call into a CUDA library can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The library (or one it needs) could not be loaded, or lacks entry points the bindings
    /// call. Nothing was called.
    #[error("the {library} library was not found: {searched}")]
    LibraryNotFound {
        /// The library (`cuBLAS`).
        library: &'static str,
        /// The file names and directories searched, or which entry points are missing.
        searched: String,
    },
    /// A library call returned an error status.
    #[error("{call} failed: {name} ({code}): {message}")]
    Status {
        /// The library (`cuBLAS`).
        library: &'static str,
        /// The entry point (`cublasSgemm_v2`).
        call: &'static str,
        /// The status value.
        code: i64,
        /// Its name (`CUBLAS_STATUS_INVALID_VALUE`).
        name: String,
        /// What it means.
        message: String,
    },
    /// An argument that would make the call read or write out of bounds, or that the library
    /// rejects: checked before the call.
    #[error("invalid argument to {call}: {reason}")]
    InvalidArgument {
        /// The operation (`gemm`).
        call: &'static str,
        /// What is wrong, with the numbers (`lda = 3 < m = 4`).
        reason: String,
    },
    /// A factorization found a singular matrix (LU) or a minor that is not positive definite
    /// (Cholesky), or an eigen or singular value solver did not converge.
    #[error("{call}: {reason} (info = {info})")]
    Numerical {
        /// The routine (`getrf`).
        call: &'static str,
        /// The library's `info`: the 1-based index of the failing pivot, minor or value.
        info: i32,
        /// What that means for this routine.
        reason: String,
    },
    /// The handle's stream belongs to another context than the one current when the handle
    /// was made.
    #[error("the stream belongs to another CUDA context than the handle's")]
    StreamFromAnotherContext,
    /// The device cannot run this (FP8 needs compute capability 8.9 or newer).
    #[error(
        "{what} needs compute capability {needed_major}.{needed_minor}, the device has {major}.{minor}"
    )]
    Unsupported {
        /// The operation.
        what: &'static str,
        /// The needed capability.
        needed_major: u32,
        /// The needed capability.
        needed_minor: u32,
        /// The device's.
        major: u32,
        /// The device's.
        minor: u32,
    },
    /// A driver error (no current context, memory, copies).
    #[error(transparent)]
    Driver(#[from] chorus_driver::Error),
}

impl Error {
    /// True for [`Error::Status`] with the given status name.
    pub fn is_status(&self, status_name: &str) -> bool {
        matches!(self, Error::Status { name, .. } if name == status_name)
    }

    /// An [`Error::InvalidArgument`] for `call`.
    pub(crate) fn invalid(call: &'static str, reason: impl Into<String>) -> Error {
        Error::InvalidArgument {
            call,
            reason: reason.into(),
        }
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_library_the_call_and_the_status() {
        let e = Error::Status {
            library: "cuBLAS",
            call: "cublasSgemm_v2",
            code: 7,
            name: "CUBLAS_STATUS_INVALID_VALUE".into(),
            message: "an invalid value was used as an argument".into(),
        };
        assert_eq!(
            e.to_string(),
            "cublasSgemm_v2 failed: CUBLAS_STATUS_INVALID_VALUE (7): an invalid value was used as an argument"
        );
        assert!(e.is_status("CUBLAS_STATUS_INVALID_VALUE"));
        let missing = Error::LibraryNotFound {
            library: "cuFFT",
            searched: "none of libcufft.so in /usr/local/cuda/lib64".into(),
        };
        assert_eq!(
            missing.to_string(),
            "the cuFFT library was not found: none of libcufft.so in /usr/local/cuda/lib64"
        );
        assert!(!missing.is_status("CUBLAS_STATUS_INVALID_VALUE"));
        let singular = Error::Numerical {
            call: "getrf",
            info: 3,
            reason: "U(3,3) is exactly zero: the matrix is singular".into(),
        };
        assert_eq!(
            singular.to_string(),
            "getrf: U(3,3) is exactly zero: the matrix is singular (info = 3)"
        );
    }
}
