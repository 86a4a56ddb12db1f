//! Element types and matrix descriptions shared by the libraries, and the bounds checks made
//! before every call.

use crate::error::{Error, Result};
use bytemuck::{Pod, Zeroable};

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
}
