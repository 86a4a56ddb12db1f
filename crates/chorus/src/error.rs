//! The facade's error type: each variant carries what went wrong as data (backend, device,
//! kernel, argument, types) and the backend's own error as its source.

use crate::kind::{Backend, Device};
use chorus_cuda::Dim3;
use chorus_lang::types::Type;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// Everything that can go wrong in Chorus, whichever backend runs the kernels.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error in kernel source (reader, macro expander, checker), displayed as
    /// `FILE:LINE:COL: message`.
    #[error(transparent)]
    Lang(#[from] chorus_lang::Error),
    /// The CUDA driver library could not be loaded (cl-cuda's `sdk-not-found-error`): what an
    /// allocation or launch on the CUDA backend returns on a machine without the driver.
    #[error("CUDA driver not found: {reason}")]
    SdkNotFound {
        /// What the loader tried.
        reason: String,
    },
    /// An environment variable (`CHORUS_BACKEND`, `CHORUS_DEVICE`) holds a value that names no
    /// backend or device.
    #[error("{variable}={value} names no {expected}")]
    BadSelection {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
        /// What it should name (`backend (cuda, cpu, metal or hip)`, `device ordinal`).
        expected: &'static str,
    },
    /// The backend asked for cannot run kernels here.
    #[error("the {backend} backend is not available: {reason}")]
    BackendUnavailable {
        /// The backend asked for.
        backend: Backend,
        /// Why it is not available.
        reason: Unavailable,
    },
    /// The device asked for cannot run kernels (it does not exist, or it failed to start).
    #[error("{backend} device {index} is not available: {reason}", backend = .device.backend(), index = .device.index())]
    DeviceUnavailable {
        /// The device asked for.
        device: Device,
        /// Why not.
        reason: Unavailable,
    },
    /// An error of the CUDA backend (driver call, compiler, out of memory).
    #[error("CUDA{}: {source}", on_device(*.device))]
    Cuda {
        /// The device the operation ran on, where one was involved.
        device: Option<Device>,
        /// The CUDA backend's error.
        source: chorus_cuda::Error,
    },
    /// An error of the HIP backend (runtime call, hipRTC, out of memory).
    #[error("HIP{}: {source}", on_device(*.device))]
    Hip {
        /// The device the operation ran on, where one was involved.
        device: Option<Device>,
        /// The HIP backend's error.
        source: chorus_hip::Error,
    },
    /// A texture, surface or array the backend cannot make: an invalid descriptor (an address
    /// mode that needs normalized coordinates, linear filtering of integers, …), a shape that
    /// does not fit its memory, or a backend without textures.
    #[error("texture or surface: {reason}")]
    Texture {
        /// What is wrong.
        reason: String,
    },
    /// An error of the CPU executor.
    #[error("CPU executor: {source}")]
    Cpu {
        /// The executor's error.
        #[from]
        source: chorus_cpu::Error,
    },
    /// An error of the Metal backend (Apple targets only).
    #[cfg(target_vendor = "apple")]
    #[error("Metal: {source}")]
    Metal {
        /// The backend's error (boxed: it is large, and every `Result` of the facade carries
        /// this enum).
        #[from]
        source: Box<chorus_metal::Error>,
    },
    /// The program has no kernel of that name.
    #[error("{file}: no kernel named `{name}` (kernels: {})", list(.known))]
    NoSuchKernel {
        /// The name asked for.
        name: String,
        /// The program's file.
        file: String,
        /// The kernels it has.
        known: Vec<String>,
    },
    /// The program has no global of that name.
    #[error("{file}: no global named `{name}` (globals: {})", list(.known))]
    NoSuchGlobal {
        /// The name asked for.
        name: String,
        /// The program's file.
        file: String,
        /// The globals it has.
        known: Vec<String>,
    },
    /// A launch with more or fewer arguments than the kernel has parameters.
    #[error("kernel `{kernel}` takes {expected} arguments, got {found}")]
    ArgumentCount {
        /// The kernel (its kernel-language name).
        kernel: String,
        /// Its number of parameters.
        expected: usize,
        /// The number of arguments given.
        found: usize,
    },
    /// An argument whose type does not fit its parameter (a value of another type, memory of
    /// another element type, a value for a pointer).
    #[error(
        "argument {index} (`{parameter}`) of kernel `{kernel}`: expected {expected}, got {found}"
    )]
    ArgumentType {
        /// The kernel.
        kernel: String,
        /// The argument's position, from 1.
        index: usize,
        /// The parameter's name.
        parameter: String,
        /// The parameter's type.
        expected: Type,
        /// What was given.
        found: ArgumentKind,
    },
    /// A value argument whose bytes are not its type's size in the program.
    #[error(
        "argument {index} (`{parameter}`) of kernel `{kernel}`: a {ty} value of {found} bytes, but {ty} has {expected} bytes in this program"
    )]
    ArgumentSize {
        /// The kernel.
        kernel: String,
        /// The argument's position, from 1.
        index: usize,
        /// The parameter's name.
        parameter: String,
        /// The value's type.
        ty: Type,
        /// The type's size in the program.
        expected: usize,
        /// The bytes given.
        found: usize,
    },
    /// Memory of one device passed to a launch on another.
    #[error(
        "argument {index} (`{parameter}`) of kernel `{kernel}`: memory on {argument_device}, but the launch runs on {launch_device}",
        argument_device = DeviceName(*.argument_device),
        launch_device = DeviceName(*.launch_device)
    )]
    ArgumentDevice {
        /// The kernel.
        kernel: String,
        /// The argument's position, from 1.
        index: usize,
        /// The parameter's name.
        parameter: String,
        /// The device the memory is on.
        argument_device: Device,
        /// The device the launch runs on.
        launch_device: Device,
    },
    /// A raw device address passed to a backend without device addresses.
    #[error(
        "argument {index} (`{parameter}`) of kernel `{kernel}`: a device address, which only the CUDA backend can pass (the launch runs on the {backend} backend)"
    )]
    AddressUnsupported {
        /// The kernel.
        kernel: String,
        /// The argument's position, from 1.
        index: usize,
        /// The parameter's name.
        parameter: String,
        /// The backend of the launch.
        backend: Backend,
    },
    /// A launch whose stream belongs to another device than the one it runs on.
    #[error(
        "a stream on {stream_device} cannot run a launch on {launch_device}",
        stream_device = DeviceName(*.stream_device),
        launch_device = DeviceName(*.launch_device)
    )]
    StreamDevice {
        /// The stream's device.
        stream_device: Device,
        /// The device the launch runs on.
        launch_device: Device,
    },
    /// A backend object (memory, stream) that reached another backend's code: a facade bug,
    /// reported rather than trusted.
    #[error("an object of another backend reached the {backend} backend's {what}")]
    ForeignObject {
        /// The backend that received it.
        backend: Backend,
        /// What it was (`stream`, `memory argument`).
        what: &'static str,
    },
    /// A kernel faulted on the device (an illegal or misaligned address, a trap): the error
    /// the driver reported (CUDA's "sticky" errors, at the launch, a synchronisation or the
    /// next call), with the kernel launched last on the device or stream where it surfaced.
    /// CUDA leaves the device's context unusable: every later call on the device is
    /// [`Error::ContextPoisoned`] until [`Device::reset`] recreates it.
    #[error(
        "kernel `{kernel}` (launched at {launched_at}) faulted on {device}: {code}; the \
         device's context is unusable until Device::reset",
        device = DeviceName(*.device),
        code = driver_error_name(.source)
    )]
    KernelFault {
        /// The device.
        device: Device,
        /// The kernel launched last before the fault surfaced (its kernel-language name), or a
        /// description when it is not known.
        kernel: String,
        /// Where it was launched (`src/main.rs:12:5`).
        launched_at: String,
        /// The driver's error (`CUDA_ERROR_ILLEGAL_ADDRESS`), boxed: faults are rare and the
        /// other variants small.
        source: Box<chorus_cuda::Error>,
    },
    /// A call on a device whose context a kernel's fault left unusable (see
    /// [`Error::KernelFault`]); [`Device::reset`] recreates the context.
    #[error(
        "{device} is unusable since {fault}; call Device::reset to recreate its context (its \
         memory, programs and streams are lost)",
        device = DeviceName(*.device)
    )]
    ContextPoisoned {
        /// The device.
        device: Device,
        /// What happened (`kernel `foo` (launched at …) faulted: CUDA_ERROR_ILLEGAL_ADDRESS`).
        fault: String,
    },
    /// A reset could not recreate the device's context: the driver keeps the fault for the
    /// whole process (CUDA does so for illegal-address faults), and only a new process can use
    /// the device again.
    #[error(
        "{device} cannot be used again in this process: the driver keeps its fault for the whole \
         process ({fault}); restart the process to use it",
        device = DeviceName(*.device)
    )]
    ProcessPoisoned {
        /// The device.
        device: Device,
        /// The driver's answer to the new context.
        fault: String,
    },
    /// Memory, a stream or a compiled program used after its device was reset: it went with
    /// the old context.
    #[error(
        "this {what} was made on {device} before the device was reset, and went with its old \
         context",
        device = DeviceName(*.device)
    )]
    DeviceWasReset {
        /// The device.
        device: Device,
        /// `memory block`, `stream`.
        what: &'static str,
    },
    /// A global read or written with a Rust type that is not its kernel type.
    #[error("global `{name}` is {expected}, not {found} (the Rust type {rust_type})")]
    GlobalType {
        /// The global.
        name: String,
        /// Its kernel type.
        expected: Type,
        /// The kernel type of the Rust type used.
        found: Type,
        /// The Rust type used.
        rust_type: &'static str,
    },
    /// A grid or block extent that is not between 1 and `u32::MAX`.
    #[error("invalid launch: {dimension}: {source}")]
    InvalidExtent {
        /// `grid`, `block` or `cluster`.
        dimension: &'static str,
        /// The extent given.
        source: BadExtent,
    },
    /// A cluster whose extents do not divide the grid's.
    #[error(
        "invalid launch: the grid ({}, {}, {}) is not a whole number of clusters ({}, {}, {})",
        .grid.x, .grid.y, .grid.z, .cluster.x, .cluster.y, .cluster.z
    )]
    ClusterShape {
        /// The grid.
        grid: Dim3,
        /// The cluster.
        cluster: Dim3,
    },
    /// An occupancy query on a backend that cannot answer it.
    #[error("the {backend} backend does not report occupancy (CUDA does)")]
    OccupancyUnsupported {
        /// The backend.
        backend: Backend,
    },
    /// A launch in clusters of more than one block on a backend without them.
    #[error(
        "the {backend} backend does not launch thread-block clusters (CUDA does, on compute \
         capability 9.0 and newer)"
    )]
    ClustersUnsupported {
        /// The backend.
        backend: Backend,
    },
    /// A grid, block or cluster with an extent of 0.
    #[error("invalid launch: {dimension} ({}, {}, {}) has an extent of 0", .extents.x, .extents.y, .extents.z)]
    ZeroExtent {
        /// `grid`, `block` or `cluster`.
        dimension: &'static str,
        /// Its extents.
        extents: Dim3,
    },
    /// A file could not be read.
    #[error("reading {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A memory block of no elements.
    #[error("memory block: a memory block of {element} needs at least one element")]
    EmptyMemoryBlock {
        /// The element type.
        element: Type,
    },
    /// A memory block whose size in bytes overflows the address space.
    #[error("memory block: {len} elements of {element} overflow the address space")]
    MemoryBlockTooLarge {
        /// The element type.
        element: Type,
        /// The elements asked for.
        len: usize,
    },
    /// A memory block's elements could not be laid out again between the host's layout (C's)
    /// and its device's (Metal's, where `float3` is 16 bytes).
    #[error("memory block of {element} on {device}: the element has no layout there to convert to")]
    Layout {
        /// The element type.
        element: Type,
        /// The block's device.
        device: Device,
    },
    /// A copy between memory blocks of different lengths.
    #[error("memory block copy: the source holds {src} elements, the destination {dst}")]
    CopyLength {
        /// The source's length.
        src: usize,
        /// The destination's length.
        dst: usize,
    },
    /// The host copy of a memory block could not be allocated.
    #[error("memory block: cannot allocate {bytes} bytes of host memory: {source}")]
    HostMemory {
        /// The bytes asked for.
        bytes: usize,
        /// The allocator's error.
        source: std::collections::TryReserveError,
    },
}

impl From<chorus_cuda::DriverError> for Error {
    fn from(error: chorus_cuda::DriverError) -> Error {
        chorus_cuda::Error::from(error).into()
    }
}

impl From<chorus_cuda::Error> for Error {
    fn from(error: chorus_cuda::Error) -> Error {
        match error {
            chorus_cuda::Error::SdkNotFound { reason } => Error::SdkNotFound { reason },
            source => Error::Cuda {
                device: None,
                source,
            },
        }
    }
}

/// Why a backend or a device cannot run kernels.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Unavailable {
    /// This build of Chorus does not contain the backend.
    #[error("this build of Chorus has no such backend")]
    NotBuilt,
    /// The backend's driver library did not load.
    #[error("the driver did not load: {reason}")]
    NoDriver {
        /// What the loader tried.
        reason: String,
    },
    /// The driver loads but reports no device.
    #[error("the driver loads but reports no device")]
    NoDevices,
    /// A device ordinal past the backend's devices.
    #[error("there is no device {index} (the backend has {count})")]
    NoSuchDevice {
        /// The ordinal asked for.
        index: usize,
        /// How many devices the backend has.
        count: usize,
    },
    /// An environment variable that configures the backend holds a value it cannot use.
    #[error("{variable}={value} is not {}", expected_value(variable))]
    BadVariable {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// A driver call failed while the backend or device started.
    #[error("{0}")]
    Driver(Arc<chorus_cuda::Error>),
    /// A HIP runtime call failed while the backend or device started.
    #[error("{0}")]
    Hip(Arc<chorus_hip::Error>),
}

/// What a kernel argument is, as errors report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgumentKind {
    /// A value of this type.
    Value(Type),
    /// A memory block of this element type.
    Memory(Type),
    /// A raw device address of this element type.
    Address(Type),
    /// A texture object.
    Texture,
    /// A surface object.
    Surface,
}

impl fmt::Display for ArgumentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgumentKind::Value(ty) => write!(f, "a {ty} value"),
            ArgumentKind::Memory(element) => write!(f, "a memory block of {element}"),
            ArgumentKind::Address(element) => write!(f, "a device address of {element}"),
            ArgumentKind::Texture => write!(f, "a texture"),
            ArgumentKind::Surface => write!(f, "a surface"),
        }
    }
}

/// A launch extent that does not fit in `1..=u32::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0} is not an extent (1 to {max})", max = u32::MAX)]
pub struct BadExtent(pub i128);

/// `Device` as errors name it (`CUDA device 1`); its full description needs the backend.
struct DeviceName(Device);

impl fmt::Display for DeviceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} device {}", self.0.backend(), self.0.index())
    }
}

/// The driver's name of a CUDA error (`CUDA_ERROR_ILLEGAL_ADDRESS`), or its text.
fn driver_error_name(error: &chorus_cuda::Error) -> String {
    match error {
        chorus_cuda::Error::Driver { name, .. } => name.clone(),
        other => other.to_string(),
    }
}

fn on_device(device: Option<Device>) -> String {
    device.map_or_else(String::new, |d| format!(" ({})", DeviceName(d)))
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// The facade's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a backend's configuration variable accepts, for [`Unavailable::BadVariable`].
fn expected_value(variable: &str) -> &'static str {
    match variable {
        "CHORUS_CPU_WARP" => "a warp width of the CPU executor (32 or 64)",
        _ => "a number of devices (at least 1)",
    }
}
