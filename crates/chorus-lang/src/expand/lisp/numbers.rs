//! Macro-time numbers: Common Lisp's contagion between integers and floats, C's suffix
//! rules for integer literals, arithmetic, rounding division and comparison.

use super::*;

/// A number, for arithmetic.
#[derive(Clone, Copy, Debug)]
pub(super) enum Num {
    Int(i128, IntSuffix),
    Float(f64, FloatPrecision),
}

impl Num {
    pub(super) fn as_f64(self) -> f64 {
        match self {
            Num::Int(v, _) => v as f64,
            Num::Float(v, _) => v,
        }
    }
}

fn suffix_rank(s: IntSuffix) -> u8 {
    match s {
        IntSuffix::None => 0,
        IntSuffix::U => 1,
        IntSuffix::L => 2,
        IntSuffix::UL => 3,
    }
}

/// C's usual arithmetic conversions, for the suffixes the kernel language has.
fn wider_suffix(a: IntSuffix, b: IntSuffix) -> IntSuffix {
    if suffix_rank(a) >= suffix_rank(b) {
        a
    } else {
        b
    }
}

pub(super) fn float_precision(a: Num, b: Num) -> FloatPrecision {
    let double = |n: Num| matches!(n, Num::Float(_, FloatPrecision::Double));
    if double(a) || double(b) {
        FloatPrecision::Double
    } else {
        FloatPrecision::Single
    }
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Rounding {
    Floor,
    Ceiling,
    Truncate,
    Round,
}

impl<'a, 'c> Interp<'a, 'c> {
    pub(super) fn int_arg(&self, value: &Value, span: &Span) -> Result<i128> {
        match value.as_form().map(|f| &f.kind) {
            Some(FormKind::Int { value, .. }) => Ok(*value),
            _ => Err(self.error(span, format!("expected an integer, got `{value}`"))),
        }
    }

    pub(super) fn num_arg(&self, value: &Value, span: &Span) -> Result<Num> {
        match value.as_form().map(|f| &f.kind) {
            Some(FormKind::Int { value, suffix }) => Ok(Num::Int(*value, *suffix)),
            Some(FormKind::Float { value, precision }) => Ok(Num::Float(*value, *precision)),
            _ => Err(self.error(span, format!("expected a number, got `{value}`"))),
        }
    }

    pub(super) fn num_value(&self, n: Num, span: &Span) -> Result<Value> {
        match n {
            Num::Int(v, suffix) if v.unsigned_abs() <= u64::MAX as u128 => {
                Ok(self.data(FormKind::Int { value: v, suffix }))
            }
            Num::Int(..) => {
                Err(self.error(span, "integer overflow: the result does not fit in 64 bits"))
            }
            Num::Float(v, precision) => {
                let v = match precision {
                    FloatPrecision::Single => f64::from(v as f32),
                    FloatPrecision::Double => v,
                };
                if v.is_finite() {
                    Ok(self.data(FormKind::Float {
                        value: v,
                        precision,
                    }))
                } else {
                    Err(self.error(span, "the float result is infinite or not a number"))
                }
            }
        }
    }

    pub(super) fn arith(&self, op: &str, a: Num, b: Num, span: &Span) -> Result<Num> {
        let overflow = || self.error(span, "integer overflow: the result does not fit in 64 bits");
        Ok(match (a, b) {
            (Num::Int(x, sx), Num::Int(y, sy)) => {
                let suffix = wider_suffix(sx, sy);
                let v = match op {
                    "+" => x.checked_add(y),
                    "-" => x.checked_sub(y),
                    "*" => x.checked_mul(y),
                    _ => {
                        if y == 0 {
                            return Err(self.error(span, "division by zero"));
                        }
                        if x % y != 0 {
                            return Err(self.error(
                                span,
                                format!(
                                    "(/ {x} {y}) on integers would be a ratio, which the kernel \
                                     language has no type for; use (floor {x} {y}), (truncate {x} {y}) \
                                     or a float operand"
                                ),
                            ));
                        }
                        Some(x / y)
                    }
                };
                Num::Int(v.ok_or_else(overflow)?, suffix)
            }
            _ => {
                let (x, y) = (a.as_f64(), b.as_f64());
                if op == "/" && y == 0.0 {
                    return Err(self.error(span, "division by zero"));
                }
                let v = match op {
                    "+" => x + y,
                    "-" => x - y,
                    "*" => x * y,
                    _ => x / y,
                };
                Num::Float(v, float_precision(a, b))
            }
        })
    }

    pub(super) fn round_div(&self, mode: Rounding, a: Num, b: Num, span: &Span) -> Result<Value> {
        let value = match (a, b) {
            (Num::Int(x, _), Num::Int(y, _)) => {
                if y == 0 {
                    return Err(self.error(span, "division by zero"));
                }
                let (q, r) = (x / y, x % y);
                let negative = (r != 0) && ((r < 0) != (y < 0));
                match mode {
                    Rounding::Truncate => q,
                    Rounding::Floor => q - i128::from(negative),
                    Rounding::Ceiling => q + i128::from(r != 0 && !negative),
                    Rounding::Round => {
                        // To nearest, ties to even, as Common Lisp's `round`.
                        let twice = 2 * r.abs();
                        let toward = if (r < 0) != (y < 0) { -1 } else { 1 };
                        if twice > y.abs() || (twice == y.abs() && q % 2 != 0) {
                            q + toward
                        } else {
                            q
                        }
                    }
                }
            }
            _ => {
                let (x, y) = (a.as_f64(), b.as_f64());
                if y == 0.0 {
                    return Err(self.error(span, "division by zero"));
                }
                let q = x / y;
                let r = match mode {
                    Rounding::Floor => q.floor(),
                    Rounding::Ceiling => q.ceil(),
                    Rounding::Truncate => q.trunc(),
                    Rounding::Round => q.round_ties_even(),
                };
                if !r.is_finite() || r.abs() > u64::MAX as f64 {
                    return Err(self.error(span, "the result does not fit in a 64-bit integer"));
                }
                r as i128
            }
        };
        self.num_value(Num::Int(value, IntSuffix::None), span)
    }

    pub(super) fn compare(&self, op: &str, a: Num, b: Num) -> bool {
        let ordering = match (a, b) {
            (Num::Int(x, _), Num::Int(y, _)) => x.partial_cmp(&y),
            _ => a.as_f64().partial_cmp(&b.as_f64()),
        };
        let Some(o) = ordering else { return false };
        match op {
            "=" => o.is_eq(),
            "/=" => o.is_ne(),
            "<" => o.is_lt(),
            ">" => o.is_gt(),
            "<=" => o.is_le(),
            _ => o.is_ge(),
        }
    }
}
