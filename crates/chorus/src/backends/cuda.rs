//! CUDA as a backend: each device through its primary context (one per device, retained for the
//! process), memory, programs and streams made in it, launches through `cuLaunchKernel`.
//!
//! Faults: a kernel that faults (an illegal address, a trap) leaves CUDA's "sticky" error in
//! the context, and every later call there fails with it. The first call that sees it (the
//! launch after, a synchronisation, a copy) is [`Error::KernelFault`], naming the kernel
//! launched last on the stream or device (each launch records its program, kernel and call
//! site in atomics: no lock, no allocation); every call after is [`Error::ContextPoisoned`],
//! without reaching the driver. [`crate::Device::reset`] resets the primary context and starts
//! a new generation of it: objects of the old one answer [`Error::DeviceWasReset`] and forget
//! their handles instead of freeing them; compiled programs load again at their next use.

use super::cuda_context::{device_error, enter};
use super::cuda_generation::{Generation, LastLaunch, ProgramNames};
use super::cuda_texture;
use crate::TextureDesc;
use crate::error::{Error, Result, Unavailable};
use crate::hal::{
    ArgRef, ArrayImpl, BackendImpl, BadVariable, CheckedArgs, CompiledImpl, DeviceImpl,
    ImageSource, LaunchShape, MemoryImpl, StreamImpl, TextureImpl,
};
use crate::image::{ChannelFormat, ImageShape};
use crate::kind::{Backend, CopyRoute, Device};
use crate::occupancy::Occupancy;
use chorus_lang::ir::{FunctionKind, Global, Module};
use chorus_lang::target::Target;
use std::any::Any;

use std::mem::ManuallyDrop;

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

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
        let device = Device::handle(Backend::Cuda, index);
        let programs = Arc::new(ProgramNames::default());
        Ok(Box::new(CudaDevice {
            shared: Arc::new(Shared {
                device,
                current: Mutex::new(Arc::new(Generation::new(context, device, programs.clone()))),
                programs,
            }),
            target: Target::cuda(major, minor),
        }))
    }
}

/// What a device and everything made on it share: the current generation of its context.
struct Shared {
    device: Device,
    /// Replaced by a reset.
    current: Mutex<Arc<Generation>>,
    programs: Arc<ProgramNames>,
}

impl Shared {
    fn current(&self) -> std::sync::MutexGuard<'_, Arc<Generation>> {
        // A poisoned lock only means a thread panicked while resetting; the value is whole.
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn generation(&self) -> Arc<Generation> {
        self.current().clone()
    }
}

/// One CUDA device: its primary context, shared with everything made on it.
struct CudaDevice {
    shared: Arc<Shared>,
    /// The device's compute capability as a target.
    target: Target,
}

impl DeviceImpl for CudaDevice {
    fn target(&self) -> &Target {
        &self.target
    }

    fn alloc(&self, bytes: usize) -> Result<Box<dyn MemoryImpl>> {
        let generation = self.shared.generation();
        generation.enter("device")?;
        let memory =
            chorus_cuda::DeviceMemory::alloc(bytes).map_err(|e| generation.fail(e, None))?;
        Ok(Box::new(CudaMemory {
            generation,
            memory: ManuallyDrop::new(memory),
        }))
    }

    fn compile(&self, module: &Arc<Module>, name: &str) -> Result<Box<dyn CompiledImpl>> {
        let generation = self.shared.generation();
        let loaded = Box::new(Loaded::load(generation, module, name)?);
        let current = AtomicPtr::new(std::ptr::from_ref::<Loaded>(&*loaded).cast_mut());
        Ok(Box::new(CudaCompiled {
            shared: self.shared.clone(),
            id: self.shared.programs.register(module),
            module: module.clone(),
            name: name.to_string(),
            current,
            loads: Mutex::new(vec![loaded]),
        }))
    }

    fn stream(&self) -> Result<Box<dyn StreamImpl>> {
        let generation = self.shared.generation();
        generation.enter("device")?;
        let stream = chorus_cuda::Stream::new().map_err(|e| generation.fail(e, None))?;
        Ok(Box::new(CudaStream {
            generation,
            stream: ManuallyDrop::new(stream),
            last: LastLaunch::default(),
        }))
    }

    fn synchronize(&self) -> Result<()> {
        let generation = self.shared.generation();
        generation.enter("device")?;
        generation
            .context
            .synchronize()
            .map_err(|e| generation.fail(e, None))
    }

    fn reset(&self) -> Result<()> {
        let mut current = self.shared.current();
        let index = self.shared.device.index();
        // Retired first: from here on no object of the old context passes a handle to the
        // driver (their drops forget them; the reset frees them all).
        current.retired.store(true, Ordering::Release);
        chorus_cuda::reset_primary_context(index).map_err(device_error(index))?;
        // Measured on the H200 (driver 580, 2026-12-01): after CUDA_ERROR_ILLEGAL_ADDRESS the
        // reset succeeds but the retain answers the same error: CUDA keeps such a fault for the
        // process, which must be restarted. Say so, once and for every later call.
        let context = match chorus_cuda::retain_primary_context(index) {
            Ok(context) => context,
            Err(error) => {
                let fault = device_error(index)(error).to_string();
                let _ = current.unrecoverable.set(fault.clone());
                return Err(Error::ProcessPoisoned {
                    device: self.shared.device,
                    fault,
                });
            }
        };
        *current = Arc::new(Generation::new(
            context,
            self.shared.device,
            self.shared.programs.clone(),
        ));
        Ok(())
    }

    fn alloc_array(
        &self,
        format: ChannelFormat,
        extent: [usize; 3],
        surface: bool,
    ) -> Result<Box<dyn ArrayImpl>> {
        cuda_texture::alloc_array(&self.shared.generation(), format, extent, surface)
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
                cuda_texture::texture_over_array(&self.shared.generation(), array, shape, desc)
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
                    &self.shared.generation(),
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
        cuda_texture::surface(&self.shared.generation(), array)
    }
}

/// Device memory, freed with its context current (or forgotten, once the device was reset).
#[derive(Debug)]
struct CudaMemory {
    generation: Arc<Generation>,
    memory: ManuallyDrop<chorus_cuda::DeviceMemory>,
}

impl Drop for CudaMemory {
    fn drop(&mut self) {
        if self.generation.is_retired() {
            // The reset freed it; its address may be another allocation's now.
            return;
        }
        // `cuMemFree` needs a current context, and the thread dropping the block may never
        // have used CUDA; a drop has nowhere to report.
        let _ = enter(&self.generation.context);
        // SAFETY: dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.memory) };
    }
}

impl MemoryImpl for CudaMemory {
    fn upload(&mut self, src: &[u8]) -> Result<()> {
        self.generation.enter("memory block")?;
        let generation = &self.generation;
        self.memory
            .copy_from_host(src)
            .map_err(|e| generation.fail(e, None))
    }

    fn download(&self, dst: &mut [u8]) -> Result<()> {
        self.generation.enter("memory block")?;
        self.memory
            .copy_to_host(dst)
            .map_err(|e| self.generation.fail(e, None))
    }

    fn address(&self) -> Option<u64> {
        Some(self.memory.ptr())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn copy_to(&self, dst: &mut dyn MemoryImpl, bytes: usize) -> Result<Option<CopyRoute>> {
        let Some(target) = dst.as_any().downcast_ref::<CudaMemory>() else {
            return Ok(None);
        };
        target.generation.enter("memory block")?;
        self.generation.enter("memory block")?;
        let (from, to) = (&self.generation, &target.generation);
        if Arc::ptr_eq(&from.context, &to.context) {
            // SAFETY: both blocks hold at least `bytes` bytes (the facade copies equal
            // lengths) in this context, which is current.
            unsafe {
                chorus_cuda::memcpy_device_to_device(target.memory.ptr(), self.memory.ptr(), bytes)
            }
            .map_err(|e| from.fail(e, None))?;
            return Ok(Some(CopyRoute::SameDevice));
        }
        if !peer_access(&from.context, &to.context).map_err(|e| from.fail(e, None))? {
            return Ok(None);
        }
        // SAFETY: the driver has the entry point (checked by `peer_access`); both ranges hold
        // `bytes` bytes in their own contexts, which are live (entered above).
        let result = unsafe {
            chorus_cuda::sys::cuMemcpyPeer(
                target.memory.ptr(),
                to.context.raw(),
                self.memory.ptr(),
                from.context.raw(),
                bytes,
            )
        };
        chorus_cuda::driver::check("cuMemcpyPeer", result).map_err(|e| from.fail(e, None))?;
        Ok(Some(CopyRoute::Peer))
    }
}

/// Whether the devices of `a` and `b` can reach each other's memory, with peer access enabled
/// both ways (once per pair of contexts) when they can.
fn peer_access(
    a: &chorus_cuda::Context,
    b: &chorus_cuda::Context,
) -> chorus_cuda::driver::Result<bool> {
    static ENABLED: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());
    static HAS_PEER_COPY: OnceLock<bool> = OnceLock::new();
    let present = *HAS_PEER_COPY.get_or_init(|| {
        chorus_cuda::driver::loader::probe_library(
            "cuda",
            &chorus_cuda::driver::loader::driver_dirs(),
            &["cuMemcpyPeer"],
            // SAFETY: only asks the system loader whether cudarc's names resolve.
            || unsafe { chorus_cuda::sys::is_culib_present() },
        )
        .present()
    });
    if !present || a.device() == b.device() {
        return Ok(false);
    }
    let key = (a.raw() as usize, b.raw() as usize);
    let mut enabled = ENABLED.lock().unwrap_or_else(|e| e.into_inner());
    if enabled.contains(&key) {
        return Ok(true);
    }
    if !(a.can_access_peer(b)? && b.can_access_peer(a)?) {
        return Ok(false);
    }
    for (from, to) in [(a, b), (b, a)] {
        match from.enable_peer_access(to) {
            Ok(()) => {}
            Err(chorus_cuda::DriverError::Driver { name, .. })
                if name == "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED" => {}
            Err(e) => return Err(e),
        }
    }
    enabled.push(key);
    Ok(true)
}

/// The CUDA stream of a facade stream of this backend (not one of a reset device).
pub(crate) fn cuda_stream(stream: &dyn StreamImpl) -> Option<&chorus_cuda::Stream> {
    let stream = stream.as_any().downcast_ref::<CudaStream>()?;
    (!stream.generation.is_retired()).then_some(&*stream.stream)
}

/// A driver stream, destroyed with its context current (or forgotten after a reset).
#[derive(Debug)]
struct CudaStream {
    generation: Arc<Generation>,
    stream: ManuallyDrop<chorus_cuda::Stream>,
    /// The kernel launched last on this stream.
    last: LastLaunch,
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        if self.generation.is_retired() {
            return;
        }
        // As for memory: `cuStreamDestroy` needs the context current.
        let _ = enter(&self.generation.context);
        // SAFETY: dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.stream) };
    }
}

impl StreamImpl for CudaStream {
    fn synchronize(&self) -> Result<()> {
        self.generation.enter("stream")?;
        self.stream
            .synchronize()
            .map_err(|e| self.generation.fail(e, Some(&self.last)))
    }

    /// An event recorded on `other` and waited for here. The event is made and recorded with
    /// `other`'s context current (`cuEventRecord` needs the stream's context); a stream of any
    /// context may wait for it. Dropping it at once is allowed: the driver keeps it until the
    /// wait is done.
    fn wait_for(&self, other: &dyn StreamImpl) -> Result<()> {
        let Some(other) = other.as_any().downcast_ref::<CudaStream>() else {
            return other.synchronize();
        };
        other.generation.enter("stream")?;
        let flags = chorus_cuda::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        let event = chorus_cuda::Event::with_flags(flags)
            .and_then(|event| event.record(&other.stream).map(|()| event))
            .map_err(|e| other.generation.fail(e, Some(&other.last)))?;
        self.generation.enter("stream")?;
        self.stream
            .wait_event(&event)
            .map_err(|e| self.generation.fail(e, Some(&self.last)))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A program loaded in one generation of the context, and its kernels' `CUfunction`s.
struct Loaded {
    generation: Arc<Generation>,
    program: ManuallyDrop<chorus_cuda::Program>,
    /// Per function of the module, by its index: the loaded function where it is a kernel.
    kernels: ManuallyDrop<Vec<Option<chorus_cuda::Function>>>,
}

impl Loaded {
    fn load(generation: Arc<Generation>, module: &Arc<Module>, name: &str) -> Result<Loaded> {
        generation.enter("device")?;
        let fail = |e| generation.fail(e, None);
        let program = chorus_cuda::Program::from_ir(module.clone(), name).map_err(fail)?;
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
            .map_err(fail)?;
        Ok(Loaded {
            generation,
            program: ManuallyDrop::new(program),
            kernels: ManuallyDrop::new(kernels),
        })
    }

    /// The device address and size of `global`.
    fn global(&self, global: &Global) -> Result<(u64, usize)> {
        self.program
            .global_address(&global.name)
            .map_err(|e| self.generation.fail(e, None))
    }
}

impl Drop for Loaded {
    fn drop(&mut self) {
        if self.generation.is_retired() {
            // The reset unloaded the module.
            return;
        }
        // `cuModuleUnload` (when the last of the module's handles drops) unloads from the
        // current context, which must be the module's own.
        let _ = enter(&self.generation.context);
        // SAFETY: each dropped once, here, and never used again.
        unsafe {
            ManuallyDrop::drop(&mut self.kernels);
            ManuallyDrop::drop(&mut self.program);
        }
    }
}

/// A program compiled for a device: loaded in the context's current generation, and loaded
/// again at the first use after a reset.
struct CudaCompiled {
    shared: Arc<Shared>,
    /// Its id in the device's [`ProgramNames`].
    id: u32,
    module: Arc<Module>,
    name: String,
    /// The load of the newest generation: one of `loads`, read without a lock at launches.
    current: AtomicPtr<Loaded>,
    /// Every load, boxed so that `current` stays valid while `self` lives.
    #[expect(
        clippy::vec_box,
        reason = "`current` points into the boxes, which must not move when the vector grows"
    )]
    loads: Mutex<Vec<Box<Loaded>>>,
}

impl Drop for CudaCompiled {
    fn drop(&mut self) {
        self.shared.programs.lock().remove(&self.id);
    }
}

impl CudaCompiled {
    /// The program as loaded in the context's current generation (loaded again after a reset).
    fn loaded(&self) -> Result<&Loaded> {
        // SAFETY: `current` points into a box of `loads`, which only grows while `self` lives.
        let loaded = unsafe { &*self.current.load(Ordering::Acquire) };
        if !loaded.generation.is_retired() {
            return Ok(loaded);
        }
        let mut loads = self.loads.lock().unwrap_or_else(|e| e.into_inner());
        let generation = self.shared.generation();
        // SAFETY: as above.
        let loaded = unsafe { &*self.current.load(Ordering::Acquire) };
        if Arc::ptr_eq(&loaded.generation, &generation) {
            return Ok(loaded);
        }
        let reloaded = Box::new(Loaded::load(generation, &self.module, &self.name)?);
        let pointer = std::ptr::from_ref::<Loaded>(&*reloaded).cast_mut();
        loads.push(reloaded);
        self.current.store(pointer, Ordering::Release);
        // SAFETY: it points into the box just pushed onto `loads`.
        Ok(unsafe { &*pointer })
    }
}

impl CudaCompiled {
    /// Kernel `kernel` of the loaded module, allowed `launch`'s dynamic shared memory, and the
    /// launch configuration of `launch`'s shape (without its stream).
    fn prepare<'l>(
        &self,
        loaded: &'l Loaded,
        kernel: usize,
        launch: &LaunchShape<'_>,
    ) -> Result<(
        &'l chorus_cuda::Function,
        chorus_cuda::LaunchConfig<'static>,
    )> {
        let generation = &loaded.generation;
        let function = loaded.kernels[kernel].as_ref().ok_or_else(|| Error::Cuda {
            device: Some(generation.device),
            source: chorus_cuda::Error::NotFound {
                what: "kernel",
                name: self.module.functions[kernel].name.to_string(),
            },
        })?;
        // Past 48 KiB a kernel must opt in to its dynamic shared memory (Hopper's TMA pipelines
        // take up to 227 KiB); the attribute is the kernel's, so raising it again is harmless.
        if launch.shared_mem > 48 * 1024 {
            function
                .set_max_dynamic_shared_memory(launch.shared_mem as i32)
                .map_err(|e| generation.fail(e, None))?;
        }
        let mut config = chorus_cuda::LaunchConfig::grid(launch.grid)
            .block(launch.block)
            .shared_mem(launch.shared_mem);
        if let Some(cluster) = launch.cluster {
            config = config.cluster(cluster);
        }
        Ok((function, config))
    }
}

impl CompiledImpl for CudaCompiled {
    fn occupancy(&self, kernel: usize, launch: &LaunchShape<'_>) -> Result<Option<Occupancy>> {
        use chorus_cuda::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
        let loaded = self.loaded()?;
        let generation = &loaded.generation;
        generation.enter("compiled program")?;
        let (function, config) = self.prepare(loaded, kernel, launch)?;
        let fail = |e| generation.fail(e, None);
        let threads = u32::try_from(launch.block.volume()).unwrap_or(u32::MAX);
        let blocks_per_multiprocessor = function
            .max_active_blocks_per_multiprocessor(threads, launch.shared_mem as usize)
            .map_err(fail)?;
        let multiprocessors = chorus_cuda::device_attribute(
            generation.device.index(),
            CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
        .map_err(|e| fail(e.into()))?;
        let clusters = match launch.cluster {
            Some(_) => Some(function.max_active_clusters(&config).map_err(fail)?),
            None => None,
        };
        Ok(Some(Occupancy {
            blocks_per_multiprocessor,
            multiprocessors: multiprocessors.max(0) as u32,
            clusters,
        }))
    }

    fn launch(
        &self,
        kernel: usize,
        args: CheckedArgs<'_, '_>,
        launch: &LaunchShape<'_>,
    ) -> Result<()> {
        let loaded = self.loaded()?;
        let generation = &loaded.generation;
        generation.enter("compiled program")?;
        let (function, mut config) = self.prepare(loaded, kernel, launch)?;
        let mut stream_last = None;
        if let Some(stream) = launch.stream {
            let stream =
                stream
                    .as_any()
                    .downcast_ref::<CudaStream>()
                    .ok_or(Error::ForeignObject {
                        backend: Backend::Cuda,
                        what: "stream",
                    })?;
            if stream.generation.is_retired() {
                return Err(Error::DeviceWasReset {
                    device: generation.device,
                    what: "stream",
                });
            }
            config = config.stream(&stream.stream);
            stream_last = Some(&stream.last);
        }
        with_cuda_args(args.get(), |cuda_args| {
            // SAFETY: `CheckedArgs` are checked against this kernel's parameters: their count,
            // each value's type and size in the module, each pointer's element type, and that
            // memory is on this device; that is what `chorus_cuda::check_arguments` verifies.
            unsafe { chorus_cuda::launch_unchecked(function, &config, cuda_args) }
                // A sticky error here is an earlier kernel's, surfacing now.
                .map_err(|e| generation.fail(e, stream_last))
        })?;
        generation.last.record(self.id, kernel, launch.site);
        if let Some(last) = stream_last {
            last.record(self.id, kernel, launch.site);
        }
        Ok(())
    }

    fn read_global(&self, global: &Global, dst: &mut [u8]) -> Result<()> {
        let loaded = self.loaded()?;
        let generation = &loaded.generation;
        generation.enter("compiled program")?;
        let fail = |e| generation.fail(e, None);
        let (address, bytes) = loaded.global(global)?;
        // Through device memory of the global's size: the driver copies between device
        // addresses and between device memory and the host.
        let staging = chorus_cuda::DeviceMemory::alloc(bytes).map_err(fail)?;
        // Zeroed first: compute-sanitizer's initcheck does not count a device-to-device copy
        // as initialising its destination, and reported every read of a global as a read of
        // uninitialised memory (two in the facade's GPU tests).
        // SAFETY: `staging` owns `bytes` bytes at its address.
        unsafe {
            chorus_cuda::memset_device(staging.ptr(), chorus_cuda::MemsetValue::U8(0), bytes)
        }
        .map_err(fail)?;
        // SAFETY: both ranges are `bytes` long: `staging` was allocated with the global's size
        // and `address` is the global's own address in this context's module.
        unsafe { chorus_cuda::memcpy_device_to_device(staging.ptr(), address, bytes) }
            .map_err(fail)?;
        staging.copy_to_host(dst).map_err(fail)
    }

    fn write_global(&self, global: &Global, src: &[u8]) -> Result<()> {
        let loaded = self.loaded()?;
        let generation = &loaded.generation;
        generation.enter("compiled program")?;
        let fail = |e| generation.fail(e, None);
        let (address, bytes) = loaded.global(global)?;
        let mut staging = chorus_cuda::DeviceMemory::alloc(bytes).map_err(fail)?;
        staging.copy_from_host(src).map_err(fail)?;
        // SAFETY: the copy is at most the global's size, which is both the global's extent at
        // `address` and `staging`'s length.
        unsafe {
            chorus_cuda::memcpy_device_to_device(address, staging.ptr(), bytes.min(src.len()))
        }
        .map_err(fail)
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
            if let Some(cuda) = memory.memory.as_any().downcast_ref::<CudaMemory>()
                && cuda.generation.is_retired()
            {
                return Err(Error::DeviceWasReset {
                    device: cuda.generation.device,
                    what: "memory block",
                });
            }
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
