//! Chorus's bindings to the CUDA libraries: cuBLAS, cuBLASLt, cuFFT, cuRAND, cuSOLVER and
//! cuSPARSE, one Cargo feature and one module each.
//!
//! - **Probed, never panicking.** Each library is searched for once before its first use (the
//!   system loader, `CUDA_PATH`, `CUDA_HOME`, `/usr/local/cuda*`, pip's `nvidia/*/lib`), with
//!   every entry point the module calls. A missing one is [`Error::LibraryNotFound`]; each
//!   module's `is_available()` says so up front (the seed's `*cublas-not-found*` and friends).
//! - **Safe over device memory.** Operands are anything that gives a device slice
//!   ([`AsDeviceSlice`], [`AsDeviceSliceMut`]): `chorus_driver::MemoryBlock`, the facade's
//!   `chorus::MemoryBlock` on CUDA, or sub-slices of them. The memory a kernel-language kernel
//!   filled goes straight into a library call, without copies. Lengths, strides and leading
//!   dimensions are checked before each call.
//! - **Handles bound to a context and a stream** ([`Bound`]): made in the current context,
//!   working on a stream of it (a stream of another context is
//!   [`Error::StreamFromAnotherContext`]), destroyed on drop.
//! - **One error type**: statuses become [`Error::Status`] with the library's name for them.
//!
//! The raw bindings are cudarc's `sys` modules (dynamic loading); call them only after the
//! module's `LIBRARY.ensure()` succeeded.
//!
//! | module | library | what |
//! |---|---|---|
//! | `cublas` | cuBLAS | levels 1–3, batched GEMM, `gemmEx` (f16/bf16), TF32 |
//! | `cublaslt` | cuBLASLt | matmul with epilogues, FP8, heuristics, workspace |
//! | `cufft` | cuFFT | 1-D/2-D/3-D/batched C2C, R2C, C2R plans, a plan cache |
//! | `curand` | cuRAND | XORWOW, Philox, MRG32k3a, Sobol; uniform, normal, log-normal, Poisson |
//! | `cusolver` | cuSOLVER | LU, Cholesky, QR, symmetric eigen, SVD |
//! | `cusparse` | cuSPARSE | CSR/COO/CSC, SpMV, SpMM, SpGEMM, dense ↔ sparse |
//! | `cudnn` | cuDNN 9 | convolutions (with algorithm search), pooling, activations, softmax, batch norm |
//! | `nccl` | NCCL | communicators (one process, or one rank per process), collectives, send/recv, groups, a launcher |

mod bound;
mod error;
pub mod library;
mod types;

#[cfg(feature = "cublas")]
pub mod cublas;
#[cfg(feature = "cublaslt")]
pub mod cublaslt;
#[cfg(feature = "cudnn")]
pub mod cudnn;
#[cfg(feature = "cufft")]
pub mod cufft;
#[cfg(feature = "curand")]
pub mod curand;
#[cfg(feature = "cusolver")]
pub mod cusolver;
#[cfg(feature = "cusparse")]
pub mod cusparse;
#[cfg(feature = "nccl")]
pub mod nccl;

pub use bound::Bound;
pub use chorus_driver::{AsDeviceSlice, AsDeviceSliceMut, DeviceSlice, DeviceSliceMut, Stream};
pub use error::{Error, Result};
pub use library::Library;
pub use types::{C32, C64, Complex, Diagonal, F8E4M3, F8E5M2, Fill, Side, Transpose};
