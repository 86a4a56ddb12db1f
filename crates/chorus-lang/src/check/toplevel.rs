//! Top-level forms: `defkernel-struct`, `defglobal`, `defkernel`.

use super::{FnCx, binding_name, builtins, consts, err, expr, flow, parse_type};
use crate::error::Result;
use crate::form::{Form, FormKind};
use crate::ir::{
    self, Function, FunctionId, FunctionKind, Global, GlobalId, GlobalQualifier, LaunchBounds,
    LocalStorage, Param, StructDef, StructField,
};
use crate::span::Span;
use crate::stack;
use crate::types::{Type, VectorType};
use std::borrow::Cow;
use std::collections::HashMap;

/// A function's signature, known before any body is checked.
pub(super) struct FnSig {
    pub name: String,
    pub kind: FunctionKind,
    pub ret: Type,
    pub params: Vec<ParamSig>,
    pub span: Span,
}

/// One declared parameter.
pub(super) struct ParamSig {
    pub name: String,
    pub ty: Type,
    pub restrict: bool,
}

/// The module-level definitions visible to function bodies.
#[derive(Default)]
pub(super) struct ModuleCx {
    pub structs: Vec<StructDef>,
    /// `pair-x` → (structure index, field index).
    pub accessors: HashMap<String, (usize, usize)>,
    /// `make-pair` → structure index.
    pub constructors: HashMap<String, usize>,
    pub globals: Vec<Global>,
    pub functions: Vec<FnSig>,
    /// Indices of `globals` and `functions` by name: lookups stay O(1) in modules of many
    /// definitions.
    global_index: HashMap<String, usize>,
    function_index: HashMap<String, usize>,
}

impl ModuleCx {
    pub fn global(&self, name: &str) -> Option<GlobalId> {
        self.global_index.get(name).map(|&i| GlobalId(i as u32))
    }

    pub fn function(&self, name: &str) -> Option<FunctionId> {
        self.function_index.get(name).map(|&i| FunctionId(i as u32))
    }
}

/// Checks one compilation unit: the top-level forms after macro expansion.
///
/// Accepts `(defkernel-struct NAME (field TYPE)…)`, `(defglobal NAME INIT [QUALIFIERS])` and
/// `(defkernel NAME (RET ((arg TYPE [:restrict])…)) body…)` (or `(defkernel (NAME :device) …)`
/// for a `__device__` function returning `void`), in any order. Returns the first error found.
///
/// Checking recurses over the forms, and macro expansion can nest them far deeper than text
/// does, so a unit whose forms may make it recurse deeply is checked on a thread with a
/// [`STACK_SIZE`] stack; a shallow one (its list lengths, summed along any path through the
/// forms, stay under the small-stack limit) on the caller's thread.
pub fn check_module(forms: &[Form]) -> Result<ir::Module> {
    if !forms
        .iter()
        .any(|form| recursion_may_exceed(form, stack::SMALL_STACK_DEPTH))
    {
        return check_unit(forms);
    }
    // No thread to be had: check on this one.
    stack::on_big_stack("chorus-check", || check_unit(forms)).unwrap_or_else(|_| check_unit(forms))
}

/// [`check_module`], dropping each function's form once it is checked (and the rest at the
/// end): the forms and the IR then take little more memory together than the larger of them.
pub fn check_module_owned(mut forms: Vec<Form>) -> Result<ir::Module> {
    if !forms
        .iter()
        .any(|form| recursion_may_exceed(form, stack::SMALL_STACK_DEPTH))
    {
        return check_unit_draining(&mut forms);
    }
    let mut attempt = || check_unit_draining(&mut forms);
    match stack::on_big_stack("chorus-check", &mut attempt) {
        Ok(result) => result,
        // No thread to be had (the closure did not run): check on this one.
        Err(_) => check_unit_draining(&mut forms),
    }
}

/// The stack of the checking thread: enough for forms nested as deeply as the macro expander
/// allows ([`crate::expand::MAX_FORM_DEPTH`]).
pub const STACK_SIZE: usize = stack::BIG_STACK_SIZE;

/// Whether checking `form` may recurse more than `limit` deep: whether, on some path from `form`
/// down to an atom, the lengths of the lists passed through add up to more than `limit`. Its
/// depth bounds the recursion over nested forms, and its lengths the recursion over the nested
/// IR that one list can make (`(+ a b c …)` folds into a chain of binary operations).
fn recursion_may_exceed(form: &Form, limit: usize) -> bool {
    let mut pending = vec![(form, 0usize)];
    while let Some((form, weight)) = pending.pop() {
        if let Some(items) = form.as_list() {
            let weight = weight + 1 + items.len();
            if weight > limit {
                return true;
            }
            pending.extend(items.iter().map(|item| (item, weight)));
        }
    }
    false
}

/// Declares the unit's structures, globals and function signatures; returns them and the
/// positions of the functions' forms, in definition order.
fn declare_unit(forms: &[Form]) -> Result<(ModuleCx, Vec<usize>)> {
    let mut structs = Vec::new();
    let mut globals = Vec::new();
    let mut functions = Vec::new();
    for (i, form) in forms.iter().enumerate() {
        match form.as_call() {
            Some(("defkernel-struct", args)) => structs.push((form, args)),
            Some(("defglobal", args)) => globals.push((form, args)),
            Some(("defkernel", args)) => functions.push((i, args)),
            Some((name @ ("defkernelmacro" | "defkernel-symbol-macro"), _)) => {
                return err(
                    &form.span,
                    format!(
                        "`{name}` is handled by the macro expander; compile with \
                         chorus_lang::compile_forms or compile_str, which expand macros first"
                    ),
                );
            }
            _ => {
                return err(
                    &form.span,
                    format!(
                        "expected defkernel, defglobal or defkernel-struct at top level, got `{form}`"
                    ),
                );
            }
        }
    }
    let mut m = ModuleCx::default();
    for (form, args) in structs {
        define_struct(&mut m, form, args)?;
    }
    for (form, args) in globals {
        define_global(&mut m, form, args)?;
    }
    for &(i, args) in &functions {
        declare_function(&mut m, &forms[i], args)?;
    }
    Ok((m, functions.into_iter().map(|(i, _)| i).collect()))
}

/// The body of a `defkernel` form [`declare_function`] accepted: its items after the name and
/// the signature.
fn declared_body(form: &Form) -> PendingBody<'_> {
    let items = form.as_list().unwrap_or_default();
    PendingBody {
        span: form.span.clone(),
        body: Cow::Borrowed(items.get(3..).unwrap_or_default()),
    }
}

/// [`declared_body`], taken out of the form (which is left an empty list): checked by value,
/// each statement dropped once checked.
fn take_declared_body(form: &mut Form) -> PendingBody<'static> {
    let body = match std::mem::replace(&mut form.kind, FormKind::List(Vec::new())) {
        FormKind::List(mut items) => {
            // In place: a copy of a huge body would briefly hold it twice.
            items.drain(..items.len().min(3));
            items
        }
        _ => Vec::new(),
    };
    PendingBody {
        span: form.span.clone(),
        body: Cow::Owned(body),
    }
}

fn check_unit(forms: &[Form]) -> Result<ir::Module> {
    let (m, functions) = declare_unit(forms)?;
    let mut out = Vec::with_capacity(functions.len());
    for (id, &i) in functions.iter().enumerate() {
        out.push(checked_function(
            &m,
            FunctionId(id as u32),
            declared_body(&forms[i]),
        )?);
    }
    Ok(ir::Module {
        structs: m.structs,
        globals: m.globals,
        functions: out,
    })
}

/// [`check_unit`], consuming each function's form as it is checked.
fn check_unit_draining(forms: &mut [Form]) -> Result<ir::Module> {
    let (m, functions) = declare_unit(forms)?;
    let mut out = Vec::with_capacity(functions.len());
    for (id, &i) in functions.iter().enumerate() {
        out.push(checked_function(
            &m,
            FunctionId(id as u32),
            take_declared_body(&mut forms[i]),
        )?);
    }
    Ok(ir::Module {
        structs: m.structs,
        globals: m.globals,
        functions: out,
    })
}

/// True when `name` is taken by the language itself as a function-position name.
fn is_language_name(name: &str) -> bool {
    !builtins::signatures(name).is_empty()
        || builtins::cast_target(name).is_some()
        || VectorType::from_name(name).is_some()
        || expr::vector_accessor(name).is_some()
        || expr::is_special_form(name)
}

/// Checks that a new function-namespace name is free.
fn check_function_name(m: &ModuleCx, name: &str, span: &Span) -> Result<()> {
    if is_language_name(name) {
        return err(
            span,
            format!("`{name}` is a built-in name of the kernel language; choose another name"),
        );
    }
    if let Some(id) = m.function(name) {
        let prev = &m.functions[id.index()].span;
        return err(
            span,
            format!("function `{name}` is already defined at {prev}"),
        );
    }
    if let Some(&s) = m.constructors.get(name) {
        return err(
            span,
            format!(
                "`{name}` is the constructor of structure `{}`",
                m.structs[s].name
            ),
        );
    }
    if let Some(&(s, _)) = m.accessors.get(name) {
        return err(
            span,
            format!(
                "`{name}` is an accessor of structure `{}`",
                m.structs[s].name
            ),
        );
    }
    Ok(())
}

fn define_struct(m: &mut ModuleCx, form: &Form, args: &[Form]) -> Result<()> {
    let usage = "expected (defkernel-struct NAME (FIELD TYPE)…)";
    let Some((name_form, fields)) = args.split_first() else {
        return err(
            &form.span,
            format!("defkernel-struct needs a name; {usage}"),
        );
    };
    let name = binding_name(name_form, "a structure name")?;
    if Type::parse(name, |_| false).is_some() || name == "curand-state-xorwow" {
        return err(
            &name_form.span,
            format!("`{name}` is a built-in type; choose another structure name"),
        );
    }
    if let Some(prev) = m.structs.iter().find(|s| &*s.name == name) {
        return err(
            &name_form.span,
            format!("structure `{name}` is already defined at {}", prev.span),
        );
    }
    if fields.is_empty() {
        return err(
            &form.span,
            format!("structure `{name}` has no fields; {usage}"),
        );
    }
    let index = m.structs.len();
    let mut out: Vec<StructField> = Vec::new();
    let (mut offset, mut align) = (0usize, 1usize);
    for field in fields {
        let Some([fname, fty]) = field.as_list().and_then(|l| <&[Form; 2]>::try_from(l).ok())
        else {
            return err(
                &field.span,
                format!("a structure field is (NAME TYPE), got `{field}`"),
            );
        };
        let fname_str = binding_name(fname, "a field name")?;
        if out.iter().any(|f| &*f.name == fname_str) {
            return err(
                &fname.span,
                format!("structure `{name}` already has a field `{fname_str}`"),
            );
        }
        // The structure itself may appear only behind a pointer.
        let ty = match parse_type(fty, &m.structs) {
            Ok(ty) => ty,
            Err(e) => match Type::parse(fty.as_symbol().unwrap_or(""), |n| n == name) {
                Some(ty @ Type::Pointer(_)) => ty,
                Some(_) => {
                    return err(
                        &fty.span,
                        format!(
                            "structure `{name}` cannot contain itself; use a pointer `{name}*`"
                        ),
                    );
                }
                None => return Err(e),
            },
        };
        let Some((size, field_align)) = ty.layout(&m.structs) else {
            return err(&fty.span, format!("a field cannot have type `{ty}`"));
        };
        offset = offset.next_multiple_of(field_align);
        out.push(StructField {
            name: fname_str.into(),
            ty,
            offset,
        });
        offset += size;
        align = align.max(field_align);
    }
    let accessor_names: Vec<String> = out.iter().map(|f| format!("{name}-{}", f.name)).collect();
    let constructor = format!("make-{name}");
    for candidate in accessor_names.iter().chain(std::iter::once(&constructor)) {
        check_function_name(m, candidate, &name_form.span).map_err(|e| {
            let message = format!(
                "structure `{name}` would define `{candidate}`: {}",
                e.message
            );
            crate::Error::new(&e.span, message)
        })?;
    }
    for (i, accessor) in accessor_names.into_iter().enumerate() {
        m.accessors.insert(accessor, (index, i));
    }
    m.constructors.insert(constructor, index);
    m.structs.push(StructDef {
        name: name.into(),
        fields: out,
        size: offset.next_multiple_of(align),
        align,
        span: form.span.clone(),
    });
    Ok(())
}

fn define_global(m: &mut ModuleCx, form: &Form, args: &[Form]) -> Result<()> {
    let usage = "expected (defglobal NAME INIT [QUALIFIER | (QUALIFIER…)])";
    if !(2..=3).contains(&args.len()) {
        return err(
            &form.span,
            format!("defglobal takes a name, an initial value and optional qualifiers; {usage}"),
        );
    }
    let name = binding_name(&args[0], "a global name")?;
    if let Some(id) = m.global(name) {
        let prev = &m.globals[id.index()].span;
        return err(
            &args[0].span,
            format!("global `{name}` is already defined at {prev}"),
        );
    }
    let init = {
        let mut cx = FnCx::new(m, name, Type::Void);
        cx.expr(&args[1])?
    };
    let Some(init) = consts::fold_initializer(&init).filter(|e| consts::is_constant_type(&e.ty))
    else {
        return err(
            &args[1].span,
            format!(
                "the initial value of global `{name}` must be a constant: a literal, a negated \
                 literal, or a vector or structure constructor of literals; got `{}`",
                args[1]
            ),
        );
    };
    let qualifiers = match args.get(2) {
        None => vec![GlobalQualifier::Device],
        Some(q) => parse_qualifiers(q)?,
    };
    m.global_index.insert(name.to_string(), m.globals.len());
    m.globals.push(Global {
        name: name.into(),
        ty: init.ty.clone(),
        qualifiers,
        init,
        span: form.span.clone(),
    });
    Ok(())
}

fn parse_qualifiers(form: &Form) -> Result<Vec<GlobalQualifier>> {
    let items: Vec<&Form> = match &form.kind {
        FormKind::List(items) => items.iter().collect(),
        _ => vec![form],
    };
    let mut out: Vec<GlobalQualifier> = Vec::new();
    for item in items {
        let Some(&(_, q)) = QUALIFIERS.iter().find(|(n, _)| item.is_symbol(n)) else {
            return err(
                &item.span,
                format!(
                    "unknown global qualifier `{item}`; expected :device, :constant, :shared, \
                     :managed or :restrict"
                ),
            );
        };
        if out.contains(&q) {
            return err(&item.span, format!("qualifier `{item}` is given twice"));
        }
        out.push(q);
    }
    use GlobalQualifier::*;
    for (a, b) in [(Constant, Shared), (Constant, Managed), (Shared, Managed)] {
        if out.contains(&a) && out.contains(&b) {
            return err(
                &form.span,
                format!(
                    "a global cannot be both {} and {}",
                    qualifier_name(a),
                    qualifier_name(b)
                ),
            );
        }
    }
    if out.is_empty() {
        return err(
            &form.span,
            "the qualifier list is empty; leave it out for the default :device",
        );
    }
    Ok(out)
}

/// The kernel-language spelling of a qualifier.
fn qualifier_name(q: GlobalQualifier) -> &'static str {
    QUALIFIERS
        .iter()
        .find(|(_, x)| *x == q)
        .map_or("", |(n, _)| n)
}

/// The `defglobal` qualifiers by name.
const QUALIFIERS: [(&str, GlobalQualifier); 5] = [
    (":device", GlobalQualifier::Device),
    (":constant", GlobalQualifier::Constant),
    (":shared", GlobalQualifier::Shared),
    (":managed", GlobalQualifier::Managed),
    (":restrict", GlobalQualifier::Restrict),
];

/// The parts of a `defkernel` whose checking waits until every signature is known: the
/// definition's span and its body (borrowed, or owned to be consumed as it is checked).
pub(super) struct PendingBody<'f> {
    span: Span,
    body: Cow<'f, [Form]>,
}

fn declare_function(m: &mut ModuleCx, form: &Form, args: &[Form]) -> Result<()> {
    let usage = "expected (defkernel NAME (RESULT-TYPE ((ARG TYPE)…)) body…)";
    let [name_form, signature, ..] = args else {
        return err(
            &form.span,
            format!("defkernel needs a name and a signature; {usage}"),
        );
    };
    // NAME or (NAME :device).
    let (name, device) = match name_form.as_list() {
        Some([n, kw]) if kw.is_symbol(":device") => (binding_name(n, "a function name")?, true),
        Some(_) => {
            return err(&name_form.span, "a function name is NAME or (NAME :device)");
        }
        None => (binding_name(name_form, "a function name")?, false),
    };
    check_function_name(m, name, &name_form.span)?;
    let Some([ret_form, params_form]) = signature
        .as_list()
        .and_then(|l| <&[Form; 2]>::try_from(l).ok())
    else {
        return err(
            &signature.span,
            format!("malformed signature `{signature}`; {usage}"),
        );
    };
    let ret = parse_type(ret_form, &m.structs)?;
    let kind = if ret == Type::Void && !device {
        FunctionKind::Kernel
    } else {
        FunctionKind::Device
    };
    let param_forms: &[Form] = match &params_form.kind {
        FormKind::List(items) => items,
        FormKind::Symbol(s) if s == "nil" => &[],
        _ => {
            return err(
                &params_form.span,
                format!("the parameters must be a list ((ARG TYPE)…), got `{params_form}`"),
            );
        }
    };
    let mut params: Vec<ParamSig> = Vec::new();
    let mut param_names: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for p in param_forms {
        let parts = p.as_list().unwrap_or(&[]);
        let (pname, pty, restrict) = match parts {
            [n, t] => (n, t, false),
            [n, t, kw] if kw.is_symbol(":restrict") => (n, t, true),
            [_, _, kw] => {
                return err(
                    &kw.span,
                    format!("unknown parameter qualifier `{kw}`; expected :restrict"),
                );
            }
            _ => {
                return err(
                    &p.span,
                    format!("a parameter is (NAME TYPE) or (NAME TYPE :restrict), got `{p}`"),
                );
            }
        };
        let pname_str = binding_name(pname, "a parameter name")?;
        if !param_names.insert(pname_str) {
            return err(
                &pname.span,
                format!("duplicate parameter `{pname_str}` in `{name}`"),
            );
        }
        let ty = parse_type(pty, &m.structs)?;
        if ty == Type::Void {
            return err(&pty.span, "a parameter cannot have type void");
        }
        if restrict && ty.pointee().is_none() {
            return err(
                &p.span,
                format!(":restrict applies to pointers; `{pname_str}` has type {ty}"),
            );
        }
        params.push(ParamSig {
            name: pname_str.to_string(),
            ty,
            restrict,
        });
    }
    m.function_index.insert(name.to_string(), m.functions.len());
    m.functions.push(FnSig {
        name: name.to_string(),
        kind,
        ret,
        params,
        span: form.span.clone(),
    });
    Ok(())
}

/// [`check_function`] with no spare capacity left in any of the function's vectors (grown by
/// pushes while checking): the module then takes memory in proportion to the text.
fn checked_function(m: &ModuleCx, id: FunctionId, pending: PendingBody<'_>) -> Result<Function> {
    let mut function = check_function(m, id, pending)?;
    function.shrink_to_fit();
    Ok(function)
}

fn check_function(m: &ModuleCx, id: FunctionId, pending: PendingBody<'_>) -> Result<Function> {
    let sig = &m.functions[id.index()];
    let mut cx = FnCx::new(m, &sig.name, sig.ret.clone());
    let params: Vec<Param> = sig
        .params
        .iter()
        .map(|p| Param {
            local: cx.declare(&p.name, p.ty.clone(), LocalStorage::Register),
            restrict: p.restrict,
        })
        .collect();
    let mut body_forms = pending.body;
    let mut launch_bounds = None;
    if let Some(("declare", specs)) = body_forms.first().and_then(Form::as_call) {
        launch_bounds = cx.declarations(sig, specs)?;
        body_forms = match body_forms {
            Cow::Borrowed(forms) => Cow::Borrowed(&forms[1..]),
            Cow::Owned(mut forms) => {
                forms.remove(0);
                Cow::Owned(forms)
            }
        };
    }
    let last_span = body_forms.last().map(|f| f.span.clone());
    let body = match body_forms {
        Cow::Borrowed(forms) => cx.body(forms)?,
        Cow::Owned(forms) => cx.body_owned(forms)?,
    };
    if sig.ret != Type::Void && !flow::always_returns(&body) {
        let span = last_span.as_ref().unwrap_or(&pending.span);
        return err(
            span,
            format!(
                "`{}` returns {}, but its body can reach the end without returning a value; \
                 end it with (return …)",
                sig.name, sig.ret
            ),
        );
    }
    Ok(Function {
        name: sig.name.as_str().into(),
        kind: sig.kind,
        ret: sig.ret.clone(),
        params,
        launch_bounds,
        locals: cx.locals,
        body,
        span: pending.span,
    })
}

impl FnCx<'_> {
    /// `(declare (launch-bounds N [M [C]]))` at the head of a kernel body.
    fn declarations(&mut self, sig: &FnSig, specs: &[Form]) -> Result<Option<LaunchBounds>> {
        let mut bounds = None;
        for spec in specs {
            let Some(("launch-bounds", values)) = spec.as_call() else {
                return err(
                    &spec.span,
                    format!(
                        "unknown declaration `{spec}`; expected (launch-bounds MAX-THREADS [MIN-BLOCKS [MAX-CLUSTER]])"
                    ),
                );
            };
            if sig.kind != FunctionKind::Kernel {
                return err(
                    &spec.span,
                    format!(
                        "launch-bounds applies only to kernels; `{}` is a device function",
                        sig.name
                    ),
                );
            }
            if !(1..=3).contains(&values.len()) {
                return err(
                    &spec.span,
                    "launch-bounds takes 1 to 3 values: (launch-bounds MAX-THREADS [MIN-BLOCKS [MAX-CLUSTER]])",
                );
            }
            if bounds.is_some() {
                return err(&spec.span, "launch-bounds is declared twice");
            }
            let mut nums = Vec::new();
            for v in values {
                let e = self.expr(v)?;
                match consts::int_value(&e)
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| *n > 0)
                {
                    Some(n) => nums.push(n),
                    None => {
                        return err(
                            &v.span,
                            format!(
                                "a launch bound must be a positive integer constant, got `{v}`"
                            ),
                        );
                    }
                }
            }
            bounds = Some(LaunchBounds {
                max_threads: nums[0],
                min_blocks: nums.get(1).copied(),
                max_cluster: nums.get(2).copied(),
            });
        }
        Ok(bounds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::read_str;
    use crate::stack::on_2_mib_stack;

    /// A kernel whose recursion weight (see [`recursion_may_exceed`]) is exactly `limit`, as one
    /// long sum under `extra` nested negations: the shape that recurses deepest for its weight
    /// is a long chain, and nesting adds to it.
    fn heavy_kernel(limit: usize, extra: usize) -> String {
        // (defkernel f (int ()) (return …)): weights 5 and 3; each (- x): 3; (+ 1 …): n + 2.
        let ones = limit - 8 - 3 * extra - 2;
        format!(
            "(defkernel f (int ()) (return {}(+ {}){}))",
            "(- ".repeat(extra),
            "1 ".repeat(ones),
            ")".repeat(extra)
        )
    }

    #[test]
    fn the_weight_bounds_the_recursion_on_a_2_mib_stack() {
        for extra in [0, 20, 60] {
            let text = heavy_kernel(stack::SMALL_STACK_DEPTH, extra);
            let forms = read_str(&text, "heavy.lisp").unwrap();
            assert!(!recursion_may_exceed(&forms[0], stack::SMALL_STACK_DEPTH));
            assert!(recursion_may_exceed(
                &forms[0],
                stack::SMALL_STACK_DEPTH - 1
            ));
            let module = on_2_mib_stack(|| check_unit(&forms));
            assert!(module.is_ok(), "{text}: {module:?}");
        }
    }

    #[test]
    fn heavier_units_are_checked_on_a_big_stack_with_the_same_result() {
        let text = format!(
            "(defkernel f (int ()) (return (+ {})))",
            "1 ".repeat(3 * stack::SMALL_STACK_DEPTH)
        );
        let forms = read_str(&text, "heavy.lisp").unwrap();
        assert!(recursion_may_exceed(&forms[0], stack::SMALL_STACK_DEPTH));
        assert_eq!(
            format!("{:?}", check_module(&forms).unwrap()),
            format!("{:?}", check_unit(&forms).unwrap())
        );
    }
}
