//! The CUDA backend of Chorus, on the driver layer [`chorus_driver`]: NVRTC and nvcc, the
//! compiled-module cache, the kernel manager, programs, modules and kernel launch.
//!
//! The driver layer's API (contexts, memory blocks, streams, events, graphs) is re-exported
//! here, so that `chorus_cuda::MemoryBlock` and friends keep working; its functions return
//! [`DriverError`], which converts into this crate's [`Error`] variant for variant (`?` does
//! it).
//!
//! Nothing here panics when the driver, NVRTC or nvcc is missing: each is probed once, and
//! calls that need a missing one return [`Error::SdkNotFound`], [`Error::NvrtcNotFound`] or
//! [`Error::NvccNotFound`]. [`sdk_not_found`] says whether the driver loaded.
//!
//! | module | what |
//! |---|---|
//! | [`sys`] | the raw driver API (cudarc's bindings; call [`ensure_driver`] first) |
//! | [`driver`] | the driver layer: [`with_cuda`], [`Context`], [`MemoryBlock`], [`Stream`], … |
//! | [`compile`] | NVRTC and nvcc through the [`cache`]; PTX or cubin |
//! | nvrtc | [`nvrtc_compile`]; [`nvrtc_compile_relocatable`] for separate compilation (`-rdc`, `-dlto`) |
//! | module | [`Module`], [`Function`] (attributes, occupancy) |
//! | launch | [`launch`], [`launch_unchecked`], [`LaunchConfig`], [`KernelArg`] |
//! | [`testing`] | skipping (or failing) GPU tests where there is no GPU |
//! | program | [`Program`]: kernel text, IR or CUDA C → loaded module, typed globals |
//! | [`manager`] | the seed's kernel manager and its four states |

/// The driver layer this crate stands on.
pub use chorus_driver as driver;
/// The raw CUDA driver API (cudarc's `sys` bindings, loaded at run time). Call
/// [`ensure_driver`] before calling into it: a binding called without a loaded driver panics.
pub use chorus_driver::sys;

pub mod cache;
mod call;
pub mod compile;
mod diagnostics;
mod error;
mod frontend;
mod image;
mod launch;
pub mod manager;
mod module;
mod msvc;
mod nvcc;
mod nvrtc;
mod nvrtc_loader;
mod program;
mod settings;
mod state;
mod tempdir;
pub mod testing;

pub use chorus_driver::Error as DriverError;
pub use chorus_driver::{
    BlockKind, Context, DeviceInfo, DeviceMemory, Direction, Event, Graph, GraphExec, MemoryBlock,
    MemsetValue, PinnedMemory, Stream, Timer, compute_capability, current_compute_capability,
    current_device, current_stream, device_attribute, device_count, device_name,
    device_total_memory, devices, driver_version, ensure_driver, error_text,
    memcpy_device_to_device, memcpy_device_to_device_2d, memory_info, memset_device,
    reset_primary_context, retain_primary_context, sdk_not_found, synchronize_context, with_cuda,
    with_primary_cuda, with_stream,
};
/// Tensor maps for the TMA built-ins (`tma-load-2d` …), passed with [`KernelArg::tensor_map`]
/// (or `chorus::Arg::tensor_map`).
pub use chorus_driver::{
    Im2colBox, TensorDataType, TensorInterleave, TensorL2Promotion, TensorLayout, TensorMap,
    TensorOobFill, TensorSwizzle,
};
pub use compile::{
    CompiledImage, Compiler, ImageKind, compile_and_load, is_arch_specific, source_excerpt,
};
pub use error::{Error, Result};
pub use launch::{Dim3, KernelArg, LaunchConfig, check_arguments, launch, launch_unchecked};
pub use manager::{KernelManager, State, default_manager};
pub use module::{Function, Module, Signature};
pub use nvcc::{
    find_nvcc, find_nvcc_with, is_arch_option, nvcc_arch_option, nvcc_available, nvcc_compile,
    nvcc_compile_with, nvcc_search_description, nvcc_version, require_nvcc_with, with_arch_option,
    with_arch_option_for,
};
pub use nvrtc::{RelocatableOutput, nvrtc_compile, nvrtc_compile_relocatable, nvrtc_version};
pub use nvrtc_loader::nvrtc_available;
pub use program::Program;
pub use settings::{
    CompilerChoice, ImageChoice, Settings, set_settings, settings, update_settings,
};
