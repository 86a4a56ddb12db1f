//! Scalar semantics: one canonical value of a kind through C's unary, floating and math
//! operations.

use crate::bytecode::{BinOp, UnOp};
use crate::value::{Kind, canon, from_f32, to_f32};
use chorus_lang::ir::MathFn;

/// A unary operation on one canonical value (integer `Recip` of 0 gives 0; the lane version
/// faults instead).
pub(crate) fn unary(op: UnOp, kind: Kind, x: u64) -> u64 {
    if kind.is_float() {
        if kind == Kind::F64 {
            let v = f64::from_bits(x);
            return match op {
                UnOp::Neg => (-v).to_bits(),
                UnOp::Abs => v.abs().to_bits(),
                UnOp::Recip => (1.0 / v).to_bits(),
                UnOp::Saturate => saturate64(v).to_bits(),
                UnOp::DoubleToIntRn => v.round_ties_even() as i32 as i64 as u64,
                UnOp::Not => (v == 0.0) as u64,
                _ => x,
            };
        }
        let v = to_f32(kind, x);
        return match op {
            UnOp::Neg => from_f32(kind, -v),
            UnOp::Abs => from_f32(kind, v.abs()),
            UnOp::Recip => from_f32(kind, 1.0 / v),
            UnOp::Saturate => from_f32(kind, saturate64(v as f64) as f32),
            UnOp::DoubleToIntRn => (v as f64).round_ties_even() as i32 as i64 as u64,
            UnOp::Not => (v == 0.0) as u64,
            _ => x,
        };
    }
    let wide = kind.size() == 8;
    match op {
        UnOp::Neg => canon(kind, x.wrapping_neg()),
        UnOp::Not => (x == 0) as u64,
        UnOp::BitNot => canon(kind, !x),
        UnOp::Abs if kind.is_signed() => canon(kind, (x as i64).wrapping_abs() as u64),
        UnOp::Abs => x,
        UnOp::Recip => {
            if x == 0 {
                0
            } else if kind.is_signed() {
                canon(kind, 1i64.wrapping_div(x as i64) as u64)
            } else {
                1 / x
            }
        }
        UnOp::Saturate => x,
        UnOp::DoubleToIntRn => canon(Kind::I32, x),
        UnOp::Clz => {
            (if wide {
                x.leading_zeros()
            } else {
                (x as u32).leading_zeros()
            }) as u64
        }
        UnOp::Popc => {
            (if wide {
                x.count_ones()
            } else {
                (x as u32).count_ones()
            }) as u64
        }
        UnOp::Brev => canon(
            kind,
            if wide {
                x.reverse_bits()
            } else {
                (x as u32).reverse_bits() as u64
            },
        ),
        UnOp::Ffs => {
            let v = if wide { x } else { x as u32 as u64 };
            if v == 0 {
                0
            } else {
                v.trailing_zeros() as u64 + 1
            }
        }
    }
}

pub(crate) fn saturate64(v: f64) -> f64 {
    if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) }
}

/// Floating operations other than the four arithmetic ones; comparisons give `bool` bits.
#[inline(always)]
pub(crate) fn float_binary(op: BinOp, a: f64, b: f64, round: impl Fn(f64) -> u64) -> u64 {
    match op {
        BinOp::Rem => round(a % b),
        BinOp::FloorMod => {
            let r = a % b;
            round(if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
                r + b
            } else {
                r
            })
        }
        BinOp::Min => round(a.min(b)),
        BinOp::Max => round(a.max(b)),
        BinOp::Eq => (a == b) as u64,
        BinOp::Ne => (a != b) as u64,
        BinOp::Lt => (a < b) as u64,
        BinOp::Gt => (a > b) as u64,
        BinOp::Le => (a <= b) as u64,
        BinOp::Ge => (a >= b) as u64,
        BinOp::Add => round(a + b),
        BinOp::Sub => round(a - b),
        BinOp::Mul => round(a * b),
        BinOp::Div => round(a / b),
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => 0,
    }
}

pub(crate) fn fma(kind: Kind, a: u64, b: u64, c: u64) -> u64 {
    match kind {
        Kind::F64 => f64::from_bits(a)
            .mul_add(f64::from_bits(b), f64::from_bits(c))
            .to_bits(),
        k if k.is_float() => from_f32(k, to_f32(k, a).mul_add(to_f32(k, b), to_f32(k, c))),
        k => canon(k, a.wrapping_mul(b).wrapping_add(c)),
    }
}

pub(crate) fn math1(f: MathFn, kind: Kind, x: u64) -> u64 {
    if kind == Kind::F64 {
        return math_f64(f, f64::from_bits(x)).to_bits();
    }
    from_f32(kind, math_f32(f, to_f32(kind, x)))
}

// One table of the unary math functions for `double` and for `float` (which computes in `f32`,
// as CUDA's `expf` and the like do, not in `f64` rounded back).
macro_rules! math_in {
    ($name:ident, $t:ty) => {
        pub(crate) fn $name(f: MathFn, x: $t) -> $t {
            match f {
                MathFn::Exp | MathFn::FastExp => x.exp(),
                MathFn::Exp2 => x.exp2(),
                MathFn::Expm1 => x.exp_m1(),
                MathFn::Log | MathFn::FastLog => x.ln(),
                MathFn::Log2 | MathFn::FastLog2 => x.log2(),
                MathFn::Log10 => x.log10(),
                MathFn::Log1p => x.ln_1p(),
                MathFn::Sin | MathFn::FastSin => x.sin(),
                MathFn::Cos | MathFn::FastCos => x.cos(),
                MathFn::Tan => x.tan(),
                MathFn::Asin => x.asin(),
                MathFn::Acos => x.acos(),
                MathFn::Atan => x.atan(),
                MathFn::Sinh => x.sinh(),
                MathFn::Cosh => x.cosh(),
                MathFn::Tanh => x.tanh(),
                MathFn::Sqrt => x.sqrt(),
                MathFn::Rsqrt => 1.0 / x.sqrt(),
                MathFn::Cbrt => x.cbrt(),
                MathFn::Floor => x.floor(),
                MathFn::Ceil => x.ceil(),
                MathFn::Round => x.round(),
                MathFn::Trunc => x.trunc(),
                // In `f64` for both: `erf` and `erfc` are this crate's own.
                MathFn::Erf => crate::math::erf(x as f64) as $t,
                MathFn::Erfc => crate::math::erfc(x as f64) as $t,
                MathFn::Atan2 | MathFn::Pow | MathFn::Hypot => <$t>::NAN,
            }
        }
    };
}

math_in!(math_f64, f64);
math_in!(math_f32, f32);

pub(crate) fn math2(f: MathFn, kind: Kind, a: u64, b: u64) -> u64 {
    if kind == Kind::F64 {
        let (a, b) = (f64::from_bits(a), f64::from_bits(b));
        return match f {
            MathFn::Atan2 => a.atan2(b),
            MathFn::Pow => a.powf(b),
            _ => a.hypot(b),
        }
        .to_bits();
    }
    let (a, b) = (to_f32(kind, a), to_f32(kind, b));
    from_f32(
        kind,
        match f {
            MathFn::Atan2 => a.atan2(b),
            MathFn::Pow => a.powf(b),
            _ => a.hypot(b),
        },
    )
}
