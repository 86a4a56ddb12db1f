//! Lowering of the warp-level tensor-core built-ins (`chorus_lang::ir::tensor`).

use super::*;
use chorus_lang::ir::tensor::{PairFormat, TensorOp};

impl FnCompiler<'_> {
    /// `mma-sync`, `ldmatrix`, `cp-async` and its groups. The copies complete when they run
    /// (the executor has nothing to overlap them with); commits and waits tell the executor
    /// when a GPU would have them, so that an access before then faults
    /// (`exec::async_copies`).
    pub(super) fn tensor(&mut self, e: &Expr, op: TensorOp, args: &[Expr]) -> Result<Reg> {
        match op {
            TensorOp::Mma(kind) => {
                let [a, b, c] = self.args(e, args)?;
                self.span = e.span.clone();
                let dst = self.alloc(4);
                self.emit(Op::Mma { kind, dst, a, b, c });
                Ok(dst)
            }
            TensorOp::LdMatrix { count, trans } => {
                let [addr] = self.args(e, args)?;
                self.span = e.span.clone();
                let dst = self.alloc(u32::from(count));
                self.emit(Op::LdMatrix {
                    count,
                    trans,
                    dst,
                    addr,
                });
                Ok(dst)
            }
            TensorOp::CpAsync { bytes, .. } => {
                let [dst, src] = self.args(e, args)?;
                self.span = e.span.clone();
                self.emit(Op::CpAsync { dst, src, bytes });
                Ok(0)
            }
            TensorOp::CpAsyncCommit => {
                self.emit(Op::CpAsyncCommit);
                Ok(0)
            }
            TensorOp::CpAsyncWait(groups) => {
                self.emit(Op::CpAsyncWait(groups));
                Ok(0)
            }
            TensorOp::CpAsyncWaitAll => {
                self.emit(Op::CpAsyncWaitAll);
                Ok(0)
            }
            // Each half rounded as a cast to the 16-bit type (nearest even); their registers
            // hold the bits, which the shift and the or place as cvt.rn.*x2.f32 does.
            TensorOp::Pack(format) => {
                let [lo, hi] = self.args(e, args)?;
                self.span = e.span.clone();
                let half = match format {
                    PairFormat::Bf16 => Kind::BF16,
                    PairFormat::F16 => Kind::F16,
                };
                let (lo16, hi16, sixteen, upper, dst) = (
                    self.alloc(1),
                    self.alloc(1),
                    self.constant(16),
                    self.alloc(1),
                    self.alloc(1),
                );
                for (dst, src) in [(lo16, lo), (hi16, hi)] {
                    self.emit(Op::Convert {
                        from: Kind::F32,
                        to: half,
                        dst,
                        src,
                    });
                }
                self.emit(Op::Binary {
                    op: BinOp::Shl,
                    kind: Kind::U32,
                    dst: upper,
                    a: hi16,
                    b: sixteen,
                });
                self.emit(Op::Binary {
                    op: BinOp::BitOr,
                    kind: Kind::U32,
                    dst,
                    a: upper,
                    b: lo16,
                });
                Ok(dst)
            }
        }
    }
}
