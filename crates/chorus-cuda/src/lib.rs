//! The CUDA backend of Chorus.
//!
//! * Toolkit discovery and nvcc: [`find_nvcc`], [`nvcc_available`], [`nvcc_arch_option`],
//!   [`is_arch_option`], [`nvcc_compile`].
//! * Settings ([`Settings`], `CHORUS_*` environment variables).
//! * One error type, [`Error`].

pub mod compile;
mod error;
pub mod manager;
mod nvcc;
mod settings;
mod tempdir;

pub use compile::{ImageKind, source_excerpt};
pub use error::{Error, Result};
pub use nvcc::{
    find_nvcc, find_nvcc_with, is_arch_option, nvcc_arch_option, nvcc_available, nvcc_compile,
    nvcc_compile_with, nvcc_version, with_arch_option,
};
pub use settings::{CompilerChoice, Settings, set_settings, settings, update_settings};
