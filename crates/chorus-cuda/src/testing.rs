//! Helpers for tests and examples that need a GPU: skip, saying why, where there is none, or
//! fail under `CHORUS_REQUIRE_GPU=1` (set on machines that have one, so that a broken driver
//! set-up cannot pass as a skip).

use crate::error::Result;
use chorus_driver::{Context, device_count, ensure_driver, with_cuda};

/// True when the CUDA driver loads and reports a device. Otherwise prints why `test` is
/// skipped (to stderr) and returns false; under `CHORUS_REQUIRE_GPU=1` it panics instead,
/// naming `test` and the reason.
///
/// ```no_run
/// #[test]
/// fn runs_on_the_gpu() {
///     if !chorus_cuda::testing::gpu_available_or_skip("runs_on_the_gpu") {
///         return;
///     }
///     // … use the GPU …
/// }
/// ```
pub fn gpu_available_or_skip(test: &str) -> bool {
    let why = match ensure_driver().and_then(|()| device_count()) {
        Ok(n) if n > 0 => return true,
        Ok(_) => "the CUDA driver loads but reports no device".to_owned(),
        Err(e) => e.to_string(),
    };
    if gpu_required() {
        panic!("{test}: CHORUS_REQUIRE_GPU=1 but there is no usable GPU: {why}");
    }
    eprintln!("skipped {test}: no usable GPU: {why}");
    false
}

/// True when `CHORUS_REQUIRE_GPU=1`: GPU tests must run, not skip.
pub fn gpu_required() -> bool {
    std::env::var("CHORUS_REQUIRE_GPU").is_ok_and(|v| v.trim() == "1")
}

/// Runs `body` in a new context on device 0 when [`gpu_available_or_skip`] says there is a
/// GPU; panics, naming `test`, when `body` fails (this is for tests).
pub fn on_gpu(test: &str, body: impl FnOnce(&Context) -> Result<()>) {
    if gpu_available_or_skip(test) {
        with_cuda(0, body).unwrap_or_else(|e| panic!("{test}: {e}"));
    }
}

/// How many times longer than written a test's time limits are: `CHORUS_TEST_TIME_SCALE`, a
/// positive integer, 1 when unset. For runs under tools that slow every CUDA call down
/// (`benches/device-sanitize.sh` sets 8 for compute-sanitizer), so that a timeout a test
/// provokes on purpose, or one that guards against a hang, still means what it says there.
/// Panics, naming the variable, on any other value: a typo must not run tests with limits
/// nobody chose.
pub fn time_scale() -> u32 {
    time_scale_from(std::env::var("CHORUS_TEST_TIME_SCALE"))
}

/// [`time_scale`] of the variable's value as `std::env::var` returns it.
fn time_scale_from(value: std::result::Result<String, std::env::VarError>) -> u32 {
    match value {
        Err(std::env::VarError::NotPresent) => 1,
        Ok(text) => match text.trim().parse::<u32>() {
            Ok(n) if n > 0 => n,
            _ => panic!("CHORUS_TEST_TIME_SCALE is a positive integer, not `{text}`"),
        },
        Err(e) => panic!("CHORUS_TEST_TIME_SCALE: {e}"),
    }
}

/// `limit` times [`time_scale`].
pub fn scaled(limit: std::time::Duration) -> std::time::Duration {
    limit * time_scale()
}

/// The nvcc Chorus finds ([`crate::find_nvcc`]) for a test of the compiler tier. Without one,
/// prints that `test` is skipped and returns `None`, unless `CI` is set (CI installs nvcc, so
/// the tier must run there): then it panics, naming `test` and where nvcc was looked for.
pub fn nvcc_or_skip(test: &str) -> Option<std::path::PathBuf> {
    let looked = match crate::require_nvcc_with(&crate::settings::settings()) {
        Ok(nvcc) => return Some(nvcc),
        Err(e) => e.to_string(),
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: CI is set but {looked}"
    );
    eprintln!("skipped {test}: {looked}");
    None
}

/// A host program that [`build_c_program`] compiled, in a private temporary folder that is
/// removed (with the program) when this is dropped.
#[derive(Debug)]
pub struct CProgram {
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl CProgram {
    /// The executable.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

/// Compiles the CUDA C program `source` (a benchmark's C baseline, `benches/baselines/*.cu`)
/// with the nvcc that Chorus finds ([`crate::find_nvcc`]), `-O3` and `options` (the
/// architecture, `-l` libraries), into a private temporary folder. The toolkit's library
/// folders beside nvcc (`lib64`, and `lib` as in NVIDIA's pip wheels) are searched at link
/// time and, outside Windows, recorded as rpaths: the program finds the toolkit's libraries
/// (cuBLAS, cuDNN) without `LD_LIBRARY_PATH`.
///
/// Errors: [`Error::NvccNotFound`](crate::Error::NvccNotFound); [`Error::Compile`](crate::Error::Compile)
/// with nvcc's output when it fails; [`Error::Io`](crate::Error::Io) when the folder cannot be
/// made or nvcc cannot be run.
pub fn build_c_program(source: &std::path::Path, options: &[&str]) -> Result<CProgram> {
    use crate::Error;
    let nvcc = crate::require_nvcc_with(&crate::settings::settings())?;
    let dir = tempfile::Builder::new()
        .prefix("chorus-c-program")
        .tempdir()
        .map_err(|e| Error::io("creating a temporary folder", e))?;
    // nvcc names the executable as told, adding `.exe` on Windows: the path says so too.
    let mut name = source
        .file_stem()
        .unwrap_or(std::ffi::OsStr::new("program"))
        .to_owned();
    name.push(std::env::consts::EXE_SUFFIX);
    let path = dir.path().join(name);
    let root = nvcc.parent().and_then(std::path::Path::parent);
    let library_dirs = ["lib64", "lib"]
        .into_iter()
        .filter_map(|name| root.map(|r| r.join(name)))
        .filter(|dir| dir.is_dir());
    let mut command = std::process::Command::new(&nvcc);
    command.arg("-O3");
    for dir in library_dirs {
        command.arg(format!("-L{}", dir.display()));
        if !cfg!(windows) {
            command.arg(format!("-Xlinker=-rpath={}", dir.display()));
        }
    }
    let out = command
        .args(options)
        .arg("-o")
        .arg(&path)
        .arg(source)
        .output()
        .map_err(|e| Error::io_path("running", &nvcc, e))?;
    if !out.status.success() {
        return Err(Error::Compile {
            compiler: nvcc.display().to_string(),
            name: source.display().to_string(),
            log: crate::nvcc::failure_log(&out),
            excerpt: String::new(),
        });
    }
    Ok(CProgram { path, _dir: dir })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::env::VarError;

    #[test]
    fn the_time_scale_is_one_unless_a_positive_integer_is_given() {
        assert_eq!(time_scale_from(Err(VarError::NotPresent)), 1);
        assert_eq!(time_scale_from(Ok(" 8 ".into())), 8);
        for bad in ["0", "-2", "1.5", "eight", ""] {
            let panic = std::panic::catch_unwind(|| time_scale_from(Ok(bad.into())))
                .expect_err(bad)
                .downcast::<String>()
                .unwrap();
            assert!(
                panic.contains("CHORUS_TEST_TIME_SCALE is a positive integer"),
                "{panic}"
            );
        }
    }
}
