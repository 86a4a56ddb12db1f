//! The CUDA driver layer of Chorus: the loader of libcuda (and of the toolkit's other
//! libraries), driver calls, devices and contexts, memory, streams, events, timers and graphs.
//!
//! It knows nothing of the kernel language, the compilers or the kernel manager: `chorus-cuda`
//! (NVRTC, nvcc, the cache, programs, launch) and the CUDA library bindings stand on it.
//!
//! Nothing here panics when the driver is missing: it is probed once, and every call that
//! needs it returns [`Error::SdkNotFound`]. [`sdk_not_found`] says whether it loaded.
//!
//! | module | what |
//! |---|---|
//! | [`sys`] | the raw driver API (cudarc's bindings; call [`ensure_driver`] first) |
//! | [`loader`] | probing libcuda and other CUDA libraries without panicking |
//! | [`toolkit`] | where a toolkit lives (`CUDA_PATH`, `CUDA_HOME`, `/usr/local/cuda*`, pip) |
//! | call | [`ensure_driver`], [`check`]: `CUresult` to [`Error`] with its name and message |
//! | context | [`with_cuda`], [`Context`], devices and their attributes |
//! | memory | [`MemoryBlock`], pinned and managed blocks, raw memory, memset, device copies |
//! | stream | [`Stream`], [`with_stream`], [`Event`], [`Timer`], [`Graph`] |
//! | texture | [`CudaArray`], [`TextureObject`], [`SurfaceObject`] and their descriptors |
//!
//! Messages (which library loaded from where) go through `tracing` under the target
//! `chorus_driver`, at `debug` level unless [`set_show_messages`] says `info`.

/// The raw CUDA driver API (cudarc's `sys` bindings, loaded at run time). Call
/// [`ensure_driver`] before calling into it: a binding called without a loaded driver panics.
pub use cudarc::driver::sys;

mod call;
mod context;
mod error;
pub mod loader;
mod memory;
mod messages;
mod stream;
mod texture;
pub mod toolkit;

pub use call::{check, driver_version, ensure_driver, error_text, sdk_not_found};
pub use context::{
    Context, DeviceInfo, ReleaseHook, compute_capability, current_compute_capability,
    current_context, device_attribute, device_count, device_name, device_total_memory, devices,
    memory_info, on_context_release, retain_primary_context, synchronize_context, with_cuda,
    with_primary_cuda,
};
pub use error::{Error, Result};
pub use loader::Probe;
pub use memory::{
    BlockKind, DeviceMemory, Direction, MemoryBlock, MemsetValue, PinnedMemory,
    memcpy_device_to_device, memcpy_device_to_device_2d, memset_device,
};
pub use messages::set_show_messages;
pub use stream::{Event, Graph, GraphExec, Stream, Timer, current_stream, with_stream};
pub use texture::{
    AddressMode, ArrayDesc, ChannelFormat, ChannelType, CudaArray, FilterMode, ReadMode,
    SurfaceObject, TextureDesc, TextureObject,
};
