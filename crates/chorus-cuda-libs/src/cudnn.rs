//! cuDNN 9: convolutions (forward, backward-data, backward-filter, with algorithm search and a
//! workspace), pooling, activations, softmax and batch normalisation (inference, training and
//! their backward passes), in f32, f64, f16 and bf16.
//!
//! # Which cuDNN API, and why
//!
//! cuDNN 9 has two APIs: the graph ("backend") API, which NVIDIA recommends for new fused
//! work, and the legacy calls (`cudnnConvolutionForward`, `cudnnPoolingForward`, …), which
//! cuDNN 9 keeps in its `cudnn_cnn` and `cudnn_ops` sub-libraries (some marked deprecated, all
//! still shipped and supported through 9.x; on the H200 machine's 9.14 they run the same
//! engines as the graph API does for single operations). This module uses the **legacy
//! calls**: each operation here is one call with fixed semantics that users know from PyTorch
//! and from the seed, the descriptors are small and checkable before the call, and a
//! convolution through them is the same library call a C program makes (the benchmark compares
//! exactly that). The graph API's advantage is fusion (convolution + bias + activation in one
//! kernel) and operations the legacy API lacks; GELU is one of those: the legacy activation
//! modes (`cudnnActivationMode_t` in cuDNN 9) are sigmoid, ReLU, tanh, clipped ReLU, ELU,
//! identity and swish, so **GELU is not offered here**. It exists only as the graph API's
//! pointwise mode `CUDNN_POINTWISE_GELU_FWD` (and `…_APPROX_TANH_FWD`), which cudarc's
//! bindings do declare. Reaching it takes a second module: backend tensor descriptors for `x`
//! and `y` (with unique ids and alignment), a pointwise descriptor, a pointwise operation node,
//! an operation graph, an engine heuristic query, an execution plan (cached per shape, as the
//! workspace sizes here are) and a variant pack per call. And a graph of one pointwise node is
//! not something every cuDNN 9 engine takes: NVIDIA's own frontend reports "no valid engine
//! configs" for a lone NCHW sigmoid on cuDNN 9.11 (cudnn-frontend issue 171) and XLA forces a
//! memory-bound fusion engine for such graphs, so whether the H200's cuDNN 9.14 runs it, and for
//! which layouts, must be measured before it is built. Until then GELU in Chorus is cuBLASLt's
//! epilogue (`cublaslt::Epilogue::Gelu`, fused into a matmul) or a kernel-language kernel.
//!
//! # Tensors and layouts
//!
//! Tensors are 4-D (`N, C, H, W`): [`TensorDesc`] over a memory block of `T`, packed
//! [`Layout::Nchw`] or [`Layout::Nhwc`] or with any strides; filters are [`FilterDesc`]
//! (`K, C, R, S`, stored `KCRS` for NCHW or `KRSC` for NHWC). Every call checks that the
//! descriptors agree with each other (channels, batch, the output size of a convolution or a
//! pooling window) and that each device slice holds the elements its descriptor spans, before
//! cuDNN is called: a mismatch is [`Error::InvalidArgument`], never a read out of bounds.
//!
//! Scaling factors (`alpha`, `beta`: `y ← alpha·op(x) + beta·y`) are `f64` for `f64` data and
//! `f32` otherwise ([`DnnType::Scale`]); batch-normalisation parameters are of that type too.
//!
//! [`MathType::Default`] puts f16 and bf16 convolutions on the tensor cores (cuDNN's
//! `TENSOR_OP_MATH`, as PyTorch sets it; the legacy calls' own default would not) and lets f32
//! convolutions use TF32 on sm_80 and newer (as PyTorch's default does); [`MathType::Fma`]
//! keeps full f32.
//!
//! The raw bindings are cudarc's `cudnn::sys` (generated for cuDNN 9.2.1; the legacy calls and
//! structures used here have kept their ABI through 9.x). [`Dnn::new`] checks that the loaded
//! library is cuDNN 9.

#![allow(clippy::too_many_arguments)] // cuDNN's calling convention: descriptors, then operands

use crate::bound::Bound;
use crate::error::{Error, Result};
use crate::library::Library;
use chorus_driver::{AsDeviceSlice, AsDeviceSliceMut, DeviceMemory, Stream};
use cudarc::cudnn::sys::{self, cudnnStatus_t};
use half::{bf16, f16};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, c_int, c_void};
use std::marker::PhantomData;
use std::sync::OnceLock;

/// The cuDNN library, probed on first use.
pub static LIBRARY: Library = Library::new("cuDNN", "cudnn", &[], SYMBOLS, || {
    // SAFETY: only asks the system loader whether cudarc's names resolve.
    unsafe { sys::is_culib_present() }
});

/// True when cuDNN 9 can be used (the seed's `*cudnn-not-found*`, negated).
pub fn is_available() -> bool {
    ensure().is_ok()
}

/// Every entry point this module calls.
const SYMBOLS: &[&str] = &[
    "cudnnGetVersion",
    "cudnnCreate",
    "cudnnDestroy",
    "cudnnSetStream",
    "cudnnGetErrorString",
    "cudnnGetLastErrorString",
    "cudnnCreateTensorDescriptor",
    "cudnnSetTensor4dDescriptorEx",
    "cudnnDestroyTensorDescriptor",
    "cudnnCreateFilterDescriptor",
    "cudnnSetFilter4dDescriptor",
    "cudnnDestroyFilterDescriptor",
    "cudnnCreateConvolutionDescriptor",
    "cudnnSetConvolution2dDescriptor",
    "cudnnSetConvolutionMathType",
    "cudnnSetConvolutionGroupCount",
    "cudnnGetConvolution2dForwardOutputDim",
    "cudnnDestroyConvolutionDescriptor",
    "cudnnFindConvolutionForwardAlgorithm",
    "cudnnGetConvolutionForwardAlgorithm_v7",
    "cudnnGetConvolutionForwardWorkspaceSize",
    "cudnnConvolutionForward",
    "cudnnFindConvolutionBackwardDataAlgorithm",
    "cudnnGetConvolutionBackwardDataAlgorithm_v7",
    "cudnnGetConvolutionBackwardDataWorkspaceSize",
    "cudnnConvolutionBackwardData",
    "cudnnFindConvolutionBackwardFilterAlgorithm",
    "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
    "cudnnGetConvolutionBackwardFilterWorkspaceSize",
    "cudnnConvolutionBackwardFilter",
    "cudnnCreatePoolingDescriptor",
    "cudnnSetPooling2dDescriptor",
    "cudnnDestroyPoolingDescriptor",
    "cudnnPoolingForward",
    "cudnnCreateActivationDescriptor",
    "cudnnSetActivationDescriptor",
    "cudnnDestroyActivationDescriptor",
    "cudnnActivationForward",
    "cudnnSoftmaxForward",
    "cudnnBatchNormalizationForwardInference",
    "cudnnBatchNormalizationForwardTraining",
    "cudnnPoolingBackward",
    "cudnnActivationBackward",
    "cudnnSoftmaxBackward",
    "cudnnBatchNormalizationBackward",
];

/// The cuDNN major version these bindings are for.
const MAJOR: u32 = 9;

/// `Ok` when cuDNN is loaded with every entry point and is version 9; else
/// [`Error::LibraryNotFound`] saying what was found.
pub fn ensure() -> Result<()> {
    LIBRARY.ensure()?;
    static VERSION_OK: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    let checked = VERSION_OK.get_or_init(|| {
        // SAFETY: the library is loaded with this symbol (probed above).
        let v = unsafe { sys::cudnnGetVersion() };
        let major = (v / 10000) as u32;
        if major == MAJOR {
            Ok(())
        } else {
            Err(format!(
                "found cuDNN version {v} (major {major}); these bindings are for cuDNN {MAJOR}"
            ))
        }
    });
    checked.clone().map_err(|searched| Error::LibraryNotFound {
        library: LIBRARY.display_name,
        searched,
    })
}

/// The loaded cuDNN's version as (major, minor, patch), e.g. (9, 14, 0).
pub fn version() -> Result<(u32, u32, u32)> {
    LIBRARY.ensure()?;
    // SAFETY: the library is loaded with this symbol (probed).
    let v = unsafe { sys::cudnnGetVersion() } as u32;
    Ok((v / 10000, (v % 10000) / 100, v % 100))
}

/// A cuDNN status as an error naming `call`, with cuDNN's name for it and its last error
/// message (which says which argument it rejected).
pub fn check(call: &'static str, status: cudnnStatus_t) -> Result<()> {
    if status == cudnnStatus_t::CUDNN_STATUS_SUCCESS {
        return Ok(());
    }
    let mut message = String::new();
    if LIBRARY.is_available() {
        let mut buf = [0 as std::ffi::c_char; 512];
        // SAFETY: the library is loaded with both symbols; the buffer's size is passed, and
        // cuDNN returns a static NUL-terminated string (or null) for the status.
        unsafe {
            sys::cudnnGetLastErrorString(buf.as_mut_ptr(), buf.len());
            let last = CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned();
            let p = sys::cudnnGetErrorString(status);
            let text = if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            };
            message = match (text.is_empty(), last.trim().is_empty()) {
                (false, false) => format!("{text}: {}", last.trim()),
                (false, true) => text,
                (true, false) => last.trim().to_owned(),
                (true, true) => String::new(),
            };
        }
    }
    Err(Error::Status {
        library: "cuDNN",
        call,
        code: status as i64,
        name: format!("{status:?}"),
        message: if message.is_empty() {
            "unknown status".into()
        } else {
            message
        },
    })
}

/// Calls a cuDNN entry point and checks its status.
macro_rules! dnn {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        // SAFETY: the library is loaded (every handle and descriptor ensured it); each call
        // site checked the extents of its device operands against the descriptors passed.
        check(stringify!($f), unsafe { sys::$f($($arg),*) })
    };
}

mod sealed {
    pub trait Sealed {}
}

/// The element types of cuDNN tensors here: `f32`, `f64`, `f16`, `bf16` (the `half` crate's).
pub trait DnnType: bytemuck::Pod + sealed::Sealed {
    /// The type of the scaling factors (`alpha`, `beta`) and of batch-normalisation
    /// parameters: `f64` for `f64`, `f32` for the rest (cuDNN's rule).
    type Scale: DnnType + Copy;
    /// cuDNN's data type.
    #[doc(hidden)]
    const DATA: sys::cudnnDataType_t;
    /// The compute type of a convolution on this type (`FLOAT`, or `DOUBLE` for f64).
    #[doc(hidden)]
    const COMPUTE: sys::cudnnDataType_t;
    /// `x` as a scaling factor.
    fn scale(x: f64) -> Self::Scale;
    /// The type's name, for messages.
    const NAME: &'static str;
    /// True for the 16-bit types (whose convolutions want tensor-core math).
    #[doc(hidden)]
    const HALF: bool;
}

impl sealed::Sealed for f32 {}
impl sealed::Sealed for f64 {}
impl sealed::Sealed for f16 {}
impl sealed::Sealed for bf16 {}

impl DnnType for f32 {
    type Scale = f32;
    const DATA: sys::cudnnDataType_t = sys::cudnnDataType_t::CUDNN_DATA_FLOAT;
    const COMPUTE: sys::cudnnDataType_t = sys::cudnnDataType_t::CUDNN_DATA_FLOAT;
    fn scale(x: f64) -> f32 {
        x as f32
    }
    const NAME: &'static str = "f32";
    const HALF: bool = false;
}
impl DnnType for f64 {
    type Scale = f64;
    const DATA: sys::cudnnDataType_t = sys::cudnnDataType_t::CUDNN_DATA_DOUBLE;
    const COMPUTE: sys::cudnnDataType_t = sys::cudnnDataType_t::CUDNN_DATA_DOUBLE;
    fn scale(x: f64) -> f64 {
        x
    }
    const NAME: &'static str = "f64";
    const HALF: bool = false;
}
impl DnnType for f16 {
    type Scale = f32;
    const DATA: sys::cudnnDataType_t = sys::cudnnDataType_t::CUDNN_DATA_HALF;
    const COMPUTE: sys::cudnnDataType_t = sys::cudnnDataType_t::CUDNN_DATA_FLOAT;
    fn scale(x: f64) -> f32 {
        x as f32
    }
    const NAME: &'static str = "f16";
    const HALF: bool = true;
}
impl DnnType for bf16 {
    type Scale = f32;
    const DATA: sys::cudnnDataType_t = sys::cudnnDataType_t::CUDNN_DATA_BFLOAT16;
    const COMPUTE: sys::cudnnDataType_t = sys::cudnnDataType_t::CUDNN_DATA_FLOAT;
    fn scale(x: f64) -> f32 {
        x as f32
    }
    const NAME: &'static str = "bf16";
    const HALF: bool = true;
}

/// How a packed 4-D tensor (or filter) is laid out in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// `N, C, H, W` from slowest to fastest (filters `K, C, R, S`): PyTorch's default.
    Nchw,
    /// `N, H, W, C` (filters `K, R, S, C`): channels last, what tensor cores prefer.
    Nhwc,
}

impl Layout {
    /// The element strides `[n, c, h, w]` of a packed tensor of `dims` `[n, c, h, w]`.
    pub fn strides(self, [_, c, h, w]: [usize; 4]) -> [usize; 4] {
        match self {
            Layout::Nchw => [c * h * w, h * w, w, 1],
            Layout::Nhwc => [h * w * c, 1, w * c, c],
        }
    }

    fn format(self) -> sys::cudnnTensorFormat_t {
        match self {
            Layout::Nchw => sys::cudnnTensorFormat_t::CUDNN_TENSOR_NCHW,
            Layout::Nhwc => sys::cudnnTensorFormat_t::CUDNN_TENSOR_NHWC,
        }
    }
}

/// The number of elements a tensor of `dims` with `strides` spans: `1 + Σ (dᵢ − 1)·sᵢ`, or 0
/// when a dimension is 0; `None` on overflow.
pub fn span(dims: [usize; 4], strides: [usize; 4]) -> Option<usize> {
    if dims.contains(&0) {
        return Some(0);
    }
    dims.iter().zip(&strides).try_fold(1usize, |acc, (&d, &s)| {
        (d - 1).checked_mul(s).and_then(|x| acc.checked_add(x))
    })
}

fn to_int(call: &'static str, what: &str, value: usize) -> Result<c_int> {
    crate::types::to_int(call, what, value)
}

/// A 4-D tensor descriptor (`cudnnTensorDescriptor_t`) of element type `T`: the dimensions
/// `[n, c, h, w]` and element strides of a tensor in a memory block; destroyed on drop.
#[derive(Debug)]
pub struct TensorDesc<T> {
    raw: sys::cudnnTensorDescriptor_t,
    dims: [usize; 4],
    strides: [usize; 4],
    span: usize,
    _t: PhantomData<T>,
}

// SAFETY: a descriptor is host memory cuDNN reads and writes only in calls given it; it holds
// no thread affinity, and `&TensorDesc` gives no mutation.
unsafe impl<T> Send for TensorDesc<T> {}
// SAFETY: as above: shared references only pass it to cuDNN calls that read it.
unsafe impl<T> Sync for TensorDesc<T> {}

impl<T: DnnType> TensorDesc<T> {
    /// A packed `n × c × h × w` tensor in `layout`. Every dimension must be at least 1.
    pub fn new(layout: Layout, n: usize, c: usize, h: usize, w: usize) -> Result<TensorDesc<T>> {
        let dims = [n, c, h, w];
        TensorDesc::with_strides(dims, layout.strides(dims))
    }

    /// A tensor of `dims` `[n, c, h, w]` with element `strides` `[n, c, h, w]` (each at least
    /// 1). cuDNN rejects strides that make elements overlap.
    pub fn with_strides(dims: [usize; 4], strides: [usize; 4]) -> Result<TensorDesc<T>> {
        let call = "TensorDesc";
        if dims.contains(&0) || strides.contains(&0) {
            return Err(Error::invalid(
                call,
                format!("dimensions {dims:?} and strides {strides:?} must all be at least 1"),
            ));
        }
        let span = span(dims, strides)
            .ok_or_else(|| Error::invalid(call, "the tensor overflows the address space"))?;
        let mut d = [0; 4];
        let mut s = [0; 4];
        for i in 0..4 {
            d[i] = to_int(call, "dimension", dims[i])?;
            s[i] = to_int(call, "stride", strides[i])?;
        }
        to_int(call, "span", span)?;
        ensure()?;
        let mut raw = std::ptr::null_mut();
        dnn!(cudnnCreateTensorDescriptor(&mut raw))?;
        let desc = TensorDesc {
            raw,
            dims,
            strides,
            span,
            _t: PhantomData,
        };
        dnn!(cudnnSetTensor4dDescriptorEx(
            raw,
            T::DATA,
            d[0],
            d[1],
            d[2],
            d[3],
            s[0],
            s[1],
            s[2],
            s[3]
        ))?;
        Ok(desc)
    }

    /// The dimensions `[n, c, h, w]`.
    pub fn dims(&self) -> [usize; 4] {
        self.dims
    }

    /// The element strides `[n, c, h, w]`.
    pub fn strides(&self) -> [usize; 4] {
        self.strides
    }

    /// How many elements a memory block for this tensor needs (the last element's offset + 1).
    pub fn len(&self) -> usize {
        self.span
    }

    /// Always false: every dimension is at least 1.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The element offset of `[n, c, h, w]` in the memory block.
    pub fn offset(&self, [n, c, h, w]: [usize; 4]) -> usize {
        let s = self.strides;
        n * s[0] + c * s[1] + h * s[2] + w * s[3]
    }

    /// The raw descriptor, for calls through cudarc's `cudnn::sys`. Read it only: the checks
    /// and the handles' workspace-size cache go by what Chorus set (change it through this type).
    pub fn raw(&self) -> sys::cudnnTensorDescriptor_t {
        self.raw
    }

    /// The descriptor of the batch-normalisation parameters (scale, bias, means, variances)
    /// for this tensor in `mode`: `1 × C × 1 × 1` (spatial) or `1 × C × H × W` (per
    /// activation), packed NCHW, of the scale type (f32 for f16/bf16/f32 data).
    pub fn batch_norm_params(&self, mode: BatchNormMode) -> Result<TensorDesc<T::Scale>> {
        let [_, c, h, w] = self.dims;
        match mode {
            BatchNormMode::PerActivation => TensorDesc::new(Layout::Nchw, 1, c, h, w),
            BatchNormMode::Spatial | BatchNormMode::SpatialPersistent => {
                TensorDesc::new(Layout::Nchw, 1, c, 1, 1)
            }
        }
    }

    fn check_block(&self, call: &'static str, name: &str, len: usize) -> Result<()> {
        if len < self.span {
            return Err(Error::invalid(
                call,
                format!(
                    "{name} is a {:?} tensor spanning {} elements, its memory has {len}",
                    self.dims, self.span
                ),
            ));
        }
        Ok(())
    }
}

impl<T> Drop for TensorDesc<T> {
    fn drop(&mut self) {
        // SAFETY: made by cudnnCreateTensorDescriptor (the library is loaded) and destroyed once.
        unsafe { sys::cudnnDestroyTensorDescriptor(self.raw) };
    }
}

/// A filter descriptor (`cudnnFilterDescriptor_t`) of element type `T`: `k` output channels,
/// `c` input channels (per group), an `r × s` window; packed in `layout` (`KCRS` or `KRSC`).
#[derive(Debug)]
pub struct FilterDesc<T> {
    raw: sys::cudnnFilterDescriptor_t,
    dims: [usize; 4],
    layout: Layout,
    _t: PhantomData<T>,
}

// SAFETY: as for TensorDesc.
unsafe impl<T> Send for FilterDesc<T> {}
// SAFETY: as for TensorDesc.
unsafe impl<T> Sync for FilterDesc<T> {}

impl<T: DnnType> FilterDesc<T> {
    /// A packed `k × c × r × s` filter in `layout` (every dimension at least 1).
    pub fn new(layout: Layout, k: usize, c: usize, r: usize, s: usize) -> Result<FilterDesc<T>> {
        let call = "FilterDesc";
        let dims = [k, c, r, s];
        if dims.contains(&0) {
            return Err(Error::invalid(
                call,
                format!("dimensions {dims:?} must all be at least 1"),
            ));
        }
        let len = k
            .checked_mul(c)
            .and_then(|x| x.checked_mul(r))
            .and_then(|x| x.checked_mul(s))
            .ok_or_else(|| Error::invalid(call, "the filter overflows the address space"))?;
        to_int(call, "length", len)?;
        let (ki, ci, ri, si) = (
            to_int(call, "k", k)?,
            to_int(call, "c", c)?,
            to_int(call, "r", r)?,
            to_int(call, "s", s)?,
        );
        ensure()?;
        let mut raw = std::ptr::null_mut();
        dnn!(cudnnCreateFilterDescriptor(&mut raw))?;
        let desc = FilterDesc {
            raw,
            dims,
            layout,
            _t: PhantomData,
        };
        dnn!(cudnnSetFilter4dDescriptor(
            raw,
            T::DATA,
            layout.format(),
            ki,
            ci,
            ri,
            si
        ))?;
        Ok(desc)
    }

    /// The dimensions `[k, c, r, s]`.
    pub fn dims(&self) -> [usize; 4] {
        self.dims
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The number of elements (`k·c·r·s`).
    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }

    /// Always false: every dimension is at least 1.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The element offset of `[k, c, r, s]` in the memory block.
    pub fn offset(&self, [k, c, r, s]: [usize; 4]) -> usize {
        let [_, cc, rr, ss] = self.dims;
        match self.layout {
            Layout::Nchw => ((k * cc + c) * rr + r) * ss + s,
            Layout::Nhwc => ((k * rr + r) * ss + s) * cc + c,
        }
    }

    /// The raw descriptor, for calls through cudarc's `cudnn::sys`. Read it only: the checks
    /// and the handles' workspace-size cache go by what Chorus set (change it through this type).
    pub fn raw(&self) -> sys::cudnnFilterDescriptor_t {
        self.raw
    }

    fn check_block(&self, call: &'static str, name: &str, len: usize) -> Result<()> {
        if len < self.len() {
            return Err(Error::invalid(
                call,
                format!(
                    "{name} is a {:?} filter of {} elements, its memory has {len}",
                    self.dims,
                    self.len()
                ),
            ));
        }
        Ok(())
    }
}

impl<T> Drop for FilterDesc<T> {
    fn drop(&mut self) {
        // SAFETY: made by cudnnCreateFilterDescriptor and destroyed once.
        unsafe { sys::cudnnDestroyFilterDescriptor(self.raw) };
    }
}

/// Which arithmetic a convolution may use (`cudnnMathType_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathType {
    /// What frameworks use: for f16 and bf16 data, tensor cores (cuDNN's `TENSOR_OP_MATH`:
    /// the legacy calls' own `DEFAULT_MATH` leaves f16 and bf16 convolutions on the CUDA
    /// cores, about 10× slower on an H200); for f32 and f64, cuDNN's `DEFAULT_MATH` (which
    /// permits TF32 for f32 on sm_80 and newer).
    Default,
    /// Tensor cores.
    TensorOp,
    /// Tensor cores, converting f32 data down to f16/bf16 where that helps.
    TensorOpAllowConversion,
    /// FMA only: no tensor cores, full f32 (no TF32).
    Fma,
}

impl MathType {
    /// cuDNN's math type for this choice on data of type `T`.
    fn raw_for<T: DnnType>(self) -> sys::cudnnMathType_t {
        match self {
            MathType::Default if T::HALF => sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH,
            MathType::Default => sys::cudnnMathType_t::CUDNN_DEFAULT_MATH,
            MathType::TensorOp => sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH,
            MathType::TensorOpAllowConversion => {
                sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
            }
            MathType::Fma => sys::cudnnMathType_t::CUDNN_FMA_MATH,
        }
    }

    fn from_raw(v: u32) -> Option<MathType> {
        Some(match v {
            0 => MathType::Default,
            1 => MathType::TensorOp,
            2 => MathType::TensorOpAllowConversion,
            3 => MathType::Fma,
            _ => return None,
        })
    }
}

/// The parameters of a 2-D convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Conv2d {
    /// Zero padding `[h, w]` on each side.
    pub pad: [usize; 2],
    /// Strides `[h, w]` (at least 1).
    pub stride: [usize; 2],
    /// Dilations `[h, w]` (at least 1).
    pub dilation: [usize; 2],
    /// Channel groups (1 for a dense convolution; the input has `groups·C_filter` channels).
    pub groups: usize,
    /// True for cross-correlation (PyTorch's `conv2d`, the usual deep-learning convolution);
    /// false flips the filter (the mathematical convolution).
    pub cross_correlation: bool,
    /// The arithmetic allowed.
    pub math: MathType,
}

impl Default for Conv2d {
    /// No padding, stride 1, no dilation, one group, cross-correlation, cuDNN's default math.
    fn default() -> Conv2d {
        Conv2d {
            pad: [0, 0],
            stride: [1, 1],
            dilation: [1, 1],
            groups: 1,
            cross_correlation: true,
            math: MathType::Default,
        }
    }
}

impl Conv2d {
    /// Stride 1, no dilation, `pad` on each side of both dimensions.
    pub fn padded(pad: usize) -> Conv2d {
        Conv2d {
            pad: [pad, pad],
            ..Conv2d::default()
        }
    }

    /// The output dimensions `[n, k, p, q]` of this convolution on input `x` `[n, c, h, w]`
    /// with filter `w` `[k, c/groups, r, s]`, or an error saying what does not fit.
    pub fn output_dims(&self, x: [usize; 4], w: [usize; 4]) -> Result<[usize; 4]> {
        let call = "convolution";
        let [n, c, h, wd] = x;
        let [k, cf, r, s] = w;
        if self.stride.contains(&0) || self.dilation.contains(&0) || self.groups == 0 {
            return Err(Error::invalid(
                call,
                format!(
                    "stride {:?}, dilation {:?} and groups {} must be at least 1",
                    self.stride, self.dilation, self.groups
                ),
            ));
        }
        if cf * self.groups != c {
            return Err(Error::invalid(
                call,
                format!(
                    "the input has {c} channels, the filter {cf} per group × {} groups",
                    self.groups
                ),
            ));
        }
        if k % self.groups != 0 {
            return Err(Error::invalid(
                call,
                format!(
                    "{k} output channels are not a multiple of {} groups",
                    self.groups
                ),
            ));
        }
        let out = |size: usize, pad: usize, window: usize, dil: usize, stride: usize| {
            let padded = size.saturating_add(pad.saturating_mul(2));
            let extent = dil.saturating_mul(window - 1).saturating_add(1);
            (padded >= extent).then(|| (padded - extent) / stride + 1)
        };
        let p = out(h, self.pad[0], r, self.dilation[0], self.stride[0]);
        let q = out(wd, self.pad[1], s, self.dilation[1], self.stride[1]);
        match (p, q) {
            (Some(p), Some(q)) => Ok([n, k, p, q]),
            _ => Err(Error::invalid(
                call,
                format!(
                    "the {r} × {s} filter (dilation {:?}) is larger than the padded {h} × {wd} input",
                    self.dilation
                ),
            )),
        }
    }
}

/// A convolution descriptor (`cudnnConvolutionDescriptor_t`) for element type `T` (compute
/// type f32, or f64 for f64 data); destroyed on drop.
#[derive(Debug)]
pub struct ConvDesc<T> {
    raw: sys::cudnnConvolutionDescriptor_t,
    params: Conv2d,
    _t: PhantomData<T>,
}

// SAFETY: as for TensorDesc.
unsafe impl<T> Send for ConvDesc<T> {}
// SAFETY: as for TensorDesc (only `set_math`, through `&mut`, changes it).
unsafe impl<T> Sync for ConvDesc<T> {}

impl<T: DnnType> ConvDesc<T> {
    /// A descriptor for `params`.
    pub fn new(params: Conv2d) -> Result<ConvDesc<T>> {
        let call = "ConvDesc";
        if params.stride.contains(&0) || params.dilation.contains(&0) || params.groups == 0 {
            return Err(Error::invalid(
                call,
                format!(
                    "stride {:?}, dilation {:?} and groups {} must be at least 1",
                    params.stride, params.dilation, params.groups
                ),
            ));
        }
        let int = |what: &str, v: usize| to_int(call, what, v);
        let (ph, pw) = (int("pad", params.pad[0])?, int("pad", params.pad[1])?);
        let (sh, sw) = (
            int("stride", params.stride[0])?,
            int("stride", params.stride[1])?,
        );
        let (dh, dw) = (
            int("dilation", params.dilation[0])?,
            int("dilation", params.dilation[1])?,
        );
        let groups = int("groups", params.groups)?;
        ensure()?;
        let mut raw = std::ptr::null_mut();
        dnn!(cudnnCreateConvolutionDescriptor(&mut raw))?;
        let desc = ConvDesc {
            raw,
            params,
            _t: PhantomData,
        };
        let mode = if params.cross_correlation {
            sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION
        } else {
            sys::cudnnConvolutionMode_t::CUDNN_CONVOLUTION
        };
        dnn!(cudnnSetConvolution2dDescriptor(
            raw,
            ph,
            pw,
            sh,
            sw,
            dh,
            dw,
            mode,
            T::COMPUTE
        ))?;
        dnn!(cudnnSetConvolutionGroupCount(raw, groups))?;
        dnn!(cudnnSetConvolutionMathType(raw, params.math.raw_for::<T>()))?;
        Ok(desc)
    }

    /// The parameters.
    pub fn params(&self) -> Conv2d {
        self.params
    }

    /// Changes the math type (to the one an [`AlgoPerf`] was measured with, say).
    pub fn set_math(&mut self, math: MathType) -> Result<()> {
        dnn!(cudnnSetConvolutionMathType(self.raw, math.raw_for::<T>()))?;
        self.params.math = math;
        Ok(())
    }

    /// The output descriptor's dimensions for input `x` and filter `w`, as cuDNN computes them
    /// (`cudnnGetConvolution2dForwardOutputDim`), after the same checks as the calls make.
    pub fn output_dims(&self, x: &TensorDesc<T>, w: &FilterDesc<T>) -> Result<[usize; 4]> {
        let ours = self.params.output_dims(x.dims(), w.dims())?;
        let (mut n, mut c, mut h, mut wd) = (0, 0, 0, 0);
        dnn!(cudnnGetConvolution2dForwardOutputDim(
            self.raw, x.raw, w.raw, &mut n, &mut c, &mut h, &mut wd
        ))?;
        let theirs = [n, c, h, wd].map(|v| v.max(0) as usize);
        if theirs != ours {
            return Err(Error::invalid(
                "convolution",
                format!("cuDNN computes output dimensions {theirs:?}, Chorus {ours:?}"),
            ));
        }
        Ok(ours)
    }

    /// The raw descriptor, for calls through cudarc's `cudnn::sys`. Read it only: the checks
    /// and the handles' workspace-size cache go by what Chorus set (change it through this type).
    pub fn raw(&self) -> sys::cudnnConvolutionDescriptor_t {
        self.raw
    }
}

impl<T> Drop for ConvDesc<T> {
    fn drop(&mut self) {
        // SAFETY: made by cudnnCreateConvolutionDescriptor and destroyed once.
        unsafe { sys::cudnnDestroyConvolutionDescriptor(self.raw) };
    }
}

/// The forward-convolution algorithms (`cudnnConvolutionFwdAlgo_t`).
#[allow(missing_docs)] // cuDNN's names
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FwdAlgo {
    ImplicitGemm,
    ImplicitPrecompGemm,
    Gemm,
    Direct,
    Fft,
    FftTiling,
    Winograd,
    WinogradNonfused,
}

/// The backward-data algorithms (`cudnnConvolutionBwdDataAlgo_t`).
#[allow(missing_docs)] // cuDNN's names
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BwdDataAlgo {
    Algo0,
    Algo1,
    Fft,
    FftTiling,
    Winograd,
    WinogradNonfused,
}

/// The backward-filter algorithms (`cudnnConvolutionBwdFilterAlgo_t`).
#[allow(missing_docs)] // cuDNN's names
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BwdFilterAlgo {
    Algo0,
    Algo1,
    Fft,
    Algo3,
    Winograd,
    WinogradNonfused,
    FftTiling,
}

/// The three passes of a convolution, which share one geometry (input `x`, filter `w`,
/// output `y`) and differ in what they compute from what.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvPass {
    /// `y = conv(x, w)`.
    Forward,
    /// `dx` from `w` and `dy`.
    BackwardData,
    /// `dw` from `x` and `dy`.
    BackwardFilter,
}

/// An algorithm enum of one of the three convolution passes.
pub trait ConvAlgo: Copy + std::fmt::Debug + sealed::Sealed {
    /// The pass whose algorithms these are.
    const PASS: ConvPass;
    #[doc(hidden)]
    fn from_raw(v: u32) -> Option<Self>;
    #[doc(hidden)]
    fn to_raw(self) -> u32;
}

macro_rules! conv_algo {
    ($t:ident, $pass:ident, $($v:ident = $n:expr),*) => {
        impl sealed::Sealed for $t {}
        impl ConvAlgo for $t {
            const PASS: ConvPass = ConvPass::$pass;
            fn from_raw(v: u32) -> Option<$t> {
                match v {
                    $($n => Some($t::$v),)*
                    _ => None,
                }
            }
            fn to_raw(self) -> u32 {
                match self {
                    $($t::$v => $n,)*
                }
            }
        }
    };
}

conv_algo!(
    FwdAlgo,
    Forward,
    ImplicitGemm = 0,
    ImplicitPrecompGemm = 1,
    Gemm = 2,
    Direct = 3,
    Fft = 4,
    FftTiling = 5,
    Winograd = 6,
    WinogradNonfused = 7
);
conv_algo!(
    BwdDataAlgo,
    BackwardData,
    Algo0 = 0,
    Algo1 = 1,
    Fft = 2,
    FftTiling = 3,
    Winograd = 4,
    WinogradNonfused = 5
);
conv_algo!(
    BwdFilterAlgo,
    BackwardFilter,
    Algo0 = 0,
    Algo1 = 1,
    Fft = 2,
    Algo3 = 3,
    Winograd = 4,
    WinogradNonfused = 5,
    FftTiling = 6
);

/// The descriptors of one convolution, the same for its three passes: the input `x` (`dx` in
/// the backward-data pass), the filter `w` (`dw` in the backward-filter pass), the
/// convolution, and the output `y` (`dy` in the backward passes).
struct ConvGeometry<'d, T> {
    x: &'d TensorDesc<T>,
    w: &'d FilterDesc<T>,
    conv: &'d ConvDesc<T>,
    y: &'d TensorDesc<T>,
}

impl<T: DnnType> ConvGeometry<'_, T> {
    /// Checks the descriptors against each other: `y` has the output dimensions of `x` and
    /// `w` under `conv`.
    fn check(&self, call: &'static str) -> Result<()> {
        let want = self.conv.params.output_dims(self.x.dims(), self.w.dims())?;
        if self.y.dims() != want {
            return Err(Error::invalid(
                call,
                format!(
                    "the output is {:?}, the convolution of a {:?} input by a {:?} filter is {want:?}",
                    self.y.dims(),
                    self.x.dims(),
                    self.w.dims()
                ),
            ));
        }
        Ok(())
    }
}

/// The device memory of one operand of a convolution: its name for messages, address and
/// length in elements.
struct Operand {
    name: &'static str,
    ptr: u64,
    len: usize,
}

impl Operand {
    fn new(name: &'static str, ptr: u64, len: usize) -> Operand {
        Operand { name, ptr, len }
    }
}

/// Everything a convolution's workspace size depends on (for a handle, hence a device):
/// the pass and algorithm, the data type, each descriptor's contents as Chorus set them
/// (dimensions, strides, filter layout, convolution parameters with the math type). Keyed by
/// contents, not by descriptor addresses, so that a descriptor dropped and another made at
/// the same address, or `ConvDesc::set_math`, can never reuse a stale size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct WorkspaceKey {
    pass: ConvPass,
    algo: u32,
    data: u32,
    x: [[usize; 4]; 2],
    w: ([usize; 4], Layout),
    y: [[usize; 4]; 2],
    conv: Conv2d,
}

impl WorkspaceKey {
    fn new<T: DnnType, A: ConvAlgo>(g: &ConvGeometry<'_, T>, algo: A) -> WorkspaceKey {
        WorkspaceKey {
            pass: A::PASS,
            algo: algo.to_raw(),
            data: T::DATA as u32,
            x: [g.x.dims, g.x.strides],
            w: (g.w.dims, g.w.layout),
            y: [g.y.dims, g.y.strides],
            conv: g.conv.params,
        }
    }
}

/// How many workspace sizes a handle remembers before it forgets them all (a network has a
/// few dozen distinct convolutions; this only bounds a program that keeps making new shapes).
const WORKSPACE_CACHE_LIMIT: usize = 1024;

/// How to choose a convolution algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Search {
    /// cuDNN's heuristics (`cudnnGetConvolution*Algorithm_v7`): instant, nothing runs; the
    /// times in the results are not measured.
    Heuristic,
    /// Runs every algorithm and times it (`cudnnFindConvolution*Algorithm`, on scratch
    /// buffers cuDNN allocates itself; synchronous, takes milliseconds to seconds).
    Exhaustive,
}

/// One algorithm's entry in a search: fastest (or most recommended) first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlgoPerf<A> {
    /// The algorithm.
    pub algo: A,
    /// Its measured time in milliseconds ([`Search::Exhaustive`]), or a negative value when
    /// not measured.
    pub time_ms: f32,
    /// The workspace it needs, in bytes.
    pub workspace: usize,
    /// Whether it gives the same result every run.
    pub deterministic: bool,
    /// The math type it was chosen with ([`ConvDesc::set_math`] to run it that way).
    pub math: MathType,
}

/// The layout of cuDNN's three `cudnnConvolution*AlgoPerf_t`, with the enums as plain
/// integers: a status or algorithm value newer than the bindings stays a number, never an
/// invalid Rust enum.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawPerf {
    algo: u32,
    status: u32,
    time: f32,
    memory: usize,
    determinism: u32,
    math: u32,
    reserved: [c_int; 3],
}

fn perfs<A: ConvAlgo>(raw: &[RawPerf]) -> Vec<AlgoPerf<A>> {
    raw.iter()
        .filter(|p| p.status == 0)
        .filter_map(|p| {
            Some(AlgoPerf {
                algo: A::from_raw(p.algo)?,
                time_ms: p.time,
                workspace: p.memory,
                deterministic: p.determinism == 1,
                math: MathType::from_raw(p.math)?,
            })
        })
        .collect()
}

/// The pooling modes (`cudnnPoolingMode_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolMode {
    /// The maximum of each window.
    Max,
    /// The maximum, with a deterministic backward pass.
    MaxDeterministic,
    /// The mean of each window, padding counted as zeros.
    AverageIncludePadding,
    /// The mean of each window's elements inside the input (PyTorch's
    /// `count_include_pad=False`).
    AverageExcludePadding,
}

/// A 2-D pooling descriptor (`cudnnPoolingDescriptor_t`); destroyed on drop.
#[derive(Debug)]
pub struct PoolDesc {
    raw: sys::cudnnPoolingDescriptor_t,
    window: [usize; 2],
    pad: [usize; 2],
    stride: [usize; 2],
}

// SAFETY: as for TensorDesc.
unsafe impl Send for PoolDesc {}
// SAFETY: as for TensorDesc.
unsafe impl Sync for PoolDesc {}

impl PoolDesc {
    /// Pooling `window` `[h, w]` with `pad` on each side and `stride` (window and stride at
    /// least 1, padding smaller than the window). NaNs propagate through max pooling.
    pub fn new(
        mode: PoolMode,
        window: [usize; 2],
        pad: [usize; 2],
        stride: [usize; 2],
    ) -> Result<PoolDesc> {
        let call = "PoolDesc";
        if window.contains(&0) || stride.contains(&0) || pad[0] >= window[0] || pad[1] >= window[1]
        {
            return Err(Error::invalid(
                call,
                format!(
                    "window {window:?} and stride {stride:?} must be at least 1, padding {pad:?} smaller than the window"
                ),
            ));
        }
        let int = |what: &str, v: usize| to_int(call, what, v);
        let (wh, ww) = (int("window", window[0])?, int("window", window[1])?);
        let (ph, pw) = (int("pad", pad[0])?, int("pad", pad[1])?);
        let (sh, sw) = (int("stride", stride[0])?, int("stride", stride[1])?);
        ensure()?;
        let mut raw = std::ptr::null_mut();
        dnn!(cudnnCreatePoolingDescriptor(&mut raw))?;
        let desc = PoolDesc {
            raw,
            window,
            pad,
            stride,
        };
        let mode = match mode {
            PoolMode::Max => sys::cudnnPoolingMode_t::CUDNN_POOLING_MAX,
            PoolMode::MaxDeterministic => sys::cudnnPoolingMode_t::CUDNN_POOLING_MAX_DETERMINISTIC,
            PoolMode::AverageIncludePadding => {
                sys::cudnnPoolingMode_t::CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
            }
            PoolMode::AverageExcludePadding => {
                sys::cudnnPoolingMode_t::CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING
            }
        };
        dnn!(cudnnSetPooling2dDescriptor(
            raw,
            mode,
            sys::cudnnNanPropagation_t::CUDNN_PROPAGATE_NAN,
            wh,
            ww,
            ph,
            pw,
            sh,
            sw
        ))?;
        Ok(desc)
    }

    /// The output dimensions for input `[n, c, h, w]`: `1 + (h + 2·pad − window) / stride`
    /// (rounded down) each way.
    pub fn output_dims(&self, [n, c, h, w]: [usize; 4]) -> Result<[usize; 4]> {
        let out = |size: usize, i: usize| {
            let padded = size.saturating_add(self.pad[i].saturating_mul(2));
            (padded >= self.window[i]).then(|| (padded - self.window[i]) / self.stride[i] + 1)
        };
        match (out(h, 0), out(w, 1)) {
            (Some(p), Some(q)) => Ok([n, c, p, q]),
            _ => Err(Error::invalid(
                "pooling",
                format!(
                    "the {:?} window is larger than the padded {h} × {w} input",
                    self.window
                ),
            )),
        }
    }
}

impl Drop for PoolDesc {
    fn drop(&mut self) {
        // SAFETY: made by cudnnCreatePoolingDescriptor and destroyed once.
        unsafe { sys::cudnnDestroyPoolingDescriptor(self.raw) };
    }
}

/// The activation functions of the legacy API (`cudnnActivationMode_t`). GELU is not among
/// them (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    /// `max(x, 0)`.
    Relu,
    /// `min(max(x, 0), ceiling)`.
    ClippedRelu(f64),
    /// `1 / (1 + e^−x)`.
    Sigmoid,
    /// `tanh x`.
    Tanh,
    /// `x` for `x ≥ 0`, `alpha·(eˣ − 1)` below.
    Elu(f64),
}

/// An activation descriptor, destroyed on drop (on every path out of a call).
struct ActivationGuard(sys::cudnnActivationDescriptor_t);

impl ActivationGuard {
    fn new(call: &'static str, activation: Activation) -> Result<ActivationGuard> {
        let (mode, coef) = match activation {
            Activation::Relu => (sys::cudnnActivationMode_t::CUDNN_ACTIVATION_RELU, 0.0),
            Activation::ClippedRelu(c) => {
                (sys::cudnnActivationMode_t::CUDNN_ACTIVATION_CLIPPED_RELU, c)
            }
            Activation::Sigmoid => (sys::cudnnActivationMode_t::CUDNN_ACTIVATION_SIGMOID, 0.0),
            Activation::Tanh => (sys::cudnnActivationMode_t::CUDNN_ACTIVATION_TANH, 0.0),
            Activation::Elu(a) => (sys::cudnnActivationMode_t::CUDNN_ACTIVATION_ELU, a),
        };
        if !coef.is_finite() {
            return Err(Error::invalid(
                call,
                format!("the coefficient {coef} is not finite"),
            ));
        }
        let mut raw = std::ptr::null_mut();
        dnn!(cudnnCreateActivationDescriptor(&mut raw))?;
        let guard = ActivationGuard(raw);
        dnn!(cudnnSetActivationDescriptor(
            raw,
            mode,
            sys::cudnnNanPropagation_t::CUDNN_PROPAGATE_NAN,
            coef
        ))?;
        Ok(guard)
    }
}

impl Drop for ActivationGuard {
    fn drop(&mut self) {
        // SAFETY: made by cudnnCreateActivationDescriptor, destroyed once.
        unsafe { sys::cudnnDestroyActivationDescriptor(self.0) };
    }
}

/// The softmax algorithms (`cudnnSoftmaxAlgorithm_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SoftmaxAlgo {
    /// `eˣ / Σ eˣ` without subtracting the maximum (may overflow).
    Fast,
    /// Subtracting the maximum first (what frameworks use).
    Accurate,
    /// The logarithm of the accurate softmax (`log_softmax`).
    Log,
}

/// Over what softmax normalises (`cudnnSoftmaxMode_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SoftmaxMode {
    /// Over `C, H, W` for each `n`.
    Instance,
    /// Over `C` for each `n, h, w` (PyTorch's `softmax(dim=1)`).
    Channel,
}

fn softmax_algo(algo: SoftmaxAlgo) -> sys::cudnnSoftmaxAlgorithm_t {
    match algo {
        SoftmaxAlgo::Fast => sys::cudnnSoftmaxAlgorithm_t::CUDNN_SOFTMAX_FAST,
        SoftmaxAlgo::Accurate => sys::cudnnSoftmaxAlgorithm_t::CUDNN_SOFTMAX_ACCURATE,
        SoftmaxAlgo::Log => sys::cudnnSoftmaxAlgorithm_t::CUDNN_SOFTMAX_LOG,
    }
}

fn softmax_mode(mode: SoftmaxMode) -> sys::cudnnSoftmaxMode_t {
    match mode {
        SoftmaxMode::Instance => sys::cudnnSoftmaxMode_t::CUDNN_SOFTMAX_MODE_INSTANCE,
        SoftmaxMode::Channel => sys::cudnnSoftmaxMode_t::CUDNN_SOFTMAX_MODE_CHANNEL,
    }
}

/// Batch-normalisation modes (`cudnnBatchNormMode_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BatchNormMode {
    /// One mean and variance per `C, H, W` element, over `N` (after fully connected layers).
    PerActivation,
    /// One per channel, over `N, H, W` (after convolutions: PyTorch's `BatchNorm2d`).
    Spatial,
    /// As [`BatchNormMode::Spatial`], with cuDNN's faster persistent kernels (f16/bf16 NHWC;
    /// may overflow on large values).
    SpatialPersistent,
}

impl BatchNormMode {
    fn raw(self) -> sys::cudnnBatchNormMode_t {
        match self {
            BatchNormMode::PerActivation => {
                sys::cudnnBatchNormMode_t::CUDNN_BATCHNORM_PER_ACTIVATION
            }
            BatchNormMode::Spatial => sys::cudnnBatchNormMode_t::CUDNN_BATCHNORM_SPATIAL,
            BatchNormMode::SpatialPersistent => {
                sys::cudnnBatchNormMode_t::CUDNN_BATCHNORM_SPATIAL_PERSISTENT
            }
        }
    }
}

/// The smallest epsilon cuDNN's batch normalisation accepts (`CUDNN_BN_MIN_EPSILON`).
pub const BN_MIN_EPSILON: f64 = 1e-5;

/// Pointers to the running statistics that [`Dnn::batch_norm_training`] updates and the batch
/// statistics it saves, each of the parameter descriptor's length.
#[derive(Debug)]
pub struct BatchNormStats<'a, P> {
    /// Running mean: `(1 − momentum)·running + momentum·batch mean`.
    pub running_mean: chorus_driver::DeviceSliceMut<'a, P>,
    /// Running variance, updated the same way with the unbiased batch variance.
    pub running_var: chorus_driver::DeviceSliceMut<'a, P>,
    /// The batch mean, saved for the backward pass (optional).
    pub save_mean: Option<chorus_driver::DeviceSliceMut<'a, P>>,
    /// `1 / √(biased batch variance + epsilon)`, saved for the backward pass (optional).
    pub save_inv_var: Option<chorus_driver::DeviceSliceMut<'a, P>>,
}

/// The batch mean and inverse deviation [`Dnn::batch_norm_training`] saved, handed to
/// [`Dnn::batch_norm_backward`].
pub type SavedStats<'a, P> = (
    chorus_driver::DeviceSlice<'a, P>,
    chorus_driver::DeviceSlice<'a, P>,
);

/// A cuDNN handle bound to a context and a stream, with a workspace that grows to what the
/// convolutions ask for, and the workspace sizes cuDNN gave (by geometry and algorithm), so a
/// loop of convolutions makes only the convolution calls; destroyed on drop.
pub struct Dnn<'s> {
    raw: sys::cudnnHandle_t,
    bound: Bound<'s>,
    workspace: RefCell<Option<DeviceMemory>>,
    /// The workspace sizes cuDNN has given, by what determines them.
    workspace_sizes: RefCell<HashMap<WorkspaceKey, usize>>,
}

impl std::fmt::Debug for Dnn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dnn")
            .field("raw", &self.raw)
            .field(
                "workspace",
                &self
                    .workspace
                    .borrow()
                    .as_ref()
                    .map_or(0, DeviceMemory::len),
            )
            .finish()
    }
}

// SAFETY: a cuDNN handle may be used from any thread, one at a time (cuDNN's rule), so it may
// move between threads; it is not `Sync` (and its workspace cell is not either).
unsafe impl Send for Dnn<'_> {}

impl<'s> Dnn<'s> {
    /// A handle in the current context whose work goes on `stream`. Errors: cuDNN 9 missing
    /// ([`Error::LibraryNotFound`]), no current context, a stream of another context.
    pub fn new(stream: &'s Stream) -> Result<Dnn<'s>> {
        ensure()?;
        let bound = Bound::current(stream)?;
        let mut raw = std::ptr::null_mut();
        dnn!(cudnnCreate(&mut raw))?;
        let dnn = Dnn {
            raw,
            bound,
            workspace: RefCell::new(None),
            workspace_sizes: RefCell::new(HashMap::new()),
        };
        dnn!(cudnnSetStream(raw, stream.raw() as sys::cudaStream_t))?;
        Ok(dnn)
    }

    /// Puts later work on `stream` (of the handle's context).
    pub fn set_stream(&mut self, stream: &'s Stream) -> Result<()> {
        self.bound = self.bound.with_stream(stream)?;
        self.bound.enter()?;
        dnn!(cudnnSetStream(self.raw, stream.raw() as sys::cudaStream_t))
    }

    /// The stream the handle's work goes on.
    pub fn stream(&self) -> &'s Stream {
        self.bound.stream()
    }

    /// The raw handle, for calls through cudarc's `cudnn::sys`.
    pub fn raw(&self) -> sys::cudnnHandle_t {
        self.raw
    }

    /// The workspace's size in bytes (the largest a call has needed so far).
    pub fn workspace_len(&self) -> usize {
        self.workspace
            .borrow()
            .as_ref()
            .map_or(0, DeviceMemory::len)
    }

    /// How many convolution workspace sizes the handle remembers (one per pass, algorithm and
    /// geometry it has run or been asked about; each is asked of cuDNN once).
    pub fn cached_workspace_sizes(&self) -> usize {
        self.workspace_sizes.borrow().len()
    }

    fn enter(&self) -> Result<sys::cudnnHandle_t> {
        self.bound.enter()?;
        Ok(self.raw)
    }

    /// The workspace's address and size, grown to at least `bytes` first (waiting for the
    /// stream before the old one is freed, since queued calls may still use it).
    fn workspace(&self, bytes: usize) -> Result<(*mut c_void, usize)> {
        let mut ws = self.workspace.borrow_mut();
        if ws.as_ref().is_none_or(|w| w.len() < bytes) {
            if ws.is_some() {
                self.bound.stream().synchronize()?;
            }
            *ws = None;
            *ws = Some(DeviceMemory::alloc(bytes.max(1))?);
        }
        let w = ws.as_ref().map_or((std::ptr::null_mut(), 0), |w| {
            (w.ptr() as *mut c_void, w.len())
        });
        Ok(w)
    }

    // ---- convolution ----

    /// The forward algorithms for `y = conv(x, w)`, best first, found by `search`.
    pub fn conv_forward_algos<T: DnnType>(
        &self,
        x: &TensorDesc<T>,
        w: &FilterDesc<T>,
        conv: &ConvDesc<T>,
        y: &TensorDesc<T>,
        search: Search,
    ) -> Result<Vec<AlgoPerf<FwdAlgo>>> {
        self.conv_algos(
            "conv_forward_algos",
            &ConvGeometry { x, w, conv, y },
            search,
        )
    }

    /// The workspace `algo` needs for this forward convolution, in bytes (asked of cuDNN once
    /// per geometry and algorithm, then remembered by the handle).
    pub fn conv_forward_workspace<T: DnnType>(
        &self,
        x: &TensorDesc<T>,
        w: &FilterDesc<T>,
        conv: &ConvDesc<T>,
        y: &TensorDesc<T>,
        algo: FwdAlgo,
    ) -> Result<usize> {
        let g = ConvGeometry { x, w, conv, y };
        self.conv_workspace("conv_forward_workspace", &g, algo)
    }

    /// `y ← alpha·conv(x, w) + beta·y` with `algo` (from [`Dnn::conv_forward_algos`]), in the
    /// handle's workspace (grown as needed).
    pub fn conv_forward<T: DnnType>(
        &self,
        alpha: f64,
        x_desc: &TensorDesc<T>,
        x: &impl AsDeviceSlice<T>,
        w_desc: &FilterDesc<T>,
        w: &impl AsDeviceSlice<T>,
        conv: &ConvDesc<T>,
        algo: FwdAlgo,
        beta: f64,
        y_desc: &TensorDesc<T>,
        y: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let (x, w, y) = (
            x.as_device_slice()?,
            w.as_device_slice()?,
            y.as_device_slice_mut()?,
        );
        let g = ConvGeometry {
            x: x_desc,
            w: w_desc,
            conv,
            y: y_desc,
        };
        let operands = [
            Operand::new("x", x.ptr(), x.len()),
            Operand::new("w", w.ptr(), w.len()),
            Operand::new("y", y.ptr(), y.len()),
        ];
        self.conv_run("conv_forward", &g, algo, alpha, beta, operands)
    }

    /// The backward-data algorithms for `dx = convᵀ(dy, w)`, best first, found by `search`.
    pub fn conv_backward_data_algos<T: DnnType>(
        &self,
        w: &FilterDesc<T>,
        dy: &TensorDesc<T>,
        conv: &ConvDesc<T>,
        dx: &TensorDesc<T>,
        search: Search,
    ) -> Result<Vec<AlgoPerf<BwdDataAlgo>>> {
        let g = ConvGeometry {
            x: dx,
            w,
            conv,
            y: dy,
        };
        self.conv_algos("conv_backward_data_algos", &g, search)
    }

    /// The workspace `algo` needs for this backward-data convolution, in bytes (remembered by
    /// the handle as for [`Dnn::conv_forward_workspace`]).
    pub fn conv_backward_data_workspace<T: DnnType>(
        &self,
        w: &FilterDesc<T>,
        dy: &TensorDesc<T>,
        conv: &ConvDesc<T>,
        dx: &TensorDesc<T>,
        algo: BwdDataAlgo,
    ) -> Result<usize> {
        let g = ConvGeometry {
            x: dx,
            w,
            conv,
            y: dy,
        };
        self.conv_workspace("conv_backward_data_workspace", &g, algo)
    }

    /// `dx ← alpha·convᵀ(dy, w) + beta·dx`: the gradient of the forward convolution's input
    /// (`dx` has `x`'s descriptor, `dy` `y`'s), with `algo`, in the handle's workspace.
    pub fn conv_backward_data<T: DnnType>(
        &self,
        alpha: f64,
        w_desc: &FilterDesc<T>,
        w: &impl AsDeviceSlice<T>,
        dy_desc: &TensorDesc<T>,
        dy: &impl AsDeviceSlice<T>,
        conv: &ConvDesc<T>,
        algo: BwdDataAlgo,
        beta: f64,
        dx_desc: &TensorDesc<T>,
        dx: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let (w, dy, dx) = (
            w.as_device_slice()?,
            dy.as_device_slice()?,
            dx.as_device_slice_mut()?,
        );
        let g = ConvGeometry {
            x: dx_desc,
            w: w_desc,
            conv,
            y: dy_desc,
        };
        let operands = [
            Operand::new("dx", dx.ptr(), dx.len()),
            Operand::new("w", w.ptr(), w.len()),
            Operand::new("dy", dy.ptr(), dy.len()),
        ];
        self.conv_run("conv_backward_data", &g, algo, alpha, beta, operands)
    }

    /// The backward-filter algorithms for `dw = ∂(conv(x, w))/∂w · dy`, best first.
    pub fn conv_backward_filter_algos<T: DnnType>(
        &self,
        x: &TensorDesc<T>,
        dy: &TensorDesc<T>,
        conv: &ConvDesc<T>,
        dw: &FilterDesc<T>,
        search: Search,
    ) -> Result<Vec<AlgoPerf<BwdFilterAlgo>>> {
        let g = ConvGeometry {
            x,
            w: dw,
            conv,
            y: dy,
        };
        self.conv_algos("conv_backward_filter_algos", &g, search)
    }

    /// The workspace `algo` needs for this backward-filter convolution, in bytes (remembered
    /// by the handle as for [`Dnn::conv_forward_workspace`]).
    pub fn conv_backward_filter_workspace<T: DnnType>(
        &self,
        x: &TensorDesc<T>,
        dy: &TensorDesc<T>,
        conv: &ConvDesc<T>,
        dw: &FilterDesc<T>,
        algo: BwdFilterAlgo,
    ) -> Result<usize> {
        let g = ConvGeometry {
            x,
            w: dw,
            conv,
            y: dy,
        };
        self.conv_workspace("conv_backward_filter_workspace", &g, algo)
    }

    /// `dw ← alpha·(gradient of the filter) + beta·dw` from the input `x` and the output's
    /// gradient `dy`, with `algo`, in the handle's workspace.
    pub fn conv_backward_filter<T: DnnType>(
        &self,
        alpha: f64,
        x_desc: &TensorDesc<T>,
        x: &impl AsDeviceSlice<T>,
        dy_desc: &TensorDesc<T>,
        dy: &impl AsDeviceSlice<T>,
        conv: &ConvDesc<T>,
        algo: BwdFilterAlgo,
        beta: f64,
        dw_desc: &FilterDesc<T>,
        dw: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let (x, dy, dw) = (
            x.as_device_slice()?,
            dy.as_device_slice()?,
            dw.as_device_slice_mut()?,
        );
        let g = ConvGeometry {
            x: x_desc,
            w: dw_desc,
            conv,
            y: dy_desc,
        };
        let operands = [
            Operand::new("x", x.ptr(), x.len()),
            Operand::new("dw", dw.ptr(), dw.len()),
            Operand::new("dy", dy.ptr(), dy.len()),
        ];
        self.conv_run("conv_backward_filter", &g, algo, alpha, beta, operands)
    }

    // The three passes share everything but the cuDNN entry points: one search, one cached
    // workspace query and one call, each choosing its entry point by `A::PASS`.

    /// The algorithms of `A`'s pass for geometry `g`, best first.
    fn conv_algos<T: DnnType, A: ConvAlgo>(
        &self,
        call: &'static str,
        g: &ConvGeometry<'_, T>,
        search: Search,
    ) -> Result<Vec<AlgoPerf<A>>> {
        g.check(call)?;
        let h = self.enter()?;
        let mut raw = [RawPerf::default(); 8];
        let mut count = 0;
        let n = raw.len() as c_int;
        // Each entry point writes its own `…AlgoPerf_t`; RawPerf has their common layout.
        let out = raw.as_mut_ptr();
        let (x, w, c, y) = (g.x.raw, g.w.raw, g.conv.raw, g.y.raw);
        use ConvPass::*;
        match (A::PASS, search) {
            (Forward, Search::Heuristic) => dnn!(cudnnGetConvolutionForwardAlgorithm_v7(
                h,
                x,
                w,
                c,
                y,
                n,
                &mut count,
                out.cast()
            )),
            (Forward, Search::Exhaustive) => dnn!(cudnnFindConvolutionForwardAlgorithm(
                h,
                x,
                w,
                c,
                y,
                n,
                &mut count,
                out.cast()
            )),
            (BackwardData, Search::Heuristic) => {
                dnn!(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                    h,
                    w,
                    y,
                    c,
                    x,
                    n,
                    &mut count,
                    out.cast()
                ))
            }
            (BackwardData, Search::Exhaustive) => {
                dnn!(cudnnFindConvolutionBackwardDataAlgorithm(
                    h,
                    w,
                    y,
                    c,
                    x,
                    n,
                    &mut count,
                    out.cast()
                ))
            }
            (BackwardFilter, Search::Heuristic) => {
                dnn!(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                    h,
                    x,
                    y,
                    c,
                    w,
                    n,
                    &mut count,
                    out.cast()
                ))
            }
            (BackwardFilter, Search::Exhaustive) => {
                dnn!(cudnnFindConvolutionBackwardFilterAlgorithm(
                    h,
                    x,
                    y,
                    c,
                    w,
                    n,
                    &mut count,
                    out.cast()
                ))
            }
        }?;
        Ok(perfs(&raw[..count.clamp(0, n) as usize]))
    }

    /// The checked workspace size of `algo` for geometry `g`.
    fn conv_workspace<T: DnnType, A: ConvAlgo>(
        &self,
        call: &'static str,
        g: &ConvGeometry<'_, T>,
        algo: A,
    ) -> Result<usize> {
        g.check(call)?;
        let h = self.enter()?;
        self.workspace_size(h, g, algo)
    }

    /// The workspace size of `algo` for geometry `g` (checked by the caller): from the
    /// handle's cache, else asked of cuDNN and remembered. In cuDNN 9 the legacy size queries
    /// build an execution plan each time, host work comparable to the convolution itself at
    /// ResNet sizes, which a C program does once before its loop; so does this.
    fn workspace_size<T: DnnType, A: ConvAlgo>(
        &self,
        h: sys::cudnnHandle_t,
        g: &ConvGeometry<'_, T>,
        algo: A,
    ) -> Result<usize> {
        let key = WorkspaceKey::new(g, algo);
        if let Some(&bytes) = self.workspace_sizes.borrow().get(&key) {
            return Ok(bytes);
        }
        let (x, w, c, y) = (g.x.raw, g.w.raw, g.conv.raw, g.y.raw);
        let mut bytes = 0;
        // Each arm's algorithm value is `to_raw` of the pass's own enum (A::PASS says which).
        match A::PASS {
            ConvPass::Forward => {
                // SAFETY: `to_raw` of the pass's own enum (cudnnConvolutionFwdAlgo_t's values).
                let a: sys::cudnnConvolutionFwdAlgo_t =
                    unsafe { std::mem::transmute(algo.to_raw()) };
                dnn!(cudnnGetConvolutionForwardWorkspaceSize(
                    h, x, w, c, y, a, &mut bytes
                ))
            }
            ConvPass::BackwardData => {
                // SAFETY: `to_raw` of the pass's own enum (cudnnConvolutionBwdDataAlgo_t's values).
                let a: sys::cudnnConvolutionBwdDataAlgo_t =
                    unsafe { std::mem::transmute(algo.to_raw()) };
                dnn!(cudnnGetConvolutionBackwardDataWorkspaceSize(
                    h, w, y, c, x, a, &mut bytes
                ))
            }
            ConvPass::BackwardFilter => {
                // SAFETY: `to_raw` of the pass's own enum (cudnnConvolutionBwdFilterAlgo_t's values).
                let a: sys::cudnnConvolutionBwdFilterAlgo_t =
                    unsafe { std::mem::transmute(algo.to_raw()) };
                dnn!(cudnnGetConvolutionBackwardFilterWorkspaceSize(
                    h, x, y, c, w, a, &mut bytes
                ))
            }
        }?;
        let mut cache = self.workspace_sizes.borrow_mut();
        // A bound on what a program that keeps making new shapes can make the cache hold.
        if cache.len() >= WORKSPACE_CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(key, bytes);
        Ok(bytes)
    }

    /// One convolution of `A`'s pass over geometry `g`. `operands` are the memory of the
    /// geometry's `[x, w, y]` (for the backward passes: `dx` or `x`, `w` or `dw`, `dy`), each
    /// checked against its descriptor; the pass decides which of them is written.
    fn conv_run<T: DnnType, A: ConvAlgo>(
        &self,
        call: &'static str,
        g: &ConvGeometry<'_, T>,
        algo: A,
        alpha: f64,
        beta: f64,
        [x, w, y]: [Operand; 3],
    ) -> Result<()> {
        g.check(call)?;
        g.x.check_block(call, x.name, x.len)?;
        g.w.check_block(call, w.name, w.len)?;
        g.y.check_block(call, y.name, y.len)?;
        let h = self.enter()?;
        let bytes = self.workspace_size(h, g, algo)?;
        let (ws, ws_len) = self.workspace(bytes)?;
        let (alpha, beta) = (T::scale(alpha), T::scale(beta));
        let (pa, pb) = (
            (&alpha as *const T::Scale).cast::<c_void>(),
            (&beta as *const T::Scale).cast::<c_void>(),
        );
        let (xd, wd, cd, yd) = (g.x.raw, g.w.raw, g.conv.raw, g.y.raw);
        let (input, output) = (|p: u64| p as *const c_void, |p: u64| p as *mut c_void);
        match A::PASS {
            ConvPass::Forward => {
                // SAFETY: `to_raw` of the pass's own enum (cudnnConvolutionFwdAlgo_t's values).
                let a: sys::cudnnConvolutionFwdAlgo_t =
                    unsafe { std::mem::transmute(algo.to_raw()) };
                dnn!(cudnnConvolutionForward(
                    h,
                    pa,
                    xd,
                    input(x.ptr),
                    wd,
                    input(w.ptr),
                    cd,
                    a,
                    ws,
                    ws_len,
                    pb,
                    yd,
                    output(y.ptr)
                ))
            }
            ConvPass::BackwardData => {
                // SAFETY: `to_raw` of the pass's own enum (cudnnConvolutionBwdDataAlgo_t's values).
                let a: sys::cudnnConvolutionBwdDataAlgo_t =
                    unsafe { std::mem::transmute(algo.to_raw()) };
                dnn!(cudnnConvolutionBackwardData(
                    h,
                    pa,
                    wd,
                    input(w.ptr),
                    yd,
                    input(y.ptr),
                    cd,
                    a,
                    ws,
                    ws_len,
                    pb,
                    xd,
                    output(x.ptr)
                ))
            }
            ConvPass::BackwardFilter => {
                // SAFETY: `to_raw` of the pass's own enum (cudnnConvolutionBwdFilterAlgo_t's values).
                let a: sys::cudnnConvolutionBwdFilterAlgo_t =
                    unsafe { std::mem::transmute(algo.to_raw()) };
                dnn!(cudnnConvolutionBackwardFilter(
                    h,
                    pa,
                    xd,
                    input(x.ptr),
                    yd,
                    input(y.ptr),
                    cd,
                    a,
                    ws,
                    ws_len,
                    pb,
                    wd,
                    output(w.ptr)
                ))
            }
        }
    }

    // ---- pooling, activation, softmax ----

    fn check_same<T: DnnType>(
        call: &'static str,
        x: &TensorDesc<T>,
        y: &TensorDesc<T>,
    ) -> Result<()> {
        if x.dims() != y.dims() {
            return Err(Error::invalid(
                call,
                format!(
                    "the input is {:?} and the output {:?}: they must match",
                    x.dims(),
                    y.dims()
                ),
            ));
        }
        Ok(())
    }

    /// `y ← alpha·pool(x) + beta·y`; `y` must have [`PoolDesc::output_dims`] of `x`.
    pub fn pooling_forward<T: DnnType>(
        &self,
        pool: &PoolDesc,
        alpha: f64,
        x_desc: &TensorDesc<T>,
        x: &impl AsDeviceSlice<T>,
        beta: f64,
        y_desc: &TensorDesc<T>,
        y: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let call = "pooling_forward";
        let (x, y) = (x.as_device_slice()?, y.as_device_slice_mut()?);
        let want = pool.output_dims(x_desc.dims())?;
        if y_desc.dims() != want {
            return Err(Error::invalid(
                call,
                format!(
                    "the output is {:?}, pooling a {:?} input gives {want:?}",
                    y_desc.dims(),
                    x_desc.dims()
                ),
            ));
        }
        x_desc.check_block(call, "x", x.len())?;
        y_desc.check_block(call, "y", y.len())?;
        let h = self.enter()?;
        let (alpha, beta) = (T::scale(alpha), T::scale(beta));
        dnn!(cudnnPoolingForward(
            h,
            pool.raw,
            (&alpha as *const T::Scale).cast(),
            x_desc.raw,
            x.ptr() as *const c_void,
            (&beta as *const T::Scale).cast(),
            y_desc.raw,
            y.ptr() as *mut c_void
        ))
    }

    /// `y ← alpha·f(x) + beta·y` elementwise for the activation `f`; `x` and `y` have the same
    /// dimensions (their strides may differ).
    pub fn activation_forward<T: DnnType>(
        &self,
        activation: Activation,
        alpha: f64,
        x_desc: &TensorDesc<T>,
        x: &impl AsDeviceSlice<T>,
        beta: f64,
        y_desc: &TensorDesc<T>,
        y: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let call = "activation_forward";
        let (x, y) = (x.as_device_slice()?, y.as_device_slice_mut()?);
        Self::check_same(call, x_desc, y_desc)?;
        x_desc.check_block(call, "x", x.len())?;
        y_desc.check_block(call, "y", y.len())?;
        let h = self.enter()?;
        let guard = ActivationGuard::new(call, activation)?;
        let (alpha, beta) = (T::scale(alpha), T::scale(beta));
        dnn!(cudnnActivationForward(
            h,
            guard.0,
            (&alpha as *const T::Scale).cast(),
            x_desc.raw,
            x.ptr() as *const c_void,
            (&beta as *const T::Scale).cast(),
            y_desc.raw,
            y.ptr() as *mut c_void
        ))
    }

    /// `y ← f(y)` elementwise in place (cuDNN allows the input to be the output).
    pub fn activation_in_place<T: DnnType>(
        &self,
        activation: Activation,
        desc: &TensorDesc<T>,
        y: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let y = y.as_device_slice_mut()?;
        desc.check_block("activation_in_place", "y", y.len())?;
        let h = self.enter()?;
        let guard = ActivationGuard::new("activation_in_place", activation)?;
        let (alpha, beta) = (T::scale(1.0), T::scale(0.0));
        dnn!(cudnnActivationForward(
            h,
            guard.0,
            (&alpha as *const T::Scale).cast(),
            desc.raw,
            y.ptr() as *const c_void,
            (&beta as *const T::Scale).cast(),
            desc.raw,
            y.ptr() as *mut c_void
        ))
    }

    /// `y ← alpha·softmax(x) + beta·y` over the channels ([`SoftmaxMode::Channel`]) or over
    /// each sample ([`SoftmaxMode::Instance`]); `x` and `y` have the same dimensions.
    pub fn softmax_forward<T: DnnType>(
        &self,
        algo: SoftmaxAlgo,
        mode: SoftmaxMode,
        alpha: f64,
        x_desc: &TensorDesc<T>,
        x: &impl AsDeviceSlice<T>,
        beta: f64,
        y_desc: &TensorDesc<T>,
        y: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let call = "softmax_forward";
        let (x, y) = (x.as_device_slice()?, y.as_device_slice_mut()?);
        Self::check_same(call, x_desc, y_desc)?;
        x_desc.check_block(call, "x", x.len())?;
        y_desc.check_block(call, "y", y.len())?;
        let (algo, mode) = (softmax_algo(algo), softmax_mode(mode));
        let h = self.enter()?;
        let (alpha, beta) = (T::scale(alpha), T::scale(beta));
        dnn!(cudnnSoftmaxForward(
            h,
            algo,
            mode,
            (&alpha as *const T::Scale).cast(),
            x_desc.raw,
            x.ptr() as *const c_void,
            (&beta as *const T::Scale).cast(),
            y_desc.raw,
            y.ptr() as *mut c_void
        ))
    }

    // ---- batch normalisation ----

    fn check_bn<T: DnnType>(
        call: &'static str,
        mode: BatchNormMode,
        x: &TensorDesc<T>,
        y: &TensorDesc<T>,
        params: &TensorDesc<T::Scale>,
        epsilon: f64,
    ) -> Result<()> {
        Self::check_same(call, x, y)?;
        let want = x.batch_norm_params(mode)?.dims();
        if params.dims() != want {
            return Err(Error::invalid(
                call,
                format!(
                    "the parameters are {:?}, {mode:?} normalisation of a {:?} input needs {want:?}",
                    params.dims(),
                    x.dims()
                ),
            ));
        }
        if epsilon.is_nan() || epsilon < BN_MIN_EPSILON {
            return Err(Error::invalid(
                call,
                format!("epsilon = {epsilon} is below cuDNN's minimum {BN_MIN_EPSILON}"),
            ));
        }
        Ok(())
    }

    /// Batch normalisation with given statistics: `y = scale·(x − mean)/√(var + epsilon) +
    /// bias`, each parameter of `params`' descriptor ([`TensorDesc::batch_norm_params`]).
    pub fn batch_norm_inference<T: DnnType>(
        &self,
        mode: BatchNormMode,
        x_desc: &TensorDesc<T>,
        x: &impl AsDeviceSlice<T>,
        y_desc: &TensorDesc<T>,
        y: &mut impl AsDeviceSliceMut<T>,
        params: &TensorDesc<T::Scale>,
        scale: &impl AsDeviceSlice<T::Scale>,
        bias: &impl AsDeviceSlice<T::Scale>,
        mean: &impl AsDeviceSlice<T::Scale>,
        var: &impl AsDeviceSlice<T::Scale>,
        epsilon: f64,
    ) -> Result<()> {
        let call = "batch_norm_inference";
        let (x, y) = (x.as_device_slice()?, y.as_device_slice_mut()?);
        let (scale, bias, mean, var) = (
            scale.as_device_slice()?,
            bias.as_device_slice()?,
            mean.as_device_slice()?,
            var.as_device_slice()?,
        );
        Self::check_bn(call, mode, x_desc, y_desc, params, epsilon)?;
        x_desc.check_block(call, "x", x.len())?;
        y_desc.check_block(call, "y", y.len())?;
        for (name, len) in [
            ("scale", scale.len()),
            ("bias", bias.len()),
            ("mean", mean.len()),
            ("var", var.len()),
        ] {
            params.check_block(call, name, len)?;
        }
        let h = self.enter()?;
        let (one, zero) = (T::scale(1.0), T::scale(0.0));
        dnn!(cudnnBatchNormalizationForwardInference(
            h,
            mode.raw(),
            (&one as *const T::Scale).cast(),
            (&zero as *const T::Scale).cast(),
            x_desc.raw,
            x.ptr() as *const c_void,
            y_desc.raw,
            y.ptr() as *mut c_void,
            params.raw,
            scale.ptr() as *const c_void,
            bias.ptr() as *const c_void,
            mean.ptr() as *const c_void,
            var.ptr() as *const c_void,
            epsilon
        ))
    }

    /// Batch normalisation of a training step: normalises `x` by its own batch statistics
    /// into `y` (`scale·(x − mean)/√(var + epsilon) + bias`), updates the running statistics
    /// with `momentum` (cuDNN's exponential average factor, PyTorch's `momentum`; 1 replaces
    /// them) and saves the batch mean and inverse deviation where asked.
    pub fn batch_norm_training<T: DnnType>(
        &self,
        mode: BatchNormMode,
        x_desc: &TensorDesc<T>,
        x: &impl AsDeviceSlice<T>,
        y_desc: &TensorDesc<T>,
        y: &mut impl AsDeviceSliceMut<T>,
        params: &TensorDesc<T::Scale>,
        scale: &impl AsDeviceSlice<T::Scale>,
        bias: &impl AsDeviceSlice<T::Scale>,
        momentum: f64,
        stats: BatchNormStats<'_, T::Scale>,
        epsilon: f64,
    ) -> Result<()> {
        let call = "batch_norm_training";
        let (x, y) = (x.as_device_slice()?, y.as_device_slice_mut()?);
        let (scale, bias) = (scale.as_device_slice()?, bias.as_device_slice()?);
        Self::check_bn(call, mode, x_desc, y_desc, params, epsilon)?;
        if !(0.0..=1.0).contains(&momentum) {
            return Err(Error::invalid(
                call,
                format!("momentum = {momentum} is not in [0, 1]"),
            ));
        }
        x_desc.check_block(call, "x", x.len())?;
        y_desc.check_block(call, "y", y.len())?;
        params.check_block(call, "scale", scale.len())?;
        params.check_block(call, "bias", bias.len())?;
        params.check_block(call, "running_mean", stats.running_mean.len())?;
        params.check_block(call, "running_var", stats.running_var.len())?;
        let optional = |name: &str, s: &Option<chorus_driver::DeviceSliceMut<'_, T::Scale>>| match s
        {
            Some(s) => params
                .check_block(call, name, s.len())
                .map(|()| s.ptr() as *mut c_void),
            None => Ok(std::ptr::null_mut()),
        };
        let save_mean = optional("save_mean", &stats.save_mean)?;
        let save_inv_var = optional("save_inv_var", &stats.save_inv_var)?;
        if save_mean.is_null() != save_inv_var.is_null() {
            return Err(Error::invalid(
                call,
                "save_mean and save_inv_var are both given or both absent",
            ));
        }
        let h = self.enter()?;
        let (one, zero) = (T::scale(1.0), T::scale(0.0));
        dnn!(cudnnBatchNormalizationForwardTraining(
            h,
            mode.raw(),
            (&one as *const T::Scale).cast(),
            (&zero as *const T::Scale).cast(),
            x_desc.raw,
            x.ptr() as *const c_void,
            y_desc.raw,
            y.ptr() as *mut c_void,
            params.raw,
            scale.ptr() as *const c_void,
            bias.ptr() as *const c_void,
            momentum,
            stats.running_mean.ptr() as *mut c_void,
            stats.running_var.ptr() as *mut c_void,
            epsilon,
            save_mean,
            save_inv_var
        ))
    }

    // ---- backward passes (gradients overwrite dx: alpha 1, beta 0) ----

    fn check_all_same<T: DnnType>(
        call: &'static str,
        desc: &TensorDesc<T>,
        blocks: &[(&str, usize)],
    ) -> Result<()> {
        for &(name, len) in blocks {
            desc.check_block(call, name, len)?;
        }
        Ok(())
    }

    /// The gradient of [`Dnn::pooling_forward`]: `dx` from the forward pass's input `x`, output
    /// `y` and the output's gradient `dy` (`dy` has `y`'s descriptor, `dx` `x`'s).
    pub fn pooling_backward<T: DnnType>(
        &self,
        pool: &PoolDesc,
        x_desc: &TensorDesc<T>,
        x: &impl AsDeviceSlice<T>,
        y_desc: &TensorDesc<T>,
        y: &impl AsDeviceSlice<T>,
        dy: &impl AsDeviceSlice<T>,
        dx: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let call = "pooling_backward";
        let (x, y, dy, dx) = (
            x.as_device_slice()?,
            y.as_device_slice()?,
            dy.as_device_slice()?,
            dx.as_device_slice_mut()?,
        );
        let want = pool.output_dims(x_desc.dims())?;
        if y_desc.dims() != want {
            return Err(Error::invalid(
                call,
                format!(
                    "the output is {:?}, pooling a {:?} input gives {want:?}",
                    y_desc.dims(),
                    x_desc.dims()
                ),
            ));
        }
        Self::check_all_same(call, x_desc, &[("x", x.len()), ("dx", dx.len())])?;
        Self::check_all_same(call, y_desc, &[("y", y.len()), ("dy", dy.len())])?;
        let h = self.enter()?;
        let (one, zero) = (T::scale(1.0), T::scale(0.0));
        dnn!(cudnnPoolingBackward(
            h,
            pool.raw,
            (&one as *const T::Scale).cast(),
            y_desc.raw,
            y.ptr() as *const c_void,
            y_desc.raw,
            dy.ptr() as *const c_void,
            x_desc.raw,
            x.ptr() as *const c_void,
            (&zero as *const T::Scale).cast(),
            x_desc.raw,
            dx.ptr() as *mut c_void
        ))
    }

    /// The gradient of [`Dnn::activation_forward`]: `dx = f′(x)·dy` from the forward pass's
    /// input `x`, output `y` and `dy`, all four of one descriptor.
    pub fn activation_backward<T: DnnType>(
        &self,
        activation: Activation,
        desc: &TensorDesc<T>,
        x: &impl AsDeviceSlice<T>,
        y: &impl AsDeviceSlice<T>,
        dy: &impl AsDeviceSlice<T>,
        dx: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let call = "activation_backward";
        let (x, y, dy, dx) = (
            x.as_device_slice()?,
            y.as_device_slice()?,
            dy.as_device_slice()?,
            dx.as_device_slice_mut()?,
        );
        Self::check_all_same(
            call,
            desc,
            &[
                ("x", x.len()),
                ("y", y.len()),
                ("dy", dy.len()),
                ("dx", dx.len()),
            ],
        )?;
        let h = self.enter()?;
        let guard = ActivationGuard::new(call, activation)?;
        let (one, zero) = (T::scale(1.0), T::scale(0.0));
        dnn!(cudnnActivationBackward(
            h,
            guard.0,
            (&one as *const T::Scale).cast(),
            desc.raw,
            y.ptr() as *const c_void,
            desc.raw,
            dy.ptr() as *const c_void,
            desc.raw,
            x.ptr() as *const c_void,
            (&zero as *const T::Scale).cast(),
            desc.raw,
            dx.ptr() as *mut c_void
        ))
    }

    /// The gradient of [`Dnn::softmax_forward`] from its output `y` and `dy` (one descriptor).
    pub fn softmax_backward<T: DnnType>(
        &self,
        algo: SoftmaxAlgo,
        mode: SoftmaxMode,
        desc: &TensorDesc<T>,
        y: &impl AsDeviceSlice<T>,
        dy: &impl AsDeviceSlice<T>,
        dx: &mut impl AsDeviceSliceMut<T>,
    ) -> Result<()> {
        let call = "softmax_backward";
        let (y, dy, dx) = (
            y.as_device_slice()?,
            dy.as_device_slice()?,
            dx.as_device_slice_mut()?,
        );
        Self::check_all_same(
            call,
            desc,
            &[("y", y.len()), ("dy", dy.len()), ("dx", dx.len())],
        )?;
        let h = self.enter()?;
        let (one, zero) = (T::scale(1.0), T::scale(0.0));
        dnn!(cudnnSoftmaxBackward(
            h,
            softmax_algo(algo),
            softmax_mode(mode),
            (&one as *const T::Scale).cast(),
            desc.raw,
            y.ptr() as *const c_void,
            desc.raw,
            dy.ptr() as *const c_void,
            (&zero as *const T::Scale).cast(),
            desc.raw,
            dx.ptr() as *mut c_void
        ))
    }

    /// The gradients of batch normalisation in training: `dx`, and the parameters' `d_scale`
    /// and `d_bias`, from `x`, `dy` (one descriptor with `dx`) and `scale`; `saved` is the
    /// batch mean and inverse deviation that [`Dnn::batch_norm_training`] saved (or `None`:
    /// cuDNN recomputes them).
    pub fn batch_norm_backward<T: DnnType>(
        &self,
        mode: BatchNormMode,
        desc: &TensorDesc<T>,
        x: &impl AsDeviceSlice<T>,
        dy: &impl AsDeviceSlice<T>,
        dx: &mut impl AsDeviceSliceMut<T>,
        params: &TensorDesc<T::Scale>,
        scale: &impl AsDeviceSlice<T::Scale>,
        d_scale: &mut impl AsDeviceSliceMut<T::Scale>,
        d_bias: &mut impl AsDeviceSliceMut<T::Scale>,
        epsilon: f64,
        saved: Option<SavedStats<'_, T::Scale>>,
    ) -> Result<()> {
        let call = "batch_norm_backward";
        let (x, dy, dx) = (
            x.as_device_slice()?,
            dy.as_device_slice()?,
            dx.as_device_slice_mut()?,
        );
        let (scale, d_scale, d_bias) = (
            scale.as_device_slice()?,
            d_scale.as_device_slice_mut()?,
            d_bias.as_device_slice_mut()?,
        );
        Self::check_bn(call, mode, desc, desc, params, epsilon)?;
        Self::check_all_same(
            call,
            desc,
            &[("x", x.len()), ("dy", dy.len()), ("dx", dx.len())],
        )?;
        params.check_block(call, "scale", scale.len())?;
        params.check_block(call, "d_scale", d_scale.len())?;
        params.check_block(call, "d_bias", d_bias.len())?;
        let (mean, inv) = match &saved {
            Some((m, v)) => {
                params.check_block(call, "saved mean", m.len())?;
                params.check_block(call, "saved inverse deviation", v.len())?;
                (m.ptr() as *const c_void, v.ptr() as *const c_void)
            }
            None => (std::ptr::null(), std::ptr::null()),
        };
        let h = self.enter()?;
        let (one, zero) = (T::scale(1.0), T::scale(0.0));
        let (one, zero) = (
            (&one as *const T::Scale).cast::<c_void>(),
            (&zero as *const T::Scale).cast::<c_void>(),
        );
        dnn!(cudnnBatchNormalizationBackward(
            h,
            mode.raw(),
            one,
            zero,
            one,
            zero,
            desc.raw,
            x.ptr() as *const c_void,
            desc.raw,
            dy.ptr() as *const c_void,
            desc.raw,
            dx.ptr() as *mut c_void,
            params.raw,
            scale.ptr() as *const c_void,
            d_scale.ptr() as *mut c_void,
            d_bias.ptr() as *mut c_void,
            epsilon,
            mean,
            inv
        ))
    }
}

impl Drop for Dnn<'_> {
    fn drop(&mut self) {
        // Queued calls may still use the workspace: wait for them before it is freed.
        if self.workspace.get_mut().is_some() {
            let _ = self.bound.enter();
            let _ = self.bound.stream().synchronize();
        }
        // SAFETY: the handle was created by `new` and is destroyed once.
        unsafe { sys::cudnnDestroy(self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_strides_and_spans() {
        let dims = [2, 3, 4, 5];
        assert_eq!(Layout::Nchw.strides(dims), [60, 20, 5, 1]);
        assert_eq!(Layout::Nhwc.strides(dims), [60, 1, 15, 3]);
        assert_eq!(span(dims, Layout::Nchw.strides(dims)), Some(120));
        assert_eq!(span(dims, Layout::Nhwc.strides(dims)), Some(120));
        // A padded row: w stride 1, h stride 8 instead of 5.
        assert_eq!(
            span(dims, [96, 32, 8, 1]),
            Some(96 + 2 * 32 + 3 * 8 + 4 + 1)
        );
        assert_eq!(span([1, 0, 1, 1], [1, 1, 1, 1]), Some(0));
        assert_eq!(span([usize::MAX, 2, 1, 1], [4, 1, 1, 1]), None);
    }

    #[test]
    fn convolution_output_dims_follow_the_usual_formula() {
        let p = Conv2d::padded(1);
        assert_eq!(
            p.output_dims([32, 256, 56, 56], [256, 256, 3, 3]).unwrap(),
            [32, 256, 56, 56]
        );
        let strided = Conv2d {
            pad: [3, 3],
            stride: [2, 2],
            ..Conv2d::default()
        };
        assert_eq!(
            strided
                .output_dims([1, 3, 224, 224], [64, 3, 7, 7])
                .unwrap(),
            [1, 64, 112, 112]
        );
        let dilated = Conv2d {
            dilation: [2, 3],
            ..Conv2d::default()
        };
        assert_eq!(
            dilated.output_dims([1, 1, 10, 10], [1, 1, 3, 3]).unwrap(),
            [1, 1, 6, 4]
        );
        let grouped = Conv2d {
            groups: 2,
            ..Conv2d::default()
        };
        assert_eq!(
            grouped.output_dims([1, 8, 5, 5], [6, 4, 3, 3]).unwrap(),
            [1, 6, 3, 3]
        );
        let e = Conv2d::default()
            .output_dims([1, 3, 5, 5], [4, 2, 3, 3])
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 channels"), "{e}");
        let e = Conv2d::default()
            .output_dims([1, 1, 2, 2], [1, 1, 3, 3])
            .unwrap_err()
            .to_string();
        assert!(e.contains("larger than"), "{e}");
        assert!(
            grouped
                .output_dims([1, 8, 5, 5], [5, 4, 3, 3])
                .unwrap_err()
                .to_string()
                .contains("multiple")
        );
        let zero_stride = Conv2d {
            stride: [0, 1],
            ..Conv2d::default()
        };
        assert!(zero_stride.output_dims([1, 1, 5, 5], [1, 1, 3, 3]).is_err());
    }

    #[test]
    fn algorithm_numbers_round_trip_and_unknown_ones_are_dropped() {
        for v in 0..8 {
            assert_eq!(FwdAlgo::from_raw(v).unwrap().to_raw(), v);
        }
        for v in 0..6 {
            assert_eq!(BwdDataAlgo::from_raw(v).unwrap().to_raw(), v);
        }
        for v in 0..7 {
            assert_eq!(BwdFilterAlgo::from_raw(v).unwrap().to_raw(), v);
        }
        assert_eq!(FwdAlgo::from_raw(8), None);
        let raw = [
            RawPerf {
                algo: 1,
                status: 0,
                time: 0.5,
                memory: 64,
                determinism: 1,
                math: 1,
                ..RawPerf::default()
            },
            RawPerf {
                algo: 6,
                status: 3000, // not supported: dropped
                ..RawPerf::default()
            },
            RawPerf {
                algo: 99, // newer than the bindings: dropped
                ..RawPerf::default()
            },
        ];
        let got = perfs::<FwdAlgo>(&raw);
        assert_eq!(
            got,
            vec![AlgoPerf {
                algo: FwdAlgo::ImplicitPrecompGemm,
                time_ms: 0.5,
                workspace: 64,
                deterministic: true,
                math: MathType::TensorOp,
            }]
        );
        assert_eq!(
            std::mem::size_of::<RawPerf>(),
            std::mem::size_of::<sys::cudnnConvolutionFwdAlgoPerf_t>()
        );
    }

    #[test]
    fn descriptors_need_the_library_or_say_it_is_missing() {
        // Bad shapes are refused before the library is asked; good ones need it.
        assert!(TensorDesc::<f32>::new(Layout::Nchw, 0, 1, 1, 1).is_err());
        assert!(FilterDesc::<f32>::new(Layout::Nchw, 1, 0, 1, 1).is_err());
        assert!(PoolDesc::new(PoolMode::Max, [2, 2], [2, 0], [1, 1]).is_err());
        match TensorDesc::<f32>::new(Layout::Nchw, 1, 1, 1, 1) {
            Ok(d) => assert!(is_available() && d.len() == 1),
            Err(Error::LibraryNotFound { library, .. }) => {
                assert!(!is_available());
                assert_eq!(library, "cuDNN");
            }
            Err(e) => panic!("{e}"),
        }
    }
}
