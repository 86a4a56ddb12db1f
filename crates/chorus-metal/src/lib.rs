//! Chorus's Metal backend.
//!
//! On every host: [`print_msl`] validates a checked module for a Metal target
//! ([`chorus_lang::target::Target::metal`]) and prints it as MSL with each kernel's argument
//! binding ([`KernelBinding`]); [`layout`] lays values out as MSL does (`float3` is 16 bytes);
//! [`cache`] keys programs as the CUDA backend does; [`GlobalsLayout`] is where the module's
//! globals lie in the structures the host keeps and binds after a kernel's arguments: the
//! `:constant` ones in bytes bound at each dispatch, the `:device` ones in a buffer per loaded
//! program that kernels write (MSL's program-scope variables are constants the host cannot
//! write). The conformance shim (`shim/msl_shim.h`, run
//! by `tests/msl_shim.rs`) compiles that MSL as C++ on Linux and runs it on the CPU.
//!
//! On Apple targets (`target_vendor = "apple"`): the runtime through `objc2-metal` —
//! [`Device`] (the system's GPU and a command queue), [`Buffer`] (shared storage, or private with
//! blits), [`Program`] (a library from MSL source, in memory per process and its pipelines'
//! binaries in a disk cache), dispatch with grid, threadgroup size and dynamic threadgroup
//! memory, and command-buffer errors as [`Error`]s; [`list_devices`] lists the GPUs.
//!
//! The seed's Metal API maps onto this crate and the `chorus` facade: `with-device` → the
//! Metal backend's device ([`Device::system_default`]; `chorus::with_backend(Backend::Metal, …)`),
//! `with-buffers` → memory blocks ([`Device::alloc`]; `chorus::MemoryBlock`), `buffer-aref` →
//! host indexing of a downloaded block (shared storage makes it a copy, no transfer), and
//! `compile-source` → [`Device::program_from_msl`], MSL text as an escape hatch like raw CUDA C.

pub mod cache;
mod error;
pub mod layout;
mod msl;

pub use error::{Error, Result};
pub use msl::{GlobalsLayout, KernelBinding, MslProgram, print_msl};

#[cfg(target_vendor = "apple")]
mod device;
#[cfg(target_vendor = "apple")]
pub use device::{Argument, Buffer, Device, DeviceInfo, Program, default_device, list_devices};
