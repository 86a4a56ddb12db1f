//! The native compiler: kernels of the typed IR compiled to machine code with Cranelift
//! (feature `native`, on by default), PoCL's region method.
//!
//! A kernel becomes one work-group function that runs every thread of one block. Code between
//! barriers runs as a loop over the block's threads; a kernel without `syncthreads` is one loop
//! over its threads. With barriers, the body is split into regions at each barrier: a barrier
//! at the top level, or inside an `if` or a loop whose own statements are then run region by
//! region, each region a loop over the threads that are active there (a byte mask per thread
//! and construct, as the interpreter's lane masks but block-wide). Locals that live across a
//! barrier (declared at region level) sit in per-thread arrays ("lane arrays"); locals of one
//! region are Cranelift variables (registers).
//!
//! A kernel without barriers first tries SIMD over its threads (`lower/simd.rs`): chunks of
//! [`runtime::LANES`] consecutive `x` threads run as 128-bit vectors, one lane per thread; an
//! access whose index is affine in the thread index is one contiguous vector access with one
//! check for the chunk, and a chunk that cannot run as vectors exactly (lanes that disagree on
//! a branch, a check that fails) runs through the scalar body instead. A body the vector code
//! does not take is lowered again without SIMD (`CHORUS_CPU_SIMD=0` skips the attempt).
//!
//! Safety is the interpreter's: a pointer is the same (allocation, offset) pair; an access
//! through a kernel parameter, a shared array or a global uses the allocation resolved once per
//! block (hoisted out of the thread loop; its limits computed by the launcher, see
//! `runtime::Root`) and one bounds-and-alignment compare and branch; any
//! other pointer is resolved through a per-launch table with a second compare. A failed check
//! leaves the function with the fault's data, and the launcher builds the interpreter's own
//! message from it (kernel, block, thread, source position, offset). Integer division by zero
//! faults; `INT_MIN / -1` wraps as in the interpreter.
//!
//! Device functions are Cranelift functions of their own (a fault propagates as a status;
//! results of several leaves go through memory the caller passes); vectors and structures are
//! one variable (or lane slot) per leaf, a field of a value in memory read alone; atomics check
//! their address in code and run the interpreter's host atomics; `half`, `bfloat16`, `fp8` and
//! `fp4` values are their raw bits, every operation on them a call of the interpreter's own
//! function. Warp collectives (`lower/warp.rs`) split the regions as a barrier does, and run
//! over each warp's 32 lanes with the interpreter's functions, on lane arrays. What is not
//! compiled yet (collectives in loop headers, on vectors or on 64-lane waves,
//! `printf`, textures and surfaces,
//! cuRAND, 16-bit atomics, the address of a local, recursion, barriers inside a `switch` or a
//! device function) makes the kernel run on the interpreter;
//! [`crate::CpuModule::kernel_path`] says which path a kernel takes and why. A failure of the
//! lowering is an `Err` (the kernel is interpreted), never a panic of the launch: the lowering
//! returns errors for what it cannot compile, and a panic inside it or inside Cranelift (a bug)
//! is caught, makes the kernel interpreted and retires the module's JIT module (its memory kept
//! for the kernels compiled into it before), so later kernels start from a fresh one.

mod lower;
mod runtime;

pub(crate) use runtime::{NativeLaunch, run};

use chorus_lang::ir;
use std::sync::{Mutex, OnceLock};

/// A compiled kernel: its entry point and what the launcher must prepare for it.
pub(crate) struct NativeKernel {
    /// `extern "C" fn(*mut runtime::Ctx) -> u32`, 0 when the block finished, 1 on a fault.
    pub(crate) entry: *const u8,
    /// The allocations resolved once per block, in root order.
    pub(crate) roots: Vec<runtime::RootSource>,
    /// Lane-array slots (8 bytes per thread each).
    pub(crate) lane_slots: u32,
    /// Mask slots (1 byte per thread each); slot 0 is "not returned", set by the launcher.
    pub(crate) mask_slots: u32,
    /// Source positions of the checks that can fault, by index.
    pub(crate) spans: Vec<chorus_lang::Span>,
    /// Static shared slots the kernel uses and their sizes in bytes.
    pub(crate) shared: Vec<(u32, usize)>,
    /// Whether the thread loop runs chunks of threads as vectors (`lower::simd`).
    pub(crate) simd: bool,
    /// Which JIT module holds the code (an index into [`Jit::retired`], or the current one
    /// when past its end): where the positions of its device functions' faults are.
    generation: usize,
}

// SAFETY: `entry` points into executable memory owned by the module's `JITModule`, which lives
// (and is only freed) with the `NativeModule` that hands out `&NativeKernel`s; the code is
// immutable once finalised and reentrant (all its state is in the `Ctx` passed to it).
unsafe impl Send for NativeKernel {}
// SAFETY: as for `Send`.
unsafe impl Sync for NativeKernel {}

/// The compiled code of one module: each kernel compiled on its first launch (or
/// [`crate::CpuModule::kernel_path`]) and kept in memory with the module.
pub(crate) struct NativeModule {
    jit: Mutex<Jit>,
    global_ids: Vec<u32>,
    kernels: Vec<OnceLock<Result<NativeKernel, String>>>,
}

/// A module's JIT code: the module new kernels go into, and those a panic of the compiler
/// retired (kept, since kernels compiled into them before still run from their memory).
#[derive(Default)]
struct Jit {
    current: Option<(cranelift_jit::JITModule, lower::DeviceCache)>,
    retired: Vec<(cranelift_jit::JITModule, lower::DeviceCache)>,
}

impl std::fmt::Debug for NativeModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeModule").finish_non_exhaustive()
    }
}

impl NativeModule {
    pub(crate) fn new(module: &ir::Module, global_ids: Vec<u32>) -> NativeModule {
        NativeModule {
            jit: Mutex::new(Jit::default()),
            global_ids,
            kernels: module.functions.iter().map(|_| OnceLock::new()).collect(),
        }
    }

    /// The compiled kernel `index`, compiling it on first use; `Err` says why it is interpreted.
    pub(crate) fn kernel(
        &self,
        module: &ir::Module,
        index: usize,
        warp_width: u32,
    ) -> Result<&NativeKernel, &str> {
        let Some(cell) = self.kernels.get(index) else {
            return Err("no such kernel");
        };
        cell.get_or_init(|| {
            let mut guard = self.jit.lock().unwrap_or_else(|p| p.into_inner());
            let jit = &mut *guard;
            if jit.current.is_none() {
                jit.current = Some((lower::new_jit()?, lower::DeviceCache::default()));
            }
            let generation = jit.retired.len();
            let Some((code, cache)) = jit.current.as_mut() else {
                return Err("no JIT module".into());
            };
            let started = std::time::Instant::now();
            // A panic in the lowering or in Cranelift is a bug, not the kernel's: the kernel
            // takes the interpreter, and the JIT module (perhaps left half-way through a
            // definition) is retired so later kernels start from a fresh one.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                lower::compile_kernel(code, cache, module, index, warp_width, &self.global_ids)
            }))
            .unwrap_or_else(|payload| {
                let what = payload
                    .downcast_ref::<&str>()
                    .copied()
                    .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                    .unwrap_or("a panic without a message");
                if let Some(old) = jit.current.take() {
                    jit.retired.push(old);
                }
                Err(format!(
                    "the native compiler failed on this kernel ({what})"
                ))
            })
            .map(|mut k| {
                k.generation = generation;
                k
            });
            match &result {
                Ok(_) => tracing::debug!(
                    kernel = &*module.functions[index].name,
                    micros = started.elapsed().as_micros() as u64,
                    "chorus-cpu: kernel compiled to native code"
                ),
                Err(reason) => tracing::debug!(
                    kernel = &*module.functions[index].name,
                    reason = reason.as_str(),
                    "chorus-cpu: kernel runs on the interpreter"
                ),
            }
            result
        })
        .as_ref()
        .map_err(String::as_str)
    }
}

impl NativeModule {
    /// The source position of fault position `index` (a kernel's own, or a device
    /// function's, marked with `lower::DEVICE_SPAN`).
    pub(crate) fn span(&self, kernel: &NativeKernel, index: u32) -> Option<chorus_lang::Span> {
        if index & lower::DEVICE_SPAN == 0 {
            return kernel.spans.get(index as usize).cloned();
        }
        let jit = self.jit.lock().unwrap_or_else(|p| p.into_inner());
        let (_, cache) = match jit.retired.get(kernel.generation) {
            Some(old) => old,
            None => jit.current.as_ref()?,
        };
        cache
            .spans
            .get((index & !lower::DEVICE_SPAN) as usize)
            .cloned()
    }
}

impl Drop for NativeModule {
    fn drop(&mut self) {
        let jit = std::mem::take(self.jit.get_mut().unwrap_or_else(|p| p.into_inner()));
        for (code, _) in jit.current.into_iter().chain(jit.retired) {
            // SAFETY: the kernels' entry points die with `self.kernels` (dropped with `self`);
            // no launch is running, since launches borrow the module that owns `self`.
            unsafe { code.free_memory() };
        }
    }
}
