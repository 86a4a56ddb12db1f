//! The built-in kernel macros every [`Expander`](super::Expander) starts with: `let*`, `when` and
//! `unless`, as in cl-cuda. They are ordinary macros: a unit may redefine them.

use super::MacroContext;
use crate::error::{Error, Result};
use crate::form::Form;

/// `(let* (b1 b2 …) body…)` → `(let (b1) (let (b2) … body…))`: one binding per level, so each
/// init sees the variables before it. `(let* () body…)` is `(let () body…)`.
pub(crate) fn let_star(call: &Form, cx: &MacroContext) -> Result<Form> {
    let (bindings, body) = match call.as_list() {
        Some([_, bindings, body @ ..]) if bindings.is_nil() => (&[][..], body),
        Some([_, bindings, body @ ..]) if bindings.as_list().is_some() => {
            (bindings.as_list().unwrap_or_default(), body)
        }
        _ => {
            return Err(Error::new(
                &call.span,
                format!("expected (let* ((var init)…) statement…), found `{call}`"),
            ));
        }
    };
    let span = cx.span();
    let mut result: Vec<Form> = body.to_vec();
    let head = || Form::symbol("let", span.clone());
    if bindings.is_empty() {
        result.insert(0, Form::list(vec![], span.clone()));
        result.insert(0, head());
        return Ok(Form::list(result, span.clone()));
    }
    for binding in bindings.iter().rev() {
        let mut level = vec![head(), Form::list(vec![binding.clone()], span.clone())];
        level.extend(result);
        result = vec![Form::list(level, span.clone())];
    }
    Ok(result.remove(0))
}

/// `(when test statement…)` → `(if test (progn statement…))`.
pub(crate) fn when(call: &Form, cx: &MacroContext) -> Result<Form> {
    conditional(call, cx, "when", |test| test.clone())
}

/// `(unless test statement…)` → `(if (not test) (progn statement…))`.
pub(crate) fn unless(call: &Form, cx: &MacroContext) -> Result<Form> {
    conditional(call, cx, "unless", |test| {
        Form::list(
            vec![Form::symbol("not", cx.span().clone()), test.clone()],
            cx.span().clone(),
        )
    })
}

fn conditional(
    call: &Form,
    cx: &MacroContext,
    name: &str,
    test: impl Fn(&Form) -> Form,
) -> Result<Form> {
    let Some([_, condition, body @ ..]) = call.as_list() else {
        return Err(Error::new(
            &call.span,
            format!("expected ({name} test statement…), found `{call}`"),
        ));
    };
    let span = cx.span();
    let mut progn = vec![Form::symbol("progn", span.clone())];
    progn.extend(body.iter().cloned());
    Ok(Form::list(
        vec![
            Form::symbol("if", span.clone()),
            test(condition),
            Form::list(progn, span.clone()),
        ],
        span.clone(),
    ))
}
