//! Compiling generated CUDA C to a module image through the cache, and loading it.
//!
//! The compiler is NVRTC in process when it loads (or when the settings ask for it), else nvcc.
//!
//! # PTX or cubin
//!
//! Under `CHORUS_IMAGE=auto` (the default) the image is a **cubin for the device's exact
//! architecture** whenever a device is known (a context is current, or device 0 exists) and
//! the options do not name only a virtual architecture (`-arch=compute_90`, which has no cubin): a
//! cubin loads in about 20 µs, while PTX is JIT-compiled by the driver at every load, 9–12 ms
//! for a tiny kernel and tens of ms for a large one on an H200, at each process start (the
//! driver's own JIT cache only helps when it is enabled and warm). NVRTC and nvcc emit that
//! cubin directly (`-arch=sm_XY` is in their options for PTX too, so a compiler that cannot
//! target the device fails either way). Compiling cubin costs more once (NVRTC: about 34 ms
//! against 21 ms for PTX), and then the cache serves it.
//!
//! Without a known device (compile-only use, no driver), the seed's rule remains: PTX when the
//! toolkit is no newer than the driver (or there is no driver), else cubin. `CHORUS_IMAGE=ptx`
//! forces PTX, for which the seed's fallback stays: when the driver rejects the PTX
//! (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`, a toolkit newer than the driver), the cubin is
//! compiled and loaded instead. `CHORUS_IMAGE=cubin` forces cubin.
//!
//! # The warm path
//!
//! A repeated compile asks nothing of the file system or the compiler: the compiler is resolved
//! once per setting ([`Compiler::from_settings`]), a device's architecture once per device,
//! and the memory level of the [`cache`] answers with one fast hash of the source and one
//! comparison (see its documentation). The SHA-256 disk key is computed only on a memory miss.
//!
//! The first compile of a process asks nothing of the compiler either when the disk cache has
//! its image: the compiler's identity in the key is its files' paths, sizes and modification
//! times ([`Compiler`]), so NVRTC is loaded (≈30 ms) or nvcc run only on a miss, or when the
//! seed's PTX-or-cubin rule needs the toolkit's version (no device known).

use crate::cache;
pub use crate::diagnostics::source_excerpt;
use crate::error::{Error, Result};
pub use crate::image::{CompiledImage, Compiler, ImageKind};
use crate::module::Module;
use crate::nvcc::{nvcc_compile_with, nvcc_version, require_nvcc_with, with_arch_option_for};
use crate::nvrtc::{nvrtc_compile, nvrtc_options_for, nvrtc_version};
use crate::nvrtc_loader;
use crate::settings::{CompilerChoice, ImageChoice, Settings, message, settings};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

impl Compiler {
    /// The compiler the settings choose: NVRTC when it loads (unless nvcc is asked for), else
    /// nvcc; an error naming what is missing otherwise.
    ///
    /// A compiler found is remembered for the rest of the process, per (choice, nvcc binary
    /// setting): finding nvcc walks `PATH` and the install roots, and a cache hit must not.
    /// A compiler not found is looked for again next time.
    pub fn from_settings(settings: &Settings) -> Result<Compiler> {
        type Found = Vec<((CompilerChoice, Option<PathBuf>), Compiler)>;
        static FOUND: Mutex<Found> = Mutex::new(Vec::new());
        let wanted = (
            settings.compiler,
            settings.explicit_nvcc().map(PathBuf::from),
        );
        let found = FOUND.lock().unwrap_or_else(PoisonError::into_inner);
        // An NVRTC chosen by its files that then failed to load is chosen again no more.
        if let Some((_, compiler)) = found.iter().find(|(w, _)| *w == wanted)
            && !(matches!(compiler, Compiler::Nvrtc { .. }) && nvrtc_loader::nvrtc_known_missing())
        {
            return Ok(compiler.clone());
        }
        drop(found);
        let nvrtc = || -> Result<Compiler> {
            if nvrtc_loader::nvrtc_known_missing() {
                // Probed and unusable: the probe's error.
                nvrtc_version()?;
            }
            // Loading NVRTC only to name it would cost every process ~30 ms on a cache hit.
            let library = match nvrtc_loader::nvrtc_fingerprint() {
                Some(files) => files,
                None => {
                    let (major, minor) = nvrtc_version()?;
                    format!("nvrtc {major}.{minor}")
                }
            };
            Ok(Compiler::Nvrtc {
                library: library.into(),
            })
        };
        let nvcc = || {
            let path = require_nvcc_with(settings)?;
            let binary = match nvrtc_loader::files_identity(std::slice::from_ref(&path)) {
                Some(identity) => identity,
                None => {
                    let (major, minor) = nvcc_version(&path)?;
                    format!("nvcc {major}.{minor}")
                }
            };
            Ok(Compiler::Nvcc {
                path,
                binary: binary.into(),
            })
        };
        let compiler = match settings.compiler {
            CompilerChoice::Nvrtc => nvrtc(),
            CompilerChoice::Nvcc => nvcc(),
            CompilerChoice::Auto => nvrtc().or_else(|_| nvcc()),
        }?;
        let mut found = FOUND.lock().unwrap_or_else(PoisonError::into_inner);
        found.retain(|(w, _)| *w != wanted);
        found.push((wanted, compiler.clone()));
        Ok(compiler)
    }

    /// The toolkit release, asked of the compiler (once per process): this loads NVRTC, or
    /// runs `nvcc --version`.
    pub fn version(&self) -> Result<(u32, u32)> {
        match self {
            Compiler::Nvrtc { .. } => nvrtc_version(),
            Compiler::Nvcc { path, .. } => nvcc_version(path),
        }
    }
}

/// The architecture to compile for: the current context's device, else device 0 when a driver
/// is present, else `None`. Each device's compute capability is asked of the driver once.
pub(crate) fn target_arch() -> Option<(u32, u32)> {
    chorus_driver::current_compute_capability().or_else(|| {
        chorus_driver::device_count().ok().filter(|n| *n > 0)?;
        chorus_driver::compute_capability(0).ok()
    })
}

/// True when `source` (printed CUDA C) uses arch-specific features (`wgmma`, `setmaxnreg`), so
/// that it must be compiled for `sm_90a`: the printer puts
/// [`chorus_lang::cfamily::ARCH_SPECIFIC_GUARD`] in it.
pub fn is_arch_specific(source: &str) -> bool {
    source.contains(chorus_lang::cfamily::ARCH_SPECIFIC_GUARD)
}

/// True when the user's options name only virtual architectures (`-arch=compute_90`), for
/// which no cubin can be built: an architecture option that names no `sm_XY` (nor `native`).
fn names_only_virtual_architectures(user_options: &[String]) -> bool {
    let mut named = user_options
        .iter()
        .filter(|o| crate::is_arch_option(o))
        .peekable();
    named.peek().is_some() && !named.any(|o| o.contains("sm_") || o.ends_with("native"))
}

/// The image kind to build when the caller names none (see the module documentation):
/// the settings' choice; under `Auto`, cubin when the device's architecture is known (and the
/// user's options do not ask for a virtual one only), else the seed's rule (PTX unless the
/// toolkit is newer than the driver). The versions are asked for only by that last rule
/// (`toolkit` may load NVRTC).
fn default_kind(
    choice: ImageChoice,
    arch: Option<(u32, u32)>,
    user_options: &[String],
    toolkit: impl FnOnce() -> Result<(u32, u32)>,
    driver: impl FnOnce() -> Option<(u32, u32)>,
) -> Result<ImageKind> {
    Ok(match choice {
        ImageChoice::Ptx => ImageKind::Ptx,
        ImageChoice::Cubin => ImageKind::Cubin,
        ImageChoice::Auto if arch.is_some() && !names_only_virtual_architectures(user_options) => {
            ImageKind::Cubin
        }
        ImageChoice::Auto => match driver() {
            Some(driver) if toolkit()? > driver => ImageKind::Cubin,
            _ => ImageKind::Ptx,
        },
    })
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
///
/// A cache hit does not load NVRTC (see [`Compiler::Nvrtc`]): it is loaded on a miss. When it
/// then fails to load and the settings let either compiler be used, nvcc compiles instead, as
/// if NVRTC had been found missing from the start.
pub fn compile_with(
    settings: &Settings,
    source: &str,
    name: &str,
    kind: Option<ImageKind>,
) -> Result<CompiledImage> {
    let compiler = Compiler::from_settings(settings)?;
    match compile_by(&compiler, settings, source, name, kind) {
        Err(Error::NvrtcNotFound { .. })
            if settings.compiler == CompilerChoice::Auto && nvrtc_loader::nvrtc_known_missing() =>
        {
            let nvcc = Compiler::from_settings(settings)?;
            compile_by(&nvcc, settings, source, name, kind)
        }
        result => result,
    }
}

/// [`compile_with`] by `compiler`.
fn compile_by(
    compiler: &Compiler,
    settings: &Settings,
    source: &str,
    name: &str,
    kind: Option<ImageKind>,
) -> Result<CompiledImage> {
    let arch = target_arch();
    let kind = match kind {
        Some(kind) => kind,
        None => default_kind(
            settings.image,
            arch,
            &settings.nvcc_options,
            || compiler.version(),
            || chorus_driver::driver_version().ok(),
        )?,
    };
    let lookup = cache::Lookup {
        compiler,
        arch,
        user_options: &settings.nvcc_options,
        kind,
        source,
    };
    if let Some(image) = cache::memory_get(&lookup) {
        if settings.show_messages {
            message(format!("{name}: cache hit (memory) {}", image.key));
        }
        return Ok(image);
    }
    // wgmma and setmaxnreg exist only for the arch-specific `sm_90a`: the printer marks a
    // source that uses them.
    let specific = is_arch_specific(source);
    let options = match compiler {
        Compiler::Nvrtc { .. } => {
            let default = if specific { (9, 0) } else { (7, 5) };
            nvrtc_options_for(arch.unwrap_or(default), specific, &settings.nvcc_options)
        }
        Compiler::Nvcc { .. } if arch.is_none() && !specific && chorus_driver::sdk_not_found() => {
            settings.nvcc_options.clone()
        }
        Compiler::Nvcc { .. } => with_arch_option_for(&settings.nvcc_options, arch, specific),
    };
    let identity = compiler.identity();
    let suffix = if specific { "a" } else { "" };
    let arch_text = arch
        .map(|(a, b)| format!("sm_{a}{b}{suffix}"))
        .unwrap_or_default();
    let key = cache::key(&[
        b"chorus-cuda",
        env!("CARGO_PKG_VERSION").as_bytes(),
        identity.as_bytes(),
        options.join("\0").as_bytes(),
        arch_text.as_bytes(),
        kind.extension().as_bytes(),
        source.as_bytes(),
    ]);
    let bytes = match cache::disk_get(&key, kind, settings.disk_cache) {
        Some(bytes) => {
            if settings.show_messages {
                message(format!("{name}: cache hit (disk) {key}"));
            }
            bytes
        }
        None => {
            let started = std::time::Instant::now();
            let bytes: Arc<[u8]> = match compiler {
                Compiler::Nvrtc { .. } => nvrtc_compile(source, name, kind, &options)?,
                Compiler::Nvcc { .. } => nvcc_compile_with(settings, source, name, kind, &options)?,
            }
            .into();
            cache::count_compile_time(started.elapsed());
            cache::disk_put(&key, kind, &bytes, settings.disk_cache);
            bytes
        }
    };
    let image = CompiledImage {
        bytes,
        kind,
        compiler: compiler.clone(),
        options: options.into(),
        key: key.into(),
    };
    cache::memory_put(&lookup, image.clone());
    Ok(image)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// [`default_kind`] with known versions.
    fn kind_of(
        choice: ImageChoice,
        arch: Option<(u32, u32)>,
        user_options: &[String],
        toolkit: (u32, u32),
        driver: Option<(u32, u32)>,
    ) -> ImageKind {
        default_kind(choice, arch, user_options, || Ok(toolkit), || driver).unwrap()
    }

    #[test]
    fn the_versions_are_asked_for_only_without_a_device() {
        // A cache hit on a machine with a device must not load NVRTC to learn its version.
        let unknown = || -> Result<(u32, u32)> { panic!("the toolkit version was asked for") };
        for choice in [ImageChoice::Auto, ImageChoice::Cubin, ImageChoice::Ptx] {
            assert!(default_kind(choice, Some((9, 0)), &[], unknown, || panic!("driver")).is_ok());
        }
        // Without a device, a toolkit that does not load is an error, not a guess.
        let missing = || {
            Err(Error::NvrtcNotFound {
                reason: "test".into(),
            })
        };
        assert!(matches!(
            default_kind(ImageChoice::Auto, None, &[], missing, || Some((13, 0))),
            Err(Error::NvrtcNotFound { .. })
        ));
        // Without a driver, PTX, whatever the toolkit.
        assert_eq!(
            default_kind(ImageChoice::Auto, None, &[], missing, || None).unwrap(),
            ImageKind::Ptx
        );
    }

    #[test]
    fn a_known_device_gets_cubin_and_the_seed_rule_remains_without_one() {
        let sm90 = Some((9, 0));
        let (toolkit, older_driver) = ((13, 0), Some((12, 8)));
        // A device is known: cubin, whatever the versions.
        assert_eq!(
            kind_of(ImageChoice::Auto, sm90, &[], toolkit, Some((13, 0))),
            ImageKind::Cubin
        );
        // No device: PTX unless the toolkit is newer than the driver.
        assert_eq!(
            kind_of(ImageChoice::Auto, None, &[], toolkit, Some((13, 0))),
            ImageKind::Ptx
        );
        assert_eq!(
            kind_of(ImageChoice::Auto, None, &[], toolkit, older_driver),
            ImageKind::Cubin
        );
        assert_eq!(
            kind_of(ImageChoice::Auto, None, &[], toolkit, None),
            ImageKind::Ptx
        );
        // Options that ask for a virtual architecture only get PTX; a real one, cubin.
        let options = |list: &[&str]| list.iter().map(|o| o.to_string()).collect::<Vec<_>>();
        let current = Some((13, 0));
        for (user, kind) in [
            (options(&["-arch=compute_90"]), ImageKind::Ptx),
            (
                options(&["--gpu-architecture=compute_80", "-lineinfo"]),
                ImageKind::Ptx,
            ),
            (options(&["-arch=sm_80"]), ImageKind::Cubin),
            (
                options(&["-gencode=arch=compute_90,code=sm_90"]),
                ImageKind::Cubin,
            ),
            (options(&["-arch=native"]), ImageKind::Cubin),
            (options(&["-lineinfo"]), ImageKind::Cubin),
        ] {
            assert_eq!(
                kind_of(ImageChoice::Auto, sm90, &user, toolkit, current),
                kind,
                "{user:?}"
            );
        }
        // CHORUS_IMAGE forces either.
        assert_eq!(
            kind_of(ImageChoice::Ptx, sm90, &[], toolkit, older_driver),
            ImageKind::Ptx
        );
        assert_eq!(
            kind_of(ImageChoice::Cubin, None, &[], toolkit, None),
            ImageKind::Cubin
        );
    }
}
