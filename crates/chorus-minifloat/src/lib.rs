//! The small float formats of Chorus, one definition for the kernel language (its `fp8` and
//! `fp4` types, constant folding), the CPU executor and the CUDA library bindings (cuBLASLt's
//! and NCCL's FP8): [`Fp8E4M3`] (`__nv_fp8_e4m3`), [`Fp8E5M2`] (`__nv_fp8_e5m2`) and
//! [`Fp4E2M1`] (`__nv_fp4_e2m1`), each its raw bits in one byte, with CUDA's conversions:
//! round to nearest, ties to even, saturating to the largest finite value (`__NV_SATFINITE`).
//!
//! ```
//! use chorus_minifloat::{Fp8E4M3, Fp8E5M2};
//! assert_eq!(Fp8E4M3::from_f32(1.0).0, 0x38);
//! assert_eq!(Fp8E4M3::from_f32(1000.0).to_f32(), Fp8E4M3::MAX);
//! assert_eq!(Fp8E5M2::from_f64(-3.0).to_f32(), -3.0);
//! ```

use bytemuck::{Pod, Zeroable};

/// A format of `mantissa_bits` mantissa bits and exponent `bias`, whose non-negative codes 0 to
/// `max_code` are its finite non-negative values in increasing order (subnormals first).
#[derive(Clone, Copy)]
struct Format {
    mantissa_bits: i32,
    bias: i32,
    max_code: u8,
}

const E4M3: Format = Format {
    mantissa_bits: 3,
    bias: 7,
    max_code: 0x7e,
};
const E5M2: Format = Format {
    mantissa_bits: 2,
    bias: 15,
    max_code: 0x7b,
};
const E2M1: Format = Format {
    mantissa_bits: 1,
    bias: 1,
    max_code: 0x7,
};

/// 2^`k` for −126 ≤ k ≤ 127, exactly.
const fn power_of_two(k: i32) -> f32 {
    f32::from_bits(((127 + k) as u32) << 23)
}

impl Format {
    /// The value of non-negative finite `code` (exact in `f32`).
    const fn value(self, code: u8) -> f32 {
        let m = self.mantissa_bits;
        let (exponent, mantissa) = ((code as i32) >> m, (code as i32) & ((1 << m) - 1));
        let (significand, exponent) = if exponent == 0 {
            (mantissa, 1) // subnormal: no implicit one, the lowest binade's exponent
        } else {
            (mantissa + (1 << m), exponent)
        };
        significand as f32 * power_of_two(exponent - self.bias - m)
    }

    /// The code of `a` (not NaN, not negative): the nearest value, ties to the even code,
    /// saturating at `max_code` (infinity too).
    ///
    /// Exact: within a binade (the subnormals share the lowest's spacing) the values are evenly
    /// spaced and the codes consecutive, so the code is the binade's first code plus `a` in
    /// units of the binade's spacing, rounded half to even; rounding up past the binade's last
    /// value lands on the next binade's first code. Scaling by a power of two is exact in f64.
    fn code(self, a: f64) -> u8 {
        let m = self.mantissa_bits;
        let a = a.min(f64::from(self.value(self.max_code)));
        // The unbiased exponent of a's binade (from its bits: exact), no lower than the
        // format's subnormals' (1 − bias).
        let exp = (((a.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(1 - self.bias);
        // 2^(m − exp), a normal f64 for every format here (|m − exp| < 20).
        let scale = f64::from_bits(((1023 + m - exp) as u64) << 52);
        let units = (a * scale).round_ties_even() as i32; // at most 2^(m+1)
        (((exp + self.bias - 1) << m) + units) as u8 // ≤ max_code: a ≤ its value, itself a code
    }

    /// The code of `x` with its sign in `sign_bit` (the top bit of the format's code); NaN
    /// gives `nan_code`.
    fn encode(self, x: f64, sign_bit: u8, nan_code: u8) -> u8 {
        if x.is_nan() {
            return nan_code;
        }
        let sign = if x.is_sign_negative() { sign_bit } else { 0 };
        sign | self.code(x.abs())
    }

    /// Every 7-bit magnitude code's value (NaN and infinity codes are fixed up by the caller).
    const fn magnitudes(self) -> [f32; 128] {
        let mut values = [0.0; 128];
        let mut code = 0;
        while code < 128 {
            values[code] = self.value(code as u8);
            code += 1;
        }
        values
    }
}

/// E4M3's magnitudes by code (`to_f32` is a lookup).
static E4M3_MAGNITUDES: [f32; 128] = E4M3.magnitudes();
/// E5M2's magnitudes by code.
static E5M2_MAGNITUDES: [f32; 128] = E5M2.magnitudes();

/// `x` with the sign of `negative`.
fn signed(x: f32, negative: bool) -> f32 {
    if negative { -x } else { x }
}

/// FP8 E4M3 (`__nv_fp8_e4m3`, OCP's E4M3FN): 4 exponent bits (bias 7), 3 mantissa bits, no
/// infinities; `0x7f` and `0xff` are NaN. The type of the kernel language's `fp8`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
#[repr(transparent)]
pub struct Fp8E4M3(pub u8);

impl Fp8E4M3 {
    /// The largest finite value, 448 (`0x7e`); larger values and infinities saturate to it.
    pub const MAX: f32 = 448.0;

    /// `x` rounded as `__nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E4M3)`: to nearest even,
    /// finite overflow and infinities to ±448 (`0x7e`), NaN to `0x7f`.
    pub fn from_f64(x: f64) -> Fp8E4M3 {
        Fp8E4M3(E4M3.encode(x, 0x80, 0x7f))
    }

    /// `x` rounded as [`Fp8E4M3::from_f64`] (`__nv_cvt_float_to_fp8`; f32 widens exactly).
    pub fn from_f32(x: f32) -> Fp8E4M3 {
        Fp8E4M3::from_f64(f64::from(x))
    }

    /// The value (exact in `f32`).
    pub fn to_f32(self) -> f32 {
        let magnitude = self.0 & 0x7f;
        if magnitude == 0x7f {
            return f32::NAN;
        }
        signed(E4M3_MAGNITUDES[usize::from(magnitude)], self.0 & 0x80 != 0)
    }

    /// The value as `f64`.
    pub fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
}

/// FP8 E5M2 (`__nv_fp8_e5m2`): 5 exponent bits (bias 15), 2 mantissa bits, IEEE-style (the top
/// byte of an IEEE half): `0x7c` is infinity, `0x7d` to `0x7f` NaN.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
#[repr(transparent)]
pub struct Fp8E5M2(pub u8);

impl Fp8E5M2 {
    /// The largest finite value, 57344 (`0x7b`); larger values and infinities saturate to it.
    pub const MAX: f32 = 57344.0;

    /// `x` rounded as `__nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E5M2)`: to nearest even,
    /// finite overflow and infinities to ±57344 (`0x7b`), NaN to `0x7f`.
    pub fn from_f64(x: f64) -> Fp8E5M2 {
        Fp8E5M2(E5M2.encode(x, 0x80, 0x7f))
    }

    /// `x` rounded as [`Fp8E5M2::from_f64`].
    pub fn from_f32(x: f32) -> Fp8E5M2 {
        Fp8E5M2::from_f64(f64::from(x))
    }

    /// The value (exact in `f32`; `±0x7c` are ±infinity).
    pub fn to_f32(self) -> f32 {
        let magnitude = self.0 & 0x7f;
        let value = match magnitude {
            0x7c => f32::INFINITY,
            0x7d.. => return f32::NAN,
            _ => E5M2_MAGNITUDES[usize::from(magnitude)],
        };
        signed(value, self.0 & 0x80 != 0)
    }

    /// The value as `f64`.
    pub fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
}

/// FP4 E2M1 (`__nv_fp4_e2m1`) in the low four bits of a byte: 2 exponent bits (bias 1), 1
/// mantissa bit, the values ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}, no infinity or NaN. The type of the
/// kernel language's `fp4`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
#[repr(transparent)]
pub struct Fp4E2M1(pub u8);

impl Fp4E2M1 {
    /// The largest finite value, 6 (`0x7`).
    pub const MAX: f32 = 6.0;

    /// `x` rounded as `__nv_cvt_double_to_fp4(x, __NV_E2M1, cudaRoundNearest)`: to nearest
    /// even, saturating to ±6; NaN gives `0x7` (+6).
    pub fn from_f64(x: f64) -> Fp4E2M1 {
        Fp4E2M1(E2M1.encode(x, 8, 0x7))
    }

    /// `x` rounded as [`Fp4E2M1::from_f64`].
    pub fn from_f32(x: f32) -> Fp4E2M1 {
        Fp4E2M1::from_f64(f64::from(x))
    }

    /// The value of the low four bits (exact in `f32`).
    pub fn to_f32(self) -> f32 {
        signed(E2M1.value(self.0 & 7), self.0 & 8 != 0)
    }

    /// The value as `f64`.
    pub fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp8(x: f64) -> u8 {
        Fp8E4M3::from_f64(x).0
    }

    fn e5m2(x: f64) -> u8 {
        Fp8E5M2::from_f64(x).0
    }

    fn fp4(x: f64) -> u8 {
        Fp4E2M1::from_f64(x).0
    }

    /// The nearest code by exhaustive search, ties to the even code, saturating past the
    /// largest finite value: the definition the arithmetic conversions must meet.
    fn nearest_code(x: f64, codes: u8, value: impl Fn(u8) -> f32, largest: (f64, u8)) -> u8 {
        let negative = x.is_sign_negative();
        let sign = if codes == 16 { 8 } else { 0x80 };
        if x.abs() >= largest.0 {
            return largest.1 | if negative { sign } else { 0 };
        }
        let mut best: Option<(u8, f64)> = None;
        for code in 0..codes {
            let v = f64::from(value(code));
            if !v.is_finite() || v.is_sign_negative() != negative {
                continue;
            }
            let d = (v - x).abs();
            if best.is_none_or(|(b, bd)| d < bd || (d == bd && code & 1 == 0 && b & 1 == 1)) {
                best = Some((code, d));
            }
        }
        best.map_or(0, |(code, _)| code)
    }

    #[test]
    fn fp8_rounds_to_nearest_even_and_saturates() {
        assert_eq!(fp8(0.0), 0x00);
        assert_eq!(fp8(-0.0), 0x80);
        assert_eq!(fp8(1.0), 0x38);
        assert_eq!(fp8(1.5), 0x3C);
        assert_eq!(fp8(-2.0), 0xc0);
        assert_eq!(fp8(448.0), 0x7e);
        assert_eq!(fp8(460.0), 0x7e);
        assert_eq!(fp8(464.0), 0x7e);
        assert_eq!(fp8(1e9), 0x7e);
        assert_eq!(fp8(-1e300), 0xfe);
        assert_eq!(fp8(f64::INFINITY), 0x7e);
        assert_eq!(fp8(f64::NEG_INFINITY), 0xfe);
        assert_eq!(fp8(f64::NAN), 0x7f);
        assert_eq!(fp8(f64::from_bits(1)), 0x00); // an f64 subnormal
        // Smallest subnormal 2^-9, half of it rounds to even (0), a bit more rounds up.
        assert_eq!(fp8((2.0f64).powi(-9)), 0x01);
        assert_eq!(fp8((2.0f64).powi(-10)), 0x00);
        assert_eq!(fp8((2.0f64).powi(-10) * 1.01), 0x01);
        // 1.0625 is halfway between 1.0 (even) and 1.125.
        assert_eq!(fp8(1.0625), 0x38);
        assert_eq!(fp8(1.1875), 0x3a);
        // 0.3 → 0.3125 (exponent -2, mantissa 010).
        assert_eq!(fp8(0.3), 0x2a);
        assert_eq!(Fp8E4M3(0x2a).to_f32(), 0.3125);
        assert_eq!(Fp8E4M3::MAX, Fp8E4M3(0x7e).to_f32());
        assert_eq!(Fp8E4M3(0x01).to_f32(), 2f32.powi(-9));
        assert_eq!(Fp8E4M3(0x08).to_f32(), 2f32.powi(-6));
        assert_eq!(Fp8E4M3(0xb8).to_f32(), -1.0);
        assert_eq!(Fp8E4M3::from_f32(1000.0).to_f32(), 448.0);
        for b in 0..=255u8 {
            if b & 0x7f == 0x7f {
                assert!(Fp8E4M3(b).to_f32().is_nan());
                continue;
            }
            assert_eq!(fp8(Fp8E4M3(b).to_f64()), b, "code {b:#x}");
        }
    }

    #[test]
    fn e5m2_is_the_top_byte_of_a_half_and_saturates() {
        assert_eq!(e5m2(1.0), 0x3c);
        assert_eq!(e5m2(-3.0), 0xc2);
        assert_eq!(e5m2(57344.0), 0x7b);
        assert_eq!(e5m2(1e6), 0x7b);
        assert_eq!(e5m2(f64::NEG_INFINITY), 0xfb);
        assert_eq!(e5m2(f64::NAN), 0x7f);
        assert_eq!(Fp8E5M2(0x7c).to_f32(), f32::INFINITY);
        assert_eq!(Fp8E5M2(0xfc).to_f32(), f32::NEG_INFINITY);
        assert_eq!(Fp8E5M2::MAX, Fp8E5M2(0x7b).to_f32());
        assert_eq!(Fp8E5M2(0x01).to_f32(), 2f32.powi(-16));
        for b in 0..=255u8 {
            // An IEEE half whose low byte is zero has the same value.
            let half = half::f16::from_bits(u16::from(b) << 8).to_f32();
            if half.is_nan() {
                assert!(Fp8E5M2(b).to_f32().is_nan(), "code {b:#x}");
                continue;
            }
            assert_eq!(Fp8E5M2(b).to_f32(), half, "code {b:#x}");
            if half.is_finite() {
                assert_eq!(e5m2(Fp8E5M2(b).to_f64()), b, "code {b:#x}");
            }
        }
    }

    #[test]
    fn fp4_rounds_to_nearest_even_and_saturates() {
        let cases = [
            (0.0, 0x0),
            (0.25, 0x0),
            (0.3, 0x1),
            (0.75, 0x2),
            (1.25, 0x2),
            (1.3, 0x3),
            (1.5, 0x3),
            (2.5, 0x4),
            (2.6, 0x5),
            (-3.0, 0xD),
            (5.0, 0x6),
            (5.5, 0x7),
            (6.0, 0x7),
            (100.0, 0x7),
            (-1.0, 0xa),
            (-100.0, 0xf),
            (f64::INFINITY, 0x7),
            (f64::NEG_INFINITY, 0xF),
            (f64::NAN, 0x7),
        ];
        for (x, code) in cases {
            assert_eq!(fp4(x), code, "{x}");
        }
        assert_eq!(Fp4E2M1::MAX, Fp4E2M1(7).to_f32());
        let magnitudes: Vec<f32> = (0..8).map(|b| Fp4E2M1(b).to_f32()).collect();
        assert_eq!(magnitudes, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
        for b in 0..16u8 {
            assert_eq!(fp4(Fp4E2M1(b).to_f64()), b);
        }
    }

    /// Between and around every pair of neighbouring codes (their midpoints, a hair either
    /// side, and a grid across the whole range), the arithmetic equals the exhaustive search,
    /// for all three formats; f32 inputs convert as their f64 values.
    #[test]
    fn conversions_equal_the_nearest_code_search() {
        let fp8_value = |c: u8| Fp8E4M3(c).to_f32();
        let e5m2_value = |c: u8| Fp8E5M2(c).to_f32();
        let fp4_value = |c: u8| Fp4E2M1(c).to_f32();
        let mut values: Vec<f64> = (-5000..=5000).map(|i| f64::from(i) * 0.0973).collect();
        for (value, top) in [
            (&fp8_value as &dyn Fn(u8) -> f32, 0x7e),
            (&e5m2_value, 0x7b),
        ] {
            for code in 0..top {
                let (v, next) = (f64::from(value(code)), f64::from(value(code + 1)));
                let mid = (v + next) / 2.0;
                values.extend([v, mid, mid * (1.0 + 1e-12), mid * (1.0 - 1e-12)]);
            }
        }
        values.extend([f64::MAX, f64::MIN_POSITIVE, 1e-300, 70000.0]);
        for x in values.iter().flat_map(|&v| [v, -v]) {
            assert_eq!(
                fp8(x),
                nearest_code(x, 255, fp8_value, (448.0, 0x7e)),
                "fp8 {x}"
            );
            assert_eq!(
                e5m2(x * 64.0),
                nearest_code(x * 64.0, 255, e5m2_value, (57344.0, 0x7b)),
                "e5m2 {}",
                x * 64.0
            );
            let small = x / 64.0;
            assert_eq!(
                fp4(small),
                nearest_code(small, 16, fp4_value, (6.0, 0x7)),
                "fp4 {small}"
            );
            let single = x as f32;
            assert_eq!(Fp8E4M3::from_f32(single).0, fp8(f64::from(single)));
        }
    }
}
