//! The facade's error type.

use crate::backend::Backend;

/// Everything that can go wrong in Chorus, whichever backend runs the kernels.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error in kernel source (reader, macro expander, checker), displayed as
    /// `FILE:LINE:COL: message`.
    #[error(transparent)]
    Lang(#[from] chorus_lang::Error),
    /// The CUDA driver library could not be loaded (cl-cuda's `sdk-not-found-error`): what an
    /// allocation or launch on the CUDA backend returns on a machine without the driver.
    #[error("CUDA driver not found: {0}")]
    SdkNotFound(String),
    /// `CHORUS_BACKEND` names no backend.
    #[error("{0}")]
    BadSelection(String),
    /// The backend asked for cannot run kernels here.
    #[error("the {backend} backend is not available: {reason}")]
    BackendUnavailable {
        /// The backend asked for.
        backend: Backend,
        /// Why it is not available.
        reason: String,
    },
    /// An error of the CUDA backend (driver call, compiler, out of memory).
    #[error("CUDA: {0}")]
    Cuda(chorus_cuda::Error),
    /// An error of the CPU executor.
    #[error("CPU executor: {0}")]
    Cpu(#[from] chorus_cpu::Error),
    /// The program has no kernel of that name.
    #[error("{file}: no kernel named `{name}` (kernels: {known})")]
    NoSuchKernel {
        /// The name asked for.
        name: String,
        /// The program's file.
        file: String,
        /// The kernels it has.
        known: String,
    },
    /// The program has no global of that name.
    #[error("{file}: no global named `{name}` (globals: {known})")]
    NoSuchGlobal {
        /// The name asked for.
        name: String,
        /// The program's file.
        file: String,
        /// The globals it has.
        known: String,
    },
    /// Arguments that do not match the kernel's parameters, or a global read or written with
    /// the wrong type.
    #[error("{0}")]
    TypeMismatch(String),
    /// A grid or block that cannot be launched.
    #[error("invalid launch: {0}")]
    InvalidLaunch(String),
    /// A file could not be read.
    #[error("{context}: {source}")]
    Io {
        /// What was being done (`reading kernels.lisp`).
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A memory block that cannot be made (zero elements, too many, host memory exhausted) or
    /// used that way.
    #[error("memory block: {0}")]
    Memory(String),
}

impl From<chorus_cuda::DriverError> for Error {
    fn from(error: chorus_cuda::DriverError) -> Error {
        chorus_cuda::Error::from(error).into()
    }
}

impl From<chorus_cuda::Error> for Error {
    fn from(error: chorus_cuda::Error) -> Error {
        match error {
            chorus_cuda::Error::SdkNotFound { reason } => Error::SdkNotFound(reason),
            other => Error::Cuda(other),
        }
    }
}

/// The facade's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
