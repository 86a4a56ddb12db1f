//! A pre-order walk over a function body that needs no stack of its own: the passes after the
//! checker (validation, shared-memory totals) may run on any thread, and expressions may nest
//! as deeply as the expander allows.

use crate::error::Result;
use crate::ir::{Block, Expr, ExprKind, Stmt, StmtKind};

/// A statement or an expression of a body.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Node<'a> {
    /// A statement.
    Stmt(&'a Stmt),
    /// An expression.
    Expr(&'a Expr),
}

/// Calls `visit` on every statement and expression of `block`, a node before its children and
/// children in the order they run (a `for`'s test and body before its steps); stops at the
/// first error `visit` returns.
pub(crate) fn walk_block<'a>(
    block: &'a Block,
    mut visit: impl FnMut(Node<'a>) -> Result<()>,
) -> Result<()> {
    let mut pending: Vec<Node<'a>> = block.stmts.iter().rev().map(Node::Stmt).collect();
    let mut children: Vec<Node<'a>> = Vec::new();
    while let Some(node) = pending.pop() {
        visit(node)?;
        children.clear();
        match node {
            Node::Stmt(s) => stmt_children(s, &mut children),
            Node::Expr(e) => expr_children(e, &mut children),
        }
        pending.extend(children.drain(..).rev());
    }
    Ok(())
}

/// The direct children of `s`, in the order they run.
fn stmt_children<'a>(s: &'a Stmt, out: &mut Vec<Node<'a>>) {
    let block = |b: &'a Block, out: &mut Vec<Node<'a>>| out.extend(b.stmts.iter().map(Node::Stmt));
    match &s.kind {
        StmtKind::Block(b) => block(b, out),
        StmtKind::Declare { init, .. } => out.push(Node::Expr(init)),
        StmtKind::SharedArray { dims, .. } => out.extend(dims.iter().map(Node::Expr)),
        StmtKind::DynamicShared { .. }
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Return(None)
        | StmtKind::Asm(_) => {}
        StmtKind::Assign { place, value } => {
            out.push(Node::Expr(place));
            out.push(Node::Expr(value));
        }
        StmtKind::If {
            cond,
            then,
            otherwise,
        } => {
            out.push(Node::Expr(cond));
            block(then, out);
            if let Some(b) = otherwise {
                block(b, out);
            }
        }
        StmtKind::While { cond, body } => {
            out.push(Node::Expr(cond));
            block(body, out);
        }
        StmtKind::For {
            init,
            cond,
            step,
            body,
        } => {
            out.extend(init.iter().map(|(_, e)| Node::Expr(e)));
            out.extend(cond.iter().map(Node::Expr));
            block(body, out);
            out.extend(step.iter().map(|(_, e)| Node::Expr(e)));
        }
        StmtKind::Switch {
            scrutinee,
            cases,
            default,
        } => {
            out.push(Node::Expr(scrutinee));
            for case in cases {
                block(&case.body, out);
            }
            if let Some(b) = default {
                block(b, out);
            }
        }
        StmtKind::Return(Some(e)) | StmtKind::Expr(e) => out.push(Node::Expr(e)),
        StmtKind::Printf { args, .. } => out.extend(args.iter().map(Node::Expr)),
    }
}

/// The direct children of `e`, in the order they run.
fn expr_children<'a>(e: &'a Expr, out: &mut Vec<Node<'a>>) {
    match &e.kind {
        ExprKind::Literal(_) | ExprKind::Local(_) | ExprKind::Global(_) | ExprKind::Index(_) => {}
        ExprKind::Aref { base, indices } => {
            out.push(Node::Expr(base));
            out.extend(indices.iter().map(Node::Expr));
        }
        ExprKind::Field { base, .. } => out.push(Node::Expr(base)),
        ExprKind::Builtin { args, .. }
        | ExprKind::Call { args, .. }
        | ExprKind::Construct(args) => out.extend(args.iter().map(Node::Expr)),
        ExprKind::Cast { value, .. } => out.push(Node::Expr(value)),
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => {
            out.push(Node::Expr(cond));
            out.push(Node::Expr(then));
            out.push(Node::Expr(otherwise));
        }
        ExprKind::AddressOf(inner) => out.push(Node::Expr(inner)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_nodes_in_the_order_they_run() {
        let module = crate::check::check_module(
            &crate::read_str(
                "(defkernel k (void ((a int*))) (set (aref a 0) (+ 1 2 3)) (return))",
                "t.lisp",
            )
            .unwrap(),
        )
        .unwrap();
        let mut literals = Vec::new();
        walk_block(&module.functions[0].body, |node| {
            if let Node::Expr(Expr {
                kind: ExprKind::Literal(crate::ir::Literal::Int(n)),
                ..
            }) = node
            {
                literals.push(*n);
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(literals, [0, 1, 2, 3]);
    }
}
