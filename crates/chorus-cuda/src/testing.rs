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
