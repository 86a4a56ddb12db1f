//! Expressions: literals, variables, `aref`, accessors, casts, constructors, calls and
//! built-ins with overload resolution.

use super::builtins::{self, Signature};
use super::convert::{self, coerce, common_type_of, cost, fix, is_arithmetic, with_article};
use super::{FnCx, did_you_mean, err, names::display_name, node};
use crate::error::Result;
use crate::form::{FloatPrecision, Form, FormKind, IntSuffix};
use crate::ir::{Axis, Builtin, Expr, ExprKind, FunctionKind, IndexVar, Literal, LocalStorage};
use crate::span::Span;
use crate::types::{ScalarType, Type, VectorType};

/// Every index variable by name.
pub(super) const INDEX_VARIABLES: [(&str, IndexVar); 23] = [
    ("thread-idx-x", IndexVar::ThreadIdx(Axis::X)),
    ("thread-idx-y", IndexVar::ThreadIdx(Axis::Y)),
    ("thread-idx-z", IndexVar::ThreadIdx(Axis::Z)),
    ("block-idx-x", IndexVar::BlockIdx(Axis::X)),
    ("block-idx-y", IndexVar::BlockIdx(Axis::Y)),
    ("block-idx-z", IndexVar::BlockIdx(Axis::Z)),
    ("block-dim-x", IndexVar::BlockDim(Axis::X)),
    ("block-dim-y", IndexVar::BlockDim(Axis::Y)),
    ("block-dim-z", IndexVar::BlockDim(Axis::Z)),
    ("grid-dim-x", IndexVar::GridDim(Axis::X)),
    ("grid-dim-y", IndexVar::GridDim(Axis::Y)),
    ("grid-dim-z", IndexVar::GridDim(Axis::Z)),
    ("cluster-dim-x", IndexVar::ClusterDim(Axis::X)),
    ("cluster-dim-y", IndexVar::ClusterDim(Axis::Y)),
    ("cluster-dim-z", IndexVar::ClusterDim(Axis::Z)),
    ("cluster-idx-x", IndexVar::ClusterIdx(Axis::X)),
    ("cluster-idx-y", IndexVar::ClusterIdx(Axis::Y)),
    ("cluster-idx-z", IndexVar::ClusterIdx(Axis::Z)),
    ("block-in-cluster-x", IndexVar::BlockInCluster(Axis::X)),
    ("block-in-cluster-y", IndexVar::BlockInCluster(Axis::Y)),
    ("block-in-cluster-z", IndexVar::BlockInCluster(Axis::Z)),
    ("warp-size", IndexVar::WarpSize),
    ("lane-id", IndexVar::LaneId),
];

/// The index variable named `name`.
pub(super) fn index_variable(name: &str) -> Option<IndexVar> {
    INDEX_VARIABLES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
}

/// `float4-x` → (float4, 0).
pub(super) fn vector_accessor(name: &str) -> Option<(VectorType, usize)> {
    let (base, component) = name.rsplit_once('-')?;
    let vt = VectorType::from_name(base)?;
    let index = vt.components().iter().position(|c| *c == component)?;
    Some((vt, index))
}

/// The statements with their own syntax (`let`, `set` …): no value, no use as an expression.
const STATEMENT_FORMS: &[&str] = &[
    "let",
    "do",
    "while",
    "for",
    "break",
    "continue",
    "switch",
    "with-shared-memory",
    "with-dynamic-shared-memory",
    "set",
    "progn",
    "return",
    "declare",
    "printf",
    "cuda-asm",
];

/// The expressions with their own syntax (`values` only as a `switch` label).
const EXPRESSION_FORMS: &[&str] = &["if", "aref", "pointer", "values"];

/// True for a name with its own syntax, which no function may take.
pub(super) fn is_special_form(name: &str) -> bool {
    STATEMENT_FORMS.contains(&name) || EXPRESSION_FORMS.contains(&name)
}

/// Macros the expander removes; seeing one means the forms were not expanded.
pub(super) const EXPANDER_MACROS: &[&str] =
    &["let*", "when", "unless", "macrolet", "symbol-macrolet"];

/// The type of an integer literal written with `suffix`.
fn int_literal_type(value: i128, suffix: IntSuffix) -> std::result::Result<ScalarType, String> {
    use ScalarType::*;
    let fits = |t: ScalarType| {
        let (lo, hi) = convert::int_range(t);
        (lo..=hi).contains(&value)
    };
    let candidates: &[ScalarType] = match suffix {
        IntSuffix::None => &[Int, Int64],
        IntSuffix::U => &[UInt, UInt64],
        IntSuffix::L => &[Int64],
        IntSuffix::UL => &[UInt64],
    };
    candidates.iter().copied().find(|t| fits(*t)).ok_or_else(|| {
        if value < 0 && matches!(suffix, IntSuffix::U | IntSuffix::UL) {
            format!("an unsigned literal cannot be negative; write (uint {value}) for the wrapped value")
        } else {
            format!(
                "integer literal {value} does not fit in {}",
                candidates.last().map(|t| t.name()).unwrap_or("int64")
            )
        }
    })
}

impl FnCx<'_> {
    /// Checks an expression.
    pub(super) fn expr(&mut self, f: &Form) -> Result<Expr> {
        match &f.kind {
            FormKind::Int { value, suffix } => match int_literal_type(*value, *suffix) {
                Ok(t) => Ok(node(
                    ExprKind::Literal(Literal::Int(*value)),
                    Type::Scalar(t),
                    &f.span,
                )),
                Err(m) => err(&f.span, m),
            },
            FormKind::Float { value, precision } => {
                let ty = match precision {
                    FloatPrecision::Single => Type::FLOAT,
                    FloatPrecision::Double => Type::DOUBLE,
                };
                Ok(node(ExprKind::Literal(Literal::Float(*value)), ty, &f.span))
            }
            FormKind::Str(_) => err(
                &f.span,
                "a string can only be the format of printf or the text of cuda-asm",
            ),
            FormKind::Symbol(name) => self.variable(name, f),
            FormKind::List(items) if items.is_empty() => Ok(node(
                ExprKind::Literal(Literal::Bool(false)),
                Type::Bool,
                &f.span,
            )),
            FormKind::List(items) => match f.as_call() {
                Some((head, args)) => self.call(head, args, f),
                None => err(
                    &items[0].span,
                    format!(
                        "expected a function or operator name at the head of `{f}`, got `{}`",
                        items[0]
                    ),
                ),
            },
        }
    }

    /// A symbol in expression position.
    fn variable(&mut self, name: &str, f: &Form) -> Result<Expr> {
        let e = self.variable_unrestricted(name, f)?;
        // C gives a multi-dimensional array the type `T (*)[d1]…` as a value, which is not
        // the `T**` the IR would type it as: only indexing it is valid.
        if let ExprKind::Local(id) = e.kind
            && let Some(&dims) = self.shared_dims.get(&id)
            && dims >= 2
        {
            let index_names: Vec<String> = (0..dims)
                .map(|n| match ["i", "j", "k", "l"].get(n) {
                    Some(index) => index.to_string(),
                    None => format!("i{n}"),
                })
                .collect();
            let row = index_names[..dims - 1].join(" ");
            return err(
                &f.span,
                format!(
                    "`{name}` is a {dims}-dimensional shared array, which C cannot use as a \
                     {} value; index it with (aref {name} {}), pass a row as (aref {name} {row}) \
                     or (pointer (aref {name} {row} 0)), or use a 1-D array",
                    e.ty,
                    index_names.join(" ")
                ),
            );
        }
        Ok(e)
    }

    /// A symbol in expression position, multi-dimensional shared arrays allowed.
    fn variable_unrestricted(&mut self, name: &str, f: &Form) -> Result<Expr> {
        match name {
            "t" => {
                return Ok(node(
                    ExprKind::Literal(Literal::Bool(true)),
                    Type::Bool,
                    &f.span,
                ));
            }
            "nil" => {
                return Ok(node(
                    ExprKind::Literal(Literal::Bool(false)),
                    Type::Bool,
                    &f.span,
                ));
            }
            _ => {}
        }
        if let Some(id) = self.lookup(name) {
            let ty = self.locals[id.index()].ty.clone();
            return Ok(node(ExprKind::Local(id), ty, &f.span));
        }
        if let Some(id) = self.m.global(name) {
            let ty = self.m.globals[id.index()].ty.clone();
            return Ok(node(ExprKind::Global(id), ty, &f.span));
        }
        if let Some(v) = index_variable(name) {
            return Ok(node(ExprKind::Index(v), Type::INT, &f.span));
        }
        if name.starts_with(':') {
            return err(&f.span, format!("the keyword `{name}` is not a value"));
        }
        let shown = display_name(name);
        let candidates = self.visible_variables();
        let hint = did_you_mean(name, candidates.iter().map(String::as_str));
        err(&f.span, format!("unknown variable `{shown}`{hint}"))
    }

    /// A list form in expression position: `(head args…)`.
    fn call(&mut self, head: &str, args: &[Form], f: &Form) -> Result<Expr> {
        match head {
            "aref" => return self.aref(args, f),
            "values" => {
                return err(
                    &f.span,
                    "`values` is allowed only as a switch label: ((values 1 2) …)",
                );
            }
            "if" => return self.select(args, f),
            "pointer" => return self.address_of(args, f),
            "and" | "or" => return self.logic(head, args, f),
            _ => {}
        }
        if STATEMENT_FORMS.contains(&head) {
            return err(
                &f.span,
                format!(
                    "`{head}` is a statement and has no value; it cannot be used as an expression"
                ),
            );
        }
        if EXPANDER_MACROS.contains(&head) {
            return err(
                &f.span,
                format!(
                    "`{head}` is a macro; compile with chorus_lang::compile_forms or compile_str, which expand macros first"
                ),
            );
        }
        if let Some((target, source)) = builtins::cast_target(head) {
            return self.cast(head, target, source, args, f);
        }
        if let Some(vt) = VectorType::from_name(head) {
            let parts: Vec<Type> = vec![Type::Scalar(vt.element()); vt.len()];
            return self.construct(head, Type::Vector(vt), &parts, args, f);
        }
        if let Some((vt, index)) = vector_accessor(head) {
            return self.field(
                head,
                &Type::Vector(vt),
                index,
                Type::Scalar(vt.element()),
                args,
                f,
            );
        }
        if let Some(&(s, index)) = self.m.accessors.get(head) {
            let def = &self.m.structs[s];
            let (owner, field_ty) = (Type::Struct(def.name.clone()), def.fields[index].ty.clone());
            return self.field(head, &owner, index, field_ty, args, f);
        }
        if let Some(&s) = self.m.constructors.get(head) {
            let def = &self.m.structs[s];
            let parts: Vec<Type> = def.fields.iter().map(|fd| fd.ty.clone()).collect();
            return self.construct(head, Type::Struct(def.name.clone()), &parts, args, f);
        }
        if let Some(id) = self.m.function(head) {
            return self.user_call(id, args, f);
        }
        if builtins::is_texture_builtin(head) {
            return self.texture_builtin(head, args, f);
        }
        if super::tensor::is_tensor_builtin(head) {
            return self.tensor_builtin(head, args, f);
        }
        if !builtins::signatures(head).is_empty() {
            let e = self.builtin(head, args, f)?;
            super::hopper::check_constants(head, &e)?;
            return Ok(e);
        }
        let mut known: Vec<&str> = builtins::names().collect();
        known.extend(super::tensor::NAMES);
        known.extend(self.m.functions.iter().map(|s| s.name.as_str()));
        known.extend(self.m.accessors.keys().map(String::as_str));
        known.extend(self.m.constructors.keys().map(String::as_str));
        known.extend(STATEMENT_FORMS.iter().chain(EXPRESSION_FORMS).copied());
        // Casts and vector constructors.
        known.extend(ScalarType::ALL.iter().map(|t| t.name()));
        known.extend(VectorType::ALL.iter().map(|t| t.name()));
        known.extend(builtins::CONVERSIONS.iter().map(|(n, ..)| *n));
        let hint = did_you_mean(head, known);
        err(
            &f.span,
            format!("unknown function `{}`{hint}", display_name(head)),
        )
    }

    /// `(aref base i j…)`.
    fn aref(&mut self, args: &[Form], f: &Form) -> Result<Expr> {
        let Some((base_form, index_forms)) = args.split_first().filter(|(_, i)| !i.is_empty())
        else {
            return err(
                &f.span,
                "aref needs an array and at least one index: (aref ARRAY INDEX…)",
            );
        };
        let base = match base_form.as_symbol() {
            Some(name) => self.variable_unrestricted(name, base_form)?,
            None => self.expr(base_form)?,
        };
        let depth = base.ty.pointer_depth();
        if depth == 0 {
            return err(
                &base_form.span,
                format!(
                    "aref needs a pointer or array, but `{base_form}` has type {}",
                    base.ty
                ),
            );
        }
        if index_forms.len() > depth {
            return err(
                &index_forms[depth].span,
                format!(
                    "too many indices: `{base_form}` has type {} and takes at most {depth} ({} given)",
                    base.ty,
                    index_forms.len()
                ),
            );
        }
        if let ExprKind::Local(id) = base.kind {
            let dims = self.shared_dims.get(&id).copied().unwrap_or(0);
            if dims >= 2 && index_forms.len() + 1 < dims {
                return err(
                    &f.span,
                    format!(
                        "`{base_form}` is a {dims}-dimensional shared array; give at least {} indices",
                        dims - 1
                    ),
                );
            }
        }
        // Exact capacities here and below: a vector grown by pushes keeps room for four, which
        // for the two operands of most operations would double the IR of a function.
        let mut indices = Vec::with_capacity(index_forms.len());
        for i in index_forms {
            let e = self.expr(i)?;
            if !e.ty.is_integer() {
                let hint = if e.ty.scalar().is_some() {
                    format!("; {}", fix(&e.ty, &Type::INT))
                } else {
                    String::new()
                };
                return err(
                    &i.span,
                    format!(
                        "an array index must be an integer, got {}{hint}",
                        with_article(&e.ty)
                    ),
                );
            }
            indices.push(e);
        }
        let mut ty = base.ty.clone();
        for _ in 0..indices.len() {
            ty = ty.pointee().cloned().expect("depth checked above");
        }
        Ok(node(
            ExprKind::Aref {
                base: Box::new(base),
                indices,
            },
            ty,
            &f.span,
        ))
    }

    /// `(if test a b)` in expression position.
    fn select(&mut self, args: &[Form], f: &Form) -> Result<Expr> {
        let [test, then, otherwise] = args else {
            return err(
                &f.span,
                "an if used as a value needs a test and two values: (if TEST THEN ELSE)",
            );
        };
        let cond = self.condition(test, "if")?;
        let (a_e, b_e) = (self.expr(then)?, self.expr(otherwise)?);
        let ty = if a_e.ty == b_e.ty {
            a_e.ty.clone()
        } else {
            convert::common_type(&a_e, &b_e).map_err(|m| {
                crate::Error::new(
                    &otherwise.span,
                    format!("the two values of if must have one type: {m}"),
                )
            })?
        };
        if ty == Type::Void {
            return err(
                &then.span,
                "the values of an if used as a value cannot be void",
            );
        }
        let (Some(a_e), Some(b_e)) = (coerce(a_e, &ty), coerce(b_e, &ty)) else {
            return err(
                &f.span,
                format!("the two values of if do not convert to {ty}"),
            );
        };
        Ok(node(
            ExprKind::Select {
                cond: Box::new(cond),
                then: Box::new(a_e),
                otherwise: Box::new(b_e),
            },
            ty,
            &f.span,
        ))
    }

    /// A `bool` test of `what` (if, while, for, do).
    pub(super) fn condition(&mut self, form: &Form, what: &str) -> Result<Expr> {
        let e = self.expr(form)?;
        if e.ty != Type::Bool {
            let hint = if e.ty.scalar().is_some() {
                "; compare explicitly, e.g. (/= x 0)"
            } else {
                ""
            };
            return err(
                &form.span,
                format!("the test of {what} must be bool, got {}{hint}", e.ty),
            );
        }
        Ok(e)
    }

    /// `(pointer place)`.
    fn address_of(&mut self, args: &[Form], f: &Form) -> Result<Expr> {
        let [place] = args else {
            return err(&f.span, "pointer takes one place: (pointer PLACE)");
        };
        let e = self.expr(place)?;
        if let ExprKind::Local(id) = e.kind
            && self.shared_dims.get(&id).copied().unwrap_or(0) > 0
        {
            return err(
                &place.span,
                format!("`{place}` is a shared array and already a pointer; use it directly"),
            );
        }
        if let ExprKind::Global(id) = e.kind
            && self.m.globals[id.0 as usize]
                .qualifiers
                .contains(&crate::ir::GlobalQualifier::Constant)
        {
            return err(
                &place.span,
                format!("cannot take the address of :constant global `{place}`"),
            );
        }
        if !self.is_place(&e) {
            return err(
                &place.span,
                format!(
                    "pointer needs a place (a variable, global, aref or accessor), got `{place}`"
                ),
            );
        }
        let ty = e.ty.clone().pointer_to();
        Ok(node(ExprKind::AddressOf(Box::new(e)), ty, &f.span))
    }

    /// True when `e` denotes storage (ignoring whether it may be written).
    pub(super) fn is_place(&self, e: &Expr) -> bool {
        match &e.kind {
            // A row of a multi-dimensional shared array is a C array, not a place.
            ExprKind::Aref { base, indices } => match base.kind {
                ExprKind::Local(id) => self
                    .shared_dims
                    .get(&id)
                    .is_none_or(|d| indices.len() >= *d),
                _ => true,
            },
            ExprKind::Local(_) | ExprKind::Global(_) => true,
            ExprKind::Field { base, .. } => self.is_place(base),
            _ => false,
        }
    }

    /// `and` / `or`: any number of bools, short-circuit, folded left.
    fn logic(&mut self, head: &str, args: &[Form], f: &Form) -> Result<Expr> {
        let op = if head == "and" {
            Builtin::And
        } else {
            Builtin::Or
        };
        let mut acc: Option<Expr> = None;
        for arg in args {
            let e = self.expr(arg)?;
            if e.ty != Type::Bool {
                return err(
                    &arg.span,
                    format!(
                        "`{head}` needs bool operands, got {}; compare explicitly, e.g. (/= x 0)",
                        with_article(&e.ty)
                    ),
                );
            }
            acc = Some(match acc {
                None => e,
                Some(prev) => node(
                    ExprKind::Builtin {
                        op,
                        args: vec![prev, e],
                    },
                    Type::Bool,
                    &f.span,
                ),
            });
        }
        Ok(acc.unwrap_or_else(|| {
            node(
                ExprKind::Literal(Literal::Bool(head == "and")),
                Type::Bool,
                &f.span,
            )
        }))
    }

    /// `(float x)`, `(uint -1)`, `(float-to-half f)`.
    fn cast(
        &mut self,
        head: &str,
        target: ScalarType,
        source: Option<ScalarType>,
        args: &[Form],
        f: &Form,
    ) -> Result<Expr> {
        let [arg] = args else {
            return err(
                &f.span,
                format!("`{head}` converts one value: ({head} VALUE)"),
            );
        };
        let e = self.expr(arg)?;
        let target_ty = Type::Scalar(target);
        let value = match source {
            Some(src) => {
                let src_ty = Type::Scalar(src);
                coerce(e.clone(), &src_ty).ok_or_else(|| {
                    crate::Error::new(
                        &arg.span,
                        format!("`{head}` converts a {src_ty}, got {}", with_article(&e.ty)),
                    )
                })?
            }
            None => {
                let convertible =
                    e.ty.scalar().is_some() || (e.ty == Type::Bool && target.is_integer());
                if e.ty == Type::Bool && !target.is_integer() {
                    return err(
                        &arg.span,
                        format!(
                            "a bool converts only to an integer type; for {target_ty} choose the \
                             values explicitly, e.g. (if b 1.0 0.0)"
                        ),
                    );
                }
                if !convertible {
                    return err(
                        &arg.span,
                        format!("cannot convert {} to {target_ty}", with_article(&e.ty)),
                    );
                }
                e
            }
        };
        Ok(node(
            ExprKind::Cast {
                value: Box::new(value),
                implicit: false,
            },
            target_ty,
            &f.span,
        ))
    }

    /// A vector or structure constructor.
    fn construct(
        &mut self,
        head: &str,
        ty: Type,
        parts: &[Type],
        args: &[Form],
        f: &Form,
    ) -> Result<Expr> {
        if args.len() != parts.len() {
            return err(
                &f.span,
                format!(
                    "`{head}` takes {} values ({}), got {}",
                    parts.len(),
                    list_types(parts),
                    args.len()
                ),
            );
        }
        let mut values = Vec::with_capacity(args.len());
        for (i, (arg, want)) in args.iter().zip(parts).enumerate() {
            let e = self.expr(arg)?;
            let got = e.ty.clone();
            match coerce(e, want) {
                Some(e) => values.push(e),
                None => {
                    return err(
                        &arg.span,
                        format!(
                            "value {} of `{head}` must be {want}, got {}; {}",
                            i + 1,
                            with_article(&got),
                            fix(&got, want)
                        ),
                    );
                }
            }
        }
        Ok(node(ExprKind::Construct(values), ty, &f.span))
    }

    /// A vector component or structure field: `(float4-x v)`, `(pair-x p)`.
    fn field(
        &mut self,
        head: &str,
        owner: &Type,
        index: usize,
        ty: Type,
        args: &[Form],
        f: &Form,
    ) -> Result<Expr> {
        let [arg] = args else {
            return err(
                &f.span,
                format!("`{head}` takes one {owner}: ({head} VALUE)"),
            );
        };
        let base = self.expr(arg)?;
        if base.ty != *owner {
            let hint = if base.ty.pointee() == Some(owner) {
                format!("; for a pointer write ({head} (aref {arg} 0))")
            } else {
                String::new()
            };
            return err(
                &arg.span,
                format!(
                    "`{head}` needs {}, got {}{hint}",
                    with_article(owner),
                    with_article(&base.ty)
                ),
            );
        }
        Ok(node(
            ExprKind::Field {
                base: Box::new(base),
                index,
            },
            ty,
            &f.span,
        ))
    }

    /// A call of a function of the module.
    fn user_call(&mut self, id: crate::ir::FunctionId, args: &[Form], f: &Form) -> Result<Expr> {
        let sig = &self.m.functions[id.0 as usize];
        if sig.kind == FunctionKind::Kernel {
            return err(
                &f.span,
                format!(
                    "`{0}` is a kernel; kernels are launched from the host, not called. To call it, \
                     make it a device function: (defkernel ({0} :device) …)",
                    sig.name
                ),
            );
        }
        if args.len() != sig.params.len() {
            let types: Vec<Type> = sig.params.iter().map(|p| p.ty.clone()).collect();
            return err(
                &f.span,
                format!(
                    "`{}` takes {} argument{} ({}), got {}",
                    sig.name,
                    types.len(),
                    if types.len() == 1 { "" } else { "s" },
                    list_types(&types),
                    args.len()
                ),
            );
        }
        let mut values = Vec::with_capacity(args.len());
        for (i, arg) in args.iter().enumerate() {
            let e = self.expr(arg)?;
            let want = &self.m.functions[id.0 as usize].params[i].ty;
            let got = e.ty.clone();
            match coerce(e, want) {
                Some(e) => values.push(e),
                None => {
                    return err(
                        &arg.span,
                        format!(
                            "argument {} of `{}` must be {want}, got {}; {}",
                            i + 1,
                            self.m.functions[id.0 as usize].name,
                            with_article(&got),
                            fix(&got, want)
                        ),
                    );
                }
            }
        }
        let ret = self.m.functions[id.0 as usize].ret.clone();
        Ok(node(
            ExprKind::Call {
                function: id,
                args: values,
            },
            ret,
            &f.span,
        ))
    }

    /// A call of a table built-in.
    fn builtin(&mut self, head: &str, arg_forms: &[Form], f: &Form) -> Result<Expr> {
        let mut args = Vec::with_capacity(arg_forms.len());
        for arg in arg_forms {
            let e = self.expr(arg)?;
            if e.ty == Type::Void {
                return err(&arg.span, format!("`{arg}` returns no value"));
            }
            args.push(e);
        }
        if !builtins::folds_left(head) || args.len() <= 2 {
            if builtins::folds_left(head) && args.len() == 1 && !matches!(head, "-" | "/") {
                // (+ x), (* x), (min x): the value itself.
                let e = args.pop().expect("one argument");
                if !is_arithmetic(&e.ty) && !matches!(e.ty, Type::Vector(_)) {
                    return err(
                        &e.span,
                        format!("`{head}` needs a number, got {}", with_article(&e.ty)),
                    );
                }
                return Ok(e);
            }
            return resolve(head, args, &f.span);
        }
        let mut iter = args.into_iter();
        let mut acc = iter.next().expect("more than two arguments");
        for next in iter {
            acc = resolve(head, vec![acc, next], &f.span)?;
        }
        Ok(acc)
    }
}

/// `int, float*`.
fn list_types(types: &[Type]) -> String {
    types
        .iter()
        .map(Type::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// True when every overload of `sigs` whose parameters are all arithmetic scalars has one
/// parameter type throughout (so C's usual arithmetic conversions decide the overload).
fn is_homogeneous(sigs: &[&Signature]) -> bool {
    let scalar_sigs: Vec<&&Signature> = sigs
        .iter()
        .filter(|s| s.params.iter().all(is_arithmetic))
        .collect();
    !scalar_sigs.is_empty()
        && scalar_sigs
            .iter()
            .all(|s| s.params.iter().all(|p| *p == s.params[0]))
}

/// Resolves a built-in call against the overload table and inserts the implicit conversions.
///
/// 1. An overload that takes the argument types exactly.
/// 2. For operators over numbers of one type (`+`, `<`, `min`, `fma` …) when every argument is a
///    number: the common type of C's usual arithmetic conversions, restricted to the implicit
///    conversions (`(+ i 1.5)` is float; `(+ i u)` for int and uint is an error).
/// 3. The overload whose implicit conversions cost least (ties: the earlier in the table).
pub(super) fn resolve(name: &str, args: Vec<Expr>, span: &Span) -> Result<Expr> {
    resolve_among(
        name,
        builtins::signatures(name).iter().collect(),
        args,
        span,
    )
}

/// [`resolve`] among `all`, some of `name`'s overloads (those of one result type, say).
pub(super) fn resolve_among(
    name: &str,
    all: Vec<&Signature>,
    args: Vec<Expr>,
    span: &Span,
) -> Result<Expr> {
    let sigs: Vec<&Signature> = all
        .iter()
        .copied()
        .filter(|s| s.params.len() == args.len())
        .collect();
    if sigs.is_empty() {
        let mut arities: Vec<usize> = all.iter().map(|s| s.params.len()).collect();
        arities.sort_unstable();
        arities.dedup();
        let expected = arities
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(" or ");
        let plural = if arities == [1] { "" } else { "s" };
        return err(
            span,
            format!(
                "`{name}` takes {expected} argument{plural}, got {}",
                args.len()
            ),
        );
    }
    let apply = |sg: &Signature, args: Vec<Expr>| -> Result<Expr> {
        let mut converted = Vec::with_capacity(args.len());
        for (e, p) in args.into_iter().zip(&sg.params) {
            let (got, arg_span) = (e.ty.clone(), e.span.clone());
            match coerce(e, p) {
                Some(e) => converted.push(e),
                None => {
                    return err(
                        &arg_span,
                        format!(
                            "`{name}` needs {} here, got {}",
                            with_article(p),
                            with_article(&got)
                        ),
                    );
                }
            }
        }
        Ok(node(
            ExprKind::Builtin {
                op: sg.op,
                args: converted,
            },
            sg.result.clone(),
            span,
        ))
    };
    if let Some(sg) = sigs
        .iter()
        .find(|s| s.params.iter().zip(&args).all(|(p, e)| *p == e.ty))
    {
        return apply(sg, args);
    }
    if args.iter().all(|e| is_arithmetic(&e.ty)) && is_homogeneous(&sigs) {
        match common_type_of(&args) {
            Ok(t) => {
                if let Some(sg) = sigs.iter().find(|s| s.params.iter().all(|p| *p == t)) {
                    return apply(sg, args);
                }
            }
            Err((i, message)) => return err(&args[i].span, format!("`{name}`: {message}")),
        }
    }
    let best = sigs
        .iter()
        .filter_map(|s| {
            let costs: Option<Vec<u32>> = s
                .params
                .iter()
                .zip(&args)
                .map(|(p, e)| cost(e, p))
                .collect();
            costs.map(|c| (c.iter().sum::<u32>(), *s))
        })
        .min_by_key(|(c, _)| *c);
    if let Some((_, sg)) = best {
        return apply(sg, args);
    }
    let got: Vec<Type> = args.iter().map(|e| e.ty.clone()).collect();
    let accepted: Vec<Signature> = sigs.iter().map(|s| (*s).clone()).collect();
    err(
        span,
        format!(
            "no overload of `{name}` takes ({}); accepted: {}",
            list_types(&got),
            builtins::describe(&accepted)
        ),
    )
}

/// Whether `storage` may be the target of `set`, with the reason when not.
pub(super) fn assignable_storage(
    storage: &LocalStorage,
    dims: usize,
    name: &str,
) -> std::result::Result<(), String> {
    match storage {
        LocalStorage::Register => Ok(()),
        LocalStorage::Shared if dims == 0 => Ok(()),
        LocalStorage::Shared => Err(format!(
            "shared array `{name}` cannot be assigned; assign its elements: (set (aref {name} …) …)"
        )),
        LocalStorage::DynamicShared => Err(format!(
            "`{name}` aliases dynamic shared memory and cannot be reassigned; assign its elements: (set (aref {name} …) …)"
        )),
    }
}
