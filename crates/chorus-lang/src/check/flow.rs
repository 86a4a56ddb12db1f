//! Control flow: whether a function body always ends in a `return`.
//!
//! The analysis is conservative and syntactic, as C compilers' "control reaches end of non-void
//! function" is: a block returns when one of its statements does; an `if` when both branches do;
//! a `switch` when it has a default clause and every clause does; a loop only when it can never
//! end (`(while t …)` or a `for` without a test) and has no `break` of its own.
//!
//! [`always_returns`] is a fold (a statement's answer combines its blocks' answers), so it
//! recurses over statements, not expressions; it runs inside the checker, on the stack the
//! checker chose for the body's depth. The search for a loop's own `break` walks with
//! [`crate::ir::visit`].

use crate::ir::visit::{Visit, Visitor, walk_block};
use crate::ir::{Block, Expr, ExprKind, Literal, Stmt, StmtKind};

/// True when every path through `block` ends in a `return`.
pub fn always_returns(block: &Block) -> bool {
    block.stmts.iter().any(stmt_returns)
}

fn stmt_returns(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::Block(b) => always_returns(b),
        StmtKind::If {
            then,
            otherwise: Some(otherwise),
            ..
        } => always_returns(then) && always_returns(otherwise),
        StmtKind::Switch {
            cases,
            default: Some(default),
            ..
        } => always_returns(default) && cases.iter().all(|c| always_returns(&c.body)),
        StmtKind::While { cond, body } => {
            matches!(cond.kind, ExprKind::Literal(Literal::Bool(true))) && !breaks(body)
        }
        StmtKind::For { cond, body, .. } => {
            cond.as_ref()
                .is_none_or(|c| matches!(c.kind, ExprKind::Literal(Literal::Bool(true))))
                && !breaks(body)
        }
        _ => false,
    }
}

/// True when `block` contains a `break` that leaves the loop whose body it is (not one inside a
/// nested loop).
fn breaks(block: &Block) -> bool {
    /// Stops the walk at the first `break` of the loop itself.
    struct OwnBreak;
    impl Visitor<'_> for OwnBreak {
        type Error = ();
        fn enter_stmt(&mut self, s: &Stmt, _depth: usize) -> Result<Visit, ()> {
            match s.kind {
                StmtKind::Break => Err(()),
                // A nested loop's `break`s leave that loop.
                StmtKind::While { .. } | StmtKind::For { .. } => Ok(Visit::SkipChildren),
                _ => Ok(Visit::Children),
            }
        }
        fn enter_expr(&mut self, _: &Expr, _depth: usize) -> Result<Visit, ()> {
            Ok(Visit::SkipChildren)
        }
    }
    walk_block(block, &mut OwnBreak).is_err()
}
