//! The BF16 tensor-core GEMM (`kernels/hgemm.lisp`, written with the tensor-core macro library
//! `chorus::lang::library::TENSOR_CORE`), shared by the `hgemm` example and its test: the
//! program, the launch, the shape rule and the host reference.

use chorus::lang::library::Library;
use chorus::{Arg, Launch, MemoryBlock, Program, bf16};

/// The kernel file.
pub const HGEMM: &str = include_str!("kernels/hgemm.lisp");

/// The hgemm kernel with the tensor-core macros defined first, checked now (errors name the
/// lines of `kernels/hgemm.lisp`).
pub fn program() -> chorus::Result<Program> {
    Program::with_libraries(&[Library::TensorCore], HGEMM, "hgemm.lisp")
}

/// `None` when the kernel can multiply an m×k by a k×n matrix (m, n multiples of 128, k of 32,
/// all positive and m·n, m·k, k·n below 2^31: the kernel indexes in `int`), else why not.
pub fn unsupported_shape(m: usize, n: usize, k: usize) -> Option<String> {
    let fits = |x: usize, y: usize| x.checked_mul(y).is_some_and(|p| p < 1 << 31);
    let tiles = m.is_multiple_of(128) && n.is_multiple_of(128) && k.is_multiple_of(32);
    if m == 0 || n == 0 || k == 0 || !tiles {
        Some(format!(
            "hgemm needs M and N multiples of 128 and K a multiple of 32, got {m}×{n}×{k}"
        ))
    } else if !(fits(m, n) && fits(m, k) && fits(k, n)) {
        Some(format!("hgemm indexes in int: {m}×{n}×{k} is too large"))
    } else {
        None
    }
}

/// Launches `C = A·B` (row-major, A m×k, B k×n, C m×n) on the current device's default stream:
/// a grid of (n/128, m/128) blocks of 128 threads.
pub fn launch(
    program: &Program,
    a: &MemoryBlock<bf16>,
    b: &MemoryBlock<bf16>,
    c: &MemoryBlock<bf16>,
    (m, n, k): (usize, usize, usize),
) -> chorus::Result<()> {
    program.launch(
        "hgemm",
        &[
            a.as_arg(),
            b.as_arg(),
            c.as_arg(),
            Arg::value(m as i32),
            Arg::value(n as i32),
            Arg::value(k as i32),
        ],
        Launch::grid((n / 128, m / 128)).block(128),
    )
}

/// Entry (i, j) of A·B in `f64` (exact: every product of two bf16 values is), and the sum of
/// the products' magnitudes (the scale of its rounding error).
pub fn reference_entry(
    a: &[bf16],
    b: &[bf16],
    (n, k): (usize, usize),
    i: usize,
    j: usize,
) -> (f64, f64) {
    let (mut sum, mut magnitude) = (0.0f64, 0.0f64);
    for p in 0..k {
        let x = a[i * k + p].to_f64() * b[p * n + j].to_f64();
        sum += x;
        magnitude += x.abs();
    }
    (sum, magnitude)
}

/// True when `got` is `want` rounded to bf16 after an f32 accumulation: within half a bf16
/// ulp of |want| (2^-9 relative) plus f32 accumulation error on the products' magnitudes.
pub fn close(got: bf16, want: f64, magnitude: f64) -> bool {
    (got.to_f64() - want).abs() <= want.abs() / 256.0 + 1e-5 * magnitude + 1e-30
}
