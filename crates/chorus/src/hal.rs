//! The backend interface: what the facade asks of a backend (devices, memory, compiled
//! programs, streams, launches). Each backend implements it in its own file under `backends/`;
//! the rest of the facade sees only these traits, so adding a backend is its file, its module
//! line in `lib.rs`'s `mod backends`, its entry in `dispatch.rs`'s list of built backends and, for a
//! new kind of device, a `Backend` variant in `kind.rs`.

use crate::error::{Error, Result, Unavailable};
use crate::image::{ChannelFormat, ImageShape, TextureDesc};
use crate::kind::{Backend, CopyRoute, Device};
use crate::occupancy::Occupancy;
use chorus_cuda::Dim3;
use chorus_lang::ir::{Global, Module};
use chorus_lang::target::Target;
use chorus_lang::types::Type;
use std::any::Any;
use std::sync::Arc;

/// A backend built into this crate.
pub(crate) trait BackendImpl: Sync {
    /// Which backend it is.
    fn backend(&self) -> Backend;
    /// How many devices it has, or why it cannot run kernels here. Called once per process.
    fn probe(&self) -> std::result::Result<usize, Unavailable>;
    /// The ordinal of the device used when nothing names one (for CUDA, `CHORUS_DEVICE`), or
    /// the variable that names none.
    fn default_index(&self) -> std::result::Result<usize, BadVariable>;
    /// A name and a one-line description of device `index` (which exists).
    fn describe(&self, index: usize) -> Result<(String, String)>;
    /// Starts device `index` (which exists). Called once per device and process.
    fn open(&self, index: usize) -> std::result::Result<Box<dyn DeviceImpl>, Unavailable>;
}

/// An environment variable whose value names nothing (reported as `Error::BadSelection`).
#[derive(Clone, Debug)]
pub(crate) struct BadVariable {
    pub(crate) variable: &'static str,
    pub(crate) value: String,
    pub(crate) expected: &'static str,
}

impl From<BadVariable> for Error {
    fn from(bad: BadVariable) -> Error {
        Error::BadSelection {
            variable: bad.variable,
            value: bad.value,
            expected: bad.expected,
        }
    }
}

/// One started device.
pub(crate) trait DeviceImpl: Send + Sync {
    /// What the device runs: its capabilities, limits and the host layouts of kernel values
    /// (arguments are checked against these layouts).
    fn target(&self) -> &Target;
    /// `bytes` bytes of device memory, contents unspecified.
    fn alloc(&self, bytes: usize) -> Result<Box<dyn MemoryImpl>>;
    /// `module` compiled and loaded on this device (`name` names it in compiler messages).
    fn compile(&self, module: &Arc<Module>, name: &str) -> Result<Box<dyn CompiledImpl>>;
    /// A new stream on this device.
    fn stream(&self) -> Result<Box<dyn StreamImpl>>;
    /// Waits for everything queued on the device.
    fn synchronize(&self) -> Result<()>;
    /// Recreates the device's state after a fault left it unusable (see
    /// [`crate::Device::reset`]); objects made on it before are gone.
    fn reset(&self) -> Result<()>;
    /// An array of `extent` elements of `format` (`[w, 0, 0]` 1-D, `[w, h, 0]` 2-D), which
    /// surfaces may also use when `surface`. Backends without textures keep this default.
    fn alloc_array(
        &self,
        format: ChannelFormat,
        extent: [usize; 3],
        surface: bool,
    ) -> Result<Box<dyn ArrayImpl>> {
        let _ = (format, extent, surface);
        Err(no_textures(self.target()))
    }
    /// A texture object reading `source` as `shape` of `format` (checked by the facade against
    /// `desc` and the source's size).
    fn texture(
        &self,
        source: ImageSource<'_>,
        shape: ImageShape,
        format: ChannelFormat,
        desc: &TextureDesc,
    ) -> Result<Box<dyn TextureImpl>> {
        let _ = (source, shape, format, desc);
        Err(no_textures(self.target()))
    }
    /// A surface object over `array` (made for surfaces, of `format` and `extent`).
    fn surface(
        &self,
        array: &dyn ArrayImpl,
        format: ChannelFormat,
        extent: [usize; 3],
    ) -> Result<Box<dyn TextureImpl>> {
        let _ = (array, format, extent);
        Err(no_textures(self.target()))
    }
}

/// The error of a texture call on a backend without textures.
fn no_textures(target: &Target) -> Error {
    Error::Texture {
        reason: format!("the {target} has no texture or surface objects"),
    }
}

/// An array for textures and surfaces on one device.
pub(crate) trait ArrayImpl: Send + Sync + std::fmt::Debug {
    /// Copies `src` (the array's size, rows packed) into the array.
    fn upload(&mut self, src: &[u8]) -> Result<()>;
    /// Copies the array into `dst` (its size, rows packed).
    fn download(&self, dst: &mut [u8]) -> Result<()>;
    /// The array as the backend's own type.
    fn as_any(&self) -> &dyn Any;
}

/// A texture or surface object on one device.
pub(crate) trait TextureImpl: Send + Sync + std::fmt::Debug {
    /// The object as the backend's own type.
    fn as_any(&self) -> &dyn Any;
}

/// What a texture reads.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ImageSource<'a> {
    /// An array.
    Array(&'a dyn ArrayImpl),
    /// Device memory (linear or pitched).
    Memory(&'a dyn MemoryImpl),
}

/// Device memory of one device.
pub(crate) trait MemoryImpl: Send + Sync + std::fmt::Debug {
    /// Copies `src` to the start of the memory.
    fn upload(&mut self, src: &[u8]) -> Result<()>;
    /// Copies the start of the memory into `dst`.
    fn download(&self, dst: &mut [u8]) -> Result<()>;
    /// The device address, on backends that have them.
    fn address(&self) -> Option<u64>;
    /// The memory as the backend's own type.
    fn as_any(&self) -> &dyn Any;
    /// Copies the first `bytes` bytes of this memory to the start of `dst` without the host,
    /// where this backend can (`dst` of the same backend, on this device or a peer): how, or
    /// `None` when it cannot, and the facade copies through the host. Backends without a
    /// direct path keep this default.
    fn copy_to(&self, dst: &mut dyn MemoryImpl, bytes: usize) -> Result<Option<CopyRoute>> {
        let _ = (dst, bytes);
        Ok(None)
    }
}

/// A stream of one device.
pub(crate) trait StreamImpl: Send + Sync + std::fmt::Debug {
    /// Waits until everything queued on it has finished.
    fn synchronize(&self) -> Result<()>;
    /// Makes the work queued on it from now on wait until everything queued on `other` (a
    /// stream of the same backend, of any of its devices) so far has finished, without
    /// waiting on the host.
    fn wait_for(&self, other: &dyn StreamImpl) -> Result<()>;
    /// The stream as the backend's own type.
    fn as_any(&self) -> &dyn Any;
}

/// A program compiled and loaded on one device.
pub(crate) trait CompiledImpl: Send + Sync {
    /// Launches the kernel at `kernel` of the module's functions.
    fn launch(
        &self,
        kernel: usize,
        args: CheckedArgs<'_, '_>,
        launch: &LaunchShape<'_>,
    ) -> Result<()>;
    /// How many blocks (and clusters) of `launch`'s shape the device runs at once; `None` where
    /// the backend cannot say.
    fn occupancy(&self, _kernel: usize, _launch: &LaunchShape<'_>) -> Result<Option<Occupancy>> {
        Ok(None)
    }
    /// Reads `global`'s bytes into `dst` (its size).
    fn read_global(&self, global: &Global, dst: &mut [u8]) -> Result<()>;
    /// Writes `src` (its size) to `global`.
    fn write_global(&self, global: &Global, src: &[u8]) -> Result<()>;
}

/// Memory on a device: the handle the facade keeps, with the device it is on.
#[derive(Debug)]
pub(crate) struct DeviceMemory {
    pub(crate) device: Device,
    pub(crate) memory: Box<dyn MemoryImpl>,
}

/// A stream on a device, with the device it is on.
#[derive(Debug)]
pub(crate) struct DeviceStream {
    pub(crate) device: Device,
    pub(crate) stream: Box<dyn StreamImpl>,
}

/// A checked launch's grid, block, dynamic shared memory and stream.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaunchShape<'a> {
    pub(crate) grid: Dim3,
    pub(crate) block: Dim3,
    pub(crate) shared_mem: u32,
    pub(crate) stream: Option<&'a dyn StreamImpl>,
    /// Blocks per thread-block cluster; only the CUDA backend receives one.
    pub(crate) cluster: Option<Dim3>,
    /// Where the launch was called from, so that a fault can name it.
    pub(crate) site: &'static std::panic::Location<'static>,
}

/// One kernel argument as a backend receives it.
#[derive(Debug)]
pub(crate) enum ArgRef<'a> {
    /// A value passed by copy: its kernel type and its bytes.
    Value { ty: Type, bytes: ValueBytes },
    /// Device memory, of elements of `element`.
    Memory {
        memory: &'a DeviceMemory,
        element: Type,
    },
    /// A raw device address of elements of `element`.
    Address { address: u64, element: Type },
    /// A texture object (`surface` false) or a surface object (true) of `device`.
    Texture {
        object: &'a dyn TextureImpl,
        device: Device,
        surface: bool,
    },
}

/// Arguments checked against one kernel's parameters and one device (count, types, value
/// sizes, devices): what a backend may pass to the kernel as they are. Only the facade's check
/// (`args.rs`) makes them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CheckedArgs<'s, 'a>(&'s [ArgRef<'a>]);

impl<'s, 'a> CheckedArgs<'s, 'a> {
    /// Marks `args` as checked.
    ///
    /// # Safety
    ///
    /// `args` must match the parameters of the kernel they will be launched with, in number,
    /// type and (for values) size in the kernel's module, and every memory argument must be
    /// on the device the launch runs on: backends pass them to the kernel as they are.
    pub(crate) unsafe fn new_unchecked(args: &'s [ArgRef<'a>]) -> CheckedArgs<'s, 'a> {
        CheckedArgs(args)
    }

    /// The arguments.
    pub(crate) fn get(self) -> &'s [ArgRef<'a>] {
        self.0
    }
}

/// The bytes of a value argument: inline for the values kernels take nearly always (scalars,
/// vectors, small structures), so that making an argument allocates nothing; on the heap past
/// that.
#[derive(Debug)]
pub(crate) enum ValueBytes {
    Inline {
        len: u8,
        bytes: [u8; ValueBytes::INLINE],
    },
    Heap(Box<[u8]>),
}

impl ValueBytes {
    /// The most bytes kept inline (a `double4` is 32).
    pub(crate) const INLINE: usize = 32;

    pub(crate) fn new(value: &[u8]) -> ValueBytes {
        if value.len() <= ValueBytes::INLINE {
            let mut bytes = [0; ValueBytes::INLINE];
            bytes[..value.len()].copy_from_slice(value);
            ValueBytes::Inline {
                len: value.len() as u8,
                bytes,
            }
        } else {
            ValueBytes::Heap(value.into())
        }
    }
}

impl std::ops::Deref for ValueBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            ValueBytes::Inline { len, bytes } => &bytes[..usize::from(*len)],
            ValueBytes::Heap(bytes) => bytes,
        }
    }
}
