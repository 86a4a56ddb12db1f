//! CUDA as a backend: each device through its primary context (one per device, retained for the
//! process), memory, programs and streams made in it, launches through `cuLaunchKernel`.

use super::cuda_context::{device_error, enter};
use super::cuda_texture;
use crate::TextureDesc;
use crate::error::{Error, Result, Unavailable};
use crate::hal::{
    ArgRef, ArrayImpl, BackendImpl, BadVariable, CheckedArgs, CompiledImpl, DeviceImpl,
    ImageSource, LaunchShape, MemoryImpl, StreamImpl, TextureImpl,
};
use crate::image::{ChannelFormat, ImageShape};
use crate::kind::Backend;
use chorus_lang::ir::{FunctionKind, Global, Module};
use chorus_lang::target::Target;
use std::any::Any;
use std::sync::Arc;

/// The CUDA backend.
pub(crate) struct Cuda;

impl BackendImpl for Cuda {
    fn backend(&self) -> Backend {
        Backend::Cuda
    }

    fn probe(&self) -> std::result::Result<usize, Unavailable> {
        chorus_cuda::ensure_driver().map_err(|e| match chorus_cuda::Error::from(e) {
            chorus_cuda::Error::SdkNotFound { reason } => Unavailable::NoDriver { reason },
            e => Unavailable::Driver(Arc::new(e)),
        })?;
        match chorus_cuda::device_count() {
            Ok(0) => Err(Unavailable::NoDevices),
            Ok(count) => Ok(count),
            Err(e) => Err(Unavailable::Driver(Arc::new(e.into()))),
        }
    }

    fn default_index(&self) -> std::result::Result<usize, BadVariable> {
        match std::env::var("CHORUS_DEVICE") {
            Ok(text) if !text.trim().is_empty() => text.trim().parse().map_err(|_| BadVariable {
                variable: "CHORUS_DEVICE",
                value: text,
                expected: "device ordinal",
            }),
            _ => Ok(0),
        }
    }

    fn describe(&self, index: usize) -> Result<(String, String)> {
        let on = device_error(index);
        let (major, minor) = chorus_cuda::compute_capability(index).map_err(&on)?;
        let memory = chorus_cuda::device_total_memory(index).map_err(&on)?;
        Ok((
            chorus_cuda::device_name(index).map_err(&on)?,
            format!(
                "compute capability {major}.{minor}, {:.1} GiB",
                memory as f64 / f64::from(1u32 << 30)
            ),
        ))
    }

    fn open(&self, index: usize) -> std::result::Result<Box<dyn DeviceImpl>, Unavailable> {
        let context = chorus_cuda::retain_primary_context(index)
            .map_err(|e| Unavailable::Driver(Arc::new(e.into())))?;
        let (major, minor) = chorus_cuda::compute_capability(index)
            .map_err(|e| Unavailable::Driver(Arc::new(e.into())))?;
        Ok(Box::new(CudaDevice {
            context: Arc::new(context),
            target: Target::cuda(major, minor),
        }))
    }
}

/// One CUDA device: its primary context, shared with everything made on it.
struct CudaDevice {
    context: Arc<chorus_cuda::Context>,
    /// The device's compute capability as a target.
    target: Target,
}

impl CudaDevice {
    fn enter(&self) -> Result<()> {
        enter(&self.context)
    }

    fn error<E: Into<chorus_cuda::Error>>(&self) -> impl Fn(E) -> Error {
        device_error(self.context.device())
    }
}

impl DeviceImpl for CudaDevice {
    fn target(&self) -> &Target {
        &self.target
    }

    fn alloc(&self, bytes: usize) -> Result<Box<dyn MemoryImpl>> {
        self.enter()?;
        let memory = chorus_cuda::DeviceMemory::alloc(bytes).map_err(self.error())?;
        Ok(Box::new(CudaMemory {
            context: self.context.clone(),
            memory,
        }))
    }

    fn compile(&self, module: &Arc<Module>, name: &str) -> Result<Box<dyn CompiledImpl>> {
        self.enter()?;
        let program = chorus_cuda::Program::from_ir(module.clone(), name).map_err(self.error())?;
        // The kernels' `CUfunction`s are looked up once here rather than at every launch.
        let kernels = module
            .functions
            .iter()
            .map(|f| {
                (f.kind == FunctionKind::Kernel)
                    .then(|| program.function(&f.name))
                    .transpose()
            })
            .collect::<std::result::Result<_, _>>()
            .map_err(self.error())?;
        Ok(Box::new(CudaCompiled {
            context: self.context.clone(),
            program,
            kernels,
        }))
    }

    fn stream(&self) -> Result<Box<dyn StreamImpl>> {
        self.enter()?;
        Ok(Box::new(CudaStream {
            context: self.context.clone(),
            stream: chorus_cuda::Stream::new().map_err(self.error())?,
        }))
    }

    fn synchronize(&self) -> Result<()> {
        self.context.synchronize().map_err(self.error())
    }

    fn alloc_array(
        &self,
        format: ChannelFormat,
        extent: [usize; 3],
        surface: bool,
    ) -> Result<Box<dyn ArrayImpl>> {
        cuda_texture::alloc_array(&self.context, format, extent, surface)
    }

    fn texture(
        &self,
        source: ImageSource<'_>,
        shape: ImageShape,
        format: ChannelFormat,
        desc: &TextureDesc,
    ) -> Result<Box<dyn TextureImpl>> {
        match source {
            ImageSource::Array(array) => {
                cuda_texture::texture_over_array(&self.context, array, shape, desc)
            }
            ImageSource::Memory(memory) => {
                let memory =
                    memory
                        .as_any()
                        .downcast_ref::<CudaMemory>()
                        .ok_or(Error::ForeignObject {
                            backend: Backend::Cuda,
                            what: "memory",
                        })?;
                cuda_texture::texture_over_memory(
                    &self.context,
                    &memory.memory,
                    shape,
                    format,
                    desc,
                )
            }
        }
    }

    fn surface(
        &self,
        array: &dyn ArrayImpl,
        _format: ChannelFormat,
        _extent: [usize; 3],
    ) -> Result<Box<dyn TextureImpl>> {
        cuda_texture::surface(&self.context, array)
    }
}

/// Device memory, freed with its context current.
#[derive(Debug)]
struct CudaMemory {
    context: Arc<chorus_cuda::Context>,
    memory: chorus_cuda::DeviceMemory,
}

impl Drop for CudaMemory {
    fn drop(&mut self) {
        // `cuMemFree` (run when the field drops, after this) needs a current context, and the
        // thread dropping the block may never have used CUDA; a drop has nowhere to report.
        let _ = enter(&self.context);
    }
}

impl MemoryImpl for CudaMemory {
    fn upload(&mut self, src: &[u8]) -> Result<()> {
        enter(&self.context)?;
        self.memory
            .copy_from_host(src)
            .map_err(device_error(self.context.device()))
    }

    fn download(&self, dst: &mut [u8]) -> Result<()> {
        enter(&self.context)?;
        self.memory
            .copy_to_host(dst)
            .map_err(device_error(self.context.device()))
    }

    fn address(&self) -> Option<u64> {
        Some(self.memory.ptr())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A driver stream, destroyed with its context current.
#[derive(Debug)]
struct CudaStream {
    context: Arc<chorus_cuda::Context>,
    stream: chorus_cuda::Stream,
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        // As for memory: `cuStreamDestroy` needs the context current.
        let _ = enter(&self.context);
    }
}

impl StreamImpl for CudaStream {
    fn synchronize(&self) -> Result<()> {
        enter(&self.context)?;
        self.stream
            .synchronize()
            .map_err(device_error(self.context.device()))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A loaded program and its kernels' `CUfunction`s.
struct CudaCompiled {
    context: Arc<chorus_cuda::Context>,
    program: chorus_cuda::Program,
    /// Per function of the module, by its index: the loaded function where it is a kernel.
    kernels: Vec<Option<chorus_cuda::Function>>,
}

impl Drop for CudaCompiled {
    fn drop(&mut self) {
        // `cuModuleUnload` (when the last of the module's handles drops) unloads from the
        // current context, which must be the module's own.
        let _ = enter(&self.context);
    }
}

impl CudaCompiled {
    /// The device address and size of `global`.
    fn global(&self, global: &Global) -> Result<(u64, usize)> {
        self.program
            .global_address(&global.name)
            .map_err(device_error(self.context.device()))
    }
}

impl CompiledImpl for CudaCompiled {
    fn launch(
        &self,
        kernel: usize,
        args: CheckedArgs<'_, '_>,
        launch: &LaunchShape<'_>,
    ) -> Result<()> {
        enter(&self.context)?;
        let on = device_error(self.context.device());
        let function = self.kernels[kernel].as_ref().ok_or_else(|| {
            on(chorus_cuda::Error::NotFound {
                what: "kernel",
                name: self
                    .program
                    .ir()
                    .map_or_else(String::new, |ir| ir.functions[kernel].name.to_string()),
            })
        })?;
        let mut config = chorus_cuda::LaunchConfig::grid(launch.grid)
            .block(launch.block)
            .shared_mem(launch.shared_mem);
        if let Some(stream) = launch.stream {
            let stream =
                stream
                    .as_any()
                    .downcast_ref::<CudaStream>()
                    .ok_or(Error::ForeignObject {
                        backend: Backend::Cuda,
                        what: "stream",
                    })?;
            config = config.stream(&stream.stream);
        }
        with_cuda_args(args.get(), |cuda_args| {
            // SAFETY: `CheckedArgs` are checked against this kernel's parameters: their count,
            // each value's type and size in the module, each pointer's element type, and that
            // memory is on this device; that is what `chorus_cuda::check_arguments` verifies.
            unsafe { chorus_cuda::launch_unchecked(function, &config, cuda_args) }.map_err(&on)
        })
    }

    fn read_global(&self, global: &Global, dst: &mut [u8]) -> Result<()> {
        enter(&self.context)?;
        let on = device_error(self.context.device());
        let (address, bytes) = self.global(global)?;
        // Through device memory of the global's size: the driver copies between device
        // addresses and between device memory and the host.
        let staging = chorus_cuda::DeviceMemory::alloc(bytes).map_err(&on)?;
        // SAFETY: both ranges are `bytes` long: `staging` was allocated with the global's size
        // and `address` is the global's own address in this context's module.
        unsafe { chorus_cuda::memcpy_device_to_device(staging.ptr(), address, bytes) }
            .map_err(&on)?;
        staging.copy_to_host(dst).map_err(&on)
    }

    fn write_global(&self, global: &Global, src: &[u8]) -> Result<()> {
        enter(&self.context)?;
        let on = device_error(self.context.device());
        let (address, bytes) = self.global(global)?;
        let mut staging = chorus_cuda::DeviceMemory::alloc(bytes).map_err(&on)?;
        staging.copy_from_host(src).map_err(&on)?;
        // SAFETY: the copy is at most the global's size, which is both the global's extent at
        // `address` and `staging`'s length.
        unsafe {
            chorus_cuda::memcpy_device_to_device(address, staging.ptr(), bytes.min(src.len()))
        }
        .map_err(&on)
    }
}

/// Runs `f` with `args` as the CUDA driver takes them: on the stack up to 16 arguments, in an
/// array of about the arity, so that a launch allocates nothing and fills few placeholders.
fn with_cuda_args<R>(
    args: &[ArgRef<'_>],
    f: impl FnOnce(&[chorus_cuda::KernelArg<'_>]) -> Result<R>,
) -> Result<R> {
    match args.len() {
        0..=4 => on_stack::<4, R>(args, f),
        5..=8 => on_stack::<8, R>(args, f),
        9..=16 => on_stack::<16, R>(args, f),
        _ => f(&args.iter().map(cuda_arg).collect::<Result<Vec<_>>>()?),
    }
}

/// [`with_cuda_args`] for at most `N` arguments, in an array of `N` whose slots past the
/// arguments hold placeholders that are never passed.
fn on_stack<const N: usize, R>(
    args: &[ArgRef<'_>],
    f: impl FnOnce(&[chorus_cuda::KernelArg<'_>]) -> Result<R>,
) -> Result<R> {
    let mut inline: [chorus_cuda::KernelArg<'_>; N] = std::array::from_fn(|_| {
        // SAFETY: a placeholder past the arguments, never passed to a kernel.
        unsafe { chorus_cuda::KernelArg::device_ptr(0) }
    });
    for (slot, arg) in inline.iter_mut().zip(args) {
        *slot = cuda_arg(arg)?;
    }
    f(&inline[..args.len()])
}

/// One argument as the CUDA driver takes it.
fn cuda_arg<'a>(arg: &'a ArgRef<'_>) -> Result<chorus_cuda::KernelArg<'a>> {
    Ok(match arg {
        // SAFETY: the bytes of a value `args::check_args` checked against the parameter's type
        // and size.
        ArgRef::Value { ty, bytes } => unsafe { chorus_cuda::KernelArg::raw(ty.clone(), bytes) },
        ArgRef::Memory { memory, .. } => {
            let address = memory.memory.address().ok_or(Error::ForeignObject {
                backend: Backend::Cuda,
                what: "memory argument",
            })?;
            // SAFETY: the address of live CUDA memory on this device, checked against the
            // parameter's element type.
            unsafe { chorus_cuda::KernelArg::device_ptr(address) }
        }
        // SAFETY: an address its maker vouched for (`DeviceAddress::new` is unsafe), checked
        // against the parameter's pointer type.
        ArgRef::Address { address, .. } => unsafe { chorus_cuda::KernelArg::device_ptr(*address) },
        ArgRef::Texture { object, .. } => cuda_texture::kernel_arg(*object)?,
    })
}
