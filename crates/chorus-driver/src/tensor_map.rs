//! Tensor maps (`cuTensorMapEncodeTiled`, `cuTensorMapEncodeIm2col`): the 128-byte
//! descriptors of a tensor in global memory that Hopper's bulk tensor copies
//! (`cp.async.bulk.tensor`, the TMA unit) read, passed to a kernel as a
//! `const __grid_constant__ CUtensorMap` parameter (`chorus_cuda::KernelArg::raw` over
//! [`TensorMap::as_bytes`]).
//!
//! Every argument is checked against the driver's documented limits before the call, so a
//! mistake is an [`Error::InvalidArgument`] that says which rule it breaks (the driver only
//! answers `CUDA_ERROR_INVALID_VALUE`):
//!
//! - rank 1 to 5 (3 to 5 for im2col, and for interleaved layouts);
//! - the global address aligned to 16 bytes (32 with 32-byte interleave);
//! - each dimension 1 to 2³²; each stride (bytes, for dimensions 1 and up) a multiple of 16
//!   (32 with 32-byte interleave), below 2⁴⁰, and at least the extent of the dimension below,
//!   so that rows do not overlap;
//! - box sizes 1 to 256, the innermost one a multiple of 16 bytes without interleave, and
//!   within the swizzle span when swizzled; element strides 1 to 8;
//! - NaN out-of-bounds fill only for floating-point types.

use crate::call::cu;
use crate::entry::require;
use crate::error::{Error, Result};
use cudarc::driver::sys::{self, CUdeviceptr};

const FEATURE: &str = "tensor maps";
const ENTRY_POINTS: &[&str] = &["cuTensorMapEncodeTiled", "cuTensorMapEncodeIm2col"];

/// The element type of a tensor (`CUtensorMapDataType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorDataType {
    /// `uint8_t`.
    U8,
    /// `uint16_t`.
    U16,
    /// `uint32_t`.
    U32,
    /// `int32_t`.
    I32,
    /// `uint64_t`.
    U64,
    /// `int64_t`.
    I64,
    /// `__half`.
    F16,
    /// `float`.
    F32,
    /// `double`.
    F64,
    /// `__nv_bfloat16`.
    Bf16,
    /// `float`, denormals flushed to zero.
    F32Ftz,
    /// TF32 (in 32 bits).
    Tf32,
    /// TF32, denormals flushed to zero.
    Tf32Ftz,
}

impl TensorDataType {
    /// Bytes per element.
    pub fn size(self) -> u64 {
        use TensorDataType::*;
        match self {
            U8 => 1,
            U16 | F16 | Bf16 => 2,
            U32 | I32 | F32 | F32Ftz | Tf32 | Tf32Ftz => 4,
            U64 | I64 | F64 => 8,
        }
    }

    /// True for floating-point types (which allow [`TensorOobFill::NanRequestZeroFma`]).
    pub fn is_float(self) -> bool {
        use TensorDataType::*;
        matches!(self, F16 | F32 | F64 | Bf16 | F32Ftz | Tf32 | Tf32Ftz)
    }

    fn raw(self) -> sys::CUtensorMapDataType {
        use TensorDataType::*;
        use sys::CUtensorMapDataType::*;
        match self {
            U8 => CU_TENSOR_MAP_DATA_TYPE_UINT8,
            U16 => CU_TENSOR_MAP_DATA_TYPE_UINT16,
            U32 => CU_TENSOR_MAP_DATA_TYPE_UINT32,
            I32 => CU_TENSOR_MAP_DATA_TYPE_INT32,
            U64 => CU_TENSOR_MAP_DATA_TYPE_UINT64,
            I64 => CU_TENSOR_MAP_DATA_TYPE_INT64,
            F16 => CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            F32 => CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            F64 => CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
            Bf16 => CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            F32Ftz => CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
            Tf32 => CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
            Tf32Ftz => CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
        }
    }
}

/// Interleaved layouts (`CUtensorMapInterleave`), for NC/8HWC8-style tensors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TensorInterleave {
    /// Not interleaved.
    #[default]
    None,
    /// 16-byte interleave.
    B16,
    /// 32-byte interleave.
    B32,
}

/// The shared-memory swizzle of the copied box (`CUtensorMapSwizzle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TensorSwizzle {
    /// Rows as they are.
    #[default]
    None,
    /// 32-byte swizzle.
    B32,
    /// 64-byte swizzle.
    B64,
    /// 128-byte swizzle.
    B128,
}

impl TensorSwizzle {
    /// The swizzle span in bytes (`None` has none).
    fn span(self) -> Option<u64> {
        match self {
            TensorSwizzle::None => None,
            TensorSwizzle::B32 => Some(32),
            TensorSwizzle::B64 => Some(64),
            TensorSwizzle::B128 => Some(128),
        }
    }
}

/// How far reads are promoted in L2 (`CUtensorMapL2promotion`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TensorL2Promotion {
    /// No promotion.
    #[default]
    None,
    /// 64 bytes.
    B64,
    /// 128 bytes.
    B128,
    /// 256 bytes.
    B256,
}

/// What out-of-bounds elements read as (`CUtensorMapFloatOOBfill`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TensorOobFill {
    /// Zero.
    #[default]
    Zero,
    /// NaN (floating-point types only), read as zero by fused multiply-adds.
    NanRequestZeroFma,
}

/// A tensor in global memory, as a tensor map describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorLayout {
    /// The element type.
    pub data_type: TensorDataType,
    /// The device address of element 0.
    pub address: CUdeviceptr,
    /// The size of each dimension in elements, innermost first.
    pub dims: Vec<u64>,
    /// The stride in bytes of dimensions 1 and up (`dims.len() - 1` entries): the distance
    /// between consecutive rows, planes, …
    pub strides: Vec<u64>,
    /// The traversal step per dimension, 1 to 8 (empty: 1 everywhere).
    pub element_strides: Vec<u32>,
    /// The interleave.
    pub interleave: TensorInterleave,
    /// The shared-memory swizzle.
    pub swizzle: TensorSwizzle,
    /// The L2 promotion.
    pub l2_promotion: TensorL2Promotion,
    /// The out-of-bounds fill.
    pub oob_fill: TensorOobFill,
}

impl TensorLayout {
    /// A dense row-major tensor of `dims` (innermost first) at `address`: each stride is the
    /// extent of the dimensions below, no interleave, swizzle or promotion, zero fill.
    pub fn dense(data_type: TensorDataType, address: CUdeviceptr, dims: &[u64]) -> TensorLayout {
        let mut strides = Vec::with_capacity(dims.len().saturating_sub(1));
        let mut extent = data_type.size();
        for d in dims.iter().take(dims.len().saturating_sub(1)) {
            extent = extent.saturating_mul(*d);
            strides.push(extent);
        }
        TensorLayout {
            data_type,
            address,
            dims: dims.to_vec(),
            strides,
            element_strides: Vec::new(),
            interleave: TensorInterleave::None,
            swizzle: TensorSwizzle::None,
            l2_promotion: TensorL2Promotion::None,
            oob_fill: TensorOobFill::Zero,
        }
    }

    /// The element strides, 1 everywhere when none were given.
    fn element_strides(&self) -> Vec<u32> {
        if self.element_strides.is_empty() {
            vec![1; self.dims.len()]
        } else {
            self.element_strides.clone()
        }
    }

    /// Checks the rules of the tensor itself (see the module documentation); `min_rank` is 1
    /// for tiled maps and 3 for im2col.
    fn validate(&self, min_rank: usize) -> Result<()> {
        let rank = self.dims.len();
        let min_rank = if self.interleave == TensorInterleave::None {
            min_rank
        } else {
            3
        };
        if !(min_rank..=5).contains(&rank) {
            return Err(invalid(format!(
                "a tensor map's rank must be {min_rank} to 5 here, not {rank}"
            )));
        }
        let alignment = if self.interleave == TensorInterleave::B32 {
            32
        } else {
            16
        };
        if !self.address.is_multiple_of(alignment) {
            return Err(invalid(format!(
                "the tensor's address {:#x} must be aligned to {alignment} bytes",
                self.address
            )));
        }
        for (i, d) in self.dims.iter().enumerate() {
            if *d == 0 || *d > 1 << 32 {
                return Err(invalid(format!(
                    "dimension {i} has {d} elements; it must have 1 to 2^32"
                )));
            }
        }
        if self.strides.len() != rank - 1 {
            return Err(invalid(format!(
                "a rank-{rank} tensor needs {} strides (dimensions 1 and up), not {}",
                rank - 1,
                self.strides.len()
            )));
        }
        let mut extent = self.dims[0].saturating_mul(self.data_type.size());
        for (i, s) in self.strides.iter().enumerate() {
            let dim = i + 1;
            if s % alignment != 0 {
                return Err(invalid(format!(
                    "the stride of dimension {dim} ({s} bytes) must be a multiple of {alignment} bytes"
                )));
            }
            if *s >= 1 << 40 {
                return Err(invalid(format!(
                    "the stride of dimension {dim} ({s} bytes) must be below 2^40"
                )));
            }
            if *s < extent {
                return Err(invalid(format!(
                    "the stride of dimension {dim} ({s} bytes) is less than the {extent} bytes of dimension {}, so they overlap",
                    dim - 1
                )));
            }
            extent = s.saturating_mul(self.dims[dim]);
        }
        let element_strides = self.element_strides();
        if element_strides.len() != rank {
            return Err(invalid(format!(
                "a rank-{rank} tensor needs {rank} element strides, not {}",
                element_strides.len()
            )));
        }
        if let Some((i, e)) = element_strides
            .iter()
            .enumerate()
            .find(|(_, e)| !(1..=8).contains(*e))
        {
            return Err(invalid(format!(
                "element stride {i} is {e}; it must be 1 to 8"
            )));
        }
        if self.interleave == TensorInterleave::B32 && self.swizzle != TensorSwizzle::B32 {
            return Err(invalid(
                "a 32-byte interleaved tensor map needs the 32-byte swizzle".into(),
            ));
        }
        if self.oob_fill == TensorOobFill::NanRequestZeroFma && !self.data_type.is_float() {
            return Err(invalid(format!(
                "NaN out-of-bounds fill needs a floating-point type, not {:?}",
                self.data_type
            )));
        }
        Ok(())
    }

    /// Checks the innermost box extent (`inner` elements) against the interleave and swizzle
    /// rules; `what` names it in the error.
    fn validate_inner_box(&self, inner: u64, what: &str) -> Result<()> {
        if self.interleave != TensorInterleave::None {
            return Ok(());
        }
        let bytes = inner * self.data_type.size();
        if !bytes.is_multiple_of(16) {
            return Err(invalid(format!(
                "{what} is {bytes} bytes; without interleave it must be a multiple of 16 bytes"
            )));
        }
        if let Some(span) = self.swizzle.span()
            && bytes > span
        {
            return Err(invalid(format!(
                "{what} is {bytes} bytes, more than the {span}-byte swizzle span"
            )));
        }
        Ok(())
    }
}

fn invalid(what: String) -> Error {
    Error::InvalidArgument(what)
}

/// The im2col part of a tensor map: the bounding box of the filter's reads in the spatial
/// dimensions (`dims[1..rank-1]`, e.g. W, H, D of an NDHWC tensor), and the shape of one
/// copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Im2colBox {
    /// The lower corner of the bounding box per spatial dimension (`rank - 2` entries).
    pub lower_corner: Vec<i32>,
    /// The upper corner per spatial dimension.
    pub upper_corner: Vec<i32>,
    /// Channels per pixel copied, 1 to 256.
    pub channels_per_pixel: u32,
    /// Pixels per column copied, 1 to 1024.
    pub pixels_per_column: u32,
}

impl Im2colBox {
    fn validate(&self, layout: &TensorLayout) -> Result<()> {
        let rank = layout.dims.len();
        let spatial = rank - 2;
        for (name, corner) in [("lower", &self.lower_corner), ("upper", &self.upper_corner)] {
            if corner.len() != spatial {
                return Err(invalid(format!(
                    "a rank-{rank} im2col map needs {spatial} {name} corner coordinates, not {}",
                    corner.len()
                )));
            }
            // The corner's range shrinks with the rank: 16 bits in all over the spatial
            // dimensions.
            let bits = match rank {
                3 => 16,
                4 => 8,
                _ => 5,
            };
            let (min, max) = (-(1i32 << (bits - 1)), (1i32 << (bits - 1)) - 1);
            if let Some(c) = corner.iter().find(|c| !(min..=max).contains(*c)) {
                return Err(invalid(format!(
                    "{name} corner coordinate {c} is outside {min}..={max} for rank {rank}"
                )));
            }
        }
        if !(1..=256).contains(&self.channels_per_pixel) {
            return Err(invalid(format!(
                "channels per pixel is {}; it must be 1 to 256",
                self.channels_per_pixel
            )));
        }
        if !(1..=1024).contains(&self.pixels_per_column) {
            return Err(invalid(format!(
                "pixels per column is {}; it must be 1 to 1024",
                self.pixels_per_column
            )));
        }
        layout.validate_inner_box(u64::from(self.channels_per_pixel), "channels per pixel")
    }
}

/// An encoded tensor map (`CUtensorMap`, 128 bytes, 64-byte aligned), ready to be passed by
/// value to a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct TensorMap {
    raw: sys::CUtensorMap,
}

impl TensorMap {
    /// A tiled map: each copy moves a box of `box_dims` elements (innermost first) of the
    /// tensor `layout` describes (`cuTensorMapEncodeTiled`). Needs compute capability 9.0.
    pub fn encode_tiled(layout: &TensorLayout, box_dims: &[u32]) -> Result<TensorMap> {
        validate_tiled(layout, box_dims)?;
        require(FEATURE, ENTRY_POINTS)?;
        let element_strides = layout.element_strides();
        let mut map = TensorMap::zeroed();
        cu!(cuTensorMapEncodeTiled(
            &mut map.raw,
            layout.data_type.raw(),
            layout.dims.len() as u32,
            layout.address as usize as *mut std::ffi::c_void,
            layout.dims.as_ptr(),
            layout.strides.as_ptr(),
            box_dims.as_ptr(),
            element_strides.as_ptr(),
            interleave(layout.interleave),
            swizzle(layout.swizzle),
            l2_promotion(layout.l2_promotion),
            oob_fill(layout.oob_fill)
        ))?;
        Ok(map)
    }

    /// An im2col map for convolutions (`cuTensorMapEncodeIm2col`): `layout` is an
    /// N·spatial·C tensor (C innermost, rank 3 to 5).
    pub fn encode_im2col(layout: &TensorLayout, im2col: &Im2colBox) -> Result<TensorMap> {
        layout.validate(3)?;
        im2col.validate(layout)?;
        require(FEATURE, ENTRY_POINTS)?;
        let element_strides = layout.element_strides();
        let mut map = TensorMap::zeroed();
        cu!(cuTensorMapEncodeIm2col(
            &mut map.raw,
            layout.data_type.raw(),
            layout.dims.len() as u32,
            layout.address as usize as *mut std::ffi::c_void,
            layout.dims.as_ptr(),
            layout.strides.as_ptr(),
            im2col.lower_corner.as_ptr(),
            im2col.upper_corner.as_ptr(),
            im2col.channels_per_pixel,
            im2col.pixels_per_column,
            element_strides.as_ptr(),
            interleave(layout.interleave),
            swizzle(layout.swizzle),
            l2_promotion(layout.l2_promotion),
            oob_fill(layout.oob_fill)
        ))?;
        Ok(map)
    }

    fn zeroed() -> TensorMap {
        TensorMap {
            raw: sys::CUtensorMap { opaque: [0; 16] },
        }
    }

    /// The 128 bytes, as a kernel parameter takes them.
    pub fn as_bytes(&self) -> &[u8; 128] {
        bytemuck::cast_ref(&self.raw.opaque)
    }
}

/// Checks a tiled map's arguments (see the module documentation).
fn validate_tiled(layout: &TensorLayout, box_dims: &[u32]) -> Result<()> {
    layout.validate(1)?;
    let rank = layout.dims.len();
    if box_dims.len() != rank {
        return Err(invalid(format!(
            "a rank-{rank} tensor map needs {rank} box sizes, not {}",
            box_dims.len()
        )));
    }
    if let Some((i, b)) = box_dims
        .iter()
        .enumerate()
        .find(|(_, b)| !(1..=256).contains(*b))
    {
        return Err(invalid(format!("box size {i} is {b}; it must be 1 to 256")));
    }
    layout.validate_inner_box(u64::from(box_dims[0]), "the box's inner dimension")
}

fn interleave(i: TensorInterleave) -> sys::CUtensorMapInterleave {
    use sys::CUtensorMapInterleave::*;
    match i {
        TensorInterleave::None => CU_TENSOR_MAP_INTERLEAVE_NONE,
        TensorInterleave::B16 => CU_TENSOR_MAP_INTERLEAVE_16B,
        TensorInterleave::B32 => CU_TENSOR_MAP_INTERLEAVE_32B,
    }
}

fn swizzle(s: TensorSwizzle) -> sys::CUtensorMapSwizzle {
    use sys::CUtensorMapSwizzle::*;
    match s {
        TensorSwizzle::None => CU_TENSOR_MAP_SWIZZLE_NONE,
        TensorSwizzle::B32 => CU_TENSOR_MAP_SWIZZLE_32B,
        TensorSwizzle::B64 => CU_TENSOR_MAP_SWIZZLE_64B,
        TensorSwizzle::B128 => CU_TENSOR_MAP_SWIZZLE_128B,
    }
}

fn l2_promotion(p: TensorL2Promotion) -> sys::CUtensorMapL2promotion {
    use sys::CUtensorMapL2promotion::*;
    match p {
        TensorL2Promotion::None => CU_TENSOR_MAP_L2_PROMOTION_NONE,
        TensorL2Promotion::B64 => CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
        TensorL2Promotion::B128 => CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        TensorL2Promotion::B256 => CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
    }
}

fn oob_fill(f: TensorOobFill) -> sys::CUtensorMapFloatOOBfill {
    use sys::CUtensorMapFloatOOBfill::*;
    match f {
        TensorOobFill::Zero => CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        TensorOobFill::NanRequestZeroFma => CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix() -> TensorLayout {
        TensorLayout::dense(TensorDataType::F32, 0x1000, &[64, 32])
    }

    fn error(result: Result<()>) -> String {
        result.unwrap_err().to_string()
    }

    #[test]
    fn dense_layouts_have_row_major_strides() {
        let t = TensorLayout::dense(TensorDataType::F16, 0, &[8, 4, 3]);
        assert_eq!(t.strides, [16, 64]);
        assert_eq!(t.element_strides(), [1, 1, 1]);
        assert!(validate_tiled(&matrix(), &[16, 8]).is_ok());
        assert_eq!(size_of::<TensorMap>(), 128);
        assert_eq!(TensorMap::zeroed().as_bytes(), &[0u8; 128]);
    }

    #[test]
    fn rank_and_alignment_are_checked() {
        let mut t = matrix();
        t.dims = vec![2; 6];
        t.strides = vec![16; 5];
        assert!(error(t.validate(1)).contains("rank must be 1 to 5"));
        assert!(error(matrix().validate(3)).contains("rank must be 3 to 5"));
        let mut interleaved = matrix();
        interleaved.interleave = TensorInterleave::B16;
        assert!(error(interleaved.validate(1)).contains("3 to 5"));
        let mut t = matrix();
        t.address = 0x1008;
        assert!(error(t.validate(1)).contains("aligned to 16 bytes"));
    }

    #[test]
    fn strides_are_multiples_of_16_and_do_not_overlap() {
        let mut t = matrix();
        t.strides = vec![264];
        assert!(error(t.validate(1)).contains("multiple of 16"));
        t.strides = vec![128];
        assert!(error(t.validate(1)).contains("overlap"));
        t.strides = vec![1 << 40];
        assert!(error(t.validate(1)).contains("below 2^40"));
        t.strides = vec![256, 256];
        assert!(error(t.validate(1)).contains("needs 1 strides"));
        t.strides = vec![272];
        assert!(t.validate(1).is_ok(), "padded rows are fine");
        let mut t = matrix();
        t.dims[1] = 0;
        assert!(error(t.validate(1)).contains("1 to 2^32"));
    }

    #[test]
    fn boxes_element_strides_swizzle_and_fill_are_checked() {
        let t = matrix();
        assert!(error(validate_tiled(&t, &[16])).contains("needs 2 box sizes"));
        assert!(error(validate_tiled(&t, &[16, 257])).contains("1 to 256"));
        assert!(error(validate_tiled(&t, &[16, 0])).contains("1 to 256"));
        assert!(error(validate_tiled(&t, &[6, 8])).contains("24 bytes"));
        let mut swizzled = matrix();
        swizzled.swizzle = TensorSwizzle::B32;
        assert!(error(validate_tiled(&swizzled, &[16, 8])).contains("32-byte swizzle span"));
        assert!(validate_tiled(&swizzled, &[8, 8]).is_ok());
        let mut t = matrix();
        t.element_strides = vec![1, 9];
        assert!(error(t.validate(1)).contains("1 to 8"));
        t.element_strides = vec![1];
        assert!(error(t.validate(1)).contains("2 element strides"));
        let mut ints = TensorLayout::dense(TensorDataType::I32, 0, &[16, 16]);
        ints.oob_fill = TensorOobFill::NanRequestZeroFma;
        assert!(error(ints.validate(1)).contains("floating-point"));
        let mut t = TensorLayout::dense(TensorDataType::U8, 0, &[32, 4, 4]);
        t.interleave = TensorInterleave::B32;
        assert!(error(t.validate(1)).contains("32-byte swizzle"));
    }

    #[test]
    fn im2col_boxes_are_checked() {
        let nhwc = TensorLayout::dense(TensorDataType::F16, 0, &[64, 16, 16, 2]);
        let good = Im2colBox {
            lower_corner: vec![-1, -1],
            upper_corner: vec![1, 1],
            channels_per_pixel: 64,
            pixels_per_column: 128,
        };
        assert!(good.validate(&nhwc).is_ok());
        let few = Im2colBox {
            lower_corner: vec![-1],
            ..good.clone()
        };
        assert!(error(few.validate(&nhwc)).contains("2 lower corner"));
        let far = Im2colBox {
            upper_corner: vec![1, 128],
            ..good.clone()
        };
        assert!(error(far.validate(&nhwc)).contains("outside -128..=127"));
        let channels = Im2colBox {
            channels_per_pixel: 300,
            ..good.clone()
        };
        assert!(error(channels.validate(&nhwc)).contains("1 to 256"));
        let pixels = Im2colBox {
            pixels_per_column: 0,
            ..good.clone()
        };
        assert!(error(pixels.validate(&nhwc)).contains("1 to 1024"));
        let odd = Im2colBox {
            channels_per_pixel: 4,
            ..good
        };
        assert!(error(odd.validate(&nhwc)).contains("multiple of 16 bytes"));
        let e = TensorMap::encode_im2col(&matrix(), &odd_box()).unwrap_err();
        assert!(e.to_string().contains("rank must be 3 to 5"), "{e}");
    }

    fn odd_box() -> Im2colBox {
        Im2colBox {
            lower_corner: vec![],
            upper_corner: vec![],
            channels_per_pixel: 1,
            pixels_per_column: 1,
        }
    }

    #[test]
    fn invalid_maps_fail_before_the_driver() {
        // No driver is needed to refuse these: the errors are the validation's.
        let e = TensorMap::encode_tiled(&matrix(), &[3, 8]).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }
}
