//! Lane values: how every scalar kernel type is held in a 64-bit lane slot, and the C
//! conversions between them.
//!
//! A register holds one "leaf" scalar per lane as 64 bits in canonical form: signed integers
//! sign-extended, unsigned integers and `bool` (0 or 1) zero-extended, `float` and `double` as
//! their IEEE bits, `half`, `bfloat16`, `fp8` and `fp4` as their raw bits in the low bits, and
//! pointers as an encoded (allocation, offset) pair (see [`crate::memory`]). Vectors, structures
//! and cuRAND states are several leaves in consecutive registers.

use chorus_lang::types::{ScalarType, Type};
use chorus_minifloat::{Fp4E2M1, Fp8E4M3};
use half::{bf16, f16};

/// The representation class of one leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    BF16,
    Fp8,
    Fp4,
    F32,
    F64,
    Ptr,
}

impl Kind {
    /// The kind of a scalar, `bool` or pointer type; `None` for composites and `void`.
    pub(crate) fn of(ty: &Type) -> Option<Kind> {
        Some(match ty {
            Type::Bool => Kind::Bool,
            Type::Pointer(_) => Kind::Ptr,
            Type::Scalar(s) => Kind::of_scalar(*s),
            // 64-bit handles, resolved by the texture and surface instructions.
            Type::TextureObject | Type::SurfaceObject => Kind::U64,
            _ => return None,
        })
    }

    /// The kind of a scalar type (`size-t` is a 64-bit unsigned integer).
    pub(crate) fn of_scalar(s: ScalarType) -> Kind {
        match s {
            ScalarType::Int8 => Kind::I8,
            ScalarType::UInt8 => Kind::U8,
            ScalarType::Int16 => Kind::I16,
            ScalarType::UInt16 => Kind::U16,
            ScalarType::Int => Kind::I32,
            ScalarType::UInt => Kind::U32,
            ScalarType::Int64 => Kind::I64,
            ScalarType::UInt64 | ScalarType::SizeT => Kind::U64,
            ScalarType::Half => Kind::F16,
            ScalarType::BFloat16 => Kind::BF16,
            ScalarType::Fp8 => Kind::Fp8,
            ScalarType::Fp4 => Kind::Fp4,
            ScalarType::Float => Kind::F32,
            ScalarType::Double => Kind::F64,
        }
    }

    /// Bytes the leaf occupies in memory.
    pub(crate) fn size(self) -> usize {
        match self {
            Kind::Bool | Kind::I8 | Kind::U8 | Kind::Fp8 | Kind::Fp4 => 1,
            Kind::I16 | Kind::U16 | Kind::F16 | Kind::BF16 => 2,
            Kind::I32 | Kind::U32 | Kind::F32 => 4,
            Kind::I64 | Kind::U64 | Kind::F64 | Kind::Ptr => 8,
        }
    }

    pub(crate) fn is_signed(self) -> bool {
        matches!(self, Kind::I8 | Kind::I16 | Kind::I32 | Kind::I64)
    }

    pub(crate) fn is_unsigned(self) -> bool {
        matches!(self, Kind::U8 | Kind::U16 | Kind::U32 | Kind::U64)
    }

    pub(crate) fn is_integer(self) -> bool {
        self.is_signed() || self.is_unsigned()
    }

    /// `half`, `bfloat16`, `fp8` and `fp4`: computed in `f32` and rounded back.
    pub(crate) fn is_narrow_float(self) -> bool {
        matches!(self, Kind::F16 | Kind::BF16 | Kind::Fp8 | Kind::Fp4)
    }

    pub(crate) fn is_float(self) -> bool {
        self.is_narrow_float() || matches!(self, Kind::F32 | Kind::F64)
    }

    /// Width in bits that C's shift operators work in after integer promotion.
    pub(crate) fn shift_width(self) -> u64 {
        if self.size() == 8 { 64 } else { 32 }
    }
}

/// Truncates an integer result to the width of `kind` and extends it back to canonical form.
#[inline(always)]
pub(crate) fn canon(kind: Kind, v: u64) -> u64 {
    match kind {
        Kind::I8 => v as i8 as i64 as u64,
        Kind::U8 => v as u8 as u64,
        Kind::I16 => v as i16 as i64 as u64,
        Kind::U16 => v as u16 as u64,
        Kind::I32 => v as i32 as i64 as u64,
        Kind::U32 => v as u32 as u64,
        Kind::Bool => (v != 0) as u64,
        _ => v,
    }
}

/// Canonical form of `size` raw little-endian bits loaded from memory.
#[inline(always)]
pub(crate) fn from_raw(kind: Kind, raw: u64) -> u64 {
    match kind {
        Kind::Fp4 => raw & 0xf,
        _ => canon(kind, raw),
    }
}

/// The value of a floating leaf as `f32` (exact for every narrow type).
#[inline(always)]
pub(crate) fn to_f32(kind: Kind, bits: u64) -> f32 {
    match kind {
        Kind::F32 => f32::from_bits(bits as u32),
        Kind::F64 => f64::from_bits(bits) as f32,
        Kind::F16 => f16::from_bits(bits as u16).to_f32(),
        Kind::BF16 => bf16::from_bits(bits as u16).to_f32(),
        Kind::Fp8 => Fp8E4M3(bits as u8).to_f32(),
        Kind::Fp4 => Fp4E2M1(bits as u8).to_f32(),
        _ => to_f64(kind, bits) as f32,
    }
}

/// Rounds an `f32` to a floating leaf of `kind` (round to nearest even, as CUDA's `_rn`
/// conversions; `fp8`/`fp4` saturate to their largest finite value).
#[inline(always)]
pub(crate) fn from_f32(kind: Kind, v: f32) -> u64 {
    match kind {
        Kind::F32 => v.to_bits() as u64,
        Kind::F64 => (v as f64).to_bits(),
        Kind::F16 => f16::from_f32(v).to_bits() as u64,
        Kind::BF16 => bf16::from_f32(v).to_bits() as u64,
        Kind::Fp8 => u64::from(Fp8E4M3::from_f64(f64::from(v)).0),
        Kind::Fp4 => u64::from(Fp4E2M1::from_f64(f64::from(v)).0),
        _ => from_f64(kind, v as f64),
    }
}

/// The value of any numeric leaf as `f64` (integers exactly where `f64` can).
#[inline(always)]
pub(crate) fn to_f64(kind: Kind, bits: u64) -> f64 {
    match kind {
        Kind::F64 => f64::from_bits(bits),
        Kind::F32 | Kind::F16 | Kind::BF16 | Kind::Fp8 | Kind::Fp4 => to_f32(kind, bits) as f64,
        k if k.is_signed() => bits as i64 as f64,
        _ => bits as f64,
    }
}

/// Converts an `f64` to a leaf of `kind` with C's rules: floats round to nearest even,
/// integers truncate toward zero and saturate at the type's range (NaN gives 0), as CUDA's
/// `cvt.rzi` does; `bool` is "not zero".
pub(crate) fn from_f64(kind: Kind, v: f64) -> u64 {
    match kind {
        Kind::F64 => v.to_bits(),
        Kind::F32 => (v as f32).to_bits() as u64,
        Kind::F16 => f16::from_f64(v).to_bits() as u64,
        Kind::BF16 => bf16::from_f64(v).to_bits() as u64,
        Kind::Fp8 => u64::from(Fp8E4M3::from_f64(v).0),
        Kind::Fp4 => u64::from(Fp4E2M1::from_f64(v).0),
        Kind::Bool => (v != 0.0) as u64,
        Kind::I8 => v as i8 as i64 as u64,
        Kind::I16 => v as i16 as i64 as u64,
        Kind::I32 => v as i32 as i64 as u64,
        Kind::I64 => v as i64 as u64,
        Kind::U8 => v as u8 as u64,
        Kind::U16 => v as u16 as u64,
        Kind::U32 => v as u32 as u64,
        Kind::U64 | Kind::Ptr => v as u64,
    }
}

/// C's conversion of a leaf from `from` to `to`.
pub(crate) fn convert(from: Kind, to: Kind, bits: u64) -> u64 {
    if from == to {
        return bits;
    }
    if to == Kind::Bool {
        return if from.is_float() {
            (to_f64(from, bits) != 0.0) as u64
        } else {
            (bits != 0) as u64
        };
    }
    let from_int = from.is_integer() || matches!(from, Kind::Bool | Kind::Ptr);
    let to_int = to.is_integer() || to == Kind::Ptr;
    match (from_int, to_int) {
        (true, true) => canon(to, bits),
        (true, false) => {
            // Integer to floating: round once, from the exact integer.
            let signed = from.is_signed();
            match to {
                Kind::F32 => (if signed {
                    bits as i64 as f32
                } else {
                    bits as f32
                })
                .to_bits() as u64,
                _ => from_f64(
                    to,
                    if signed {
                        bits as i64 as f64
                    } else {
                        bits as f64
                    },
                ),
            }
        }
        (false, _) => {
            if from == Kind::F32 && to.is_narrow_float() {
                from_f32(to, f32::from_bits(bits as u32))
            } else {
                from_f64(to, to_f64(from, bits))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_conversions() {
        let neg1 = (-1i64) as u64;
        assert_eq!(convert(Kind::I32, Kind::U32, neg1), 0xffff_ffff);
        assert_eq!(convert(Kind::I32, Kind::U64, neg1), u64::MAX);
        assert_eq!(convert(Kind::U32, Kind::I8, 0x1ff), neg1);
        assert_eq!(
            convert(Kind::F32, Kind::I32, (-2.7f32).to_bits() as u64),
            (-2i64) as u64
        );
        assert_eq!(convert(Kind::F32, Kind::I32, f32::NAN.to_bits() as u64), 0);
        assert_eq!(convert(Kind::F64, Kind::U8, 300.0f64.to_bits()), 255);
        assert_eq!(convert(Kind::F32, Kind::U32, (-5.0f32).to_bits() as u64), 0);
        assert_eq!(
            convert(Kind::I32, Kind::F16, 3),
            f16::from_f32(3.0).to_bits() as u64
        );
        assert_eq!(
            convert(Kind::F16, Kind::F32, 0x3c00),
            1.0f32.to_bits() as u64
        );
        assert_eq!(
            convert(Kind::F32, Kind::Bool, (-0.0f32).to_bits() as u64),
            0
        );
        assert_eq!(
            convert(Kind::U64, Kind::F32, u64::MAX),
            (u64::MAX as f32).to_bits() as u64
        );
    }
}
