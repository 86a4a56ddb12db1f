//! Whole source files: the kernel definitions of a CL-Cuda or Chorus Lisp file, its host code
//! skipped.
//!
//! A CL-Cuda source is a Common Lisp file: `in-package`, `defpackage`, `defun`, `defvar`,
//! `defmacro`, a `main` that launches the kernels… around the kernel definitions. [`read_source`]
//! reads it whole ([`crate::reader::read_source`]: the Common Lisp syntax of the host code
//! included) and keeps, in order, the top-level forms that define kernel code:
//!
//! * `defkernel`, `defkernelmacro`, `defkernel-symbol-macro`, `defglobal`, `defkernel-struct`
//!   ([`KERNEL_DEFINITIONS`]), whatever package prefix they carry (`cl-cuda:defkernel`);
//! * the forms inside a top-level `progn` or `eval-when` (whatever its situations), which are
//!   top-level forms in Common Lisp too;
//! * the top-level calls of the file's own kernel macros (`defkernelmacro`), which the expander
//!   expands as it does in kernel text (a macro that writes a family of kernels);
//! * the expansion of a call to a host `defmacro` of the same file (CL-Cuda's shared-memory
//!   example writes its kernels with one), expanded by the macro-time Lisp of
//!   [`crate::expand`]. If the macro cannot be expanded there (it calls a host function the
//!   macro-time Lisp lacks, or uses host-only syntax), the call is skipped with a warning.
//!
//! Everything else is host code and is skipped, and listed ([`Source::skipped`]; `chorus
//! compile --verbose` prints the list). One exception: a top-level form whose head looks like a
//! misspelled kernel definition (it starts with `defkernel`, or is at most two edits away from
//! one, such as `defkernal` or `defglobl`) is an error at its head, rather than a kernel that
//! silently disappears.

use crate::error::{Error, Result};
use crate::expand::Expander;
use crate::form::Form;
use crate::reader::{self, KERNEL_DEFINITIONS, SourceForm};
use crate::span::Span;
use std::collections::{HashMap, VecDeque};

/// How many host macro expansions one file may make (each expansion's forms are top-level
/// forms again, so a macro that expands to its own call would never end).
pub const MAX_HOST_EXPANSIONS: usize = 10_000;

/// The kernel definitions of a whole source file, and what was skipped.
#[derive(Clone, Debug, Default)]
pub struct Source {
    /// The kernel definitions, in order (host macro calls replaced by their expansions).
    pub forms: Vec<Form>,
    /// The host forms that were skipped, in order.
    pub skipped: Vec<Skipped>,
}

/// A top-level host form that was skipped.
#[derive(Clone, Debug)]
pub struct Skipped {
    /// What it was: its head and, when it defines one, the name (`defun main`,
    /// `in-package`); `a symbol`, `a string`, … for an atom.
    pub what: String,
    /// Where it is.
    pub span: Span,
    /// Why it deserves attention, for a call of a host macro that could not be expanded (the
    /// error); `None` for ordinary host code.
    pub warning: Option<String>,
}

impl Source {
    /// The skipped forms that carry a warning.
    pub fn warnings(&self) -> impl Iterator<Item = &Skipped> {
        self.skipped.iter().filter(|s| s.warning.is_some())
    }
}

/// Reads a whole source file and keeps its kernel definitions (see the module documentation).
/// `file` names the text in spans.
pub fn read_source(text: &str, file: &str) -> Result<Source> {
    collect(reader::read_source(text, file)?)
}

/// Keeps the kernel definitions of the top-level forms of a whole file.
pub fn collect(forms: Vec<SourceForm>) -> Result<Source> {
    let kernel_macros: Vec<String> = forms
        .iter()
        .filter_map(|f| match f.form.as_call() {
            Some(("defkernelmacro", [name, ..])) => name.as_symbol().map(str::to_string),
            _ => None,
        })
        .collect();
    // Host macros, by name; a later definition replaces an earlier one, as in Lisp. A kernel
    // macro of the same name wins: it is what the kernel code means by the name.
    let mut host_macros: HashMap<String, HostMacro> = HashMap::new();
    let mut source = Source::default();
    let mut pending: VecDeque<(Form, bool)> =
        forms.into_iter().map(|f| (f.form, f.host_syntax)).collect();
    let mut expansions = 0;
    while let Some((form, host_syntax)) = pending.pop_front() {
        let Some(items) = form.as_list().filter(|items| !items.is_empty()) else {
            source.skipped.push(Skipped {
                what: describe_atom(&form).to_string(),
                span: form.span.clone(),
                warning: None,
            });
            continue;
        };
        let Some(head) = items[0].as_symbol() else {
            source.skipped.push(skipped(&form, "a list", None));
            continue;
        };
        // A top-level call of one of the file's kernel macros defines kernel code too (a macro
        // that writes a family of kernels, as examples/kernels/attention.lisp does): the
        // expander expands it like any top-level form of kernel text.
        if KERNEL_DEFINITIONS.contains(&head) || kernel_macros.iter().any(|k| k == head) {
            source.forms.push(form);
            continue;
        }
        match head {
            "progn" => {
                for item in items[1..].iter().rev() {
                    pending.push_front((item.clone(), host_syntax));
                }
            }
            // (eval-when (situations…) forms…): the forms are top-level forms.
            "eval-when" if items.len() >= 2 => {
                for item in items[2..].iter().rev() {
                    pending.push_front((item.clone(), host_syntax));
                }
            }
            "defmacro" => {
                if let Some(name) = items.get(1).and_then(Form::as_symbol)
                    && !kernel_macros.iter().any(|k| k == name)
                {
                    host_macros.insert(
                        name.to_string(),
                        HostMacro {
                            definition: form.clone(),
                            host_syntax,
                        },
                    );
                }
                source.skipped.push(skipped(&form, head, None));
            }
            _ if host_macros.contains_key(head) => {
                let host_macro = &host_macros[head];
                expansions += 1;
                if expansions > MAX_HOST_EXPANSIONS {
                    return Err(Error::new(
                        &form.span,
                        format!(
                            "more than {MAX_HOST_EXPANSIONS} host macro expansions at top level \
                             (does `{head}` expand to a call of itself?)"
                        ),
                    ));
                }
                match expand_host_macro(host_macro, &form, host_syntax) {
                    Ok(expansion) => pending.push_front((expansion, false)),
                    Err(reason) => {
                        let warning = format!(
                            "the host macro `{head}` could not be expanded, so any kernel it \
                             defines is missing: {reason}"
                        );
                        source.skipped.push(skipped(&form, head, Some(warning)));
                    }
                }
            }
            _ => {
                if let Some(meant) = misspelled_definition(head) {
                    return Err(Error::new(
                        &items[0].span,
                        format!(
                            "`{head}` is not a kernel definition (did you mean `{meant}`?); \
                             host forms are skipped, but this one looks like a misspelled \
                             kernel definition"
                        ),
                    ));
                }
                source.skipped.push(skipped(&form, head, None));
            }
        }
    }
    Ok(source)
}

/// A host `defmacro` of the file, kept for its top-level calls.
struct HostMacro {
    definition: Form,
    /// Whether host-only syntax was read in it (then its expansion would not mean what the
    /// text says, and it is not expanded).
    host_syntax: bool,
}

/// Expands a top-level call of a host macro once with the macro-time Lisp; the error message
/// if that is not possible.
fn expand_host_macro(
    host_macro: &HostMacro,
    call: &Form,
    host_syntax: bool,
) -> Result<Form, String> {
    if host_macro.host_syntax || host_syntax {
        return Err("its text uses Common Lisp syntax that has no kernel meaning".to_string());
    }
    let Some(("defmacro", rest)) = host_macro.definition.as_call() else {
        return Err("its definition is not a defmacro".to_string());
    };
    // The same macro as a `defkernelmacro`: the macro-time Lisp runs its body.
    let mut items = vec![Form::symbol(
        "defkernelmacro",
        host_macro.definition.span.clone(),
    )];
    items.extend(rest.iter().cloned());
    let as_kernel_macro = Form::list(items, host_macro.definition.span.clone());
    let mut expander = Expander::new();
    let message = |e: Error| format!("{}: {}", e.span, e.message);
    expander.define_macro(&as_kernel_macro).map_err(message)?;
    let (expansion, expanded) = expander.expand_macro_1(call).map_err(message)?;
    if !expanded {
        return Err("the macro-time Lisp did not expand it".to_string());
    }
    Ok(expansion)
}

/// A skipped list form: its head, and the name it defines when its second item is a symbol
/// (`defun main`).
fn skipped(form: &Form, head: &str, warning: Option<String>) -> Skipped {
    let name = form
        .as_list()
        .and_then(|items| items.get(1))
        .and_then(Form::as_symbol)
        .filter(|_| head.starts_with("def"));
    Skipped {
        what: match name {
            Some(name) => format!("{head} {name}"),
            None => head.to_string(),
        },
        span: form.span.clone(),
        warning,
    }
}

fn describe_atom(form: &Form) -> &'static str {
    use crate::form::FormKind;
    match &form.kind {
        FormKind::Symbol(_) => "a symbol",
        FormKind::Int { .. } | FormKind::Float { .. } => "a number",
        FormKind::Str(_) => "a string",
        FormKind::List(_) => "an empty list",
    }
}

/// The kernel definition `head` probably misspells: `head` starts with `defkernel`, or is at
/// most two edits (insert, delete, replace, swap two neighbours) from one.
pub fn misspelled_definition(head: &str) -> Option<&'static str> {
    if KERNEL_DEFINITIONS.contains(&head) {
        return None;
    }
    let closest = KERNEL_DEFINITIONS
        .iter()
        .map(|name| (edit_distance(head, name), *name))
        .min()?;
    if closest.0 <= 2 {
        return Some(closest.1);
    }
    head.starts_with("defkernel").then_some("defkernel")
}

/// The optimal string alignment distance between `a` and `b` (in characters).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::{edit_distance, misspelled_definition};

    #[test]
    fn near_misses_of_kernel_definitions_are_found() {
        assert_eq!(edit_distance("defkernal", "defkernel"), 1);
        assert_eq!(edit_distance("defkenrel", "defkernel"), 1);
        assert_eq!(misspelled_definition("defkernal"), Some("defkernel"));
        assert_eq!(misspelled_definition("defglobl"), Some("defglobal"));
        assert_eq!(
            misspelled_definition("defkernel-macro"),
            Some("defkernelmacro")
        );
        assert_eq!(misspelled_definition("defkernelconst"), Some("defkernel"));
        for host in [
            "defun",
            "defvar",
            "defmacro",
            "defpackage",
            "in-package",
            "defparameter",
        ] {
            assert_eq!(misspelled_definition(host), None, "{host}");
        }
        assert_eq!(misspelled_definition("defkernel"), None);
    }
}
