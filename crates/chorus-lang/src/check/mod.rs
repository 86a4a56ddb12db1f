//! The type checker: expanded forms in, a typed [`ir::Module`] out.
//!
//! [`check_module`] takes the top-level forms of one compilation unit after macro expansion
//! (`defkernel`, `defglobal`, `defkernel-struct`; no macros left) and produces the IR every back
//! end consumes. It works in four passes so that definitions may appear in any order where C
//! allows it: structures (in order; a structure holds earlier structures by value or through a
//! pointer, and itself through a pointer), globals (typed by their constant initializers), the
//! signatures of all functions (so a function may call one defined later), and the bodies.
//!
//! What it checks and how it converts is documented where it happens: [`convert`] (implicit
//! conversions), [`builtins`] (the overload table), [`names`] (names in messages). Every error carries the
//! span of the offending form and says what was expected.

pub mod builtins;
mod consts;
pub mod convert;
mod expr;
mod flow;
mod hopper;
pub mod names;
mod printf;
mod shared;
mod stmt;
pub mod tensor;
mod texture;
mod toplevel;
mod validate;

use crate::error::{Error, Result};
use crate::form::Form;
use crate::ir::{self, Expr, ExprKind, Local, LocalId, LocalStorage};
use crate::span::Span;
use crate::types::Type;
use std::collections::HashMap;

pub use hopper::{ACCUMULATOR_NAMES, constant_argument};
pub use toplevel::{STACK_SIZE, check_module, check_module_owned};
pub use validate::validate;

/// An error at `span`.
fn err<T>(span: &Span, message: impl Into<String>) -> Result<T> {
    Err(Error::new(span, message))
}

/// An expression node.
fn node(kind: ExprKind, ty: Type, span: &Span) -> Expr {
    Expr {
        kind,
        ty,
        span: span.clone(),
    }
}

/// What an enclosing `break`/`continue` would leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Jump {
    /// `do`, `while`, `for`.
    Loop,
    /// A `switch` clause.
    Switch,
}

/// The state of checking one function body.
struct FnCx<'m> {
    /// The module-level definitions.
    m: &'m toplevel::ModuleCx,
    /// The function's kernel-language name, for messages.
    fn_name: String,
    /// The function's result type.
    ret: Type,
    /// Every local so far; parameters first.
    locals: Vec<Local>,
    /// The number of dimensions of each `with-shared-memory` array.
    shared_dims: HashMap<LocalId, usize>,
    /// Visible names, innermost scope last.
    scopes: Vec<Vec<(String, LocalId)>>,
    /// Enclosing loops and switches, innermost last.
    jumps: Vec<Jump>,
}

impl<'m> FnCx<'m> {
    fn new(m: &'m toplevel::ModuleCx, fn_name: &str, ret: Type) -> FnCx<'m> {
        FnCx {
            m,
            fn_name: fn_name.to_string(),
            ret,
            locals: Vec::new(),
            shared_dims: HashMap::new(),
            scopes: vec![Vec::new()],
            jumps: Vec::new(),
        }
    }

    /// Declares a local in the innermost scope.
    fn declare(&mut self, name: &str, ty: Type, storage: LocalStorage) -> LocalId {
        let id = LocalId(self.locals.len() as u32);
        self.locals.push(Local {
            name: name.into(),
            ty,
            storage,
        });
        self.scopes
            .last_mut()
            .expect("a scope is always open")
            .push((name.to_string(), id));
        id
    }

    /// The innermost local named `name`.
    fn lookup(&self, name: &str) -> Option<LocalId> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, id)| *id)
    }

    /// Runs `f` in a new scope.
    fn scoped<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.scopes.push(Vec::new());
        let result = f(self);
        self.scopes.pop();
        result
    }

    /// Runs `f` inside a loop or switch.
    fn inside<T>(&mut self, jump: Jump, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.jumps.push(jump);
        let result = f(self);
        self.jumps.pop();
        result
    }

    /// Names a variable reference could have meant, for "did you mean" hints.
    fn visible_variables(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .scopes
            .iter()
            .flatten()
            .map(|(n, _)| n.clone())
            .collect();
        names.extend(self.m.globals.iter().map(|g| g.name.to_string()));
        names.extend(expr::INDEX_VARIABLES.iter().map(|(n, _)| n.to_string()));
        names
    }
}

/// The name a binding form introduces: a symbol that is not a keyword, `t`, `nil` or an index
/// variable.
fn binding_name<'f>(form: &'f Form, what: &str) -> Result<&'f str> {
    match form.as_symbol() {
        Some(name) if name.starts_with(':') || name == "t" || name == "nil" => err(
            &form.span,
            format!("{what} must be a variable name, not the constant `{name}`"),
        ),
        Some(name) if expr::index_variable(name).is_some() => err(
            &form.span,
            format!("`{name}` is an index variable and cannot be rebound; choose another name"),
        ),
        Some(name) => Ok(name),
        None => err(
            &form.span,
            format!("{what} must be a variable name, got `{form}`"),
        ),
    }
}

/// The candidate closest to `name` by edit distance, if it is close enough to be a likely typo.
fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c)
}

/// `; did you mean `x`?` or nothing.
fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    suggest(name, candidates)
        .map(|s| format!("; did you mean `{s}`?"))
        .unwrap_or_default()
}

/// Edit distance over characters, counting a swap of two adjacent characters as one edit
/// (optimal string alignment), so `flaot` is one edit from `float`.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let substitution = d[i - 1][j - 1] + usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = substitution.min(d[i - 1][j] + 1).min(d[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

/// Parses a type name (`float*`, `pair`), with a hint when it is unknown.
fn parse_type(form: &Form, structs: &[ir::StructDef]) -> Result<Type> {
    let Some(name) = form.as_symbol() else {
        return err(
            &form.span,
            format!("expected a type name such as `float` or `int*`, got `{form}`"),
        );
    };
    if let Some(ty) = Type::parse(name, |n| structs.iter().any(|s| &*s.name == n)) {
        return Ok(ty);
    }
    let base = name.trim_end_matches('*');
    let stars = &name[base.len()..];
    let mut known: Vec<String> = ["void", "bool", "curand-state-xorwow"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    known.extend(
        crate::types::ScalarType::ALL
            .iter()
            .map(|t| t.name().to_string()),
    );
    known.extend(
        crate::types::VectorType::ALL
            .iter()
            .map(|t| t.name().to_string()),
    );
    known.extend(structs.iter().map(|s| s.name.to_string()));
    let hint = suggest(base, known.iter().map(String::as_str))
        .map(|s| format!("; did you mean `{s}{stars}`?"))
        .unwrap_or_default();
    err(&form.span, format!("unknown type `{name}`{hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_find_typos_only() {
        assert_eq!(suggest("lenght", ["length", "n"]), Some("length"));
        assert_eq!(suggest("x", ["y", "zzz"]), Some("y"));
        assert_eq!(suggest("count", ["a", "b"]), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("flaot", "float"), 1);
        // Ties go to the alphabetically first candidate, whatever the order given.
        assert_eq!(suggest("pair-z", ["pair-y", "pair-x"]), Some("pair-x"));
    }
}
