//! Implicit conversions: which ones the language performs, what they cost in overload
//! resolution, and the explicit fix an error suggests when one is missing.
//!
//! cl-cuda performs no conversion at all (`(set x 1)` is an error for a float `x`). Chorus
//! converts where no value can change:
//! * an integer to a wider integer of the same signedness (`size-t` and `uint64` are the same
//!   width and convert both ways), and an unsigned integer to a strictly wider signed one;
//! * any integer to `float` or `double`, and `float` to `double`;
//! * an integer literal to any number type whose range holds it (`(set x 1)` for a float `x`,
//!   `(+ u 1)` for a uint `u`), and a floating literal to `float`, `double`, `half` or
//!   `bfloat16` when it is within range.
//!
//! `bool` is not a number, and everything else (narrowing, signed to unsigned, floating to
//! integer, anything to or from `half`/`bfloat16`/`fp8`/`fp4`) needs an explicit cast.
//! A converted literal becomes a literal of the target type; any other converted expression is
//! wrapped in `ExprKind::Cast { implicit: true }`.

use crate::ir::{Expr, ExprKind, Literal};
use crate::types::{ScalarType, Type};

/// True for the types arithmetic is defined on (see [`super::builtins::ARITHMETIC_SCALARS`]).
pub fn is_arithmetic(ty: &Type) -> bool {
    ty.scalar()
        .is_some_and(|s| s.is_integer() || s.is_float() || is_half_like(s))
}

fn is_half_like(s: ScalarType) -> bool {
    matches!(s, ScalarType::Half | ScalarType::BFloat16)
}

/// True for `uint8`, `uint16`, `uint`, `uint64` and `size-t`.
fn is_unsigned(s: ScalarType) -> bool {
    s.is_integer() && !s.is_signed_integer()
}

/// The cost of converting a (non-literal) value of type `from` to `to` implicitly, or `None`
/// when the language does not convert implicitly. `0` is no conversion.
pub fn type_cost(from: &Type, to: &Type) -> Option<u32> {
    if from == to {
        return Some(0);
    }
    let (f, t) = (from.scalar()?, to.scalar()?);
    use ScalarType::*;
    match (f, t) {
        (f, t) if f.is_integer() && t.is_integer() => {
            if is_unsigned(f) == is_unsigned(t) && f.size() <= t.size() {
                // Equal sizes here are uint64 and size-t.
                Some(1)
            } else if is_unsigned(f) && t.is_signed_integer() && f.size() < t.size() {
                Some(2)
            } else {
                None
            }
        }
        (f, Float) if f.is_integer() => Some(3),
        (f, Double) if f.is_integer() => Some(4),
        (Float, Double) => Some(2),
        _ => None,
    }
}

/// The literal value of `e`, if it is written as a literal.
pub fn literal(e: &Expr) -> Option<Literal> {
    match &e.kind {
        ExprKind::Literal(l) => Some(*l),
        _ => None,
    }
}

/// The range of an integer type, as `(min, max)`.
pub fn int_range(s: ScalarType) -> (i128, i128) {
    use ScalarType::*;
    match s {
        Int8 => (i8::MIN.into(), i8::MAX.into()),
        UInt8 => (0, u8::MAX.into()),
        Int16 => (i16::MIN.into(), i16::MAX.into()),
        UInt16 => (0, u16::MAX.into()),
        Int => (i32::MIN.into(), i32::MAX.into()),
        UInt => (0, u32::MAX.into()),
        Int64 => (i64::MIN.into(), i64::MAX.into()),
        UInt64 | SizeT => (0, u64::MAX.into()),
        _ => (i128::MIN, i128::MAX),
    }
}

/// The largest finite value of a floating type.
fn float_max(s: ScalarType) -> Option<f64> {
    match s {
        ScalarType::Half => Some(65504.0),
        ScalarType::BFloat16 => Some(3.389_531_389_251_535_5e38),
        ScalarType::Float => Some(f32::MAX as f64),
        ScalarType::Double => Some(f64::MAX),
        _ => None,
    }
}

/// The literal `lit` retyped as `to`, when it fits (see the module documentation).
pub fn retype_literal(lit: Literal, to: &Type) -> Option<Literal> {
    let t = to.scalar()?;
    match lit {
        Literal::Int(v) if t.is_integer() => {
            let (lo, hi) = int_range(t);
            (lo..=hi).contains(&v).then_some(Literal::Int(v))
        }
        Literal::Int(v) => {
            let max = float_max(t)?;
            ((v as f64).abs() <= max).then_some(Literal::Float(v as f64))
        }
        Literal::Float(x) => {
            let max = float_max(t)?;
            (x.abs() <= max || x.is_nan()).then_some(Literal::Float(x))
        }
        Literal::Bool(_) => None,
    }
}

/// The cost of converting the expression `e` to `to`: a literal that fits costs 1 (0 when it
/// already has the type), anything else [`type_cost`].
pub fn cost(e: &Expr, to: &Type) -> Option<u32> {
    if e.ty == *to {
        return Some(0);
    }
    if let Some(lit) = literal(e)
        && let Some(c) = retype_literal(lit, to).map(|_| 1)
    {
        return Some(c);
    }
    type_cost(&e.ty, to)
}

/// `e` converted to `to`: the same expression when it has the type, a retyped literal, or an
/// implicit cast. `None` when the language does not convert `e` implicitly.
pub fn coerce(e: Expr, to: &Type) -> Option<Expr> {
    if e.ty == *to {
        return Some(e);
    }
    if let Some(lit) = literal(&e)
        && let Some(lit) = retype_literal(lit, to)
    {
        return Some(Expr {
            kind: ExprKind::Literal(lit),
            ty: to.clone(),
            span: e.span.clone(),
        });
    }
    type_cost(&e.ty, to)?;
    let span = e.span.clone();
    Some(Expr {
        kind: ExprKind::Cast {
            value: Box::new(e),
            implicit: true,
        },
        ty: to.clone(),
        span,
    })
}

/// The type C's usual arithmetic conversions give two operands, restricted to the implicit
/// conversions above; `Err` says why there is none. A literal operand adapts to the other
/// operand's type when it fits there.
pub fn common_type(a: &Expr, b: &Expr) -> Result<Type, String> {
    if a.ty == b.ty {
        return Ok(a.ty.clone());
    }
    for (lit, other) in [(a, b), (b, a)] {
        // A plain literal (`1`, `1.0`: `int` or `float`) takes the other operand's type; one
        // written with a wider type (`5ll`, `1.0d0`, a value that needs `int64`) only widens,
        // so `(+ 2000000000 5ll)` is int64 arithmetic, as in C.
        if let Some(l) = literal(lit)
            && retype_literal(l, &other.ty).is_some()
            && (lit.ty == Type::INT
                || lit.ty == Type::FLOAT
                || type_cost(&lit.ty, &other.ty).is_some())
        {
            return Ok(other.ty.clone());
        }
    }
    let (x, y) = match (a.ty.scalar(), b.ty.scalar()) {
        (Some(x), Some(y)) if is_arithmetic(&a.ty) && is_arithmetic(&b.ty) => (x, y),
        _ => return Err(format!("{} and {} have no common type", a.ty, b.ty)),
    };
    let candidate = if x.is_integer() && y.is_integer() {
        if is_unsigned(x) == is_unsigned(y) {
            if x.size() >= y.size() { x } else { y }
        } else {
            let (signed, unsigned) = if is_unsigned(x) { (y, x) } else { (x, y) };
            if unsigned.size() < signed.size() {
                signed
            } else {
                return Err(format!(
                    "mixing signed {} and unsigned {} needs an explicit conversion: \
                     ({} …) or ({} …)",
                    signed.name(),
                    unsigned.name(),
                    unsigned.name(),
                    signed.name()
                ));
            }
        }
    } else if x == ScalarType::Double || y == ScalarType::Double {
        ScalarType::Double
    } else if x == ScalarType::Float || y == ScalarType::Float {
        ScalarType::Float
    } else {
        // half or bfloat16 with an integer or with each other.
        let target = if is_half_like(x) { x } else { y };
        return Err(format!(
            "{} and {} do not mix implicitly; convert explicitly: ({} …)",
            a.ty,
            b.ty,
            target.name()
        ));
    };
    let target = Type::Scalar(candidate);
    if cost(a, &target).is_some() && cost(b, &target).is_some() {
        Ok(target)
    } else {
        let bad = if cost(a, &target).is_none() {
            &a.ty
        } else {
            &b.ty
        };
        Err(format!(
            "{bad} does not convert implicitly to {target}; {}",
            fix(bad, &target)
        ))
    }
}

/// The common type of several operands (each literal adapting where it fits), or the index of
/// the operand that does not fit and why.
pub fn common_type_of(args: &[Expr]) -> Result<Type, (usize, String)> {
    let Some(first) = args.first() else {
        return Err((0, "no operands".into()));
    };
    // Operands merge left to right. While every operand so far is a literal, the accumulator is
    // the literal that carries the merged type; after that a non-literal stand-in of that type.
    let mut acc = first.clone();
    for (i, arg) in args.iter().enumerate().skip(1) {
        let ty = common_type(&acc, arg).map_err(|m| (i, m))?;
        acc = match (literal(&acc), literal(arg)) {
            (Some(_), Some(_)) if ty == arg.ty => arg.clone(),
            (Some(_), Some(_)) => acc,
            _ => Expr {
                kind: ExprKind::Index(crate::ir::IndexVar::WarpSize),
                ty,
                span: arg.span.clone(),
            },
        };
    }
    Ok(acc.ty.clone())
}

/// The explicit conversion that turns a `from` into a `to`, as advice:
/// `convert explicitly: (int …) or (floor …)`.
pub fn fix(from: &Type, to: &Type) -> String {
    match (from.scalar(), to.scalar()) {
        (Some(f), Some(t)) if (f.is_float() || f.is_extended_float()) && t.is_integer() => {
            format!("convert explicitly: ({} …) or (floor …)", t.name())
        }
        (Some(ScalarType::Half), Some(ScalarType::Float)) => {
            "convert explicitly: (half-to-float …)".to_string()
        }
        (Some(ScalarType::BFloat16), Some(ScalarType::Float)) => {
            "convert explicitly: (bfloat16-to-float …)".to_string()
        }
        (Some(_), Some(t)) => format!("convert explicitly: ({} …)", t.name()),
        _ if *from == Type::Bool && to.is_integer() => format!("convert explicitly: ({to} …)"),
        _ if *from == Type::Bool && to.scalar().is_some() => {
            "choose the values explicitly, e.g. (if b 1.0 0.0)".to_string()
        }
        _ if *to == Type::Bool && from.scalar().is_some() => {
            "compare explicitly, e.g. (/= x 0)".to_string()
        }
        _ => format!(
            "{} cannot be used where {} is expected",
            with_article(from),
            with_article(to)
        ),
    }
}

/// "a float" / "an int": the type with its article, for messages.
pub fn with_article(ty: &Type) -> String {
    let text = ty.to_string();
    // `uint…` starts with a consonant sound ("a uint").
    let article = if text.starts_with(['a', 'e', 'i', 'o']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {text}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::Span;

    fn var(ty: Type) -> Expr {
        Expr {
            kind: ExprKind::Local(crate::ir::LocalId(0)),
            ty,
            span: Span::generated(),
        }
    }

    fn lit(l: Literal, ty: Type) -> Expr {
        Expr {
            kind: ExprKind::Literal(l),
            ty,
            span: Span::generated(),
        }
    }

    #[test]
    fn widening_only() {
        use ScalarType::*;
        let t = Type::Scalar;
        assert_eq!(type_cost(&t(Int), &t(Int64)), Some(1));
        assert_eq!(type_cost(&t(UInt), &t(Int64)), Some(2));
        assert_eq!(type_cost(&t(Int), &t(UInt)), None);
        assert_eq!(type_cost(&t(Int64), &t(Int)), None);
        assert_eq!(type_cost(&t(Float), &t(Int)), None);
        assert_eq!(type_cost(&t(Double), &t(Float)), None);
        assert_eq!(type_cost(&t(UInt64), &t(SizeT)), Some(1));
        assert_eq!(type_cost(&t(Int), &t(Half)), None);
        assert_eq!(type_cost(&Type::Bool, &Type::INT), None);
    }

    #[test]
    fn literals_adapt_when_they_fit() {
        let one = lit(Literal::Int(1), Type::INT);
        assert_eq!(common_type(&var(Type::FLOAT), &one), Ok(Type::FLOAT));
        assert_eq!(common_type(&var(Type::UINT), &one), Ok(Type::UINT));
        let minus = lit(Literal::Int(-1), Type::INT);
        assert!(retype_literal(Literal::Int(-1), &Type::UINT).is_none());
        assert!(common_type(&var(Type::UINT), &minus).is_err());
        let half = lit(Literal::Float(1.5), Type::FLOAT);
        assert_eq!(common_type(&var(Type::INT), &half), Ok(Type::FLOAT));
        assert!(retype_literal(Literal::Float(1e6), &Type::Scalar(ScalarType::Half)).is_none());
    }

    #[test]
    fn usual_arithmetic_conversions() {
        use ScalarType::*;
        let t = |s| var(Type::Scalar(s));
        assert_eq!(common_type(&t(Int), &t(Float)), Ok(Type::FLOAT));
        assert_eq!(common_type(&t(Float), &t(Double)), Ok(Type::DOUBLE));
        assert_eq!(common_type(&t(UInt8), &t(Int)), Ok(Type::INT));
        assert_eq!(common_type(&t(Int), &t(Int64)), Ok(Type::Scalar(Int64)));
        let err = common_type(&t(Int), &t(UInt)).unwrap_err();
        assert!(err.contains("mixing signed int and unsigned uint"), "{err}");
        assert!(common_type(&t(Half), &t(Float)).is_err());
    }
}
