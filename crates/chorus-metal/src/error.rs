//! The Metal backend's errors.

/// What went wrong in the Metal backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The kernel text is wrong, or needs what the Metal target lacks (at its span).
    #[error(transparent)]
    Lang(#[from] chorus_lang::Error),
    /// No Metal device: not an Apple platform, or `MTLCreateSystemDefaultDevice` returned none.
    #[error("no Metal device: {0}")]
    NoDevice(String),
    /// The device is older than the Apple7 family that MSL 3.2 needs.
    #[error("the Metal device {name} is older than the Apple7 GPU family Chorus needs")]
    UnsupportedDevice {
        /// The device's name.
        name: String,
    },
    /// `newLibraryWithSource` refused the MSL: the compiler's log.
    #[error("the Metal compiler refused the program:\n{log}")]
    Compile {
        /// The compiler's messages.
        log: String,
    },
    /// No kernel of that name in the program.
    #[error("no kernel `{0}` in the program")]
    NoSuchKernel(String),
    /// A compute pipeline could not be made.
    #[error("no compute pipeline for `{kernel}`: {message}")]
    Pipeline {
        /// The kernel.
        kernel: String,
        /// Metal's message.
        message: String,
    },
    /// A buffer could not be allocated.
    #[error("cannot allocate a Metal buffer of {bytes} bytes")]
    Allocation {
        /// The size asked for.
        bytes: usize,
    },
    /// A copy outside a buffer.
    #[error("a copy of {len} bytes at offset {offset} does not fit a buffer of {size} bytes")]
    OutOfBounds {
        /// Where the copy starts.
        offset: usize,
        /// Its length.
        len: usize,
        /// The buffer's size.
        size: usize,
    },
    /// A dispatch that Metal cannot run as asked (an argument count, a size, a layout).
    #[error("cannot dispatch `{kernel}`: {message}")]
    Dispatch {
        /// The kernel.
        kernel: String,
        /// Why.
        message: String,
    },
    /// A command buffer completed with an error.
    #[error("a Metal command buffer failed: {0}")]
    Execution(String),
    /// A global read or written from the host that the program lacks, or with the wrong size.
    #[error("cannot access the global `{name}`: {message}")]
    GlobalAccess {
        /// The global's kernel-language name.
        name: String,
        /// Why.
        message: String,
    },
}

/// A `Result` with the Metal backend's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
