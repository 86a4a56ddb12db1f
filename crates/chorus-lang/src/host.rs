//! Host representations of kernel types, with the device's size and alignment.
//!
//! A value of a type implementing [`KernelValue`] can live in a memory block, be passed to a
//! kernel by value, and be read back bit for bit. `half` and `bfloat16` are [`half::f16`] and
//! [`half::bf16`]; `fp8` and `fp4` are raw bit patterns ([`Fp8E4M3`], [`Fp4E2M1`]) with CUDA's
//! conversions (the one codec of the kernel language: its constant folding and the CPU
//! executor use it).

use crate::types::{ScalarType, Type, VectorType};
use bytemuck::{Pod, Zeroable};

pub use half::{bf16, f16};

/// A Rust type whose bytes are a valid value of a kernel type.
///
/// # Safety
/// `Self` must have exactly the size and alignment of [`KernelValue::kernel_type`] on the
/// device, and every bit pattern the device can produce must be a valid `Self` (hence `Pod`).
pub unsafe trait KernelValue: Pod {
    /// The kernel type this Rust type represents.
    fn kernel_type() -> Type;

    /// For a structure (a `defkernel-struct`'s host type), its definition last, after those of
    /// the structures its fields hold: what a target with other layout rules (Metal's) needs to
    /// lay the value out again. Empty for every other type.
    fn struct_defs() -> Vec<crate::ir::StructDef> {
        Vec::new()
    }
}

macro_rules! scalar_values {
    ($($rust:ty => $scalar:ident),* $(,)?) => {$(
        // SAFETY: sizes and alignments match the CUDA scalar types (checked in the tests below).
        unsafe impl KernelValue for $rust {
            fn kernel_type() -> Type {
                Type::Scalar(ScalarType::$scalar)
            }
        }
    )*};
}

scalar_values! {
    i8 => Int8, u8 => UInt8, i16 => Int16, u16 => UInt16, i32 => Int, u32 => UInt,
    i64 => Int64, u64 => UInt64, f16 => Half, bf16 => BFloat16, f32 => Float, f64 => Double,
}

/// `size-t` on the host. (`usize` is not used for `u64` so that `u64` stays `uint64`.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Pod, Zeroable)]
#[repr(transparent)]
pub struct SizeT(pub u64);
// SAFETY: 8 bytes, 8-aligned, like size_t on every 64-bit CUDA target.
unsafe impl KernelValue for SizeT {
    fn kernel_type() -> Type {
        Type::Scalar(ScalarType::SizeT)
    }
}

/// `fp8` (`__nv_fp8_e4m3`) as its raw bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
#[repr(transparent)]
pub struct Fp8E4M3(pub u8);
// SAFETY: one byte.
unsafe impl KernelValue for Fp8E4M3 {
    fn kernel_type() -> Type {
        Type::Scalar(ScalarType::Fp8)
    }
}

impl Fp8E4M3 {
    /// The largest finite value, 448 (`0x7e`); larger values and infinities saturate to it.
    pub const MAX: f32 = 448.0;

    /// `x` rounded as `__nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E4M3)`: to nearest even,
    /// finite overflow and infinities to ±448 (`0x7e`), NaN to `0x7f`.
    pub fn from_f64(x: f64) -> Self {
        if x.is_nan() {
            return Fp8E4M3(0x7f);
        }
        let sign = if x.is_sign_negative() { 0x80 } else { 0 };
        Fp8E4M3(sign | minifloat_code(x.abs(), 3, 7, 0x7e))
    }

    /// The value (exact in `f32`; E4M3 has no infinities, `0x7f` and `0xff` are NaN).
    pub fn to_f32(self) -> f32 {
        if self.0 & 0x7f == 0x7f {
            return f32::NAN;
        }
        let magnitude = minifloat_value(self.0 & 0x7f, 3, 7);
        if self.0 & 0x80 != 0 {
            -magnitude
        } else {
            magnitude
        }
    }
}

/// `fp4` (`__nv_fp4_e2m1`) as its raw bits (the low four bits of one byte).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
#[repr(transparent)]
pub struct Fp4E2M1(pub u8);
// SAFETY: one byte.
unsafe impl KernelValue for Fp4E2M1 {
    fn kernel_type() -> Type {
        Type::Scalar(ScalarType::Fp4)
    }
}

impl Fp4E2M1 {
    /// The largest finite value, 6 (`0x7`); E2M1 has no infinity or NaN.
    pub const MAX: f32 = 6.0;

    /// `x` rounded as `__nv_cvt_double_to_fp4(x, __NV_E2M1, cudaRoundNearest)`: to nearest
    /// even, saturating to ±6; NaN gives `0x7` (+6).
    pub fn from_f64(x: f64) -> Self {
        if x.is_nan() {
            return Fp4E2M1(0x7);
        }
        let sign = if x.is_sign_negative() { 8 } else { 0 };
        Fp4E2M1(sign | minifloat_code(x.abs(), 1, 1, 7))
    }

    /// The value of the low four bits (exact in `f32`).
    pub fn to_f32(self) -> f32 {
        let magnitude = minifloat_value(self.0 & 7, 1, 1);
        if self.0 & 8 != 0 {
            -magnitude
        } else {
            magnitude
        }
    }
}

/// The code of `a` (not NaN, not negative) in a small float format with `mantissa_bits` and
/// exponent `bias`, whose codes 0 to `max_code` are its finite non-negative values in order:
/// rounded to the nearest, ties to the even code, saturating at `max_code`. Within a binade
/// (the subnormals are the first) the values are evenly spaced and the codes consecutive, so
/// the code is the binade's first code plus `a` rounded to the binade's spacing; rounding up
/// past the binade's last value lands on the next binade's first code.
fn minifloat_code(a: f64, mantissa_bits: i32, bias: i32, max_code: u8) -> u8 {
    let steps = 1i32 << mantissa_bits;
    let (lowest, highest) = (1 - bias, i32::from(max_code) / steps - bias);
    // The binade of `a` (the subnormals share the lowest's spacing), within the format's and
    // corrected where log2 is off by one ulp near a power of two.
    let mut exp = (a.log2().floor() as i32).clamp(lowest, highest + 1);
    if exp > lowest && 2f64.powi(exp) > a {
        exp -= 1;
    } else if exp <= highest && 2f64.powi(exp + 1) <= a {
        exp += 1;
    }
    let spacing = 2f64.powi(exp - mantissa_bits);
    let code = f64::from((exp + bias - 1) * steps) + (a / spacing).round_ties_even();
    code.min(f64::from(max_code)) as u8
}

/// The value of non-negative `code` in the format of [`minifloat_code`] (exact in `f32`).
fn minifloat_value(code: u8, mantissa_bits: i32, bias: i32) -> f32 {
    let (exponent, mantissa) = (
        i32::from(code) >> mantissa_bits,
        i32::from(code) & ((1 << mantissa_bits) - 1),
    );
    let significand = if exponent == 0 {
        mantissa
    } else {
        mantissa + (1 << mantissa_bits)
    };
    significand as f32 * 2f32.powi(exponent.max(1) - bias - mantissa_bits)
}

/// `bool` is not `Pod` (only 0 and 1 are valid), so kernels see it through this byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
#[repr(transparent)]
pub struct Bool8(pub u8);
impl From<bool> for Bool8 {
    fn from(b: bool) -> Bool8 {
        Bool8(b as u8)
    }
}
impl From<Bool8> for bool {
    fn from(b: Bool8) -> bool {
        b.0 != 0
    }
}
// SAFETY: one byte, as C++ `bool`.
unsafe impl KernelValue for Bool8 {
    fn kernel_type() -> Type {
        Type::Bool
    }
}

macro_rules! vector_values {
    ($($(#[$doc:meta])* $name:ident($elem:ty, $align:literal) [$($field:ident),+] => $vt:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
        #[repr(C, align($align))]
        pub struct $name {
            $(
                #[allow(missing_docs)]
                pub $field: $elem,
            )+
        }
        impl $name {
            /// A vector from its components.
            pub const fn new($($field: $elem),+) -> $name {
                $name { $($field),+ }
            }
        }
        // SAFETY: `repr(C)` with the CUDA alignment; the layout test checks size and alignment.
        unsafe impl KernelValue for $name {
            fn kernel_type() -> Type {
                Type::Vector(VectorType::$vt)
            }
        }
    )*};
}

vector_values! {
    /// `int2`.
    Int2(i32, 8) [x, y] => Int2;
    /// `int4`.
    Int4(i32, 16) [x, y, z, w] => Int4;
    /// `uint2`.
    UInt2(u32, 8) [x, y] => UInt2;
    /// `uint4`.
    UInt4(u32, 16) [x, y, z, w] => UInt4;
    /// `half2` (`__half2`).
    Half2(f16, 4) [x, y] => Half2;
    /// `float2`.
    Float2(f32, 8) [x, y] => Float2;
    /// `float3` (12 bytes, 4-aligned).
    Float3(f32, 4) [x, y, z] => Float3;
    /// `float4` (16-aligned, as in CUDA).
    Float4(f32, 16) [x, y, z, w] => Float4;
    /// `double2`.
    Double2(f64, 16) [x, y] => Double2;
    /// `double3` (24 bytes, 8-aligned).
    Double3(f64, 8) [x, y, z] => Double3;
    /// `double4` (32 bytes, 16-aligned).
    Double4(f64, 16) [x, y, z, w] => Double4;
}

/// cuRAND's `curandStateXORWOW_t`, opaque on the host (48 bytes, 8-aligned).
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct CurandStateXorwow {
    /// Weyl sequence counter.
    pub d: u32,
    /// The xorshift state.
    pub v: [u32; 5],
    /// Box–Muller flag for floats.
    pub boxmuller_flag: i32,
    /// Box–Muller flag for doubles.
    pub boxmuller_flag_double: i32,
    /// Spare normal for floats.
    pub boxmuller_extra: f32,
    /// Padding as in C.
    pub _pad: u32,
    /// Spare normal for doubles.
    pub boxmuller_extra_double: f64,
}
// SAFETY: layout of curandStateXORWOW (48 bytes, 8-aligned), checked below.
unsafe impl KernelValue for CurandStateXorwow {
    fn kernel_type() -> Type {
        Type::CurandStateXorwow
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, size_of};

    fn check<T: KernelValue>() {
        let (size, align) = T::kernel_type().layout(&[]).unwrap();
        assert_eq!(
            (size_of::<T>(), align_of::<T>()),
            (size, align),
            "{}",
            T::kernel_type()
        );
    }

    #[test]
    fn host_layouts_match_device_layouts() {
        check::<i8>();
        check::<u8>();
        check::<i16>();
        check::<u16>();
        check::<i32>();
        check::<u32>();
        check::<i64>();
        check::<u64>();
        check::<SizeT>();
        check::<f16>();
        check::<bf16>();
        check::<Fp8E4M3>();
        check::<Fp4E2M1>();
        check::<f32>();
        check::<f64>();
        check::<Bool8>();
        check::<Int2>();
        check::<Int4>();
        check::<UInt2>();
        check::<UInt4>();
        check::<Half2>();
        check::<Float2>();
        check::<Float3>();
        check::<Float4>();
        check::<Double2>();
        check::<Double3>();
        check::<Double4>();
        check::<CurandStateXorwow>();
    }

    fn fp8(x: f64) -> u8 {
        Fp8E4M3::from_f64(x).0
    }

    fn fp4(x: f64) -> u8 {
        Fp4E2M1::from_f64(x).0
    }

    /// The nearest code by exhaustive search, ties to the even code, saturating past the
    /// largest finite value: the definition the arithmetic conversions must meet.
    fn nearest_code(x: f64, codes: u8, value: impl Fn(u8) -> f32, largest: (f64, u8)) -> u8 {
        let negative = x.is_sign_negative();
        let sign = if codes == 16 { 8 } else { 0x80 };
        if x.abs() >= largest.0 {
            return largest.1 | if negative { sign } else { 0 };
        }
        let mut best: Option<(u8, f64)> = None;
        for code in 0..codes {
            let v = f64::from(value(code));
            if v.is_nan() || v.is_sign_negative() != negative {
                continue;
            }
            let d = (v - x).abs();
            if best.is_none_or(|(b, bd)| d < bd || (d == bd && code & 1 == 0 && b & 1 == 1)) {
                best = Some((code, d));
            }
        }
        best.map_or(0, |(code, _)| code)
    }

    #[test]
    fn fp8_rounds_to_nearest_even_and_saturates() {
        assert_eq!(fp8(0.0), 0x00);
        assert_eq!(fp8(-0.0), 0x80);
        assert_eq!(fp8(1.0), 0x38);
        assert_eq!(fp8(1.5), 0x3C);
        assert_eq!(fp8(-2.0), 0xc0);
        assert_eq!(fp8(448.0), 0x7e);
        assert_eq!(fp8(460.0), 0x7e);
        assert_eq!(fp8(464.0), 0x7e);
        assert_eq!(fp8(1e9), 0x7e);
        assert_eq!(fp8(-1e300), 0xfe);
        assert_eq!(fp8(f64::INFINITY), 0x7e);
        assert_eq!(fp8(f64::NEG_INFINITY), 0xfe);
        assert_eq!(fp8(f64::NAN), 0x7f);
        // Smallest subnormal 2^-9, half of it rounds to even (0), a bit more rounds up.
        assert_eq!(fp8((2.0f64).powi(-9)), 0x01);
        assert_eq!(fp8((2.0f64).powi(-10)), 0x00);
        assert_eq!(fp8((2.0f64).powi(-10) * 1.01), 0x01);
        // 1.0625 is halfway between 1.0 (even) and 1.125.
        assert_eq!(fp8(1.0625), 0x38);
        assert_eq!(fp8(1.1875), 0x3a);
        // 0.3 → 0.3125 (exponent -2, mantissa 010).
        assert_eq!(fp8(0.3), 0x2a);
        assert_eq!(Fp8E4M3(0x2a).to_f32(), 0.3125);
        assert_eq!(Fp8E4M3::MAX, Fp8E4M3(0x7e).to_f32());
        for b in 0..=255u8 {
            if b & 0x7f == 0x7f {
                assert!(Fp8E4M3(b).to_f32().is_nan());
                continue;
            }
            assert_eq!(fp8(f64::from(Fp8E4M3(b).to_f32())), b, "code {b:#x}");
        }
    }

    #[test]
    fn fp4_rounds_to_nearest_even_and_saturates() {
        let cases = [
            (0.0, 0x0),
            (0.25, 0x0),
            (0.3, 0x1),
            (0.75, 0x2),
            (1.25, 0x2),
            (1.3, 0x3),
            (1.5, 0x3),
            (2.5, 0x4),
            (2.6, 0x5),
            (-3.0, 0xD),
            (5.0, 0x6),
            (5.5, 0x7),
            (6.0, 0x7),
            (100.0, 0x7),
            (-1.0, 0xa),
            (-100.0, 0xf),
            (f64::INFINITY, 0x7),
            (f64::NEG_INFINITY, 0xF),
            (f64::NAN, 0x7),
        ];
        for (x, code) in cases {
            assert_eq!(fp4(x), code, "{x}");
        }
        assert_eq!(Fp4E2M1::MAX, Fp4E2M1(7).to_f32());
        let magnitudes: Vec<f32> = (0..8).map(|b| Fp4E2M1(b).to_f32()).collect();
        assert_eq!(magnitudes, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
        assert_eq!(Fp8E4M3(0x01).to_f32(), 2f32.powi(-9));
        assert_eq!(Fp8E4M3(0x08).to_f32(), 2f32.powi(-6));
        assert_eq!(Fp8E4M3(0xb8).to_f32(), -1.0);
        for b in 0..16u8 {
            assert_eq!(fp4(f64::from(Fp4E2M1(b).to_f32())), b);
        }
    }

    /// Between and around every pair of neighbouring codes (their midpoints, a hair either
    /// side, and a grid across the whole range), the arithmetic equals the exhaustive search.
    #[test]
    fn conversions_equal_the_nearest_code_search() {
        let fp8_value = |c: u8| Fp8E4M3(c).to_f32();
        let fp4_value = |c: u8| Fp4E2M1(c).to_f32();
        let mut values: Vec<f64> = (-5000..=5000).map(|i| f64::from(i) * 0.0973).collect();
        for code in 0..=0x7eu8 {
            let v = f64::from(fp8_value(code));
            let next = f64::from(fp8_value(code + 1));
            let mid = if next.is_nan() {
                v + 8.0
            } else {
                (v + next) / 2.0
            };
            values.extend([v, mid, mid * (1.0 + 1e-12), mid * (1.0 - 1e-12)]);
        }
        for x in values.iter().flat_map(|&v| [v, -v]) {
            assert_eq!(
                fp8(x),
                nearest_code(x, 255, fp8_value, (448.0, 0x7e)),
                "fp8 {x}"
            );
            let small = x / 64.0;
            assert_eq!(
                fp4(small),
                nearest_code(small, 16, fp4_value, (6.0, 0x7)),
                "fp4 {small}"
            );
        }
    }
}
