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
use super::lambda_list::{LambdaList, is_bindable};
use crate::error::{Error, Result};
use crate::form::{FloatPrecision, Form, FormKind, IntSuffix};
use crate::span::Span;
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

mod bind;
mod builtins;
mod eval;
mod loop_form;
mod numbers;
mod special;

use bind::Binder;
pub use builtins::BUILTINS;
use numbers::{Num, Rounding, float_precision};

/// How many evaluation steps one macro expansion may take (it stops macros that loop forever).
/// A step may copy a list element, so this also bounds the memory a macro holds while it runs:
/// a macro doubling its own call reached about 240 MB at 1 000 000 steps (the fuzzer, 2026-12-04);
/// the heaviest macro of the examples (attention's) takes about 13 000.
pub const MAX_STEPS: u64 = 250_000;

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
