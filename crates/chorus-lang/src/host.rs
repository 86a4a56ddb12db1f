//! Host representations of kernel types, with the device's size and alignment.
//!
//! A value of a type implementing [`KernelValue`] can live in a memory block, be passed to a
//! kernel by value, and be read back bit for bit. `half` and `bfloat16` are [`half::f16`] and
//! [`half::bf16`]; `fp8` and `fp4` are raw bit patterns ([`Fp8E4M3`], [`Fp4E2M1`], from
//! `chorus-minifloat`, which the CUDA library bindings share) with CUDA's conversions (constant
//! folding and the CPU executor use them too).

use crate::types::{ScalarType, Type, VectorType};
use bytemuck::{Pod, Zeroable};

pub use chorus_minifloat::{Fp4E2M1, Fp8E4M3};
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

// SAFETY: one byte.
unsafe impl KernelValue for Fp8E4M3 {
    fn kernel_type() -> Type {
        Type::Scalar(ScalarType::Fp8)
    }
}

// SAFETY: one byte.
unsafe impl KernelValue for Fp4E2M1 {
    fn kernel_type() -> Type {
        Type::Scalar(ScalarType::Fp4)
    }
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
}
