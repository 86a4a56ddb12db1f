//! The process-wide settings read from the environment: one invalid `CHORUS_*` value does not
//! reset the others. One test in its own binary, because the environment is read once per
//! process.

use chorus_cuda::{CompilerChoice, ImageChoice};
use std::path::PathBuf;

#[test]
fn an_invalid_variable_keeps_the_other_settings() {
    // SAFETY: the only test of this binary, run before anything reads the environment, so no
    // other thread reads or writes it concurrently.
    unsafe {
        std::env::set_var("CHORUS_IMAGE", "cubn");
        std::env::set_var("CHORUS_NVCC", "/opt/cuda-for-this-test/bin/nvcc");
        std::env::set_var("CHORUS_COMPILER", "nvcc");
        std::env::set_var("CHORUS_NVCC_OPTIONS", "-lineinfo");
    }
    let settings = chorus_cuda::settings();
    assert_eq!(
        settings.nvcc_binary,
        Some(PathBuf::from("/opt/cuda-for-this-test/bin/nvcc"))
    );
    assert_eq!(settings.compiler, CompilerChoice::Nvcc);
    assert_eq!(settings.nvcc_options, ["-lineinfo"]);
    assert_eq!(settings.image, ImageChoice::Auto);
    let e = chorus_cuda::Settings::from_env().unwrap_err().to_string();
    assert!(
        e.contains("CHORUS_IMAGE=\"cubn\"") && e.contains("auto, ptx or cubin"),
        "{e}"
    );
}
