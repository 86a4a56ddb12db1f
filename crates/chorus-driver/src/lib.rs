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
//! | [`search`] | what those searches read ([`search::SearchEnv`]): Unix and Windows conventions |
//! | call | [`ensure_driver`], [`check`]: `CUresult` to [`Error`] with its name and message |
//! | context | [`with_cuda`], [`Context`], devices and their attributes |
//! | memory | [`MemoryBlock`], pinned and managed blocks, raw memory, memset, device copies |
//! | stream | [`Stream`], [`with_stream`], [`Event`], [`Timer`], [`Graph`] |
//! | view | [`DeviceSlice`], [`DeviceSliceMut`]: typed device memory with a length, for libraries |
//! | link | [`Linker`]: separate compilation, relocatable inputs linked into one cubin |
//! | jitlink | [`JitLinker`]: nvJitLink, which links CUDA 12+ LTO-IR (`-dlto`) the driver cannot |
//! | vmm | [`VirtualRange`], [`PhysicalMemory`], [`Mapping`], [`GrowableBuffer`] |
//! | pool | [`MemoryPool`], [`StreamAllocation`]: stream-ordered allocation |
//! | tensor_map | [`TensorMap`]: tiled and im2col maps for Hopper's bulk tensor copies |
//! | green | [`GreenContext`], [`SmResource`]: SM partitions |
//! | ipc | [`IpcMemHandle`], [`IpcEventHandle`]: memory and events between processes |
//! | external | [`ExternalMemory`], [`ExternalSemaphore`]: imports from file descriptors (Unix) |
//! | checkpoint | [`lock_process`], [`checkpoint_process`], [`restore_process`], [`unlock_process`] |
//! | texture | [`CudaArray`], [`TextureObject`], [`SurfaceObject`]; the descriptors are `chorus-image`'s, re-exported |
//!
//! Features built on entry points newer than every supported driver's (green contexts,
//! checkpointing) answer [`Error::Unsupported`] on a driver without them.
//!
//! Messages (which library loaded from where) go through `tracing` under the target
//! `chorus_driver`, at `debug` level unless [`set_show_messages`] says `info`.

/// The raw CUDA driver API (cudarc's `sys` bindings, loaded at run time). Call
/// [`ensure_driver`] before calling into it: a binding called without a loaded driver panics.
pub use cudarc::driver::sys;

mod call;
mod checkpoint;
mod context;
mod entry;
mod error;
#[cfg(unix)]
mod external;
mod green;
mod ipc;
mod jitlink;
mod link;
pub mod loader;
mod memory;
mod messages;
mod pool;
pub mod search;
mod stream;
mod tensor_map;
mod texture;
pub mod toolkit;
mod view;
mod vmm;

pub use call::{check, driver_version, ensure_driver, error_text, sdk_not_found};
pub use context::{
    Context, DeviceInfo, ReleaseHook, compute_capability, current_compute_capability,
    current_context, current_device, device_attribute, device_count, device_name,
    device_total_memory, devices, memory_info, on_context_release, reset_primary_context,
    retain_primary_context, synchronize_context, with_cuda, with_primary_cuda,
};
pub use error::{Error, Result, is_sticky_code};
pub use loader::Probe;
pub use memory::{
    BlockKind, DeviceMemory, Direction, MemoryBlock, MemsetValue, PinnedMemory,
    memcpy_device_to_device, memcpy_device_to_device_2d, memset_device,
};
pub use messages::set_show_messages;
pub use stream::{Event, Graph, GraphExec, Stream, Timer, current_stream, with_stream};
pub use view::{AsDeviceSlice, AsDeviceSliceMut, DeviceSlice, DeviceSliceMut};

pub use checkpoint::{
    ProcessState, checkpoint_process, lock_process, process_state, restore_process,
    restore_thread_id, unlock_process,
};
#[cfg(unix)]
pub use external::{ExternalBuffer, ExternalMemory, ExternalSemaphore, SemaphoreFdKind};
pub use green::{GreenContext, SmResource};
pub use ipc::{IpcEventHandle, IpcMemHandle, IpcMemory};
pub use jitlink::{
    JitLinkOptions, JitLinked, JitLinker, jitlink_dirs_in, jitlink_file_names, jitlink_library,
    jitlink_version,
};
pub use link::{LinkInputKind, LinkOptions, LinkedImage, Linker};
pub use pool::{MemoryPool, PoolUsage, StreamAllocation};
pub use tensor_map::{
    Im2colBox, TensorDataType, TensorInterleave, TensorL2Promotion, TensorLayout, TensorMap,
    TensorOobFill, TensorSwizzle,
};
pub use texture::{
    AddressMode, ArrayDesc, ChannelFormat, ChannelType, CudaArray, FilterMode, ImageError,
    ReadMode, SurfaceObject, TextureDesc, TextureObject,
};
pub use vmm::{
    GrowableBuffer, Mapping, PhysicalMemory, Shareable, VirtualRange, allocation_granularity,
    round_up_to_granularity,
};
