//! cuRAND's host API: generators on the device that fill device memory with uniform, normal,
//! log-normal or Poisson numbers, on the generator's stream.

use crate::bound::Bound;
use crate::error::{Error, Result};
use crate::library::Library;
use chorus_driver::{AsDeviceSliceMut, Stream};
use cudarc::curand::sys::{self, curandStatus_t};

/// The cuRAND library, probed on first use.
pub static LIBRARY: Library = Library::new("cuRAND", "curand", &[], SYMBOLS, || {
    // SAFETY: only asks the system loader whether cudarc's names resolve.
    unsafe { sys::is_culib_present() }
});

/// True when cuRAND can be used (the seed's `*curand-not-found*`, negated).
pub fn is_available() -> bool {
    LIBRARY.is_available()
}

const SYMBOLS: &[&str] = &[
    "curandCreateGenerator",
    "curandDestroyGenerator",
    "curandSetStream",
    "curandSetPseudoRandomGeneratorSeed",
    "curandSetGeneratorOffset",
    "curandSetQuasiRandomGeneratorDimensions",
    "curandGenerate",
    "curandGenerateUniform",
    "curandGenerateUniformDouble",
    "curandGenerateNormal",
    "curandGenerateNormalDouble",
    "curandGenerateLogNormal",
    "curandGenerateLogNormalDouble",
    "curandGeneratePoisson",
];

/// What a cuRAND status means, by its name (cuRAND has no function that says).
fn describe(name: &str) -> &'static str {
    match name {
        "CURAND_STATUS_VERSION_MISMATCH" => "header file and linked library version do not match",
        "CURAND_STATUS_NOT_INITIALIZED" => "generator not initialized",
        "CURAND_STATUS_ALLOCATION_FAILED" => "memory allocation failed",
        "CURAND_STATUS_TYPE_ERROR" => "generator is the wrong type",
        "CURAND_STATUS_OUT_OF_RANGE" => "argument out of range",
        "CURAND_STATUS_LENGTH_NOT_MULTIPLE" => {
            "length requested is not a multiple of the dimension (or even, for normal numbers)"
        }
        "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED" => "the GPU does not have double precision",
        "CURAND_STATUS_LAUNCH_FAILURE" => "kernel launch failure",
        "CURAND_STATUS_PREEXISTING_FAILURE" => "a preexisting failure on the library's stream",
        "CURAND_STATUS_INITIALIZATION_FAILED" => "initialization of CUDA failed",
        "CURAND_STATUS_ARCH_MISMATCH" => "the architecture does not support this generator",
        _ => "internal library error",
    }
}

/// A cuRAND status as an error naming `call`.
pub fn check(call: &'static str, status: curandStatus_t) -> Result<()> {
    if status == curandStatus_t::CURAND_STATUS_SUCCESS {
        return Ok(());
    }
    let name = format!("{status:?}");
    Err(Error::Status {
        library: "cuRAND",
        call,
        code: status as i64,
        message: describe(&name).into(),
        name,
    })
}

macro_rules! rand {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        // SAFETY: the library is loaded (ensured before the generator was made); each call site
        // passes a live generator and device extents it checked.
        check(stringify!($f), unsafe { sys::$f($($arg),*) })
    };
}

/// The generator algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RngKind {
    /// XORWOW (cuRAND's default pseudo-random generator).
    Xorwow,
    /// Philox4x32-10 (counter-based; fast skip-ahead).
    Philox4x32_10,
    /// MRG32k3a (combined multiple recursive).
    Mrg32k3a,
    /// Sobol32 (quasi-random, low-discrepancy); seeds do not apply, dimensions do.
    Sobol32,
}

impl RngKind {
    fn raw(self) -> sys::curandRngType_t {
        match self {
            RngKind::Xorwow => sys::curandRngType_t::CURAND_RNG_PSEUDO_XORWOW,
            RngKind::Philox4x32_10 => sys::curandRngType_t::CURAND_RNG_PSEUDO_PHILOX4_32_10,
            RngKind::Mrg32k3a => sys::curandRngType_t::CURAND_RNG_PSEUDO_MRG32K3A,
            RngKind::Sobol32 => sys::curandRngType_t::CURAND_RNG_QUASI_SOBOL32,
        }
    }

    /// True for quasi-random generators.
    pub fn is_quasi(self) -> bool {
        self == RngKind::Sobol32
    }
}

/// A cuRAND generator bound to a context and a stream, destroyed on drop.
#[derive(Debug)]
pub struct Generator<'s> {
    raw: sys::curandGenerator_t,
    kind: RngKind,
    dimensions: u32,
    bound: Bound<'s>,
}

// SAFETY: the generator is used by one thread at a time (`&mut self` for generation).
unsafe impl Send for Generator<'_> {}

impl<'s> Generator<'s> {
    /// A generator of `kind` in the current context, generating on `stream`.
    pub fn new(kind: RngKind, stream: &'s Stream) -> Result<Generator<'s>> {
        LIBRARY.ensure()?;
        let bound = Bound::current(stream)?;
        let mut raw = std::ptr::null_mut();
        rand!(curandCreateGenerator(&mut raw, kind.raw()))?;
        let generator = Generator {
            raw,
            kind,
            dimensions: 1,
            bound,
        };
        rand!(curandSetStream(raw, stream.raw() as sys::cudaStream_t))?;
        Ok(generator)
    }

    /// The algorithm.
    pub fn kind(&self) -> RngKind {
        self.kind
    }

    /// The raw generator, for calls through cudarc's `curand::sys`.
    pub fn raw(&self) -> sys::curandGenerator_t {
        self.raw
    }

    /// Seeds a pseudo-random generator (an error for Sobol32).
    pub fn set_seed(&mut self, seed: u64) -> Result<()> {
        if self.kind.is_quasi() {
            return Err(Error::invalid(
                "set_seed",
                "a quasi-random generator takes no seed",
            ));
        }
        self.bound.enter()?;
        rand!(curandSetPseudoRandomGeneratorSeed(self.raw, seed))
    }

    /// Skips the first `offset` numbers of the sequence.
    pub fn set_offset(&mut self, offset: u64) -> Result<()> {
        self.bound.enter()?;
        rand!(curandSetGeneratorOffset(self.raw, offset))
    }

    /// The number of dimensions of a quasi-random generator (1 to 20 000); outputs are then
    /// dimension-major: all numbers of dimension 0, then of dimension 1, …
    pub fn set_dimensions(&mut self, dimensions: u32) -> Result<()> {
        if !self.kind.is_quasi() {
            return Err(Error::invalid(
                "set_dimensions",
                "only quasi-random generators have dimensions",
            ));
        }
        self.bound.enter()?;
        rand!(curandSetQuasiRandomGeneratorDimensions(
            self.raw, dimensions
        ))?;
        self.dimensions = dimensions;
        Ok(())
    }

    /// Checks a fill of `n` numbers: a multiple of the dimensions (quasi), even for normal
    /// numbers of pseudo generators (cuRAND makes them in pairs).
    fn check_count(&self, call: &'static str, n: usize, pairs: bool) -> Result<()> {
        if self.kind.is_quasi() && !n.is_multiple_of(self.dimensions as usize) {
            return Err(Error::invalid(
                call,
                format!(
                    "{n} numbers are not a multiple of the {} dimensions",
                    self.dimensions
                ),
            ));
        }
        if pairs && !self.kind.is_quasi() && !n.is_multiple_of(2) {
            return Err(Error::invalid(
                call,
                format!("normal numbers come in pairs: {n} is odd"),
            ));
        }
        Ok(())
    }

    /// Fills `out` with uniformly distributed 32-bit integers.
    pub fn fill_u32(&mut self, out: &mut impl AsDeviceSliceMut<u32>) -> Result<()> {
        let out = out.as_device_slice_mut()?;
        self.check_count("fill_u32", out.len(), false)?;
        self.bound.enter()?;
        rand!(curandGenerate(self.raw, out.ptr() as *mut _, out.len()))
    }

    /// Fills `out` with uniform numbers in (0, 1].
    pub fn fill_uniform<T: RandFloat>(&mut self, out: &mut impl AsDeviceSliceMut<T>) -> Result<()> {
        let out = out.as_device_slice_mut()?;
        self.check_count("fill_uniform", out.len(), false)?;
        self.bound.enter()?;
        // SAFETY: `out` holds `len` elements of T (its own view).
        unsafe { T::uniform(self.raw, out.ptr(), out.len()) }
    }

    /// Fills `out` with normally distributed numbers of `mean` and `stddev`.
    pub fn fill_normal<T: RandFloat>(
        &mut self,
        out: &mut impl AsDeviceSliceMut<T>,
        mean: T,
        stddev: T,
    ) -> Result<()> {
        let out = out.as_device_slice_mut()?;
        self.check_count("fill_normal", out.len(), true)?;
        self.bound.enter()?;
        // SAFETY: as above.
        unsafe { T::normal(self.raw, out.ptr(), out.len(), mean, stddev) }
    }

    /// Fills `out` with log-normal numbers: `exp` of normal numbers of `mean` and `stddev`.
    pub fn fill_log_normal<T: RandFloat>(
        &mut self,
        out: &mut impl AsDeviceSliceMut<T>,
        mean: T,
        stddev: T,
    ) -> Result<()> {
        let out = out.as_device_slice_mut()?;
        self.check_count("fill_log_normal", out.len(), true)?;
        self.bound.enter()?;
        // SAFETY: as above.
        unsafe { T::log_normal(self.raw, out.ptr(), out.len(), mean, stddev) }
    }

    /// Fills `out` with Poisson-distributed counts of mean `lambda` (> 0).
    pub fn fill_poisson(
        &mut self,
        out: &mut impl AsDeviceSliceMut<u32>,
        lambda: f64,
    ) -> Result<()> {
        let out = out.as_device_slice_mut()?;
        if lambda.is_nan() || lambda <= 0.0 {
            return Err(Error::invalid(
                "fill_poisson",
                format!("lambda = {lambda} is not positive"),
            ));
        }
        self.check_count("fill_poisson", out.len(), false)?;
        self.bound.enter()?;
        rand!(curandGeneratePoisson(
            self.raw,
            out.ptr() as *mut _,
            out.len(),
            lambda
        ))
    }
}

impl Drop for Generator<'_> {
    fn drop(&mut self) {
        let _ = self.bound.enter();
        // SAFETY: the generator was created by `new` and is destroyed once.
        if let Err(e) = check("curandDestroyGenerator", unsafe {
            sys::curandDestroyGenerator(self.raw)
        }) {
            tracing::debug!(target: "chorus_cuda_libs", "{e}");
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// `f32` or `f64`: the floating-point outputs of a generator.
pub trait RandFloat: bytemuck::Pod + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn uniform(g: sys::curandGenerator_t, out: u64, n: usize) -> Result<()>;
    #[doc(hidden)]
    unsafe fn normal(
        g: sys::curandGenerator_t,
        out: u64,
        n: usize,
        mean: Self,
        stddev: Self,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn log_normal(
        g: sys::curandGenerator_t,
        out: u64,
        n: usize,
        mean: Self,
        stddev: Self,
    ) -> Result<()>;
}

macro_rules! rand_float {
    ($t:ty, $uniform:ident, $normal:ident, $log_normal:ident) => {
        impl sealed::Sealed for $t {}
        // SAFETY (each): the caller passes a live generator and `n` elements of device memory.
        impl RandFloat for $t {
            unsafe fn uniform(g: sys::curandGenerator_t, out: u64, n: usize) -> Result<()> {
                rand!($uniform(g, out as *mut $t, n))
            }
            unsafe fn normal(
                g: sys::curandGenerator_t,
                out: u64,
                n: usize,
                mean: $t,
                stddev: $t,
            ) -> Result<()> {
                rand!($normal(g, out as *mut $t, n, mean, stddev))
            }
            unsafe fn log_normal(
                g: sys::curandGenerator_t,
                out: u64,
                n: usize,
                mean: $t,
                stddev: $t,
            ) -> Result<()> {
                rand!($log_normal(g, out as *mut $t, n, mean, stddev))
            }
        }
    };
}

rand_float!(
    f32,
    curandGenerateUniform,
    curandGenerateNormal,
    curandGenerateLogNormal
);
rand_float!(
    f64,
    curandGenerateUniformDouble,
    curandGenerateNormalDouble,
    curandGenerateLogNormalDouble
);
