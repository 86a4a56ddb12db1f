//! The built-in kernel macros every [`Expander`](super::Expander) starts with: `let*`, `when`,
//! `unless` (as in cl-cuda) and the swizzles `swizzle-128b`, `swizzle-64b`, `swizzle-32b`. They
//! are ordinary macros: a unit may redefine them.

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

/// `(swizzle-128b offset)`, `(swizzle-64b offset)`, `(swizzle-32b offset)`: the byte offset
/// `offset` in a tile, moved where the TMA's and wgmma's swizzle of that span puts it: the
/// 16-byte chunk within the span (bits 4 to 6, 4 to 5, bit 4) is XORed with the index of the
/// 128-byte row modulo 8 (4, 2), as CUTLASS's `Swizzle<3,4,3>` (`<2,4,3>`, `<1,4,3>`), for
/// buffers aligned to the 1024-byte (512-, 256-byte) repeat. `(swizzle-128b o)` → `(logxor o (shl (logand (shr o 7) 7) 4))`;
/// `offset` is written twice, so it should have no side effects.
pub(crate) fn swizzle(call: &Form, cx: &MacroContext) -> Result<Form> {
    let (name, offset) = match call.as_list() {
        Some([head, offset]) => (head.as_symbol().unwrap_or_default(), offset),
        _ => {
            return Err(Error::new(
                &call.span,
                format!("expected (swizzle-128b byte-offset), found `{call}`"),
            ));
        }
    };
    // Bits of the row index XORed into the 16-byte chunk index (bits 4 and up).
    let mask = match name {
        "swizzle-128b" => 7,
        "swizzle-64b" => 3,
        _ => 1,
    };
    let span = cx.span().clone();
    let sym = |s: &str| Form::symbol(s, span.clone());
    let int = |v: i128| Form::int(v, span.clone());
    let list = |items: Vec<Form>| Form::list(items, span.clone());
    let row = list(vec![
        sym("logand"),
        list(vec![sym("shr"), offset.clone(), int(7)]),
        int(mask),
    ]);
    Ok(list(vec![
        sym("logxor"),
        offset.clone(),
        list(vec![sym("shl"), row, int(4)]),
    ]))
}
