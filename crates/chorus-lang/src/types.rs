//! Kernel types: names as the kernel language spells them, sizes and alignments
//! (the CUDA ABI's, which the host types in [`crate::host`] reproduce).

use std::fmt;
use std::sync::Arc;

/// A scalar kernel type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    /// `int8`: `signed char`.
    Int8,
    /// `uint8`: `unsigned char`.
    UInt8,
    /// `int16`: `short`.
    Int16,
    /// `uint16`: `unsigned short`.
    UInt16,
    /// `int`: `int`.
    Int,
    /// `uint`: `unsigned int`.
    UInt,
    /// `int64`: `long long`.
    Int64,
    /// `uint64`: `unsigned long long`.
    UInt64,
    /// `size-t`: `size_t` (64-bit on every supported target).
    SizeT,
    /// `half`: `__half`.
    Half,
    /// `bfloat16`: `__nv_bfloat16`.
    BFloat16,
    /// `fp8`: `__nv_fp8_e4m3`.
    Fp8,
    /// `fp4`: `__nv_fp4_e2m1`.
    Fp4,
    /// `float`.
    Float,
    /// `double`.
    Double,
}

impl ScalarType {
    /// Every scalar type, in declaration order.
    pub const ALL: [ScalarType; 15] = [
        ScalarType::Int8,
        ScalarType::UInt8,
        ScalarType::Int16,
        ScalarType::UInt16,
        ScalarType::Int,
        ScalarType::UInt,
        ScalarType::Int64,
        ScalarType::UInt64,
        ScalarType::SizeT,
        ScalarType::Half,
        ScalarType::BFloat16,
        ScalarType::Fp8,
        ScalarType::Fp4,
        ScalarType::Float,
        ScalarType::Double,
    ];

    /// The kernel-language name (`size-t`, `bfloat16`).
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Int8 => "int8",
            ScalarType::UInt8 => "uint8",
            ScalarType::Int16 => "int16",
            ScalarType::UInt16 => "uint16",
            ScalarType::Int => "int",
            ScalarType::UInt => "uint",
            ScalarType::Int64 => "int64",
            ScalarType::UInt64 => "uint64",
            ScalarType::SizeT => "size-t",
            ScalarType::Half => "half",
            ScalarType::BFloat16 => "bfloat16",
            ScalarType::Fp8 => "fp8",
            ScalarType::Fp4 => "fp4",
            ScalarType::Float => "float",
            ScalarType::Double => "double",
        }
    }

    /// Parses a kernel-language name.
    pub fn from_name(name: &str) -> Option<ScalarType> {
        ScalarType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Size in bytes on the device (and of the host representation).
    pub fn size(self) -> usize {
        match self {
            ScalarType::Int8 | ScalarType::UInt8 | ScalarType::Fp8 | ScalarType::Fp4 => 1,
            ScalarType::Int16 | ScalarType::UInt16 | ScalarType::Half | ScalarType::BFloat16 => 2,
            ScalarType::Int | ScalarType::UInt | ScalarType::Float => 4,
            ScalarType::Int64 | ScalarType::UInt64 | ScalarType::SizeT | ScalarType::Double => 8,
        }
    }

    /// Alignment in bytes (equal to the size for every scalar).
    pub fn align(self) -> usize {
        self.size()
    }

    /// True for the integer types (signed or not).
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            ScalarType::Int8
                | ScalarType::UInt8
                | ScalarType::Int16
                | ScalarType::UInt16
                | ScalarType::Int
                | ScalarType::UInt
                | ScalarType::Int64
                | ScalarType::UInt64
                | ScalarType::SizeT
        )
    }

    /// True for the signed integer types.
    pub fn is_signed_integer(self) -> bool {
        matches!(
            self,
            ScalarType::Int8 | ScalarType::Int16 | ScalarType::Int | ScalarType::Int64
        )
    }

    /// True for `float` and `double`.
    pub fn is_float(self) -> bool {
        matches!(self, ScalarType::Float | ScalarType::Double)
    }

    /// True for the reduced-precision floating types (`half`, `bfloat16`, `fp8`, `fp4`), whose
    /// device spellings come from `cuda_fp16.h` and friends.
    pub fn is_extended_float(self) -> bool {
        matches!(
            self,
            ScalarType::Half | ScalarType::BFloat16 | ScalarType::Fp8 | ScalarType::Fp4
        )
    }
}

/// A CUDA vector type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VectorType {
    /// `int2`.
    Int2,
    /// `int4`.
    Int4,
    /// `uint2`.
    UInt2,
    /// `uint4`.
    UInt4,
    /// `half2`: `__half2`.
    Half2,
    /// `float2`.
    Float2,
    /// `float3`.
    Float3,
    /// `float4` (16-byte aligned).
    Float4,
    /// `double2`.
    Double2,
    /// `double3`.
    Double3,
    /// `double4` (16-byte aligned).
    Double4,
}

impl VectorType {
    /// Every vector type.
    pub const ALL: [VectorType; 11] = [
        VectorType::Int2,
        VectorType::Int4,
        VectorType::UInt2,
        VectorType::UInt4,
        VectorType::Half2,
        VectorType::Float2,
        VectorType::Float3,
        VectorType::Float4,
        VectorType::Double2,
        VectorType::Double3,
        VectorType::Double4,
    ];

    /// The kernel-language name (`float4`).
    pub fn name(self) -> &'static str {
        match self {
            VectorType::Int2 => "int2",
            VectorType::Int4 => "int4",
            VectorType::UInt2 => "uint2",
            VectorType::UInt4 => "uint4",
            VectorType::Half2 => "half2",
            VectorType::Float2 => "float2",
            VectorType::Float3 => "float3",
            VectorType::Float4 => "float4",
            VectorType::Double2 => "double2",
            VectorType::Double3 => "double3",
            VectorType::Double4 => "double4",
        }
    }

    /// Parses a kernel-language name.
    pub fn from_name(name: &str) -> Option<VectorType> {
        VectorType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The element type.
    pub fn element(self) -> ScalarType {
        match self {
            VectorType::Int2 | VectorType::Int4 => ScalarType::Int,
            VectorType::UInt2 | VectorType::UInt4 => ScalarType::UInt,
            VectorType::Half2 => ScalarType::Half,
            VectorType::Float2 | VectorType::Float3 | VectorType::Float4 => ScalarType::Float,
            VectorType::Double2 | VectorType::Double3 | VectorType::Double4 => ScalarType::Double,
        }
    }

    /// Number of components (2, 3 or 4).
    // A vector type always has components: an `is_empty` would only ever answer false.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(self) -> usize {
        match self {
            VectorType::Int2
            | VectorType::UInt2
            | VectorType::Half2
            | VectorType::Float2
            | VectorType::Double2 => 2,
            VectorType::Float3 | VectorType::Double3 => 3,
            VectorType::Int4 | VectorType::UInt4 | VectorType::Float4 | VectorType::Double4 => 4,
        }
    }

    /// Component names, in order (`x y z w`).
    pub fn components(self) -> &'static [&'static str] {
        &["x", "y", "z", "w"][..self.len()]
    }

    /// Size in bytes.
    pub fn size(self) -> usize {
        self.element().size() * self.len()
    }

    /// Alignment in bytes, as CUDA's `vector_types.h` declares it (`float3` is 4, `float4` 16,
    /// `double4` 16).
    pub fn align(self) -> usize {
        match self {
            VectorType::Float3 => 4,
            VectorType::Double3 => 8,
            VectorType::Double4 => 16,
            other => other.size(),
        }
    }
}

/// A kernel type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// `void`: only as a function result.
    Void,
    /// `bool`.
    Bool,
    /// A scalar number type.
    Scalar(ScalarType),
    /// A vector type.
    Vector(VectorType),
    /// A pointer (`float*`, `int**`).
    Pointer(Box<Type>),
    /// A `defkernel-struct` structure, by its kernel-language name. Its layout is in the
    /// module's [`crate::ir::StructDef`].
    Struct(Arc<str>),
    /// cuRAND's `curandStateXORWOW_t` (48 bytes, 8-byte aligned).
    CurandStateXorwow,
    /// `texture-object`: a texture object (CUDA's `cudaTextureObject_t`, a 64-bit handle), read
    /// with `tex1d-fetch`, `tex1d`, `tex2d` and `tex3d`.
    TextureObject,
    /// `surface-object`: a surface object (CUDA's `cudaSurfaceObject_t`, a 64-bit handle), read
    /// and written with `surf1d-read` … `surf3d-write`.
    SurfaceObject,
    /// `tensor-map`: a TMA tensor map (CUDA's `CUtensorMap`, 128 bytes, 64-byte aligned), only
    /// as a kernel parameter (`__grid_constant__`), read by the `tma-*` built-ins through its
    /// address.
    TensorMap,
    /// `wgmma-f32-m64nN`: one thread's part of a warpgroup's 64×N `f32` accumulator (N/2
    /// registers), for N in 8, 16 … 256 ([`is_wgmma_n`]).
    WgmmaAccumulator(u16),
}

impl Type {
    /// `int`.
    pub const INT: Type = Type::Scalar(ScalarType::Int);
    /// `uint`.
    pub const UINT: Type = Type::Scalar(ScalarType::UInt);
    /// `float`.
    pub const FLOAT: Type = Type::Scalar(ScalarType::Float);
    /// `double`.
    pub const DOUBLE: Type = Type::Scalar(ScalarType::Double);

    /// A pointer to `self`.
    pub fn pointer_to(self) -> Type {
        Type::Pointer(Box::new(self))
    }

    /// Parses a type name as the kernel language spells it: a base name followed by any number
    /// of `*` (`float*`, `pair**`). `is_struct` says which other names are structure types.
    pub fn parse(name: &str, is_struct: impl Fn(&str) -> bool) -> Option<Type> {
        let base = name.trim_end_matches('*');
        let depth = name.len() - base.len();
        let mut ty = match base {
            "void" => Type::Void,
            "bool" => Type::Bool,
            "curand-state-xorwow" => Type::CurandStateXorwow,
            "texture-object" => Type::TextureObject,
            "surface-object" => Type::SurfaceObject,
            "tensor-map" => Type::TensorMap,
            _ => {
                if let Some(n) = wgmma_accumulator_n(base) {
                    Type::WgmmaAccumulator(n)
                } else if let Some(s) = ScalarType::from_name(base) {
                    Type::Scalar(s)
                } else if let Some(v) = VectorType::from_name(base) {
                    Type::Vector(v)
                } else if is_struct(base) {
                    Type::Struct(Arc::from(base))
                } else {
                    return None;
                }
            }
        };
        for _ in 0..depth {
            ty = ty.pointer_to();
        }
        Some(ty)
    }

    /// The pointee, if this is a pointer.
    pub fn pointee(&self) -> Option<&Type> {
        match self {
            Type::Pointer(t) => Some(t),
            _ => None,
        }
    }

    /// Number of `*` in the type.
    pub fn pointer_depth(&self) -> usize {
        match self {
            Type::Pointer(t) => 1 + t.pointer_depth(),
            _ => 0,
        }
    }

    /// The scalar type, if this is a scalar.
    pub fn scalar(&self) -> Option<ScalarType> {
        match self {
            Type::Scalar(s) => Some(*s),
            _ => None,
        }
    }

    /// True for integer scalars.
    pub fn is_integer(&self) -> bool {
        self.scalar().is_some_and(ScalarType::is_integer)
    }
}

impl fmt::Display for Type {
    /// The kernel-language spelling (`float*`, `size-t`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Void => write!(f, "void"),
            Type::Bool => write!(f, "bool"),
            Type::Scalar(s) => write!(f, "{}", s.name()),
            Type::Vector(v) => write!(f, "{}", v.name()),
            Type::Pointer(t) => write!(f, "{t}*"),
            Type::Struct(name) => write!(f, "{name}"),
            Type::CurandStateXorwow => write!(f, "curand-state-xorwow"),
            Type::TextureObject => write!(f, "texture-object"),
            Type::SurfaceObject => write!(f, "surface-object"),
            Type::TensorMap => write!(f, "tensor-map"),
            Type::WgmmaAccumulator(n) => write!(f, "{WGMMA_ACCUMULATOR_PREFIX}{n}"),
        }
    }
}

/// The N (columns of B and D) a `wgmma` accumulator may have: 8 to 256 in steps of 8, every
/// shape PTX ISA 8.0 defines for `.f32` accumulation of `bf16`, `f16`, `e4m3` and `e5m2`.
pub fn is_wgmma_n(n: u16) -> bool {
    (8..=256).contains(&n) && n.is_multiple_of(8)
}

/// The start of the accumulator type names (`wgmma-f32-m64n256`).
pub const WGMMA_ACCUMULATOR_PREFIX: &str = "wgmma-f32-m64n";

/// The N of an accumulator type name (`wgmma-f32-m64n256` → 256), when it is one.
pub fn wgmma_accumulator_n(name: &str) -> Option<u16> {
    let digits = name.strip_prefix(WGMMA_ACCUMULATOR_PREFIX)?;
    if digits.starts_with('0') {
        return None;
    }
    digits.parse().ok().filter(|n| is_wgmma_n(*n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pointers_of_any_depth() {
        let t = Type::parse("float**", |_| false).unwrap();
        assert_eq!(t.pointer_depth(), 2);
        assert_eq!(t.to_string(), "float**");
        assert_eq!(
            Type::parse("size-t", |_| false),
            Some(Type::Scalar(ScalarType::SizeT))
        );
        assert_eq!(
            Type::parse("pair*", |n| n == "pair").unwrap().to_string(),
            "pair*"
        );
        assert_eq!(Type::parse("nosuch", |_| false), None);
        assert_eq!(
            Type::parse("wgmma-f32-m64n256*", |_| false),
            Some(Type::WgmmaAccumulator(256).pointer_to())
        );
        for bad in ["wgmma-f32-m64n12", "wgmma-f32-m64n264", "wgmma-f32-m64n064"] {
            assert_eq!(Type::parse(bad, |_| false), None, "{bad}");
        }
        assert_eq!(Type::WgmmaAccumulator(64).to_string(), "wgmma-f32-m64n64");
        assert_eq!(Type::parse("tensor-map", |_| false), Some(Type::TensorMap));
    }

    #[test]
    fn vector_layouts_match_cuda() {
        assert_eq!(
            (VectorType::Float3.size(), VectorType::Float3.align()),
            (12, 4)
        );
        assert_eq!(
            (VectorType::Float4.size(), VectorType::Float4.align()),
            (16, 16)
        );
        assert_eq!(
            (VectorType::Double3.size(), VectorType::Double3.align()),
            (24, 8)
        );
        assert_eq!(
            (VectorType::Double4.size(), VectorType::Double4.align()),
            (32, 16)
        );
        assert_eq!((VectorType::Int2.size(), VectorType::Int2.align()), (8, 8));
        assert_eq!(
            (VectorType::Half2.size(), VectorType::Half2.align()),
            (4, 4)
        );
    }
}
