//! The CPU executor's error type.

use chorus_lang::Span;

/// What can go wrong preparing a module, launching a kernel, or while it runs.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The module uses something the CPU cannot run (`cuda-asm`, clusters, …); found when the
    /// module is prepared.
    #[error("{span}: the CPU executor cannot run this: {what}")]
    Unsupported {
        /// The statement or expression.
        span: Span,
        /// What it is.
        what: String,
    },
    /// A launch named a function the module does not have, or one that is not a kernel.
    #[error("no kernel `{0}` in this module")]
    NoSuchKernel(String),
    /// `global_bytes`/`set_global_bytes` named a global the module does not have.
    #[error("no global `{0}` in this module")]
    NoSuchGlobal(String),
    /// Host access to a global with the wrong size or type.
    #[error("global `{name}`: {message}")]
    GlobalAccess {
        /// The global.
        name: String,
        /// What was wrong.
        message: String,
    },
    /// The launch configuration or the arguments do not fit the kernel.
    #[error("launch of `{kernel}`: {message}")]
    Launch {
        /// The kernel.
        kernel: String,
        /// What was wrong.
        message: String,
    },
    /// A texture or surface object that CUDA would refuse (an address mode without normalized
    /// coordinates, linear filtering of integers, …), or an image that does not fit its buffer.
    #[error("texture or surface: {0}")]
    Texture(String),
    /// A buffer could not be allocated, or a host copy fell outside it.
    #[error("device buffer: {0}")]
    Alloc(String),
    /// A thread faulted: an out-of-bounds or misaligned access, a division by zero, a call
    /// deeper than the limit, …
    #[error(
        "{span}: kernel `{kernel}`, block ({}, {}, {}), thread ({}, {}, {}): {message}",
        block[0], block[1], block[2], thread[0], thread[1], thread[2]
    )]
    Fault {
        /// The kernel launched.
        kernel: String,
        /// `blockIdx` of the faulting thread.
        block: [u32; 3],
        /// `threadIdx` of the faulting thread.
        thread: [u32; 3],
        /// The statement or expression that faulted.
        span: Span,
        /// What happened.
        message: String,
    },
}

/// The CPU executor's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
