//! One walk over the IR for the passes that read it: [`Visitor`] and [`walk_block`] /
//! [`walk_expr`].
//!
//! The walk keeps its own stack instead of recursing, so a body nested as deeply as the checker
//! allows (10 000 levels and more) is safe on any thread, a 2 MiB one included. It is pre- and
//! post-order: each node is *entered* before its children and *exited* after them. A visitor
//! overrides only the hooks it needs; each hook returns a [`Visit`] (walk the children, or skip
//! them) or the visitor's error, which stops the walk at once and is returned by it.
//!
//! Children come in the order they run: a statement's expressions and blocks as written, except
//! that a `for`'s steps come after its body (`init`, `cond`, `body`, `step`); a `switch`'s
//! clauses after its scrutinee, the default last.
//!
//! `depth` is how many blocks, statements and expressions enclose a node, counted from the root
//! the walk started at (depth 0): in a function body walked with [`walk_block`], a statement of
//! the body is at depth 1, its expressions at 2, their operands at 3, and a statement of a
//! nested `if` branch at 3 (body, `if`, branch block).
//!
//! Users: the validator ([`crate::check::validate`]: capabilities, limits, recursion), the
//! shared-memory totals, the checker's control-flow question (does a body always return: a fold
//! in post-order; does a loop have a `break` of its own), the C-family printer's depth
//! measurement and its "does this step read that variable" question, and chorus-cpu's depth
//! measurement and address-taken scan. Passes that *produce* something in tree order keep
//! structural recursion, because the shape of their output follows the shape of the tree and an
//! explicit stack would have to rebuild it by hand: the printers (text whose parenthesisation
//! and indentation mirror the nesting), chorus-cpu's lowering (jump targets patched after the
//! blocks they skip), the checker itself (it builds the IR) and its constant folding (values
//! computed from the operands' values). The printer and the lowering first measure the depth
//! with this walk and move to a big stack when it is deep.

use super::{Block, Expr, ExprKind, Stmt, StmtKind};
use std::convert::Infallible;

/// What the walk does after a node is entered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visit {
    /// Walk the node's children, then exit the node.
    Children,
    /// Exit the node without walking its children.
    SkipChildren,
}

/// A read-only pass over the IR. Every hook has a default that walks on; a pass overrides the
/// ones it needs. `Err` from any hook stops the walk, which returns it.
///
/// Each entered node is exited, whether its children were walked or skipped.
///
/// ```
/// use chorus_lang::ir::visit::{Visit, Visitor, walk_block};
/// use chorus_lang::ir::{Expr, ExprKind};
///
/// /// Counts the calls of a body.
/// struct Calls(usize);
///
/// impl Visitor<'_> for Calls {
///     type Error = std::convert::Infallible;
///     fn enter_expr(&mut self, e: &Expr, _depth: usize) -> Result<Visit, Self::Error> {
///         if let ExprKind::Call { .. } = e.kind {
///             self.0 += 1;
///         }
///         Ok(Visit::Children)
///     }
/// }
///
/// let module = chorus_lang::compile_str(
///     "(defkernel sq (float ((x float))) (return (* x x)))
///      (defkernel k (void ((a float*))) (set (aref a 0) (sq (sq 2.0))))",
///     "k.lisp",
/// )
/// .unwrap();
/// let (_, k) = module.function("k").unwrap();
/// let mut calls = Calls(0);
/// let Ok(()) = walk_block(&k.body, &mut calls);
/// assert_eq!(calls.0, 2);
/// ```
pub trait Visitor<'ir> {
    /// What stops the walk: [`crate::Error`] for a pass that reports, a marker for a search
    /// that stops at its first find, [`Infallible`] for a pass that always walks everything.
    type Error;

    /// Called on a block before its statements.
    fn enter_block(&mut self, _block: &'ir Block, _depth: usize) -> Result<Visit, Self::Error> {
        Ok(Visit::Children)
    }

    /// Called on a block after its statements.
    fn exit_block(&mut self, _block: &'ir Block, _depth: usize) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Called on a statement before its expressions and blocks.
    fn enter_stmt(&mut self, _stmt: &'ir Stmt, _depth: usize) -> Result<Visit, Self::Error> {
        Ok(Visit::Children)
    }

    /// Called on a statement after its expressions and blocks.
    fn exit_stmt(&mut self, _stmt: &'ir Stmt, _depth: usize) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Called on an expression before its operands.
    fn enter_expr(&mut self, _expr: &'ir Expr, _depth: usize) -> Result<Visit, Self::Error> {
        Ok(Visit::Children)
    }

    /// Called on an expression after its operands.
    fn exit_expr(&mut self, _expr: &'ir Expr, _depth: usize) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A node of the IR the walk visits.
#[derive(Clone, Copy, Debug)]
pub enum Node<'ir> {
    /// A block (one scope).
    Block(&'ir Block),
    /// A statement.
    Stmt(&'ir Stmt),
    /// An expression.
    Expr(&'ir Expr),
}

impl<'ir> Node<'ir> {
    /// Appends the direct children of this node to `out`, in the order they run.
    pub fn children(self, out: &mut Vec<Node<'ir>>) {
        match self {
            Node::Block(b) => out.extend(b.stmts.iter().map(Node::Stmt)),
            Node::Stmt(s) => stmt_children(s, out),
            Node::Expr(e) => expr_children(e, out),
        }
    }
}

/// Walks `block` (at depth 0) and everything in it with `visitor`.
pub fn walk_block<'ir, V: Visitor<'ir> + ?Sized>(
    block: &'ir Block,
    visitor: &mut V,
) -> Result<(), V::Error> {
    walk(Node::Block(block), visitor)
}

/// Walks `expr` (at depth 0) and its operands with `visitor`.
pub fn walk_expr<'ir, V: Visitor<'ir> + ?Sized>(
    expr: &'ir Expr,
    visitor: &mut V,
) -> Result<(), V::Error> {
    walk(Node::Expr(expr), visitor)
}

/// Walks `root` (at depth 0) and everything under it with `visitor`.
pub fn walk<'ir, V: Visitor<'ir> + ?Sized>(
    root: Node<'ir>,
    visitor: &mut V,
) -> Result<(), V::Error> {
    /// A step of the walk still to take.
    enum Step<'ir> {
        Enter(Node<'ir>, usize),
        Exit(Node<'ir>, usize),
    }
    let mut pending = vec![Step::Enter(root, 0)];
    let mut children = Vec::new();
    while let Some(step) = pending.pop() {
        match step {
            Step::Enter(node, depth) => {
                let visit = match node {
                    Node::Block(b) => visitor.enter_block(b, depth)?,
                    Node::Stmt(s) => visitor.enter_stmt(s, depth)?,
                    Node::Expr(e) => visitor.enter_expr(e, depth)?,
                };
                pending.push(Step::Exit(node, depth));
                if visit == Visit::Children {
                    node.children(&mut children);
                    // Pushed last to first, so that they are taken first to last.
                    pending.extend(children.drain(..).rev().map(|c| Step::Enter(c, depth + 1)));
                }
            }
            Step::Exit(node, depth) => match node {
                Node::Block(b) => visitor.exit_block(b, depth)?,
                Node::Stmt(s) => visitor.exit_stmt(s, depth)?,
                Node::Expr(e) => visitor.exit_expr(e, depth)?,
            },
        }
    }
    Ok(())
}

/// Walks `root` calling `f` on every node as it is entered, with its depth; never skips, never
/// stops. For scans that look at each node on its own.
pub fn for_each_node<'ir>(root: Node<'ir>, f: impl FnMut(Node<'ir>, usize)) {
    /// Adapts a closure to [`Visitor`].
    struct Each<F>(F);
    impl<'ir, F: FnMut(Node<'ir>, usize)> Visitor<'ir> for Each<F> {
        type Error = Infallible;
        fn enter_block(&mut self, block: &'ir Block, depth: usize) -> Result<Visit, Infallible> {
            (self.0)(Node::Block(block), depth);
            Ok(Visit::Children)
        }
        fn enter_stmt(&mut self, stmt: &'ir Stmt, depth: usize) -> Result<Visit, Infallible> {
            (self.0)(Node::Stmt(stmt), depth);
            Ok(Visit::Children)
        }
        fn enter_expr(&mut self, expr: &'ir Expr, depth: usize) -> Result<Visit, Infallible> {
            (self.0)(Node::Expr(expr), depth);
            Ok(Visit::Children)
        }
    }
    let Ok(()) = walk(root, &mut Each(f));
}

/// The blocks and expressions directly inside `s`, in the order they run.
fn stmt_children<'ir>(s: &'ir Stmt, out: &mut Vec<Node<'ir>>) {
    match &s.kind {
        StmtKind::Block(b) => out.push(Node::Block(b)),
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
            out.push(Node::Block(then));
            out.extend(otherwise.iter().map(Node::Block));
        }
        StmtKind::While { cond, body } => {
            out.push(Node::Expr(cond));
            out.push(Node::Block(body));
        }
        StmtKind::For {
            init,
            cond,
            step,
            body,
        } => {
            out.extend(init.iter().map(|(_, e)| Node::Expr(e)));
            out.extend(cond.iter().map(Node::Expr));
            out.push(Node::Block(body));
            out.extend(step.iter().map(|(_, e)| Node::Expr(e)));
        }
        StmtKind::Switch {
            scrutinee,
            cases,
            default,
        } => {
            out.push(Node::Expr(scrutinee));
            out.extend(cases.iter().map(|c| Node::Block(&c.body)));
            out.extend(default.iter().map(Node::Block));
        }
        StmtKind::Return(Some(e)) | StmtKind::Expr(e) => out.push(Node::Expr(e)),
        StmtKind::Printf { args, .. } => out.extend(args.iter().map(Node::Expr)),
    }
}

/// The operands of `e`, in the order they run.
fn expr_children<'ir>(e: &'ir Expr, out: &mut Vec<Node<'ir>>) {
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
        ExprKind::Cast { value, .. } | ExprKind::AddressOf(value) => out.push(Node::Expr(value)),
        ExprKind::Select {
            cond,
            then,
            otherwise,
        } => {
            out.push(Node::Expr(cond));
            out.push(Node::Expr(then));
            out.push(Node::Expr(otherwise));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Literal;

    fn kernel_body(text: &str) -> Block {
        let module = crate::compile_str(text, "t.lisp").unwrap();
        module.functions.into_iter().last().unwrap().body
    }

    #[test]
    fn walks_nodes_in_the_order_they_run() {
        let body =
            kernel_body("(defkernel k (void ((a int*))) (set (aref a 0) (+ 1 2 3)) (return))");
        let mut literals = Vec::new();
        for_each_node(Node::Block(&body), |node, _| {
            if let Node::Expr(Expr {
                kind: ExprKind::Literal(Literal::Int(n)),
                ..
            }) = node
            {
                literals.push(*n);
            }
        });
        assert_eq!(literals, [0, 1, 2, 3]);
    }

    /// Records entries and exits with their depths, skipping the children of `while`.
    #[derive(Default)]
    struct Trace(Vec<String>);

    impl Visitor<'_> for Trace {
        type Error = &'static str;
        fn enter_stmt(&mut self, s: &Stmt, depth: usize) -> Result<Visit, &'static str> {
            self.0.push(format!("+s{depth}"));
            Ok(match s.kind {
                StmtKind::While { .. } => Visit::SkipChildren,
                _ => Visit::Children,
            })
        }
        fn exit_stmt(&mut self, _: &Stmt, depth: usize) -> Result<(), &'static str> {
            self.0.push(format!("-s{depth}"));
            Ok(())
        }
        fn enter_expr(&mut self, e: &Expr, depth: usize) -> Result<Visit, &'static str> {
            if let ExprKind::Literal(Literal::Int(7)) = e.kind {
                return Err("seven");
            }
            self.0.push(format!("+e{depth}"));
            Ok(Visit::Children)
        }
        fn exit_expr(&mut self, _: &Expr, depth: usize) -> Result<(), &'static str> {
            self.0.push(format!("-e{depth}"));
            Ok(())
        }
    }

    #[test]
    fn enters_before_and_exits_after_children_and_skips_when_asked() {
        let body = kernel_body(
            "(defkernel k (void ((a int*)))
               (if (> (aref a 0) 0) (set (aref a 1) 2))
               (while (> (aref a 0) 0) (set (aref a 0) 7)))",
        );
        let mut trace = Trace::default();
        walk_block(&body, &mut trace).unwrap();
        let expected = [
            // The `if` at 1; its test at 2 with `(aref a 0)` and `0` at 3, `a` and `0` at 4.
            "+s1", "+e2", "+e3", "+e4", "-e4", "+e4", "-e4", "-e3", "+e3", "-e3", "-e2",
            // The branch block at 2, its `set` at 3: place and value at 4.
            "+s3", "+e4", "+e5", "-e5", "+e5", "-e5", "-e4", "+e4", "-e4", "-s3", "-s1",
            // The `while`, children skipped (its 7 is never seen).
            "+s1", "-s1",
        ];
        assert_eq!(trace.0, expected);
    }

    #[test]
    fn an_error_stops_the_walk() {
        let body =
            kernel_body("(defkernel k (void ((a int*))) (set (aref a 0) 7) (set (aref a 1) 1))");
        let mut trace = Trace::default();
        assert_eq!(walk_block(&body, &mut trace), Err("seven"));
        assert!(trace.0.last().is_some_and(|t| t == "-e2"), "{:?}", trace.0);
        assert_eq!(trace.0.iter().filter(|t| t.starts_with("+s")).count(), 1);
    }

    #[test]
    fn ten_thousand_levels_on_a_small_stack() {
        // `(- (- … (- 1)))`, built directly: deeper than the checker lets text nest.
        let mut e = Expr {
            kind: ExprKind::Literal(Literal::Int(1)),
            ty: crate::types::Type::Scalar(crate::types::ScalarType::Int),
            span: crate::span::Span::generated(),
        };
        for _ in 0..10_000 {
            e = Expr {
                ty: e.ty.clone(),
                span: e.span.clone(),
                kind: ExprKind::Builtin {
                    op: crate::ir::Builtin::Neg,
                    args: vec![e],
                },
            };
        }
        let deepest = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let mut deepest = 0;
                for_each_node(Node::Expr(&e), |_, depth| deepest = deepest.max(depth));
                // Take the tower apart without recursing in `Drop`.
                let mut pending = vec![e];
                while let Some(mut e) = pending.pop() {
                    if let ExprKind::Builtin { args, .. } = &mut e.kind {
                        pending.append(args);
                    }
                }
                deepest
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(deepest, 10_000);
    }
}
