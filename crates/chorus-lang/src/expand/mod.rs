//! The macro expander: kernel macros, symbol macros, `macrolet`, `symbol-macrolet` and the
//! built-in macros, applied to the forms the reader makes, before the checker sees them.
//!
//! # What it does
//! [`Expander::expand_unit`] takes the top-level forms of a compilation unit. It first registers
//! every `(defkernelmacro NAME LAMBDA-LIST body…)` and `(defkernel-symbol-macro NAME EXPANSION)`
//! (so the order of definitions does not matter), then returns the other top-level forms
//! (`defkernel`, `defglobal`, `defkernel-struct`) fully expanded: no macro call, symbol macro,
//! `macrolet`, `symbol-macrolet`, `let*`, `when` or `unless` is left. `macrolet` and
//! `symbol-macrolet` become `(let () body…)`, which keeps their C block. A top-level macro call
//! may expand into top-level forms and a top-level `progn` is spliced; a definition found that
//! way (rather than written at top level) applies to the forms after it.
//!
//! ```
//! use chorus_lang::{expand_str, read_str, Expander};
//!
//! let text = "(defkernelmacro square (x) (if (numberp x) (* x x) `(* ,x ,x)))
//!             (defkernel f (float ((a float))) (return (+ (square a) (square 3))))";
//! let expanded = expand_str(text, "example.lisp")?;
//! assert_eq!(expanded[0].to_string(), "(defkernel f (float ((a float))) (return (+ (* a a) 9)))");
//!
//! // The same with an expander kept across units, and a macro written in Rust.
//! let mut expander = Expander::new();
//! expander.define_rust_macro("zero", |_call, cx| Ok(chorus_lang::Form::int(0, cx.span().clone())));
//! let forms = read_str("(defkernel g (int ()) (return (zero)))", "g.lisp")?;
//! assert_eq!(expander.expand_unit(&forms)?[0].to_string(), "(defkernel g (int ()) (return 0))");
//! # Ok::<(), chorus_lang::Error>(())
//! ```
//!
//! # Code walking
//! The expander knows the binding structure of the core forms that reach the checker, so that it
//! does not expand binding names and lets a variable shadow a symbol macro of the same name in
//! its scope:
//! * `defkernel NAME-OR-(NAME :device) (RET ((arg TYPE [:restrict])…)) body…`: the parameters are
//!   variables in the body; a leading `declare` is left alone.
//! * `defglobal NAME INIT [QUALIFIERS]` (only `INIT` is expanded), `defkernel-struct` (left alone).
//! * `let ((var init)…) body…` (the inits are outside the scope of the variables),
//!   `do ((var init step)…) (test) body…`, `for (var init test step) body…`,
//!   `with-shared-memory ((var type dim…)…) body…`, `with-dynamic-shared-memory ((var type)…) body…`
//!   (each variable is in scope after its own specification).
//! * `switch expr (key statement…)…`: keys are expanded, except `t`, `otherwise` and `default`.
//! * `declare`, `quote` and `function` forms are left alone; type names are never expanded (they
//!   appear only in positions the walker skips, or as the head of a cast, which is a call).
//! * Every other list (`if`, `while`, `set`, `progn`, `return`, `break`, `continue`, `printf`,
//!   `cuda-asm`, built-in and user function calls, `aref`, accessors) has its arguments expanded.
//!
//! A form head is looked up in this order: a local `macrolet` macro, a global macro (user macros
//! may shadow core forms such as `if`, as in cl-cuda), a core form, a function call. A symbol is a
//! symbol macro if the innermost binding of its name is a `symbol-macrolet` one, or if no local
//! binding has that name and a global symbol macro does.
//!
//! # Spans
//! Macro output keeps the spans of forms copied from the call's arguments; forms a macro makes get
//! the span of the call. A symbol macro's expansion gets the span of the symbol it replaces.
//!
//! # Gensyms
//! `gensym`, `with-gensyms`, `once-only` and `make-symbol` make symbols named `#:PREFIXN`
//! (`#:g1`, `#:i2`, `#:i0_3` for the prefix `i0`), with a counter per [`Expander`]. The reader
//! rejects names starting with `#:`, so they cannot collide with a symbol of the source; the
//! printer writes them as `#:g1`. The checker's C names drop the `#:`.
//!
//! # Limits
//! Expansion stops with an error at the macro call when expansions nest more than
//! [`MAX_EXPANSION_DEPTH`] deep (a macro that expands into itself), when one unit needs more than
//! [`MAX_EXPANSIONS`] expansions, when forms nest more than [`MAX_FORM_DEPTH`] deep, or when the
//! expansions of a unit make more forms than its budget: [`MAX_EXPANSION_GROWTH`] plus
//! [`EXPANSION_GROWTH_PER_FORM`] per form of the input (a macro that copies its argument into
//! several calls of itself grows exponentially long before it reaches [`MAX_EXPANSIONS`]; the
//! error names it at its call). Expansion
//! runs on a thread with a large stack, so deep but legal input does not overflow the stack;
//! input that stays shallow and runs no macro-time Lisp is expanded on the caller's thread,
//! which is much faster for small units.

mod builtin;
mod lambda_list;
pub mod lisp;

use crate::error::{Error, Result};
use crate::form::{Form, FormKind};
use crate::span::Span;
use crate::stack;
use lisp::LispMacro;
use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How deeply macro expansions may nest (an expansion that contains a macro call whose
/// expansion contains a macro call, …, or a macro expanding into itself).
pub const MAX_EXPANSION_DEPTH: usize = 1_000;

/// How many macro expansions one top-level form (or one call of [`Expander::expand_all`]) may
/// take.
pub const MAX_EXPANSIONS: u64 = 100_000;

/// How deeply the forms the expander walks may nest.
pub const MAX_FORM_DEPTH: usize = 2_000;

/// How many forms (atoms and lists) the macro expansions of one unit may add, beyond
/// [`EXPANSION_GROWTH_PER_FORM`] per form of the input: each expansion adds the forms of its
/// output less those of its call. About 100 MB of forms: a self-copying macro stops there,
/// where [`MAX_EXPANSIONS`] alone let it reach gigabytes.
pub const MAX_EXPANSION_GROWTH: u64 = 1_000_000;

/// How many forms the macro expansions of a unit may add per form of its input, besides
/// [`MAX_EXPANSION_GROWTH`] (so a big generated file of macro calls still expands).
pub const EXPANSION_GROWTH_PER_FORM: u64 = 4;

/// A macro written in Rust: it receives the whole call form and a context (its span, `gensym`)
/// and returns the expansion.
pub type RustMacro = dyn Fn(&Form, &MacroContext) -> Result<Form> + Send + Sync;

/// A built-in macro's expansion function.
type BuiltinMacro = fn(&Form, &MacroContext) -> Result<Form>;

/// What a macro call is expanded with.
#[derive(Clone)]
enum Macro {
    Lisp(Arc<LispMacro>),
    Rust(Arc<RustMacro>),
    /// `let*`, `when` and `unless`: they do not recurse, so they may run on a small stack.
    Builtin(BuiltinMacro),
}

/// What a macro sees besides its call form: its name, the call's span (for the forms it makes)
/// and the expander's gensym counter.
pub struct MacroContext<'a> {
    name: &'a str,
    call: &'a Form,
    gensyms: &'a AtomicU64,
}

impl MacroContext<'_> {
    /// The name of the macro being expanded.
    pub fn name(&self) -> &str {
        self.name
    }

    /// The whole call form.
    pub fn call(&self) -> &Form {
        self.call
    }

    /// The span of the call: give it to the forms the macro makes.
    pub fn span(&self) -> &Span {
        &self.call.span
    }

    /// A fresh symbol `#:PREFIXN` with the call's span: the prefix folded to lower case, then the
    /// expander's counter. No other symbol of the unit has its name: the reader makes no `#:`
    /// names, an empty prefix is `g`, and a prefix that ends in a digit gets a `_` (`#:i0_1`), so the counter is always
    /// the whole trailing number and no two gensyms share a name.
    pub fn gensym(&self, prefix: &str) -> Form {
        let n = self.gensyms.fetch_add(1, Ordering::Relaxed) + 1;
        let mut prefix: String = prefix.chars().flat_map(char::to_lowercase).collect();
        if prefix.is_empty() {
            prefix.push('g');
        } else if prefix.ends_with(|c: char| c.is_ascii_digit()) {
            prefix.push('_');
        }
        Form::symbol(
            format!("{}{prefix}{n}", crate::reader::GENSYM_PREFIX),
            self.span().clone(),
        )
    }
}

/// The global macro definitions of a compilation unit, and the expansion of its forms.
///
/// An expander starts with the built-in macros `let*`, `when` and `unless`. Definitions persist
/// across calls, so one expander can serve several units that share macros.
pub struct Expander {
    macros: HashMap<String, Macro>,
    symbol_macros: HashMap<String, Form>,
    gensyms: AtomicU64,
    /// Forms the expansions of the current unit added (see [`MAX_EXPANSION_GROWTH`]).
    grown: AtomicU64,
    /// How many forms they may add.
    growth_budget: AtomicU64,
}

impl Default for Expander {
    fn default() -> Self {
        Expander::new()
    }
}

impl fmt::Debug for Expander {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut macros: Vec<&str> = self.macros.keys().map(String::as_str).collect();
        macros.sort_unstable();
        let mut symbol_macros: Vec<&str> = self.symbol_macros.keys().map(String::as_str).collect();
        symbol_macros.sort_unstable();
        f.debug_struct("Expander")
            .field("macros", &macros)
            .field("symbol_macros", &symbol_macros)
            .finish()
    }
}

/// Reads `text` and expands it as one unit with a fresh [`Expander`].
pub fn expand_str(text: &str, file: &str) -> Result<Vec<Form>> {
    let forms = crate::reader::read_str(text, file)?;
    Expander::new().expand_unit(&forms)
}

impl Expander {
    /// An expander with the built-in macros `let*`, `when`, `unless` and the swizzles
    /// `swizzle-128b`, `swizzle-64b`, `swizzle-32b`.
    pub fn new() -> Expander {
        let mut expander = Expander {
            macros: HashMap::new(),
            symbol_macros: HashMap::new(),
            gensyms: AtomicU64::new(0),
            grown: AtomicU64::new(0),
            growth_budget: AtomicU64::new(MAX_EXPANSION_GROWTH),
        };
        let builtins: [(&str, BuiltinMacro); 6] = [
            ("let*", builtin::let_star),
            ("when", builtin::when),
            ("unless", builtin::unless),
            // Shared-memory swizzles of the TMA and wgmma (Hopper), plain arithmetic.
            ("swizzle-128b", builtin::swizzle),
            ("swizzle-64b", builtin::swizzle),
            ("swizzle-32b", builtin::swizzle),
        ];
        for (name, expand) in builtins {
            expander
                .macros
                .insert(name.to_string(), Macro::Builtin(expand));
        }
        expander
    }

    /// Defines (or redefines) the global macro `name` as a Rust function.
    pub fn define_rust_macro(
        &mut self,
        name: &str,
        expand: impl Fn(&Form, &MacroContext) -> Result<Form> + Send + Sync + 'static,
    ) {
        self.macros
            .insert(name.to_string(), Macro::Rust(Arc::new(expand)));
    }

    /// Defines (or redefines) a global macro from a `(defkernelmacro NAME LAMBDA-LIST body…)`
    /// form; returns its name.
    pub fn define_macro(&mut self, form: &Form) -> Result<String> {
        let Some(("defkernelmacro", [name, lambda_list, body @ ..])) = form.as_call() else {
            return Err(Error::new(
                &form.span,
                format!("expected (defkernelmacro name lambda-list body…), found `{form}`"),
            ));
        };
        let name = macro_name(name)?;
        let lisp_macro = LispMacro::new(&name, lambda_list, body)?;
        self.macros
            .insert(name.clone(), Macro::Lisp(Arc::new(lisp_macro)));
        Ok(name)
    }

    /// Defines (or redefines) a global symbol macro from a
    /// `(defkernel-symbol-macro NAME EXPANSION)` form; returns its name.
    pub fn define_symbol_macro(&mut self, form: &Form) -> Result<String> {
        let Some(("defkernel-symbol-macro", [name, expansion])) = form.as_call() else {
            return Err(Error::new(
                &form.span,
                format!("expected (defkernel-symbol-macro name expansion), found `{form}`"),
            ));
        };
        let name = symbol_macro_name(name)?;
        self.symbol_macros.insert(name.clone(), expansion.clone());
        Ok(name)
    }

    /// Whether `name` is a global macro (built-in, Rust or `defkernelmacro`).
    pub fn is_macro(&self, name: &str) -> bool {
        self.macros.contains_key(name)
    }

    /// Whether `name` is a global symbol macro.
    pub fn is_symbol_macro(&self, name: &str) -> bool {
        self.symbol_macros.contains_key(name)
    }

    /// A fresh gensym (see [`MacroContext::gensym`]) with `span`.
    pub fn gensym(&self, prefix: &str, span: &Span) -> Form {
        let call = Form::symbol("gensym", span.clone());
        MacroContext {
            name: "gensym",
            call: &call,
            gensyms: &self.gensyms,
        }
        .gensym(prefix)
    }

    /// Expands `form` once if it is a global macro call or a global symbol macro, as Common Lisp's
    /// `macroexpand-1`: the expansion and `true`, or the form itself and `false`.
    pub fn expand_macro_1(&self, form: &Form) -> Result<(Form, bool)> {
        self.with_stack(|| {
            let mut walker = Walker::new(self);
            Ok(match walker.expand_1(form)? {
                Some(expansion) => (expansion, true),
                None => (form.clone(), false),
            })
        })
    }

    /// Expands `form` until it is no longer a macro call or symbol macro, as `macroexpand`;
    /// subforms are not expanded. Returns whether any expansion happened.
    pub fn expand_macro(&self, form: &Form) -> Result<(Form, bool)> {
        self.with_stack(|| {
            let mut walker = Walker::new(self);
            let mut current = form.clone();
            let mut in_place = 0;
            while let Some(next) = walker.expand_1(&current)? {
                walker.count_expansion(&current, in_place)?;
                current = next;
                in_place += 1;
            }
            let expanded = in_place > 0;
            Ok((current, expanded))
        })
    }

    /// Expands `form` (a statement or an expression) completely, with the global definitions and
    /// no local bindings.
    pub fn expand_all(&self, form: &Form) -> Result<Form> {
        self.with_stack(|| Walker::new(self).walk(form))
    }

    /// Registers the unit's macro and symbol-macro definitions, then returns its other top-level
    /// forms fully expanded (see the module documentation).
    pub fn expand_unit(&mut self, forms: &[Form]) -> Result<Vec<Form>> {
        // Macro definitions would run macro-time Lisp, which needs the big stack: no attempt on
        // the caller's thread then. Otherwise only symbol macros and the gensym counter can
        // change before an attempt is abandoned; they are restored before the second run.
        let may_run_lisp = self
            .macros
            .values()
            .any(|m| !matches!(m, Macro::Builtin(_)))
            || forms
                .iter()
                .any(|form| mentions_symbol(form, &["defkernelmacro", "macrolet"]));
        if !may_run_lisp {
            let symbol_macros = self.symbol_macros.clone();
            let gensyms = self.gensyms.load(Ordering::Relaxed);
            let grown = self.grown.load(Ordering::Relaxed);
            if let Some(result) = stack::try_on_small_stack(|| self.expand_unit_here(forms)) {
                return result;
            }
            self.symbol_macros = symbol_macros;
            self.gensyms.store(gensyms, Ordering::Relaxed);
            self.grown.store(grown, Ordering::Relaxed);
        }
        expansion_on_big_stack(|| self.expand_unit_here(forms))
    }

    /// [`Expander::expand_unit`] on the current thread.
    pub(crate) fn expand_unit_here(&mut self, forms: &[Form]) -> Result<Vec<Form>> {
        self.start_unit(forms)?;
        // The other forms in order, as a work list: a top-level macro call is replaced by its
        // expansion, a top-level `progn` by its forms, and a definition a macro produced
        // takes effect from where it appears. Each form carries how many expansions made it.
        // Borrowed, not copied: a unit's forms, a copy and their expansion would coexist.
        let pending = forms
            .iter()
            .filter(|form| !is_definition(form))
            .map(|form| (Cow::Borrowed(form), 0))
            .collect();
        self.expand_pending(pending)
    }

    /// [`Expander::expand_unit`], dropping each form once it is expanded: the forms read and
    /// their expansion then take little more memory together than the larger of them. On a
    /// big stack (see [`crate::stack`]), unless the unit is small (under 1 000 forms).
    pub fn expand_unit_owned(&mut self, forms: Vec<Form>) -> Result<Vec<Form>> {
        if forms.len() < 64 && forms.iter().map(count_forms).sum::<u64>() < SMALL_UNIT_FORMS {
            return self.expand_unit(&forms);
        }
        let mut forms = Some(forms);
        let attempt = stack::on_big_stack("chorus-expand", || {
            let forms = forms.take().unwrap_or_default();
            self.start_unit(&forms)?;
            let pending = forms
                .into_iter()
                .filter(|form| !is_definition(form))
                .map(|form| (Cow::Owned(form), 0))
                .collect();
            self.expand_pending(pending)
        });
        match attempt {
            Ok(result) => result,
            // No thread to be had (the closure did not run): try on this one.
            Err(_) => self.expand_unit(&forms.unwrap_or_default()),
        }
    }

    /// Starts a unit: its growth budget, and its macro and symbol-macro definitions.
    fn start_unit(&mut self, forms: &[Form]) -> Result<()> {
        let input: u64 = forms.iter().map(count_forms).sum();
        self.grown.store(0, Ordering::Relaxed);
        self.growth_budget.store(
            MAX_EXPANSION_GROWTH.saturating_add(input.saturating_mul(EXPANSION_GROWTH_PER_FORM)),
            Ordering::Relaxed,
        );
        let mut defined: HashMap<String, Span> = HashMap::new();
        for form in forms {
            let what = match form.as_call() {
                Some(("defkernelmacro", _)) => {
                    format!("the macro `{}`", self.define_macro(form)?)
                }
                Some(("defkernel-symbol-macro", _)) => {
                    format!("the symbol macro `{}`", self.define_symbol_macro(form)?)
                }
                _ => continue,
            };
            if let Some(previous) = defined.insert(what.clone(), form.span.clone()) {
                return Err(Error::new(
                    &form.span,
                    format!("{what} is defined twice in this unit (first at {previous})"),
                ));
            }
        }
        Ok(())
    }

    /// Expands the work list of a unit's top-level forms (see [`Expander::expand_unit_here`]).
    fn expand_pending(
        &mut self,
        mut pending: VecDeque<(Cow<'_, Form>, usize)>,
    ) -> Result<Vec<Form>> {
        let mut out = Vec::new();
        let mut expansions = 0;
        while let Some((form, depth)) = pending.pop_front() {
            match form.as_call() {
                Some(("defkernelmacro", _)) => drop(self.define_macro(&form)?),
                Some(("defkernel-symbol-macro", _)) => drop(self.define_symbol_macro(&form)?),
                Some(("progn", items)) => {
                    for item in items.iter().rev() {
                        pending.push_front((Cow::Owned(item.clone()), depth));
                    }
                }
                Some(("defkernel" | "defglobal" | "defkernel-struct", _)) => {
                    out.push(Walker::new(self).walk_definition(form)?);
                }
                _ => {
                    let mut walker = Walker::new(self);
                    walker.expansions = expansions;
                    let Some(expansion) = walker.expand_1(&form)? else {
                        return Err(Error::new(
                            &form.span,
                            format!(
                                "expected defkernel, defglobal, defkernel-struct, defkernelmacro \
                                 or defkernel-symbol-macro at top level, found `{form}`"
                            ),
                        ));
                    };
                    walker.count_expansion(&form, depth)?;
                    expansions = walker.expansions;
                    pending.push_front((Cow::Owned(expansion), depth + 1));
                }
            }
        }
        Ok(out)
    }

    /// Runs `f`, which must not change the expander except for its gensym counter, on the
    /// caller's thread if it stays shallow, else on a big stack (see [`crate::stack`]).
    fn with_stack<T: Send>(&self, f: impl Fn() -> Result<T> + Send + Sync) -> Result<T> {
        let gensyms = self.gensyms.load(Ordering::Relaxed);
        let grown = self.grown.load(Ordering::Relaxed);
        if let Some(result) = stack::try_on_small_stack(&f) {
            return result;
        }
        self.gensyms.store(gensyms, Ordering::Relaxed);
        self.grown.store(grown, Ordering::Relaxed);
        expansion_on_big_stack(f)
    }

    fn call(&self, name: &str, definition: &Macro, form: &Form) -> Result<Form> {
        let cx = MacroContext {
            name,
            call: form,
            gensyms: &self.gensyms,
        };
        let expansion = match definition {
            Macro::Lisp(m) => {
                stack::leave_small_stack();
                m.expand(form, &cx)?
            }
            Macro::Rust(f) => {
                stack::leave_small_stack();
                f(form, &cx)?
            }
            Macro::Builtin(f) => f(form, &cx)?,
        };
        // Checked here, without recursion, so that no later pass recurses through a form a
        // macro nested absurdly deep.
        let Some(made) = count_forms_within(&expansion, MAX_FORM_DEPTH) else {
            return Err(Error::new(
                &form.span,
                format!(
                    "the expansion of the macro `{name}` nests more than {MAX_FORM_DEPTH} deep"
                ),
            ));
        };
        // The forms this expansion added count against the unit's budget, so that a macro
        // that copies its argument into several calls of itself stops before it fills memory.
        let added = made.saturating_sub(count_forms(form));
        let grown = self.grown.fetch_add(added, Ordering::Relaxed) + added;
        let budget = self.growth_budget.load(Ordering::Relaxed);
        if grown > budget {
            return Err(Error::new(
                &form.span,
                format!(
                    "macro expansions made more than {budget} forms, this one of the macro \
                     `{name}` {made} forms from a call of {}; does `{name}` copy its arguments \
                     into several calls of itself?",
                    count_forms(form)
                ),
            ));
        }
        Ok(expansion)
    }
}

/// Runs `f` on a big-stack thread (see [`crate::stack`]).
fn expansion_on_big_stack<T: Send>(f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    stack::on_big_stack("chorus-expand", f).unwrap_or_else(|e| {
        Err(Error::new(
            &Span::generated(),
            format!("the macro expander could not start its thread: {e}"),
        ))
    })
}

/// Whether any symbol in `form` is one of `names` (an iterative walk).
fn mentions_symbol(form: &Form, names: &[&str]) -> bool {
    let mut pending = vec![form];
    while let Some(form) = pending.pop() {
        if let Some(items) = form.as_list() {
            pending.extend(items);
        } else if form.as_symbol().is_some_and(|name| names.contains(&name)) {
            return true;
        }
    }
    false
}

/// Whether `form` is a macro or symbol-macro definition.
fn is_definition(form: &Form) -> bool {
    matches!(
        form.as_call(),
        Some(("defkernelmacro" | "defkernel-symbol-macro", _))
    )
}

/// How many forms (atoms and lists) `form` holds, itself included, if lists nest no more than
/// `limit` deep in it (an iterative walk); `None` if they nest deeper.
fn count_forms_within(form: &Form, limit: usize) -> Option<u64> {
    let mut pending = vec![(form, 1usize)];
    let mut count = 0;
    while let Some((form, depth)) = pending.pop() {
        count += 1;
        if let Some(items) = form.as_list() {
            if depth > limit {
                return None;
            }
            pending.extend(items.iter().map(|item| (item, depth + 1)));
        }
    }
    Some(count)
}

/// How many forms (atoms and lists) `form` holds, itself included (an iterative walk).
fn count_forms(form: &Form) -> u64 {
    count_forms_within(form, usize::MAX).unwrap_or(u64::MAX)
}

fn macro_name(form: &Form) -> Result<String> {
    match form.as_symbol() {
        Some(name) if !matches!(name, "t" | "nil") && !name.starts_with(':') => {
            Ok(name.to_string())
        }
        _ => Err(Error::new(
            &form.span,
            format!("expected a macro name, found `{form}`"),
        )),
    }
}

fn symbol_macro_name(form: &Form) -> Result<String> {
    match form.as_symbol() {
        Some(name) if lambda_list::is_bindable(name) => Ok(name.to_string()),
        _ => Err(Error::new(
            &form.span,
            format!("expected a symbol-macro name (not t, nil or a keyword), found `{form}`"),
        )),
    }
}

/// A variable binding in scope: a variable (`None`) or a `symbol-macrolet` symbol macro.
type VarBinding = (String, Option<Form>);

/// One walk over forms: the local scopes and the limits.
struct Walker<'e> {
    expander: &'e Expander,
    vars: Vec<VarBinding>,
    macros: Vec<(String, Macro)>,
    expansions: u64,
    /// Macro expansions whose output is being walked, innermost last.
    active: usize,
    depth: usize,
}

impl<'e> Walker<'e> {
    fn new(expander: &'e Expander) -> Walker<'e> {
        Walker {
            expander,
            vars: Vec::new(),
            macros: Vec::new(),
            expansions: 0,
            active: 0,
            depth: 0,
        }
    }

    fn lookup_macro(&self, name: &str) -> Option<Macro> {
        if let Some((_, m)) = self.macros.iter().rev().find(|(n, _)| n == name) {
            return Some(m.clone());
        }
        self.expander.macros.get(name).cloned()
    }

    fn lookup_symbol_macro(&self, name: &str) -> Option<&Form> {
        match self.vars.iter().rev().find(|(n, _)| n == name) {
            Some((_, binding)) => binding.as_ref(),
            None => self.expander.symbol_macros.get(name),
        }
    }

    /// One expansion step of `form` in the current scope, if it is a macro call or symbol macro.
    fn expand_1(&mut self, form: &Form) -> Result<Option<Form>> {
        if let Some(name) = form.as_symbol() {
            return Ok(self
                .lookup_symbol_macro(name)
                .map(|e| lisp::respan(e, &form.span)));
        }
        let Some((name, _)) = form.as_call() else {
            return Ok(None);
        };
        match self.lookup_macro(name) {
            Some(definition) => self.expander.call(name, &definition, form).map(Some),
            None => Ok(None),
        }
    }

    /// Counts one expansion of `form`, `in_place` expansions deep at its position.
    fn count_expansion(&mut self, form: &Form, in_place: usize) -> Result<()> {
        self.expansions += 1;
        if self.expansions > MAX_EXPANSIONS {
            return Err(Error::new(
                &form.span,
                format!(
                    "more than {MAX_EXPANSIONS} macro expansions; is a macro expanding forever?"
                ),
            ));
        }
        if self.active + in_place >= MAX_EXPANSION_DEPTH {
            let what = match form.as_call() {
                Some((name, _)) => format!("the macro `{name}`"),
                None => format!("the symbol macro `{form}`"),
            };
            return Err(Error::new(
                &form.span,
                format!(
                    "macro expansion nests more than {MAX_EXPANSION_DEPTH} deep at {what}; does \
                     it expand into itself?"
                ),
            ));
        }
        Ok(())
    }

    /// Expands a `defkernel`, `defglobal` or `defkernel-struct` form (an owned `defkernel` is
    /// consumed statement by statement: see [`Walker::walk_owned`]).
    fn walk_definition(&mut self, form: Cow<'_, Form>) -> Result<Form> {
        let form = match form {
            Cow::Owned(form) if form.as_call().is_some_and(|(head, _)| head == "defkernel") => {
                return self.walk_defkernel_owned(form);
            }
            Cow::Owned(ref form) => form,
            Cow::Borrowed(form) => form,
        };
        match form.as_call() {
            Some(("defkernel", _)) => self.walk_defkernel(form),
            Some(("defglobal", _)) => {
                // (defglobal name init qualifiers…): only the initializer is code.
                let items = form.as_list().unwrap_or_default();
                let walked = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        if i == 2 {
                            self.walk(item)
                        } else {
                            Ok(item.clone())
                        }
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Form::list(walked, form.span.clone()))
            }
            _ => Ok(form.clone()),
        }
    }

    fn walk_defkernel(&mut self, form: &Form) -> Result<Form> {
        let Some([head, name, signature, body @ ..]) = form.as_list() else {
            // Malformed: the checker reports it; there is no body to expand.
            return Ok(form.clone());
        };
        let mark = self.vars.len();
        self.vars.extend(parameter_names(signature));
        let body = self.walk_all(body);
        self.vars.truncate(mark);
        let mut out = vec![head.clone(), name.clone(), signature.clone()];
        out.extend(body?);
        Ok(Form::list(out, form.span.clone()))
    }

    /// [`Walker::walk_defkernel`], consuming the form: each statement is dropped once expanded.
    fn walk_defkernel_owned(&mut self, form: Form) -> Result<Form> {
        let Form { kind, span } = form;
        let mut items = match kind {
            FormKind::List(items) if items.len() >= 3 => items,
            // Malformed: the checker reports it; there is no body to expand.
            kind => return Ok(Form { kind, span }),
        };
        let body = items.split_off(3);
        let mark = self.vars.len();
        self.vars.extend(parameter_names(&items[2]));
        items.reserve_exact(body.len());
        let walked = self.walk_owned_into(body, &mut items);
        self.vars.truncate(mark);
        walked?;
        Ok(Form::list(items, span))
    }

    fn walk_all(&mut self, forms: &[Form]) -> Result<Vec<Form>> {
        forms.iter().map(|f| self.walk(f)).collect()
    }

    /// Expands each of `forms` in turn, dropping it once expanded, onto `out`.
    fn walk_owned_into(&mut self, forms: Vec<Form>, out: &mut Vec<Form>) -> Result<()> {
        for form in forms {
            out.push(self.walk_owned(form)?);
        }
        Ok(())
    }

    /// Expands `form` completely in the current scope.
    fn walk(&mut self, form: &Form) -> Result<Form> {
        self.walk_cow(Cow::Borrowed(form))
    }

    /// [`Walker::walk`], consuming `form`: a `let` or a call is taken apart and its parts
    /// expanded one by one, each dropped once expanded, so that a huge body and its expansion
    /// do not coexist (memory: each is many times the size of the text).
    fn walk_owned(&mut self, form: Form) -> Result<Form> {
        self.walk_cow(Cow::Owned(form))
    }

    fn walk_cow(&mut self, form: Cow<'_, Form>) -> Result<Form> {
        if self.depth >= MAX_FORM_DEPTH {
            return Err(Error::new(
                &form.span,
                format!("forms nest more than {MAX_FORM_DEPTH} deep here"),
            ));
        }
        if self.depth >= stack::SMALL_STACK_DEPTH {
            stack::leave_small_stack();
        }
        self.depth += 1;
        let result = self.walk_expanding(form);
        self.depth -= 1;
        result
    }

    fn walk_expanding(&mut self, form: Cow<'_, Form>) -> Result<Form> {
        let mut in_place = 0;
        let mut current = form;
        while let Some(next) = self.expand_1(&current)? {
            self.count_expansion(&current, in_place)?;
            in_place += 1;
            // A macro's output is the walker's own: walked by value.
            current = Cow::Owned(next);
        }
        self.active += in_place;
        let result = match current {
            Cow::Borrowed(form) => self.walk_core(form),
            Cow::Owned(form) => self.walk_core_owned(form),
        };
        self.active -= in_place;
        result
    }

    /// [`Walker::walk_core`], consuming `form`: a `let` and a call (the forms a long body is
    /// made of) by value, the other core forms as borrowed.
    fn walk_core_owned(&mut self, form: Form) -> Result<Form> {
        match form.as_call() {
            Some(("let", _)) => self.walk_let_owned(form),
            Some((name, _)) if !CORE_FORMS.contains(&name) => {
                let Form { kind, span } = form;
                let FormKind::List(mut items) = kind else {
                    return self.walk_core(&Form { kind, span });
                };
                let args = items.split_off(1);
                items.reserve_exact(args.len());
                self.walk_owned_into(args, &mut items)?;
                Ok(Form::list(items, span))
            }
            _ => self.walk_core(&form),
        }
    }

    /// Walks a form that is not a macro call: a core form, a call, or an atom.
    fn walk_core(&mut self, form: &Form) -> Result<Form> {
        let Some(items) = form.as_list() else {
            return Ok(form.clone());
        };
        let Some((head, args)) = items.split_first() else {
            return Ok(form.clone());
        };
        let rebuild = |args: Vec<Form>| {
            let mut all = Vec::with_capacity(args.len() + 1);
            all.push(head.clone());
            all.extend(args);
            Form::list(all, form.span.clone())
        };
        let Some(name) = head.as_symbol() else {
            return Ok(Form::list(self.walk_all(items)?, form.span.clone()));
        };
        // Every name given its own arm here is in `CORE_FORMS`.
        match name {
            "declare" | "quote" | "function" => Ok(form.clone()),
            "unquote" | "unquote-splicing" => Err(Error::new(
                &form.span,
                "a comma (`,` or `,@`) is only meaningful inside a backquote in macro code",
            )),
            "quasiquote" => Err(Error::new(
                &form.span,
                "a backquote is only meaningful in macro code (defkernelmacro, macrolet)",
            )),
            "let" => self.walk_let(form, head, args),
            "do" => self.walk_do(args).map(rebuild),
            "for" => self.walk_for(args).map(rebuild),
            "with-shared-memory" | "with-dynamic-shared-memory" => {
                self.walk_shared(args).map(rebuild)
            }
            "switch" => self.walk_switch(args).map(rebuild),
            "macrolet" => self.walk_macrolet(form, head, args),
            "symbol-macrolet" => self.walk_symbol_macrolet(form, head, args),
            _ => self.walk_all(args).map(rebuild),
        }
    }

    /// Walks `body` with `vars` bound as variables.
    fn walk_scoped(&mut self, vars: Vec<VarBinding>, body: &[Form]) -> Result<Vec<Form>> {
        let mark = self.vars.len();
        self.vars.extend(vars);
        let result = self.walk_all(body);
        self.vars.truncate(mark);
        result
    }

    fn walk_let(&mut self, form: &Form, head: &Form, args: &[Form]) -> Result<Form> {
        let Some((bindings, body)) = args.split_first() else {
            return Ok(form.clone());
        };
        let Some((bindings, vars)) = self.walk_bindings(bindings)? else {
            // `(let nil …)` or malformed: no variables; the checker judges the rest.
            let body = self.walk_all(body)?;
            return Ok(list_with(
                vec![head.clone(), bindings.clone()],
                body,
                &form.span,
            ));
        };
        let body = self.walk_scoped(vars, body)?;
        Ok(list_with(vec![head.clone(), bindings], body, &form.span))
    }

    /// [`Walker::walk_let`], consuming `form`: each statement of the body is dropped once
    /// expanded.
    fn walk_let_owned(&mut self, form: Form) -> Result<Form> {
        let Form { kind, span } = form;
        let mut items = match kind {
            FormKind::List(items) if items.len() >= 2 => items,
            kind => return Ok(Form { kind, span }),
        };
        let body = items.split_off(2);
        let mut out = Vec::with_capacity(2 + body.len());
        let Some((bindings, vars)) = self.walk_bindings(&items[1])? else {
            // `(let nil …)` or malformed: no variables; the checker judges the rest.
            out.append(&mut items);
            self.walk_owned_into(body, &mut out)?;
            return Ok(Form::list(out, span));
        };
        items.truncate(1);
        out.append(&mut items);
        out.push(bindings);
        let mark = self.vars.len();
        self.vars.extend(vars);
        let walked = self.walk_owned_into(body, &mut out);
        self.vars.truncate(mark);
        walked?;
        Ok(Form::list(out, span))
    }

    /// A `let`'s binding list with its initial values expanded, and the variables it binds;
    /// `None` when it is not a list (`nil`, or malformed).
    fn walk_bindings(&mut self, bindings: &Form) -> Result<Option<(Form, Vec<VarBinding>)>> {
        let Some(binding_list) = bindings.as_list() else {
            return Ok(None);
        };
        let mut new_bindings = Vec::with_capacity(binding_list.len());
        let mut vars = Vec::new();
        for binding in binding_list {
            match binding.as_list() {
                Some([var, init]) => {
                    new_bindings.push(Form::list(
                        vec![var.clone(), self.walk(init)?],
                        binding.span.clone(),
                    ));
                    vars.extend(var.as_symbol().map(|v| (v.to_string(), None)));
                }
                Some([var]) => {
                    new_bindings.push(binding.clone());
                    vars.extend(var.as_symbol().map(|v| (v.to_string(), None)));
                }
                _ => {
                    new_bindings.push(binding.clone());
                    vars.extend(binding.as_symbol().map(|v| (v.to_string(), None)));
                }
            }
        }
        Ok(Some((
            Form::list(new_bindings, bindings.span.clone()),
            vars,
        )))
    }

    fn walk_do(&mut self, args: &[Form]) -> Result<Vec<Form>> {
        let Some((specs_form, rest)) = args.split_first() else {
            return Ok(Vec::new());
        };
        let Some(specs) = specs_form.as_list() else {
            return self.walk_all(args);
        };
        // The inits are evaluated outside the loop's scope; steps, test and body inside it.
        let mut inits = Vec::with_capacity(specs.len());
        let mut vars = Vec::new();
        for spec in specs {
            let (var, init) = match spec.as_list() {
                Some([var, init, ..]) => (var, Some(self.walk(init)?)),
                Some([var]) => (var, None),
                _ => (spec, None),
            };
            vars.extend(var.as_symbol().map(|v| (v.to_string(), None)));
            inits.push(init);
        }
        let mark = self.vars.len();
        self.vars.extend(vars);
        let result = (|| {
            let mut new_specs = Vec::with_capacity(specs.len());
            for (spec, init) in specs.iter().zip(inits) {
                match (spec.as_list(), init) {
                    (Some([var, _, steps @ ..]), Some(init)) => {
                        let steps = self.walk_all(steps)?;
                        new_specs.push(list_with(vec![var.clone(), init], steps, &spec.span));
                    }
                    _ => new_specs.push(spec.clone()),
                }
            }
            let mut out = vec![Form::list(new_specs, specs_form.span.clone())];
            let Some((end, body)) = rest.split_first() else {
                return Ok(out);
            };
            // The end clause `(test result…)` is a list of expressions, not a call.
            out.push(match end.as_list() {
                Some(items) => Form::list(self.walk_all(items)?, end.span.clone()),
                None => self.walk(end)?,
            });
            out.extend(self.walk_all(body)?);
            Ok(out)
        })();
        self.vars.truncate(mark);
        result
    }

    fn walk_for(&mut self, args: &[Form]) -> Result<Vec<Form>> {
        let Some((spec, body)) = args.split_first() else {
            return Ok(Vec::new());
        };
        let Some([var, init, rest @ ..]) = spec.as_list() else {
            return self.walk_all(args);
        };
        let init = self.walk(init)?;
        let vars: Vec<VarBinding> = var
            .as_symbol()
            .map(|v| (v.to_string(), None))
            .into_iter()
            .collect();
        let mark = self.vars.len();
        self.vars.extend(vars);
        let result = (|| {
            let rest = self.walk_all(rest)?;
            let mut out = vec![list_with(vec![var.clone(), init], rest, &spec.span)];
            out.extend(self.walk_all(body)?);
            Ok(out)
        })();
        self.vars.truncate(mark);
        result
    }

    fn walk_shared(&mut self, args: &[Form]) -> Result<Vec<Form>> {
        let Some((Some(specs), body)) = args
            .split_first()
            .map(|(s, b)| (s.as_list().map(|l| (s, l)), b))
        else {
            return self.walk_all(args);
        };
        let (specs_form, specs) = specs;
        let mark = self.vars.len();
        let result = (|| {
            let mut new_specs = Vec::with_capacity(specs.len());
            for spec in specs {
                match spec.as_list() {
                    Some([var, ty, dims @ ..]) => {
                        let dims = self.walk_all(dims)?;
                        new_specs.push(list_with(vec![var.clone(), ty.clone()], dims, &spec.span));
                        self.vars
                            .extend(var.as_symbol().map(|v| (v.to_string(), None)));
                    }
                    _ => new_specs.push(spec.clone()),
                }
            }
            let mut out = vec![Form::list(new_specs, specs_form.span.clone())];
            out.extend(self.walk_all(body)?);
            Ok(out)
        })();
        self.vars.truncate(mark);
        result
    }

    fn walk_switch(&mut self, args: &[Form]) -> Result<Vec<Form>> {
        let Some((subject, clauses)) = args.split_first() else {
            return Ok(Vec::new());
        };
        let mut out = vec![self.walk(subject)?];
        for clause in clauses {
            match clause.as_list() {
                Some([key, body @ ..]) => {
                    let is_default = ["t", "otherwise", "default"]
                        .iter()
                        .any(|d| key.is_symbol(d));
                    let key = if is_default {
                        key.clone()
                    } else {
                        self.walk(key)?
                    };
                    let body = self.walk_all(body)?;
                    out.push(list_with(vec![key], body, &clause.span));
                }
                _ => out.push(clause.clone()),
            }
        }
        Ok(out)
    }

    fn walk_macrolet(&mut self, form: &Form, head: &Form, args: &[Form]) -> Result<Form> {
        let Some((definitions, body)) = args.split_first() else {
            return Err(Error::new(
                &form.span,
                "expected (macrolet ((name lambda-list body…)…) statement…)",
            ));
        };
        let Some(definitions_list) = definitions
            .as_list()
            .or(definitions.is_nil().then_some(&[][..]))
        else {
            return Err(Error::new(
                &definitions.span,
                format!(
                    "expected a list of macro definitions (name lambda-list body…), found `{definitions}`"
                ),
            ));
        };
        let mut local = Vec::with_capacity(definitions_list.len());
        for definition in definitions_list {
            let Some([name, lambda_list, macro_body @ ..]) = definition.as_list() else {
                return Err(Error::new(
                    &definition.span,
                    format!(
                        "expected a macro definition (name lambda-list body…), found `{definition}`"
                    ),
                ));
            };
            let name = macro_name(name)?;
            let lisp_macro = LispMacro::new(&name, lambda_list, macro_body)?;
            local.push((name, Macro::Lisp(Arc::new(lisp_macro))));
        }
        let mark = self.macros.len();
        self.macros.extend(local);
        let body = self.walk_all(body);
        self.macros.truncate(mark);
        Ok(empty_let(form, head, definitions, body?))
    }

    fn walk_symbol_macrolet(&mut self, form: &Form, head: &Form, args: &[Form]) -> Result<Form> {
        let Some((definitions, body)) = args.split_first() else {
            return Err(Error::new(
                &form.span,
                "expected (symbol-macrolet ((symbol expansion)…) statement…)",
            ));
        };
        let Some(definitions_list) = definitions
            .as_list()
            .or(definitions.is_nil().then_some(&[][..]))
        else {
            return Err(Error::new(
                &definitions.span,
                format!("expected a list of (symbol expansion), found `{definitions}`"),
            ));
        };
        let mut local = Vec::with_capacity(definitions_list.len());
        for definition in definitions_list {
            let Some([name, expansion]) = definition.as_list() else {
                return Err(Error::new(
                    &definition.span,
                    format!("expected (symbol expansion), found `{definition}`"),
                ));
            };
            local.push((symbol_macro_name(name)?, Some(expansion.clone())));
        }
        let body = self.walk_scoped(local, body)?;
        Ok(empty_let(form, head, definitions, body))
    }
}

/// Below this many forms, [`Expander::expand_unit_owned`] expands a unit as borrowed on the
/// caller's thread (its forms and their expansion then coexist: about 40 bytes per byte of
/// text, a few hundred KB at most) rather than by value on a thread of its own. The thread
/// costs about what expanding 1 000 forms does: 4 KiB of small kernels (1 400 forms) took
/// 0.4 ms as borrowed and 0.7-1.2 ms by value (release build, a loaded 2-core machine),
/// against 20-30 ms for NVRTC to compile them.
const SMALL_UNIT_FORMS: u64 = 1_000;

/// The heads [`Walker::walk_core`] gives an arm of their own; any other head is a call, whose
/// arguments are all code.
const CORE_FORMS: &[&str] = &[
    "declare",
    "quote",
    "function",
    "unquote",
    "unquote-splicing",
    "quasiquote",
    "let",
    "do",
    "for",
    "with-shared-memory",
    "with-dynamic-shared-memory",
    "switch",
    "macrolet",
    "symbol-macrolet",
];

/// The variables a `defkernel` signature `(RESULT ((NAME TYPE)…))` binds.
fn parameter_names(signature: &Form) -> impl Iterator<Item = VarBinding> + '_ {
    signature
        .as_list()
        .and_then(|s| s.get(1))
        .and_then(Form::as_list)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| {
            p.as_list()
                .and_then(|p| p.first())
                .and_then(Form::as_symbol)
        })
        .map(|p| (p.to_string(), None))
}

/// `(let () body…)`, what `macrolet` and `symbol-macrolet` leave: a block without variables.
fn empty_let(form: &Form, head: &Form, definitions: &Form, body: Vec<Form>) -> Form {
    list_with(
        vec![
            Form::symbol("let", head.span.clone()),
            Form::list(vec![], definitions.span.clone()),
        ],
        body,
        &form.span,
    )
}

/// The list of `start` followed by `rest`.
fn list_with(mut start: Vec<Form>, rest: Vec<Form>, span: &Span) -> Form {
    start.extend(rest);
    Form::list(start, span.clone())
}
