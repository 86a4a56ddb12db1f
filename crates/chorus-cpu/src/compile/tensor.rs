//! Lowering of the warp-level tensor-core built-ins (`chorus_lang::ir::tensor`).

use super::*;
use chorus_lang::ir::tensor::TensorOp;

impl FnCompiler<'_> {
    /// `mma-sync`, `ldmatrix`, `cp-async` and its groups. The copies complete when they run
    /// (the executor has nothing to overlap them with), so committing and waiting are no-ops:
    /// a kernel that reads its destination before `cp-async-wait` races on a GPU and reads the
    /// copied data here.
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
            TensorOp::CpAsyncCommit | TensorOp::CpAsyncWait(_) | TensorOp::CpAsyncWaitAll => Ok(0),
        }
    }
}
