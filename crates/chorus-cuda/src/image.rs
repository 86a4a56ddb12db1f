//! What the compilers produce: the image kinds, which compiler made an image, and the image.
//! (How a compiler is chosen and run is [`crate::compile`]'s business.)

use std::path::PathBuf;
use std::sync::Arc;

/// The kind of module image a compiler produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// PTX text, JIT-compiled by the driver at load time (needs a driver at least as new as the
    /// toolkit's PTX ISA).
    Ptx,
    /// A cubin for one architecture, loaded as it is.
    Cubin,
}

impl ImageKind {
    /// The file extension (`ptx`, `cubin`).
    pub fn extension(self) -> &'static str {
        match self {
            ImageKind::Ptx => "ptx",
            ImageKind::Cubin => "cubin",
        }
    }
}

/// Which compiler made an image.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Compiler {
    /// NVRTC in process.
    Nvrtc {
        /// The library files it would be loaded from, identified without loading them (a hex
        /// SHA-256 of their paths, sizes and modification times), so that a cache hit does not
        /// load NVRTC; or, when no file was found by searching, its version as `nvrtc X.Y`.
        library: Arc<str>,
    },
    /// nvcc as a subprocess.
    Nvcc {
        /// The binary.
        path: PathBuf,
        /// The binary identified without running it (a hex SHA-256 of its path, size and
        /// modification time): `nvcc --version` costs a process start per program start.
        binary: Arc<str>,
    },
}

impl Compiler {
    /// A stable description (part of cache keys).
    pub fn identity(&self) -> String {
        match self {
            Compiler::Nvrtc { library } => format!("nvrtc {library}"),
            Compiler::Nvcc { path, binary } => format!("nvcc {binary} {}", path.display()),
        }
    }
}

/// A compiled module image.
#[derive(Clone, Debug)]
pub struct CompiledImage {
    /// PTX text or cubin bytes.
    pub bytes: Arc<[u8]>,
    /// Which of the two.
    pub kind: ImageKind,
    /// The compiler that made it.
    pub compiler: Compiler,
    /// The options it was given.
    pub options: Arc<[String]>,
    /// Its disk-cache key (hex SHA-256, see [`crate::cache`]).
    pub key: Arc<str>,
}
