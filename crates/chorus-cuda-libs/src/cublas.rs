//! cuBLAS: dense linear algebra (levels 1 to 3, `gemmEx` for f16 and bf16, TF32 math).
//!
//! Matrices are **column-major**, as cuBLAS stores them: element `(i, j)` of an `m × n` matrix
//! with leading dimension `ld ≥ m` is at `i + j·ld`. Rust arrays are usually row-major; a
//! row-major matrix is the column-major transpose of itself, so [`Blas::gemm_row_major`]
//! computes `C = A·B` on row-major data as `Cᵀ = Bᵀ·Aᵀ` in column-major (swapping the operands
//! and `m`/`n`), with no copy. Every other call takes column-major data; pass
//! [`Transpose::Yes`] to read a row-major matrix as stored.
//!
//! Arguments are checked before the call: each matrix (`ld ≥ rows`, `ld·(cols−1) + rows`
//! elements present), each vector (`1 + (n−1)·|inc|` elements), each batch's strides.
//! Scalars (`alpha`, `beta`) are host values; reductions (`dot`, `nrm2`, `asum`, `iamax`)
//! return to the host and so wait for the stream.

#![allow(clippy::too_many_arguments)] // the BLAS calling convention: dimensions, then operands

use crate::bound::Bound;
use crate::error::{Error, Result};
use crate::library::{Library, found_by_system_loader};
use crate::types::{C32, C64, Diagonal, Fill, Side, Transpose, check_matrix, check_vector, to_int};
use chorus_driver::{AsDeviceSlice, AsDeviceSliceMut, DeviceMemory, Stream};
use cudarc::cublas::sys::{self, cublasStatus_t};
use half::{bf16, f16};
use std::ffi::{CStr, c_int};

/// cuBLASLt's file, which libcublas links against: loaded first.
static CUBLASLT_FILE: Library = Library::new("cuBLASLt", "cublasLt", &[], &[], || {
    found_by_system_loader("cublasLt")
});

/// The cuBLAS library, probed on first use.
pub static LIBRARY: Library = Library::new("cuBLAS", "cublas", &[&CUBLASLT_FILE], SYMBOLS, || {
    // SAFETY: only asks the system loader whether cudarc's names resolve.
    unsafe { sys::is_culib_present() }
});

/// True when cuBLAS can be used (the seed's `*cublas-not-found*`, negated).
pub fn is_available() -> bool {
    LIBRARY.is_available()
}

/// Every entry point this module calls.
const SYMBOLS: &[&str] = &[
    "cublasCreate_v2",
    "cublasDestroy_v2",
    "cublasSetStream_v2",
    "cublasSetMathMode",
    "cublasGetStatusName",
    "cublasGetStatusString",
    "cublasGemmEx",
    "cublasSaxpy_v2",
    "cublasDaxpy_v2",
    "cublasCaxpy_v2",
    "cublasZaxpy_v2",
    "cublasSdot_v2",
    "cublasDdot_v2",
    "cublasCdotu_v2",
    "cublasZdotu_v2",
    "cublasCdotc_v2",
    "cublasZdotc_v2",
    "cublasSnrm2_v2",
    "cublasDnrm2_v2",
    "cublasScnrm2_v2",
    "cublasDznrm2_v2",
    "cublasSscal_v2",
    "cublasDscal_v2",
    "cublasCscal_v2",
    "cublasZscal_v2",
    "cublasSasum_v2",
    "cublasDasum_v2",
    "cublasScasum_v2",
    "cublasDzasum_v2",
    "cublasIsamax_v2",
    "cublasIdamax_v2",
    "cublasIcamax_v2",
    "cublasIzamax_v2",
    "cublasScopy_v2",
    "cublasDcopy_v2",
    "cublasCcopy_v2",
    "cublasZcopy_v2",
    "cublasSswap_v2",
    "cublasDswap_v2",
    "cublasCswap_v2",
    "cublasZswap_v2",
    "cublasSgemv_v2",
    "cublasDgemv_v2",
    "cublasCgemv_v2",
    "cublasZgemv_v2",
    "cublasSger_v2",
    "cublasDger_v2",
    "cublasCgeru_v2",
    "cublasZgeru_v2",
    "cublasCgerc_v2",
    "cublasZgerc_v2",
    "cublasSgemm_v2",
    "cublasDgemm_v2",
    "cublasCgemm_v2",
    "cublasZgemm_v2",
    "cublasSgemmStridedBatched",
    "cublasDgemmStridedBatched",
    "cublasCgemmStridedBatched",
    "cublasZgemmStridedBatched",
    "cublasSgemmBatched",
    "cublasDgemmBatched",
    "cublasCgemmBatched",
    "cublasZgemmBatched",
    "cublasStrsm_v2",
    "cublasDtrsm_v2",
    "cublasCtrsm_v2",
    "cublasZtrsm_v2",
    "cublasSsyrk_v2",
    "cublasDsyrk_v2",
    "cublasCsyrk_v2",
    "cublasZsyrk_v2",
    "cublasSsymm_v2",
    "cublasDsymm_v2",
    "cublasCsymm_v2",
    "cublasZsymm_v2",
];

/// A cuBLAS status as an error naming `call`, with cuBLAS's name and description of it.
pub fn check(call: &'static str, status: cublasStatus_t) -> Result<()> {
    if status == cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        return Ok(());
    }
    let text = |p: *const std::ffi::c_char| {
        // SAFETY: cuBLAS returns static NUL-terminated strings (or null).
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    let (name, message) = if LIBRARY.is_available() {
        // SAFETY: the library is loaded with both symbols (probed).
        unsafe {
            (
                text(sys::cublasGetStatusName(status)),
                text(sys::cublasGetStatusString(status)),
            )
        }
    } else {
        (None, None)
    };
    Err(Error::Status {
        library: "cuBLAS",
        call,
        code: status as i64,
        name: name.unwrap_or_else(|| format!("{status:?}")),
        message: message.unwrap_or_else(|| "unknown status".into()),
    })
}

/// Calls a cuBLAS entry point and checks its status.
macro_rules! blas {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        // SAFETY: the library is loaded (every handle ensured it); each call site checked the
        // extents of its device operands against the dimensions passed.
        check(stringify!($f), unsafe { sys::$f($($arg),*) })
    };
}

/// A host scalar at an address aligned for any CUDA vector type (cuBLAS reads `float2` and
/// `double2` through these pointers).
#[repr(C, align(16))]
struct Aligned<T>(T);

/// A host scalar's address as the binding's element type (same layout).
fn scalar<T, C>(x: &T) -> *const C {
    (x as *const T).cast()
}

fn op(t: Transpose) -> sys::cublasOperation_t {
    match t {
        Transpose::No => sys::cublasOperation_t::CUBLAS_OP_N,
        Transpose::Yes => sys::cublasOperation_t::CUBLAS_OP_T,
        Transpose::Conjugate => sys::cublasOperation_t::CUBLAS_OP_C,
    }
}

fn fill(f: Fill) -> sys::cublasFillMode_t {
    match f {
        Fill::Lower => sys::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
        Fill::Upper => sys::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
    }
}

fn side(s: Side) -> sys::cublasSideMode_t {
    match s {
        Side::Left => sys::cublasSideMode_t::CUBLAS_SIDE_LEFT,
        Side::Right => sys::cublasSideMode_t::CUBLAS_SIDE_RIGHT,
    }
}

fn diag(d: Diagonal) -> sys::cublasDiagType_t {
    match d {
        Diagonal::NonUnit => sys::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT,
        Diagonal::Unit => sys::cublasDiagType_t::CUBLAS_DIAG_UNIT,
    }
}

mod sealed {
    pub trait Sealed {}
}

/// An entry point of cuBLAS and its name (for errors).
type Entry<F> = (F, &'static str);
type H = sys::cublasHandle_t;
type S = cublasStatus_t;
type Op = sys::cublasOperation_t;
type I = c_int;

/// One element type's cuBLAS entry points (cudarc's bindings; `C` is the binding's element
/// type, `R` the real type of the norms). Only [`Blas`] calls them.
#[doc(hidden)]
#[allow(clippy::type_complexity)] // the C signatures, one a field
pub struct BlasFns<C, R> {
    axpy: Entry<unsafe fn(H, I, *const C, *const C, I, *mut C, I) -> S>,
    dotu: Entry<unsafe fn(H, I, *const C, I, *const C, I, *mut C) -> S>,
    dotc: Entry<unsafe fn(H, I, *const C, I, *const C, I, *mut C) -> S>,
    nrm2: Entry<unsafe fn(H, I, *const C, I, *mut R) -> S>,
    asum: Entry<unsafe fn(H, I, *const C, I, *mut R) -> S>,
    scal: Entry<unsafe fn(H, I, *const C, *mut C, I) -> S>,
    iamax: Entry<unsafe fn(H, I, *const C, I, *mut I) -> S>,
    copy: Entry<unsafe fn(H, I, *const C, I, *mut C, I) -> S>,
    swap: Entry<unsafe fn(H, I, *mut C, I, *mut C, I) -> S>,
    gemv:
        Entry<unsafe fn(H, Op, I, I, *const C, *const C, I, *const C, I, *const C, *mut C, I) -> S>,
    geru: Entry<unsafe fn(H, I, I, *const C, *const C, I, *const C, I, *mut C, I) -> S>,
    gerc: Entry<unsafe fn(H, I, I, *const C, *const C, I, *const C, I, *mut C, I) -> S>,
    gemm: Entry<
        unsafe fn(H, Op, Op, I, I, I, *const C, *const C, I, *const C, I, *const C, *mut C, I) -> S,
    >,
    gemm_strided: Entry<
        unsafe fn(
            H,
            Op,
            Op,
            I,
            I,
            I,
            *const C,
            *const C,
            I,
            i64,
            *const C,
            I,
            i64,
            *const C,
            *mut C,
            I,
            i64,
            I,
        ) -> S,
    >,
    gemm_batched: Entry<
        unsafe fn(
            H,
            Op,
            Op,
            I,
            I,
            I,
            *const C,
            *const *const C,
            I,
            *const *const C,
            I,
            *const C,
            *const *mut C,
            I,
            I,
        ) -> S,
    >,
    trsm: Entry<
        unsafe fn(
            H,
            sys::cublasSideMode_t,
            sys::cublasFillMode_t,
            Op,
            sys::cublasDiagType_t,
            I,
            I,
            *const C,
            *const C,
            I,
            *mut C,
            I,
        ) -> S,
    >,
    syrk: Entry<
        unsafe fn(
            H,
            sys::cublasFillMode_t,
            Op,
            I,
            I,
            *const C,
            *const C,
            I,
            *const C,
            *mut C,
            I,
        ) -> S,
    >,
    symm: Entry<
        unsafe fn(
            H,
            sys::cublasSideMode_t,
            sys::cublasFillMode_t,
            I,
            I,
            *const C,
            *const C,
            I,
            *const C,
            I,
            *const C,
            *mut C,
            I,
        ) -> S,
    >,
}

/// The element types of the typed BLAS calls: `f32`, `f64`, [`C32`], [`C64`] (sealed; the
/// entry points of each are in a table that [`Blas`]'s methods call through).
pub trait BlasScalar: bytemuck::Pod + sealed::Sealed {
    /// The real type of the norms (`f32` for `f32` and [`C32`]).
    type Real: bytemuck::Pod + Default;
    /// The binding's element type (same layout as `Self`).
    #[doc(hidden)]
    type Cu;
    /// The entry points.
    #[doc(hidden)]
    const FNS: BlasFns<Self::Cu, Self::Real>;
}

/// Calls `T`'s entry point `f` of [`BlasScalar::FNS`] and checks its status, naming it.
macro_rules! typed {
    ($t:ident . $f:ident ( $($arg:expr),* $(,)? )) => {{
        let (f, name) = <$t as BlasScalar>::FNS.$f;
        // SAFETY: the library is loaded (every handle ensured it); each call site checked the
        // extents of its device operands against the dimensions passed, and the addresses are
        // only cast to the binding's element type of the same layout.
        check(name, unsafe { f($($arg),*) })
    }};
}

/// `BlasScalar` for `$t` (binding type `$cu`, norms in `$real`): the names of its entry points,
/// in the order of [`BlasFns`]'s fields.
macro_rules! blas_scalar {
    ($t:ty, $real:ty, $cu:ty, [$($field:ident: $f:ident),* $(,)?]) => {
        impl sealed::Sealed for $t {}
        impl BlasScalar for $t {
            type Real = $real;
            type Cu = $cu;
            const FNS: BlasFns<$cu, $real> = BlasFns {
                $($field: (sys::$f, stringify!($f))),*
            };
        }
        #[cfg(test)]
        impl tests::Names for $t {
            const NAMES: &'static [&'static str] = &[$(stringify!($f)),*];
        }
    };
}

blas_scalar!(f32, f32, f32, [
    axpy: cublasSaxpy_v2, dotu: cublasSdot_v2, dotc: cublasSdot_v2, nrm2: cublasSnrm2_v2,
    asum: cublasSasum_v2, scal: cublasSscal_v2, iamax: cublasIsamax_v2, copy: cublasScopy_v2,
    swap: cublasSswap_v2, gemv: cublasSgemv_v2, geru: cublasSger_v2, gerc: cublasSger_v2,
    gemm: cublasSgemm_v2, gemm_strided: cublasSgemmStridedBatched,
    gemm_batched: cublasSgemmBatched, trsm: cublasStrsm_v2, syrk: cublasSsyrk_v2,
    symm: cublasSsymm_v2,
]);
blas_scalar!(f64, f64, f64, [
    axpy: cublasDaxpy_v2, dotu: cublasDdot_v2, dotc: cublasDdot_v2, nrm2: cublasDnrm2_v2,
    asum: cublasDasum_v2, scal: cublasDscal_v2, iamax: cublasIdamax_v2, copy: cublasDcopy_v2,
    swap: cublasDswap_v2, gemv: cublasDgemv_v2, geru: cublasDger_v2, gerc: cublasDger_v2,
    gemm: cublasDgemm_v2, gemm_strided: cublasDgemmStridedBatched,
    gemm_batched: cublasDgemmBatched, trsm: cublasDtrsm_v2, syrk: cublasDsyrk_v2,
    symm: cublasDsymm_v2,
]);
blas_scalar!(C32, f32, sys::cuComplex, [
    axpy: cublasCaxpy_v2, dotu: cublasCdotu_v2, dotc: cublasCdotc_v2, nrm2: cublasScnrm2_v2,
    asum: cublasScasum_v2, scal: cublasCscal_v2, iamax: cublasIcamax_v2, copy: cublasCcopy_v2,
    swap: cublasCswap_v2, gemv: cublasCgemv_v2, geru: cublasCgeru_v2, gerc: cublasCgerc_v2,
    gemm: cublasCgemm_v2, gemm_strided: cublasCgemmStridedBatched,
    gemm_batched: cublasCgemmBatched, trsm: cublasCtrsm_v2, syrk: cublasCsyrk_v2,
    symm: cublasCsymm_v2,
]);
blas_scalar!(C64, f64, sys::cuDoubleComplex, [
    axpy: cublasZaxpy_v2, dotu: cublasZdotu_v2, dotc: cublasZdotc_v2, nrm2: cublasDznrm2_v2,
    asum: cublasDzasum_v2, scal: cublasZscal_v2, iamax: cublasIzamax_v2, copy: cublasZcopy_v2,
    swap: cublasZswap_v2, gemv: cublasZgemv_v2, geru: cublasZgeru_v2, gerc: cublasZgerc_v2,
    gemm: cublasZgemm_v2, gemm_strided: cublasZgemmStridedBatched,
    gemm_batched: cublasZgemmBatched, trsm: cublasZtrsm_v2, syrk: cublasZsyrk_v2,
    symm: cublasZsymm_v2,
]);

/// The element types of [`Blas::gemm_ex`]: `f16`, `bf16` and `f32`.
pub trait GemmExType: bytemuck::Pod + sealed::Sealed {
    /// cuBLAS's data type for it.
    #[doc(hidden)]
    const DATA_TYPE: sys::cudaDataType_t;
}

impl sealed::Sealed for f16 {}
impl sealed::Sealed for bf16 {}
impl GemmExType for f16 {
    const DATA_TYPE: sys::cudaDataType_t = sys::cudaDataType_t::CUDA_R_16F;
}
impl GemmExType for bf16 {
    const DATA_TYPE: sys::cudaDataType_t = sys::cudaDataType_t::CUDA_R_16BF;
}
impl GemmExType for f32 {
    const DATA_TYPE: sys::cudaDataType_t = sys::cudaDataType_t::CUDA_R_32F;
}

/// cuBLAS's math mode (`cublasSetMathMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathMode {
    /// Full precision for f32 (no TF32), tensor cores where the types allow.
    Default,
    /// FP32 multiplies may round their inputs to TF32 on tensor cores (faster, ~10-bit mantissa).
    Tf32,
    /// The reference algorithms only, no reduced precision anywhere.
    Pedantic,
}

/// A cuBLAS handle bound to a context and a stream, destroyed on drop.
#[derive(Debug)]
pub struct Blas<'s> {
    raw: sys::cublasHandle_t,
    bound: Bound<'s>,
}

// SAFETY: a cuBLAS handle may be used from any thread, one thread at a time (cuBLAS's rule), so
// it may move between threads; it is not `Sync`.
unsafe impl Send for Blas<'_> {}

impl<'s> Blas<'s> {
    /// A handle in the current context whose work goes on `stream`. Errors: cuBLAS missing
    /// ([`Error::LibraryNotFound`]), no current context, a stream of another context.
    pub fn new(stream: &'s Stream) -> Result<Blas<'s>> {
        LIBRARY.ensure()?;
        let bound = Bound::current(stream)?;
        let mut raw = std::ptr::null_mut();
        blas!(cublasCreate_v2(&mut raw))?;
        let blas = Blas { raw, bound };
        blas!(cublasSetStream_v2(raw, stream.raw() as sys::cudaStream_t))?;
        Ok(blas)
    }

    /// Puts later work on `stream` (of the handle's context).
    pub fn set_stream(&mut self, stream: &'s Stream) -> Result<()> {
        self.bound = self.bound.with_stream(stream)?;
        self.bound.enter()?;
        blas!(cublasSetStream_v2(
            self.raw,
            stream.raw() as sys::cudaStream_t
        ))
    }

    /// The stream the handle's work goes on.
    pub fn stream(&self) -> &'s Stream {
        self.bound.stream()
    }

    /// Sets the math mode ([`MathMode::Tf32`] lets FP32 GEMMs use TF32 tensor cores).
    pub fn set_math_mode(&mut self, mode: MathMode) -> Result<()> {
        self.bound.enter()?;
        let mode = match mode {
            MathMode::Default => sys::cublasMath_t::CUBLAS_DEFAULT_MATH,
            MathMode::Tf32 => sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH,
            MathMode::Pedantic => sys::cublasMath_t::CUBLAS_PEDANTIC_MATH,
        };
        blas!(cublasSetMathMode(self.raw, mode))
    }

    /// The raw handle, for calls through cudarc's `cublas::sys`.
    pub fn raw(&self) -> sys::cublasHandle_t {
        self.raw
    }

    fn enter(&self) -> Result<sys::cublasHandle_t> {
        self.bound.enter()?;
        Ok(self.raw)
    }

    // ---- level 1 ----

    /// `y ← alpha·x + y` over `n` elements `incx` and `incy` apart.
    pub fn axpy<T: BlasScalar>(
        &self,
        n: usize,
        alpha: T,
        x: &impl AsDeviceSlice<T>,
        incx: i32,
        y: &mut impl AsDeviceSliceMut<T>,
        incy: i32,
    ) -> Result<()> {
        let (x, y) = (x.as_device_slice()?, y.as_device_slice_mut()?);
        check_vector("axpy", "x", x.len(), n, incx)?;
        check_vector("axpy", "y", y.len(), n, incy)?;
        let n = to_int("axpy", "n", n)?;
        let h = self.enter()?;
        let alpha = Aligned(alpha);
        // Both vectors hold their `n` strided elements (checked above).
        typed!(T.axpy(
            h,
            n,
            scalar(&alpha.0),
            x.ptr() as _,
            incx,
            y.ptr() as _,
            incy
        ))
    }

    /// `Σ xᵢ·yᵢ` (unconjugated for complex types; see [`Blas::dotc`]).
    pub fn dot<T: BlasScalar>(
        &self,
        n: usize,
        x: &impl AsDeviceSlice<T>,
        incx: i32,
        y: &impl AsDeviceSlice<T>,
        incy: i32,
    ) -> Result<T> {
        self.dot_with(n, x, incx, y, incy, false)
    }

    /// `Σ conj(xᵢ)·yᵢ` (the same as [`Blas::dot`] for real types).
    pub fn dotc<T: BlasScalar>(
        &self,
        n: usize,
        x: &impl AsDeviceSlice<T>,
        incx: i32,
        y: &impl AsDeviceSlice<T>,
        incy: i32,
    ) -> Result<T> {
        self.dot_with(n, x, incx, y, incy, true)
    }

    fn dot_with<T: BlasScalar>(
        &self,
        n: usize,
        x: &impl AsDeviceSlice<T>,
        incx: i32,
        y: &impl AsDeviceSlice<T>,
        incy: i32,
        conjugate: bool,
    ) -> Result<T> {
        let (x, y) = (x.as_device_slice()?, y.as_device_slice()?);
        check_vector("dot", "x", x.len(), n, incx)?;
        check_vector("dot", "y", y.len(), n, incy)?;
        let n = to_int("dot", "n", n)?;
        let h = self.enter()?;
        let mut out = Aligned(T::zeroed());
        // As for axpy; the result is written to the host (pointer mode host).
        let out_ptr = (&mut out.0 as *mut T).cast();
        if conjugate {
            typed!(T.dotc(h, n, x.ptr() as _, incx, y.ptr() as _, incy, out_ptr))?;
        } else {
            typed!(T.dotu(h, n, x.ptr() as _, incx, y.ptr() as _, incy, out_ptr))?;
        }
        Ok(out.0)
    }

    /// The Euclidean norm `√Σ|xᵢ|²`.
    pub fn nrm2<T: BlasScalar>(
        &self,
        n: usize,
        x: &impl AsDeviceSlice<T>,
        incx: i32,
    ) -> Result<T::Real> {
        let x = x.as_device_slice()?;
        check_vector("nrm2", "x", x.len(), n, incx)?;
        let n = to_int("nrm2", "n", n)?;
        let h = self.enter()?;
        let mut out = T::Real::default();
        // x holds its elements (checked).
        typed!(T.nrm2(h, n, x.ptr() as _, incx, &mut out))?;
        Ok(out)
    }

    /// `Σ |re xᵢ| + |im xᵢ|`.
    pub fn asum<T: BlasScalar>(
        &self,
        n: usize,
        x: &impl AsDeviceSlice<T>,
        incx: i32,
    ) -> Result<T::Real> {
        let x = x.as_device_slice()?;
        check_vector("asum", "x", x.len(), n, incx)?;
        let n = to_int("asum", "n", n)?;
        let h = self.enter()?;
        let mut out = T::Real::default();
        typed!(T.asum(h, n, x.ptr() as _, incx, &mut out))?;
        Ok(out)
    }

    /// `x ← alpha·x`.
    pub fn scal<T: BlasScalar>(
        &self,
        n: usize,
        alpha: T,
        x: &mut impl AsDeviceSliceMut<T>,
        incx: i32,
    ) -> Result<()> {
        let x = x.as_device_slice_mut()?;
        check_vector("scal", "x", x.len(), n, incx)?;
        let n = to_int("scal", "n", n)?;
        let h = self.enter()?;
        let alpha = Aligned(alpha);
        typed!(T.scal(h, n, scalar(&alpha.0), x.ptr() as _, incx))
    }

    /// The **0-based** index of the element of largest `|re| + |im|` (the first of equals);
    /// `None` for `n = 0`. (cuBLAS's own result is 1-based.)
    pub fn iamax<T: BlasScalar>(
        &self,
        n: usize,
        x: &impl AsDeviceSlice<T>,
        incx: i32,
    ) -> Result<Option<usize>> {
        let x = x.as_device_slice()?;
        check_vector("iamax", "x", x.len(), n, incx)?;
        let n = to_int("iamax", "n", n)?;
        let h = self.enter()?;
        let mut out: c_int = 0;
        typed!(T.iamax(h, n, x.ptr() as _, incx, &mut out))?;
        Ok((out > 0).then(|| out as usize - 1))
    }

    /// `y ← x`.
    pub fn copy<T: BlasScalar>(
        &self,
        n: usize,
        x: &impl AsDeviceSlice<T>,
        incx: i32,
        y: &mut impl AsDeviceSliceMut<T>,
        incy: i32,
    ) -> Result<()> {
        let (x, y) = (x.as_device_slice()?, y.as_device_slice_mut()?);
        check_vector("copy", "x", x.len(), n, incx)?;
        check_vector("copy", "y", y.len(), n, incy)?;
        let n = to_int("copy", "n", n)?;
        let h = self.enter()?;
        typed!(T.copy(h, n, x.ptr() as _, incx, y.ptr() as _, incy))
    }

    /// `x ↔ y`.
    pub fn swap<T: BlasScalar>(
        &self,
        n: usize,
        x: &mut impl AsDeviceSliceMut<T>,
        incx: i32,
        y: &mut impl AsDeviceSliceMut<T>,
        incy: i32,
    ) -> Result<()> {
        let (x, y) = (x.as_device_slice_mut()?, y.as_device_slice_mut()?);
        check_vector("swap", "x", x.len(), n, incx)?;
        check_vector("swap", "y", y.len(), n, incy)?;
        let n = to_int("swap", "n", n)?;
        let h = self.enter()?;
        typed!(T.swap(h, n, x.ptr() as _, incx, y.ptr() as _, incy))
    }

    // ---- level 2 ----

    /// `y ← alpha·op(A)·x + beta·y` for a stored `m × n` matrix `A`.
    pub fn gemv<T: BlasScalar>(
        &self,
        trans: Transpose,
        m: usize,
        n: usize,
        alpha: T,
        a: &impl AsDeviceSlice<T>,
        lda: usize,
        x: &impl AsDeviceSlice<T>,
        incx: i32,
        beta: T,
        y: &mut impl AsDeviceSliceMut<T>,
        incy: i32,
    ) -> Result<()> {
        let (a, x, y) = (
            a.as_device_slice()?,
            x.as_device_slice()?,
            y.as_device_slice_mut()?,
        );
        check_matrix("gemv", "A", a.len(), m, n, lda)?;
        let (rows, cols) = trans.apply(m, n);
        check_vector("gemv", "x", x.len(), cols, incx)?;
        check_vector("gemv", "y", y.len(), rows, incy)?;
        let (mi, ni, ldai) = (
            to_int("gemv", "m", m)?,
            to_int("gemv", "n", n)?,
            to_int("gemv", "lda", lda)?,
        );
        let h = self.enter()?;
        let (alpha, beta) = (Aligned(alpha), Aligned(beta));
        // Every operand holds the extent its dimensions describe (checked).
        typed!(T.gemv(
            h,
            op(trans),
            mi,
            ni,
            scalar(&alpha.0),
            a.ptr() as _,
            ldai,
            x.ptr() as _,
            incx,
            scalar(&beta.0),
            y.ptr() as _,
            incy,
        ))
    }

    /// `A ← alpha·x·yᵀ + A` (unconjugated; see [`Blas::gerc`]) for an `m × n` matrix `A`.
    pub fn ger<T: BlasScalar>(
        &self,
        m: usize,
        n: usize,
        alpha: T,
        x: &impl AsDeviceSlice<T>,
        incx: i32,
        y: &impl AsDeviceSlice<T>,
        incy: i32,
        a: &mut impl AsDeviceSliceMut<T>,
        lda: usize,
    ) -> Result<()> {
        self.ger_with(false, m, n, alpha, x, incx, y, incy, a, lda)
    }

    /// `A ← alpha·x·yᴴ + A` (the same as [`Blas::ger`] for real types).
    pub fn gerc<T: BlasScalar>(
        &self,
        m: usize,
        n: usize,
        alpha: T,
        x: &impl AsDeviceSlice<T>,
        incx: i32,
        y: &impl AsDeviceSlice<T>,
        incy: i32,
        a: &mut impl AsDeviceSliceMut<T>,
        lda: usize,
    ) -> Result<()> {
        self.ger_with(true, m, n, alpha, x, incx, y, incy, a, lda)
    }

    fn ger_with<T: BlasScalar>(
        &self,
        conjugate: bool,
        m: usize,
        n: usize,
        alpha: T,
        x: &impl AsDeviceSlice<T>,
        incx: i32,
        y: &impl AsDeviceSlice<T>,
        incy: i32,
        a: &mut impl AsDeviceSliceMut<T>,
        lda: usize,
    ) -> Result<()> {
        let (x, y, a) = (
            x.as_device_slice()?,
            y.as_device_slice()?,
            a.as_device_slice_mut()?,
        );
        check_vector("ger", "x", x.len(), m, incx)?;
        check_vector("ger", "y", y.len(), n, incy)?;
        check_matrix("ger", "A", a.len(), m, n, lda)?;
        let (mi, ni, ldai) = (
            to_int("ger", "m", m)?,
            to_int("ger", "n", n)?,
            to_int("ger", "lda", lda)?,
        );
        let h = self.enter()?;
        let alpha = Aligned(alpha);
        // As for gemv.
        let (alpha, x, y, a) = (scalar(&alpha.0), x.ptr() as _, y.ptr() as _, a.ptr() as _);
        if conjugate {
            typed!(T.gerc(h, mi, ni, alpha, x, incx, y, incy, a, ldai))
        } else {
            typed!(T.geru(h, mi, ni, alpha, x, incx, y, incy, a, ldai))
        }
    }

    // ---- level 3 ----

    /// `C ← alpha·op(A)·op(B) + beta·C` with `op(A)` `m × k`, `op(B)` `k × n`, `C` `m × n`,
    /// column-major.
    pub fn gemm<T: BlasScalar>(
        &self,
        transa: Transpose,
        transb: Transpose,
        m: usize,
        n: usize,
        k: usize,
        alpha: T,
        a: &impl AsDeviceSlice<T>,
        lda: usize,
        b: &impl AsDeviceSlice<T>,
        ldb: usize,
        beta: T,
        c: &mut impl AsDeviceSliceMut<T>,
        ldc: usize,
    ) -> Result<()> {
        let (dims, [a, b, c]) = GemmDims::of(
            "gemm",
            (transa, transb),
            (m, n, k),
            (a, lda),
            (b, ldb),
            (c, ldc),
        )?;
        let h = self.enter()?;
        let (alpha, beta) = (Aligned(alpha), Aligned(beta));
        // Every operand holds the extent its dimensions describe (checked).
        typed!(T.gemm(
            h,
            op(transa),
            op(transb),
            dims.m,
            dims.n,
            dims.k,
            scalar(&alpha.0),
            a as _,
            dims.lda,
            b as _,
            dims.ldb,
            scalar(&beta.0),
            c as _,
            dims.ldc,
        ))
    }

    /// [`Blas::gemm`] on **row-major** matrices: `C = alpha·op(A)·op(B) + beta·C` where `A` is
    /// `m × k` (after `op`), `B` `k × n`, `C` `m × n`, each stored row by row with row pitch
    /// `lda`, `ldb`, `ldc` (≥ the stored row length). Runs as the column-major
    /// `Cᵀ = op(B)ᵀ·op(A)ᵀ`: no copy, no transpose kernel.
    pub fn gemm_row_major<T: BlasScalar>(
        &self,
        transa: Transpose,
        transb: Transpose,
        m: usize,
        n: usize,
        k: usize,
        alpha: T,
        a: &impl AsDeviceSlice<T>,
        lda: usize,
        b: &impl AsDeviceSlice<T>,
        ldb: usize,
        beta: T,
        c: &mut impl AsDeviceSliceMut<T>,
        ldc: usize,
    ) -> Result<()> {
        self.gemm(transb, transa, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc)
    }

    /// `batch` independent GEMMs over matrices `stride_a`, `stride_b`, `stride_c` elements
    /// apart in one buffer each (`cublas<t>gemmStridedBatched`).
    pub fn gemm_strided_batched<T: BlasScalar>(
        &self,
        transa: Transpose,
        transb: Transpose,
        m: usize,
        n: usize,
        k: usize,
        alpha: T,
        a: &impl AsDeviceSlice<T>,
        lda: usize,
        stride_a: usize,
        b: &impl AsDeviceSlice<T>,
        ldb: usize,
        stride_b: usize,
        beta: T,
        c: &mut impl AsDeviceSliceMut<T>,
        ldc: usize,
        stride_c: usize,
        batch: usize,
    ) -> Result<()> {
        let (a, b, c) = (
            a.as_device_slice()?,
            b.as_device_slice()?,
            c.as_device_slice_mut()?,
        );
        if batch == 0 {
            return Ok(());
        }
        // The last matrix of each batch must fit; the others are `stride` before it.
        let last = |len: usize, stride: usize, name: &str| -> Result<usize> {
            let offset = stride.checked_mul(batch - 1).filter(|o| *o <= len).ok_or_else(|| {
                Error::invalid("gemm_strided_batched", format!("{batch} matrices of {name}, {stride} apart, do not fit in {len} elements"))
            })?;
            Ok(len - offset)
        };
        let c_size = ldc.saturating_mul(n.saturating_sub(1)) + m;
        if stride_c < c_size && batch > 1 {
            return Err(Error::invalid(
                "gemm_strided_batched",
                format!("stride of C = {stride_c} < {c_size}: the outputs would overlap"),
            ));
        }
        let dims = GemmDims::check(
            "gemm_strided_batched",
            transa,
            transb,
            m,
            n,
            k,
            (last(a.len(), stride_a, "A")?, lda),
            (last(b.len(), stride_b, "B")?, ldb),
            (last(c.len(), stride_c, "C")?, ldc),
        )?;
        let batch_i = to_int("gemm_strided_batched", "batch", batch)?;
        let h = self.enter()?;
        let (alpha, beta) = (Aligned(alpha), Aligned(beta));
        // Every matrix of every batch lies within its buffer (checked).
        typed!(T.gemm_strided(
            h,
            op(transa),
            op(transb),
            dims.m,
            dims.n,
            dims.k,
            scalar(&alpha.0),
            a.ptr() as _,
            dims.lda,
            stride_a as i64,
            b.ptr() as _,
            dims.ldb,
            stride_b as i64,
            scalar(&beta.0),
            c.ptr() as _,
            dims.ldc,
            stride_c as i64,
            batch_i,
        ))
    }

    /// GEMMs over lists of separate matrices (`cublas<t>gemmBatched`): `c[i] ← alpha·op(a[i])·op(b[i]) + beta·c[i]`.
    /// The lists of pointers are copied to the device for the call, which waits for the stream
    /// before returning (the list must outlive the work).
    pub fn gemm_batched<
        T: BlasScalar,
        A: AsDeviceSlice<T>,
        B: AsDeviceSlice<T>,
        C: AsDeviceSliceMut<T>,
    >(
        &self,
        transa: Transpose,
        transb: Transpose,
        m: usize,
        n: usize,
        k: usize,
        alpha: T,
        a: &[A],
        lda: usize,
        b: &[B],
        ldb: usize,
        beta: T,
        c: &mut [C],
        ldc: usize,
    ) -> Result<()> {
        let call = "gemm_batched";
        if a.len() != b.len() || a.len() != c.len() {
            return Err(Error::invalid(
                call,
                format!("{} A, {} B and {} C matrices", a.len(), b.len(), c.len()),
            ));
        }
        if a.is_empty() {
            return Ok(());
        }
        let mut pointers = Vec::with_capacity(3 * a.len());
        let mut dims = None;
        for ((a, b), c) in a.iter().zip(b).zip(c.iter_mut()) {
            let (a, b, c) = (
                a.as_device_slice()?,
                b.as_device_slice()?,
                c.as_device_slice_mut()?,
            );
            dims = Some(GemmDims::check(
                call,
                transa,
                transb,
                m,
                n,
                k,
                (a.len(), lda),
                (b.len(), ldb),
                (c.len(), ldc),
            )?);
            pointers.extend([a.ptr(), b.ptr(), c.ptr()]);
        }
        let Some(dims) = dims else {
            return Ok(()); // no matrix (returned above already)
        };
        let count = a.len();
        // Three arrays: all A pointers, then all B, then all C.
        let ordered: Vec<u64> = (0..3)
            .flat_map(|which| pointers.iter().skip(which).step_by(3).copied())
            .collect();
        let h = self.enter()?;
        let mut list = DeviceMemory::alloc(ordered.len() * 8)?;
        list.copy_from_host(bytemuck::cast_slice(&ordered))?;
        let base = list.ptr();
        let batch = to_int(call, "batch", count)?;
        let (alpha, beta) = (Aligned(alpha), Aligned(beta));
        // The pointer lists hold `count` checked matrices each.
        typed!(T.gemm_batched(
            h,
            op(transa),
            op(transb),
            dims.m,
            dims.n,
            dims.k,
            scalar(&alpha.0),
            base as _,
            dims.lda,
            (base + 8 * count as u64) as _,
            dims.ldb,
            scalar(&beta.0),
            (base + 16 * count as u64) as _,
            dims.ldc,
            batch,
        ))?;
        self.bound.stream().synchronize()?;
        Ok(())
    }

    /// Solves `op(A)·X = alpha·B` ([`Side::Left`], `A` `m × m`) or `X·op(A) = alpha·B`
    /// ([`Side::Right`], `A` `n × n`) for triangular `A`; `X` overwrites the `m × n` `B`.
    pub fn trsm<T: BlasScalar>(
        &self,
        side_: Side,
        uplo: Fill,
        trans: Transpose,
        diagonal: Diagonal,
        m: usize,
        n: usize,
        alpha: T,
        a: &impl AsDeviceSlice<T>,
        lda: usize,
        b: &mut impl AsDeviceSliceMut<T>,
        ldb: usize,
    ) -> Result<()> {
        let (a, b) = (a.as_device_slice()?, b.as_device_slice_mut()?);
        let order = if side_ == Side::Left { m } else { n };
        check_matrix("trsm", "A", a.len(), order, order, lda)?;
        check_matrix("trsm", "B", b.len(), m, n, ldb)?;
        let (mi, ni) = (to_int("trsm", "m", m)?, to_int("trsm", "n", n)?);
        let (ldai, ldbi) = (to_int("trsm", "lda", lda)?, to_int("trsm", "ldb", ldb)?);
        let h = self.enter()?;
        let alpha = Aligned(alpha);
        // Both matrices fit (checked).
        typed!(T.trsm(
            h,
            side(side_),
            fill(uplo),
            op(trans),
            diag(diagonal),
            mi,
            ni,
            scalar(&alpha.0),
            a.ptr() as _,
            ldai,
            b.ptr() as _,
            ldbi,
        ))
    }

    /// `C ← alpha·op(A)·op(A)ᵀ + beta·C` on the `uplo` triangle of the `n × n` symmetric `C`;
    /// `op(A)` is `n × k`.
    pub fn syrk<T: BlasScalar>(
        &self,
        uplo: Fill,
        trans: Transpose,
        n: usize,
        k: usize,
        alpha: T,
        a: &impl AsDeviceSlice<T>,
        lda: usize,
        beta: T,
        c: &mut impl AsDeviceSliceMut<T>,
        ldc: usize,
    ) -> Result<()> {
        let (a, c) = (a.as_device_slice()?, c.as_device_slice_mut()?);
        let (rows, cols) = if trans == Transpose::No {
            (n, k)
        } else {
            (k, n)
        };
        check_matrix("syrk", "A", a.len(), rows, cols, lda)?;
        check_matrix("syrk", "C", c.len(), n, n, ldc)?;
        let (ni, ki) = (to_int("syrk", "n", n)?, to_int("syrk", "k", k)?);
        let (ldai, ldci) = (to_int("syrk", "lda", lda)?, to_int("syrk", "ldc", ldc)?);
        let h = self.enter()?;
        let (alpha, beta) = (Aligned(alpha), Aligned(beta));
        // Both matrices fit (checked).
        typed!(T.syrk(
            h,
            fill(uplo),
            op(trans),
            ni,
            ki,
            scalar(&alpha.0),
            a.ptr() as _,
            ldai,
            scalar(&beta.0),
            c.ptr() as _,
            ldci,
        ))
    }

    /// `C ← alpha·A·B + beta·C` ([`Side::Left`], symmetric `A` `m × m`) or `alpha·B·A + beta·C`
    /// ([`Side::Right`], `A` `n × n`), reading the `uplo` triangle of `A`; `B`, `C` `m × n`.
    pub fn symm<T: BlasScalar>(
        &self,
        side_: Side,
        uplo: Fill,
        m: usize,
        n: usize,
        alpha: T,
        a: &impl AsDeviceSlice<T>,
        lda: usize,
        b: &impl AsDeviceSlice<T>,
        ldb: usize,
        beta: T,
        c: &mut impl AsDeviceSliceMut<T>,
        ldc: usize,
    ) -> Result<()> {
        let (a, b, c) = (
            a.as_device_slice()?,
            b.as_device_slice()?,
            c.as_device_slice_mut()?,
        );
        let order = if side_ == Side::Left { m } else { n };
        check_matrix("symm", "A", a.len(), order, order, lda)?;
        check_matrix("symm", "B", b.len(), m, n, ldb)?;
        check_matrix("symm", "C", c.len(), m, n, ldc)?;
        let (mi, ni) = (to_int("symm", "m", m)?, to_int("symm", "n", n)?);
        let (ldai, ldbi, ldci) = (
            to_int("symm", "lda", lda)?,
            to_int("symm", "ldb", ldb)?,
            to_int("symm", "ldc", ldc)?,
        );
        let h = self.enter()?;
        let (alpha, beta) = (Aligned(alpha), Aligned(beta));
        // All three matrices fit (checked).
        typed!(T.symm(
            h,
            side(side_),
            fill(uplo),
            mi,
            ni,
            scalar(&alpha.0),
            a.ptr() as _,
            ldai,
            b.ptr() as _,
            ldbi,
            scalar(&beta.0),
            c.ptr() as _,
            ldci,
        ))
    }

    /// `gemmEx`: `C ← alpha·op(A)·op(B) + beta·C` with `A`, `B` in `AB` (`f16`, `bf16` or
    /// `f32`), `C` in `Out` (the same, or `f32`), accumulating in f32 (`CUBLAS_COMPUTE_32F`;
    /// tensor cores for f16/bf16). Column-major, as [`Blas::gemm`].
    pub fn gemm_ex<AB: GemmExType, Out: GemmExType>(
        &self,
        transa: Transpose,
        transb: Transpose,
        m: usize,
        n: usize,
        k: usize,
        alpha: f32,
        a: &impl AsDeviceSlice<AB>,
        lda: usize,
        b: &impl AsDeviceSlice<AB>,
        ldb: usize,
        beta: f32,
        c: &mut impl AsDeviceSliceMut<Out>,
        ldc: usize,
    ) -> Result<()> {
        let (d, [a, b, c]) = GemmDims::of(
            "gemm_ex",
            (transa, transb),
            (m, n, k),
            (a, lda),
            (b, ldb),
            (c, ldc),
        )?;
        let h = self.enter()?;
        blas!(cublasGemmEx(
            h,
            op(transa),
            op(transb),
            d.m,
            d.n,
            d.k,
            (&alpha as *const f32).cast(),
            a as *const _,
            AB::DATA_TYPE,
            d.lda,
            b as *const _,
            AB::DATA_TYPE,
            d.ldb,
            (&beta as *const f32).cast(),
            c as *mut _,
            Out::DATA_TYPE,
            d.ldc,
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT
        ))
    }

    /// [`Blas::gemm_ex`] on row-major matrices (see [`Blas::gemm_row_major`]).
    pub fn gemm_ex_row_major<AB: GemmExType, Out: GemmExType>(
        &self,
        transa: Transpose,
        transb: Transpose,
        m: usize,
        n: usize,
        k: usize,
        alpha: f32,
        a: &impl AsDeviceSlice<AB>,
        lda: usize,
        b: &impl AsDeviceSlice<AB>,
        ldb: usize,
        beta: f32,
        c: &mut impl AsDeviceSliceMut<Out>,
        ldc: usize,
    ) -> Result<()> {
        self.gemm_ex(transb, transa, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc)
    }
}

impl Drop for Blas<'_> {
    fn drop(&mut self) {
        // The handle is destroyed in its own context; a failure has nowhere to go.
        let _ = self.bound.enter();
        // SAFETY: the handle was created by `new` and is destroyed once.
        let status = unsafe { sys::cublasDestroy_v2(self.raw) };
        if let Err(e) = check("cublasDestroy_v2", status) {
            tracing::debug!(target: "chorus_cuda_libs", "{e}");
        }
    }
}

/// A GEMM's dimensions, checked against its operands and converted to `int`.
pub(crate) struct GemmDims {
    pub(crate) m: c_int,
    pub(crate) n: c_int,
    pub(crate) k: c_int,
    pub(crate) lda: c_int,
    pub(crate) ldb: c_int,
    pub(crate) ldc: c_int,
}

impl GemmDims {
    /// [`GemmDims::check`] on the operands' device slices: the dimensions and the addresses of
    /// `A`, `B`, `C`.
    pub(crate) fn of<A, B, C>(
        call: &'static str,
        (transa, transb): (Transpose, Transpose),
        (m, n, k): (usize, usize, usize),
        (a, lda): (&impl AsDeviceSlice<A>, usize),
        (b, ldb): (&impl AsDeviceSlice<B>, usize),
        (c, ldc): (&mut impl AsDeviceSliceMut<C>, usize),
    ) -> Result<(GemmDims, [u64; 3])> {
        let (a, b, c) = (
            a.as_device_slice()?,
            b.as_device_slice()?,
            c.as_device_slice_mut()?,
        );
        let dims = GemmDims::check(
            call,
            transa,
            transb,
            m,
            n,
            k,
            (a.len(), lda),
            (b.len(), ldb),
            (c.len(), ldc),
        )?;
        Ok((dims, [a.ptr(), b.ptr(), c.ptr()]))
    }

    /// Checks `op(A)` `m × k`, `op(B)` `k × n` and `C` `m × n` (column-major, each given as
    /// `(elements, leading dimension)`).
    pub(crate) fn check(
        call: &'static str,
        transa: Transpose,
        transb: Transpose,
        m: usize,
        n: usize,
        k: usize,
        a: (usize, usize),
        b: (usize, usize),
        c: (usize, usize),
    ) -> Result<GemmDims> {
        let (ar, ac) = if transa == Transpose::No {
            (m, k)
        } else {
            (k, m)
        };
        let (br, bc) = if transb == Transpose::No {
            (k, n)
        } else {
            (n, k)
        };
        check_matrix(call, "A", a.0, ar, ac, a.1)?;
        check_matrix(call, "B", b.0, br, bc, b.1)?;
        check_matrix(call, "C", c.0, m, n, c.1)?;
        Ok(GemmDims {
            m: to_int(call, "m", m)?,
            n: to_int(call, "n", n)?,
            k: to_int(call, "k", k)?,
            lda: to_int(call, "lda", a.1)?,
            ldb: to_int(call, "ldb", b.1)?,
            ldc: to_int(call, "ldc", c.1)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry points of one element type's table, by name.
    pub(super) trait Names {
        const NAMES: &'static [&'static str];
    }

    #[test]
    fn every_entry_point_of_the_tables_is_probed() {
        for name in [
            <f32 as Names>::NAMES,
            <f64 as Names>::NAMES,
            <C32 as Names>::NAMES,
            <C64 as Names>::NAMES,
        ]
        .concat()
        {
            assert!(SYMBOLS.contains(&name), "{name} is called but not probed");
        }
    }
}
