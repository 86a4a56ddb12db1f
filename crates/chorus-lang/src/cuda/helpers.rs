//! The system headers and the helper functions a generated file may need. Each is emitted only
//! when the module uses it.

use crate::types::{ScalarType, VectorType};
use std::fmt::Write;

/// A system header a generated file may include.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Header {
    /// `<cuda_fp16.h>`: `__half`, `__half2` and their intrinsics.
    Fp16,
    /// `<cuda_bf16.h>`: `__nv_bfloat16`.
    Bf16,
    /// `<cuda_fp8.h>`: `__nv_fp8_e4m3`.
    Fp8,
    /// `<cuda_fp4.h>`: `__nv_fp4_e2m1`.
    Fp4,
    /// `<curand_kernel.h>`: `curandStateXORWOW_t`, `curand_init`, `curand_uniform` ….
    CurandKernel,
}

impl Header {
    /// The file name, as written between `<` and `>`.
    pub fn file_name(self) -> &'static str {
        match self {
            Header::Fp16 => "cuda_fp16.h",
            Header::Bf16 => "cuda_bf16.h",
            Header::Fp8 => "cuda_fp8.h",
            Header::Fp4 => "cuda_fp4.h",
            Header::CurandKernel => "curand_kernel.h",
        }
    }

    /// The header that declares `scalar`, if it is not built into CUDA C.
    pub(crate) fn for_scalar(scalar: ScalarType) -> Option<Header> {
        match scalar {
            ScalarType::Half => Some(Header::Fp16),
            ScalarType::BFloat16 => Some(Header::Bf16),
            ScalarType::Fp8 => Some(Header::Fp8),
            ScalarType::Fp4 => Some(Header::Fp4),
            _ => None,
        }
    }
}

/// Component-wise arithmetic on vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum VectorOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl VectorOp {
    fn name(self) -> &'static str {
        match self {
            VectorOp::Add => "add",
            VectorOp::Sub => "sub",
            VectorOp::Mul => "mul",
            VectorOp::Div => "div",
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            VectorOp::Add => "+",
            VectorOp::Sub => "-",
            VectorOp::Mul => "*",
            VectorOp::Div => "/",
        }
    }
}

/// Which operands of a binary vector operation are vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Operands {
    /// vector op vector.
    VectorVector,
    /// vector op scalar (the scalar applies to every component).
    VectorScalar,
    /// scalar op vector.
    ScalarVector,
}

/// A helper function of the generated file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Helper {
    /// `chorus_float3_add(a, b)`, `chorus_float3_mul_scalar(v, s)`, `chorus_scalar_mul_float3(s, v)`.
    VectorBinary(VectorOp, VectorType, Operands),
    /// `chorus_float3_neg(v)`.
    VectorNeg(VectorType),
    /// `chorus_float3_recip(v)`: `1 / v` component-wise.
    VectorRecip(VectorType),
    /// `chorus_float3_dot(a, b)`.
    VectorDot(VectorType),
    /// `chorus_lane_id()`: the linear thread index in the block, modulo 32.
    LaneId,
    /// `chorus_cluster_barrier()`: `barrier.cluster.arrive` then `barrier.cluster.wait`.
    ClusterBarrier,
}

/// The C spelling of a vector type's element, and the constructor of the vector.
fn vector_parts(vector: VectorType) -> (&'static str, &'static str) {
    let constructor = match vector {
        VectorType::Int2 => "make_int2",
        VectorType::Int4 => "make_int4",
        VectorType::UInt2 => "make_uint2",
        VectorType::UInt4 => "make_uint4",
        VectorType::Half2 => "__halves2half2",
        VectorType::Float2 => "make_float2",
        VectorType::Float3 => "make_float3",
        VectorType::Float4 => "make_float4",
        VectorType::Double2 => "make_double2",
        VectorType::Double3 => "make_double3",
        VectorType::Double4 => "make_double4",
    };
    (vector.element().c_name(), constructor)
}

/// The constructor of a vector type (`make_float3`, `__halves2half2`).
pub(crate) fn vector_constructor(vector: VectorType) -> &'static str {
    vector_parts(vector).1
}

/// The C spelling of `1` in `element`.
fn one(element: ScalarType) -> &'static str {
    match element {
        ScalarType::Float => "1.0f",
        ScalarType::Double => "1.0",
        ScalarType::Half => "__float2half(1.0f)",
        ScalarType::UInt => "1u",
        _ => "1",
    }
}

impl Helper {
    /// The C name of the helper.
    pub(crate) fn name(self) -> String {
        match self {
            Helper::VectorBinary(op, v, Operands::VectorVector) => {
                format!("chorus_{}_{}", v.name(), op.name())
            }
            Helper::VectorBinary(op, v, Operands::VectorScalar) => {
                format!("chorus_{}_{}_scalar", v.name(), op.name())
            }
            Helper::VectorBinary(op, v, Operands::ScalarVector) => {
                format!("chorus_scalar_{}_{}", op.name(), v.name())
            }
            Helper::VectorNeg(v) => format!("chorus_{}_neg", v.name()),
            Helper::VectorRecip(v) => format!("chorus_{}_recip", v.name()),
            Helper::VectorDot(v) => format!("chorus_{}_dot", v.name()),
            Helper::LaneId => "chorus_lane_id".into(),
            Helper::ClusterBarrier => "chorus_cluster_barrier".into(),
        }
    }

    /// The helper's definition, ending in a newline.
    pub(crate) fn definition(self) -> String {
        const PREFIX: &str = "static __device__ __forceinline__";
        let name = self.name();
        let mut out = String::new();
        match self {
            Helper::VectorBinary(op, v, operands) => {
                let (element, make) = vector_parts(v);
                let ty = v.c_name();
                let (params, left, right): (String, &str, &str) = match operands {
                    Operands::VectorVector => (format!("{ty} a, {ty} b"), "a.", "b."),
                    Operands::VectorScalar => (format!("{ty} a, {element} s"), "a.", "s"),
                    Operands::ScalarVector => (format!("{element} s, {ty} b"), "s", "b."),
                };
                let components: Vec<String> = v
                    .components()
                    .iter()
                    .map(|c| {
                        let l = if left.ends_with('.') {
                            format!("{left}{c}")
                        } else {
                            left.into()
                        };
                        let r = if right.ends_with('.') {
                            format!("{right}{c}")
                        } else {
                            right.into()
                        };
                        format!("({l} {} {r})", op.symbol())
                    })
                    .collect();
                let _ = write!(
                    out,
                    "{PREFIX} {ty} {name}({params})\n{{\n  return {make}({});\n}}\n",
                    components.join(", ")
                );
            }
            Helper::VectorNeg(v) | Helper::VectorRecip(v) => {
                let make = vector_constructor(v);
                let ty = v.c_name();
                let components: Vec<String> = v
                    .components()
                    .iter()
                    .map(|c| match self {
                        Helper::VectorNeg(_) => format!("-(a.{c})"),
                        _ => format!("({} / a.{c})", one(v.element())),
                    })
                    .collect();
                let _ = write!(
                    out,
                    "{PREFIX} {ty} {name}({ty} a)\n{{\n  return {make}({});\n}}\n",
                    components.join(", ")
                );
            }
            Helper::VectorDot(v) => {
                let (element, _) = vector_parts(v);
                let ty = v.c_name();
                let mut sum = String::new();
                for (i, c) in v.components().iter().enumerate() {
                    let term = format!("(a.{c} * b.{c})");
                    sum = if i == 0 {
                        term
                    } else {
                        format!("({sum} + {term})")
                    };
                }
                let _ = write!(
                    out,
                    "{PREFIX} {element} {name}({ty} a, {ty} b)\n{{\n  return {sum};\n}}\n"
                );
            }
            Helper::LaneId => {
                // Warps are formed from the linear thread index (x fastest), so this is the lane
                // on every block shape.
                let _ = write!(
                    out,
                    "{PREFIX} int {name}()\n{{\n  return (int)((threadIdx.x + (blockDim.x * (threadIdx.y + (blockDim.y * threadIdx.z)))) & 31u);\n}}\n"
                );
            }
            Helper::ClusterBarrier => {
                // What cooperative_groups::this_cluster().sync() does, without the header.
                let _ = write!(
                    out,
                    "{PREFIX} void {name}()\n{{\n  asm volatile(\"barrier.cluster.arrive;\\n\\tbarrier.cluster.wait;\" ::: \"memory\");\n}}\n"
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_helpers_are_component_wise() {
        let add = Helper::VectorBinary(VectorOp::Add, VectorType::Float3, Operands::VectorVector);
        assert_eq!(
            add.definition(),
            "static __device__ __forceinline__ float3 chorus_float3_add(float3 a, float3 b)\n{\n  \
             return make_float3((a.x + b.x), (a.y + b.y), (a.z + b.z));\n}\n"
        );
        let scale =
            Helper::VectorBinary(VectorOp::Mul, VectorType::Double2, Operands::ScalarVector);
        assert_eq!(scale.name(), "chorus_scalar_mul_double2");
        assert!(scale.definition().contains("(double s, double2 b)"));
        assert!(
            scale
                .definition()
                .contains("make_double2((s * b.x), (s * b.y))")
        );
        let dot = Helper::VectorDot(VectorType::Float4);
        assert!(
            dot.definition()
                .contains("return ((((a.x * b.x) + (a.y * b.y)) + (a.z * b.z)) + (a.w * b.w));")
        );
        assert!(
            Helper::VectorRecip(VectorType::Int2)
                .definition()
                .contains("(1 / a.x)")
        );
    }
}
