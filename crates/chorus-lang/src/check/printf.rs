//! `printf`: the conversions of a format string, the C variadic promotions, and the check that
//! each argument suits its conversion.

use super::convert::with_article;
use crate::ir::{Expr, ExprKind};
use crate::types::{ScalarType, Type};

/// One argument-consuming part of a format: a conversion (`%lld`) or a `*` width or precision.
#[derive(Clone, Debug, PartialEq)]
pub struct Conversion {
    /// As written, for messages (`%lld`, or `*` for a width).
    pub text: String,
    /// The conversion character (`d`, `f`, …; `*` for a width or precision).
    pub kind: char,
    /// The length modifier (`""`, `l`, `ll`, `h`, `hh`, `z`, `j`, `t`, `L`).
    pub length: String,
}

/// The conversions of `format` in order (`%%` consumes nothing).
pub fn conversions(format: &str) -> Result<Vec<Conversion>, String> {
    let mut out = Vec::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        let mut text = String::from("%");
        if chars.peek() == Some(&'%') {
            chars.next();
            continue;
        }
        while let Some(&c) = chars.peek() {
            if "-+ #0".contains(c) {
                text.push(c);
                chars.next();
            } else {
                break;
            }
        }
        // Width and precision: digits, or `*` taking an int argument.
        let mut in_precision = false;
        while let Some(&c) = chars.peek() {
            if c.is_ascii_digit() || (c == '.' && !in_precision) {
                in_precision |= c == '.';
                text.push(c);
                chars.next();
            } else if c == '*' {
                text.push(c);
                chars.next();
                out.push(Conversion {
                    text: "*".into(),
                    kind: '*',
                    length: String::new(),
                });
            } else {
                break;
            }
        }
        let mut length = String::new();
        while let Some(&c) = chars.peek() {
            if "hlLzjt".contains(c) {
                length.push(c);
                chars.next();
            } else {
                break;
            }
        }
        text.push_str(&length);
        let Some(kind) = chars.next() else {
            return Err(format!(
                "the printf format ends inside the conversion `{text}`"
            ));
        };
        text.push(kind);
        if !"diouxXcsfFeEgGaAp".contains(kind) {
            return Err(format!("unsupported printf conversion `{text}`"));
        }
        out.push(Conversion { text, kind, length });
    }
    Ok(out)
}

/// `e` after C's default argument promotions: `float` to `double`, integers narrower than `int`
/// and `bool` to `int` (marked as implicit casts). Types printf cannot take are errors.
pub fn promote(e: Expr) -> Result<Expr, String> {
    use ScalarType::*;
    let to = match &e.ty {
        Type::Scalar(Float) => Type::DOUBLE,
        Type::Bool | Type::Scalar(Int8 | UInt8 | Int16 | UInt16) => Type::INT,
        Type::Scalar(Half) => {
            return Err("printf cannot print a half; convert it: (half-to-float …)".into());
        }
        Type::Scalar(BFloat16) => {
            return Err("printf cannot print a bfloat16; convert it: (bfloat16-to-float …)".into());
        }
        Type::Scalar(Fp8 | Fp4) => {
            return Err(format!(
                "printf cannot print {}; convert it: (float …)",
                with_article(&e.ty)
            ));
        }
        Type::Scalar(_) | Type::Pointer(_) => return Ok(e),
        other => {
            return Err(format!(
                "printf cannot print {}; print its components",
                with_article(other)
            ));
        }
    };
    let span = e.span.clone();
    Ok(Expr {
        kind: ExprKind::Cast {
            value: Box::new(e),
            implicit: true,
        },
        ty: to,
        span,
    })
}

/// Checks that an argument of (promoted) type `ty` suits `conv`.
pub fn check(conv: &Conversion, ty: &Type) -> Result<(), String> {
    let wide = matches!(conv.length.as_str(), "l" | "ll" | "j" | "z" | "t");
    match conv.kind {
        '*' => match ty {
            Type::Scalar(ScalarType::Int) => Ok(()),
            _ => Err(format!(
                "a `*` width or precision in printf takes an int, got {}",
                with_article(ty)
            )),
        },
        'd' | 'i' | 'o' | 'u' | 'x' | 'X' | 'c' => {
            let Some(s) = ty.scalar().filter(|s| s.is_integer()) else {
                return Err(format!(
                    "printf conversion `{}` needs an integer, got {}",
                    conv.text,
                    with_article(ty)
                ));
            };
            match (s.size() == 8, wide) {
                (true, false) => Err(format!(
                    "printf conversion `{}` takes a 32-bit integer, got {}; write `%ll{}`",
                    conv.text,
                    with_article(ty),
                    conv.kind
                )),
                (false, true) => Err(format!(
                    "printf conversion `{}` takes a 64-bit integer, got {}; write `%{}`",
                    conv.text,
                    with_article(ty),
                    conv.kind
                )),
                _ => Ok(()),
            }
        }
        'f' | 'F' | 'e' | 'E' | 'g' | 'G' | 'a' | 'A' => match ty {
            Type::Scalar(ScalarType::Double) => Ok(()),
            _ => Err(format!(
                "printf conversion `{}` needs a floating value, got {}",
                conv.text,
                with_article(ty)
            )),
        },
        's' => match ty.pointee().and_then(Type::scalar) {
            Some(ScalarType::Int8 | ScalarType::UInt8) => Ok(()),
            _ => Err(format!(
                "printf conversion `{}` needs a pointer to int8 or uint8 characters, got {}",
                conv.text,
                with_article(ty)
            )),
        },
        'p' => match ty {
            Type::Pointer(_) => Ok(()),
            _ => Err(format!(
                "printf conversion `{}` needs a pointer, got {}",
                conv.text,
                with_article(ty)
            )),
        },
        _ => Err(format!("unsupported printf conversion `{}`", conv.text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_conversions() {
        let kinds = |f: &str| {
            conversions(f)
                .unwrap()
                .into_iter()
                .map(|c| c.kind)
                .collect::<String>()
        };
        assert_eq!(kinds("x=%d y=%5.2f %% %s"), "dfs");
        assert_eq!(kinds("%*d %-08lld"), "*dd");
        assert!(conversions("oops %").is_err());
        assert!(conversions("%n").is_err());
    }
}
