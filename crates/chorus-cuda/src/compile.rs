//! Compiling generated CUDA C to a module image through the cache, and loading it.
//!
//! The compiler is NVRTC in process when it loads (or when the settings ask for it), else nvcc.
//! The image is PTX when the toolkit is no newer than the driver, cubin otherwise; when the
//! driver still rejects the PTX (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`), the cubin is compiled
//! and loaded instead.

use crate::cache;
use crate::error::{Error, Result};
use crate::module::Module;
use crate::nvcc::{find_nvcc_with, nvcc_compile_with, nvcc_version, with_arch_option};
use crate::nvrtc::{nvrtc_compile, nvrtc_options, nvrtc_version};
use crate::settings::{CompilerChoice, ImageChoice, Settings, message, settings};
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
    /// NVRTC in process, with its version.
    Nvrtc {
        /// `(major, minor)`.
        version: (u32, u32),
    },
    /// nvcc as a subprocess.
    Nvcc {
        /// The binary.
        path: PathBuf,
        /// Its CUDA release.
        version: (u32, u32),
    },
}

impl Compiler {
    /// The compiler the settings choose: NVRTC when it loads (unless nvcc is asked for), else
    /// nvcc; an error naming what is missing otherwise.
    pub fn from_settings(settings: &Settings) -> Result<Compiler> {
        let nvrtc = || nvrtc_version().map(|version| Compiler::Nvrtc { version });
        let nvcc = || {
            let path = find_nvcc_with(settings).ok_or(Error::NvccNotFound)?;
            let version = nvcc_version(&path)?;
            Ok(Compiler::Nvcc { path, version })
        };
        match settings.compiler {
            CompilerChoice::Nvrtc => nvrtc(),
            CompilerChoice::Nvcc => nvcc(),
            CompilerChoice::Auto => nvrtc().or_else(|_| nvcc()),
        }
    }

    /// The toolkit release.
    pub fn version(&self) -> (u32, u32) {
        match self {
            Compiler::Nvrtc { version } | Compiler::Nvcc { version, .. } => *version,
        }
    }

    /// A stable description (part of cache keys).
    pub fn identity(&self) -> String {
        match self {
            Compiler::Nvrtc { version } => format!("nvrtc {}.{}", version.0, version.1),
            Compiler::Nvcc { path, version } => {
                format!("nvcc {}.{} {}", version.0, version.1, path.display())
            }
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
    pub options: Vec<String>,
    /// Its cache key.
    pub key: String,
}

/// The architecture to compile for: the current context's device, else device 0 when a driver
/// is present, else `None`.
fn target_arch() -> Option<(u32, u32)> {
    crate::context::current_compute_capability().or_else(|| {
        crate::context::device_count().ok().filter(|n| *n > 0)?;
        crate::context::compute_capability(0).ok()
    })
}

/// The settings' image choice; under `Auto`, PTX when the toolkit is no newer than the driver
/// (or when there is no driver: compile-only use), else cubin.
fn default_kind(settings: &Settings, compiler: &Compiler) -> ImageKind {
    match settings.image {
        ImageChoice::Ptx => ImageKind::Ptx,
        ImageChoice::Cubin => ImageKind::Cubin,
        ImageChoice::Auto => match crate::driver::driver_version() {
            Ok(driver) if compiler.version() > driver => ImageKind::Cubin,
            _ => ImageKind::Ptx,
        },
    }
}

/// Compiles `source` with the process-wide settings for the current context's device (see
/// [`compile_with`]).
pub fn compile(source: &str, name: &str, kind: Option<ImageKind>) -> Result<CompiledImage> {
    compile_with(&settings(), source, name, kind)
}

/// Compiles `source` (named `name` in messages) to `kind` (or the default: see the module
/// documentation) through the cache.
///
/// Options: nvcc gets the settings' options with `-arch=sm_XY` of the current context's device
/// first unless they name an architecture (`-arch=native` outside a context when a driver is
/// present); NVRTC gets `--std=c++17`, the architecture, the toolkit's include directories and
/// the settings' options.
pub fn compile_with(
    settings: &Settings,
    source: &str,
    name: &str,
    kind: Option<ImageKind>,
) -> Result<CompiledImage> {
    let compiler = Compiler::from_settings(settings)?;
    let kind = kind.unwrap_or_else(|| default_kind(settings, &compiler));
    let arch = target_arch();
    let options = match &compiler {
        Compiler::Nvrtc { .. } => nvrtc_options(arch.unwrap_or((7, 5)), &settings.nvcc_options),
        Compiler::Nvcc { .. } if arch.is_none() && crate::sdk_not_found() => {
            settings.nvcc_options.clone()
        }
        Compiler::Nvcc { .. } => with_arch_option(&settings.nvcc_options, arch),
    };
    let identity = compiler.identity();
    let arch_text = arch.map(|(a, b)| format!("sm_{a}{b}")).unwrap_or_default();
    let key = cache::key(&[
        b"chorus-cuda",
        env!("CARGO_PKG_VERSION").as_bytes(),
        identity.as_bytes(),
        options.join("\0").as_bytes(),
        arch_text.as_bytes(),
        kind.extension().as_bytes(),
        source.as_bytes(),
    ]);
    if let Some(bytes) = cache::get(&key, kind, settings.disk_cache) {
        if settings.show_messages {
            message(format!("{name}: cache hit {key}"));
        }
        return Ok(CompiledImage {
            bytes,
            kind,
            compiler,
            options,
            key,
        });
    }
    let bytes: Arc<[u8]> = match &compiler {
        Compiler::Nvrtc { .. } => nvrtc_compile(source, name, kind, &options)?,
        Compiler::Nvcc { .. } => nvcc_compile_with(settings, source, name, kind, &options)?,
    }
    .into();
    cache::put(&key, kind, bytes.clone(), settings.disk_cache);
    Ok(CompiledImage {
        bytes,
        kind,
        compiler,
        options,
        key,
    })
}

/// Compiles `source` and loads it into the current context, falling back to cubin when the
/// driver rejects the PTX version. Returns the module and the image that loaded.
pub fn compile_and_load(source: &str, name: &str) -> Result<(Module, CompiledImage)> {
    let settings = settings();
    let image = compile_with(&settings, source, name, None)?;
    if image.kind == ImageKind::Cubin {
        return Ok((Module::load(&image.bytes, ImageKind::Cubin)?, image));
    }
    let mut cubin_image = None;
    let (module, loaded) = Module::load_ptx_or_cubin(&image.bytes, || {
        let cubin = compile_with(&settings, source, name, Some(ImageKind::Cubin))?;
        let bytes = cubin.bytes.to_vec();
        cubin_image = Some(cubin);
        Ok(bytes)
    })?;
    match (loaded, cubin_image) {
        (ImageKind::Cubin, Some(cubin)) => Ok((module, cubin)),
        _ => Ok((module, image)),
    }
}

/// An [`Error::Compile`] whose excerpt shows the source lines the log points at.
pub(crate) fn compile_error(compiler: &str, name: &str, log: &str, source: &str) -> Error {
    Error::Compile {
        compiler: compiler.to_owned(),
        name: name.to_owned(),
        log: log.trim_end().to_owned(),
        excerpt: source_excerpt(log, source),
    }
}

/// The source lines a compiler log refers to (`kernel.cu(12): error: …`, the form nvcc and
/// NVRTC both use), each once, in order of first mention, as `\n  12 | text`. Empty when the log
/// names no line of `source`.
pub fn source_excerpt(log: &str, source: &str) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let mut seen = Vec::new();
    for line in log.lines() {
        let Some(open) = line.find('(') else { continue };
        let Some(close) = line[open..].find("): ").map(|c| open + c) else {
            continue;
        };
        let Ok(number) = line[open + 1..close].parse::<usize>() else {
            continue;
        };
        if (1..=lines.len()).contains(&number) && !seen.contains(&number) {
            seen.push(number);
        }
    }
    if seen.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nsource lines:");
    for n in seen {
        out.push_str(&format!("\n{n:>5} | {}", lines[n - 1]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_name_the_lines_the_log_points_at() {
        let source = "extern \"C\" __global__ void k(int* a) {\n  a[0] = undefined_name;\n}\n";
        let log = "k.cu(2): error: identifier \"undefined_name\" is undefined\n\
                   k.cu(2): note: again\n1 error detected in the compilation of \"k.cu\".\n";
        let excerpt = source_excerpt(log, source);
        assert_eq!(excerpt, "\nsource lines:\n    2 |   a[0] = undefined_name;");
        assert_eq!(source_excerpt("k.cu(99): error: x", source), "");
        assert_eq!(source_excerpt("no line numbers", source), "");
    }

    #[test]
    fn compile_errors_carry_log_and_excerpt() {
        let e = compile_error("nvrtc", "k", "k.cu(1): error: bad\n", "int x = ;\n");
        let text = e.to_string();
        assert!(text.contains("nvrtc failed to compile k"), "{text}");
        assert!(text.contains("k.cu(1): error: bad"), "{text}");
        assert!(text.contains("    1 | int x = ;"), "{text}");
    }
}
