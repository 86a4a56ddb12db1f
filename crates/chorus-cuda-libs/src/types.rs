//! Element types and matrix descriptions shared by the libraries, and the bounds checks made
//! before every call.

use crate::error::{Error, Result};
use bytemuck::{Pod, Zeroable};
use std::sync::LazyLock;

/// A complex number laid out as CUDA's `cuComplex` / `cuDoubleComplex` (`re`, then `im`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct Complex<T> {
    /// The real part.
    pub re: T,
    /// The imaginary part.
    pub im: T,
}

// SAFETY: two f32 (or f64), no padding; every bit pattern is valid.
unsafe impl Zeroable for Complex<f32> {}
// SAFETY: as above.
unsafe impl Pod for Complex<f32> {}
// SAFETY: as above.
unsafe impl Zeroable for Complex<f64> {}
// SAFETY: as above.
unsafe impl Pod for Complex<f64> {}

/// A single-precision complex number (`cuComplex`).
pub type C32 = Complex<f32>;
/// A double-precision complex number (`cuDoubleComplex`).
pub type C64 = Complex<f64>;

impl<T> Complex<T> {
    /// `re + im·i`.
    pub const fn new(re: T, im: T) -> Complex<T> {
        Complex { re, im }
    }
}

/// An 8-bit float in the E4M3 format (`__nv_fp8_e4m3`), as its raw bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
#[repr(transparent)]
pub struct F8E4M3(pub u8);

/// An 8-bit float in the E5M2 format (`__nv_fp8_e5m2`), as its raw bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
#[repr(transparent)]
pub struct F8E5M2(pub u8);

/// An 8-bit float format: exponent and mantissa bits, exponent bias, largest finite value,
/// and whether it has no infinities (E4M3's `fn` variant: one NaN pattern per sign, all ones)
/// or follows IEEE (E5M2).
struct Fp8Format {
    e: u32,
    m: u32,
    bias: i32,
    max: f32,
    finite_only: bool,
}

/// `__nv_fp8_e4m3`.
const E4M3: Fp8Format = Fp8Format {
    e: 4,
    m: 3,
    bias: 7,
    max: 448.0,
    finite_only: true,
};

/// `__nv_fp8_e5m2`.
const E5M2: Fp8Format = Fp8Format {
    e: 5,
    m: 2,
    bias: 15,
    max: 57344.0,
    finite_only: false,
};

/// The value of every E4M3 code, decoded once (`to_f32` is a lookup).
static E4M3_VALUES: LazyLock<[f32; 256]> = LazyLock::new(|| E4M3.values());

/// The value of every E5M2 code.
static E5M2_VALUES: LazyLock<[f32; 256]> = LazyLock::new(|| E5M2.values());

impl F8E4M3 {
    /// The nearest E4M3 value to `x` (saturating at ±448; NaN stays NaN).
    pub fn from_f32(x: f32) -> F8E4M3 {
        F8E4M3(E4M3.encode(x))
    }

    /// The value as f32.
    pub fn to_f32(self) -> f32 {
        E4M3_VALUES[usize::from(self.0)]
    }
}

impl F8E5M2 {
    /// The nearest E5M2 value to `x` (saturating at ±57344; NaN stays NaN).
    pub fn from_f32(x: f32) -> F8E5M2 {
        F8E5M2(E5M2.encode(x))
    }

    /// The value as f32.
    pub fn to_f32(self) -> f32 {
        E5M2_VALUES[usize::from(self.0)]
    }
}

impl Fp8Format {
    /// The value of code `bits`.
    fn decode(&self, bits: u8) -> f32 {
        let Fp8Format { e, m, bias, .. } = *self;
        let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
        let exp = ((bits >> m) & ((1 << e) - 1)) as i32;
        let man = (bits & ((1 << m) - 1)) as f32;
        let max_exp = (1 << e) - 1;
        if self.finite_only && exp == max_exp && man as u32 == (1 << m) - 1 {
            return f32::NAN;
        }
        if !self.finite_only && exp == max_exp {
            return if man == 0.0 {
                sign * f32::INFINITY
            } else {
                f32::NAN
            };
        }
        let scale = (1u32 << m) as f32;
        if exp == 0 {
            sign * man / scale * 2f32.powi(1 - bias)
        } else {
            sign * (1.0 + man / scale) * 2f32.powi(exp - bias)
        }
    }

    /// Every code's value.
    fn values(&self) -> [f32; 256] {
        std::array::from_fn(|code| self.decode(code as u8))
    }

    /// The nearest code to `x` (round to nearest, ties to the even code), saturating at
    /// `max`; NaN gives 0x7f (NaN in both formats).
    ///
    /// Exact in f32 arithmetic: |x| is scaled by a power of two to units of the last mantissa
    /// place of its binade (the subnormals' below the normals) and rounded half to even; as the
    /// codes are in value order, the binade's first code plus those units is the code, and a
    /// carry out of the mantissa lands on the next binade's first code. (A binary search over
    /// decoded codes took about 110 ns a value: a quarter of a minute for an 8192² FP8 GEMM's
    /// 134 M inputs.)
    fn encode(&self, x: f32) -> u8 {
        let Fp8Format { m, bias, max, .. } = *self;
        if x.is_nan() {
            return 0x7f;
        }
        let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
        let a = x.abs().min(max);
        // The unbiased exponent of a's binade, no lower than the 8-bit subnormals' (1 − bias).
        let exp = (((a.to_bits() >> 23) & 0xff) as i32 - 127).max(1 - bias);
        // 2^(m − exp), a normal f32 for both formats' exponents (−15 ≤ m − exp ≤ 16).
        let scale = f32::from_bits(((127 + m as i32 - exp) as u32) << 23);
        let units = (a * scale).round_ties_even() as u32; // at most 2^(m+1)
        let code = (((exp + bias - 1) as u32) << m) + units;
        sign | code as u8 // below 0x80: a ≤ max, itself a code
    }
}

/// How a matrix argument is used: as stored, transposed, or conjugate-transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transpose {
    /// `op(A) = A`.
    No,
    /// `op(A) = Aᵀ`.
    Yes,
    /// `op(A) = Aᴴ` (the same as [`Transpose::Yes`] for real types).
    Conjugate,
}

impl Transpose {
    /// The dimensions of `op(A)` for a stored `rows × cols` matrix.
    pub fn apply(self, rows: usize, cols: usize) -> (usize, usize) {
        match self {
            Transpose::No => (rows, cols),
            Transpose::Yes | Transpose::Conjugate => (cols, rows),
        }
    }
}

/// Which triangle of a symmetric or triangular matrix is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fill {
    /// The lower triangle.
    Lower,
    /// The upper triangle.
    Upper,
}

impl Fill {
    /// The other triangle (the same storage seen from the other major order).
    pub fn flipped(self) -> Fill {
        match self {
            Fill::Lower => Fill::Upper,
            Fill::Upper => Fill::Lower,
        }
    }
}

/// On which side a matrix multiplies (`trsm`, `symm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// `op(A)·X`.
    Left,
    /// `X·op(A)`.
    Right,
}

impl Side {
    /// The other side.
    pub fn flipped(self) -> Side {
        match self {
            Side::Left => Side::Right,
            Side::Right => Side::Left,
        }
    }
}

/// Whether a triangular matrix has ones on its diagonal (not read) or its stored diagonal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Diagonal {
    /// The stored diagonal.
    NonUnit,
    /// Ones, whatever is stored.
    Unit,
}

/// `value` as the `int` the libraries take, or an error naming `what`.
pub(crate) fn to_int(call: &'static str, what: &str, value: usize) -> Result<i32> {
    i32::try_from(value)
        .map_err(|_| Error::invalid(call, format!("{what} = {value} does not fit a 32-bit int")))
}

/// Checks that a column-major `rows × cols` matrix with leading dimension `ld` fits in `len`
/// elements: `ld ≥ max(1, rows)` and `ld·(cols−1) + rows ≤ len`.
pub(crate) fn check_matrix(
    call: &'static str,
    name: &str,
    len: usize,
    rows: usize,
    cols: usize,
    ld: usize,
) -> Result<()> {
    if ld < rows.max(1) {
        return Err(Error::invalid(
            call,
            format!("leading dimension of {name} = {ld} < max(1, rows = {rows})"),
        ));
    }
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let needed = ld
        .checked_mul(cols - 1)
        .and_then(|n| n.checked_add(rows))
        .ok_or_else(|| Error::invalid(call, format!("{name} overflows the address space")))?;
    if needed > len {
        return Err(Error::invalid(
            call,
            format!(
                "{name} is {rows} × {cols} with leading dimension {ld}: needs {needed} elements, has {len}"
            ),
        ));
    }
    Ok(())
}

/// Checks that `n` elements `inc` apart fit in `len` elements (`inc ≠ 0`).
pub(crate) fn check_vector(
    call: &'static str,
    name: &str,
    len: usize,
    n: usize,
    inc: i32,
) -> Result<()> {
    if inc == 0 {
        return Err(Error::invalid(call, format!("increment of {name} is 0")));
    }
    if n == 0 {
        return Ok(());
    }
    let needed = (n - 1)
        .checked_mul(inc.unsigned_abs() as usize)
        .and_then(|v| v.checked_add(1))
        .ok_or_else(|| Error::invalid(call, format!("{name} overflows the address space")))?;
    if needed > len {
        return Err(Error::invalid(
            call,
            format!("{name} has {n} elements with increment {inc}: needs {needed}, has {len}"),
        ));
    }
    Ok(())
}

/// Checks that a buffer holds at least `needed` elements.
pub(crate) fn check_len(call: &'static str, name: &str, len: usize, needed: usize) -> Result<()> {
    if len < needed {
        return Err(Error::invalid(
            call,
            format!("{name} needs {needed} elements, has {len}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The search the encoder replaced: every code, nearest, ties to the even code.
    fn encode_by_scan(format: &Fp8Format, x: f32) -> u8 {
        let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
        let a = x.abs().min(format.max);
        let (mut best, mut best_err) = (0u8, f32::INFINITY);
        for code in 0u8..0x80 {
            let v = format.decode(code);
            if !v.is_finite() {
                continue;
            }
            let err = (v - a).abs();
            if err < best_err || (err == best_err && code % 2 == 0) {
                best = code;
                best_err = err;
            }
        }
        sign | best
    }

    #[test]
    fn fp8_encoding_agrees_with_the_scan_of_every_code() {
        let mut values: Vec<f32> = Vec::new();
        for bits in (0u32..0x4800_0000).step_by(4099) {
            values.push(f32::from_bits(bits));
        }
        // Zero, f32 subnormals, beyond both formats' range, infinity.
        values.extend([
            0.0,
            f32::from_bits(1),
            f32::MIN_POSITIVE,
            1e30,
            f32::MAX,
            f32::INFINITY,
        ]);
        for format in [&E4M3, &E5M2] {
            for v in format.values().into_iter().take(0x80) {
                if v.is_finite() {
                    // Every value, its neighbours in f32 and the midpoints to the next code.
                    values.extend([v, f32::from_bits(v.to_bits() + 1), v * 1.0625, v * 1.125]);
                }
            }
        }
        for &x in &values {
            for x in [x, -x] {
                assert_eq!(E4M3.encode(x), encode_by_scan(&E4M3, x), "E4M3 {x}");
                assert_eq!(E5M2.encode(x), encode_by_scan(&E5M2, x), "E5M2 {x}");
            }
        }
    }

    #[test]
    fn matrices_must_fit_their_buffers_and_leading_dimensions() {
        check_matrix("gemm", "A", 12, 3, 4, 3).unwrap();
        check_matrix("gemm", "A", 14, 4, 3, 5).unwrap();
        assert!(check_matrix("gemm", "A", 13, 4, 3, 5).is_err());
        let e = check_matrix("gemm", "A", 100, 4, 3, 3)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("leading dimension of A = 3 < max(1, rows = 4)"),
            "{e}"
        );
        let e = check_matrix("gemm", "B", 10, 4, 3, 4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs 12 elements, has 10"), "{e}");
        check_matrix("gemm", "C", 0, 0, 5, 1).unwrap();
    }

    #[test]
    fn vectors_must_fit_with_their_increments() {
        check_vector("axpy", "x", 7, 4, 2).unwrap();
        check_vector("axpy", "x", 7, 4, -2).unwrap();
        assert!(check_vector("axpy", "x", 6, 4, 2).is_err());
        assert!(check_vector("axpy", "x", 6, 4, 0).is_err());
        check_vector("axpy", "x", 0, 0, 1).unwrap();
        assert!(to_int("gemm", "m", 1 << 40).is_err());
        assert_eq!(Transpose::Yes.apply(2, 3), (3, 2));
    }

    #[test]
    fn fp8_round_trips_its_values_and_saturates() {
        for x in [0.0f32, 1.0, -1.5, 0.015625, 448.0, 240.0] {
            assert_eq!(F8E4M3::from_f32(x).to_f32(), x, "{x}");
        }
        assert_eq!(F8E4M3::from_f32(1000.0).to_f32(), 448.0);
        assert_eq!(F8E4M3::from_f32(1.0).0, 0x38);
        assert!(F8E4M3(0x7f).to_f32().is_nan());
        for x in [0.0f32, 1.0, -3.0, 57344.0] {
            assert_eq!(F8E5M2::from_f32(x).to_f32(), x, "{x}");
        }
        assert_eq!(F8E5M2::from_f32(1.0).0, 0x3c);
        assert_eq!(F8E5M2(0x7c).to_f32(), f32::INFINITY);
    }
}
