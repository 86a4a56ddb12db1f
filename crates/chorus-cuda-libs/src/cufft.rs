//! cuFFT: plans for 1-D, 2-D, 3-D and batched transforms with advanced layouts, complex to
//! complex, real to complex and complex to real, in f32 and f64, run on the plan's stream; and a
//! [`PlanCache`] keyed by shape.
//!
//! Transforms are unnormalised, as in cuFFT: a forward transform then an inverse one multiplies
//! the data by the number of points. For R2C the output of a transform over `n₀ × … × n_last`
//! real points is `n₀ × … × (n_last/2 + 1)` complex points (the rest follow by symmetry); C2R
//! takes that and gives back the real points. C2R overwrites its input, as cuFFT's does.

use crate::bound::Bound;
use crate::error::{Error, Result};
use crate::library::Library;
use crate::types::Complex;
use chorus_driver::{AsDeviceSlice, AsDeviceSliceMut, Stream};
use cudarc::cufft::sys::{self, cufftResult};
use std::collections::HashMap;

/// The cuFFT library, probed on first use.
pub static LIBRARY: Library = Library::new("cuFFT", "cufft", &[], SYMBOLS, || {
    // SAFETY: only asks the system loader whether cudarc's names resolve.
    unsafe { sys::is_culib_present() }
});

/// True when cuFFT can be used (the seed's `*cufft-not-found*`, negated).
pub fn is_available() -> bool {
    LIBRARY.is_available()
}

const SYMBOLS: &[&str] = &[
    "cufftCreate",
    "cufftDestroy",
    "cufftMakePlanMany64",
    "cufftSetStream",
    "cufftExecC2C",
    "cufftExecZ2Z",
    "cufftExecR2C",
    "cufftExecD2Z",
    "cufftExecC2R",
    "cufftExecZ2D",
];

/// A cuFFT result as an error naming `call`.
pub fn check(call: &'static str, result: cufftResult) -> Result<()> {
    if result == cufftResult::CUFFT_SUCCESS {
        return Ok(());
    }
    let name = format!("{result:?}");
    let message = match name.as_str() {
        "CUFFT_INVALID_PLAN" => "the plan handle is invalid",
        "CUFFT_ALLOC_FAILED" => "cuFFT failed to allocate GPU or CPU memory",
        "CUFFT_INVALID_TYPE" => "the transform type is not supported",
        "CUFFT_INVALID_VALUE" => "a bad pointer or parameter",
        "CUFFT_EXEC_FAILED" => "the transform failed to execute on the GPU",
        "CUFFT_SETUP_FAILED" => "the cuFFT library failed to initialise",
        "CUFFT_INVALID_SIZE" => "the transform size is not supported",
        "CUFFT_UNALIGNED_DATA" => "the data is not aligned",
        "CUFFT_INVALID_DEVICE" => "the plan was made on another device",
        "CUFFT_NO_WORKSPACE" => "no workspace was given before execution",
        "CUFFT_NOT_IMPLEMENTED" => "not implemented",
        "CUFFT_NOT_SUPPORTED" => "the operation is not supported for these parameters",
        _ => "internal cuFFT error",
    };
    Err(Error::Status {
        library: "cuFFT",
        call,
        code: result as i64,
        name,
        message: message.into(),
    })
}

macro_rules! fft {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        // SAFETY: the library is loaded (ensured before the plan was made); each call site
        // passes a live plan and device extents it checked against the plan's layout.
        check(stringify!($f), unsafe { sys::$f($($arg),*) })
    };
}

/// The kind of a transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FftKind {
    /// Complex to complex, forward or inverse.
    C2C,
    /// Real to complex (forward).
    R2C,
    /// Complex to real (inverse).
    C2R,
}

/// The precision of a transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// f32 / [`crate::C32`].
    Single,
    /// f64 / [`crate::C64`].
    Double,
}

/// The direction of a complex-to-complex transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `X_k = Σ x_j e^{−2πi jk/n}`.
    Forward,
    /// `x_j = Σ X_k e^{+2πi jk/n}` (unnormalised).
    Inverse,
}

/// Where the elements of one side (input or output) of a batched transform lie: element
/// `(b, i₀, …, i_last)` is at `b·dist + stride·(i₀·embed₁·…·embed_last + … + i_last)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Embedding {
    /// The storage dimensions (each ≥ the logical one; the first is not used by cuFFT).
    pub embed: Vec<usize>,
    /// Elements between consecutive points.
    pub stride: usize,
    /// Elements between the first points of consecutive transforms.
    pub dist: usize,
}

/// A plan's shape: the transform size, its kind and precision, the batch, and optionally
/// advanced layouts (the key of the [`PlanCache`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlanShape {
    /// The logical size of one transform (1 to 3 dimensions, slowest first).
    pub dims: Vec<usize>,
    /// C2C, R2C or C2R.
    pub kind: FftKind,
    /// f32 or f64.
    pub precision: Precision,
    /// The number of transforms.
    pub batch: usize,
    /// The input layout (`None`: contiguous, transforms back to back).
    pub input: Option<Embedding>,
    /// The output layout (`None`: contiguous).
    pub output: Option<Embedding>,
}

impl PlanShape {
    /// Contiguous transforms of `dims`, `batch` of them.
    pub fn new(dims: &[usize], kind: FftKind, precision: Precision, batch: usize) -> PlanShape {
        PlanShape {
            dims: dims.to_vec(),
            kind,
            precision,
            batch,
            input: None,
            output: None,
        }
    }

    /// With advanced layouts for input and output.
    pub fn with_layouts(mut self, input: Embedding, output: Embedding) -> PlanShape {
        self.input = Some(input);
        self.output = Some(output);
        self
    }

    /// The logical dimensions of the complex side of a real transform: the last halved + 1.
    fn half_dims(&self) -> Vec<usize> {
        let mut d = self.dims.clone();
        if let Some(last) = d.last_mut() {
            *last = *last / 2 + 1;
        }
        d
    }

    /// The logical dimensions of the input and of the output.
    fn side_dims(&self) -> (Vec<usize>, Vec<usize>) {
        match self.kind {
            FftKind::C2C => (self.dims.clone(), self.dims.clone()),
            FftKind::R2C => (self.dims.clone(), self.half_dims()),
            FftKind::C2R => (self.half_dims(), self.dims.clone()),
        }
    }

    /// The number of elements a side needs: one past the last element's index.
    fn extent(&self, logical: &[usize], layout: Option<&Embedding>) -> Result<usize> {
        let points: usize = logical.iter().product();
        let Some(layout) = layout else {
            return Ok(points * self.batch);
        };
        if layout.embed.len() != logical.len() || layout.stride == 0 {
            return Err(Error::invalid(
                "fft plan",
                format!(
                    "a layout of {} dimensions and stride {} for a {}-D transform",
                    layout.embed.len(),
                    layout.stride,
                    logical.len()
                ),
            ));
        }
        let mut last = 0usize;
        let mut pitch = 1usize;
        for d in (0..logical.len()).rev() {
            if d > 0 && layout.embed[d] < logical[d] {
                return Err(Error::invalid(
                    "fft plan",
                    format!(
                        "embedding dimension {d} = {} < the transform's {}",
                        layout.embed[d], logical[d]
                    ),
                ));
            }
            last += (logical[d] - 1) * pitch;
            pitch *= layout.embed[d];
        }
        Ok(layout.dist * (self.batch - 1) + layout.stride * last + 1)
    }

    fn check(&self) -> Result<()> {
        if self.dims.is_empty() || self.dims.len() > 3 || self.dims.contains(&0) || self.batch == 0
        {
            return Err(Error::invalid(
                "fft plan",
                format!(
                    "{:?} × batch {}: transforms are 1-D to 3-D with nonzero sizes and batch",
                    self.dims, self.batch
                ),
            ));
        }
        if self.input.is_some() != self.output.is_some() {
            return Err(Error::invalid("fft plan", "give both layouts or neither"));
        }
        Ok(())
    }

    fn raw_type(&self) -> sys::cufftType {
        use sys::cufftType::*;
        match (self.kind, self.precision) {
            (FftKind::C2C, Precision::Single) => CUFFT_C2C,
            (FftKind::R2C, Precision::Single) => CUFFT_R2C,
            (FftKind::C2R, Precision::Single) => CUFFT_C2R,
            (FftKind::C2C, Precision::Double) => CUFFT_Z2Z,
            (FftKind::R2C, Precision::Double) => CUFFT_D2Z,
            (FftKind::C2R, Precision::Double) => CUFFT_Z2D,
        }
    }
}

/// A cuFFT plan bound to a context and a stream, destroyed on drop.
#[derive(Debug)]
pub struct Plan<'s> {
    raw: sys::cufftHandle,
    shape: PlanShape,
    input_len: usize,
    output_len: usize,
    bound: Bound<'s>,
}

// SAFETY: the plan is used by one thread at a time (`&mut self` to execute).
unsafe impl Send for Plan<'_> {}

impl<'s> Plan<'s> {
    /// A plan for `shape` in the current context, executing on `stream`.
    pub fn new(shape: PlanShape, stream: &'s Stream) -> Result<Plan<'s>> {
        LIBRARY.ensure()?;
        shape.check()?;
        let (in_dims, out_dims) = shape.side_dims();
        let input_len = shape.extent(&in_dims, shape.input.as_ref())?;
        let output_len = shape.extent(&out_dims, shape.output.as_ref())?;
        let bound = Bound::current(stream)?;
        let mut raw = 0;
        fft!(cufftCreate(&mut raw))?;
        let plan = Plan {
            raw,
            shape,
            input_len,
            output_len,
            bound,
        };
        let mut n: Vec<i64> = plan.shape.dims.iter().map(|&d| d as i64).collect();
        let batch = plan.shape.batch as i64;
        let mut work = 0usize;
        match (&plan.shape.input, &plan.shape.output) {
            (Some(i), Some(o)) => {
                let mut inembed: Vec<i64> = i.embed.iter().map(|&d| d as i64).collect();
                let mut onembed: Vec<i64> = o.embed.iter().map(|&d| d as i64).collect();
                fft!(cufftMakePlanMany64(
                    raw,
                    n.len() as i32,
                    n.as_mut_ptr(),
                    inembed.as_mut_ptr(),
                    i.stride as i64,
                    i.dist as i64,
                    onembed.as_mut_ptr(),
                    o.stride as i64,
                    o.dist as i64,
                    plan.shape.raw_type(),
                    batch,
                    &mut work
                ))?;
            }
            _ => {
                let (idist, odist) = (
                    in_dims.iter().product::<usize>() as i64,
                    out_dims.iter().product::<usize>() as i64,
                );
                fft!(cufftMakePlanMany64(
                    raw,
                    n.len() as i32,
                    n.as_mut_ptr(),
                    std::ptr::null_mut(),
                    1,
                    idist,
                    std::ptr::null_mut(),
                    1,
                    odist,
                    plan.shape.raw_type(),
                    batch,
                    &mut work
                ))?;
            }
        }
        fft!(cufftSetStream(raw, stream.raw() as sys::cudaStream_t))?;
        Ok(plan)
    }

    /// The plan's shape.
    pub fn shape(&self) -> &PlanShape {
        &self.shape
    }

    /// The raw plan, for calls through cudarc's `cufft::sys`.
    pub fn raw(&self) -> sys::cufftHandle {
        self.raw
    }

    /// Elements the input must hold.
    pub fn input_len(&self) -> usize {
        self.input_len
    }

    /// Elements the output must hold.
    pub fn output_len(&self) -> usize {
        self.output_len
    }

    fn check_call(
        &self,
        call: &'static str,
        kind: FftKind,
        precision: Precision,
        input: usize,
        output: usize,
    ) -> Result<()> {
        if self.shape.kind != kind || self.shape.precision != precision {
            return Err(Error::invalid(
                call,
                format!(
                    "the plan is {:?} {:?}",
                    self.shape.kind, self.shape.precision
                ),
            ));
        }
        if input < self.input_len {
            return Err(Error::invalid(
                call,
                format!(
                    "the input has {input} elements, the plan reads {}",
                    self.input_len
                ),
            ));
        }
        if output < self.output_len {
            return Err(Error::invalid(
                call,
                format!(
                    "the output has {output} elements, the plan writes {}",
                    self.output_len
                ),
            ));
        }
        self.bound.enter()
    }

    /// A complex-to-complex transform from `input` into `output`.
    pub fn c2c<T: FftFloat>(
        &mut self,
        input: &impl AsDeviceSlice<Complex<T>>,
        output: &mut impl AsDeviceSliceMut<Complex<T>>,
        direction: Direction,
    ) -> Result<()> {
        let (i, o) = (input.as_device_slice()?, output.as_device_slice_mut()?);
        self.check_call("c2c", FftKind::C2C, T::PRECISION, i.len(), o.len())?;
        // SAFETY: both sides hold the plan's extents (checked); cuFFT does not write the input
        // of an out-of-place C2C transform.
        unsafe { T::c2c(self.raw, i.ptr(), o.ptr(), direction) }
    }

    /// A complex-to-complex transform in place.
    pub fn c2c_in_place<T: FftFloat>(
        &mut self,
        data: &mut impl AsDeviceSliceMut<Complex<T>>,
        direction: Direction,
    ) -> Result<()> {
        let d = data.as_device_slice_mut()?;
        self.check_call("c2c_in_place", FftKind::C2C, T::PRECISION, d.len(), d.len())?;
        if self.shape.input != self.shape.output {
            return Err(Error::invalid(
                "c2c_in_place",
                "in place needs the same input and output layouts",
            ));
        }
        // SAFETY: as above, in place.
        unsafe { T::c2c(self.raw, d.ptr(), d.ptr(), direction) }
    }

    /// A real-to-complex (forward) transform.
    pub fn r2c<T: FftFloat>(
        &mut self,
        input: &impl AsDeviceSlice<T>,
        output: &mut impl AsDeviceSliceMut<Complex<T>>,
    ) -> Result<()> {
        let (i, o) = (input.as_device_slice()?, output.as_device_slice_mut()?);
        self.check_call("r2c", FftKind::R2C, T::PRECISION, i.len(), o.len())?;
        // SAFETY: as above.
        unsafe { T::r2c(self.raw, i.ptr(), o.ptr()) }
    }

    /// A complex-to-real (inverse) transform. cuFFT overwrites the input, so it is taken
    /// writable.
    pub fn c2r<T: FftFloat>(
        &mut self,
        input: &mut impl AsDeviceSliceMut<Complex<T>>,
        output: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let (i, o) = (input.as_device_slice_mut()?, output.as_device_slice_mut()?);
        self.check_call("c2r", FftKind::C2R, T::PRECISION, i.len(), o.len())?;
        // SAFETY: as above.
        unsafe { T::c2r(self.raw, i.ptr(), o.ptr()) }
    }
}

impl Drop for Plan<'_> {
    fn drop(&mut self) {
        let _ = self.bound.enter();
        // SAFETY: the plan was created by `new` and is destroyed once.
        if let Err(e) = check("cufftDestroy", unsafe { sys::cufftDestroy(self.raw) }) {
            tracing::debug!(target: "chorus_cuda_libs", "{e}");
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// `f32` or `f64`: the precisions of the transforms.
pub trait FftFloat: bytemuck::Pod + sealed::Sealed {
    /// The precision.
    const PRECISION: Precision;
    #[doc(hidden)]
    unsafe fn c2c(
        plan: sys::cufftHandle,
        input: u64,
        output: u64,
        direction: Direction,
    ) -> Result<()>;
    #[doc(hidden)]
    unsafe fn r2c(plan: sys::cufftHandle, input: u64, output: u64) -> Result<()>;
    #[doc(hidden)]
    unsafe fn c2r(plan: sys::cufftHandle, input: u64, output: u64) -> Result<()>;
}

fn sign(direction: Direction) -> i32 {
    match direction {
        Direction::Forward => -1,
        Direction::Inverse => 1,
    }
}

impl sealed::Sealed for f32 {}
impl sealed::Sealed for f64 {}

// SAFETY (each method): the caller passes a live plan and device extents checked against it.
impl FftFloat for f32 {
    const PRECISION: Precision = Precision::Single;
    unsafe fn c2c(
        plan: sys::cufftHandle,
        input: u64,
        output: u64,
        direction: Direction,
    ) -> Result<()> {
        fft!(cufftExecC2C(
            plan,
            input as *mut _,
            output as *mut _,
            sign(direction)
        ))
    }
    unsafe fn r2c(plan: sys::cufftHandle, input: u64, output: u64) -> Result<()> {
        fft!(cufftExecR2C(plan, input as *mut _, output as *mut _))
    }
    unsafe fn c2r(plan: sys::cufftHandle, input: u64, output: u64) -> Result<()> {
        fft!(cufftExecC2R(plan, input as *mut _, output as *mut _))
    }
}

// SAFETY (each method): as for f32.
impl FftFloat for f64 {
    const PRECISION: Precision = Precision::Double;
    unsafe fn c2c(
        plan: sys::cufftHandle,
        input: u64,
        output: u64,
        direction: Direction,
    ) -> Result<()> {
        fft!(cufftExecZ2Z(
            plan,
            input as *mut _,
            output as *mut _,
            sign(direction)
        ))
    }
    unsafe fn r2c(plan: sys::cufftHandle, input: u64, output: u64) -> Result<()> {
        fft!(cufftExecD2Z(plan, input as *mut _, output as *mut _))
    }
    unsafe fn c2r(plan: sys::cufftHandle, input: u64, output: u64) -> Result<()> {
        fft!(cufftExecZ2D(plan, input as *mut _, output as *mut _))
    }
}

/// Plans by shape, made on first use and kept: repeated transforms of one shape plan once.
#[derive(Debug)]
pub struct PlanCache<'s> {
    stream: &'s Stream,
    plans: HashMap<PlanShape, Plan<'s>>,
}

impl<'s> PlanCache<'s> {
    /// An empty cache whose plans execute on `stream` (in the current context).
    pub fn new(stream: &'s Stream) -> PlanCache<'s> {
        PlanCache {
            stream,
            plans: HashMap::new(),
        }
    }

    /// The plan for `shape`, made now if it is not cached.
    pub fn plan(&mut self, shape: &PlanShape) -> Result<&mut Plan<'s>> {
        Ok(match self.plans.entry(shape.clone()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(Plan::new(shape.clone(), self.stream)?)
            }
        })
    }

    /// The number of plans cached.
    pub fn len(&self) -> usize {
        self.plans.len()
    }

    /// True when no plan is cached.
    pub fn is_empty(&self) -> bool {
        self.plans.is_empty()
    }

    /// Drops every plan.
    pub fn clear(&mut self) {
        self.plans.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_follow_the_kind_and_the_layout() {
        let c2c = PlanShape::new(&[4, 8], FftKind::C2C, Precision::Single, 3);
        let (i, o) = c2c.side_dims();
        assert_eq!(
            (c2c.extent(&i, None).unwrap(), c2c.extent(&o, None).unwrap()),
            (96, 96)
        );
        let r2c = PlanShape::new(&[4, 8], FftKind::R2C, Precision::Double, 2);
        let (i, o) = r2c.side_dims();
        assert_eq!(
            (r2c.extent(&i, None).unwrap(), r2c.extent(&o, None).unwrap()),
            (64, 40)
        );
        // Padded rows of 10 for a 4 × 8 real input, stride 1, batches 40 apart.
        let padded = Embedding {
            embed: vec![4, 10],
            stride: 1,
            dist: 40,
        };
        assert_eq!(r2c.extent(&i, Some(&padded)).unwrap(), 40 + 3 * 10 + 7 + 1);
        let narrow = Embedding {
            embed: vec![4, 6],
            stride: 1,
            dist: 40,
        };
        assert!(r2c.extent(&i, Some(&narrow)).is_err());
        assert!(
            PlanShape::new(&[], FftKind::C2C, Precision::Single, 1)
                .check()
                .is_err()
        );
        assert!(
            PlanShape::new(&[2, 2, 2, 2], FftKind::C2C, Precision::Single, 1)
                .check()
                .is_err()
        );
    }
}
