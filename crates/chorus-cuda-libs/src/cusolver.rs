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

/// `f32` or `f64`: the element types of the dense solvers. Its methods are the raw entry
/// points; call [`Solver`]'s instead.
pub trait SolverScalar: bytemuck::Pod + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn getrf_size(
        h: sys::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: u64,
        lda: c_int,
        lwork: *mut c_int,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn getrf(
        h: sys::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: u64,
        lda: c_int,
        work: u64,
        ipiv: u64,
        info: u64,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn getrs(
        h: sys::cusolverDnHandle_t,
        t: sys::cublasOperation_t,
        n: c_int,
        nrhs: c_int,
        a: u64,
        lda: c_int,
        ipiv: u64,
        b: u64,
        ldb: c_int,
        info: u64,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn potrf_size(
        h: sys::cusolverDnHandle_t,
        f: sys::cublasFillMode_t,
        n: c_int,
        a: u64,
        lda: c_int,
        lwork: *mut c_int,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn potrf(
        h: sys::cusolverDnHandle_t,
        f: sys::cublasFillMode_t,
        n: c_int,
        a: u64,
        lda: c_int,
        work: u64,
        lwork: c_int,
        info: u64,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn potrs(
        h: sys::cusolverDnHandle_t,
        f: sys::cublasFillMode_t,
        n: c_int,
        nrhs: c_int,
        a: u64,
        lda: c_int,
        b: u64,
        ldb: c_int,
        info: u64,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn geqrf_size(
        h: sys::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: u64,
        lda: c_int,
        lwork: *mut c_int,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn geqrf(
        h: sys::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: u64,
        lda: c_int,
        tau: u64,
        work: u64,
        lwork: c_int,
        info: u64,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn orgqr_size(
        h: sys::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        k: c_int,
        a: u64,
        lda: c_int,
        tau: u64,
        lwork: *mut c_int,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn orgqr(
        h: sys::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        k: c_int,
        a: u64,
        lda: c_int,
        tau: u64,
        work: u64,
        lwork: c_int,
        info: u64,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn syevd_size(
        h: sys::cusolverDnHandle_t,
        j: sys::cusolverEigMode_t,
        f: sys::cublasFillMode_t,
        n: c_int,
        a: u64,
        lda: c_int,
        w: u64,
        lwork: *mut c_int,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn syevd(
        h: sys::cusolverDnHandle_t,
        j: sys::cusolverEigMode_t,
        f: sys::cublasFillMode_t,
        n: c_int,
        a: u64,
        lda: c_int,
        w: u64,
        work: u64,
        lwork: c_int,
        info: u64,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn gesvd_size(
        h: sys::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        lwork: *mut c_int,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn gesvd(
        h: sys::cusolverDnHandle_t,
        ju: i8,
        jvt: i8,
        m: c_int,
        n: c_int,
        a: u64,
        lda: c_int,
        s: u64,
        u: u64,
        ldu: c_int,
        vt: u64,
        ldvt: c_int,
        work: u64,
        lwork: c_int,
        info: u64,
    ) -> Result<()>;
}

macro_rules! solver_scalar {
    ($t:ty, $getrf_size:ident, $getrf:ident, $getrs:ident, $potrf_size:ident, $potrf:ident, $potrs:ident,
     $geqrf_size:ident, $geqrf:ident, $orgqr_size:ident, $orgqr:ident, $syevd_size:ident, $syevd:ident,
     $gesvd_size:ident, $gesvd:ident) => {
        impl sealed::Sealed for $t {}
        // SAFETY (every method): the caller passes a live handle and device addresses of the
        // extents the dimensions describe; pointers are only cast to the binding's types.
        impl SolverScalar for $t {
            unsafe fn getrf_size(
                h: sys::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                a: u64,
                lda: c_int,
                lwork: *mut c_int,
            ) -> Result<()> {
                solver!($getrf_size(h, m, n, a as *mut $t, lda, lwork))
            }
            unsafe fn getrf(
                h: sys::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                a: u64,
                lda: c_int,
                work: u64,
                ipiv: u64,
                info: u64,
            ) -> Result<()> {
                solver!($getrf(
                    h,
                    m,
                    n,
                    a as *mut $t,
                    lda,
                    work as *mut $t,
                    ipiv as *mut c_int,
                    info as *mut c_int
                ))
            }
            unsafe fn getrs(
                h: sys::cusolverDnHandle_t,
                t: sys::cublasOperation_t,
                n: c_int,
                nrhs: c_int,
                a: u64,
                lda: c_int,
                ipiv: u64,
                b: u64,
                ldb: c_int,
                info: u64,
            ) -> Result<()> {
                solver!($getrs(
                    h,
                    t,
                    n,
                    nrhs,
                    a as *const $t,
                    lda,
                    ipiv as *const c_int,
                    b as *mut $t,
                    ldb,
                    info as *mut c_int
                ))
            }
            unsafe fn potrf_size(
                h: sys::cusolverDnHandle_t,
                f: sys::cublasFillMode_t,
                n: c_int,
                a: u64,
                lda: c_int,
                lwork: *mut c_int,
            ) -> Result<()> {
                solver!($potrf_size(h, f, n, a as *mut $t, lda, lwork))
            }
            unsafe fn potrf(
                h: sys::cusolverDnHandle_t,
                f: sys::cublasFillMode_t,
                n: c_int,
                a: u64,
                lda: c_int,
                work: u64,
                lwork: c_int,
                info: u64,
            ) -> Result<()> {
                solver!($potrf(
                    h,
                    f,
                    n,
                    a as *mut $t,
                    lda,
                    work as *mut $t,
                    lwork,
                    info as *mut c_int
                ))
            }
            unsafe fn potrs(
                h: sys::cusolverDnHandle_t,
                f: sys::cublasFillMode_t,
                n: c_int,
                nrhs: c_int,
                a: u64,
                lda: c_int,
                b: u64,
                ldb: c_int,
                info: u64,
            ) -> Result<()> {
                solver!($potrs(
                    h,
                    f,
                    n,
                    nrhs,
                    a as *const $t,
                    lda,
                    b as *mut $t,
                    ldb,
                    info as *mut c_int
                ))
            }
            unsafe fn geqrf_size(
                h: sys::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                a: u64,
                lda: c_int,
                lwork: *mut c_int,
            ) -> Result<()> {
                solver!($geqrf_size(h, m, n, a as *mut $t, lda, lwork))
            }
            unsafe fn geqrf(
                h: sys::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                a: u64,
                lda: c_int,
                tau: u64,
                work: u64,
                lwork: c_int,
                info: u64,
            ) -> Result<()> {
                solver!($geqrf(
                    h,
                    m,
                    n,
                    a as *mut $t,
                    lda,
                    tau as *mut $t,
                    work as *mut $t,
                    lwork,
                    info as *mut c_int
                ))
            }
            unsafe fn orgqr_size(
                h: sys::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                k: c_int,
                a: u64,
                lda: c_int,
                tau: u64,
                lwork: *mut c_int,
            ) -> Result<()> {
                solver!($orgqr_size(
                    h,
                    m,
                    n,
                    k,
                    a as *const $t,
                    lda,
                    tau as *const $t,
                    lwork
                ))
            }
            unsafe fn orgqr(
                h: sys::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                k: c_int,
                a: u64,
                lda: c_int,
                tau: u64,
                work: u64,
                lwork: c_int,
                info: u64,
            ) -> Result<()> {
                solver!($orgqr(
                    h,
                    m,
                    n,
                    k,
                    a as *mut $t,
                    lda,
                    tau as *const $t,
                    work as *mut $t,
                    lwork,
                    info as *mut c_int
                ))
            }
            unsafe fn syevd_size(
                h: sys::cusolverDnHandle_t,
                j: sys::cusolverEigMode_t,
                f: sys::cublasFillMode_t,
                n: c_int,
                a: u64,
                lda: c_int,
                w: u64,
                lwork: *mut c_int,
            ) -> Result<()> {
                solver!($syevd_size(
                    h,
                    j,
                    f,
                    n,
                    a as *const $t,
                    lda,
                    w as *const $t,
                    lwork
                ))
            }
            unsafe fn syevd(
                h: sys::cusolverDnHandle_t,
                j: sys::cusolverEigMode_t,
                f: sys::cublasFillMode_t,
                n: c_int,
                a: u64,
                lda: c_int,
                w: u64,
                work: u64,
                lwork: c_int,
                info: u64,
            ) -> Result<()> {
                solver!($syevd(
                    h,
                    j,
                    f,
                    n,
                    a as *mut $t,
                    lda,
                    w as *mut $t,
                    work as *mut $t,
                    lwork,
                    info as *mut c_int
                ))
            }
            unsafe fn gesvd_size(
                h: sys::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                lwork: *mut c_int,
            ) -> Result<()> {
                solver!($gesvd_size(h, m, n, lwork))
            }
            unsafe fn gesvd(
                h: sys::cusolverDnHandle_t,
                ju: i8,
                jvt: i8,
                m: c_int,
                n: c_int,
                a: u64,
                lda: c_int,
                s: u64,
                u: u64,
                ldu: c_int,
                vt: u64,
                ldvt: c_int,
                work: u64,
                lwork: c_int,
                info: u64,
            ) -> Result<()> {
                solver!($gesvd(
                    h,
                    ju,
                    jvt,
                    m,
                    n,
                    a as *mut $t,
                    lda,
                    s as *mut $t,
                    u as *mut $t,
                    ldu,
                    vt as *mut $t,
                    ldvt,
                    work as *mut $t,
                    lwork,
                    std::ptr::null_mut(),
                    info as *mut c_int
                ))
            }
        }
    };
}

solver_scalar!(
    f32,
    cusolverDnSgetrf_bufferSize,
    cusolverDnSgetrf,
    cusolverDnSgetrs,
    cusolverDnSpotrf_bufferSize,
    cusolverDnSpotrf,
    cusolverDnSpotrs,
    cusolverDnSgeqrf_bufferSize,
    cusolverDnSgeqrf,
    cusolverDnSorgqr_bufferSize,
    cusolverDnSorgqr,
    cusolverDnSsyevd_bufferSize,
    cusolverDnSsyevd,
    cusolverDnSgesvd_bufferSize,
    cusolverDnSgesvd
);
solver_scalar!(
    f64,
    cusolverDnDgetrf_bufferSize,
    cusolverDnDgetrf,
    cusolverDnDgetrs,
    cusolverDnDpotrf_bufferSize,
    cusolverDnDpotrf,
    cusolverDnDpotrs,
    cusolverDnDgeqrf_bufferSize,
    cusolverDnDgeqrf,
    cusolverDnDorgqr_bufferSize,
    cusolverDnDorgqr,
    cusolverDnDsyevd_bufferSize,
    cusolverDnDsyevd,
    cusolverDnDgesvd_bufferSize,
    cusolverDnDgesvd
);

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
        let mut lwork = 0;
        // SAFETY: A fits (checked); the workspace and info are this handle's.
        unsafe { T::getrf_size(self.raw, mi, ni, a.ptr(), ldai, &mut lwork)? };
        let work = self.workspace::<T>(lwork)?;
        // SAFETY: as above; ipiv holds min(m, n) pivots.
        unsafe {
            T::getrf(
                self.raw,
                mi,
                ni,
                a.ptr(),
                ldai,
                work,
                ipiv.ptr(),
                self.info.ptr(),
            )?
        };
        self.info_result("getrf", |i| {
            format!("U({i},{i}) is exactly zero: the matrix is singular")
        })
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
        // SAFETY: every operand fits (checked).
        unsafe {
            T::getrs(
                self.raw,
                op(trans),
                ni,
                nrhsi,
                a.ptr(),
                ldai,
                ipiv.ptr(),
                b.ptr(),
                ldbi,
                self.info.ptr(),
            )?
        };
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
        let mut lwork = 0;
        // SAFETY: A fits (checked).
        unsafe { T::potrf_size(self.raw, fill(uplo), ni, a.ptr(), ldai, &mut lwork)? };
        let work = self.workspace::<T>(lwork)?;
        // SAFETY: as above, with a workspace of `lwork` elements.
        unsafe {
            T::potrf(
                self.raw,
                fill(uplo),
                ni,
                a.ptr(),
                ldai,
                work,
                lwork,
                self.info.ptr(),
            )?
        };
        self.info_result("potrf", |i| {
            format!("the leading minor of order {i} is not positive definite")
        })
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
        // SAFETY: both fit (checked).
        unsafe {
            T::potrs(
                self.raw,
                fill(uplo),
                ni,
                nrhsi,
                a.ptr(),
                ldai,
                b.ptr(),
                ldbi,
                self.info.ptr(),
            )?
        };
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
        let mut lwork = 0;
        // SAFETY: A fits (checked).
        unsafe { T::geqrf_size(self.raw, mi, ni, a.ptr(), ldai, &mut lwork)? };
        let work = self.workspace::<T>(lwork)?;
        // SAFETY: as above.
        unsafe {
            T::geqrf(
                self.raw,
                mi,
                ni,
                a.ptr(),
                ldai,
                tau.ptr(),
                work,
                lwork,
                self.info.ptr(),
            )?
        };
        self.info_result("geqrf", |i| format!("unexpected positive info {i}"))
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
        let mut lwork = 0;
        // SAFETY: A and tau fit (checked).
        unsafe { T::orgqr_size(self.raw, mi, ni, ki, a.ptr(), ldai, tau.ptr(), &mut lwork)? };
        let work = self.workspace::<T>(lwork)?;
        // SAFETY: as above.
        unsafe {
            T::orgqr(
                self.raw,
                mi,
                ni,
                ki,
                a.ptr(),
                ldai,
                tau.ptr(),
                work,
                lwork,
                self.info.ptr(),
            )?
        };
        self.info_result("orgqr", |i| format!("unexpected positive info {i}"))
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
        let mut lwork = 0;
        // SAFETY: A and w fit (checked).
        unsafe {
            T::syevd_size(
                self.raw,
                job,
                fill(uplo),
                ni,
                a.ptr(),
                ldai,
                w.ptr(),
                &mut lwork,
            )?
        };
        let work = self.workspace::<T>(lwork)?;
        // SAFETY: as above.
        unsafe {
            T::syevd(
                self.raw,
                job,
                fill(uplo),
                ni,
                a.ptr(),
                ldai,
                w.ptr(),
                work,
                lwork,
                self.info.ptr(),
            )?
        };
        self.info_result("syevd", |i| format!("{i} off-diagonal elements of an intermediate tridiagonal form did not converge to zero"))
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
        let mut lwork = 0;
        // SAFETY: no operand is touched.
        unsafe { T::gesvd_size(self.raw, mi, ni, &mut lwork)? };
        let work = self.workspace::<T>(lwork)?;
        // SAFETY: every operand fits (checked); U and Vᵀ are not referenced with job 'N'.
        unsafe {
            T::gesvd(
                self.raw,
                jobu,
                jobvt,
                mi,
                ni,
                a.ptr(),
                ldai,
                s.ptr(),
                uptr,
                ldu,
                vtptr,
                ldvt,
                work,
                lwork,
                self.info.ptr(),
            )?
        };
        self.info_result("gesvd", |i| {
            format!(
                "{i} superdiagonals of an intermediate bidiagonal form did not converge to zero"
            )
        })
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
