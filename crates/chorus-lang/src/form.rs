//! S-expressions with spans: what the reader produces, the macro expander rewrites and the checker
//! consumes.
//!
//! Symbols are stored as the Common Lisp reader would intern them, folded to lower case
//! (`VecAdd` and `vecadd` are one symbol), except for characters written inside `|…|` or after a
//! backslash. `'x`, `` `x ``, `,x` and `,@x` read as the lists `(quote x)`, `(quasiquote x)`,
//! `(unquote x)` and `(unquote-splicing x)`; the printer writes them back in the short form.

use crate::span::Span;
use std::fmt;

/// A form: one S-expression and where it came from.
#[derive(Clone, Debug)]
pub struct Form {
    /// What the form is.
    pub kind: FormKind,
    /// Where it was read (or, for macro output, the macro call it came from).
    pub span: Span,
}

/// The C-style suffix written after an integer literal (`10u`, `10ll`, `10ull`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum IntSuffix {
    /// No suffix: the literal is an `int` (or `int64` if it does not fit).
    #[default]
    None,
    /// `u`: unsigned int.
    U,
    /// `l` or `ll`: int64.
    L,
    /// `ul` or `ull`: uint64.
    UL,
}

/// Whether a floating literal is single (`1.0`, `1e-3`, `1.0f0`, `1.5f`) or double (`1.0d0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FloatPrecision {
    /// `float`.
    Single,
    /// `double`.
    Double,
}

/// The kinds of form.
#[derive(Clone, Debug)]
pub enum FormKind {
    /// A symbol, folded to lower case (`vec-add-kernel`, `float*`, `:restrict`, `%foo`).
    Symbol(String),
    /// An integer literal.
    Int {
        /// The value (wide enough for any uint64 and its negation).
        value: i128,
        /// The C-style suffix it was written with.
        suffix: IntSuffix,
    },
    /// A floating literal.
    Float {
        /// The value, exactly as read (a single float is stored after rounding to `f32`).
        value: f64,
        /// Single or double.
        precision: FloatPrecision,
    },
    /// A string literal, escapes resolved.
    Str(String),
    /// A proper list (also `()`, which is `nil`).
    List(Vec<Form>),
}

impl Form {
    /// A form of `kind` at `span`.
    pub fn new(kind: FormKind, span: Span) -> Form {
        Form { kind, span }
    }

    /// A symbol form.
    pub fn symbol(name: impl Into<String>, span: Span) -> Form {
        Form::new(FormKind::Symbol(name.into()), span)
    }

    /// A list form.
    pub fn list(items: Vec<Form>, span: Span) -> Form {
        Form::new(FormKind::List(items), span)
    }

    /// An `int` literal form.
    pub fn int(value: i128, span: Span) -> Form {
        Form::new(
            FormKind::Int {
                value,
                suffix: IntSuffix::None,
            },
            span,
        )
    }

    /// The symbol's name, if this is a symbol.
    pub fn as_symbol(&self) -> Option<&str> {
        match &self.kind {
            FormKind::Symbol(s) => Some(s),
            _ => None,
        }
    }

    /// The items, if this is a list.
    pub fn as_list(&self) -> Option<&[Form]> {
        match &self.kind {
            FormKind::List(items) => Some(items),
            _ => None,
        }
    }

    /// True for the symbol `name`.
    pub fn is_symbol(&self, name: &str) -> bool {
        self.as_symbol() == Some(name)
    }

    /// True for `nil` and `()`.
    pub fn is_nil(&self) -> bool {
        match &self.kind {
            FormKind::Symbol(s) => s == "nil",
            FormKind::List(items) => items.is_empty(),
            _ => false,
        }
    }

    /// If this is a list whose head is a symbol, that symbol and the remaining items.
    pub fn as_call(&self) -> Option<(&str, &[Form])> {
        let items = self.as_list()?;
        let (head, rest) = items.split_first()?;
        Some((head.as_symbol()?, rest))
    }

    /// Structural equality, ignoring spans (Common Lisp's `equal`).
    pub fn same(&self, other: &Form) -> bool {
        match (&self.kind, &other.kind) {
            (FormKind::Symbol(a), FormKind::Symbol(b)) => a == b,
            (
                FormKind::Int {
                    value: a,
                    suffix: sa,
                },
                FormKind::Int {
                    value: b,
                    suffix: sb,
                },
            ) => a == b && sa == sb,
            (
                FormKind::Float {
                    value: a,
                    precision: pa,
                },
                FormKind::Float {
                    value: b,
                    precision: pb,
                },
            ) => a.to_bits() == b.to_bits() && pa == pb,
            (FormKind::Str(a), FormKind::Str(b)) => a == b,
            (FormKind::List(a), FormKind::List(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y))
            }
            _ => false,
        }
    }
}

/// Characters that end a symbol or need escaping when printed.
fn needs_bar(name: &str) -> bool {
    if name.is_empty() {
        return true;
    }
    let special = |c: char| {
        c.is_whitespace()
            || c.is_control()
            || matches!(c, '(' | ')' | '"' | ';' | '\'' | '`' | ',' | '|' | '\\' | '#' | '[' | ']')
            // The reader folds case: a character that folds must be escaped to survive.
            || !c.to_lowercase().eq(std::iter::once(c))
    };
    if name.chars().any(special) {
        return true;
    }
    // A colon after the first character would read as a package marker; a lone `:` is no
    // keyword.
    if name == ":" || name.char_indices().any(|(i, c)| c == ':' && i > 0) {
        return true;
    }
    // A token of dots alone is no symbol to the reader.
    if name.chars().all(|c| c == '.') {
        return true;
    }
    // A symbol that would read back as a number needs bars too.
    crate::form::looks_numeric(name)
}

/// True when `text` has the shape of a number literal (so a symbol of that name must be printed
/// between bars). The reader owns the exact number grammar; this is its conservative shadow.
pub fn looks_numeric(text: &str) -> bool {
    let t = text.strip_prefix(['+', '-']).unwrap_or(text);
    match t.chars().next() {
        Some(c) if c.is_ascii_digit() => true,
        Some('.') => t.chars().nth(1).is_some_and(|c| c.is_ascii_digit()),
        _ => false,
    }
}

fn write_float(f: &mut fmt::Formatter<'_>, value: f64, precision: FloatPrecision) -> fmt::Result {
    // `{:?}` prints the shortest text that reads back to the same value, with an exponent when it
    // needs one (`1e-10`) and always with a `.` or `e`.
    let text = match precision {
        FloatPrecision::Single => format!("{:?}", value as f32),
        FloatPrecision::Double => format!("{value:?}"),
    };
    let (mantissa, exponent) = match text.split_once('e') {
        Some((m, e)) => (m.to_string(), e.to_string()),
        None => (text.clone(), "0".to_string()),
    };
    match precision {
        FloatPrecision::Single if text.contains('e') => write!(f, "{mantissa}e{exponent}"),
        FloatPrecision::Single => write!(f, "{text}"),
        FloatPrecision::Double => write!(f, "{mantissa}d{exponent}"),
    }
}

impl fmt::Display for Form {
    /// Prints the form so that the reader gives it back (`read(print(f))` is `f`, spans aside).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            // A gensym prints as Common Lisp prints an uninterned symbol. The reader refuses
            // `#:` (see `reader`), so printed gensyms cannot be confused with source names.
            FormKind::Symbol(s) if s.strip_prefix("#:").is_some_and(|rest| !needs_bar(rest)) => {
                write!(f, "{s}")
            }
            FormKind::Symbol(s) if needs_bar(s) => {
                write!(f, "|")?;
                for c in s.chars() {
                    if c == '|' || c == '\\' {
                        write!(f, "\\")?;
                    }
                    write!(f, "{c}")?;
                }
                write!(f, "|")
            }
            FormKind::Symbol(s) => write!(f, "{s}"),
            FormKind::Int { value, suffix } => {
                let s = match suffix {
                    IntSuffix::None => "",
                    IntSuffix::U => "u",
                    IntSuffix::L => "ll",
                    IntSuffix::UL => "ull",
                };
                write!(f, "{value}{s}")
            }
            FormKind::Float { value, precision } => write_float(f, *value, *precision),
            FormKind::Str(s) => {
                write!(f, "\"")?;
                for c in s.chars() {
                    match c {
                        '"' => write!(f, "\\\"")?,
                        '\\' => write!(f, "\\\\")?,
                        '\n' => write!(f, "\\n")?,
                        '\t' => write!(f, "\\t")?,
                        '\r' => write!(f, "\\r")?,
                        '\0' => write!(f, "\\0")?,
                        c if c.is_control() && (c as u32) < 0x100 => {
                            write!(f, "\\x{:02x}", c as u32)?
                        }
                        c => write!(f, "{c}")?,
                    }
                }
                write!(f, "\"")
            }
            FormKind::List(items) => {
                if let [head, arg] = items.as_slice() {
                    let prefix = match head.as_symbol() {
                        Some("quote") => Some("'"),
                        Some("quasiquote") => Some("`"),
                        Some("unquote") => Some(","),
                        Some("unquote-splicing") => Some(",@"),
                        _ => None,
                    };
                    if let Some(p) = prefix {
                        return write!(f, "{p}{arg}");
                    }
                }
                write!(f, "(")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, " ")?;
                    }
                    write!(f, "{item}")?;
                }
                write!(f, ")")
            }
        }
    }
}

impl Form {
    /// The form printed as [`Display`](fmt::Display) prints it, but broken over lines so that no
    /// line is longer than `width` where that can be helped: a list that does not fit keeps its
    /// head and first argument on the first line (a `defkernel`, `defkernelmacro` or `do` its
    /// first two) and puts each further item on a line of its own, indented two columns (a list
    /// whose head is not a symbol, such as a binding list, aligns its items instead). Reading the
    /// result back gives the same form.
    pub fn pretty(&self, width: usize) -> String {
        let mut out = String::new();
        self.pretty_into(&mut out, 0, width);
        out
    }

    fn pretty_into(&self, out: &mut String, indent: usize, width: usize) {
        let flat = self.to_string();
        let items = match &self.kind {
            FormKind::List(items) if indent + flat.chars().count() > width && items.len() > 1 => {
                items
            }
            _ => {
                out.push_str(&flat);
                return;
            }
        };
        // Quote forms print with their prefix character; keep them flat-headed.
        if let [head, arg] = items.as_slice()
            && let Some(prefix) = match head.as_symbol() {
                Some("quote") => Some("'"),
                Some("quasiquote") => Some("`"),
                Some("unquote") => Some(","),
                Some("unquote-splicing") => Some(",@"),
                _ => None,
            }
        {
            out.push_str(prefix);
            arg.pretty_into(out, indent + prefix.len(), width);
            return;
        }
        out.push('(');
        let (first_line, rest_indent) = match items[0].as_symbol() {
            // A definition keeps its name and signature, a `do` its bindings and end test,
            // beside the head while they fit there.
            Some(head @ ("defkernel" | "defkernelmacro" | "do")) if items.len() > 3 => {
                let line = format!("({head} {} {}", items[1], items[2]);
                let fits = indent + line.chars().count() <= width;
                (if fits { 3 } else { 2 }, indent + 2)
            }
            Some(_) => (2, indent + 2),
            None => (1, indent + 1),
        };
        for (i, item) in items.iter().enumerate() {
            if i >= first_line {
                out.push('\n');
                out.push_str(&" ".repeat(rest_indent));
                item.pretty_into(out, rest_indent, width);
            } else {
                if i > 0 {
                    out.push(' ');
                }
                let column = out
                    .rsplit('\n')
                    .next()
                    .map_or(0, |line| line.chars().count());
                item.pretty_into(out, column, width);
            }
        }
        out.push(')');
    }
}
