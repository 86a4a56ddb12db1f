//! Statements: `if let do while for break continue switch with-shared-memory
//! with-dynamic-shared-memory set progn return printf cuda-asm` and calls.

use super::convert::{coerce, fix, with_article};
use super::expr::{EXPANDER_MACROS, assignable_storage};
use super::names::display_name;
use super::{FnCx, Jump, binding_name, builtins, consts, err, node, parse_type, printf};
use crate::error::Result;
use crate::form::{Form, FormKind};
use crate::ir::{
    Block, Builtin, Expr, ExprKind, GlobalQualifier, LocalId, LocalStorage, Stmt, StmtKind,
    SwitchCase,
};
use crate::span::Span;
use crate::types::Type;

/// A statement of `kind` made from `form`.
fn stmt(kind: StmtKind, form: &Form) -> Stmt {
    Stmt {
        kind,
        span: form.span.clone(),
    }
}

impl FnCx<'_> {
    /// A sequence of statements in a new scope.
    pub(super) fn body(&mut self, forms: &[Form]) -> Result<Block> {
        self.scoped(|cx| cx.stmts(forms))
    }

    /// [`FnCx::body`], consuming the forms: each statement is dropped once checked, so that a
    /// huge body and its IR do not coexist (each is many times the size of the text).
    pub(super) fn body_owned(&mut self, forms: Vec<Form>) -> Result<Block> {
        self.scoped(|cx| {
            let mut out = Vec::with_capacity(forms.len());
            cx.stmts_into_owned(forms, &mut out)?;
            Ok(Block { stmts: out })
        })
    }

    /// [`FnCx::stmts_into`], consuming the forms.
    fn stmts_into_owned(&mut self, forms: Vec<Form>, out: &mut Vec<Stmt>) -> Result<()> {
        out.reserve_exact(forms.len());
        for f in forms {
            self.stmt_owned(f, out)?;
        }
        Ok(())
    }

    /// [`FnCx::stmt`], consuming the form: a `let`'s or a `progn`'s statements are checked by
    /// value (the forms a long body is made of); any other statement as borrowed.
    fn stmt_owned(&mut self, f: Form, out: &mut Vec<Stmt>) -> Result<()> {
        match f.as_call() {
            Some(("let", _)) => {
                let s = self.let_stmt_owned(f)?;
                out.push(s);
                Ok(())
            }
            Some(("progn", _)) => {
                let FormKind::List(items) = f.kind else {
                    return Ok(());
                };
                for s in items.into_iter().skip(1) {
                    self.stmt_owned(s, out)?;
                }
                Ok(())
            }
            _ => self.stmt(&f, out),
        }
    }

    /// A sequence of statements in the current scope.
    fn stmts(&mut self, forms: &[Form]) -> Result<Block> {
        // One statement per form but for `progn`s: no room for four when there is one.
        let mut out = Vec::with_capacity(forms.len());
        self.stmts_into(forms, &mut out)?;
        Ok(Block { stmts: out })
    }

    /// [`FnCx::stmts`], appending to `out`.
    fn stmts_into(&mut self, forms: &[Form], out: &mut Vec<Stmt>) -> Result<()> {
        out.reserve_exact(forms.len());
        for f in forms {
            self.stmt(f, out)?;
        }
        Ok(())
    }

    /// One statement as a block (an `if` branch).
    fn branch(&mut self, form: &Form) -> Result<Block> {
        let mut out = Vec::with_capacity(1);
        self.scoped(|cx| cx.stmt(form, &mut out))?;
        Ok(Block { stmts: out })
    }

    /// Checks one statement, appending its IR to `out` (`progn` appends several).
    fn stmt(&mut self, f: &Form, out: &mut Vec<Stmt>) -> Result<()> {
        let Some((head, args)) = f.as_call() else {
            return match &f.kind {
                FormKind::List(items) if !items.is_empty() => err(
                    &items[0].span,
                    format!("expected a statement or function name at the head of `{f}`"),
                ),
                _ => err(
                    &f.span,
                    format!(
                        "`{f}` is not a statement; a statement is a form such as (set …) or a call"
                    ),
                ),
            };
        };
        let s = match head {
            "if" => self.if_stmt(args, f)?,
            "let" => self.let_stmt(args, &f.span)?,
            "do" => self.do_stmt(args, f)?,
            "while" => self.while_stmt(args, f)?,
            "for" => self.for_stmt(args, f)?,
            "break" | "continue" => self.jump(head, args, f)?,
            "switch" => self.switch(args, f)?,
            "with-shared-memory" => self.shared_memory(args, f)?,
            "with-dynamic-shared-memory" => self.dynamic_shared_memory(args, f)?,
            "set" => self.set(args, f)?,
            "progn" => {
                for s in args {
                    self.stmt(s, out)?;
                }
                return Ok(());
            }
            "return" => self.return_stmt(args, f)?,
            "declare" => return err(&f.span, "declare must be the first form of a kernel body"),
            "printf" => self.printf(args, f)?,
            "cuda-asm" => match args {
                [text] => match &text.kind {
                    FormKind::Str(s) => stmt(StmtKind::Asm(s.clone()), f),
                    _ => {
                        return err(
                            &text.span,
                            "cuda-asm takes one string literal: (cuda-asm \"…\")",
                        );
                    }
                },
                _ => {
                    return err(
                        &f.span,
                        "cuda-asm takes one string literal: (cuda-asm \"…\")",
                    );
                }
            },
            _ if EXPANDER_MACROS.contains(&head) => {
                return err(
                    &f.span,
                    format!(
                        "`{head}` is a macro; compile with chorus_lang::compile_forms or compile_str, which expand macros first"
                    ),
                );
            }
            _ => {
                let e = self.expr(f)?;
                let effect = match &e.kind {
                    ExprKind::Call { .. } => true,
                    ExprKind::Builtin { op, .. } => builtins::has_effect(*op),
                    _ => false,
                };
                if !effect {
                    return err(
                        &f.span,
                        format!(
                            "the value of `{f}` is not used; a statement must have an effect (set, a call, …)"
                        ),
                    );
                }
                stmt(StmtKind::Expr(e), f)
            }
        };
        out.push(s);
        Ok(())
    }

    fn if_stmt(&mut self, args: &[Form], f: &Form) -> Result<Stmt> {
        if !(2..=3).contains(&args.len()) {
            return err(
                &f.span,
                "if takes a test and one or two statements: (if TEST THEN [ELSE]); use progn for several",
            );
        }
        let cond = self.condition(&args[0], "if")?;
        let then = self.branch(&args[1])?;
        let otherwise = args.get(2).map(|e| self.branch(e)).transpose()?;
        Ok(stmt(
            StmtKind::If {
                cond,
                then,
                otherwise,
            },
            f,
        ))
    }

    /// `(let ((var init)…) body…)`: the inits see the enclosing scope (parallel binding).
    fn let_stmt(&mut self, args: &[Form], span: &Span) -> Result<Stmt> {
        let Some((bindings, body)) = args.split_first() else {
            return err(
                span,
                "let needs a list of bindings: (let ((VAR INIT)…) body…)",
            );
        };
        let Some(inits) = self.let_inits(bindings)? else {
            return self.let_stmt(&sequential_let(bindings, body, span), span);
        };
        self.let_block(inits, span, |cx, stmts| cx.stmts_into(body, stmts))
    }

    /// [`FnCx::let_stmt`], consuming the form `f`: each statement of the body is dropped once
    /// checked.
    fn let_stmt_owned(&mut self, f: Form) -> Result<Stmt> {
        let Form { kind, span } = f;
        let mut body = match kind {
            FormKind::List(items) if items.len() >= 2 => items,
            kind => {
                let f = Form { kind, span };
                return self.let_stmt(f.as_call().map_or(&[], |(_, args)| args), &f.span);
            }
        };
        // `(let BINDINGS body…)` becomes the body in place (a copy would hold it twice).
        let bindings = std::mem::replace(&mut body[1], Form::list(Vec::new(), span.clone()));
        body.drain(..2);
        let Some(inits) = self.let_inits(&bindings)? else {
            return self.let_stmt(&sequential_let(&bindings, &body, &span), &span);
        };
        self.let_block(inits, &span, |cx, stmts| cx.stmts_into_owned(body, stmts))
    }

    /// The checked initial values of a `let`'s bindings, in order; `None` when an init names an
    /// earlier binding of the same `let`, which then binds sequentially (see below).
    fn let_inits<'f>(&mut self, bindings: &'f Form) -> Result<Option<Vec<(&'f str, Expr)>>> {
        let mut inits: Vec<(&str, Expr)> = Vec::new();
        for b in binding_list(bindings, "let", "(let ((VAR INIT)…) body…)")? {
            let Some([name, init]) = b.as_list().and_then(|l| <&[Form; 2]>::try_from(l).ok())
            else {
                return err(&b.span, format!("a let binding is (VAR INIT), got `{b}`"));
            };
            let name_str = binding_name(name, "a let binding")?;
            if inits.iter().any(|(n, _)| *n == name_str) {
                return err(
                    &name.span,
                    format!("`{name_str}` is bound twice in one let"),
                );
            }
            let e = match self.value(init) {
                Ok(e) => e,
                // CL-Cuda's earlier `let` bound sequentially, and its examples rely on it (nbody's
                // `(let ((r …) (dist-sqr (… r …))) …)`): an init that names an earlier binding of
                // the same let, where no outer variable has that name, sees that binding.
                Err(error)
                    if inits.iter().any(|(n, _)| {
                        error
                            .message
                            .starts_with(&format!("unknown variable `{n}`"))
                    }) =>
                {
                    return Ok(None);
                }
                Err(error) => return Err(error),
            };
            inits.push((name_str, e));
        }
        Ok(Some(inits))
    }

    /// The block of a `let` at `span`: its declarations, then the body `fill` checks into it.
    fn let_block(
        &mut self,
        inits: Vec<(&str, Expr)>,
        span: &Span,
        fill: impl FnOnce(&mut Self, &mut Vec<Stmt>) -> Result<()>,
    ) -> Result<Stmt> {
        let block = self.scoped(|cx| {
            // The body's statements go straight in after the declarations: a block of its own
            // appended here would hold them twice for a moment (a huge body: megabytes).
            let mut stmts = Vec::with_capacity(inits.len());
            for (name, init) in inits {
                let local = cx.declare(name, init.ty.clone(), LocalStorage::Register);
                let span = init.span.clone();
                stmts.push(Stmt {
                    kind: StmtKind::Declare { local, init },
                    span,
                });
            }
            fill(cx, &mut stmts)?;
            Ok(Block { stmts })
        })?;
        Ok(Stmt {
            kind: StmtKind::Block(block),
            span: span.clone(),
        })
    }

    /// An expression that must have a value (not `void`) to initialize a variable.
    fn value(&mut self, form: &Form) -> Result<Expr> {
        let e = self.expr(form)?;
        if e.ty == Type::Void {
            return err(&form.span, format!("`{form}` returns no value"));
        }
        Ok(e)
    }

    /// `(do ((var init [step])…) (end-test result…) body…)`.
    fn do_stmt(&mut self, args: &[Form], f: &Form) -> Result<Stmt> {
        let usage = "(do ((VAR INIT [STEP])…) (END-TEST [RESULT…]) body…)";
        let [bindings, end, body @ ..] = args else {
            return err(&f.span, format!("malformed do: expected {usage}"));
        };
        let mut vars: Vec<(&Form, &str, Expr, Option<&Form>)> = Vec::new();
        for b in binding_list(bindings, "do", usage)? {
            let (name, init, step) = match b.as_list() {
                Some([n, i]) => (n, i, None),
                Some([n, i, s]) => (n, i, Some(s)),
                _ => {
                    return err(
                        &b.span,
                        format!("a do binding is (VAR INIT [STEP]), got `{b}`"),
                    );
                }
            };
            let name_str = binding_name(name, "a do variable")?;
            if vars.iter().any(|(_, n, _, _)| *n == name_str) {
                return err(&name.span, format!("`{name_str}` is bound twice in one do"));
            }
            let e = self.value(init)?;
            vars.push((name, name_str, e, step));
        }
        let Some((test, results)) = end.as_list().and_then(|l| l.split_first()) else {
            return err(
                &end.span,
                format!("malformed do: the end clause is (END-TEST [RESULT…]); expected {usage}"),
            );
        };
        let block = self.scoped(|cx| {
            let mut locals: Vec<(LocalId, Expr)> = Vec::new();
            for (_, name, init, _) in &vars {
                locals.push((
                    cx.declare(name, init.ty.clone(), LocalStorage::Register),
                    init.clone(),
                ));
            }
            let end_test = cx.condition(test, "do")?;
            let cond = node(
                ExprKind::Builtin {
                    op: Builtin::Not,
                    args: vec![end_test],
                },
                Type::Bool,
                &test.span,
            );
            let mut steps = Vec::new();
            for ((_, name, _, step), (local, _)) in vars.iter().zip(&locals) {
                if let Some(step) = step {
                    steps.push((*local, cx.step_value(step, *local, name)?));
                }
            }
            let body = cx.inside(Jump::Loop, |cx| cx.body(body))?;
            let mut result = cx.stmts(results)?;
            if result.stmts.is_empty() {
                return Ok(StmtKind::For {
                    init: locals,
                    cond: Some(cond),
                    step: steps,
                    body,
                });
            }
            // The result forms see the variables, so they are declared before the loop.
            let mut stmts: Vec<Stmt> = locals
                .into_iter()
                .map(|(local, init)| {
                    let span = init.span.clone();
                    Stmt {
                        kind: StmtKind::Declare { local, init },
                        span,
                    }
                })
                .collect();
            stmts.push(stmt(
                StmtKind::For {
                    init: Vec::new(),
                    cond: Some(cond),
                    step: steps,
                    body,
                },
                f,
            ));
            stmts.append(&mut result.stmts);
            Ok(StmtKind::Block(Block { stmts }))
        })?;
        Ok(stmt(block, f))
    }

    /// A loop step: the new value of `local`, converted to its type.
    fn step_value(&mut self, step: &Form, local: LocalId, name: &str) -> Result<Expr> {
        let e = self.value(step)?;
        let want = self.locals[local.index()].ty.clone();
        let got = e.ty.clone();
        coerce(e, &want).ok_or_else(|| {
            crate::Error::new(
                &step.span,
                format!(
                    "the step of `{}` must be {want}, got {}; {}",
                    display_name(name),
                    with_article(&got),
                    fix(&got, &want)
                ),
            )
        })
    }

    fn while_stmt(&mut self, args: &[Form], f: &Form) -> Result<Stmt> {
        let Some((test, body)) = args.split_first() else {
            return err(&f.span, "while needs a test: (while TEST body…)");
        };
        let cond = self.condition(test, "while")?;
        let body = self.inside(Jump::Loop, |cx| cx.body(body))?;
        Ok(stmt(StmtKind::While { cond, body }, f))
    }

    /// `(for (var init test step) body…)`: `step` is the next value of `var`.
    fn for_stmt(&mut self, args: &[Form], f: &Form) -> Result<Stmt> {
        let usage = "(for (VAR INIT TEST STEP) body…), e.g. (for (i 0 (< i n) (+ i 1)) …)";
        let Some((head, body)) = args.split_first() else {
            return err(&f.span, format!("malformed for: expected {usage}"));
        };
        let Some([name, init, test, step]) =
            head.as_list().and_then(|l| <&[Form; 4]>::try_from(l).ok())
        else {
            return err(&head.span, format!("malformed for: expected {usage}"));
        };
        let name_str = binding_name(name, "the for variable")?;
        let init = self.value(init)?;
        let kind = self.scoped(|cx| {
            let local = cx.declare(name_str, init.ty.clone(), LocalStorage::Register);
            let cond = cx.condition(test, "for")?;
            let step = cx.step_value(step, local, name_str)?;
            let body = cx.inside(Jump::Loop, |cx| cx.body(body))?;
            Ok(StmtKind::For {
                init: vec![(local, init)],
                cond: Some(cond),
                step: vec![(local, step)],
                body,
            })
        })?;
        Ok(stmt(kind, f))
    }

    /// `(break)` / `(continue)`.
    fn jump(&mut self, head: &str, args: &[Form], f: &Form) -> Result<Stmt> {
        if !args.is_empty() {
            return err(&f.span, format!("`{head}` takes no arguments: ({head})"));
        }
        match self.jumps.last() {
            None => err(
                &f.span,
                format!("`{head}` outside a loop; it is allowed only inside do, while and for"),
            ),
            // C would give `break` the switch and `continue` the loop; the IR allows neither
            // (ir.rs invariants), and each clause already ends the switch.
            Some(Jump::Switch) if head == "break" => err(
                &f.span,
                "`break` directly inside a switch clause is not allowed: each clause already \
                 ends the switch; to skip the rest of a clause, use an if",
            ),
            Some(Jump::Switch) => err(
                &f.span,
                "`continue` directly inside a switch clause is not allowed; set a variable in \
                 the clause and test it after the switch",
            ),
            Some(Jump::Loop) => Ok(stmt(
                if head == "break" {
                    StmtKind::Break
                } else {
                    StmtKind::Continue
                },
                f,
            )),
        }
    }

    /// `(switch expr (label stmt…)… (t stmt…))`.
    fn switch(&mut self, args: &[Form], f: &Form) -> Result<Stmt> {
        let Some((scrutinee_form, clauses)) = args.split_first() else {
            return err(
                &f.span,
                "switch needs a value and clauses: (switch VALUE (LABEL stmt…)… (t stmt…))",
            );
        };
        let scrutinee = self.expr(scrutinee_form)?;
        let Some(scalar) = scrutinee.ty.scalar().filter(|s| s.is_integer()) else {
            return err(
                &scrutinee_form.span,
                format!(
                    "switch needs an integer value, got {}",
                    with_article(&scrutinee.ty)
                ),
            );
        };
        let mut cases: Vec<SwitchCase> = Vec::new();
        let mut seen: Vec<(i128, &Form)> = Vec::new();
        let mut default: Option<(crate::ir::Block, &Form)> = None;
        for clause in clauses {
            let Some((label, body)) = clause.as_list().and_then(|l| l.split_first()) else {
                return err(
                    &clause.span,
                    format!("a switch clause is (LABEL stmt…), got `{clause}`"),
                );
            };
            let block = self.inside(Jump::Switch, |cx| cx.body(body))?;
            if matches!(label.as_symbol(), Some("t" | "otherwise" | "default")) {
                if let Some((_, prev)) = default {
                    return err(
                        &label.span,
                        format!(
                            "switch has two default clauses (the first at {})",
                            prev.span
                        ),
                    );
                }
                default = Some((block, label));
                continue;
            }
            let label_forms: &[Form] = match label.as_list() {
                Some(items) => match label.as_call() {
                    Some(("values", values)) => values,
                    Some(_) => std::slice::from_ref(label),
                    None => items,
                },
                None => std::slice::from_ref(label),
            };
            if label_forms.is_empty() {
                return err(&label.span, "a switch clause needs at least one label");
            }
            let mut values = Vec::new();
            for lf in label_forms {
                let e = self.expr(lf)?;
                let Some(v) = consts::int_value(&e) else {
                    return err(
                        &lf.span,
                        format!("a switch label must be an integer constant, got `{lf}`"),
                    );
                };
                let (lo, hi) = super::convert::int_range(scalar);
                if !(lo..=hi).contains(&v) {
                    return err(
                        &lf.span,
                        format!(
                            "switch label {v} does not fit the switch value's type {}",
                            scrutinee.ty
                        ),
                    );
                }
                if let Some((_, prev)) = seen.iter().find(|(x, _)| *x == v) {
                    return err(
                        &lf.span,
                        format!("duplicate switch label {v} (also at {})", prev.span),
                    );
                }
                seen.push((v, lf));
                values.push(v);
            }
            cases.push(SwitchCase {
                values,
                body: block,
            });
        }
        Ok(stmt(
            StmtKind::Switch {
                scrutinee,
                cases,
                default: default.map(|(b, _)| b),
            },
            f,
        ))
    }

    /// `(with-shared-memory ((var TYPE dim…)…) body…)`.
    fn shared_memory(&mut self, args: &[Form], f: &Form) -> Result<Stmt> {
        let usage = "(with-shared-memory ((VAR TYPE DIM…)…) body…)";
        let Some((specs, body)) = args.split_first() else {
            return err(
                &f.span,
                format!("with-shared-memory needs a list of arrays: {usage}"),
            );
        };
        let mut arrays: Vec<(&str, Type, Vec<Expr>, Vec<u64>)> = Vec::new();
        // Each array's spec: its statement's span, where the validator reports its size.
        let mut array_specs: Vec<&Form> = Vec::new();
        for spec in binding_list(specs, "with-shared-memory", usage)? {
            let Some([name, ty_form, dims @ ..]) = spec.as_list() else {
                return err(
                    &spec.span,
                    format!("a shared-memory spec is (VAR TYPE DIM…), got `{spec}`"),
                );
            };
            let name_str = binding_name(name, "a shared variable")?;
            if arrays.iter().any(|(n, ..)| *n == name_str) {
                return err(
                    &name.span,
                    format!("`{name_str}` is bound twice in one with-shared-memory"),
                );
            }
            let element = parse_type(ty_form, &self.m.structs)?;
            if element == Type::Void {
                return err(&ty_form.span, "shared memory cannot have type void");
            }
            let mut exprs = Vec::new();
            let mut sizes = Vec::new();
            for d in dims {
                let e = self.expr(d)?;
                match consts::int_value(&e)
                    .filter(|v| *v > 0)
                    .and_then(|v| u64::try_from(v).ok())
                {
                    Some(v) => sizes.push(v),
                    None => {
                        return err(
                            &d.span,
                            format!(
                                "the size of shared array `{name_str}` must be a positive integer \
                                 constant (literals and arithmetic on them), got `{d}`"
                            ),
                        );
                    }
                }
                exprs.push(e);
            }
            arrays.push((name_str, element, exprs, sizes));
            array_specs.push(spec);
        }
        let block = self.scoped(|cx| {
            let mut stmts = Vec::new();
            for ((name, element, dims, sizes), spec) in arrays.into_iter().zip(array_specs) {
                let mut ty = element.clone();
                for _ in 0..sizes.len() {
                    ty = ty.pointer_to();
                }
                let local = cx.declare(name, ty, LocalStorage::Shared);
                cx.shared_dims.insert(local, sizes.len());
                stmts.push(stmt(
                    StmtKind::SharedArray {
                        local,
                        element,
                        dims,
                        sizes,
                    },
                    spec,
                ));
            }
            cx.stmts_into(body, &mut stmts)?;
            Ok(Block { stmts })
        })?;
        Ok(stmt(StmtKind::Block(block), f))
    }

    /// `(with-dynamic-shared-memory ((var TYPE)…) body…)`.
    fn dynamic_shared_memory(&mut self, args: &[Form], f: &Form) -> Result<Stmt> {
        let usage = "(with-dynamic-shared-memory ((VAR TYPE)…) body…)";
        let Some((specs, body)) = args.split_first() else {
            return err(
                &f.span,
                format!("with-dynamic-shared-memory needs a list of variables: {usage}"),
            );
        };
        let mut vars: Vec<(&str, Type)> = Vec::new();
        for spec in binding_list(specs, "with-dynamic-shared-memory", usage)? {
            let Some([name, ty_form]) = spec.as_list().and_then(|l| <&[Form; 2]>::try_from(l).ok())
            else {
                return err(
                    &spec.span,
                    format!("a dynamic shared-memory spec is (VAR TYPE), got `{spec}`"),
                );
            };
            let name_str = binding_name(name, "a shared variable")?;
            if vars.iter().any(|(n, _)| *n == name_str) {
                return err(
                    &name.span,
                    format!("`{name_str}` is bound twice in one with-dynamic-shared-memory"),
                );
            }
            let ty = parse_type(ty_form, &self.m.structs)?;
            if ty == Type::Void {
                return err(&ty_form.span, "shared memory cannot have type void");
            }
            vars.push((name_str, ty));
        }
        let block = self.scoped(|cx| {
            let locals: Vec<LocalId> = vars
                .into_iter()
                .map(|(n, t)| cx.declare(n, t.pointer_to(), LocalStorage::DynamicShared))
                .collect();
            let mut stmts = vec![stmt(StmtKind::DynamicShared { locals }, f)];
            cx.stmts_into(body, &mut stmts)?;
            Ok(Block { stmts })
        })?;
        Ok(stmt(StmtKind::Block(block), f))
    }

    /// `(set place value)`.
    fn set(&mut self, args: &[Form], f: &Form) -> Result<Stmt> {
        let [place_form, value_form] = args else {
            return err(&f.span, "set takes a place and a value: (set PLACE VALUE)");
        };
        let place = self.expr(place_form)?;
        let what = match &place.kind {
            ExprKind::Local(id) => {
                let local = &self.locals[id.index()];
                let dims = self.shared_dims.get(id).copied().unwrap_or(0);
                assignable_storage(&local.storage, dims, display_name(&local.name))
                    .map_err(|m| crate::Error::new(&place_form.span, m))?;
                format!("variable {}", display_name(&local.name))
            }
            ExprKind::Global(id) => {
                let g = &self.m.globals[id.index()];
                if g.qualifiers.contains(&GlobalQualifier::Constant) {
                    return err(
                        &place_form.span,
                        format!(
                            "`{}` is a :constant global; device code cannot write it (set it from the host)",
                            g.name
                        ),
                    );
                }
                format!("global {}", g.name)
            }
            ExprKind::Aref { .. } if self.is_place(&place) => format!("element {place_form}"),
            ExprKind::Aref { .. } => {
                return err(
                    &place_form.span,
                    format!(
                        "`{place_form}` is a row of a shared array; assign its elements with more indices"
                    ),
                );
            }
            ExprKind::Field { .. } if self.is_place(&place) => format!("field {place_form}"),
            ExprKind::Index(_) => {
                return err(
                    &place_form.span,
                    format!("`{place_form}` is an index variable and cannot be assigned"),
                );
            }
            _ => {
                return err(
                    &place_form.span,
                    format!(
                        "cannot assign to `{place_form}`: set needs a variable, a global, an (aref …) \
                         or an accessor such as (float4-x v)"
                    ),
                );
            }
        };
        let value = self.value(value_form)?;
        let got = value.ty.clone();
        let Some(value) = coerce(value, &place.ty) else {
            return err(
                &value_form.span,
                format!(
                    "cannot store {} in {} {what}; {}",
                    with_article(&got),
                    place.ty,
                    fix(&got, &place.ty)
                ),
            );
        };
        Ok(stmt(StmtKind::Assign { place, value }, f))
    }

    /// `(return [value])`.
    fn return_stmt(&mut self, args: &[Form], f: &Form) -> Result<Stmt> {
        let name = self.fn_name.clone();
        match (args, &self.ret) {
            ([], Type::Void) => Ok(stmt(StmtKind::Return(None), f)),
            ([], ret) => err(
                &f.span,
                format!("`{name}` returns {ret}; return needs a value: (return VALUE)"),
            ),
            ([v], Type::Void) => err(
                &v.span,
                format!("`{name}` returns void, so return takes no value"),
            ),
            ([v], ret) => {
                let ret = ret.clone();
                let e = self.value(v)?;
                let got = e.ty.clone();
                match coerce(e, &ret) {
                    Some(e) => Ok(stmt(StmtKind::Return(Some(e)), f)),
                    None => err(
                        &v.span,
                        format!(
                            "`{name}` returns {ret}, but this value is {}; {}",
                            with_article(&got),
                            fix(&got, &ret)
                        ),
                    ),
                }
            }
            _ => err(&f.span, "return takes at most one value"),
        }
    }

    /// `(printf "format" args…)`.
    fn printf(&mut self, args: &[Form], f: &Form) -> Result<Stmt> {
        let Some((format_form, arg_forms)) = args.split_first() else {
            return err(
                &f.span,
                "printf needs a format string: (printf \"…\" args…)",
            );
        };
        let FormKind::Str(format) = &format_form.kind else {
            return err(
                &format_form.span,
                "the format of printf must be a string literal",
            );
        };
        let conversions =
            printf::conversions(format).map_err(|m| crate::Error::new(&format_form.span, m))?;
        if conversions.len() != arg_forms.len() {
            return err(
                &f.span,
                format!(
                    "the printf format has {} conversion{} but {} argument{} given",
                    conversions.len(),
                    if conversions.len() == 1 { "" } else { "s" },
                    arg_forms.len(),
                    if arg_forms.len() == 1 { " is" } else { "s are" }
                ),
            );
        }
        let mut out = Vec::new();
        for (arg, conv) in arg_forms.iter().zip(&conversions) {
            let e = self.value(arg)?;
            let e = printf::promote(e).map_err(|m| crate::Error::new(&arg.span, m))?;
            printf::check(conv, &e.ty).map_err(|m| crate::Error::new(&arg.span, m))?;
            out.push(e);
        }
        Ok(stmt(
            StmtKind::Printf {
                format: format.clone(),
                args: out,
            },
            f,
        ))
    }
}

/// `(let (b1 b2 …) body…)` as `((b1) (let (b2 …) body…))`: the arguments of a let whose first
/// binding is seen by the rest (see `let_stmt`).
fn sequential_let(bindings: &Form, body: &[Form], span: &Span) -> Vec<Form> {
    let items = bindings.as_list().unwrap_or_default();
    let Some((first, rest)) = items.split_first() else {
        return std::iter::once(bindings.clone())
            .chain(body.iter().cloned())
            .collect();
    };
    let first = Form::list(vec![first.clone()], bindings.span.clone());
    if rest.is_empty() {
        return std::iter::once(first).chain(body.iter().cloned()).collect();
    }
    let mut inner = vec![
        Form::symbol("let", span.clone()),
        Form::list(rest.to_vec(), bindings.span.clone()),
    ];
    inner.extend(body.iter().cloned());
    vec![first, Form::list(inner, span.clone())]
}

/// The items of a binding list (`()` and `nil` are empty).
fn binding_list<'f>(form: &'f Form, what: &str, usage: &str) -> Result<&'f [Form]> {
    match &form.kind {
        FormKind::List(items) => Ok(items),
        FormKind::Symbol(s) if s == "nil" => Ok(&[]),
        _ => err(
            &form.span,
            format!("malformed {what}: expected a list of bindings, got `{form}`; {usage}"),
        ),
    }
}
