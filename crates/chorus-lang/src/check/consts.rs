//! Constant evaluation of checked expressions: shared-memory sizes, `switch` labels, launch
//! bounds and global initializers.

use super::convert::int_range;
use crate::ir::{Builtin, Expr, ExprKind, Literal};
use crate::types::{ScalarType, Type};

/// The value of an integer expression built from literals, arithmetic, bitwise operations and
/// casts, computed as C computes it in the expression's type; `None` when it is not constant
/// (it reads a variable, calls a function, divides by zero, shifts out of range).
pub fn int_value(e: &Expr) -> Option<i128> {
    let ty = e.ty.scalar().filter(|s| s.is_integer())?;
    let value = match &e.kind {
        ExprKind::Literal(Literal::Int(v)) => *v,
        ExprKind::Cast { value, .. } => match &value.kind {
            // Out of the type's range a float saturates, as CUDA's cvt.rzi and the CPU
            // executor convert (C leaves it undefined); wrapping gave (int8 300.0) = 44.
            ExprKind::Literal(Literal::Float(x)) if x.is_finite() => {
                let (min, max) = int_range(ty);
                (x.trunc() as i128).clamp(min, max)
            }
            _ => int_value(value)?,
        },
        ExprKind::Builtin { op, args } => {
            let vals: Option<Vec<i128>> = args.iter().map(int_value).collect();
            let vals = vals?;
            match (op, vals.as_slice()) {
                (Builtin::Add, [a, b]) => a + b,
                (Builtin::Sub, [a, b]) => a - b,
                (Builtin::Mul, [a, b]) => a.checked_mul(*b)?,
                (Builtin::Div, [a, b]) if *b != 0 => a / b,
                (Builtin::Rem, [a, b]) if *b != 0 => a % b,
                (Builtin::FloorMod, [a, b]) if *b != 0 => match a % b {
                    r if r != 0 && ((r < 0) != (*b < 0)) => r + b,
                    r => r,
                },
                (Builtin::Neg, [a]) => -a,
                (Builtin::Min, [a, b]) => *a.min(b),
                (Builtin::Max, [a, b]) => *a.max(b),
                (Builtin::Abs, [a]) => a.abs(),
                (Builtin::BitAnd, [a, b]) => a & b,
                (Builtin::BitOr, [a, b]) => a | b,
                (Builtin::BitXor, [a, b]) => a ^ b,
                (Builtin::BitNot, [a]) => !a,
                (Builtin::Shl, [a, b]) if (0..64).contains(b) => a.checked_shl(*b as u32)?,
                (Builtin::Shr, [a, b]) if (0..64).contains(b) => a >> b,
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(wrap(value, ty))
}

/// `value` reduced modulo the width of `ty` and read back with its signedness, as C's
/// conversions to an integer type do.
pub fn wrap(value: i128, ty: ScalarType) -> i128 {
    let bits = ty.size() * 8;
    let modulus = 1i128 << bits;
    let mut v = value.rem_euclid(modulus);
    let (_, max) = int_range(ty);
    if v > max {
        v -= modulus;
    }
    v
}

/// `e` folded to a literal (or a constructor of literals), when it is a constant a global can be
/// initialized with: literals, negated literals, casts of constants, integer arithmetic on
/// constants, and vector or structure constructors of those.
pub fn fold_initializer(e: &Expr) -> Option<Expr> {
    let literal = |lit: Literal| {
        Some(Expr {
            kind: ExprKind::Literal(lit),
            ty: e.ty.clone(),
            span: e.span.clone(),
        })
    };
    if let Some(v) = int_value(e) {
        return literal(Literal::Int(v));
    }
    match &e.kind {
        ExprKind::Literal(_) => Some(e.clone()),
        ExprKind::Construct(parts) => {
            let parts: Option<Vec<Expr>> = parts.iter().map(fold_initializer).collect();
            Some(Expr {
                kind: ExprKind::Construct(parts?),
                ty: e.ty.clone(),
                span: e.span.clone(),
            })
        }
        ExprKind::Builtin {
            op: Builtin::Neg,
            args,
        } if args.len() == 1 => match fold_initializer(&args[0])?.kind {
            ExprKind::Literal(Literal::Float(x)) => literal(Literal::Float(-x)),
            _ => None,
        },
        ExprKind::Cast { value, .. } => {
            let inner = fold_initializer(value)?;
            let ExprKind::Literal(lit) = inner.kind else {
                return None;
            };
            let target = e.ty.scalar()?;
            match lit {
                Literal::Int(v) if !target.is_integer() => literal(Literal::Float(v as f64)),
                Literal::Float(x) if !target.is_integer() => {
                    literal(Literal::Float(round_to(x, target)))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// `x` rounded to the precision of a floating type (`float` rounds through `f32`; the reduced
/// types are rounded by the back ends when they print or store them).
fn round_to(x: f64, ty: ScalarType) -> f64 {
    match ty {
        ScalarType::Float => x as f32 as f64,
        _ => x,
    }
}

/// True for a `bool`, number or vector type a constant can have.
pub fn is_constant_type(ty: &Type) -> bool {
    !matches!(
        ty,
        Type::Void
            | Type::Pointer(_)
            | Type::CurandStateXorwow
            | Type::TextureObject
            | Type::SurfaceObject
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_like_c() {
        assert_eq!(wrap(-1, ScalarType::UInt), 4_294_967_295);
        assert_eq!(wrap(256, ScalarType::UInt8), 0);
        assert_eq!(wrap(128, ScalarType::Int8), -128);
        assert_eq!(wrap(5, ScalarType::Int), 5);
    }

    #[test]
    fn floats_out_of_an_integer_types_range_saturate() {
        let cast = |x: f64, to: ScalarType| Expr {
            kind: ExprKind::Cast {
                value: Box::new(Expr {
                    kind: ExprKind::Literal(Literal::Float(x)),
                    ty: Type::Scalar(ScalarType::Double),
                    span: crate::span::Span::generated(),
                }),
                implicit: false,
            },
            ty: Type::Scalar(to),
            span: crate::span::Span::generated(),
        };
        assert_eq!(int_value(&cast(300.0, ScalarType::Int8)), Some(127));
        assert_eq!(int_value(&cast(-300.7, ScalarType::Int8)), Some(-128));
        assert_eq!(int_value(&cast(-1.0, ScalarType::UInt)), Some(0));
        assert_eq!(
            int_value(&cast(1e30, ScalarType::Int64)),
            Some(i128::from(i64::MAX))
        );
        assert_eq!(int_value(&cast(-7.9, ScalarType::Int)), Some(-7));
    }
}
