//! Math functions Rust's standard library lacks (`erf`, `erfc`).
//!
//! Results may differ from CUDA's by a few ulp, as all math functions of the CPU executor may.

const FRAC_2_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;

/// The error function: the Maclaurin series below 2.5, else `1 - erfc`.
pub(crate) fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a < 2.5 {
        erf_series(a)
    } else {
        1.0 - erfc_fraction(a)
    };
    r.copysign(x)
}

/// The complementary error function: `1 - erf` near zero, a continued fraction beyond.
pub(crate) fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 0.5 {
        return 1.0 - erf(x);
    }
    erfc_fraction(x)
}

/// erf(x) = 2/√π · Σ (-1)^n x^(2n+1) / (n! (2n+1)).
fn erf_series(x: f64) -> f64 {
    let x2 = x * x;
    let mut term = x;
    let mut sum = x;
    let mut n = 0.0;
    loop {
        n += 1.0;
        term *= -x2 / n;
        let add = term / (2.0 * n + 1.0);
        sum += add;
        if add.abs() <= 1e-17 * sum.abs() {
            break;
        }
    }
    sum * FRAC_2_SQRT_PI
}

/// erfc(x) for x ≥ 0.5 by Lentz's evaluation of the continued fraction
/// erfc(x) = exp(-x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))).
fn erfc_fraction(x: f64) -> f64 {
    if x > 27.3 {
        return 0.0;
    }
    let tiny = 1e-300;
    let mut f = x;
    let mut c = x;
    let mut d = 0.0;
    for k in 1..5000 {
        let a = k as f64 / 2.0;
        d = x + a * d;
        d = if d.abs() < tiny { tiny } else { d };
        c = x + a / c;
        c = if c.abs() < tiny { tiny } else { c };
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (-x * x).exp() / (f * std::f64::consts::PI.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-14 * b.abs().max(1e-300);
        assert!(close(erf(0.5), 0.520_499_877_813_046_5));
        assert!(close(erf(1.0), 0.842_700_792_949_714_9));
        assert!(close(erf(-2.0), -0.995_322_265_018_952_7));
        assert!(close(erf(3.0), 0.999_977_909_503_001_4));
        assert!(close(erfc(3.0), 2.209_049_699_858_544e-5));
        assert!(close(erfc(1.0), 0.157_299_207_050_285_13));
        assert!(close(erfc(0.1), 0.887_537_083_981_715));
        assert!(close(erfc(10.0), 2.088_487_583_762_545e-45));
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(f64::INFINITY), 1.0);
        assert_eq!(erfc(f64::INFINITY), 0.0);
        assert!(close(erfc(-1.0), 1.842_700_792_949_715));
    }
}
