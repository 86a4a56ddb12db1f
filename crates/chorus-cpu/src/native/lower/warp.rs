//! Warp collectives (`shfl*-sync`, `ballot-sync`, `all-sync`, `any-sync`, `reduce-OP-sync`,
//! `match-any-sync`, `match-all-sync`, `active-mask`) in the region method: a statement at
//! region level that holds one is split there, as at a barrier but within the warp. The
//! collective's operands are evaluated into lane arrays by the active threads (operands every
//! thread has the same, such as `full-mask` or a constant delta, are passed as bits instead),
//! then one call of `runtime::nf_warp` runs the interpreter's functions over each warp's 32
//! lanes and leaves every active thread's result in a lane array, and the statement reads the
//! result where the collective stood. A statement with one collective evaluates its operands at
//! the end of the thread loop before it and runs itself at the start of the loop after it, so
//! consecutive collectives (a reduction's `warp-sum-down`) cost one thread loop each; one with
//! nested collectives runs each (innermost first) in loops of its own.
//!
//! Operands are evaluated before the rest of their statement (a fault there may be reported
//! before one the interpreter reaches first in the same statement; the values are the same).
//! A collective whose operands are evaluated only by some threads (under `and`, `or`, `if` as an
//! expression) or evaluated again on each iteration (a loop's condition or step) is not
//! compiled, nor one on vectors or structures, nor on waves of 64 lanes.

use super::runtime::{self, NO_SLOT, WarpOp, kind_code, warp_code};
use super::{Lower, R, is_composite, unsupported};
use crate::bytecode::{ShflMode, VoteOp};
use chorus_lang::ir::visit::{Node, for_each_node};
use chorus_lang::ir::{Builtin, Expr, ExprKind, Stmt, StmtKind};
use cranelift_codegen::ir::{InstBuilder, Value, types};

/// Whether `e` is a warp collective this module compiles.
pub(super) fn is_collective(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Builtin {
            op: Builtin::ShflSync
                | Builtin::ShflUpSync
                | Builtin::ShflDownSync
                | Builtin::ShflXorSync
                | Builtin::BallotSync
                | Builtin::AllSync
                | Builtin::AnySync
                | Builtin::WarpReduce(_)
                | Builtin::MatchAnySync
                | Builtin::MatchAllSync
                | Builtin::ActiveMask,
            ..
        }
    )
}

/// Whether `e` holds a warp collective.
pub(super) fn has_collective(e: &Expr) -> bool {
    if is_collective(e) {
        return true;
    }
    let mut kids = Vec::new();
    Node::Expr(e).children(&mut kids);
    kids.into_iter().any(|n| match n {
        Node::Expr(k) => has_collective(k),
        _ => false,
    })
}

/// A collective's slots and `nf_warp` arguments, from [`Lower::plan_collective`].
pub(super) struct Planned<'e> {
    e: &'e Expr,
    /// The operands each thread evaluates, and their lane slots.
    pub(super) evaluated: Vec<(u32, &'e Expr)>,
    wop: WarpOp,
    kind: crate::value::Kind,
    dst: u32,
    /// Per operand: its lane slot, or [`NO_SLOT`] and the bits every thread has.
    passed: [(u64, u64); 4],
    pred: Option<u32>,
}

/// The one warp collective of statement `s` (a declaration, assignment or expression without
/// a barrier) when its operands can be evaluated at the end of the thread loop before it: one
/// collective, not under `and`, `or` or an `if` expression.
pub(super) fn lone_collective(s: &Stmt) -> Option<&Expr> {
    if !matches!(
        s.kind,
        StmtKind::Declare { .. } | StmtKind::Assign { .. } | StmtKind::Expr(_)
    ) {
        return None;
    }
    let mut found = Vec::new();
    let mut other = false;
    for_each_node(Node::Stmt(s), |n, _| {
        if let Node::Expr(e) = n {
            if is_collective(e) {
                found.push(e);
            }
            other |= super::is_sync(e)
                || matches!(
                    e.kind,
                    ExprKind::Select { .. }
                        | ExprKind::Builtin {
                            op: Builtin::And | Builtin::Or,
                            ..
                        }
                );
        }
    });
    match found.as_slice() {
        [e] if !other => Some(e),
        _ => None,
    }
}

impl Lower<'_, '_, '_> {
    /// Runs the warp collectives in `e` (innermost first) for the threads of the current
    /// region, so that evaluating `e` afterwards in a thread loop reads their results.
    pub(super) fn warp_collectives(&mut self, e: &Expr) -> R<()> {
        let conditional = matches!(
            e.kind,
            ExprKind::Select { .. }
                | ExprKind::Builtin {
                    op: Builtin::And | Builtin::Or,
                    ..
                }
        );
        let mut kids = Vec::new();
        Node::Expr(e).children(&mut kids);
        for k in kids {
            if let Node::Expr(k) = k {
                if conditional && has_collective(k) {
                    return unsupported(
                        &k.span,
                        "a warp collective that only some threads evaluate",
                    );
                }
                self.warp_collectives(k)?;
            }
        }
        if is_collective(e) {
            self.collective(e)?;
        }
        Ok(())
    }

    /// The result of collective `e` for the current thread, when it has been run (for
    /// `match-all-sync`, after storing its flag through the predicate pointer, checked as the
    /// interpreter's store is).
    pub(super) fn warp_result(&mut self, e: &Expr) -> R<Option<Value>> {
        let Some(&(_, slot, pred)) = self
            .warp_results
            .iter()
            .find(|(p, _, _)| std::ptr::eq(*p, e))
        else {
            return Ok(None);
        };
        if let Some(pred) = pred {
            let a = self.lane_addr(pred);
            let p = self.b.ins().load(types::I64, super::TRUSTED, a, 0);
            let a = self.lane_addr(slot + 1);
            let flag = self.b.ins().load(types::I32, super::TRUSTED, a, 0);
            self.access(
                super::Addr::Ptr(p),
                crate::value::Kind::I32,
                Some(flag),
                &e.span,
            )?;
        }
        let kind = self.kind(&e.ty, &e.span)?;
        let a = self.lane_addr(slot);
        let bits = self.b.ins().load(types::I64, super::TRUSTED, a, 0);
        Ok(Some(self.of_bits(bits, kind)))
    }

    /// The canonical bits of `e` when every thread has the same: an integer literal, or one
    /// converted to another integer type (`full-mask` is `(uint -1)`).
    fn constant_bits(&self, e: &Expr) -> R<Option<u64>> {
        let k = self.kind(&e.ty, &e.span)?;
        if !k.is_integer() {
            return Ok(None);
        }
        Ok(match &e.kind {
            ExprKind::Literal(lit) => Some(crate::value::canon(
                k,
                crate::compile::literal_bits(*lit, k),
            )),
            ExprKind::Cast { value, .. } => match self.constant_bits(value)? {
                Some(bits) => {
                    let from = self.kind(&value.ty, &value.span)?;
                    Some(crate::value::convert(from, k, bits))
                }
                None => None,
            },
            _ => None,
        })
    }

    fn collective(&mut self, e: &Expr) -> R<()> {
        let planned = self.plan_collective(e)?;
        if !planned.evaluated.is_empty() {
            let cur = *self.chain.last().ok_or("a region without a mask")?;
            self.thread_loop(Some(cur), |me| me.operands(&planned.evaluated))?;
        }
        self.call_collective(&planned)
    }

    /// Stores the current thread's operands of a collective in their lane slots.
    pub(super) fn operands(&mut self, evaluated: &[(u32, &Expr)]) -> R<()> {
        for &(slot, o) in evaluated {
            let k = self.kind(&o.ty, &o.span)?;
            let v = self.expr(o)?;
            let bits = self.bits_of(v, k);
            let a = self.lane_addr(slot);
            self.b.ins().store(super::TRUSTED, bits, a, 0);
        }
        Ok(())
    }

    /// The slots and arguments of collective `e`; its operands evaluated per thread are for
    /// the caller to store ([`Self::operands`]) before [`Self::call_collective`].
    pub(super) fn plan_collective<'e>(&mut self, e: &'e Expr) -> R<Planned<'e>> {
        let ExprKind::Builtin { op, args } = &e.kind else {
            return unsupported(&e.span, "this warp collective");
        };
        if self.warp_width != 32 {
            return unsupported(&e.span, "a warp collective on a wave of 64 lanes");
        }
        if is_composite(&e.ty) {
            return unsupported(&e.span, "a warp collective on a vector or structure");
        }
        let mut kind = crate::value::Kind::U32;
        // The operands in `nf_warp`'s order; `None` is the warp width (an omitted width).
        let (wop, operands): (WarpOp, Vec<Option<&Expr>>) = match (*op, args.as_slice()) {
            (
                Builtin::ShflSync
                | Builtin::ShflUpSync
                | Builtin::ShflDownSync
                | Builtin::ShflXorSync,
                [mask, value, lane, width @ ..],
            ) if width.len() <= 1 => {
                let mode = match op {
                    Builtin::ShflSync => ShflMode::Idx,
                    Builtin::ShflUpSync => ShflMode::Up,
                    Builtin::ShflDownSync => ShflMode::Down,
                    _ => ShflMode::Xor,
                };
                (
                    WarpOp::Shfl(mode),
                    vec![Some(value), Some(lane), width.first(), Some(mask)],
                )
            }
            (Builtin::BallotSync | Builtin::AllSync | Builtin::AnySync, [mask, pred]) => {
                let vote = match op {
                    Builtin::BallotSync => VoteOp::Ballot,
                    Builtin::AllSync => VoteOp::All,
                    _ => VoteOp::Any,
                };
                (WarpOp::Vote(vote), vec![Some(mask), Some(pred)])
            }
            (Builtin::WarpReduce(r), [mask, value]) => {
                kind = self.kind(&value.ty, &value.span)?;
                if !matches!(kind, crate::value::Kind::I32 | crate::value::Kind::U32) {
                    return unsupported(&e.span, "a warp reduction of other than `int` or `uint`");
                }
                (WarpOp::Reduce(r), vec![Some(mask), Some(value)])
            }
            (Builtin::MatchAnySync, [mask, value]) => {
                (WarpOp::MatchAny, vec![Some(mask), Some(value)])
            }
            (Builtin::MatchAllSync, [mask, value, pred]) => {
                (WarpOp::MatchAll, vec![Some(mask), Some(value), Some(pred)])
            }
            (Builtin::ActiveMask, []) => (WarpOp::ActiveMask, vec![]),
            _ => return unsupported(&e.span, "this warp collective's arguments"),
        };
        let first = self.lane_slots;
        // The result, and for `match-all-sync` its flag after it.
        let results = if wop == WarpOp::MatchAll { 2 } else { 1 };
        self.lane_slots += operands.len() as u32 + results;
        let dst = first + operands.len() as u32;
        // Each operand: a lane slot evaluated per thread, or the same bits for every thread
        // (a literal, or an omitted width) passed as such.
        let mut passed = [(NO_SLOT, 0u64); 4];
        let mut evaluated = Vec::new();
        for (i, o) in operands.iter().enumerate() {
            passed[i] = match o {
                None => (NO_SLOT, self.warp_width as u64),
                Some(o) => match self.constant_bits(o)? {
                    Some(bits) => (NO_SLOT, bits),
                    None => {
                        evaluated.push((first + i as u32, *o));
                        ((first + i as u32) as u64, 0)
                    }
                },
            };
        }
        Ok(Planned {
            e,
            evaluated,
            wop,
            kind,
            dst,
            passed,
            pred: (wop == WarpOp::MatchAll).then_some(first + 2),
        })
    }

    /// Runs a planned collective over the warps of the current region (its operands stored).
    pub(super) fn call_collective(&mut self, p: &Planned<'_>) -> R<()> {
        let (wop, kind, dst, passed) = (p.wop, p.kind, p.dst, p.passed);
        let cur = *self.chain.last().ok_or("a region without a mask")?;
        let en = self.en();
        let consts = [warp_code(wop) as i64, kind_code(kind) as i64];
        let mut call_args: Vec<Value> = consts
            .iter()
            .map(|&c| self.b.ins().iconst(types::I64, c))
            .collect();
        call_args.extend([en.lanes, en.masks, en.threads]);
        let slots = passed.map(|(s, _)| s as i64);
        let bits = passed.map(|(_, b)| b as i64);
        for c in [cur as i64, dst as i64]
            .into_iter()
            .chain(slots)
            .chain(bits)
        {
            call_args.push(self.b.ins().iconst(types::I64, c));
        }
        let h = runtime::nf_warp
            as unsafe extern "C" fn(
                u64,
                u64,
                *mut u64,
                *const u8,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
            );
        self.call(h as usize, call_args.len(), false, &call_args);
        self.warp_results.push((p.e as *const Expr, dst, p.pred));
        Ok(())
    }
}
