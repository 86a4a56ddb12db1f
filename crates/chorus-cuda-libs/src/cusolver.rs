//! cuSOLVER (dense): LU, Cholesky, QR, symmetric eigen-decomposition and SVD in f32 and f64,
//! column-major, with the workspace queries inside and `info` checked.
//!
//! Each factorisation returns once its `info` has been read back (so it waits for the
//! stream). A singular matrix (LU), a matrix that is not positive definite (Cholesky) or a
//! solver that does not converge (eigen, SVD) is [`Error::Numerical`] with `info`, naming the
//! failing pivot, minor or value; a negative `info` (an argument cuSOLVER rejects) is
//! [`Error::InvalidArgument`].

#![allow(clippy::too_many_arguments)] // LAPACK's calling convention

use crate::bound::Bound;
use crate::error::{Error, Result};
use crate::library::Library;
use crate::types::{Fill, Transpose, check_len, check_matrix, to_int};
use chorus_driver::{AsDeviceSlice, AsDeviceSliceMut, DeviceMemory, Stream};
use cudarc::cusolver::sys::{self, cusolverStatus_t};
use std::cell::RefCell;
use std::ffi::c_int;

/// The cuSOLVER library, probed on first use (after cuBLAS and cuSPARSE, which it links).
pub static LIBRARY: Library = Library::new(
    "cuSOLVER",
    "cusolver",
    &[&CUBLAS_FILE, &CUSPARSE_FILE],
    SYMBOLS,
    || {
        // SAFETY: only asks the system loader whether cudarc's names resolve.
        unsafe { sys::is_culib_present() }
    },
);

static CUBLASLT_FILE: Library = Library::new("cuBLASLt", "cublasLt", &[], &[], || {
    crate::library::found_by_system_loader("cublasLt")
});
static CUBLAS_FILE: Library = Library::new("cuBLAS", "cublas", &[&CUBLASLT_FILE], &[], || {
    crate::library::found_by_system_loader("cublas")
});
static CUSPARSE_FILE: Library = Library::new("cuSPARSE", "cusparse", &[], &[], || {
    crate::library::found_by_system_loader("cusparse")
});

/// True when cuSOLVER can be used (the seed's `*cusolver-not-found*`, negated).
pub fn is_available() -> bool {
    LIBRARY.is_available()
}

const SYMBOLS: &[&str] = &[
    "cusolverDnCreate",
    "cusolverDnDestroy",
    "cusolverDnSetStream",
    "cusolverDnSgetrf_bufferSize",
    "cusolverDnDgetrf_bufferSize",
    "cusolverDnSgetrf",
    "cusolverDnDgetrf",
    "cusolverDnSgetrs",
    "cusolverDnDgetrs",
    "cusolverDnSpotrf_bufferSize",
    "cusolverDnDpotrf_bufferSize",
    "cusolverDnSpotrf",
    "cusolverDnDpotrf",
    "cusolverDnSpotrs",
    "cusolverDnDpotrs",
    "cusolverDnSgeqrf_bufferSize",
    "cusolverDnDgeqrf_bufferSize",
    "cusolverDnSgeqrf",
    "cusolverDnDgeqrf",
    "cusolverDnSorgqr_bufferSize",
    "cusolverDnDorgqr_bufferSize",
    "cusolverDnSorgqr",
    "cusolverDnDorgqr",
    "cusolverDnSsyevd_bufferSize",
    "cusolverDnDsyevd_bufferSize",
    "cusolverDnSsyevd",
    "cusolverDnDsyevd",
    "cusolverDnSgesvd_bufferSize",
    "cusolverDnDgesvd_bufferSize",
    "cusolverDnSgesvd",
    "cusolverDnDgesvd",
];

/// A cuSOLVER status as an error naming `call`.
pub fn check(call: &'static str, status: cusolverStatus_t) -> Result<()> {
    if status == cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
        return Ok(());
    }
    let name = format!("{status:?}");
    let message = match name.as_str() {
        "CUSOLVER_STATUS_NOT_INITIALIZED" => "the library was not initialized",
        "CUSOLVER_STATUS_ALLOC_FAILED" => "resource allocation failed",
        "CUSOLVER_STATUS_INVALID_VALUE" => "an unsupported value or parameter was passed",
        "CUSOLVER_STATUS_ARCH_MISMATCH" => "the device does not support this feature",
        "CUSOLVER_STATUS_EXECUTION_FAILED" => "the GPU program failed to execute",
        "CUSOLVER_STATUS_INTERNAL_ERROR" => "an internal cuSOLVER operation failed",
        "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED" => "the matrix type is not supported",
        "CUSOLVER_STATUS_NOT_SUPPORTED" => "not supported",
        _ => "cuSOLVER error",
    };
    Err(Error::Status {
        library: "cuSOLVER",
        call,
        code: status as i64,
        name,
        message: message.into(),
    })
}

macro_rules! solver {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        // SAFETY: the library is loaded (ensured before the handle was made); each call site
        // passes a live handle and device extents it checked.
        check(stringify!($f), unsafe { sys::$f($($arg),*) })
    };
}

fn fill(f: Fill) -> sys::cublasFillMode_t {
    match f {
        Fill::Lower => sys::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
        Fill::Upper => sys::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
    }
}

fn op(t: Transpose) -> sys::cublasOperation_t {
    match t {
        Transpose::No => sys::cublasOperation_t::CUBLAS_OP_N,
        Transpose::Yes => sys::cublasOperation_t::CUBLAS_OP_T,
        Transpose::Conjugate => sys::cublasOperation_t::CUBLAS_OP_C,
    }
}

mod sealed {
    pub trait Sealed {}
}

/// An entry point of cuSOLVER and its name (for errors).
type Entry<F> = (F, &'static str);
type H = sys::cusolverDnHandle_t;
type S = cusolverStatus_t;
type I = c_int;
type FillMode = sys::cublasFillMode_t;
type EigMode = sys::cusolverEigMode_t;

/// One element type's dense cuSOLVER entry points (cudarc's bindings). Only [`Solver`] calls
/// them.
#[doc(hidden)]
#[allow(clippy::type_complexity)] // the C signatures, one a field
pub struct SolverFns<T> {
    getrf_size: Entry<unsafe fn(H, I, I, *mut T, I, *mut I) -> S>,
    getrf: Entry<unsafe fn(H, I, I, *mut T, I, *mut T, *mut I, *mut I) -> S>,
    getrs: Entry<
        unsafe fn(H, sys::cublasOperation_t, I, I, *const T, I, *const I, *mut T, I, *mut I) -> S,
    >,
    potrf_size: Entry<unsafe fn(H, FillMode, I, *mut T, I, *mut I) -> S>,
    potrf: Entry<unsafe fn(H, FillMode, I, *mut T, I, *mut T, I, *mut I) -> S>,
    potrs: Entry<unsafe fn(H, FillMode, I, I, *const T, I, *mut T, I, *mut I) -> S>,
    geqrf_size: Entry<unsafe fn(H, I, I, *mut T, I, *mut I) -> S>,
    geqrf: Entry<unsafe fn(H, I, I, *mut T, I, *mut T, *mut T, I, *mut I) -> S>,
    orgqr_size: Entry<unsafe fn(H, I, I, I, *const T, I, *const T, *mut I) -> S>,
    orgqr: Entry<unsafe fn(H, I, I, I, *mut T, I, *const T, *mut T, I, *mut I) -> S>,
    syevd_size: Entry<unsafe fn(H, EigMode, FillMode, I, *const T, I, *const T, *mut I) -> S>,
    syevd: Entry<unsafe fn(H, EigMode, FillMode, I, *mut T, I, *mut T, *mut T, I, *mut I) -> S>,
    gesvd_size: Entry<unsafe fn(H, I, I, *mut I) -> S>,
    gesvd: Entry<
        unsafe fn(
            H,
            i8,
            i8,
            I,
            I,
            *mut T,
            I,
            *mut T,
            *mut T,
            I,
            *mut T,
            I,
            *mut T,
            I,
            *mut T,
            *mut I,
        ) -> S,
    >,
}

/// `f32` or `f64`: the element types of the dense solvers (sealed; the entry points of each are
/// in a table that [`Solver`]'s methods call through).
pub trait SolverScalar: bytemuck::Pod + sealed::Sealed {
    /// The entry points.
    #[doc(hidden)]
    const FNS: SolverFns<Self>;
}

/// Calls `T`'s entry point `f` of [`SolverScalar::FNS`] and checks its status, naming it.
macro_rules! typed {
    ($t:ident . $f:ident ( $($arg:expr),* $(,)? )) => {{
        let (f, name) = <$t as SolverScalar>::FNS.$f;
        // SAFETY: the library is loaded (ensured before the handle was made); each call site
        // passes a live handle and device extents it checked, as addresses of the element type.
        check(name, unsafe { f($($arg),*) })
    }};
}

/// `SolverScalar` for `$t`: the names of its entry points, in the order of [`SolverFns`]'s
/// fields.
macro_rules! solver_scalar {
    ($t:ty, [$($field:ident: $f:ident),* $(,)?]) => {
        impl sealed::Sealed for $t {}
        impl SolverScalar for $t {
            const FNS: SolverFns<$t> = SolverFns {
                $($field: (sys::$f, stringify!($f))),*
            };
        }
        #[cfg(test)]
        impl tests::Names for $t {
            const NAMES: &'static [&'static str] = &[$(stringify!($f)),*];
        }
    };
}

solver_scalar!(f32, [
    getrf_size: cusolverDnSgetrf_bufferSize, getrf: cusolverDnSgetrf, getrs: cusolverDnSgetrs,
    potrf_size: cusolverDnSpotrf_bufferSize, potrf: cusolverDnSpotrf, potrs: cusolverDnSpotrs,
    geqrf_size: cusolverDnSgeqrf_bufferSize, geqrf: cusolverDnSgeqrf,
    orgqr_size: cusolverDnSorgqr_bufferSize, orgqr: cusolverDnSorgqr,
    syevd_size: cusolverDnSsyevd_bufferSize, syevd: cusolverDnSsyevd,
    gesvd_size: cusolverDnSgesvd_bufferSize, gesvd: cusolverDnSgesvd,
]);
solver_scalar!(f64, [
    getrf_size: cusolverDnDgetrf_bufferSize, getrf: cusolverDnDgetrf, getrs: cusolverDnDgetrs,
    potrf_size: cusolverDnDpotrf_bufferSize, potrf: cusolverDnDpotrf, potrs: cusolverDnDpotrs,
    geqrf_size: cusolverDnDgeqrf_bufferSize, geqrf: cusolverDnDgeqrf,
    orgqr_size: cusolverDnDorgqr_bufferSize, orgqr: cusolverDnDorgqr,
    syevd_size: cusolverDnDsyevd_bufferSize, syevd: cusolverDnDsyevd,
    gesvd_size: cusolverDnDgesvd_bufferSize, gesvd: cusolverDnDgesvd,
]);

/// What an SVD computes besides the singular values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SvdJob {
    /// The singular values only.
    ValuesOnly,
    /// The values, the first `min(m, n)` columns of `U` and rows of `Vᵀ` (thin SVD).
    Thin,
}

/// A dense cuSOLVER handle bound to a context and a stream, with its workspace; destroyed on
/// drop.
#[derive(Debug)]
pub struct Solver<'s> {
    raw: sys::cusolverDnHandle_t,
    bound: Bound<'s>,
    /// The workspace (grown as needed) and the device `info`.
    workspace: RefCell<Option<DeviceMemory>>,
    info: DeviceMemory,
}

// SAFETY: used by one thread at a time (not Sync: the workspace is a RefCell).
unsafe impl Send for Solver<'_> {}

impl<'s> Solver<'s> {
    /// A handle in the current context whose work goes on `stream`.
    pub fn new(stream: &'s Stream) -> Result<Solver<'s>> {
        LIBRARY.ensure()?;
        let bound = Bound::current(stream)?;
        let info = DeviceMemory::alloc(size_of::<c_int>())?;
        let mut raw = std::ptr::null_mut();
        solver!(cusolverDnCreate(&mut raw))?;
        let solver = Solver {
            raw,
            bound,
            workspace: RefCell::new(None),
            info,
        };
        solver!(cusolverDnSetStream(raw, stream.raw() as sys::cudaStream_t))?;
        Ok(solver)
    }

    /// The raw handle, for calls through cudarc's `cusolver::sys`.
    pub fn raw(&self) -> sys::cusolverDnHandle_t {
        self.raw
    }

    /// The workspace's address, at least `elements` of `T` (grown when too small).
    fn workspace<T>(&self, elements: c_int) -> Result<u64> {
        let bytes = (elements.max(1) as usize) * size_of::<T>();
        let mut ws = self.workspace.borrow_mut();
        if ws.as_ref().is_none_or(|w| w.len() < bytes) {
            // The previous workspace is free: every call waits for its info.
            *ws = Some(DeviceMemory::alloc(bytes)?);
        }
        Ok(ws.as_ref().map(DeviceMemory::ptr).unwrap_or_default())
    }

    /// Waits for the stream and reads `info`.
    fn read_info(&self) -> Result<i32> {
        self.bound.stream().synchronize()?;
        let mut bytes = [0u8; 4];
        self.info.copy_to_host(&mut bytes)?;
        Ok(i32::from_ne_bytes(bytes))
    }

    /// `info` as a result: negative → the argument named; positive → `numerical(info)`.
    fn info_result(&self, call: &'static str, numerical: impl Fn(i32) -> String) -> Result<()> {
        match self.read_info()? {
            0 => Ok(()),
            info if info < 0 => Err(Error::invalid(
                call,
                format!("cuSOLVER rejected parameter {}", -info),
            )),
            info => Err(Error::Numerical {
                call,
                info,
                reason: numerical(info),
            }),
        }
    }

    /// The shape of every factorisation: `size` writes the workspace's length in elements,
    /// `run` gets a workspace that long (its address, its length) and the device `info`, then
    /// `info` is read as [`Solver::info_result`] does.
    fn with_workspace<T>(
        &self,
        call: &'static str,
        size: impl FnOnce(&mut c_int) -> Result<()>,
        run: impl FnOnce(*mut T, c_int, *mut c_int) -> Result<()>,
        numerical: impl Fn(i32) -> String,
    ) -> Result<()> {
        let mut lwork = 0;
        size(&mut lwork)?;
        let work = self.workspace::<T>(lwork)?;
        run(work as *mut T, lwork, self.info.ptr() as *mut c_int)?;
        self.info_result(call, numerical)
    }

    /// LU factorisation with partial pivoting of the `m × n` matrix `a` in place (`P·A = L·U`);
    /// the pivots (1-based rows, `min(m, n)` of them) go to `ipiv`. A zero pivot is
    /// [`Error::Numerical`] naming it (the factors are still written).
    pub fn getrf<T: SolverScalar>(
        &self,
        m: usize,
        n: usize,
        a: &mut impl AsDeviceSliceMut<T>,
        lda: usize,
        ipiv: &mut impl AsDeviceSliceMut<i32>,
    ) -> Result<()> {
        let (a, ipiv) = (a.as_device_slice_mut()?, ipiv.as_device_slice_mut()?);
        check_matrix("getrf", "A", a.len(), m, n, lda)?;
        check_len("getrf", "ipiv", ipiv.len(), m.min(n))?;
        let (mi, ni, ldai) = (
            to_int("getrf", "m", m)?,
            to_int("getrf", "n", n)?,
            to_int("getrf", "lda", lda)?,
        );
        self.bound.enter()?;
        // A fits (checked); ipiv holds min(m, n) pivots; the workspace and info are this handle's.
        let (h, a) = (self.raw, a.ptr() as *mut T);
        self.with_workspace(
            "getrf",
            |lwork| typed!(T.getrf_size(h, mi, ni, a, ldai, lwork)),
            |work, _, info| typed!(T.getrf(h, mi, ni, a, ldai, work, ipiv.ptr() as _, info)),
            |i| format!("U({i},{i}) is exactly zero: the matrix is singular"),
        )
    }

    /// Solves `op(A)·X = B` with the LU factors and pivots of [`Solver::getrf`] of the `n × n`
    /// `a`; `X` overwrites the `n × nrhs` `b`.
    pub fn getrs<T: SolverScalar>(
        &self,
        trans: Transpose,
        n: usize,
        nrhs: usize,
        a: &impl AsDeviceSlice<T>,
        lda: usize,
        ipiv: &impl AsDeviceSlice<i32>,
        b: &mut impl AsDeviceSliceMut<T>,
        ldb: usize,
    ) -> Result<()> {
        let (a, ipiv, b) = (
            a.as_device_slice()?,
            ipiv.as_device_slice()?,
            b.as_device_slice_mut()?,
        );
        check_matrix("getrs", "A", a.len(), n, n, lda)?;
        check_len("getrs", "ipiv", ipiv.len(), n)?;
        check_matrix("getrs", "B", b.len(), n, nrhs, ldb)?;
        let (ni, nrhsi) = (to_int("getrs", "n", n)?, to_int("getrs", "nrhs", nrhs)?);
        let (ldai, ldbi) = (to_int("getrs", "lda", lda)?, to_int("getrs", "ldb", ldb)?);
        self.bound.enter()?;
        // Every operand fits (checked).
        typed!(T.getrs(
            self.raw,
            op(trans),
            ni,
            nrhsi,
            a.ptr() as _,
            ldai,
            ipiv.ptr() as _,
            b.ptr() as _,
            ldbi,
            self.info.ptr() as _,
        ))?;
        self.info_result("getrs", |i| format!("unexpected positive info {i}"))
    }

    /// Cholesky factorisation of the symmetric positive-definite `n × n` `a` in place, in its
    /// `uplo` triangle (`A = L·Lᵀ` or `Uᵀ·U`). A leading minor that is not positive definite
    /// is [`Error::Numerical`] naming its order.
    pub fn potrf<T: SolverScalar>(
        &self,
        uplo: Fill,
        n: usize,
        a: &mut impl AsDeviceSliceMut<T>,
        lda: usize,
    ) -> Result<()> {
        let a = a.as_device_slice_mut()?;
        check_matrix("potrf", "A", a.len(), n, n, lda)?;
        let (ni, ldai) = (to_int("potrf", "n", n)?, to_int("potrf", "lda", lda)?);
        self.bound.enter()?;
        // A fits (checked).
        let (h, a, f) = (self.raw, a.ptr() as *mut T, fill(uplo));
        self.with_workspace(
            "potrf",
            |lwork| typed!(T.potrf_size(h, f, ni, a, ldai, lwork)),
            |work, lwork, info| typed!(T.potrf(h, f, ni, a, ldai, work, lwork, info)),
            |i| format!("the leading minor of order {i} is not positive definite"),
        )
    }

    /// Solves `A·X = B` with the Cholesky factor of [`Solver::potrf`]; `X` overwrites the
    /// `n × nrhs` `b`.
    pub fn potrs<T: SolverScalar>(
        &self,
        uplo: Fill,
        n: usize,
        nrhs: usize,
        a: &impl AsDeviceSlice<T>,
        lda: usize,
        b: &mut impl AsDeviceSliceMut<T>,
        ldb: usize,
    ) -> Result<()> {
        let (a, b) = (a.as_device_slice()?, b.as_device_slice_mut()?);
        check_matrix("potrs", "A", a.len(), n, n, lda)?;
        check_matrix("potrs", "B", b.len(), n, nrhs, ldb)?;
        let (ni, nrhsi) = (to_int("potrs", "n", n)?, to_int("potrs", "nrhs", nrhs)?);
        let (ldai, ldbi) = (to_int("potrs", "lda", lda)?, to_int("potrs", "ldb", ldb)?);
        self.bound.enter()?;
        // Both fit (checked).
        typed!(T.potrs(
            self.raw,
            fill(uplo),
            ni,
            nrhsi,
            a.ptr() as _,
            ldai,
            b.ptr() as _,
            ldbi,
            self.info.ptr() as _,
        ))?;
        self.info_result("potrs", |i| format!("unexpected positive info {i}"))
    }

    /// QR factorisation of the `m × n` `a` in place: `R` in the upper triangle, the
    /// Householder vectors below it and their `min(m, n)` scalars in `tau`.
    pub fn geqrf<T: SolverScalar>(
        &self,
        m: usize,
        n: usize,
        a: &mut impl AsDeviceSliceMut<T>,
        lda: usize,
        tau: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let (a, tau) = (a.as_device_slice_mut()?, tau.as_device_slice_mut()?);
        check_matrix("geqrf", "A", a.len(), m, n, lda)?;
        check_len("geqrf", "tau", tau.len(), m.min(n))?;
        let (mi, ni, ldai) = (
            to_int("geqrf", "m", m)?,
            to_int("geqrf", "n", n)?,
            to_int("geqrf", "lda", lda)?,
        );
        self.bound.enter()?;
        // A and tau fit (checked).
        let (h, a, tau) = (self.raw, a.ptr() as *mut T, tau.ptr() as *mut T);
        self.with_workspace(
            "geqrf",
            |lwork| typed!(T.geqrf_size(h, mi, ni, a, ldai, lwork)),
            |work, lwork, info| typed!(T.geqrf(h, mi, ni, a, ldai, tau, work, lwork, info)),
            |i| format!("unexpected positive info {i}"),
        )
    }

    /// Forms the `m × n` `Q` (orthonormal columns) from the first `k` reflectors [`Solver::geqrf`]
    /// left in `a` and `tau`, in place of `a` (`m ≥ n ≥ k`).
    pub fn orgqr<T: SolverScalar>(
        &self,
        m: usize,
        n: usize,
        k: usize,
        a: &mut impl AsDeviceSliceMut<T>,
        lda: usize,
        tau: &impl AsDeviceSlice<T>,
    ) -> Result<()> {
        let (a, tau) = (a.as_device_slice_mut()?, tau.as_device_slice()?);
        if !(m >= n && n >= k) {
            return Err(Error::invalid(
                "orgqr",
                format!("needs m ≥ n ≥ k, got {m}, {n}, {k}"),
            ));
        }
        check_matrix("orgqr", "A", a.len(), m, n, lda)?;
        check_len("orgqr", "tau", tau.len(), k)?;
        let (mi, ni, ki, ldai) = (
            to_int("orgqr", "m", m)?,
            to_int("orgqr", "n", n)?,
            to_int("orgqr", "k", k)?,
            to_int("orgqr", "lda", lda)?,
        );
        self.bound.enter()?;
        // A and tau fit (checked).
        let (h, a, tau) = (self.raw, a.ptr() as *mut T, tau.ptr() as *const T);
        self.with_workspace(
            "orgqr",
            |lwork| typed!(T.orgqr_size(h, mi, ni, ki, a, ldai, tau, lwork)),
            |work, lwork, info| typed!(T.orgqr(h, mi, ni, ki, a, ldai, tau, work, lwork, info)),
            |i| format!("unexpected positive info {i}"),
        )
    }

    /// Eigenvalues (ascending, into `w`) of the symmetric `n × n` `a` read from its `uplo`
    /// triangle; with `vectors`, the orthonormal eigenvectors overwrite `a` (column `j` for
    /// `w[j]`). Non-convergence is [`Error::Numerical`].
    pub fn syevd<T: SolverScalar>(
        &self,
        vectors: bool,
        uplo: Fill,
        n: usize,
        a: &mut impl AsDeviceSliceMut<T>,
        lda: usize,
        w: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let (a, w) = (a.as_device_slice_mut()?, w.as_device_slice_mut()?);
        check_matrix("syevd", "A", a.len(), n, n, lda)?;
        check_len("syevd", "w", w.len(), n)?;
        let (ni, ldai) = (to_int("syevd", "n", n)?, to_int("syevd", "lda", lda)?);
        let job = if vectors {
            sys::cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR
        } else {
            sys::cusolverEigMode_t::CUSOLVER_EIG_MODE_NOVECTOR
        };
        self.bound.enter()?;
        // A and w fit (checked).
        let (h, a, w, f) = (self.raw, a.ptr() as *mut T, w.ptr() as *mut T, fill(uplo));
        self.with_workspace(
            "syevd",
            |lwork| typed!(T.syevd_size(h, job, f, ni, a, ldai, w, lwork)),
            |work, lwork, info| typed!(T.syevd(h, job, f, ni, a, ldai, w, work, lwork, info)),
            |i| format!("{i} off-diagonal elements of an intermediate tridiagonal form did not converge to zero"),
        )
    }

    /// Singular values (descending, into `s`, `min(m, n)` of them) of the `m × n` `a`
    /// (`m ≥ n`, as cuSOLVER's `gesvd` requires; `a` is destroyed); with [`SvdJob::Thin`], the
    /// first `n` columns of `U` into `u` (`m × n`, `ldu`) and `Vᵀ` into `vt` (`n × n`, `ldvt`).
    pub fn gesvd<T: SolverScalar>(
        &self,
        job: SvdJob,
        m: usize,
        n: usize,
        a: &mut impl AsDeviceSliceMut<T>,
        lda: usize,
        s: &mut impl AsDeviceSliceMut<T>,
        u: Option<(&mut dyn AsDeviceSliceMut<T>, usize)>,
        vt: Option<(&mut dyn AsDeviceSliceMut<T>, usize)>,
    ) -> Result<()> {
        let (a, s) = (a.as_device_slice_mut()?, s.as_device_slice_mut()?);
        if m < n {
            return Err(Error::invalid(
                "gesvd",
                format!("cuSOLVER's gesvd needs m ≥ n, got {m} × {n} (factor the transpose)"),
            ));
        }
        check_matrix("gesvd", "A", a.len(), m, n, lda)?;
        check_len("gesvd", "s", s.len(), n)?;
        let (mi, ni, ldai) = (
            to_int("gesvd", "m", m)?,
            to_int("gesvd", "n", n)?,
            to_int("gesvd", "lda", lda)?,
        );
        let (jobu, jobvt, uptr, ldu, vtptr, ldvt) = match job {
            SvdJob::ValuesOnly => (b'N' as i8, b'N' as i8, 0, 1, 0, 1),
            SvdJob::Thin => {
                let (Some((u, ldu)), Some((vt, ldvt))) = (u, vt) else {
                    return Err(Error::invalid("gesvd", "a thin SVD needs U and Vᵀ"));
                };
                let (u, vt) = (u.as_device_slice_mut()?, vt.as_device_slice_mut()?);
                check_matrix("gesvd", "U", u.len(), m, n, ldu)?;
                check_matrix("gesvd", "Vt", vt.len(), n, n, ldvt)?;
                (
                    b'S' as i8,
                    b'S' as i8,
                    u.ptr(),
                    to_int("gesvd", "ldu", ldu)?,
                    vt.ptr(),
                    to_int("gesvd", "ldvt", ldvt)?,
                )
            }
        };
        self.bound.enter()?;
        // Every operand fits (checked); U and Vᵀ are not referenced with job 'N'.
        let h = self.raw;
        self.with_workspace(
            "gesvd",
            |lwork| typed!(T.gesvd_size(h, mi, ni, lwork)),
            |work, lwork, info| {
                typed!(T.gesvd(
                    h,
                    jobu,
                    jobvt,
                    mi,
                    ni,
                    a.ptr() as _,
                    ldai,
                    s.ptr() as _,
                    uptr as _,
                    ldu,
                    vtptr as _,
                    ldvt,
                    work,
                    lwork,
                    std::ptr::null_mut(),
                    info,
                ))
            },
            |i| {
                format!(
                    "{i} superdiagonals of an intermediate bidiagonal form did not converge to zero"
                )
            },
        )
    }
}

impl Drop for Solver<'_> {
    fn drop(&mut self) {
        let _ = self.bound.enter();
        // SAFETY: the handle was created by `new` and is destroyed once.
        if let Err(e) = check("cusolverDnDestroy", unsafe {
            sys::cusolverDnDestroy(self.raw)
        }) {
            tracing::debug!(target: "chorus_cuda_libs", "{e}");
        }
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
        for name in [<f32 as Names>::NAMES, <f64 as Names>::NAMES].concat() {
            assert!(SYMBOLS.contains(&name), "{name} is called but not probed");
        }
    }
}
