//! The one place that knows each backend's native objects: availability and devices, device
//! memory, compiled programs, launches, globals and streams. Everything else in the facade is
//! backend-independent and calls these.

use crate::backend::{Backend, Device};
use crate::error::{Error, Result};
use crate::launch::{Dim3, Launch};
use crate::program::{Arg, ArgKind, Checks};
use chorus_lang::host::KernelValue;
use chorus_lang::ir::{Function, FunctionKind, Global, Module};
use std::sync::{Arc, OnceLock};

/// Backends not implemented in this tree.
fn not_implemented(backend: Backend) -> Error {
    Error::BackendUnavailable {
        backend,
        reason: "this build of Chorus has no such backend yet".into(),
    }
}

// ---------------------------------------------------------------------------------------------
// CUDA: one primary context per process, on the device `CHORUS_DEVICE` names.

/// The facade's CUDA state: the context every CUDA operation of the facade runs in.
struct CudaRuntime {
    context: chorus_cuda::Context,
}

impl CudaRuntime {
    /// Makes the facade's context current on this thread (every CUDA call needs one).
    ///
    /// Asking which context is current reads the driver's thread state; setting it takes the
    /// driver's locks, so it is done only when another context (or none) is current: a launch
    /// in a loop then sets it once.
    fn enter(&self) -> Result<()> {
        let mut current = std::ptr::null_mut();
        // SAFETY: the driver is loaded and initialised (the runtime started, which `cuda()`
        // checked), and `current` is a valid place for the handle.
        let result = unsafe { chorus_cuda::sys::cuCtxGetCurrent(&mut current) };
        if result == chorus_cuda::sys::CUresult::CUDA_SUCCESS && current == self.context.raw() {
            return Ok(());
        }
        Ok(self.context.make_current()?)
    }
}

/// The device ordinal `CHORUS_DEVICE` names (default 0).
fn cuda_device_ordinal() -> std::result::Result<usize, String> {
    match std::env::var("CHORUS_DEVICE") {
        Ok(text) if !text.trim().is_empty() => text
            .trim()
            .parse()
            .map_err(|_| format!("CHORUS_DEVICE={text} is not a device ordinal")),
        _ => Ok(0),
    }
}

/// Why the facade's CUDA runtime could not start.
enum CudaUnavailable {
    /// The driver library did not load (reported as [`Error::SdkNotFound`]).
    NoDriver(String),
    /// Anything else: no device, a bad `CHORUS_DEVICE`, a failing context.
    Other(String),
}

/// The CUDA runtime, started on first use; why not, where the driver or device is missing.
fn cuda() -> Result<&'static CudaRuntime> {
    static RUNTIME: OnceLock<std::result::Result<CudaRuntime, CudaUnavailable>> = OnceLock::new();
    let other = |e: chorus_cuda::DriverError| CudaUnavailable::Other(e.to_string());
    RUNTIME
        .get_or_init(|| {
            let device = cuda_device_ordinal().map_err(CudaUnavailable::Other)?;
            chorus_cuda::ensure_driver().map_err(|e| match e {
                chorus_cuda::DriverError::SdkNotFound { reason } => {
                    CudaUnavailable::NoDriver(reason)
                }
                e => other(e),
            })?;
            let count = chorus_cuda::device_count().map_err(other)?;
            if device >= count {
                return Err(CudaUnavailable::Other(if count == 0 {
                    "the CUDA driver loads but reports no device".to_string()
                } else {
                    format!("CHORUS_DEVICE={device}, but there are {count} CUDA devices")
                }));
            }
            let context = chorus_cuda::Context::primary(device).map_err(other)?;
            Ok(CudaRuntime { context })
        })
        .as_ref()
        .map_err(|unavailable| match unavailable {
            CudaUnavailable::NoDriver(reason) => Error::SdkNotFound(reason.clone()),
            CudaUnavailable::Other(reason) => Error::BackendUnavailable {
                backend: Backend::Cuda,
                reason: reason.clone(),
            },
        })
}

// ---------------------------------------------------------------------------------------------
// Availability and devices.

/// `Ok` when `backend` can run kernels here.
pub(crate) fn availability(backend: Backend) -> Result<()> {
    match backend {
        Backend::Cuda => cuda().map(drop),
        Backend::Cpu => Ok(()),
        Backend::Metal | Backend::Hip => Err(not_implemented(backend)),
    }
}

/// The devices of `backend` (none where it is not available).
pub(crate) fn devices(backend: Backend) -> Vec<Device> {
    match backend {
        Backend::Cuda => {
            if chorus_cuda::ensure_driver().is_err() {
                return Vec::new();
            }
            chorus_cuda::devices()
                .map(|list| list.into_iter().map(cuda_device).collect())
                .unwrap_or_default()
        }
        Backend::Cpu => vec![cpu_device()],
        Backend::Metal | Backend::Hip => Vec::new(),
    }
}

fn cuda_device(info: chorus_cuda::DeviceInfo) -> Device {
    let (major, minor) = info.compute_capability;
    Device {
        backend: Backend::Cuda,
        index: info.id,
        name: info.name,
        detail: format!(
            "compute capability {major}.{minor}, {:.1} GiB",
            info.total_memory as f64 / f64::from(1u32 << 30)
        ),
    }
}

fn cpu_device() -> Device {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    // The model name where the OS tells it (Linux); otherwise the architecture.
    let name = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, name)| name.trim().to_string())
        })
        .unwrap_or_else(|| format!("{} host CPU", std::env::consts::ARCH));
    Device {
        backend: Backend::Cpu,
        index: 0,
        name,
        detail: format!("{cores} cores"),
    }
}

/// The device kernels of `backend` run on (the backend is available).
pub(crate) fn current_device(backend: Backend) -> Result<Device> {
    match backend {
        Backend::Cuda => {
            let runtime = cuda()?;
            let id = runtime.context.device();
            Ok(cuda_device(chorus_cuda::DeviceInfo {
                id,
                name: chorus_cuda::device_name(id)?,
                compute_capability: chorus_cuda::compute_capability(id)?,
                total_memory: chorus_cuda::device_total_memory(id)?,
            }))
        }
        Backend::Cpu => Ok(cpu_device()),
        Backend::Metal | Backend::Hip => Err(not_implemented(backend)),
    }
}

/// Waits for all work queued on `backend`.
pub(crate) fn synchronize(backend: Backend) -> Result<()> {
    match backend {
        Backend::Cuda => {
            let runtime = cuda()?;
            runtime.enter()?;
            Ok(runtime.context.synchronize()?)
        }
        Backend::Cpu => Ok(()),
        Backend::Metal | Backend::Hip => Err(not_implemented(backend)),
    }
}

// ---------------------------------------------------------------------------------------------
// Device memory.

/// The device copy of a memory block.
#[derive(Debug)]
pub(crate) enum DeviceMemory {
    Cuda(CudaMemory),
    Cpu(chorus_cpu::DeviceBuffer),
}

/// CUDA memory, freed with the facade's context current.
#[derive(Debug)]
pub(crate) struct CudaMemory(chorus_cuda::DeviceMemory);

impl Drop for CudaMemory {
    fn drop(&mut self) {
        // `cuMemFree` (run when the field drops, after this) needs a current context, and
        // the thread dropping the block may never have used CUDA.
        enter_cuda_for_drop();
    }
}

/// Makes the facade's context current before a CUDA object is released; nothing to do (and
/// nothing to report from a drop) when the runtime never started.
fn enter_cuda_for_drop() {
    if let Ok(runtime) = cuda() {
        let _ = runtime.enter();
    }
}

impl DeviceMemory {
    /// `bytes` bytes of device memory on `backend`.
    pub(crate) fn alloc(backend: Backend, bytes: usize) -> Result<DeviceMemory> {
        match backend {
            Backend::Cuda => {
                cuda()?.enter()?;
                Ok(DeviceMemory::Cuda(CudaMemory(
                    chorus_cuda::DeviceMemory::alloc(bytes)?,
                )))
            }
            Backend::Cpu => Ok(DeviceMemory::Cpu(chorus_cpu::DeviceBuffer::alloc(bytes)?)),
            Backend::Metal | Backend::Hip => Err(not_implemented(backend)),
        }
    }

    /// The backend the memory belongs to.
    pub(crate) fn backend(&self) -> Backend {
        match self {
            DeviceMemory::Cuda(_) => Backend::Cuda,
            DeviceMemory::Cpu(_) => Backend::Cpu,
        }
    }

    /// The device address, on backends that have one.
    pub(crate) fn address(&self) -> Option<u64> {
        match self {
            DeviceMemory::Cuda(memory) => Some(memory.0.ptr()),
            DeviceMemory::Cpu(_) => None,
        }
    }

    /// Copies `src` to the start of the device memory.
    pub(crate) fn upload(&mut self, src: &[u8]) -> Result<()> {
        match self {
            DeviceMemory::Cuda(memory) => {
                cuda()?.enter()?;
                Ok(memory.0.copy_from_host(src)?)
            }
            DeviceMemory::Cpu(buffer) => Ok(buffer.write(0, src)?),
        }
    }

    /// Copies the start of the device memory into `dst`.
    pub(crate) fn download(&self, dst: &mut [u8]) -> Result<()> {
        match self {
            DeviceMemory::Cuda(memory) => {
                cuda()?.enter()?;
                Ok(memory.0.copy_to_host(dst)?)
            }
            DeviceMemory::Cpu(buffer) => Ok(buffer.read(0, dst)?),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Programs, launches and globals.

/// A program compiled and loaded for one backend.
pub(crate) enum Compiled {
    Cuda(CudaProgram),
    Cpu(chorus_cpu::CpuModule),
}

/// A loaded CUDA program and its kernels' `CUfunction`s, looked up once at load rather than at
/// every launch.
pub(crate) struct CudaProgram {
    program: chorus_cuda::Program,
    /// Per function of the module, by its index: the loaded function where it is a kernel.
    kernels: Vec<Option<chorus_cuda::Function>>,
}

impl Compiled {
    /// Compiles and loads `module` (named `name` in compiler messages) for `backend`.
    pub(crate) fn new(backend: Backend, module: Arc<Module>, name: &str) -> Result<Compiled> {
        match backend {
            Backend::Cuda => {
                cuda()?.enter()?;
                let program = chorus_cuda::Program::from_ir(module.clone(), name)?;
                let kernels = module
                    .functions
                    .iter()
                    .map(|f| {
                        (f.kind == FunctionKind::Kernel)
                            .then(|| program.function(&f.name))
                            .transpose()
                    })
                    .collect::<std::result::Result<_, _>>()?;
                Ok(Compiled::Cuda(CudaProgram { program, kernels }))
            }
            Backend::Cpu => Ok(Compiled::Cpu(chorus_cpu::CpuModule::new(module)?)),
            Backend::Metal | Backend::Hip => Err(not_implemented(backend)),
        }
    }

    /// Launches `function` (at `index` of the module's functions) with `args`, already checked
    /// against its parameters and backend as `checks` says, with the checked `grid` and `block`
    /// and the rest of `launch`.
    pub(crate) fn launch(
        &self,
        (index, function): (usize, &Function),
        args: &[Arg<'_>],
        checks: Checks,
        (grid, block): (Dim3, Dim3),
        launch: &Launch<'_>,
    ) -> Result<()> {
        match self {
            Compiled::Cuda(cuda_program) => {
                cuda()?.enter()?;
                let kernel = cuda_program.kernels[index]
                    .as_ref()
                    .expect("checked: the function is a kernel of this module");
                let ir = cuda_program
                    .program
                    .ir()
                    .expect("programs of the facade are built from IR");
                let mut config = chorus_cuda::LaunchConfig::grid(grid)
                    .block(block)
                    .shared_mem(launch.shared_mem_bytes());
                if let Some(stream) = launch.stream_ref() {
                    config = config.stream(stream.inner.cuda().expect("checked: a CUDA stream"));
                }
                // SAFETY: `Program` checked the arguments against this kernel's parameters
                // (count, the type of each pointer: CUDA memory or addresses of the element
                // type, and the type of each value, either at run time or, for `defkernel!`
                // functions, by the Rust types the generator derived from the parameters), and
                // `cuda_arg` checked the sizes of values the run-time check covers; that is
                // what `chorus_cuda::check_arguments` would verify.
                with_cuda_args(ir, args, checks, |cuda_args| {
                    Ok(unsafe { chorus_cuda::launch_unchecked(kernel, &config, cuda_args) }?)
                })
            }
            Compiled::Cpu(module) => {
                let args: Vec<chorus_cpu::KernelArg<'_>> = args
                    .iter()
                    .map(|arg| match &arg.0 {
                        ArgKind::Value { ty, bytes } => Ok(chorus_cpu::KernelArg::Value {
                            ty: ty.clone(),
                            bytes: bytes.to_vec(),
                        }),
                        ArgKind::Memory {
                            memory: DeviceMemory::Cpu(buffer),
                            ..
                        } => Ok(chorus_cpu::KernelArg::Buffer(buffer)),
                        ArgKind::Memory { .. } | ArgKind::Address { .. } => {
                            Err(Error::TypeMismatch(format!(
                                "the CPU executor cannot pass {}",
                                arg.describe()
                            )))
                        }
                    })
                    .collect::<Result<_>>()?;
                let config = chorus_cpu::LaunchConfig {
                    grid: grid.to_array(),
                    block: block.to_array(),
                    shared_mem: launch.shared_mem_bytes() as usize,
                };
                Ok(module.launch(&function.name, &config, &args)?)
            }
        }
    }

    /// Reads `global` (whose type the caller checked is `T`).
    pub(crate) fn read_global<T: KernelValue>(&self, global: &Global) -> Result<T> {
        match self {
            Compiled::Cuda(cuda_program) => {
                cuda()?.enter()?;
                Ok(cuda_program.program.global_ref::<T>(&global.name)?)
            }
            Compiled::Cpu(module) => Ok(module.global_ref::<T>(&global.name)?),
        }
    }

    /// Writes `value` to `global` (whose type the caller checked is `T`).
    pub(crate) fn write_global<T: KernelValue>(&self, global: &Global, value: T) -> Result<()> {
        match self {
            Compiled::Cuda(cuda_program) => {
                cuda()?.enter()?;
                Ok(cuda_program.program.set_global_ref(&global.name, value)?)
            }
            Compiled::Cpu(module) => Ok(module.set_global_ref(&global.name, value)?),
        }
    }
}

/// Runs `f` with `args` as the CUDA driver takes them ([`cuda_arg`]): on the stack up to 16
/// arguments, in an array of about the arity, so that a launch allocates nothing and fills
/// few placeholders.
///
/// Under [`Checks::All`] each value's size is checked first against its type's layout in the
/// program (the one thing the facade's type check leaves to the backend); under
/// [`Checks::Pointers`] each value was made from the Rust type of its parameter, whose size the
/// generator derived from the same layout.
pub(crate) fn with_cuda_args<R>(
    ir: &Module,
    args: &[Arg<'_>],
    checks: Checks,
    f: impl FnOnce(&[chorus_cuda::KernelArg<'_>]) -> Result<R>,
) -> Result<R> {
    if checks == Checks::All {
        for arg in args {
            if let ArgKind::Value { ty, bytes } = &arg.0
                && ir.layout(ty).map(|(size, _)| size) != Some(bytes.len())
            {
                return Err(Error::TypeMismatch(format!(
                    "{} has {} bytes, not the size of {ty} in this program",
                    arg.describe(),
                    bytes.len()
                )));
            }
        }
    }
    match args.len() {
        0..=4 => on_stack::<4, R>(args, f),
        5..=8 => on_stack::<8, R>(args, f),
        9..=16 => on_stack::<16, R>(args, f),
        _ => f(&args.iter().map(cuda_arg).collect::<Vec<_>>()),
    }
}

/// [`with_cuda_args`] for at most `N` arguments, in an array of `N` whose slots past the
/// arguments hold placeholders that are never passed.
fn on_stack<const N: usize, R>(
    args: &[Arg<'_>],
    f: impl FnOnce(&[chorus_cuda::KernelArg<'_>]) -> Result<R>,
) -> Result<R> {
    let inline: [chorus_cuda::KernelArg<'_>; N] = std::array::from_fn(|i| {
        // SAFETY: a placeholder past the arguments, never passed to a kernel.
        let placeholder = unsafe { chorus_cuda::KernelArg::device_ptr(0) };
        args.get(i).map_or(placeholder, cuda_arg)
    });
    f(&inline[..args.len()])
}

/// One argument as the CUDA driver takes it. Pointers were checked against the parameters
/// (including `void*` and pointers to pointers, which take memory of other element types) and
/// the backend.
fn cuda_arg<'a>(arg: &'a Arg<'_>) -> chorus_cuda::KernelArg<'a> {
    match &arg.0 {
        // SAFETY: the bytes of a value checked against the parameter's type and size.
        ArgKind::Value { ty, bytes } => unsafe { chorus_cuda::KernelArg::raw(ty.clone(), bytes) },
        // SAFETY: the address of live CUDA memory, checked against the parameter.
        ArgKind::Memory { memory, .. } => unsafe {
            chorus_cuda::KernelArg::device_ptr(
                memory
                    .address()
                    .expect("checked: the memory is CUDA memory"),
            )
        },
        // SAFETY: an address its maker vouched for (the facade's `Arg::device_address`),
        // checked against the parameter's pointer type.
        ArgKind::Address { address, .. } => unsafe { chorus_cuda::KernelArg::device_ptr(*address) },
    }
}

// ---------------------------------------------------------------------------------------------
// Streams.

/// A backend's stream.
#[derive(Debug)]
pub(crate) enum StreamInner {
    Cuda(chorus_cuda::Stream),
    /// CPU launches complete before they return: the stream is only a token of order.
    Cpu,
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        if let StreamInner::Cuda(_) = self {
            enter_cuda_for_drop();
        }
    }
}

impl StreamInner {
    pub(crate) fn new(backend: Backend) -> Result<StreamInner> {
        match backend {
            Backend::Cuda => {
                cuda()?.enter()?;
                Ok(StreamInner::Cuda(chorus_cuda::Stream::new()?))
            }
            Backend::Cpu => Ok(StreamInner::Cpu),
            Backend::Metal | Backend::Hip => Err(not_implemented(backend)),
        }
    }

    pub(crate) fn backend(&self) -> Backend {
        match self {
            StreamInner::Cuda(_) => Backend::Cuda,
            StreamInner::Cpu => Backend::Cpu,
        }
    }

    pub(crate) fn cuda(&self) -> Option<&chorus_cuda::Stream> {
        match self {
            StreamInner::Cuda(stream) => Some(stream),
            StreamInner::Cpu => None,
        }
    }

    pub(crate) fn synchronize(&self) -> Result<()> {
        match self {
            StreamInner::Cuda(stream) => {
                cuda()?.enter()?;
                Ok(stream.synchronize()?)
            }
            StreamInner::Cpu => Ok(()),
        }
    }
}
