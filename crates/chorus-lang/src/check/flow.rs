//! Control flow: whether a function body always ends in a `return`.
//!
//! The analysis is conservative and syntactic, as C compilers' "control reaches end of non-void
//! function" is: a block returns when one of its statements does; an `if` when both branches do;
//! a `switch` when it has a default clause and every clause does; a loop only when it can never
//! end (`(while t …)` or a `for` without a test) and has no `break` of its own.
//!
//! Both questions walk with [`crate::ir::visit`], so any nesting is safe on any stack:
//! [`always_returns`] as a fold in post-order (a statement's answer is made from its blocks'
//! answers when it is exited), the search for a loop's own `break` in pre-order.

use crate::ir::visit::{Visit, Visitor, walk_block};
use crate::ir::{Block, Expr, ExprKind, Literal, Stmt, StmtKind};
use std::convert::Infallible;

/// True when every path through `block` ends in a `return`.
pub fn always_returns(block: &Block) -> bool {
    let mut fold = Returns::default();
    let Ok(()) = walk_block(block, &mut fold);
    fold.finished.pop().unwrap_or(false)
}

/// The fold of [`always_returns`]. Only the blocks whose answers a statement needs are walked
/// (those of a `let`, an `if` with both branches, a `switch` with a default), so a statement
/// exited finds exactly its own blocks' answers on top of `finished`.
#[derive(Default)]
struct Returns {
    /// One per block being walked: whether one of its statements so far always returns.
    open: Vec<bool>,
    /// The answers of blocks walked to their end, not yet taken by their statement.
    finished: Vec<bool>,
}

impl Returns {
    /// Takes the answers of the last `n` blocks finished: true when all of them return.
    fn all_of_last(&mut self, n: usize) -> bool {
        let start = self.finished.len().saturating_sub(n);
        // Dropping the drain removes the whole range, even when `all` stops early.
        self.finished.drain(start..).all(|r| r)
    }
}

impl Visitor<'_> for Returns {
    type Error = Infallible;

    fn enter_block(&mut self, _: &Block, _depth: usize) -> Result<Visit, Infallible> {
        self.open.push(false);
        Ok(Visit::Children)
    }

    fn exit_block(&mut self, _: &Block, _depth: usize) -> Result<(), Infallible> {
        let returns = self.open.pop().unwrap_or(false);
        self.finished.push(returns);
        Ok(())
    }

    fn enter_stmt(&mut self, s: &Stmt, _depth: usize) -> Result<Visit, Infallible> {
        Ok(match &s.kind {
            StmtKind::Block(_)
            | StmtKind::If {
                otherwise: Some(_), ..
            }
            | StmtKind::Switch {
                default: Some(_), ..
            } => Visit::Children,
            _ => Visit::SkipChildren,
        })
    }

    fn exit_stmt(&mut self, s: &Stmt, _depth: usize) -> Result<(), Infallible> {
        let returns = match &s.kind {
            StmtKind::Return(_) => true,
            StmtKind::Block(_) => self.all_of_last(1),
            StmtKind::If {
                otherwise: Some(_), ..
            } => self.all_of_last(2),
            StmtKind::Switch {
                cases,
                default: Some(_),
                ..
            } => self.all_of_last(cases.len() + 1),
            StmtKind::While { cond, body } => {
                matches!(cond.kind, ExprKind::Literal(Literal::Bool(true))) && !breaks(body)
            }
            StmtKind::For { cond, body, .. } => {
                cond.as_ref()
                    .is_none_or(|c| matches!(c.kind, ExprKind::Literal(Literal::Bool(true))))
                    && !breaks(body)
            }
            _ => false,
        };
        if let Some(block) = self.open.last_mut() {
            *block |= returns;
        }
        Ok(())
    }

    fn enter_expr(&mut self, _: &Expr, _depth: usize) -> Result<Visit, Infallible> {
        Ok(Visit::SkipChildren)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> Block {
        let forms = crate::read_str(text, "t.lisp").unwrap();
        let module = crate::check::check_module(&forms).unwrap();
        module.functions.into_iter().next().unwrap().body
    }

    #[test]
    fn returns_through_blocks_branches_switches_and_endless_loops() {
        // Void kernels, so that the checker does not ask the question itself first.
        let returning = [
            "(return)",
            "(let ((y 1)) (return))",
            "(if (> x 0) (return) (return))",
            "(switch x (1 (return)) (t (return)))",
            "(while t (if (> x 0) (return)))",
            "(while t (while t (break)) (return))",
            "(if (> x 0) (let () (return)) (if (> x 1) (return) (return)))",
        ];
        let not_returning = [
            "(if (> x 0) (return))",
            "(if (> x 0) (return) (set x 2))",
            "(switch x (1 (return)))",
            "(switch x (1 (set x 2)) (t (return)))",
            "(while t (if (> x 0) (break)))",
            "(while (> x 0) (return))",
            "(if (> x 0) (let () (set x 1)) (return))",
        ];
        for (stmts, expected) in returning
            .iter()
            .map(|s| (s, true))
            .chain(not_returning.iter().map(|s| (s, false)))
        {
            let text = format!("(defkernel k (void ((x int))) {stmts})");
            assert_eq!(always_returns(&body(&text)), expected, "{stmts}");
        }
    }
}
