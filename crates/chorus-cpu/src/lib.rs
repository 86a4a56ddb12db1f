//! The CPU executor of Chorus: runs the typed kernel IR ([`chorus_lang::ir`]) on the host with
//! CUDA's semantics, so every kernel and every test runs on machines without a GPU.
//!
//! # Design
//!
//! [`CpuModule::new`] compiles each function of a module once to a flat, warp-wide bytecode
//! (locals resolved to register slots, types to fixed 64-bit lanes, structured control flow to
//! jumps plus mask bookkeeping). A launch runs each block warp by warp: every instruction acts
//! on 32 lanes (64 for a 64-lane target, [`CpuModule::for_target`]) under the warp's active mask, `if` runs each branch under its mask, loops run
//! while any lane is active, `break`/`continue`/`return` park lanes until their construct ends,
//! and warp collectives read the other lanes directly (lockstep warps give CUDA's results for
//! shuffles and votes by construction). `syncthreads` is a real barrier: the warp stops there
//! and the block's next warp runs until every warp has arrived or finished. Blocks are spread
//! over one worker thread per core (an atomic counter hands them out).
//!
//! # Native code
//!
//! With the `native` feature (on by default) a kernel is also compiled to machine code with
//! Cranelift on its first launch, and runs that way: a work-group function runs all threads of
//! a block, as loops over the threads between barriers (PoCL's region method), with the same
//! pointers, bounds checks, faults and scalar semantics as the interpreter, which stays the
//! reference. In a kernel without barriers, chunks of 32 consecutive `x` threads run with the
//! CPU's vector instructions where the body allows ([`CpuModule::kernel_uses_simd`]), with
//! the same results. Warp collectives split the regions as barriers within the warp do. A
//! kernel using what the compiler lacks (collectives in loop headers, `printf`, textures,
//! cuRAND, 16-bit atomics, the address of a local, recursion) runs on the interpreter; [`CpuModule::kernel_path`] says which path a kernel takes and why, and
//! `CHORUS_CPU=interpret` (read when a module is prepared) or [`CpuModule::set_interpreted`]
//! runs everything interpreted. On the compiled path threads of a warp run one after the other
//! between barriers (`syncwarp` is a barrier there), so code that relies on lockstep lanes
//! without synchronising sees CUDA's independent thread scheduling instead.
//!
//! # Memory
//!
//! Device memory is [`DeviceBuffer`]s, globals, each block's shared memory and each thread's
//! local stack. Pointers carry their allocation, so every access is checked: an out-of-bounds
//! or misaligned access, a null pointer, an integer division by zero or runaway recursion
//! returns [`Error::Fault`] naming the kernel, the block, the thread and the source position.
//! Memory is accessed through atomic words, so atomics are atomic across blocks running on
//! different threads. A `:shared` `defglobal` is one variable per block, as CUDA's
//! `__shared__`; the host cannot reach it. A buffer holds at most 512 GiB: pointer arithmetic
//! that moves a pointer further than that from its allocation's start gives a pointer that
//! faults when used, instead of wrapping around.
//!
//! `printf` widths and precisions are clamped to [`MAX_PRINTF_FIELD`]; a function body nested
//! deeper than [`MAX_EXPRESSION_DEPTH`] is refused when the module is prepared. A panic while a
//! kernel runs (a bug of the executor, or of the `printf` writer) is an [`Error::Launch`] of that
//! launch.
//!
//! # Launches and streams
//!
//! [`CpuModule::launch`] returns when the kernel has finished, and launches never overlap:
//! whichever host threads and modules make them, each runs to completion (over all its worker
//! threads) before the next starts, in the order they reach the executor. So launches on one
//! stream run in order, as on CUDA, even from several host threads; launches on different
//! streams, which CUDA may run concurrently and in any order relative to each other, run one
//! at a time here, in an order the host threads decide. A program that needs one stream's work
//! before another's must order it on the host (or with events), as on a GPU.
//!
//! # Differences from a GPU
//!
//! * Math functions use Rust's `f32`/`f64` functions (the platform's libm); results may differ
//!   from CUDA's by a few ulp, and `__sinf` and the other fast intrinsics are computed as
//!   precisely as their accurate forms. No floating-point contraction into `fma` happens unless
//!   the kernel calls `fma`.
//! * A shuffle whose source lane is inactive (or not in the mask) returns the caller's own
//!   value, as CUDA does for a source outside the segment; CUDA leaves that case undefined.
//! * Lanes of a warp always run in lockstep, as on pre-Volta GPUs: code relying on
//!   independent thread scheduling inside a warp sees reconverged lanes.
//! * `cuda-asm`, cluster indexes and cluster calls are refused when the module is prepared.
//! * `printf` lines of one warp are printed in lane order, one `printf` statement at a time.
//! * A pointer read from memory (stored in a buffer or a structure by the host) must point into
//!   a buffer passed to the same launch, a global, or the block's shared or local memory;
//!   otherwise the access faults instead of reaching the allocation.
//! * Warp-uniform operands (shuffle masks and widths, vote masks) are taken from the first
//!   active lane.
//! * `curand_normal` uses the platform's `sinf`/`cosf` where the GPU uses `__sincosf`, so
//!   normals may differ in the last bits; the uniform sequences are cuRAND's bit for bit.

mod atomic;
mod bytecode;
mod compile;
mod curand;
mod error;
mod exec;
mod lanes;
mod math;
mod memory;
#[cfg(feature = "native")]
mod native;
mod printf;
mod scalar;
mod texture;
mod value;

pub use compile::MAX_EXPRESSION_DEPTH;
pub use error::{Error, Result};
pub use memory::DeviceBuffer;
pub use printf::MAX_PRINTF_FIELD;
pub use texture::{
    AddressMode, ChannelFormat, ChannelType, FilterMode, ImageError, ImageLayout, ReadMode,
    SurfaceObject, TextureDesc, TextureObject,
};

use chorus_lang::host::KernelValue;
use chorus_lang::ir::{self, FunctionKind};
use chorus_lang::target::Target;
use chorus_lang::types::Type;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// Grid and block sizes of a launch, and its dynamic shared memory in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks per grid in x, y, z (each at least 1).
    pub grid: [u32; 3],
    /// Threads per block in x, y, z (at most 1024 in all, z at most 64).
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory (`with-dynamic-shared-memory`).
    pub shared_mem: usize,
}

impl LaunchConfig {
    /// A one-dimensional launch: `grid` blocks of `block` threads.
    pub fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            shared_mem: 0,
        }
    }
}

/// The largest dynamic shared memory a launch may ask for (227 KiB, an H100/H200 block's
/// opt-in maximum).
pub const MAX_DYNAMIC_SHARED_MEMORY: usize = 227 * 1024;

/// Bytes of local memory each thread has for variables whose address is taken (all frames of
/// its call chain together).
pub const LOCAL_STACK_BYTES: usize = 16 * 1024;

/// One argument of a launch.
#[derive(Clone, Debug)]
pub enum KernelArg<'a> {
    /// A pointer to the start of a buffer (any pointer parameter).
    Buffer(&'a DeviceBuffer),
    /// A pointer to byte `offset` of a buffer.
    BufferAt(&'a DeviceBuffer, usize),
    /// A texture object (for a `texture-object` parameter) over the image in a buffer.
    Texture(&'a DeviceBuffer, &'a TextureObject),
    /// A surface object (for a `surface-object` parameter) over the image in a buffer.
    Surface(&'a DeviceBuffer, &'a SurfaceObject),
    /// A value passed by value: its kernel type and its bytes (the type's size).
    Value {
        /// The parameter's type, which must match exactly.
        ty: Type,
        /// Its bytes, laid out as on the device.
        bytes: Vec<u8>,
    },
}

impl KernelArg<'_> {
    /// A by-value argument from a host value whose layout matches its kernel type.
    pub fn value<T: KernelValue>(v: T) -> KernelArg<'static> {
        KernelArg::Value {
            ty: T::kernel_type(),
            bytes: bytemuck::bytes_of(&v).to_vec(),
        }
    }
}

/// One argument of [`CpuModule::launch_prechecked`], already checked by the caller against its
/// parameter: borrowed, so that a launch copies nothing.
#[derive(Clone, Copy, Debug)]
pub enum PrecheckedArg<'a> {
    /// A pointer to byte `offset` (at most the buffer's length) of a buffer.
    Buffer(&'a DeviceBuffer, usize),
    /// The bytes of a value passed by copy, laid out as on the device.
    Bytes(&'a [u8]),
    /// A texture object over the image in a buffer.
    Texture(&'a DeviceBuffer, &'a TextureObject),
    /// A surface object over the image in a buffer.
    Surface(&'a DeviceBuffer, &'a SurfaceObject),
}

/// Which path a kernel runs on (see [`CpuModule::kernel_path`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelPath {
    /// Compiled to machine code (the crate's `native` feature, on by default).
    Native,
    /// Run by the SIMT interpreter, with the reason: what the native compiler does not
    /// compile yet, `CHORUS_CPU=interpret`, [`CpuModule::set_interpreted`], or a build
    /// without the `native` feature.
    Interpreted(String),
}

/// Held by the running launch: launches never overlap (see the crate documentation).
static LAUNCHES: Mutex<()> = Mutex::new(());

/// A module prepared for the CPU: compiled once, launched any number of times, from any
/// number of threads.
pub struct CpuModule {
    ir: Arc<ir::Module>,
    program: bytecode::Program,
    globals: Vec<DeviceBuffer>,
    output: Mutex<Box<dyn Write + Send>>,
    workers: usize,
    /// Every kernel runs on the interpreter.
    interpret: bool,
    #[cfg(feature = "native")]
    native: native::NativeModule,
}

impl std::fmt::Debug for CpuModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuModule")
            .field(
                "functions",
                &self
                    .program
                    .functions
                    .iter()
                    .map(|f| &f.name)
                    .collect::<Vec<_>>(),
            )
            .field("workers", &self.workers)
            .finish()
    }
}

impl CpuModule {
    /// Prepares `module`: allocates and initialises its globals and compiles every function.
    /// Anything the CPU cannot run (what [`Target::cpu`] lacks: `cuda-asm`, clusters) is an
    /// [`Error::Unsupported`] naming the statement, found by [`chorus_lang::check::validate`].
    pub fn new(module: Arc<ir::Module>) -> Result<CpuModule> {
        CpuModule::for_target(module, &Target::cpu())
    }

    /// Prepares `module` for `target`: validated against it (what the target lacks is an
    /// [`Error::Unsupported`] at its span) and run in warps of its `warp_width` lanes, 32 or 64
    /// (AMD CDNA's waves, e.g. `Target::hip("gfx90a")`: `warp-size` is 64, lane ids count to
    /// 63, shuffles, votes and reductions span the 64 lanes, and the full 32-bit mask operand
    /// means the whole wave). Other widths are an [`Error::Unsupported`].
    pub fn for_target(module: Arc<ir::Module>, target: &Target) -> Result<CpuModule> {
        if !matches!(target.warp_width, 32 | 64) {
            return Err(Error::Unsupported {
                span: chorus_lang::Span::generated(),
                what: format!(
                    "warps of {} lanes (the CPU executor runs 32 or 64)",
                    target.warp_width
                ),
            });
        }
        chorus_lang::check::validate(&module, target).map_err(|e| Error::Unsupported {
            span: e.span,
            what: e.message,
        })?;
        let mut globals = Vec::with_capacity(module.globals.len());
        for g in &module.globals {
            let bytes = compile::constant_bytes(&module, g)?;
            globals.push(DeviceBuffer::from_bytes(&bytes)?);
        }
        let ids: Vec<u32> = globals.iter().map(DeviceBuffer::id).collect();
        let program = compile::compile(&module, &ids, target.warp_width)?;
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        Ok(CpuModule {
            #[cfg(feature = "native")]
            native: native::NativeModule::new(&module, ids),
            ir: module,
            program,
            globals,
            output: Mutex::new(Box::new(std::io::stdout())),
            workers,
            interpret: std::env::var("CHORUS_CPU").is_ok_and(|v| v == "interpret"),
        })
    }

    /// The module this was prepared from.
    pub fn module(&self) -> &ir::Module {
        &self.ir
    }

    /// Sets how many OS threads run blocks (default: the available parallelism; at least 1).
    pub fn set_workers(&mut self, workers: usize) {
        self.workers = workers.max(1);
    }

    /// How many OS threads run blocks: how many blocks run at once.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Runs every kernel on the SIMT interpreter (`true`) or, where the native compiler
    /// compiles it, as machine code (`false`, the default unless the environment variable
    /// `CHORUS_CPU` is `interpret` when the module is prepared).
    pub fn set_interpreted(&mut self, interpret: bool) {
        self.interpret = interpret;
    }

    /// Which path kernel `name` runs on, compiling it to machine code now if it has not been
    /// (compiled code is kept with the module). [`KernelPath::Interpreted`] says why.
    pub fn kernel_path(&self, name: &str) -> Result<KernelPath> {
        let Some((id, function)) = self.ir.function(name) else {
            return Err(Error::NoSuchKernel(name.to_string()));
        };
        if function.kind != FunctionKind::Kernel {
            return Err(Error::NoSuchKernel(format!(
                "{name}` is a device function, not a kernel; `{name}"
            )));
        }
        Ok(self.path_of(id.index()))
    }

    /// Whether kernel `name` runs natively with SIMD over its threads: its thread loop runs
    /// chunks of consecutive `x` threads with the CPU's vector instructions, one lane per
    /// thread (see the crate's `native` module). `false` for an interpreted kernel, and for
    /// native code that loops over the threads one by one. Compiles the kernel if it has not
    /// been.
    pub fn kernel_uses_simd(&self, name: &str) -> Result<bool> {
        let path = self.kernel_path(name)?;
        #[cfg(feature = "native")]
        if path == KernelPath::Native
            && let Some((id, _)) = self.ir.function(name)
        {
            return Ok(self
                .native
                .kernel(&self.ir, id.index(), self.program.warp_width)
                .is_ok_and(|k| k.simd));
        }
        let _ = path;
        Ok(false)
    }

    fn path_of(&self, kernel: usize) -> KernelPath {
        if self.interpret {
            return KernelPath::Interpreted("the interpreter was asked for".into());
        }
        #[cfg(feature = "native")]
        {
            match self
                .native
                .kernel(&self.ir, kernel, self.program.warp_width)
            {
                Ok(_) => KernelPath::Native,
                Err(reason) => KernelPath::Interpreted(reason.to_string()),
            }
        }
        #[cfg(not(feature = "native"))]
        {
            let _ = kernel;
            KernelPath::Interpreted("built without the `native` feature".into())
        }
    }

    /// Sends `printf` output to `out` instead of standard output.
    pub fn set_printf_output(&self, out: Box<dyn Write + Send>) {
        *self.output.lock().unwrap_or_else(|p| p.into_inner()) = out;
    }

    /// Runs kernel `name` to completion over the grid of `config` with `args`, which must match
    /// the kernel's parameters in number and type (a buffer for each pointer parameter).
    pub fn launch(&self, name: &str, config: &LaunchConfig, args: &[KernelArg<'_>]) -> Result<()> {
        let Some((id, function)) = self.ir.function(name) else {
            return Err(Error::NoSuchKernel(name.to_string()));
        };
        if function.kind != FunctionKind::Kernel {
            return Err(Error::NoSuchKernel(format!(
                "{name}` is a device function, not a kernel; `{name}"
            )));
        }
        let launch_error = |message: String| Error::Launch {
            kernel: name.to_string(),
            message,
        };
        if args.len() != function.params.len() {
            return Err(launch_error(format!(
                "the kernel takes {} argument(s), {} were given",
                function.params.len(),
                args.len()
            )));
        }
        let mut checked = Vec::with_capacity(args.len());
        for (k, (param, arg)) in function.params.iter().zip(args).enumerate() {
            let local = &function[param.local];
            checked.push(match arg {
                KernelArg::Buffer(b) | KernelArg::BufferAt(b, _) => {
                    if local.ty.pointee().is_none() {
                        return Err(launch_error(format!(
                            "argument {} (`{}`) is a `{}`, but a buffer was given",
                            k + 1,
                            local.name,
                            local.ty
                        )));
                    }
                    let offset = match arg {
                        KernelArg::BufferAt(_, off) => *off,
                        _ => 0,
                    };
                    PrecheckedArg::Buffer(b, offset)
                }
                KernelArg::Texture(b, t) => {
                    if local.ty != Type::TextureObject {
                        return Err(launch_error(format!(
                            "argument {} (`{}`) is a `{}`, but a texture was given",
                            k + 1,
                            local.name,
                            local.ty
                        )));
                    }
                    PrecheckedArg::Texture(b, t)
                }
                KernelArg::Surface(b, s) => {
                    if local.ty != Type::SurfaceObject {
                        return Err(launch_error(format!(
                            "argument {} (`{}`) is a `{}`, but a surface was given",
                            k + 1,
                            local.name,
                            local.ty
                        )));
                    }
                    PrecheckedArg::Surface(b, s)
                }
                KernelArg::Value { ty, bytes } => {
                    if *ty != local.ty {
                        return Err(launch_error(format!(
                            "argument {} (`{}`) is a `{}`, but a `{ty}` was given",
                            k + 1,
                            local.name,
                            local.ty
                        )));
                    }
                    let size = self.ir.layout(ty).map_or(0, |(s, _)| s);
                    if bytes.len() != size {
                        return Err(launch_error(format!(
                            "argument {} (`{ty}`) needs {size} bytes, {} were given",
                            k + 1,
                            bytes.len()
                        )));
                    }
                    PrecheckedArg::Bytes(bytes)
                }
            });
        }
        self.launch_prechecked(id.index(), config, &checked)
    }

    /// Runs kernel number `kernel` (its index in [`ir::Module::functions`]) to completion over
    /// the grid of `config` with `args`, which the caller has already checked against the
    /// kernel's parameters (the `chorus` facade checks every launch once, before any backend):
    /// their types are not compared again, so a launch costs no per-argument type comparison
    /// and no copy of the argument bytes.
    ///
    /// This is safe: an argument that does not fit its parameter cannot reach host memory.
    /// Arguments are only read as the bytes of the parameter's leaves, so too few arguments or
    /// a value too short for its parameter is an [`Error::Launch`]; bytes given for a pointer
    /// parameter become a device pointer, and every device access is bounds-checked against the
    /// allocations of the launch, so a wrong one faults ([`Error::Fault`]) like any bad pointer.
    /// A wrong type of the right size is not detected: the kernel reads the bytes as its
    /// parameter's type. Use [`CpuModule::launch`] for arguments nothing has checked.
    pub fn launch_prechecked(
        &self,
        kernel: usize,
        config: &LaunchConfig,
        args: &[PrecheckedArg<'_>],
    ) -> Result<()> {
        let (Some(function), Some(code)) = (
            self.ir.functions.get(kernel),
            self.program.functions.get(kernel),
        ) else {
            return Err(Error::NoSuchKernel(format!("#{kernel}")));
        };
        let name: &str = &function.name;
        if function.kind != FunctionKind::Kernel {
            return Err(Error::NoSuchKernel(format!(
                "{name}` is a device function, not a kernel; `{name}"
            )));
        }
        let launch_error = |message: String| Error::Launch {
            kernel: name.to_string(),
            message,
        };
        check_config(config, function).map_err(launch_error)?;
        // Cheap, and what keeps every parameter supplied.
        if args.len() != code.params.len() {
            return Err(launch_error(format!(
                "the kernel takes {} argument(s), {} were given",
                code.params.len(),
                args.len()
            )));
        }
        let mut regions: Vec<(u32, memory::Region<'_>)> =
            self.globals.iter().map(|g| (g.id(), g.region())).collect();
        let mut params = Vec::new();
        let mut textures: Vec<texture::Bound<'_>> = Vec::new();
        for (k, (arg, (first_reg, leaves))) in args.iter().zip(&code.params).enumerate() {
            let pointer;
            let handle;
            let bytes: &[u8] = match arg {
                PrecheckedArg::Texture(b, t) => {
                    check_image_fits(t.image(), b).map_err(|m| {
                        launch_error(format!("argument {} (a texture): {m}", k + 1))
                    })?;
                    textures.push(texture::Bound::Texture(t, b.region()));
                    handle = t.handle().to_le_bytes();
                    &handle
                }
                PrecheckedArg::Surface(b, s) => {
                    check_image_fits(s.image(), b).map_err(|m| {
                        launch_error(format!("argument {} (a surface): {m}", k + 1))
                    })?;
                    textures.push(texture::Bound::Surface(s, b.region()));
                    handle = s.handle().to_le_bytes();
                    &handle
                }
                PrecheckedArg::Buffer(b, offset) => {
                    if *offset > b.len() {
                        return Err(launch_error(format!(
                            "argument {}: offset {offset} is beyond the {}-byte buffer",
                            k + 1,
                            b.len()
                        )));
                    }
                    if !regions.iter().any(|(i, _)| *i == b.id()) {
                        regions.push((b.id(), b.region()));
                    }
                    pointer = b.device_pointer(*offset).to_le_bytes();
                    &pointer
                }
                PrecheckedArg::Bytes(bytes) => bytes,
            };
            for (i, leaf) in leaves.iter().enumerate() {
                let at = leaf.offset as usize;
                let size = leaf.kind.size();
                let Some(leaf_bytes) = bytes.get(at..at + size) else {
                    return Err(launch_error(format!(
                        "argument {} has {} bytes, too few for its parameter",
                        k + 1,
                        bytes.len()
                    )));
                };
                let mut raw = [0u8; 8];
                raw[..size].copy_from_slice(leaf_bytes);
                params.push((
                    first_reg + i as u32,
                    value::from_raw(leaf.kind, u64::from_le_bytes(raw)),
                ));
            }
        }
        #[cfg(feature = "native")]
        if !self.interpret
            && let Ok(kernel) = self
                .native
                .kernel(&self.ir, kernel, self.program.warp_width)
        {
            let launch = native::NativeLaunch {
                kernel,
                kernel_name: name,
                grid: config.grid,
                block: config.block,
                regions: &regions,
                params: params.iter().map(|p| p.1).collect(),
                dynamic_shared: config.shared_mem,
                workers: self.workers,
                module: &self.native,
            };
            let _in_order = LAUNCHES.lock().unwrap_or_else(|p| p.into_inner());
            return native::run(&launch);
        }
        let uses_local_memory = self.program.functions.iter().any(|f| f.local_bytes > 0);
        let launch = exec::Launch {
            program: &self.program,
            kernel: kernel as u32,
            kernel_name: name,
            grid: config.grid,
            block: config.block,
            regions,
            params,
            textures,
            dynamic_shared: config.shared_mem,
            stack_bytes: if uses_local_memory {
                LOCAL_STACK_BYTES
            } else {
                0
            },
            output: &self.output,
            workers: self.workers,
        };
        // One launch at a time in the whole process (see "Launches and streams").
        let _in_order = LAUNCHES.lock().unwrap_or_else(|p| p.into_inner());
        exec::run(&launch)
    }

    /// The current bytes of global `name`.
    pub fn global_bytes(&self, name: &str) -> Result<Vec<u8>> {
        Ok(self.global(name)?.to_bytes())
    }

    /// Overwrites global `name` with `bytes` (exactly its size).
    pub fn set_global_bytes(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let g = self.global(name)?;
        if bytes.len() != g.len() {
            return Err(Error::GlobalAccess {
                name: name.to_string(),
                message: format!("it has {} bytes, {} were given", g.len(), bytes.len()),
            });
        }
        g.write(0, bytes)
    }

    /// Reads global `name` as a `T`, whose kernel type must be the global's.
    pub fn global_ref<T: KernelValue>(&self, name: &str) -> Result<T> {
        self.check_global_type::<T>(name)?;
        let bytes = self.global_bytes(name)?;
        Ok(bytemuck::pod_read_unaligned(&bytes))
    }

    /// Writes global `name` from a `T`, whose kernel type must be the global's.
    pub fn set_global_ref<T: KernelValue>(&self, name: &str, value: T) -> Result<()> {
        self.check_global_type::<T>(name)?;
        self.set_global_bytes(name, bytemuck::bytes_of(&value))
    }

    fn global(&self, name: &str) -> Result<&DeviceBuffer> {
        let (id, g) = self
            .ir
            .global(name)
            .ok_or_else(|| Error::NoSuchGlobal(name.to_string()))?;
        if g.qualifiers.contains(&ir::GlobalQualifier::Shared) {
            // As `cuModuleGetGlobal` on a `__shared__` variable: it exists only in each block.
            return Err(Error::GlobalAccess {
                name: name.to_string(),
                message: "a `:shared` global is one variable per block; the host cannot reach it"
                    .into(),
            });
        }
        Ok(&self.globals[id.index()])
    }

    fn check_global_type<T: KernelValue>(&self, name: &str) -> Result<()> {
        let (_, g) = self
            .ir
            .global(name)
            .ok_or_else(|| Error::NoSuchGlobal(name.to_string()))?;
        if g.ty != T::kernel_type() {
            return Err(Error::GlobalAccess {
                name: name.to_string(),
                message: format!("it is a `{}`, not a `{}`", g.ty, T::kernel_type()),
            });
        }
        Ok(())
    }
}

/// Whether `buffer` holds the whole of `image`.
fn check_image_fits(image: &ImageLayout, buffer: &DeviceBuffer) -> std::result::Result<(), String> {
    if image.bytes() > buffer.len() {
        return Err(format!(
            "its image needs {} bytes, but its buffer has {}",
            image.bytes(),
            buffer.len()
        ));
    }
    Ok(())
}

fn check_config(config: &LaunchConfig, function: &ir::Function) -> std::result::Result<(), String> {
    let [gx, gy, gz] = config.grid;
    let [bx, by, bz] = config.block;
    if config.grid.contains(&0) || config.block.contains(&0) {
        return Err(format!(
            "grid {:?} and block {:?} must be at least 1 in every dimension",
            config.grid, config.block
        ));
    }
    if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
        return Err(format!(
            "grid {:?} exceeds CUDA's limits (2^31-1, 65535, 65535)",
            config.grid
        ));
    }
    if bx > 1024 || by > 1024 || bz > 64 {
        return Err(format!(
            "block {:?} exceeds CUDA's limits (1024, 1024, 64)",
            config.block
        ));
    }
    let threads = bx as u64 * by as u64 * bz as u64;
    if threads > 1024 {
        return Err(format!(
            "a block of {threads} threads exceeds CUDA's limit of 1024"
        ));
    }
    if let Some(bounds) = function.launch_bounds
        && threads > bounds.max_threads as u64
    {
        return Err(format!(
            "a block of {threads} threads exceeds the kernel's launch bounds ({})",
            bounds.max_threads
        ));
    }
    if config.shared_mem > MAX_DYNAMIC_SHARED_MEMORY {
        return Err(format!(
            "{} bytes of dynamic shared memory exceed the limit of {MAX_DYNAMIC_SHARED_MEMORY}",
            config.shared_mem
        ));
    }
    Ok(())
}
