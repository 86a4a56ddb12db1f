//! The warp-level tensor-core operations (sm_80 and newer): `mma.sync`, `ldmatrix` and
//! `cp.async`, as one IR operation [`Builtin::Tensor`](super::Builtin::Tensor) with a
//! [`TensorOp`], and the fragment layouts that say which lane holds which matrix element.
//!
//! The layouts are PTX's (PTX ISA, "Matrix fragments for mma.m16n8k8", "… for mma.m16n8k16
//! with floating point type", "… for mma.m16n8k32"; "Warp-level matrix load instruction:
//! ldmatrix"). With `g = lane / 4` (the group) and `t = lane % 4` (the thread in the group),
//! every accumulator `C`/`D` of the m16n8 shapes holds elements `c0..c3` at row `g + 8 (i / 2)`,
//! column `2 t + i % 2`. The CPU executor gathers and scatters with [`MmaKind::coordinate`]; the
//! GPU has the same layout by construction, so the two agree element for element.

use crate::types::{ScalarType, Type, VectorType};

/// One tensor-core operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TensorOp {
    /// `(mma-sync :SHAPE :TYPE a b c)` → `mma.sync.aligned.SHAPE.row.col…`: `D = A·B + C`
    /// over the 32 lanes of a warp, each lane holding its fragment of A, B and C.
    Mma(MmaKind),
    /// `(ldmatrix :xN [:trans] p)` → `ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16`:
    /// `count` 8×8 matrices of 16-bit elements, each row's address given by one lane.
    LdMatrix {
        /// 1, 2 or 4 matrices.
        count: u8,
        /// `.trans`: each matrix is delivered transposed.
        trans: bool,
    },
    /// `(cp-async dst src BYTES [:ca|:cg])` → `cp.async.ca|cg.shared.global`.
    CpAsync {
        /// 4, 8 or 16 bytes.
        bytes: u8,
        /// `.cg`: cache at the L2 only (16 bytes only); `.ca` (false) caches at all levels.
        global_only: bool,
    },
    /// `(cp-async-commit)` → `cp.async.commit_group`.
    CpAsyncCommit,
    /// `(cp-async-wait N)` → `cp.async.wait_group N`: wait until at most `N` of this
    /// thread's committed groups are pending.
    CpAsyncWait(u8),
    /// `(cp-async-wait-all)` → `cp.async.wait_all`.
    CpAsyncWaitAll,
    /// `(pack-bf16x2 lo hi)`, `(pack-f16x2 lo hi)` → `cvt.rn.bf16x2.f32` / `cvt.rn.f16x2.f32`:
    /// two floats rounded to nearest even and packed into one 32-bit register (a `uint`), `lo`
    /// in bits 0–15, as an mma fragment holds the lower column: the accumulator of one
    /// `mma-sync` becomes the A operand of the next without a trip through memory.
    Pack(PairFormat),
}

/// The 16-bit format of a packed pair ([`TensorOp::Pack`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PairFormat {
    /// IEEE half.
    F16,
    /// bfloat16.
    Bf16,
}

impl PairFormat {
    /// Both formats.
    pub const ALL: [PairFormat; 2] = [PairFormat::F16, PairFormat::Bf16];

    /// As PTX spells the format (`bf16`), which the built-in's name carries (`pack-bf16x2`).
    pub fn name(self) -> &'static str {
        match self {
            PairFormat::F16 => "f16",
            PairFormat::Bf16 => "bf16",
        }
    }
}

/// The type `ldmatrix` returns for `count` matrices: one 32-bit register per matrix (`uint`,
/// `uint2`, `uint4`), holding two 16-bit elements, the lower column in the low half.
pub fn ldmatrix_type(count: u8) -> Type {
    match count {
        1 => Type::Scalar(ScalarType::UInt),
        2 => Type::Vector(VectorType::UInt2),
        _ => Type::Vector(VectorType::UInt4),
    }
}

/// An `mma.sync` shape (M×N×K).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MmaShape {
    /// 16×8×8.
    M16N8K8,
    /// 16×8×16.
    M16N8K16,
    /// 16×8×32.
    M16N8K32,
}

impl MmaShape {
    /// Every shape.
    pub const ALL: [MmaShape; 3] = [MmaShape::M16N8K8, MmaShape::M16N8K16, MmaShape::M16N8K32];

    /// The keyword without its colon (`m16n8k16`), as PTX spells it.
    pub fn name(self) -> &'static str {
        match self {
            MmaShape::M16N8K8 => "m16n8k8",
            MmaShape::M16N8K16 => "m16n8k16",
            MmaShape::M16N8K32 => "m16n8k32",
        }
    }

    /// `(m, n, k)`.
    pub fn dims(self) -> (u32, u32, u32) {
        match self {
            MmaShape::M16N8K8 => (16, 8, 8),
            MmaShape::M16N8K16 => (16, 8, 16),
            MmaShape::M16N8K32 => (16, 8, 32),
        }
    }
}

/// The element type of an `mma.sync`'s A and B operands (and with it the accumulator's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MmaInput {
    /// IEEE half, f32 accumulation.
    F16,
    /// bfloat16, f32 accumulation.
    Bf16,
    /// TensorFloat-32 (an f32 of which the hardware reads the top 19 bits), f32 accumulation.
    Tf32,
    /// fp8 E4M3 (OCP), f32 accumulation; sm_89 and newer.
    E4m3,
    /// fp8 E5M2 (OCP), f32 accumulation; sm_89 and newer.
    E5m2,
    /// Signed 8-bit integers, s32 accumulation (wrapping).
    S8,
    /// Unsigned 8-bit integers, s32 accumulation (wrapping).
    U8,
}

impl MmaInput {
    /// Every input type.
    pub const ALL: [MmaInput; 7] = [
        MmaInput::F16,
        MmaInput::Bf16,
        MmaInput::Tf32,
        MmaInput::E4m3,
        MmaInput::E5m2,
        MmaInput::S8,
        MmaInput::U8,
    ];

    /// The keyword without its colon (`bf16`), as PTX spells the type.
    pub fn name(self) -> &'static str {
        match self {
            MmaInput::F16 => "f16",
            MmaInput::Bf16 => "bf16",
            MmaInput::Tf32 => "tf32",
            MmaInput::E4m3 => "e4m3",
            MmaInput::E5m2 => "e5m2",
            MmaInput::S8 => "s8",
            MmaInput::U8 => "u8",
        }
    }

    /// Bits per element in a fragment register.
    pub fn bits(self) -> u32 {
        match self {
            MmaInput::F16 | MmaInput::Bf16 => 16,
            MmaInput::Tf32 => 32,
            MmaInput::E4m3 | MmaInput::E5m2 | MmaInput::S8 | MmaInput::U8 => 8,
        }
    }

    /// True for the integer inputs (s32 accumulators).
    pub fn is_integer(self) -> bool {
        matches!(self, MmaInput::S8 | MmaInput::U8)
    }
}

/// Which operand of an `mma.sync` a fragment is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MmaOperand {
    /// The M×K multiplicand (row-major: `.row`).
    A,
    /// The K×N multiplicand (column-major: `.col`).
    B,
    /// The M×N accumulator (C in, D out).
    C,
}

/// A supported `mma.sync`: a shape with an input type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MmaKind {
    /// M×N×K.
    pub shape: MmaShape,
    /// A's and B's element type.
    pub input: MmaInput,
}

impl MmaKind {
    /// Every supported combination: f16 and bf16 at m16n8k8 and m16n8k16, tf32 at m16n8k8,
    /// the fp8 and 8-bit integer types at m16n8k32.
    pub const ALL: [MmaKind; 9] = [
        MmaKind::new(MmaShape::M16N8K16, MmaInput::F16),
        MmaKind::new(MmaShape::M16N8K16, MmaInput::Bf16),
        MmaKind::new(MmaShape::M16N8K8, MmaInput::F16),
        MmaKind::new(MmaShape::M16N8K8, MmaInput::Bf16),
        MmaKind::new(MmaShape::M16N8K8, MmaInput::Tf32),
        MmaKind::new(MmaShape::M16N8K32, MmaInput::E4m3),
        MmaKind::new(MmaShape::M16N8K32, MmaInput::E5m2),
        MmaKind::new(MmaShape::M16N8K32, MmaInput::S8),
        MmaKind::new(MmaShape::M16N8K32, MmaInput::U8),
    ];

    /// The kind of `shape` and `input` (not necessarily supported: see [`MmaKind::find`]).
    pub const fn new(shape: MmaShape, input: MmaInput) -> MmaKind {
        MmaKind { shape, input }
    }

    /// The supported kind of `shape` and `input`, if there is one.
    pub fn find(shape: MmaShape, input: MmaInput) -> Option<MmaKind> {
        MmaKind::ALL
            .into_iter()
            .find(|k| k.shape == shape && k.input == input)
    }

    /// 32-bit registers per lane of `operand`'s fragment.
    pub fn registers(self, operand: MmaOperand) -> u32 {
        let (m, n, k) = self.shape.dims();
        let bits = self.input.bits();
        match operand {
            MmaOperand::A => m * k * bits / (32 * 32),
            MmaOperand::B => k * n * bits / (32 * 32),
            MmaOperand::C => 4,
        }
    }

    /// Elements per lane of `operand`'s fragment (registers × elements per register).
    pub fn elements(self, operand: MmaOperand) -> u32 {
        match operand {
            MmaOperand::C => 4,
            other => self.registers(other) * 32 / self.input.bits(),
        }
    }

    /// The kernel type of `operand`'s fragment: `uint`, `uint2` or `uint4` of packed elements
    /// (lowest bits first) for the 16- and 8-bit types, `float4`/`float2` for tf32's A and B
    /// (one element each), `float4` (or `int4` for the integer types) for the accumulators.
    pub fn fragment_type(self, operand: MmaOperand) -> Type {
        let regs = self.registers(operand);
        match operand {
            MmaOperand::C if self.input.is_integer() => Type::Vector(VectorType::Int4),
            MmaOperand::C => Type::Vector(VectorType::Float4),
            _ if self.input == MmaInput::Tf32 => Type::Vector(match regs {
                2 => VectorType::Float2,
                _ => VectorType::Float4,
            }),
            _ => match regs {
                1 => Type::Scalar(ScalarType::UInt),
                2 => Type::Vector(VectorType::UInt2),
                _ => Type::Vector(VectorType::UInt4),
            },
        }
    }

    /// The `(row, column)` of element `i` of `lane`'s fragment of `operand` (PTX's layout;
    /// elements are numbered in register order, lowest bits first within a register). Rows
    /// and columns are those of A (M×K), B (K×N) or C (M×N).
    pub fn coordinate(self, operand: MmaOperand, lane: u32, i: u32) -> (u32, u32) {
        let (g, t) = (lane / 4, lane % 4);
        let high = |bit: u32, by: u32| if i & bit != 0 { by } else { 0 };
        match (operand, self.input.bits(), self.shape) {
            (MmaOperand::C, ..) => (g + high(2, 8), 2 * t + i % 2),
            // f16/bf16, m16n8k16: a0..a7, b0..b3.
            (MmaOperand::A, 16, MmaShape::M16N8K16) => (g + high(2, 8), 2 * t + i % 2 + high(4, 8)),
            (MmaOperand::B, 16, MmaShape::M16N8K16) => (2 * t + i % 2 + high(2, 8), g),
            // f16/bf16, m16n8k8: a0..a3, b0..b1.
            (MmaOperand::A, 16, _) => (g + high(2, 8), 2 * t + i % 2),
            (MmaOperand::B, 16, _) => (2 * t + i % 2, g),
            // tf32, m16n8k8: a0..a3, b0..b1, one per register.
            (MmaOperand::A, 32, _) => (g + high(1, 8), t + high(2, 4)),
            (MmaOperand::B, 32, _) => (t + high(1, 4), g),
            // 8-bit types, m16n8k32: a0..a15, b0..b7.
            (MmaOperand::A, _, _) => (g + high(4, 8), 4 * t + i % 4 + high(8, 16)),
            (MmaOperand::B, _, _) => (4 * t + i % 4 + high(4, 16), g),
        }
    }

    /// The PTX instruction (`mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`).
    pub fn ptx(self) -> String {
        let acc = if self.input.is_integer() {
            "s32"
        } else {
            "f32"
        };
        let ty = self.input.name();
        format!(
            "mma.sync.aligned.{}.row.col.{acc}.{ty}.{ty}.{acc}",
            self.shape.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element of every operand is held by exactly one (lane, element) pair.
    #[test]
    fn every_layout_is_a_bijection() {
        for kind in MmaKind::ALL {
            let (m, n, k) = kind.shape.dims();
            for (operand, rows, cols) in [
                (MmaOperand::A, m, k),
                (MmaOperand::B, k, n),
                (MmaOperand::C, m, n),
            ] {
                let mut seen = vec![0u32; (rows * cols) as usize];
                for lane in 0..32 {
                    for i in 0..kind.elements(operand) {
                        let (r, c) = kind.coordinate(operand, lane, i);
                        assert!(r < rows && c < cols, "{kind:?} {operand:?}");
                        seen[(r * cols + c) as usize] += 1;
                    }
                }
                assert!(seen.iter().all(|&s| s == 1), "{kind:?} {operand:?}");
            }
        }
    }

    #[test]
    fn layouts_match_the_ptx_tables() {
        let bf16 = MmaKind::new(MmaShape::M16N8K16, MmaInput::Bf16);
        // Lane 5: group 1, thread 1. a4 is row 1, column 2·1 + 0 + 8; a7 row 9, column 11.
        assert_eq!(bf16.coordinate(MmaOperand::A, 5, 4), (1, 10));
        assert_eq!(bf16.coordinate(MmaOperand::A, 5, 7), (9, 11));
        assert_eq!(bf16.coordinate(MmaOperand::B, 5, 3), (11, 1));
        let s8 = MmaKind::new(MmaShape::M16N8K32, MmaInput::S8);
        // Lane 6: group 1, thread 2. a9 (of a8-a11) is row 1, a13 (of a12-a15) row 9; both
        // column 4·2 + 1 + 16.
        assert_eq!(s8.coordinate(MmaOperand::A, 6, 9), (1, 25));
        assert_eq!(s8.coordinate(MmaOperand::A, 6, 13), (9, 25));
        assert_eq!(s8.coordinate(MmaOperand::B, 6, 5), (4 * 2 + 1 + 16, 1));
        assert_eq!(s8.registers(MmaOperand::A), 4);
        assert_eq!(s8.registers(MmaOperand::B), 2);
        let tf32 = MmaKind::new(MmaShape::M16N8K8, MmaInput::Tf32);
        assert_eq!(tf32.coordinate(MmaOperand::A, 7, 3), (9, 7));
        assert_eq!(
            tf32.ptx(),
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
        );
    }
}
