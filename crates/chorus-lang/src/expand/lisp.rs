//! The macro-time Lisp: a small interpreter over [`Form`] values that runs the bodies of
//! `defkernelmacro` and `macrolet` macros.
//!
//! # Data
//! Values are forms: symbols, integers, floats, strings and proper lists. `t` is true; `nil` and
//! `()` are false and the empty list. Functions (`#'car`, `(lambda …)`) are values too, but
//! cannot be stored inside lists. Differences from Common Lisp, all consequences of having no
//! other data:
//! * there are no dotted pairs: `(cons 1 2)` is an error;
//! * there is no object identity: `eq` and `eql` compare atoms by value and lists by structure,
//!   like `equal`;
//! * there are no ratios: `/` on integers must divide exactly (`(/ 6 2)` is `3`); `(/ 7 2)` is an
//!   error that suggests `floor`, `truncate` or a float operand;
//! * there are no multiple values: `floor`, `round` … return their first value, `values` its
//!   first argument;
//! * `nreverse` and friends do not modify their argument (lists are values);
//! * symbol names are stored folded to lower case, as the reader folds them: `symbol-name` gives
//!   `"foo"`, and `intern` folds its argument the same way, so
//!   `(intern (format nil "~a-X" 'foo))` is the symbol the text `foo-x` reads as.
//!
//! Numbers follow Common Lisp's contagion: integers stay integers (checked against 64 bits),
//! an integer with a float gives a float, and a double results only from a double operand.
//!
//! # Forms
//! Special forms: `quote`, `quasiquote` (nested quasiquotes are handled to any depth), `function`,
//! `if`, `cond`, `when`, `unless`, `and`, `or`, `case`, `ecase`, `let`, `let*`, `progn`,
//! `lambda`, `flet`, `labels`, `setq`, `setf` (of variables), `push`, `pop`, `incf`, `decf`, `dolist`,
//! `dotimes`, a subset of `loop` (`for … in`, `for … from … to|below|downto … [by …]`,
//! `repeat`; `collect`, `append`, `sum`, `do`, each optionally under `when`/`unless`),
//! `destructuring-bind`, `check-type`, `assert`, and Alexandria's `with-gensyms` and `once-only`
//! (also spelled `alexandria:with-gensyms` …). The functions are listed in [`BUILTINS`].
//!
//! # Limits
//! A macro call may do [`MAX_STEPS`] units of work (an evaluation, a loop iteration, or copying
//! one element: lists are vectors, so `cons` and variable references copy) and nest calls
//! [`MAX_CALL_DEPTH`] deep; beyond that the expansion fails with an error naming the macro.
//!
//! Values that the macro returns keep the spans of the forms they were copied from (a macro
//! argument keeps its own); everything the macro makes (constants of its body, new lists,
//! numbers it computes) gets the span of the macro call.

use super::MacroContext;
use super::lambda_list::{Binder, LambdaList, is_bindable};
use crate::error::{Error, Result};
use crate::form::{FloatPrecision, Form, FormKind, IntSuffix};
use crate::span::Span;
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

/// How many evaluation steps one macro expansion may take (it stops macros that loop forever).
pub const MAX_STEPS: u64 = 1_000_000;

/// How deeply macro-time functions may call each other.
pub const MAX_CALL_DEPTH: usize = 1_000;

/// A macro written in the kernel text (`defkernelmacro`, `macrolet`), run by this interpreter.
#[derive(Clone, Debug)]
pub(crate) struct LispMacro {
    name: String,
    lambda_list: LambdaList,
    body: Vec<Form>,
}

impl LispMacro {
    /// A macro called `name` from its lambda list and body as written. A leading docstring and
    /// `declare` forms are skipped.
    pub fn new(name: &str, lambda_list: &Form, body: &[Form]) -> Result<LispMacro> {
        Ok(LispMacro {
            name: name.to_string(),
            lambda_list: LambdaList::parse(lambda_list, true)?,
            body: strip_declarations(body).to_vec(),
        })
    }

    /// Runs the macro on `call` (the whole macro form) and returns its expansion.
    pub fn expand(&self, call: &Form, cx: &MacroContext) -> Result<Form> {
        let args: Vec<Value> = call
            .as_list()
            .and_then(|items| items.get(1..))
            .unwrap_or_default()
            .iter()
            .cloned()
            .map(Value::Data)
            .collect();
        let mut interp = Interp {
            cx,
            steps: std::cell::Cell::new(0),
            depth: 0,
        };
        let mut env = Env::default();
        let what = format!("macro `{}`", self.name);
        let mut binder = EnvBinder {
            interp: &mut interp,
            env: &mut env,
        };
        self.lambda_list.bind(
            &args,
            &Value::Data(call.clone()),
            &mut binder,
            &call.span,
            &what,
        )?;
        let result = interp.eval_body(&self.body, &env)?;
        match result {
            Value::Data(form) => Ok(form),
            Value::Function(_) => Err(Error::new(
                &call.span,
                format!("macro `{}` returned a function, not a form", self.name),
            )),
        }
    }
}

/// A macro-time value.
#[derive(Clone)]
pub(crate) enum Value {
    Data(Form),
    Function(Rc<Function>),
}

/// A macro-time function.
#[allow(
    clippy::large_enum_variant,
    reason = "a function always lives behind an Rc, one allocation either way"
)]
pub(crate) enum Function {
    /// One of [`BUILTINS`].
    Builtin(&'static str),
    /// A `lambda`, `flet` or `labels` function.
    Closure(Closure),
}

pub(crate) struct Closure {
    name: String,
    params: LambdaList,
    body: Rc<[Form]>,
    env: Env,
}

impl Value {
    pub fn nil(span: &Span) -> Value {
        Value::Data(Form::symbol("nil", span.clone()))
    }

    pub fn boolean(b: bool, span: &Span) -> Value {
        Value::Data(Form::symbol(if b { "t" } else { "nil" }, span.clone()))
    }

    /// A list of `values`; `None` if one of them is a function.
    pub fn list_of(values: &[Value], span: &Span) -> Option<Value> {
        let forms = values
            .iter()
            .map(|v| match v {
                Value::Data(f) => Some(f.clone()),
                Value::Function(_) => None,
            })
            .collect::<Option<Vec<Form>>>()?;
        Some(Value::Data(Form::list(forms, span.clone())))
    }

    pub fn as_form(&self) -> Option<&Form> {
        match self {
            Value::Data(f) => Some(f),
            Value::Function(_) => None,
        }
    }

    /// The items if this is a list (`nil` is the empty list).
    pub fn as_list(&self) -> Option<&[Form]> {
        let form = self.as_form()?;
        if form.is_symbol("nil") {
            Some(&[])
        } else {
            form.as_list()
        }
    }

    pub fn as_symbol(&self) -> Option<&str> {
        self.as_form()?.as_symbol()
    }

    pub fn is_symbol(&self, name: &str) -> bool {
        self.as_symbol() == Some(name)
    }

    pub fn is_nil(&self) -> bool {
        self.as_form().is_some_and(Form::is_nil)
    }

    pub fn span(&self) -> Option<&Span> {
        self.as_form().map(|f| &f.span)
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Data(form) => write!(f, "{form}"),
            Value::Function(func) => match &**func {
                Function::Builtin(name) => write!(f, "#<function {name}>"),
                Function::Closure(c) => write!(f, "#<function {}>", c.name),
            },
        }
    }
}

/// The lexical environment: variables and local functions, as persistent linked lists so that
/// closures can keep theirs.
#[derive(Clone, Default)]
struct Env {
    vars: Option<Rc<VarCell>>,
    funs: Option<Rc<FunCell>>,
}

struct VarCell {
    name: String,
    value: RefCell<Value>,
    next: Option<Rc<VarCell>>,
}

struct FunCell {
    name: String,
    /// Filled after creation for `labels`, whose functions see themselves.
    function: RefCell<Option<Rc<Function>>>,
    next: Option<Rc<FunCell>>,
}

impl Env {
    fn bind(&mut self, name: &str, value: Value) {
        self.vars = Some(Rc::new(VarCell {
            name: name.to_string(),
            value: RefCell::new(value),
            next: self.vars.take(),
        }));
    }

    fn lookup(&self, name: &str) -> Option<&VarCell> {
        let mut cell = self.vars.as_deref();
        while let Some(c) = cell {
            if c.name == name {
                return Some(c);
            }
            cell = c.next.as_deref();
        }
        None
    }

    fn bind_function(&mut self, name: &str, function: Option<Rc<Function>>) -> Rc<FunCell> {
        let cell = Rc::new(FunCell {
            name: name.to_string(),
            function: RefCell::new(function),
            next: self.funs.take(),
        });
        self.funs = Some(cell.clone());
        cell
    }

    fn lookup_function(&self, name: &str) -> Option<Rc<Function>> {
        let mut cell = self.funs.as_deref();
        while let Some(c) = cell {
            if c.name == name {
                return c.function.borrow().clone();
            }
            cell = c.next.as_deref();
        }
        None
    }
}

/// Binds lambda-list variables into an environment, evaluating defaults there.
struct EnvBinder<'i, 'a, 'c> {
    interp: &'i mut Interp<'a, 'c>,
    env: &'i mut Env,
}

impl Binder for EnvBinder<'_, '_, '_> {
    fn bind(&mut self, name: &str, value: Value) {
        self.env.bind(name, value);
    }

    fn eval(&mut self, form: &Form) -> Result<Value> {
        self.interp.eval(form, self.env)
    }
}

/// Every function the macro-time Lisp knows, besides the special forms.
pub const BUILTINS: &[&str] = &[
    // lists
    "list",
    "list*",
    "cons",
    "car",
    "cdr",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "rest",
    "cadr",
    "cddr",
    "caddr",
    "last",
    "butlast",
    "nth",
    "nthcdr",
    "append",
    "reverse",
    "length",
    "mapcar",
    "mapcan",
    "remove-if",
    "remove-if-not",
    "member",
    "assoc",
    "every",
    "some",
    "funcall",
    "apply",
    "identity",
    "nreverse",
    "copy-list",
    "endp",
    "remove",
    "find",
    "position",
    "count",
    "reduce",
    "subseq",
    "values",
    "mapc",
    // predicates
    "numberp",
    "integerp",
    "floatp",
    "symbolp",
    "keywordp",
    "stringp",
    "listp",
    "consp",
    "atom",
    "null",
    "not",
    "functionp",
    "eq",
    "eql",
    "equal",
    // numbers
    "+",
    "-",
    "*",
    "/",
    "mod",
    "rem",
    "1+",
    "1-",
    "min",
    "max",
    "abs",
    "floor",
    "ceiling",
    "truncate",
    "round",
    "expt",
    "sqrt",
    "float",
    "=",
    "/=",
    "<",
    ">",
    "<=",
    ">=",
    "zerop",
    "plusp",
    "minusp",
    "evenp",
    "oddp",
    // strings and symbols
    "format",
    "intern",
    "make-symbol",
    "symbol-name",
    "string",
    "string-upcase",
    "string-downcase",
    "concatenate",
    "string=",
    "string-equal",
    "symbolicate",
    "gensym",
    "error",
];

/// The special forms (evaluated by the interpreter itself, not by calling a function).
const SPECIAL_FORMS: &[&str] = &[
    "quote",
    "quasiquote",
    "unquote",
    "unquote-splicing",
    "function",
    "if",
    "cond",
    "when",
    "unless",
    "and",
    "or",
    "case",
    "ecase",
    "let",
    "let*",
    "progn",
    "lambda",
    "flet",
    "labels",
    "setq",
    "setf",
    "push",
    "incf",
    "decf",
    "pop",
    "dolist",
    "dotimes",
    "loop",
    "destructuring-bind",
    "check-type",
    "assert",
    "with-gensyms",
    "once-only",
    "declare",
];

/// The name of a function or special form without a package prefix the macro-time Lisp knows
/// (`alexandria:once-only`, `cl:car`).
fn canonical(name: &str) -> &str {
    for prefix in ["alexandria:", "cl:", "common-lisp:"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            return rest;
        }
    }
    name
}

/// Skips a docstring (when more forms follow) and `declare` forms at the start of a body.
fn strip_declarations(body: &[Form]) -> &[Form] {
    let mut body = body;
    loop {
        match body {
            [first, _, ..] if matches!(first.kind, FormKind::Str(_)) => body = &body[1..],
            [first, ..] if first.as_call().is_some_and(|(h, _)| h == "declare") => {
                body = &body[1..]
            }
            _ => return body,
        }
    }
}

/// A copy of `form` whose every part has `span` (constants of a macro body become part of the
/// macro's output, which belongs to the call).
pub(crate) fn respan(form: &Form, span: &Span) -> Form {
    let kind = match &form.kind {
        FormKind::List(items) => FormKind::List(items.iter().map(|f| respan(f, span)).collect()),
        other => other.clone(),
    };
    Form::new(kind, span.clone())
}

struct Interp<'a, 'c> {
    cx: &'a MacroContext<'c>,
    /// Work done so far: one per evaluation and loop iteration, one per list element or string
    /// character made (lists are vectors, so `cons` copies; charging for it bounds both the
    /// time and the memory a macro can take).
    steps: std::cell::Cell<u64>,
    depth: usize,
}

/// A number, for arithmetic.
#[derive(Clone, Copy, Debug)]
enum Num {
    Int(i128, IntSuffix),
    Float(f64, FloatPrecision),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(v, _) => v as f64,
            Num::Float(v, _) => v,
        }
    }
}

fn suffix_rank(s: IntSuffix) -> u8 {
    match s {
        IntSuffix::None => 0,
        IntSuffix::U => 1,
        IntSuffix::L => 2,
        IntSuffix::UL => 3,
    }
}

/// C's usual arithmetic conversions, for the suffixes the kernel language has.
fn wider_suffix(a: IntSuffix, b: IntSuffix) -> IntSuffix {
    if suffix_rank(a) >= suffix_rank(b) {
        a
    } else {
        b
    }
}

fn float_precision(a: Num, b: Num) -> FloatPrecision {
    let double = |n: Num| matches!(n, Num::Float(_, FloatPrecision::Double));
    if double(a) || double(b) {
        FloatPrecision::Double
    } else {
        FloatPrecision::Single
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Rounding {
    Floor,
    Ceiling,
    Truncate,
    Round,
}

impl<'a, 'c> Interp<'a, 'c> {
    /// The error for `form` in the macro's code: it names the macro and the call being expanded.
    fn error(&self, span: &Span, message: impl fmt::Display) -> Error {
        Error::new(span, self.in_macro(message))
    }

    /// `message`, prefixed with the macro and the call being expanded.
    fn in_macro(&self, message: impl fmt::Display) -> String {
        format!(
            "in macro `{}` (expanding the call at {}): {message}",
            self.cx.name(),
            self.cx.span()
        )
    }

    fn call_span(&self) -> &Span {
        self.cx.span()
    }

    fn data(&self, kind: FormKind) -> Value {
        if let FormKind::Str(text) = &kind {
            self.charge(text.len());
        }
        Value::Data(Form::new(kind, self.call_span().clone()))
    }

    fn symbol(&self, name: &str) -> Value {
        Value::Data(Form::symbol(name, self.call_span().clone()))
    }

    fn boolean(&self, b: bool) -> Value {
        Value::boolean(b, self.call_span())
    }

    fn list(&self, items: Vec<Form>) -> Value {
        self.charge(1);
        items.iter().for_each(|item| self.charge_nodes(item));
        Value::Data(Form::list(items, self.call_span().clone()))
    }

    fn eval_body(&mut self, body: &[Form], env: &Env) -> Result<Value> {
        let mut result = Value::nil(self.call_span());
        for form in strip_declarations(body) {
            result = self.eval(form, env)?;
        }
        Ok(result)
    }

    /// Charges for a copy of `form`: one step per atom and list in it (counted without
    /// recursion). Forms are trees of vectors, so copying one costs its size.
    fn charge_nodes(&self, form: &Form) {
        let mut pending = vec![form];
        let mut nodes = 0;
        while let Some(form) = pending.pop() {
            nodes += 1;
            match &form.kind {
                FormKind::List(items) => pending.extend(items),
                FormKind::Str(text) => nodes += text.len(),
                _ => {}
            }
        }
        self.charge(nodes);
    }

    fn charge_value(&self, value: &Value) {
        if let Value::Data(form) = value {
            self.charge_nodes(form);
        }
    }

    /// Adds `n` to the work done (checked at the next [`Interp::tick`]).
    fn charge(&self, n: usize) {
        self.steps.set(self.steps.get().saturating_add(n as u64));
    }

    /// Counts one step of work and stops a macro that has done too much.
    fn tick(&self, span: &Span) -> Result<()> {
        self.charge(1);
        if self.steps.get() > MAX_STEPS {
            return Err(self.error(
                span,
                format!("the macro ran for more than {MAX_STEPS} steps; does it loop forever?"),
            ));
        }
        Ok(())
    }

    fn eval(&mut self, form: &Form, env: &Env) -> Result<Value> {
        self.tick(&form.span)?;
        match &form.kind {
            FormKind::Symbol(name) => {
                if matches!(name.as_str(), "t" | "nil") || name.starts_with(':') {
                    return Ok(Value::Data(respan(form, self.call_span())));
                }
                match env.lookup(name) {
                    Some(cell) => {
                        let value = cell.value.borrow().clone();
                        self.charge_value(&value);
                        Ok(value)
                    }
                    None => Err(self.error(&form.span, format!("unbound variable `{name}`"))),
                }
            }
            FormKind::Int { .. } | FormKind::Float { .. } | FormKind::Str(_) => {
                self.charge_nodes(form);
                Ok(Value::Data(respan(form, self.call_span())))
            }
            FormKind::List(items) => {
                let Some((head, args)) = items.split_first() else {
                    return Ok(Value::nil(self.call_span()));
                };
                match &head.kind {
                    FormKind::Symbol(name) => self.eval_call(canonical(name), form, args, env),
                    FormKind::List(lambda)
                        if lambda.first().is_some_and(|h| h.is_symbol("lambda")) =>
                    {
                        let function = self.eval(head, env)?;
                        let args = self.eval_args(args, env)?;
                        self.apply(&function, args, &form.span)
                    }
                    _ => Err(self.error(&head.span, format!("`{head}` is not a function name"))),
                }
            }
        }
    }

    fn eval_args(&mut self, args: &[Form], env: &Env) -> Result<Vec<Value>> {
        args.iter().map(|a| self.eval(a, env)).collect()
    }

    fn eval_call(&mut self, name: &str, form: &Form, args: &[Form], env: &Env) -> Result<Value> {
        if let Some(function) = env.lookup_function(name) {
            let args = self.eval_args(args, env)?;
            return self.apply(&Value::Function(function), args, &form.span);
        }
        if SPECIAL_FORMS.contains(&name) {
            return self.eval_special(name, form, args, env);
        }
        if let Some(builtin) = BUILTINS.iter().find(|b| **b == name) {
            let args = self.eval_args(args, env)?;
            return self.call_builtin(builtin, args, &form.span);
        }
        Err(self.error(
            &form.span,
            format!(
                "unknown macro-time function `{name}`; macro code runs at expansion time and can \
                 call only the built-in list, number and string functions and its own local \
                 functions (flet, labels)"
            ),
        ))
    }

    /// Checks the number of operands of a special form.
    fn expect_args(
        &self,
        form: &Form,
        args: &[Form],
        min: usize,
        max: Option<usize>,
    ) -> Result<()> {
        if args.len() < min || max.is_some_and(|m| args.len() > m) {
            let (name, _) = form.as_call().unwrap_or(("form", &[]));
            let expected = match max {
                Some(m) if m == min => format!("{min}"),
                Some(m) => format!("{min} to {m}"),
                None => format!("at least {min}"),
            };
            return Err(self.error(
                &form.span,
                format!("`{name}` takes {expected} operand(s), got {}", args.len()),
            ));
        }
        Ok(())
    }

    fn eval_special(&mut self, name: &str, form: &Form, args: &[Form], env: &Env) -> Result<Value> {
        match name {
            "quote" => {
                self.expect_args(form, args, 1, Some(1))?;
                self.charge_nodes(&args[0]);
                Ok(Value::Data(respan(&args[0], self.call_span())))
            }
            "quasiquote" => {
                self.expect_args(form, args, 1, Some(1))?;
                Ok(Value::Data(self.quasiquote(&args[0], 1, env)?))
            }
            "unquote" | "unquote-splicing" => Err(self.error(
                &form.span,
                format!(
                    "`{}` (a comma) outside of a backquote",
                    if name == "unquote" { "," } else { ",@" }
                ),
            )),
            "declare" => Err(self.error(
                &form.span,
                "`declare` is only allowed at the start of a body",
            )),
            "function" => {
                self.expect_args(form, args, 1, Some(1))?;
                self.function(&args[0], env)
            }
            "lambda" => {
                self.expect_args(form, args, 1, None)?;
                Ok(Value::Function(self.closure(
                    "lambda",
                    &args[0],
                    &args[1..],
                    env,
                )?))
            }
            "if" => {
                self.expect_args(form, args, 2, Some(3))?;
                if !self.eval(&args[0], env)?.is_nil() {
                    self.eval(&args[1], env)
                } else if let Some(else_form) = args.get(2) {
                    self.eval(else_form, env)
                } else {
                    Ok(Value::nil(self.call_span()))
                }
            }
            "when" | "unless" => {
                self.expect_args(form, args, 1, None)?;
                let test = !self.eval(&args[0], env)?.is_nil();
                if test == (name == "when") {
                    self.eval_body(&args[1..], env)
                } else {
                    Ok(Value::nil(self.call_span()))
                }
            }
            "cond" => {
                for clause in args {
                    let Some((test, body)) = clause.as_list().and_then(|c| c.split_first()) else {
                        return Err(self.error(
                            &clause.span,
                            format!("a cond clause must be (test form…), found `{clause}`"),
                        ));
                    };
                    let value = self.eval(test, env)?;
                    if !value.is_nil() {
                        return if body.is_empty() {
                            Ok(value)
                        } else {
                            self.eval_body(body, env)
                        };
                    }
                }
                Ok(Value::nil(self.call_span()))
            }
            "and" => {
                let mut value = self.boolean(true);
                for arg in args {
                    value = self.eval(arg, env)?;
                    if value.is_nil() {
                        break;
                    }
                }
                Ok(value)
            }
            "or" => {
                for arg in args {
                    let value = self.eval(arg, env)?;
                    if !value.is_nil() {
                        return Ok(value);
                    }
                }
                Ok(Value::nil(self.call_span()))
            }
            "case" | "ecase" => self.case(name, form, args, env),
            "progn" => self.eval_body(args, env),
            "let" | "let*" => {
                self.expect_args(form, args, 1, None)?;
                let Some(bindings) = list_items(&args[0]) else {
                    return Err(self.error(
                        &args[0].span,
                        format!("`{name}` needs a list of bindings, found `{}`", args[0]),
                    ));
                };
                let mut inner = env.clone();
                for binding in bindings {
                    let (var, init) = self.binding(binding)?;
                    let eval_env = if name == "let" { env } else { &inner };
                    let value = match init {
                        Some(init) => self.eval(init, eval_env)?,
                        None => Value::nil(self.call_span()),
                    };
                    inner.bind(var, value);
                }
                self.eval_body(&args[1..], &inner)
            }
            "flet" | "labels" => {
                self.expect_args(form, args, 1, None)?;
                let Some(definitions) = list_items(&args[0]) else {
                    return Err(self.error(
                        &args[0].span,
                        format!("`{name}` needs a list of function definitions"),
                    ));
                };
                let mut parsed = Vec::new();
                for definition in definitions {
                    let Some([fname, params, body @ ..]) = definition.as_list() else {
                        return Err(self.error(
                            &definition.span,
                            format!("expected (name lambda-list body…), found `{definition}`"),
                        ));
                    };
                    let Some(fname) = fname.as_symbol() else {
                        return Err(self.error(
                            &fname.span,
                            format!("expected a function name, found `{fname}`"),
                        ));
                    };
                    parsed.push((fname, params, body));
                }
                let mut inner = env.clone();
                let cells: Vec<Rc<FunCell>> = parsed
                    .iter()
                    .map(|(fname, ..)| inner.bind_function(fname, None))
                    .collect();
                // `flet` functions see the outer environment; `labels` functions see each other.
                let closure_env = if name == "flet" {
                    env.clone()
                } else {
                    inner.clone()
                };
                for (cell, (fname, params, body)) in cells.iter().zip(&parsed) {
                    let function = self.closure(fname, params, body, &closure_env)?;
                    *cell.function.borrow_mut() = Some(function);
                }
                let result = self.eval_body(&args[1..], &inner);
                if name == "labels" {
                    // Break the reference cycles between labels closures and their environment.
                    for cell in &cells {
                        cell.function.borrow_mut().take();
                    }
                }
                result
            }
            "setq" | "setf" => {
                if !args.len().is_multiple_of(2) {
                    return Err(self.error(
                        &form.span,
                        format!("`{name}` needs pairs of place and value"),
                    ));
                }
                let mut value = Value::nil(self.call_span());
                for pair in args.chunks(2) {
                    value = self.eval(&pair[1], env)?;
                    self.assign(&pair[0], value.clone(), env)?;
                }
                Ok(value)
            }
            "push" => {
                self.expect_args(form, args, 2, Some(2))?;
                let item = self.eval(&args[0], env)?;
                let list = self.eval(&args[1], env)?;
                let value = self.call_builtin("cons", vec![item, list], &form.span)?;
                self.assign(&args[1], value.clone(), env)?;
                Ok(value)
            }
            "pop" => {
                self.expect_args(form, args, 1, Some(1))?;
                let list = self.eval(&args[0], env)?;
                let items = self.list_arg(&list, &args[0].span)?;
                let (first, rest) = match items.split_first() {
                    Some((first, rest)) => (Value::Data(first.clone()), rest.to_vec()),
                    None => (Value::nil(self.call_span()), Vec::new()),
                };
                let rest = self.list(rest);
                self.assign(&args[0], rest, env)?;
                Ok(first)
            }
            "incf" | "decf" => {
                self.expect_args(form, args, 1, Some(2))?;
                let old = self.eval(&args[0], env)?;
                let delta = match args.get(1) {
                    Some(d) => self.eval(d, env)?,
                    None => self.data(FormKind::Int {
                        value: 1,
                        suffix: IntSuffix::None,
                    }),
                };
                let op = if name == "incf" { "+" } else { "-" };
                let value = self.call_builtin(op, vec![old, delta], &form.span)?;
                self.assign(&args[0], value.clone(), env)?;
                Ok(value)
            }
            "dolist" | "dotimes" => {
                self.expect_args(form, args, 1, None)?;
                let spec = args[0].as_list().unwrap_or(&[]);
                let [var, source, result @ ..] = spec else {
                    return Err(self.error(
                        &args[0].span,
                        format!(
                            "`{name}` needs (var {} [result])",
                            if name == "dolist" { "list" } else { "count" }
                        ),
                    ));
                };
                let var = self.variable(var)?;
                let source_value = self.eval(source, env)?;
                if name == "dolist" {
                    let items = self.list_arg(&source_value, &source.span)?.to_vec();
                    for item in items {
                        self.tick(&form.span)?;
                        let mut inner = env.clone();
                        inner.bind(var, Value::Data(item));
                        self.eval_body(&args[1..], &inner)?;
                    }
                } else {
                    let count = self.int_arg(&source_value, &source.span)?;
                    for i in 0..count.max(0) {
                        self.tick(&form.span)?;
                        let mut inner = env.clone();
                        inner.bind(
                            var,
                            self.data(FormKind::Int {
                                value: i,
                                suffix: IntSuffix::None,
                            }),
                        );
                        self.eval_body(&args[1..], &inner)?;
                    }
                }
                match result.first() {
                    Some(result) => {
                        let mut inner = env.clone();
                        inner.bind(var, Value::nil(self.call_span()));
                        self.eval(result, &inner)
                    }
                    None => Ok(Value::nil(self.call_span())),
                }
            }
            "loop" => self.eval_loop(form, args, env),
            "destructuring-bind" => {
                self.expect_args(form, args, 2, None)?;
                let list = LambdaList::parse(&args[0], true)
                    .map_err(|e| self.error(&e.span, e.message))?;
                let value = self.eval(&args[1], env)?;
                let Some(items) = value.as_list() else {
                    return Err(self.error(
                        &args[1].span,
                        format!("destructuring-bind needs a list, got `{value}`"),
                    ));
                };
                let items: Vec<Value> = items.iter().cloned().map(Value::Data).collect();
                let mut inner = env.clone();
                let span = value
                    .span()
                    .cloned()
                    .unwrap_or_else(|| args[1].span.clone());
                let what = self.in_macro("destructuring-bind");
                let mut binder = EnvBinder {
                    interp: self,
                    env: &mut inner,
                };
                list.bind(&items, &value, &mut binder, &span, &what)?;
                self.eval_body(&args[2..], &inner)
            }
            "check-type" => {
                self.expect_args(form, args, 2, Some(3))?;
                let value = self.eval(&args[0], env)?;
                if self.has_type(&value, &args[1])? {
                    Ok(Value::nil(self.call_span()))
                } else {
                    Err(Error::new(
                        self.call_span(),
                        format!(
                            "macro `{}`: the value of {}, `{value}`, is not of type {}",
                            self.cx.name(),
                            args[0],
                            args[1]
                        ),
                    ))
                }
            }
            "assert" => {
                self.expect_args(form, args, 1, None)?;
                if self.eval(&args[0], env)?.is_nil() {
                    Err(Error::new(
                        self.call_span(),
                        format!(
                            "macro `{}`: the assertion {} failed",
                            self.cx.name(),
                            args[0]
                        ),
                    ))
                } else {
                    Ok(Value::nil(self.call_span()))
                }
            }
            "with-gensyms" => {
                self.expect_args(form, args, 1, None)?;
                let Some(names) = list_items(&args[0]) else {
                    return Err(self.error(&args[0].span, "with-gensyms needs a list of names"));
                };
                let mut inner = env.clone();
                for spec in names {
                    // `name` or `(name prefix)`.
                    let (var, prefix) = match spec.as_list() {
                        Some([var, prefix]) => {
                            let prefix_value = self.eval(prefix, env)?;
                            (
                                self.variable(var)?,
                                self.string_designator(&prefix_value, &prefix.span)?,
                            )
                        }
                        _ => {
                            let var = self.variable(spec)?;
                            (var, var.to_string())
                        }
                    };
                    inner.bind(var, Value::Data(self.cx.gensym(&prefix)));
                }
                self.eval_body(&args[1..], &inner)
            }
            "once-only" => self.once_only(form, args, env),
            _ => Err(self.error(&form.span, format!("`{name}` is not implemented"))),
        }
    }

    /// `(var init)`, `(var)` or `var`.
    fn binding<'f>(&self, binding: &'f Form) -> Result<(&'f str, Option<&'f Form>)> {
        match binding.as_list() {
            Some([var]) => Ok((self.variable(var)?, None)),
            Some([var, init]) => Ok((self.variable(var)?, Some(init))),
            Some(_) => Err(self.error(
                &binding.span,
                format!("expected (var init), found `{binding}`"),
            )),
            None => Ok((self.variable(binding)?, None)),
        }
    }

    fn variable<'f>(&self, form: &'f Form) -> Result<&'f str> {
        match form.as_symbol() {
            Some(name) if is_bindable(name) => Ok(name),
            _ => Err(self.error(
                &form.span,
                format!("expected a variable name, found `{form}`"),
            )),
        }
    }

    fn assign(&self, place: &Form, value: Value, env: &Env) -> Result<()> {
        let Some(name) = place.as_symbol() else {
            return Err(self.error(
                &place.span,
                format!("only variables can be assigned at macro time, not `{place}`"),
            ));
        };
        match env.lookup(name) {
            Some(cell) => {
                *cell.value.borrow_mut() = value;
                Ok(())
            }
            None => Err(self.error(&place.span, format!("unbound variable `{name}`"))),
        }
    }

    fn closure(&self, name: &str, params: &Form, body: &[Form], env: &Env) -> Result<Rc<Function>> {
        let params =
            LambdaList::parse(params, false).map_err(|e| self.error(&e.span, e.message))?;
        Ok(Rc::new(Function::Closure(Closure {
            name: name.to_string(),
            params,
            body: body.into(),
            env: env.clone(),
        })))
    }

    /// `#'name` or `#'(lambda …)`.
    fn function(&self, designator: &Form, env: &Env) -> Result<Value> {
        if let Some((head, rest)) = designator.as_call()
            && head == "lambda"
            && let Some((params, body)) = rest.split_first()
        {
            return Ok(Value::Function(self.closure("lambda", params, body, env)?));
        }
        let Some(name) = designator.as_symbol().map(canonical) else {
            return Err(self.error(
                &designator.span,
                format!("`{designator}` does not name a function"),
            ));
        };
        if let Some(f) = env.lookup_function(name) {
            return Ok(Value::Function(f));
        }
        match BUILTINS.iter().find(|b| **b == name) {
            Some(builtin) => Ok(Value::Function(Rc::new(Function::Builtin(builtin)))),
            None => Err(self.error(
                &designator.span,
                format!("unknown macro-time function `{name}`"),
            )),
        }
    }

    /// Calls a function value (or a symbol naming a built-in, as `funcall` allows).
    fn apply(&mut self, function: &Value, args: Vec<Value>, span: &Span) -> Result<Value> {
        let function = match function {
            Value::Function(f) => f.clone(),
            Value::Data(form) => match form
                .as_symbol()
                .map(canonical)
                .and_then(|n| BUILTINS.iter().find(|b| **b == n))
            {
                Some(builtin) => Rc::new(Function::Builtin(builtin)),
                None => return Err(self.error(span, format!("`{form}` is not a function"))),
            },
        };
        match &*function {
            Function::Builtin(name) => self.call_builtin(name, args, span),
            Function::Closure(closure) => {
                if self.depth >= MAX_CALL_DEPTH {
                    return Err(self.error(
                        span,
                        format!("macro-time calls nest more than {MAX_CALL_DEPTH} deep; is `{}` endlessly recursive?", closure.name),
                    ));
                }
                self.depth += 1;
                let mut env = closure.env.clone();
                let whole = Value::nil(span);
                let what = self.in_macro(format!("function `{}`", closure.name));
                let mut binder = EnvBinder {
                    interp: self,
                    env: &mut env,
                };
                let result = closure
                    .params
                    .bind(&args, &whole, &mut binder, span, &what)
                    .and_then(|()| self.eval_body(&closure.body, &env));
                self.depth -= 1;
                result
            }
        }
    }

    /// Fills in the backquote template `template`, `depth` backquotes deep (1 for the outermost).
    fn quasiquote(&mut self, template: &Form, depth: usize, env: &Env) -> Result<Form> {
        let span = self.call_span().clone();
        let Some(items) = template.as_list() else {
            return Ok(respan(template, &span));
        };
        if let [head, arg] = items {
            match head.as_symbol() {
                Some("unquote") if depth == 1 => {
                    return match self.eval(arg, env)? {
                        Value::Data(form) => Ok(form),
                        Value::Function(_) => {
                            Err(self.error(&arg.span, "a function cannot be inserted into a form"))
                        }
                    };
                }
                Some("unquote-splicing") if depth == 1 => {
                    return Err(self.error(
                        &template.span,
                        ",@ must be inside a list, as in `(f ,@args)",
                    ));
                }
                Some("unquote" | "unquote-splicing") => {
                    let mut inner =
                        self.quasiquote_items(std::slice::from_ref(arg), depth - 1, env)?;
                    if inner.len() != 1 {
                        return Err(self.error(
                            &template.span,
                            "a comma followed by ,@ must be inside a list, as in `(f `(g ,,@args))",
                        ));
                    }
                    return Ok(Form::list(vec![respan(head, &span), inner.remove(0)], span));
                }
                Some("quasiquote") => {
                    return Ok(Form::list(
                        vec![respan(head, &span), self.quasiquote(arg, depth + 1, env)?],
                        span,
                    ));
                }
                _ => {}
            }
        }
        let items = self.quasiquote_items(items, depth, env)?;
        self.charge(items.len());
        Ok(Form::list(items, span))
    }

    /// The elements of a template list, with `,@` spliced in. An element `,X` or `,@X` of an
    /// inner backquote is filled in one level up, and if `X` splices there (`,,@list`), each
    /// spliced value gets its own comma, as in Common Lisp.
    fn quasiquote_items(&mut self, items: &[Form], depth: usize, env: &Env) -> Result<Vec<Form>> {
        let span = self.call_span().clone();
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match item.as_call() {
                Some(("unquote-splicing", [arg])) if depth == 1 => {
                    let value = self.eval(arg, env)?;
                    let Some(spliced) = value.as_list() else {
                        return Err(self.error(
                            &arg.span,
                            format!(",@ needs a list to splice, got `{value}`"),
                        ));
                    };
                    spliced.iter().for_each(|item| self.charge_nodes(item));
                    out.extend(spliced.iter().cloned());
                }
                Some((op @ ("unquote" | "unquote-splicing"), [arg])) if depth > 1 => {
                    let inner = self.quasiquote_items(std::slice::from_ref(arg), depth - 1, env)?;
                    for value in inner {
                        out.push(Form::list(
                            vec![Form::symbol(op, span.clone()), value],
                            span.clone(),
                        ));
                    }
                }
                _ => out.push(self.quasiquote(item, depth, env)?),
            }
        }
        Ok(out)
    }

    fn case(&mut self, name: &str, form: &Form, args: &[Form], env: &Env) -> Result<Value> {
        self.expect_args(form, args, 1, None)?;
        let key = self.eval(&args[0], env)?;
        for clause in &args[1..] {
            let Some((keys, body)) = clause.as_list().and_then(|c| c.split_first()) else {
                return Err(self.error(
                    &clause.span,
                    format!("a {name} clause must be (keys form…), found `{clause}`"),
                ));
            };
            let matches = if name == "case" && (keys.is_symbol("t") || keys.is_symbol("otherwise"))
            {
                true
            } else if let Some(list) = keys.as_list() {
                list.iter()
                    .any(|k| key.as_form().is_some_and(|v| eql(v, k)))
            } else {
                key.as_form().is_some_and(|v| eql(v, keys))
            };
            if matches {
                return self.eval_body(body, env);
            }
        }
        if name == "ecase" {
            return Err(Error::new(
                self.call_span(),
                format!(
                    "macro `{}`: `{key}` matches no ecase clause",
                    self.cx.name()
                ),
            ));
        }
        Ok(Value::nil(self.call_span()))
    }

    /// Alexandria's `once-only`: the body sees each name bound to a gensym, and its result is
    /// wrapped in a kernel `let` that evaluates each original form once. Literal numbers and
    /// strings need no temporary and are passed through.
    fn once_only(&mut self, form: &Form, args: &[Form], env: &Env) -> Result<Value> {
        self.expect_args(form, args, 1, None)?;
        let Some(specs) = list_items(&args[0]) else {
            return Err(self.error(&args[0].span, "once-only needs a list of names"));
        };
        let mut inner = env.clone();
        let mut bindings = Vec::new();
        for spec in specs {
            // `name` (the value of the variable `name`) or `(name initform)`.
            let (var, value) = match spec.as_list() {
                Some([var, init]) => (self.variable(var)?, self.eval(init, env)?),
                _ => {
                    let var = self.variable(spec)?;
                    let value = match env.lookup(var) {
                        Some(cell) => cell.value.borrow().clone(),
                        None => {
                            return Err(self.error(&spec.span, format!("unbound variable `{var}`")));
                        }
                    };
                    (var, value)
                }
            };
            let Value::Data(original) = value else {
                return Err(self.error(&spec.span, "once-only needs forms, not functions"));
            };
            if matches!(
                original.kind,
                FormKind::Int { .. } | FormKind::Float { .. } | FormKind::Str(_)
            ) {
                inner.bind(var, Value::Data(original));
            } else {
                let temp = self.cx.gensym(var);
                bindings.push(Form::list(
                    vec![temp.clone(), original],
                    self.call_span().clone(),
                ));
                inner.bind(var, Value::Data(temp));
            }
        }
        let body = self.eval_body(&args[1..], &inner)?;
        if bindings.is_empty() {
            return Ok(body);
        }
        let Value::Data(body) = body else {
            return Err(self.error(&form.span, "once-only's body must return a form"));
        };
        let span = self.call_span().clone();
        Ok(self.list(vec![
            Form::symbol("let", span.clone()),
            Form::list(bindings, span),
            body,
        ]))
    }

    fn has_type(&self, value: &Value, ty: &Form) -> Result<bool> {
        let Some(form) = value.as_form() else {
            return Ok(ty.is_symbol("function") || ty.is_symbol("t"));
        };
        let is_int = matches!(form.kind, FormKind::Int { .. });
        let is_float = |p: Option<FloatPrecision>| match form.kind {
            FormKind::Float { precision, .. } => p.is_none_or(|p| p == precision),
            _ => false,
        };
        Ok(match ty.as_symbol() {
            Some("t") => true,
            Some("fixnum" | "integer") => is_int,
            Some("number" | "real") => is_int || is_float(None),
            Some("float") => is_float(None),
            Some("single-float") => is_float(Some(FloatPrecision::Single)),
            Some("double-float") => is_float(Some(FloatPrecision::Double)),
            Some("symbol") => form.as_symbol().is_some() || form.is_nil(),
            Some("keyword") => form.as_symbol().is_some_and(|s| s.starts_with(':')),
            Some("string") => matches!(form.kind, FormKind::Str(_)),
            Some("list") => form.is_nil() || form.as_list().is_some(),
            Some("cons") => form.as_list().is_some_and(|l| !l.is_empty()),
            Some("null") => form.is_nil(),
            _ => {
                return Err(self.error(
                    &ty.span,
                    format!("check-type does not know the type `{ty}`"),
                ));
            }
        })
    }

    fn list_arg<'v>(&self, value: &'v Value, span: &Span) -> Result<&'v [Form]> {
        value
            .as_list()
            .ok_or_else(|| self.error(span, format!("expected a list, got `{value}`")))
    }

    fn int_arg(&self, value: &Value, span: &Span) -> Result<i128> {
        match value.as_form().map(|f| &f.kind) {
            Some(FormKind::Int { value, .. }) => Ok(*value),
            _ => Err(self.error(span, format!("expected an integer, got `{value}`"))),
        }
    }

    fn num_arg(&self, value: &Value, span: &Span) -> Result<Num> {
        match value.as_form().map(|f| &f.kind) {
            Some(FormKind::Int { value, suffix }) => Ok(Num::Int(*value, *suffix)),
            Some(FormKind::Float { value, precision }) => Ok(Num::Float(*value, *precision)),
            _ => Err(self.error(span, format!("expected a number, got `{value}`"))),
        }
    }

    fn string_designator(&self, value: &Value, span: &Span) -> Result<String> {
        match value.as_form().map(|f| &f.kind) {
            Some(FormKind::Str(s)) => Ok(s.clone()),
            Some(FormKind::Symbol(s)) => Ok(s.clone()),
            _ => Err(self.error(
                span,
                format!("expected a string or a symbol, got `{value}`"),
            )),
        }
    }

    fn num_value(&self, n: Num, span: &Span) -> Result<Value> {
        match n {
            Num::Int(v, suffix) if v.unsigned_abs() <= u64::MAX as u128 => {
                Ok(self.data(FormKind::Int { value: v, suffix }))
            }
            Num::Int(..) => {
                Err(self.error(span, "integer overflow: the result does not fit in 64 bits"))
            }
            Num::Float(v, precision) => {
                let v = match precision {
                    FloatPrecision::Single => f64::from(v as f32),
                    FloatPrecision::Double => v,
                };
                if v.is_finite() {
                    Ok(self.data(FormKind::Float {
                        value: v,
                        precision,
                    }))
                } else {
                    Err(self.error(span, "the float result is infinite or not a number"))
                }
            }
        }
    }

    fn arith(&self, op: &str, a: Num, b: Num, span: &Span) -> Result<Num> {
        let overflow = || self.error(span, "integer overflow: the result does not fit in 64 bits");
        Ok(match (a, b) {
            (Num::Int(x, sx), Num::Int(y, sy)) => {
                let suffix = wider_suffix(sx, sy);
                let v = match op {
                    "+" => x.checked_add(y),
                    "-" => x.checked_sub(y),
                    "*" => x.checked_mul(y),
                    _ => {
                        if y == 0 {
                            return Err(self.error(span, "division by zero"));
                        }
                        if x % y != 0 {
                            return Err(self.error(
                                span,
                                format!(
                                    "(/ {x} {y}) on integers would be a ratio, which the kernel \
                                     language has no type for; use (floor {x} {y}), (truncate {x} {y}) \
                                     or a float operand"
                                ),
                            ));
                        }
                        Some(x / y)
                    }
                };
                Num::Int(v.ok_or_else(overflow)?, suffix)
            }
            _ => {
                let (x, y) = (a.as_f64(), b.as_f64());
                if op == "/" && y == 0.0 {
                    return Err(self.error(span, "division by zero"));
                }
                let v = match op {
                    "+" => x + y,
                    "-" => x - y,
                    "*" => x * y,
                    _ => x / y,
                };
                Num::Float(v, float_precision(a, b))
            }
        })
    }

    fn round_div(&self, mode: Rounding, a: Num, b: Num, span: &Span) -> Result<Value> {
        let value = match (a, b) {
            (Num::Int(x, _), Num::Int(y, _)) => {
                if y == 0 {
                    return Err(self.error(span, "division by zero"));
                }
                let (q, r) = (x / y, x % y);
                let negative = (r != 0) && ((r < 0) != (y < 0));
                match mode {
                    Rounding::Truncate => q,
                    Rounding::Floor => q - i128::from(negative),
                    Rounding::Ceiling => q + i128::from(r != 0 && !negative),
                    Rounding::Round => {
                        // To nearest, ties to even, as Common Lisp's `round`.
                        let twice = 2 * r.abs();
                        let toward = if (r < 0) != (y < 0) { -1 } else { 1 };
                        if twice > y.abs() || (twice == y.abs() && q % 2 != 0) {
                            q + toward
                        } else {
                            q
                        }
                    }
                }
            }
            _ => {
                let (x, y) = (a.as_f64(), b.as_f64());
                if y == 0.0 {
                    return Err(self.error(span, "division by zero"));
                }
                let q = x / y;
                let r = match mode {
                    Rounding::Floor => q.floor(),
                    Rounding::Ceiling => q.ceil(),
                    Rounding::Truncate => q.trunc(),
                    Rounding::Round => q.round_ties_even(),
                };
                if !r.is_finite() || r.abs() > u64::MAX as f64 {
                    return Err(self.error(span, "the result does not fit in a 64-bit integer"));
                }
                r as i128
            }
        };
        self.num_value(Num::Int(value, IntSuffix::None), span)
    }

    fn compare(&self, op: &str, a: Num, b: Num) -> bool {
        let ordering = match (a, b) {
            (Num::Int(x, _), Num::Int(y, _)) => x.partial_cmp(&y),
            _ => a.as_f64().partial_cmp(&b.as_f64()),
        };
        let Some(o) = ordering else { return false };
        match op {
            "=" => o.is_eq(),
            "/=" => o.is_ne(),
            "<" => o.is_lt(),
            ">" => o.is_gt(),
            "<=" => o.is_le(),
            _ => o.is_ge(),
        }
    }

    fn expect_count(
        &self,
        name: &str,
        args: &[Value],
        min: usize,
        max: Option<usize>,
        span: &Span,
    ) -> Result<()> {
        if args.len() < min || max.is_some_and(|m| args.len() > m) {
            let expected = match max {
                Some(m) if m == min => format!("{min}"),
                Some(m) => format!("{min} to {m}"),
                None => format!("at least {min}"),
            };
            return Err(self.error(
                span,
                format!("`{name}` takes {expected} argument(s), got {}", args.len()),
            ));
        }
        Ok(())
    }

    fn call_builtin(&mut self, name: &str, args: Vec<Value>, span: &Span) -> Result<Value> {
        let (min, max) = builtin_arity(name);
        self.expect_count(name, &args, min, max, span)?;
        match name {
            // --- lists -------------------------------------------------------------------------
            "list" => self.list_value(&args, span),
            "list*" => {
                let (last, init) = args
                    .split_last()
                    .map(|(l, i)| (l.clone(), i.to_vec()))
                    .unwrap_or_else(|| (Value::nil(span), vec![]));
                let tail = self.list_arg(&last, span)?.to_vec();
                let mut items = self.forms(&init, span)?;
                items.extend(tail);
                Ok(self.list(items))
            }
            "cons" => {
                let Some(tail) = args[1].as_list() else {
                    return Err(self.error(span, format!("(cons x `{}`): the second argument must be a list, dotted pairs are not supported", args[1])));
                };
                let mut items = self.forms(&args[..1], span)?;
                items.extend(tail.iter().cloned());
                Ok(self.list(items))
            }
            "car" | "first" | "second" | "third" | "fourth" | "fifth" | "cadr" | "caddr" => {
                let index = match name {
                    "car" | "first" => 0,
                    "second" | "cadr" => 1,
                    "third" | "caddr" => 2,
                    "fourth" => 3,
                    _ => 4,
                };
                let items = self.list_arg(&args[0], span)?;
                let item = items.get(index).cloned();
                item.as_ref().inspect(|item| self.charge_nodes(item));
                Ok(item.map(Value::Data).unwrap_or_else(|| Value::nil(span)))
            }
            "cdr" | "rest" | "cddr" => {
                let skip = if name == "cddr" { 2 } else { 1 };
                let items = self.list_arg(&args[0], span)?;
                Ok(self.list(items.iter().skip(skip).cloned().collect()))
            }
            "nth" | "nthcdr" => {
                let index = self.int_arg(&args[0], span)?;
                let items = self.list_arg(&args[1], span)?;
                let index = usize::try_from(index).map_err(|_| {
                    self.error(span, format!("`{name}` needs a non-negative index"))
                })?;
                Ok(if name == "nth" {
                    items
                        .get(index)
                        .cloned()
                        .map(Value::Data)
                        .unwrap_or_else(|| Value::nil(span))
                } else {
                    self.list(items.iter().skip(index).cloned().collect())
                })
            }
            "last" => {
                let items = self.list_arg(&args[0], span)?;
                let count = match args.get(1) {
                    Some(c) => usize::try_from(self.int_arg(c, span)?).unwrap_or(0),
                    None => 1,
                };
                Ok(self.list(items[items.len().saturating_sub(count)..].to_vec()))
            }
            "butlast" => {
                let items = self.list_arg(&args[0], span)?;
                let count = match args.get(1) {
                    Some(c) => usize::try_from(self.int_arg(c, span)?).unwrap_or(0),
                    None => 1,
                };
                Ok(self.list(items[..items.len().saturating_sub(count)].to_vec()))
            }
            "append" => {
                let mut items = Vec::new();
                for arg in &args {
                    items.extend(self.list_arg(arg, span)?.iter().cloned());
                }
                Ok(self.list(items))
            }
            "reverse" | "nreverse" => {
                if let Some(FormKind::Str(s)) = args[0].as_form().map(|f| &f.kind) {
                    return Ok(self.data(FormKind::Str(s.chars().rev().collect())));
                }
                Ok(self.list(
                    self.list_arg(&args[0], span)?
                        .iter()
                        .rev()
                        .cloned()
                        .collect(),
                ))
            }
            "length" => {
                let len = match args[0].as_form().map(|f| &f.kind) {
                    Some(FormKind::Str(s)) => s.chars().count(),
                    _ => self.list_arg(&args[0], span)?.len(),
                };
                Ok(self.data(FormKind::Int {
                    value: len as i128,
                    suffix: IntSuffix::None,
                }))
            }
            "member" => {
                let item = args[0].as_form().cloned();
                let items = self.list_arg(&args[1], span)?;
                Ok(
                    match items
                        .iter()
                        .position(|x| item.as_ref().is_some_and(|i| eql(i, x)))
                    {
                        Some(i) => self.list(items[i..].to_vec()),
                        None => Value::nil(span),
                    },
                )
            }
            "assoc" => {
                let item = args[0].as_form().cloned();
                let items = self.list_arg(&args[1], span)?;
                let found = items.iter().find(|entry| {
                    entry
                        .as_list()
                        .and_then(|e| e.first())
                        .is_some_and(|k| item.as_ref().is_some_and(|i| eql(i, k)))
                });
                Ok(found
                    .cloned()
                    .map(Value::Data)
                    .unwrap_or_else(|| Value::nil(span)))
            }
            "mapcar" | "mapcan" => {
                let lists: Vec<Vec<Form>> = args[1..]
                    .iter()
                    .map(|l| self.list_arg(l, span).map(<[Form]>::to_vec))
                    .collect::<Result<_>>()?;
                let count = lists.iter().map(Vec::len).min().unwrap_or(0);
                let mut out = Vec::new();
                for i in 0..count {
                    let call_args = lists.iter().map(|l| Value::Data(l[i].clone())).collect();
                    let value = self.apply(&args[0], call_args, span)?;
                    if name == "mapcar" {
                        out.push(self.forms(std::slice::from_ref(&value), span)?.remove(0));
                    } else {
                        out.extend(self.list_arg(&value, span)?.iter().cloned());
                    }
                }
                Ok(self.list(out))
            }
            "remove-if" | "remove-if-not" => {
                let items = self.list_arg(&args[1], span)?.to_vec();
                let mut out = Vec::new();
                for item in items {
                    let test = !self
                        .apply(&args[0], vec![Value::Data(item.clone())], span)?
                        .is_nil();
                    if test != (name == "remove-if") {
                        out.push(item);
                    }
                }
                Ok(self.list(out))
            }
            "every" | "some" => {
                let items = self.list_arg(&args[1], span)?.to_vec();
                for item in items {
                    let value = self.apply(&args[0], vec![Value::Data(item)], span)?;
                    if name == "every" && value.is_nil() {
                        return Ok(value);
                    }
                    if name == "some" && !value.is_nil() {
                        return Ok(value);
                    }
                }
                Ok(self.boolean(name == "every"))
            }
            "funcall" => {
                let mut args = args;
                let function = args.remove(0);
                self.apply(&function, args, span)
            }
            "apply" => {
                let mut args = args;
                let function = args.remove(0);
                let last = args.pop().unwrap_or_else(|| Value::nil(span));
                args.extend(self.list_arg(&last, span)?.iter().cloned().map(Value::Data));
                self.apply(&function, args, span)
            }
            "identity" => Ok(args[0].clone()),
            "values" => Ok(args.first().cloned().unwrap_or_else(|| Value::nil(span))),
            "copy-list" => Ok(self.list(self.list_arg(&args[0], span)?.to_vec())),
            "endp" => Ok(self.boolean(self.list_arg(&args[0], span)?.is_empty())),
            "remove" | "find" | "position" | "count" => {
                let item = args[0].as_form().cloned();
                let items = self.list_arg(&args[1], span)?;
                let matches = |x: &Form| item.as_ref().is_some_and(|i| eql(i, x));
                Ok(match name {
                    "remove" => self.list(items.iter().filter(|x| !matches(x)).cloned().collect()),
                    "find" => items
                        .iter()
                        .find(|x| matches(x))
                        .cloned()
                        .map_or_else(|| Value::nil(span), Value::Data),
                    "position" => match items.iter().position(matches) {
                        Some(i) => self.data(FormKind::Int {
                            value: i as i128,
                            suffix: IntSuffix::None,
                        }),
                        None => Value::nil(span),
                    },
                    _ => self.data(FormKind::Int {
                        value: items.iter().filter(|x| matches(x)).count() as i128,
                        suffix: IntSuffix::None,
                    }),
                })
            }
            "reduce" => {
                // (reduce f list [:initial-value v])
                let initial = match &args[2..] {
                    [] => None,
                    [key, value] if key.is_symbol(":initial-value") => Some(value.clone()),
                    _ => {
                        return Err(self.error(
                            span,
                            "reduce takes a function, a list and optionally :initial-value v",
                        ));
                    }
                };
                let items = self.list_arg(&args[1], span)?.to_vec();
                let mut items = items.into_iter().map(Value::Data);
                let Some(mut acc) = initial.or_else(|| items.next()) else {
                    return self.apply(&args[0], Vec::new(), span);
                };
                for item in items {
                    acc = self.apply(&args[0], vec![acc, item], span)?;
                }
                Ok(acc)
            }
            "subseq" => {
                let start = self.int_arg(&args[1], span)?;
                let end = match args.get(2) {
                    Some(end) if !end.is_nil() => Some(self.int_arg(end, span)?),
                    _ => None,
                };
                let bounds = |len: usize| {
                    let end = end.unwrap_or(len as i128);
                    if 0 <= start && start <= end && end <= len as i128 {
                        Ok((start as usize, end as usize))
                    } else {
                        Err(self.error(
                            span,
                            format!("subseq: the bounds {start} to {end} are outside 0 to {len}"),
                        ))
                    }
                };
                if let Some(FormKind::Str(text)) = args[0].as_form().map(|f| &f.kind) {
                    let chars: Vec<char> = text.chars().collect();
                    let (from, to) = bounds(chars.len())?;
                    return Ok(self.data(FormKind::Str(chars[from..to].iter().collect())));
                }
                let items = self.list_arg(&args[0], span)?;
                let (from, to) = bounds(items.len())?;
                Ok(self.list(items[from..to].to_vec()))
            }
            "mapc" => {
                let lists: Vec<Vec<Form>> = args[1..]
                    .iter()
                    .map(|l| self.list_arg(l, span).map(<[Form]>::to_vec))
                    .collect::<Result<_>>()?;
                let count = lists.iter().map(Vec::len).min().unwrap_or(0);
                for i in 0..count {
                    let call_args = lists.iter().map(|l| Value::Data(l[i].clone())).collect();
                    self.apply(&args[0], call_args, span)?;
                }
                Ok(args[1].clone())
            }
            // --- predicates ----------------------------------------------------------------------
            "numberp" | "integerp" | "floatp" | "symbolp" | "keywordp" | "stringp" | "listp"
            | "consp" | "atom" | "null" | "not" | "functionp" => {
                let v = &args[0];
                let kind = v.as_form().map(|f| &f.kind);
                let result = match name {
                    "numberp" => {
                        matches!(kind, Some(FormKind::Int { .. } | FormKind::Float { .. }))
                    }
                    "integerp" => matches!(kind, Some(FormKind::Int { .. })),
                    "floatp" => matches!(kind, Some(FormKind::Float { .. })),
                    "symbolp" => matches!(kind, Some(FormKind::Symbol(_))) || v.is_nil(),
                    "keywordp" => v.as_symbol().is_some_and(|s| s.starts_with(':')),
                    "stringp" => matches!(kind, Some(FormKind::Str(_))),
                    "listp" => v.as_list().is_some(),
                    "consp" => v.as_list().is_some_and(|l| !l.is_empty()),
                    "atom" => v.as_list().is_none_or(<[Form]>::is_empty),
                    "null" | "not" => v.is_nil(),
                    _ => matches!(v, Value::Function(_)),
                };
                Ok(self.boolean(result))
            }
            "eq" | "eql" | "equal" => {
                let result = match (args[0].as_form(), args[1].as_form()) {
                    (Some(a), Some(b)) => eql(a, b),
                    _ => false,
                };
                Ok(self.boolean(result))
            }
            // --- numbers ---------------------------------------------------------------------------
            "+" | "*" => {
                let mut acc = Num::Int(i128::from(name == "*"), IntSuffix::None);
                for arg in &args {
                    let x = self.num_arg(arg, span)?;
                    acc = self.arith(name, acc, x, span)?;
                }
                self.num_value(acc, span)
            }
            "-" | "/" => {
                let first = self.num_arg(&args[0], span)?;
                let acc = if args.len() == 1 {
                    let identity = Num::Int(i128::from(name == "/"), IntSuffix::None);
                    self.arith(name, identity, first, span)?
                } else {
                    let mut acc = first;
                    for arg in &args[1..] {
                        let x = self.num_arg(arg, span)?;
                        acc = self.arith(name, acc, x, span)?;
                    }
                    acc
                };
                self.num_value(acc, span)
            }
            "1+" | "1-" => {
                let x = self.num_arg(&args[0], span)?;
                let one = Num::Int(1, IntSuffix::None);
                let r = self.arith(if name == "1+" { "+" } else { "-" }, x, one, span)?;
                self.num_value(r, span)
            }
            "mod" | "rem" => {
                let (a, b) = (self.num_arg(&args[0], span)?, self.num_arg(&args[1], span)?);
                let mode = if name == "mod" {
                    Rounding::Floor
                } else {
                    Rounding::Truncate
                };
                let q = self.round_div(mode, a, b, span)?;
                let q = self.num_arg(&q, span)?;
                let product = self.arith("*", q, b, span)?;
                let r = self.arith("-", a, product, span)?;
                self.num_value(r, span)
            }
            "floor" | "ceiling" | "truncate" | "round" => {
                let a = self.num_arg(&args[0], span)?;
                let b = match args.get(1) {
                    Some(b) => self.num_arg(b, span)?,
                    None => Num::Int(1, IntSuffix::None),
                };
                let mode = match name {
                    "floor" => Rounding::Floor,
                    "ceiling" => Rounding::Ceiling,
                    "truncate" => Rounding::Truncate,
                    _ => Rounding::Round,
                };
                self.round_div(mode, a, b, span)
            }
            "min" | "max" => {
                let mut best = args[0].clone();
                let mut best_num = self.num_arg(&best, span)?;
                for arg in &args[1..] {
                    let x = self.num_arg(arg, span)?;
                    if self.compare(if name == "min" { "<" } else { ">" }, x, best_num) {
                        best = arg.clone();
                        best_num = x;
                    }
                }
                Ok(best)
            }
            "abs" => {
                let r = match self.num_arg(&args[0], span)? {
                    Num::Int(v, s) => Num::Int(v.abs(), s),
                    Num::Float(v, p) => Num::Float(v.abs(), p),
                };
                self.num_value(r, span)
            }
            "expt" => {
                let (base, power) = (self.num_arg(&args[0], span)?, self.num_arg(&args[1], span)?);
                let r = match (base, power) {
                    (Num::Int(b, s), Num::Int(p, _)) if p >= 0 => {
                        let p = u32::try_from(p).map_err(|_| {
                            self.error(span, "integer overflow: the result does not fit in 64 bits")
                        })?;
                        Num::Int(
                            b.checked_pow(p).ok_or_else(|| {
                                self.error(
                                    span,
                                    "integer overflow: the result does not fit in 64 bits",
                                )
                            })?,
                            s,
                        )
                    }
                    (Num::Int(b, _), Num::Int(..)) if b.abs() != 1 => {
                        return Err(self.error(
                            span,
                            "(expt integer negative-integer) would be a ratio; use a float base",
                        ));
                    }
                    (Num::Int(b, s), Num::Int(p, _)) => {
                        Num::Int(if b == 1 || p % 2 == 0 { 1 } else { -1 }, s)
                    }
                    _ => Num::Float(
                        base.as_f64().powf(power.as_f64()),
                        float_precision(base, power),
                    ),
                };
                self.num_value(r, span)
            }
            "sqrt" => {
                let x = self.num_arg(&args[0], span)?;
                if x.as_f64() < 0.0 {
                    return Err(self.error(
                        span,
                        "sqrt of a negative number (complex numbers are not supported)",
                    ));
                }
                let precision = float_precision(x, x);
                self.num_value(Num::Float(x.as_f64().sqrt(), precision), span)
            }
            "float" => {
                let x = self.num_arg(&args[0], span)?;
                let precision = match args.get(1) {
                    Some(proto) => match self.num_arg(proto, span)? {
                        Num::Float(_, p) => p,
                        Num::Int(..) => {
                            return Err(
                                self.error(span, "the prototype of `float` must be a float")
                            );
                        }
                    },
                    None => match x {
                        Num::Float(_, p) => p,
                        Num::Int(..) => FloatPrecision::Single,
                    },
                };
                self.num_value(Num::Float(x.as_f64(), precision), span)
            }
            "=" | "/=" | "<" | ">" | "<=" | ">=" => {
                let nums = args
                    .iter()
                    .map(|a| self.num_arg(a, span))
                    .collect::<Result<Vec<_>>>()?;
                let result = if name == "/=" {
                    nums.iter()
                        .enumerate()
                        .all(|(i, a)| nums[i + 1..].iter().all(|b| self.compare("/=", *a, *b)))
                } else {
                    nums.windows(2).all(|w| self.compare(name, w[0], w[1]))
                };
                Ok(self.boolean(result))
            }
            "zerop" | "plusp" | "minusp" => {
                let x = self.num_arg(&args[0], span)?.as_f64();
                Ok(self.boolean(match name {
                    "zerop" => x == 0.0,
                    "plusp" => x > 0.0,
                    _ => x < 0.0,
                }))
            }
            "evenp" | "oddp" => {
                let x = self.int_arg(&args[0], span)?;
                Ok(self.boolean((x % 2 == 0) == (name == "evenp")))
            }
            // --- strings and symbols -----------------------------------------------------------------
            "format" => {
                if !args[0].is_nil() {
                    return Err(self.error(
                        span,
                        "only (format nil …) is supported: macro code cannot print",
                    ));
                }
                let control = self.string_arg(&args[1], span)?;
                Ok(self.data(FormKind::Str(self.format(&control, &args[2..], span)?)))
            }
            "intern" => {
                let name = self.string_arg(&args[0], span)?;
                let folded: String = name.chars().flat_map(char::to_lowercase).collect();
                self.new_symbol(&folded, span)
            }
            "symbolicate" => {
                let mut name = String::new();
                for arg in &args {
                    name.push_str(&self.string_designator(arg, span)?);
                }
                let folded: String = name.chars().flat_map(char::to_lowercase).collect();
                self.new_symbol(&folded, span)
            }
            "make-symbol" => {
                let name = self.string_arg(&args[0], span)?;
                Ok(Value::Data(self.cx.gensym(&name)))
            }
            "gensym" => {
                let prefix = match args.first() {
                    Some(p) => self.string_designator(p, span)?,
                    None => "g".to_string(),
                };
                Ok(Value::Data(self.cx.gensym(&prefix)))
            }
            "symbol-name" => {
                let Some(name) = args[0].as_symbol().or(args[0].is_nil().then_some("nil")) else {
                    return Err(self.error(span, format!("expected a symbol, got `{}`", args[0])));
                };
                Ok(self.data(FormKind::Str(name.to_string())))
            }
            "string" => {
                let s = self.string_designator(&args[0], span)?;
                Ok(self.data(FormKind::Str(s)))
            }
            "string-upcase" | "string-downcase" => {
                let s = self.string_designator(&args[0], span)?;
                Ok(self.data(FormKind::Str(if name == "string-upcase" {
                    s.to_uppercase()
                } else {
                    s.to_lowercase()
                })))
            }
            "string=" | "string-equal" => {
                let (a, b) = (
                    self.string_designator(&args[0], span)?,
                    self.string_designator(&args[1], span)?,
                );
                Ok(self.boolean(if name == "string=" {
                    a == b
                } else {
                    a.to_lowercase() == b.to_lowercase()
                }))
            }
            "concatenate" => {
                let result_type = args[0].as_symbol();
                match result_type {
                    Some("string") => {
                        let mut s = String::new();
                        for arg in &args[1..] {
                            s.push_str(&self.string_arg(arg, span)?);
                        }
                        Ok(self.data(FormKind::Str(s)))
                    }
                    Some("list") => self.call_builtin("append", args[1..].to_vec(), span),
                    _ => Err(self.error(
                        span,
                        "concatenate supports the result types 'string and 'list",
                    )),
                }
            }
            "error" => {
                let control = self.string_arg(&args[0], span)?;
                let message = self.format(&control, &args[1..], span)?;
                Err(Error::new(
                    self.call_span(),
                    format!("macro `{}`: {message}", self.cx.name()),
                ))
            }
            _ => Err(self.error(span, format!("unknown macro-time function `{name}`"))),
        }
    }

    fn new_symbol(&self, name: &str, span: &Span) -> Result<Value> {
        if name.starts_with(crate::reader::GENSYM_PREFIX) {
            return Err(self.error(
                span,
                format!("`{name}`: names starting with `#:` are reserved for gensyms"),
            ));
        }
        Ok(self.symbol(name))
    }

    fn string_arg(&self, value: &Value, span: &Span) -> Result<String> {
        match value.as_form().map(|f| &f.kind) {
            Some(FormKind::Str(s)) => Ok(s.clone()),
            _ => Err(self.error(span, format!("expected a string, got `{value}`"))),
        }
    }

    /// The forms of `values`; a function among them is an error.
    fn forms(&self, values: &[Value], span: &Span) -> Result<Vec<Form>> {
        values
            .iter()
            .map(|v| {
                v.as_form()
                    .cloned()
                    .ok_or_else(|| self.error(span, "a function cannot be stored in a list"))
            })
            .collect()
    }

    fn list_value(&self, values: &[Value], span: &Span) -> Result<Value> {
        Ok(self.list(self.forms(values, span)?))
    }

    /// `format` with `~a`, `~s`, `~d`, `~%` and `~~`.
    fn format(&self, control: &str, args: &[Value], span: &Span) -> Result<String> {
        let mut out = String::new();
        let mut args = args.iter();
        let mut chars = control.chars();
        while let Some(c) = chars.next() {
            if c != '~' {
                out.push(c);
                continue;
            }
            let directive = chars.next().map(|d| d.to_ascii_lowercase());
            match directive {
                Some('%') => out.push('\n'),
                Some('~') => out.push('~'),
                Some(d @ ('a' | 's' | 'd')) => {
                    let Some(arg) = args.next() else {
                        return Err(self.error(span, format!("format: no argument left for ~{d}")));
                    };
                    match (d, arg.as_form().map(|f| &f.kind)) {
                        ('a', Some(FormKind::Str(s))) => out.push_str(s),
                        ('d', Some(FormKind::Int { value, .. })) => {
                            out.push_str(&value.to_string())
                        }
                        _ => out.push_str(&arg.to_string()),
                    }
                }
                other => {
                    return Err(self.error(
                        span,
                        format!(
                            "format directive `~{}` is not supported; use ~a, ~s, ~d, ~% or ~~",
                            other.map(String::from).unwrap_or_default()
                        ),
                    ));
                }
            }
        }
        Ok(out)
    }

    /// The `loop` subset documented at the top of the module.
    fn eval_loop(&mut self, form: &Form, args: &[Form], env: &Env) -> Result<Value> {
        enum Driver {
            In {
                var: String,
                items: Vec<Form>,
            },
            From {
                var: String,
                next: Num,
                end: Option<(Num, bool, bool)>,
                step: Num,
            },
            Repeat(i128),
        }
        enum Action<'f> {
            Collect(&'f Form),
            Append(&'f Form),
            Sum(&'f Form),
            Do(&'f [Form]),
        }
        let loop_keyword = |f: &Form, k: &str| f.is_symbol(k) || f.is_symbol(&format!(":{k}"));
        let is_clause_keyword = |f: &Form| {
            [
                "for", "repeat", "collect", "append", "sum", "do", "when", "unless",
            ]
            .iter()
            .any(|k| loop_keyword(f, k))
        };
        let mut drivers = Vec::new();
        let mut actions: Vec<(Option<(bool, &Form)>, Action)> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let clause = &args[i];
            i += 1;
            if loop_keyword(clause, "for") {
                let var = self
                    .variable(self.loop_operand(args, i, "a variable", &form.span)?)?
                    .to_string();
                let how = self.loop_operand(args, i + 1, "`in` or `from`", &form.span)?;
                i += 2;
                if loop_keyword(how, "in") {
                    let list = self.eval(self.loop_operand(args, i, "a list", &form.span)?, env)?;
                    i += 1;
                    drivers.push(Driver::In {
                        var,
                        items: self.list_arg(&list, &form.span)?.to_vec(),
                    });
                } else if loop_keyword(how, "from") {
                    let start =
                        self.eval(self.loop_operand(args, i, "a number", &form.span)?, env)?;
                    let start = self.num_arg(&start, &args[i].span)?;
                    i += 1;
                    let mut end = None;
                    let mut step = Num::Int(1, IntSuffix::None);
                    while let Some(k) = args.get(i) {
                        let (inclusive, is_down) = if loop_keyword(k, "to")
                            || loop_keyword(k, "upto")
                        {
                            (true, false)
                        } else if loop_keyword(k, "below") {
                            (false, false)
                        } else if loop_keyword(k, "downto") {
                            (true, true)
                        } else if loop_keyword(k, "by") {
                            let v = self
                                .eval(self.loop_operand(args, i + 1, "a step", &form.span)?, env)?;
                            step = self.num_arg(&v, &k.span)?;
                            i += 2;
                            continue;
                        } else {
                            break;
                        };
                        let v =
                            self.eval(self.loop_operand(args, i + 1, "a limit", &form.span)?, env)?;
                        end = Some((self.num_arg(&v, &k.span)?, inclusive, is_down));
                        i += 2;
                    }
                    drivers.push(Driver::From {
                        var,
                        next: start,
                        end,
                        step,
                    });
                } else {
                    return Err(self.error(
                        &how.span,
                        format!("loop: expected `in` or `from`, found `{how}`"),
                    ));
                }
            } else if loop_keyword(clause, "repeat") {
                let count = self.eval(self.loop_operand(args, i, "a count", &form.span)?, env)?;
                drivers.push(Driver::Repeat(self.int_arg(&count, &args[i].span)?));
                i += 1;
            } else {
                let mut condition = None;
                let mut keyword = clause;
                if loop_keyword(clause, "when") || loop_keyword(clause, "unless") {
                    condition = Some((
                        loop_keyword(clause, "when"),
                        self.loop_operand(args, i, "a test", &form.span)?,
                    ));
                    keyword = self.loop_operand(args, i + 1, "an action", &form.span)?;
                    i += 2;
                }
                let action = if loop_keyword(keyword, "do") {
                    let start = i;
                    while i < args.len() && !is_clause_keyword(&args[i]) {
                        i += 1;
                    }
                    Action::Do(&args[start..i])
                } else {
                    let operand = self.loop_operand(args, i, "a form", &form.span)?;
                    i += 1;
                    if loop_keyword(keyword, "collect") {
                        Action::Collect(operand)
                    } else if loop_keyword(keyword, "append") {
                        Action::Append(operand)
                    } else if loop_keyword(keyword, "sum") {
                        Action::Sum(operand)
                    } else {
                        return Err(self.error(
                            &keyword.span,
                            format!("loop: `{keyword}` is not supported; the clauses are for … in, for … from … to/below/downto … by, repeat, collect, append, sum, do, when, unless"),
                        ));
                    }
                };
                actions.push((condition, action));
            }
        }
        let mut collected: Vec<Form> = Vec::new();
        let mut sum: Option<Num> = None;
        let mut iteration = 0usize;
        loop {
            let mut inner = env.clone();
            for driver in &mut drivers {
                match driver {
                    Driver::In { var, items } => {
                        let Some(item) = items.get(iteration) else {
                            return self.loop_result(collected, sum);
                        };
                        inner.bind(var, Value::Data(item.clone()));
                    }
                    Driver::From {
                        var,
                        next,
                        end,
                        step,
                    } => {
                        if let Some((limit, inclusive, down)) = end {
                            let op = match (*down, *inclusive) {
                                (false, true) => ">",
                                (false, false) => ">=",
                                (true, true) => "<",
                                (true, false) => "<=",
                            };
                            if self.compare(op, *next, *limit) {
                                return self.loop_result(collected, sum);
                            }
                        }
                        inner.bind(var, self.num_value(*next, &form.span)?);
                        let op = if end.is_some_and(|(_, _, down)| down) {
                            "-"
                        } else {
                            "+"
                        };
                        *next = self.arith(op, *next, *step, &form.span)?;
                    }
                    Driver::Repeat(count) => {
                        if iteration as i128 >= *count {
                            return self.loop_result(collected, sum);
                        }
                    }
                }
            }
            iteration += 1;
            self.tick(&form.span)?;
            for (condition, action) in &actions {
                if let Some((when, test)) = condition
                    && self.eval(test, &inner)?.is_nil() == *when
                {
                    continue;
                }
                match action {
                    Action::Collect(f) => {
                        let v = self.eval(f, &inner)?;
                        collected.extend(self.forms(std::slice::from_ref(&v), &f.span)?);
                    }
                    Action::Append(f) => {
                        let v = self.eval(f, &inner)?;
                        collected.extend(self.list_arg(&v, &f.span)?.iter().cloned());
                    }
                    Action::Sum(f) => {
                        let v = self.eval(f, &inner)?;
                        let x = self.num_arg(&v, &f.span)?;
                        sum = Some(match sum {
                            Some(acc) => self.arith("+", acc, x, &f.span)?,
                            None => x,
                        });
                    }
                    Action::Do(body) => {
                        self.eval_body(body, &inner)?;
                    }
                }
            }
        }
    }

    fn loop_operand<'f>(
        &self,
        args: &'f [Form],
        i: usize,
        what: &str,
        span: &Span,
    ) -> Result<&'f Form> {
        args.get(i)
            .ok_or_else(|| self.error(span, format!("loop: expected {what} at the end")))
    }

    fn loop_result(&self, collected: Vec<Form>, sum: Option<Num>) -> Result<Value> {
        match sum {
            Some(n) => self.num_value(n, self.call_span()),
            None => Ok(self.list(collected)),
        }
    }
}

/// How many arguments a built-in takes: at least the first, at most the second.
fn builtin_arity(name: &str) -> (usize, Option<usize>) {
    match name {
        "list" | "append" | "+" | "*" | "symbolicate" => (0, None),
        "gensym" => (0, Some(1)),
        "list*" | "-" | "/" | "min" | "max" | "=" | "/=" | "<" | ">" | "<=" | ">=" | "funcall"
        | "concatenate" | "error" => (1, None),
        "last" | "butlast" | "intern" | "float" | "floor" | "ceiling" | "truncate" | "round" => {
            (1, Some(2))
        }
        "cons" | "nth" | "nthcdr" | "member" | "assoc" | "remove-if" | "remove-if-not"
        | "every" | "some" | "eq" | "eql" | "equal" | "mod" | "rem" | "expt" | "string="
        | "string-equal" => (2, Some(2)),
        "mapcar" | "mapcan" | "mapc" | "apply" | "format" => (2, None),
        "values" => (0, None),
        "remove" | "find" | "position" | "count" => (2, Some(2)),
        "reduce" => (2, Some(4)),
        "subseq" => (2, Some(3)),
        _ => (1, Some(1)),
    }
}

/// The items of a list form, `nil` included.
fn list_items(form: &Form) -> Option<&[Form]> {
    if form.is_symbol("nil") {
        Some(&[])
    } else {
        form.as_list()
    }
}

/// Equality at macro time: atoms by value (numbers of the same kind only, as `eql`), lists by
/// structure. `nil` and `()` are the same.
fn eql(a: &Form, b: &Form) -> bool {
    if a.is_nil() && b.is_nil() {
        return true;
    }
    match (&a.kind, &b.kind) {
        (FormKind::List(x), FormKind::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| eql(p, q))
        }
        _ => a.same(b),
    }
}
