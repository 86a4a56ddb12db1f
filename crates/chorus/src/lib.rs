//! Chorus: GPU programming in Rust with a kernel language of S-expressions and macros.
//!
//! ```
//! # fn main() -> chorus::Result<()> {
//! use chorus::{Direction, Launch, MemoryBlock};
//!
//! chorus::defkernel! {
//!     (defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int)))
//!       (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
//!         (if (< i n)
//!             (set (aref c i)
//!                  (+ (aref a i) (aref b i))))))
//! }
//!
//! let n = 1000;
//! let a = MemoryBlock::from_slice(&vec![1.0f32; n])?;
//! let b = MemoryBlock::from_slice(&vec![2.0f32; n])?;
//! let mut c = MemoryBlock::<f32>::alloc(n)?;
//! vec_add_kernel(&a, &b, &c, n as i32, Launch::grid(n.div_ceil(256)).block(256))?;
//! c.sync(Direction::DeviceToHost)?;
//! assert!(c.as_slice().iter().all(|&x| x == 3.0));
//! # Ok(()) }
//! ```
//!
//! * [`defkernel!`] checks kernels at compile time and generates a typed Rust function per
//!   kernel; [`Program`] does the same for kernel text at run time.
//! * [`Device::default`] is the device kernels run on: a CUDA GPU where the driver loads and a
//!   device exists (the one `CHORUS_DEVICE` names, default 0), else the CPU executor;
//!   `CHORUS_BACKEND=cuda|cpu|metal|hip` overrides, and [`with_backend`] and [`with_device`] override for
//!   a scope. [`devices`] lists every backend's devices; [`Backend::availability`] says why a
//!   backend cannot run kernels here. `CHORUS_CPU_DEVICES=N` makes the CPU backend N separate
//!   devices, so that code for several GPUs runs (and is tested) anywhere; `CHORUS_CPU_WARP=64`
//!   runs it in AMD CDNA's 64-lane waves.
//! * [`MemoryBlock`] holds a host copy and a device copy of an array, on one device;
//!   [`Launch`] says how a kernel runs, and on which device. The same code runs on every
//!   backend, and on several devices at once:
//!
//! ```
//! # fn main() -> chorus::Result<()> {
//! use chorus::{Direction, Launch, MemoryBlock};
//! # chorus::defkernel! {
//! #     (defkernel fill (void ((a int*) (v int))) (set (aref a thread-idx-x) v))
//! # }
//! for (k, device) in chorus::devices().into_iter().enumerate() {
//!     let mut a = MemoryBlock::<i32>::alloc_on(device, 32)?;
//!     fill(&a, k as i32, Launch::grid(1).block(32).on(device))?;
//!     a.sync(Direction::DeviceToHost)?;
//!     assert!(a.as_slice().iter().all(|&x| x == k as i32));
//! }
//! # Ok(()) }
//! ```
//! * The backends themselves: [`cuda`] (the native CUDA API: contexts, memory, the driver) and
//!   [`cpu`]; the language: [`lang`].
//!
//! | the seed (cl-cuda) | Chorus |
//! |---|---|
//! | `(defkernel …)`, `defkernel-struct`, `defglobal` | [`defkernel!`] (compile time), [`Program::new`] (run time) |
//! | `(vec-add-kernel a b c n :grid-dim … :block-dim …)` | `vec_add_kernel(&a, &b, &c, n, Launch::grid(..).block(..))` |
//! | `:shared-mem`, `:stream` | [`Launch::shared_mem`], [`Launch::stream`] |
//! | `alloc-memory-block`, `with-memory-blocks` | [`MemoryBlock::alloc`] (freed on drop) |
//! | `sync-memory-block`, `memory-block-aref` | [`MemoryBlock::sync`], indexing |
//! | `global-ref`, `(setf global-ref)` | [`Program::global_ref`], [`Program::set_global_ref`] |
//! | `*backend*`, `list-devices` | [`backend`], [`with_backend`], [`list_devices`], `CHORUS_BACKEND` |
//! | `with-cuda` on a chosen device | [`with_device`], [`MemoryBlock::alloc_on`], [`Launch::on`] |
//! | `synchronize-context` | [`synchronize`], [`Device::synchronize`] |
//! | `with-cuda`, the driver API, `*sdk-not-found*` | [`cuda`] |

// Lets the code `defkernel!` generates (which names `::chorus`) compile inside this crate too.
extern crate self as chorus;

mod args;
mod backend;
/// The backends built into this crate, one file each, behind the interface of `hal.rs`.
mod backends {
    pub(crate) mod cpu;
    pub(crate) mod cpu_texture;
    pub(crate) mod cuda;
    pub(crate) mod cuda_context;
    pub(crate) mod cuda_generation;
    pub(crate) mod cuda_texture;
    pub(crate) mod hip;
    #[cfg(target_vendor = "apple")]
    pub(crate) mod metal;
}
mod dispatch;
mod error;
mod hal;
mod image;
mod kind;
mod launch;
mod memory;
mod occupancy;
mod program;
mod stream;
mod texture;

pub use args::Arg;
pub use backend::{
    backend, check_backend, current_device, devices, list_devices, synchronize, with_backend,
    with_device,
};
pub use error::{ArgumentKind, BadExtent, Error, Result, Unavailable};
pub use image::{AddressMode, ChannelFormat, ChannelType, FilterMode, ReadMode, TextureDesc};
pub use kind::{Backend, CopyRoute, Device};
pub use launch::{Dim3, IntoDim3, Launch};
pub use memory::{DeviceAddress, DevicePtr, Direction, MemoryBlock};
pub use occupancy::Occupancy;
pub use program::Program;
pub use stream::Stream;
pub use texture::{Surface, Texture, TextureArray};

pub use chorus_lang::host::{
    Bool8, CurandStateXorwow, Double2, Double3, Double4, Float2, Float3, Float4, Fp4E2M1, Fp8E4M3,
    Half2, Int2, Int4, KernelValue, SizeT, UInt2, UInt4, bf16, f16,
};
pub use chorus_macros::defkernel;

/// The native CUDA backend (the seed's `chorus/cuda`): `with_cuda`, contexts, memory blocks, the
/// driver API, the kernel manager.
pub use chorus_cuda as cuda;

/// The CPU executor.
pub use chorus_cpu as cpu;

/// The kernel language: reader, macro expander, checker, typed IR, targets and their
/// validation, the C-family printer and its dialects.
pub use chorus_lang as lang;

/// What the code `defkernel!` generates needs; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use bytemuck;
}
