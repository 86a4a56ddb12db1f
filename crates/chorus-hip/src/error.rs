//! The errors of the HIP runtime crate.

use std::path::PathBuf;

/// A result of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// What can go wrong, from finding ROCm to launching a kernel.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The HIP runtime (`libamdhip64`) or hipRTC could not be loaded, or lacks a symbol: ROCm
    /// is not installed where the loader looks (see [`crate::loader`]).
    #[error("HIP not found: {reason} (tried: {tried})")]
    HipNotFound {
        /// Why the last candidate failed.
        reason: String,
        /// The candidates tried, comma-separated.
        tried: String,
    },
    /// A HIP runtime call failed.
    #[error("{call} failed: {message} (hipError_t {code})")]
    Hip {
        /// The function called.
        call: &'static str,
        /// Its `hipError_t`.
        code: i32,
        /// `hipGetErrorString`'s text.
        message: String,
    },
    /// The runtime loaded but reports no device (or not the one asked for).
    #[error("no HIP device {ordinal} (the runtime reports {count})")]
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices the runtime reports.
        count: usize,
    },
    /// A device's architecture has no Chorus target ([`chorus_lang::target::Target::hip`]).
    #[error("the HIP device's architecture `{arch}` has no Chorus target")]
    UnknownArch {
        /// `gcnArchName` without its feature suffixes.
        arch: String,
    },
    /// hipRTC rejected the source; the log names the lines.
    #[error("hipRTC could not compile {name}: {log}")]
    Compile {
        /// The module's name.
        name: String,
        /// The compiler's log.
        log: String,
    },
    /// A hipRTC call failed.
    #[error("{call} failed: {message} (hiprtcResult {code})")]
    Hiprtc {
        /// The function called.
        call: &'static str,
        /// Its `hiprtcResult`.
        code: i32,
        /// `hiprtcGetErrorString`'s text.
        message: String,
    },
    /// hipcc (the offline compiler) was not found or failed.
    #[error("hipcc {}: {log}", path.display())]
    Hipcc {
        /// The hipcc run (or looked for).
        path: PathBuf,
        /// Its output, or why it could not run.
        log: String,
    },
    /// The kernel text did not compile or does not validate for the device's target.
    #[error(transparent)]
    Lang(#[from] chorus_lang::Error),
    /// A kernel or global the module does not define.
    #[error("no {what} `{name}` in the module")]
    NotFound {
        /// `kernel` or `global`.
        what: &'static str,
        /// The kernel-language name.
        name: String,
    },
    /// A copy whose sizes do not match, or another misuse of the API.
    #[error("{0}")]
    Invalid(String),
    /// A file of the disk cache or a temporary directory.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
