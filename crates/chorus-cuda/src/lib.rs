//! The CUDA backend of Chorus: the driver API (loaded at run time), contexts, memory blocks,
//! NVRTC and nvcc, the compiled-module cache, the kernel manager and kernel launch.
//!
//! Nothing here panics when the driver, NVRTC or nvcc is missing: each is probed once, and
//! calls that need a missing one return [`Error::SdkNotFound`], [`Error::NvrtcNotFound`] or
//! [`Error::NvccNotFound`]. [`sdk_not_found`] says whether the driver loaded.
//!
//! | module | what |
//! |---|---|
//! | [`sys`] | the raw driver API (cudarc's bindings; call [`ensure_driver`] first) |
//! | context | [`with_cuda`], [`Context`], devices and their attributes |
//! | memory | [`MemoryBlock`], pinned and managed blocks, raw memory, memset, device copies |
//! | stream | [`Stream`], [`with_stream`], [`Event`], [`Timer`], [`Graph`] |
//! | [`compile`] | NVRTC and nvcc through the [`cache`]; PTX or cubin |
//! | module | [`Module`], [`Function`] (attributes, occupancy) |
//! | launch | [`launch`], [`launch_unchecked`], [`LaunchConfig`], [`KernelArg`] |
//! | [`testing`] | skipping (or failing) GPU tests where there is no GPU |
//! | program | [`Program`]: kernel text, IR or CUDA C → loaded module, typed globals |
//! | [`manager`] | the seed's kernel manager and its four states |

#![warn(missing_docs)]

/// The raw CUDA driver API (cudarc's `sys` bindings, loaded at run time). Call
/// [`ensure_driver`] before calling into it: a binding called without a loaded driver panics.
pub use cudarc::driver::sys;

pub mod cache;
pub mod compile;
mod context;
mod driver;
mod error;
mod frontend;
mod launch;
mod loader;
pub mod manager;
mod memory;
mod module;
mod nvcc;
mod nvrtc;
mod program;
mod settings;
mod stream;
mod tempdir;
pub mod testing;

pub use compile::{CompiledImage, Compiler, ImageKind, compile_and_load, source_excerpt};
pub use context::{
    Context, DeviceInfo, compute_capability, current_compute_capability, device_attribute,
    device_count, device_name, device_total_memory, devices, memory_info, retain_primary_context,
    synchronize_context, with_cuda, with_primary_cuda,
};
pub use driver::{driver_version, ensure_driver, error_text, nvrtc_available, sdk_not_found};
pub use error::{Error, Result};
pub use launch::{Dim3, KernelArg, LaunchConfig, check_arguments, launch, launch_unchecked};
pub use manager::{KernelManager, State, default_manager};
pub use memory::{
    BlockKind, DeviceMemory, Direction, MemoryBlock, MemsetValue, PinnedMemory,
    memcpy_device_to_device, memcpy_device_to_device_2d, memset_device,
};
pub use module::{Function, Module, Signature};
pub use nvcc::{
    find_nvcc, find_nvcc_with, is_arch_option, nvcc_arch_option, nvcc_available, nvcc_compile,
    nvcc_compile_with, nvcc_version, with_arch_option,
};
pub use nvrtc::{nvrtc_compile, nvrtc_version};
pub use program::Program;
pub use settings::{
    CompilerChoice, ImageChoice, Settings, set_settings, settings, update_settings,
};
pub use stream::{Event, Graph, GraphExec, Stream, Timer, current_stream, with_stream};
