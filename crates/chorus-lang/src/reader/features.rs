//! Feature expressions of `#+` and `#-` (Common Lisp's `*features*`, here [`FEATURES`]).

use super::FEATURES;
use crate::error::{Error, Result};
use crate::form::{Form, FormKind};

/// Whether `expression` (read after `#+`/`#-`) holds: a feature, or `(:and …)`, `(:or …)`,
/// `(:not x)`. Names are compared without their keyword colon (`sbcl` is `:sbcl`).
pub(super) fn holds(expression: &Form) -> Result<bool> {
    match &expression.kind {
        FormKind::Symbol(name) => Ok(FEATURES.contains(&bare(name))),
        FormKind::List(items) => {
            let operator = items.first().and_then(Form::as_symbol).map(bare);
            let operands = items.get(1..).unwrap_or_default();
            match operator {
                Some("and") => {
                    for operand in operands {
                        if !holds(operand)? {
                            return Ok(false);
                        }
                    }
                    Ok(true)
                }
                Some("or") => {
                    for operand in operands {
                        if holds(operand)? {
                            return Ok(true);
                        }
                    }
                    Ok(false)
                }
                Some("not") if operands.len() == 1 => Ok(!holds(&operands[0])?),
                _ => Err(malformed(expression)),
            }
        }
        _ => Err(malformed(expression)),
    }
}

fn bare(name: &str) -> &str {
    name.strip_prefix(':').unwrap_or(name)
}

fn malformed(expression: &Form) -> Error {
    Error::new(
        &expression.span,
        format!(
            "`{expression}` is not a feature expression; write a feature (`:chorus`), \
             `(:and …)`, `(:or …)` or `(:not x)`"
        ),
    )
}
