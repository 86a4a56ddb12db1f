//! What the GPU tests share: device 0 or a skip (a failure under `CHORUS_REQUIRE_GPU=1`),
//! blocks filled from the host and read back, random data, and f64 reference arithmetic.

#![allow(dead_code)] // each test file uses its part

use bytemuck::Pod;
use chorus_cuda_libs::{C64, Complex};
use chorus_driver::{Context, Direction, MemoryBlock};

/// Runs `body` in a new context on device 0, or skips (printing why) without a GPU; with
/// `CHORUS_REQUIRE_GPU=1` a missing GPU fails the test. `body`'s error fails it.
pub fn on_gpu(test: &str, body: impl FnOnce(&Context) -> Result<(), Box<dyn std::error::Error>>) {
    let required = std::env::var("CHORUS_REQUIRE_GPU").is_ok_and(|v| v.trim() == "1");
    let available = chorus_driver::ensure_driver().and_then(|()| chorus_driver::device_count());
    match available {
        Ok(n) if n > 0 => {}
        other => {
            let why = match other {
                Ok(_) => "no device".to_owned(),
                Err(e) => e.to_string(),
            };
            assert!(
                !required,
                "{test}: CHORUS_REQUIRE_GPU=1 but there is no usable GPU: {why}"
            );
            eprintln!("skipped {test}: no usable GPU: {why}");
            return;
        }
    }
    let ctx = Context::new(0).unwrap_or_else(|e| panic!("{test}: {e}"));
    if let Err(e) = body(&ctx) {
        panic!("{test}: {e}");
    }
}

/// A device block holding `data`.
pub fn upload<T: Pod>(data: &[T]) -> MemoryBlock<T> {
    let mut block = MemoryBlock::from_slice(data).expect("alloc");
    block.sync(Direction::HostToDevice).expect("upload");
    block
}

/// The device copy of `block` (after the context's work).
pub fn download<T: Pod>(block: &mut MemoryBlock<T>) -> Vec<T> {
    chorus_driver::synchronize_context().expect("synchronize");
    block.sync(Direction::DeviceToHost).expect("download");
    block.as_slice().to_vec()
}

/// A small deterministic generator of values in [-1, 1).
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        Lcg(seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407))
    }

    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    pub fn vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.next()).collect()
    }

    pub fn complex(&mut self, n: usize) -> Vec<C64> {
        (0..n)
            .map(|_| Complex::new(self.next(), self.next()))
            .collect()
    }
}

pub fn f32s(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

#[allow(clippy::too_many_arguments)] // the BLAS convention, as in the library
/// Column-major `C = op(A)·op(B)` in f64 (`op` = transpose when the flag is set).
pub fn matmul(
    ta: bool,
    tb: bool,
    m: usize,
    n: usize,
    k: usize,
    a: &[f64],
    lda: usize,
    b: &[f64],
    ldb: usize,
) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for j in 0..n {
        for i in 0..m {
            let mut s = 0.0;
            for p in 0..k {
                let av = if ta { a[p + i * lda] } else { a[i + p * lda] };
                let bv = if tb { b[j + p * ldb] } else { b[p + j * ldb] };
                s += av * bv;
            }
            c[i + j * m] = s;
        }
    }
    c
}

/// The largest `|got − want|` relative to the largest `|want|` (or 1).
pub fn rel_err(got: impl IntoIterator<Item = f64>, want: &[f64]) -> f64 {
    let scale = want.iter().fold(1e-30f64, |m, w| m.max(w.abs()));
    got.into_iter()
        .zip(want)
        .fold(0.0f64, |m, (g, w)| m.max((g - w).abs()))
        / scale
}

/// Complex multiply and add in f64.
pub fn cmul(a: C64, b: C64) -> C64 {
    Complex::new(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
}

pub fn cadd(a: C64, b: C64) -> C64 {
    Complex::new(a.re + b.re, a.im + b.im)
}

pub fn conj(a: C64) -> C64 {
    Complex::new(a.re, -a.im)
}

/// Flattens complex numbers to interleaved f64 (for `rel_err`).
pub fn flat(v: &[C64]) -> Vec<f64> {
    v.iter().flat_map(|c| [c.re, c.im]).collect()
}
