//! The warp-level tensor-core built-ins (sm_80): their keywords, fragment types and operands.
//!
//! | kernel text | result | PTX |
//! |---|---|---|
//! | `(mma-sync :m16n8k16 :bf16 a b c)` | the accumulator `d` | `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` |
//! | `(ldmatrix :x4 p)`, `(ldmatrix :x2 :trans p)` | `uint4`, `uint2`, `uint` | `ldmatrix.sync.aligned.m8n8.x4.shared.b16` |
//! | `(cp-async dst src 16 [:cg])` | none | `cp.async.cg.shared.global [dst], [src], 16` |
//! | `(cp-async-commit)`, `(cp-async-wait N)`, `(cp-async-wait-all)` | none | `cp.async.commit_group` … |
//! | `(pack-bf16x2 lo hi)`, `(pack-f16x2 lo hi)` | `uint` | `cvt.rn.bf16x2.f32 d, hi, lo` |
//!
//! Fragments are ordinary vector values, typed by [`MmaKind::fragment_type`]: A, B and the
//! accumulator of `(mma-sync :m16n8k16 :bf16 …)` are `uint4`, `uint2` and `float4`. The shape and
//! the input type are keywords, so the checker knows each operand's type and a wrong fragment is
//! an error at its form, not an assembler message. Capabilities ([`Capability::TensorCores`],
//! [`Capability::Fp8TensorCores`], [`Capability::AsyncCopy`]) are checked by
//! [`validate`](super::validate) at each call.
//!
//! [`Capability::TensorCores`]: crate::target::Capability::TensorCores
//! [`Capability::Fp8TensorCores`]: crate::target::Capability::Fp8TensorCores
//! [`Capability::AsyncCopy`]: crate::target::Capability::AsyncCopy

use super::builtins::Signature;
use super::expr::resolve_among;
use super::{FnCx, consts, err, node};
use crate::error::Result;
use crate::form::Form;
use crate::ir::tensor::{
    MmaInput, MmaKind, MmaOperand, MmaShape, PairFormat, TensorOp, ldmatrix_type,
};
use crate::ir::{Builtin, Expr, ExprKind};
use crate::span::Span;
use crate::types::Type;

/// The names of the tensor-core built-ins.
pub const NAMES: [&str; 8] = [
    "mma-sync",
    "ldmatrix",
    "cp-async",
    "cp-async-commit",
    "cp-async-wait",
    "cp-async-wait-all",
    "pack-bf16x2",
    "pack-f16x2",
];

/// True for the tensor-core built-ins, which the checker's `FnCx::tensor_builtin` checks.
pub fn is_tensor_builtin(name: &str) -> bool {
    NAMES.contains(&name)
}

/// The kernel-language name of `op` (`mma-sync`), for messages.
pub fn name_of(op: TensorOp) -> &'static str {
    match op {
        TensorOp::Mma(_) => "mma-sync",
        TensorOp::LdMatrix { .. } => "ldmatrix",
        TensorOp::CpAsync { .. } => "cp-async",
        TensorOp::CpAsyncCommit => "cp-async-commit",
        TensorOp::CpAsyncWait(_) => "cp-async-wait",
        TensorOp::CpAsyncWaitAll => "cp-async-wait-all",
        TensorOp::Pack(PairFormat::Bf16) => "pack-bf16x2",
        TensorOp::Pack(PairFormat::F16) => "pack-f16x2",
    }
}

/// The signature of `(mma-sync KIND a b c)`: `(A, B, C) → C`.
pub fn mma_signature(kind: MmaKind) -> Signature {
    let acc = kind.fragment_type(MmaOperand::C);
    Signature {
        op: Builtin::Tensor(TensorOp::Mma(kind)),
        params: vec![
            kind.fragment_type(MmaOperand::A),
            kind.fragment_type(MmaOperand::B),
            acc.clone(),
        ],
        result: acc,
    }
}

/// Splits the leading keywords (`:m16n8k16 :bf16`) off `args`.
fn keywords(args: &[Form]) -> (Vec<(&str, &Span)>, &[Form]) {
    let n = args
        .iter()
        .take_while(|a| a.as_symbol().is_some_and(|s| s.starts_with(':')))
        .count();
    let words = args[..n]
        .iter()
        .map(|a| (a.as_symbol().unwrap_or_default(), &a.span))
        .collect();
    (words, &args[n..])
}

impl FnCx<'_> {
    /// A call of a tensor-core built-in (`head` is one of [`NAMES`]).
    pub(super) fn tensor_builtin(&mut self, head: &str, args: &[Form], f: &Form) -> Result<Expr> {
        match head {
            "mma-sync" => self.mma_sync(args, f),
            "ldmatrix" => self.ldmatrix(args, f),
            "cp-async" => self.cp_async(args, f),
            "pack-bf16x2" => self.pack(PairFormat::Bf16, args, f),
            "pack-f16x2" => self.pack(PairFormat::F16, args, f),
            "cp-async-wait" => {
                let [n] = args else {
                    return err(
                        &f.span,
                        "`cp-async-wait` takes the number of groups that may stay pending: (cp-async-wait 1)",
                    );
                };
                let n = self.small_constant(head, n, 0..=7)?;
                Ok(self.void(TensorOp::CpAsyncWait(n), f))
            }
            _ => {
                if !args.is_empty() {
                    return err(&f.span, format!("`{head}` takes no arguments"));
                }
                let op = if head == "cp-async-commit" {
                    TensorOp::CpAsyncCommit
                } else {
                    TensorOp::CpAsyncWaitAll
                };
                Ok(self.void(op, f))
            }
        }
    }

    /// A statement-like built-in without operands.
    fn void(&self, op: TensorOp, f: &Form) -> Expr {
        node(
            ExprKind::Builtin {
                op: Builtin::Tensor(op),
                args: Vec::new(),
            },
            Type::Void,
            &f.span,
        )
    }

    /// An integer constant in `range`, written at `form`.
    fn small_constant(
        &mut self,
        head: &str,
        form: &Form,
        range: std::ops::RangeInclusive<u8>,
    ) -> Result<u8> {
        let e = self.expr(form)?;
        match consts::int_value(&e).and_then(|v| u8::try_from(v).ok()) {
            Some(v) if range.contains(&v) => Ok(v),
            _ => err(
                &form.span,
                format!(
                    "`{head}` needs an integer constant from {} to {} here, got `{form}`",
                    range.start(),
                    range.end()
                ),
            ),
        }
    }

    /// `(mma-sync :SHAPE :TYPE a b c)`.
    fn mma_sync(&mut self, args: &[Form], f: &Form) -> Result<Expr> {
        const USAGE: &str = "(mma-sync :m16n8k16 :bf16 a b c)";
        let (words, rest) = keywords(args);
        let (mut shape, mut input) = (None, None);
        for (word, span) in &words {
            let bare = &word[1..];
            if let Some(s) = MmaShape::ALL.into_iter().find(|s| s.name() == bare) {
                shape = Some(s);
            } else if let Some(t) = MmaInput::ALL.into_iter().find(|t| t.name() == bare) {
                input = Some(t);
            } else {
                return err(
                    span,
                    format!(
                        "`mma-sync`: unknown keyword `{word}`; expected a shape ({}) and a type ({})",
                        MmaShape::ALL.map(|s| format!(":{}", s.name())).join(", "),
                        MmaInput::ALL.map(|t| format!(":{}", t.name())).join(", ")
                    ),
                );
            }
        }
        let (Some(shape), Some(input)) = (shape, input) else {
            return err(
                &f.span,
                format!("`mma-sync` needs a shape and an input type first: {USAGE}"),
            );
        };
        let Some(kind) = MmaKind::find(shape, input) else {
            let shapes: Vec<&str> = MmaKind::ALL
                .iter()
                .filter(|k| k.input == input)
                .map(|k| k.shape.name())
                .collect();
            return err(
                &f.span,
                format!(
                    "`mma-sync` has no :{} shape for :{}; it has {}",
                    shape.name(),
                    input.name(),
                    shapes
                        .iter()
                        .map(|s| format!(":{s}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        };
        if rest.len() != 3 {
            return err(
                &f.span,
                format!(
                    "`mma-sync` takes the fragments a, b and c after its keywords ({USAGE}), got {} operands",
                    rest.len()
                ),
            );
        }
        let mut exprs = Vec::with_capacity(3);
        for arg in rest {
            exprs.push(self.expr(arg)?);
        }
        let signature = mma_signature(kind);
        let label = format!("mma-sync :{} :{}", shape.name(), input.name());
        // A fragment is registers of packed bits: only the exact type, never a conversion.
        for ((e, want), which) in exprs.iter().zip(&signature.params).zip(["a", "b", "c"]) {
            if e.ty != *want {
                return err(
                    &e.span,
                    format!(
                        "`{label}` needs its {which} fragment as {want}, got {}",
                        super::convert::with_article(&e.ty)
                    ),
                );
            }
        }
        resolve_among(&label, vec![&signature], exprs, &f.span)
    }

    /// `(ldmatrix :xN [:trans] p)`.
    fn ldmatrix(&mut self, args: &[Form], f: &Form) -> Result<Expr> {
        const USAGE: &str = "(ldmatrix :x4 [:trans] row-pointer)";
        let (words, rest) = keywords(args);
        let (mut count, mut trans) = (None, false);
        for (word, span) in &words {
            match *word {
                ":x1" => count = Some(1),
                ":x2" => count = Some(2),
                ":x4" => count = Some(4),
                ":trans" => trans = true,
                other => {
                    return err(
                        span,
                        format!(
                            "`ldmatrix`: unknown keyword `{other}`; expected :x1, :x2 or :x4 and optionally :trans"
                        ),
                    );
                }
            }
        }
        let Some(count) = count else {
            return err(
                &f.span,
                format!("`ldmatrix` needs the number of matrices first: {USAGE}"),
            );
        };
        let [pointer] = rest else {
            return err(
                &f.span,
                format!("`ldmatrix` takes one row address after its keywords: {USAGE}"),
            );
        };
        let p = self.pointer_operand("ldmatrix", pointer)?;
        Ok(node(
            ExprKind::Builtin {
                op: Builtin::Tensor(TensorOp::LdMatrix { count, trans }),
                args: vec![p],
            },
            ldmatrix_type(count),
            &f.span,
        ))
    }

    /// `(cp-async dst src BYTES [:ca|:cg])`.
    fn cp_async(&mut self, args: &[Form], f: &Form) -> Result<Expr> {
        const USAGE: &str = "(cp-async shared-dst global-src 16 [:cg])";
        let (mode, rest) = match args.split_last() {
            Some((last, init)) if last.as_symbol().is_some_and(|s| s.starts_with(':')) => {
                match last.as_symbol() {
                    Some(":ca") => (Some(false), init),
                    Some(":cg") => (Some(true), init),
                    _ => {
                        return err(
                            &last.span,
                            format!("`cp-async`: unknown cache mode `{last}`; expected :ca or :cg"),
                        );
                    }
                }
            }
            _ => (None, args),
        };
        let [dst, src, bytes] = rest else {
            return err(
                &f.span,
                format!("`cp-async` takes a destination, a source and a size: {USAGE}"),
            );
        };
        let dst = self.pointer_operand("cp-async", dst)?;
        let src = self.pointer_operand("cp-async", src)?;
        let size = self.small_constant("cp-async", bytes, 4..=16)?;
        if !matches!(size, 4 | 8 | 16) {
            return err(
                &bytes.span,
                format!("`cp-async` copies 4, 8 or 16 bytes, not {size}"),
            );
        }
        // PTX: `.cg` only for 16 bytes; 16-byte copies default to it (they skip the L1).
        let global_only = mode.unwrap_or(size == 16);
        if global_only && size != 16 {
            return err(
                &args[args.len() - 1].span,
                format!("`cp-async :cg` copies 16 bytes only (PTX), not {size}; use :ca"),
            );
        }
        Ok(node(
            ExprKind::Builtin {
                op: Builtin::Tensor(TensorOp::CpAsync {
                    bytes: size,
                    global_only,
                }),
                args: vec![dst, src],
            },
            Type::Void,
            &f.span,
        ))
    }

    /// `(pack-bf16x2 lo hi)`, `(pack-f16x2 lo hi)`: two `float`s (exactly: no implicit
    /// conversion, as for the fragments), packed into a `uint`.
    fn pack(&mut self, format: PairFormat, args: &[Form], f: &Form) -> Result<Expr> {
        let op = TensorOp::Pack(format);
        let name = name_of(op);
        let [lo, hi] = args else {
            return err(
                &f.span,
                format!(
                    "`{name}` takes two floats, the low half first: ({name} lo hi), got {} operands",
                    args.len()
                ),
            );
        };
        let exprs = vec![self.expr(lo)?, self.expr(hi)?];
        let float = Type::Scalar(crate::types::ScalarType::Float);
        let signature = Signature {
            op: Builtin::Tensor(op),
            params: vec![float.clone(), float],
            result: Type::Scalar(crate::types::ScalarType::UInt),
        };
        resolve_among(name, vec![&signature], exprs, &f.span)
    }

    /// An operand that must be a pointer (any element type: the instruction moves bits).
    fn pointer_operand(&mut self, head: &str, form: &Form) -> Result<Expr> {
        let e = self.expr(form)?;
        if e.ty.pointer_depth() == 0 {
            return err(
                &form.span,
                format!(
                    "`{head}` needs a pointer here, got {}",
                    super::convert::with_article(&e.ty)
                ),
            );
        }
        Ok(e)
    }
}

/// The capability `op` needs.
pub fn capability(op: TensorOp) -> crate::target::Capability {
    use crate::target::Capability;
    match op {
        TensorOp::Mma(k) if matches!(k.input, MmaInput::E4m3 | MmaInput::E5m2) => {
            Capability::Fp8TensorCores
        }
        // cvt.rn.{bf16x2,f16x2}.f32 is sm_80's, as mma.sync with 16-bit inputs.
        TensorOp::Mma(_) | TensorOp::LdMatrix { .. } | TensorOp::Pack(_) => Capability::TensorCores,
        TensorOp::CpAsync { .. }
        | TensorOp::CpAsyncCommit
        | TensorOp::CpAsyncWait(_)
        | TensorOp::CpAsyncWaitAll => Capability::AsyncCopy,
    }
}
