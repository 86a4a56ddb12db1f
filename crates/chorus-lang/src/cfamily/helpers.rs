//! The helper functions a printed file may need, each emitted only when the module uses it.
//! Their names are the printer's (all start with `chorus_`); their definitions the dialect's.

use super::hopper::HopperHelper;
use crate::ir::tensor::TensorOp;
use crate::types::{ScalarType, VectorType};

/// Component-wise arithmetic on vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VectorOp {
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
}

impl VectorOp {
    /// The word in helper names (`add`).
    pub fn name(self) -> &'static str {
        match self {
            VectorOp::Add => "add",
            VectorOp::Sub => "sub",
            VectorOp::Mul => "mul",
            VectorOp::Div => "div",
        }
    }

    /// The C operator (`+`).
    pub fn symbol(self) -> &'static str {
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
pub enum Operands {
    /// vector op vector.
    VectorVector,
    /// vector op scalar (the scalar applies to every component).
    VectorScalar,
    /// scalar op vector.
    ScalarVector,
}

/// A helper function of the generated file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Helper {
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
    /// `chorus_floor_mod_int(a, b)`: the flooring remainder (`floor-mod`) of a signed integer
    /// or floating type.
    FloorMod(ScalarType),
    /// A tensor-core operation's inline PTX (`cfamily/tensor.rs`): `chorus_mma_m16n8k16_bf16`
    /// …, CUDA only.
    Tensor(TensorOp),
    /// A helper of the Hopper built-ins (`cfamily/hopper.rs`): inline PTX, and the types
    /// of tensor maps and wgmma accumulators.
    Hopper(HopperHelper),
}

impl Helper {
    /// The helper's name in the printed text.
    pub fn name(self) -> String {
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
            Helper::FloorMod(s) => format!("chorus_floor_mod_{}", s.name().replace('-', "_")),
            Helper::Tensor(op) => super::tensor::helper_name(op),
            Helper::Hopper(h) => h.name(),
        }
    }
}
