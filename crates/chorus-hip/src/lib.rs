//! Chorus's HIP back end for AMD GPUs.
//!
//! The HIP runtime (`libamdhip64`) and hipRTC are loaded at run time ([`loader`]: the system
//! loader, `ROCM_PATH`, `/opt/rocm*`), probed first: without ROCm every entry point returns
//! [`Error::HipNotFound`], never a panic. Devices report their `gcnArchName`, wavefront size and
//! memory ([`Device`], [`DeviceProperties`]); a module is validated for the device's
//! [`Target`](chorus_lang::target::Target) (`Target::hip(arch)`: 64-lane waves on CDNA, 32 on
//! RDNA), printed by chorus-lang's HIP dialect, compiled by hipRTC for the device's
//! architecture through a memory and disk cache ([`cache`]), loaded, and launched with a grid,
//! a block, dynamic shared memory and a stream ([`Program`]). [`hipcc_compile`] compiles ahead
//! of time with hipcc (the compiler tier's path).
//!
//! `hip_on_cuda/` holds the header that maps the HIP names the dialect prints onto CUDA, so the
//! same HIP source also compiles with nvcc and runs on NVIDIA GPUs (tests/hip_on_cuda_gpu.rs).

pub mod cache;
mod compile;
mod error;
pub mod loader;
mod program;
mod runtime;
pub mod sys;

pub use compile::{find_hipcc, hipcc_compile, hiprtc_compile, hiprtc_options, hiprtc_version};
pub use error::{Error, Result};
pub use loader::{hip_available, hip_library};
pub use program::{KernelArg, Program};
pub use runtime::{
    Device, DeviceMemory, DeviceProperties, Event, Function, LaunchConfig, Module, Stream,
    device_count, gcn_arch_name_in, launch, processor_name,
};

/// The HIP-on-CUDA header (`hip_on_cuda/hip/hip_runtime.h`): the HIP names chorus-lang's HIP
/// dialect prints, mapped onto CUDA.
pub const HIP_ON_CUDA_RUNTIME_H: &str = include_str!("../hip_on_cuda/hip/hip_runtime.h");

/// The HIP-on-CUDA `hip/hip_fp16.h`.
pub const HIP_ON_CUDA_FP16_H: &str = include_str!("../hip_on_cuda/hip/hip_fp16.h");

/// Writes the HIP-on-CUDA headers under `dir` (`dir/hip/hip_runtime.h`, `dir/hip/hip_fp16.h`),
/// so that `nvcc -I dir` or NVRTC with `-I dir` compiles HIP source printed by chorus-lang.
pub fn write_hip_on_cuda_headers(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("hip"))?;
    std::fs::write(dir.join("hip/hip_runtime.h"), HIP_ON_CUDA_RUNTIME_H)?;
    std::fs::write(dir.join("hip/hip_fp16.h"), HIP_ON_CUDA_FP16_H)
}
