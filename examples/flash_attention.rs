//! The FlashAttention-2-style forward pass (`kernels/attention.lisp`, written with the
//! tensor-core macro library `chorus::lang::library::TENSOR_CORE`), shared by the `attention`
//! example and its test: the program, the shape rule, the launch and the f64 host reference.
//!
//! Q, K, V and O are `[batch, heads, seq, dim]` row-major BF16; O = softmax(Q·Kᵀ·scale
//! [+ causal mask])·V per (batch, head), with f32 accumulation. `dim` is 64 or 128 and `seq` a
//! multiple of 128 (a block's query tile; K/V tiles are 64 rows).

use chorus::lang::library::Library;
use chorus::{Arg, Launch, MemoryBlock, Program, bf16};

/// The kernel file.
pub const ATTENTION: &str = include_str!("kernels/attention.lisp");

/// Query rows per block.
pub const BLOCK_ROWS: usize = 128;
/// Key/value rows per pipeline stage.
pub const KV_ROWS: usize = 64;
/// K/V buffers in shared memory (`define-attention`'s `stages`).
pub const STAGES: usize = 2;

/// The two shapes of block of `kernels/attention.lisp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// 8 warps of 16 query rows, Q fragments in registers.
    W8,
    /// 4 warps of 32 query rows (FlashAttention-2's tiling), Q fragments reloaded from shared
    /// memory, two blocks per SM.
    W4,
}

impl Variant {
    /// Both, the default first.
    pub const ALL: [Variant; 2] = [Variant::W8, Variant::W4];

    /// The suffix of its kernels' names (`w8`, `w4`).
    pub fn name(self) -> &'static str {
        match self {
            Variant::W8 => "w8",
            Variant::W4 => "w4",
        }
    }

    /// The variant named `name` (`w8` or `w4`).
    pub fn parse(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// Threads per block.
    pub fn threads(self) -> usize {
        match self {
            Variant::W8 => 256,
            Variant::W4 => 128,
        }
    }

    /// The kernel for head dimension `dim` (64 or 128).
    pub fn kernel(self, dim: usize, causal: bool) -> String {
        let dim = if dim == 64 { 64 } else { 128 };
        let mask = if causal { "-causal" } else { "" };
        format!("attention-d{dim}-{}{mask}", self.name())
    }

    /// Dynamic shared memory for `dim`: the Q tile and `STAGES` K and V tiles, all BF16 (the
    /// same for both shapes: P stays in registers).
    pub fn shared_bytes(self, dim: usize) -> u32 {
        ((BLOCK_ROWS + 2 * KV_ROWS * STAGES) * dim * 2) as u32
    }
}

/// The sizes of an attention problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Batch size.
    pub batch: usize,
    /// Heads per batch entry.
    pub heads: usize,
    /// Sequence length (queries and keys).
    pub seq: usize,
    /// Head dimension.
    pub dim: usize,
}

impl Shape {
    /// Elements of each of Q, K, V and O.
    pub fn len(&self) -> usize {
        self.batch * self.heads * self.seq * self.dim
    }

    /// True when a tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Floating-point operations of the forward pass: 4·B·H·S²·D (the two matrix products),
    /// half of it when causal (the usual convention: the masked half is not counted).
    pub fn flop(&self, causal: bool) -> f64 {
        let full =
            4.0 * (self.batch * self.heads) as f64 * (self.seq as f64).powi(2) * self.dim as f64;
        if causal { full / 2.0 } else { full }
    }
}

/// The attention kernels with the tensor-core macros defined first, checked now (errors name the
/// lines of `kernels/attention.lisp`).
pub fn program() -> chorus::Result<Program> {
    Program::with_libraries(&[Library::TensorCore], ATTENTION, "attention.lisp")
}

/// `None` when the kernels can run `shape` (dim 64 or 128, seq a positive multiple of 128,
/// batch·heads at least 1 and at most 65535 (the grid's y), every tensor below 2^31 elements:
/// the kernels index in `int`), else why not.
pub fn unsupported_shape(shape: Shape) -> Option<String> {
    let Shape {
        batch,
        heads,
        seq,
        dim,
    } = shape;
    let len = batch
        .checked_mul(heads)
        .and_then(|x| x.checked_mul(seq))
        .and_then(|x| x.checked_mul(dim));
    if dim != 64 && dim != 128 {
        Some(format!(
            "attention needs head dimension 64 or 128, got {dim}"
        ))
    } else if seq == 0 || !seq.is_multiple_of(BLOCK_ROWS) {
        Some(format!(
            "attention needs a sequence length that is a positive multiple of {BLOCK_ROWS}, got {seq}"
        ))
    } else if batch == 0 || heads == 0 || batch * heads > 65535 {
        Some(format!(
            "attention needs 1 to 65535 (batch, head) pairs, got {batch}×{heads}"
        ))
    } else if len.is_none_or(|n| n >= 1 << 31) {
        Some(format!(
            "attention indexes in int: {batch}×{heads}×{seq}×{dim} is too large"
        ))
    } else {
        None
    }
}

/// Launches the forward pass with `variant`'s kernel on the current device's default stream:
/// a grid of (seq/128, batch·heads) blocks. `scale` multiplies Q·Kᵀ (1/√dim usually) and must
/// be positive.
pub fn launch(
    program: &Program,
    variant: Variant,
    [q, k, v, o]: [&MemoryBlock<bf16>; 4],
    shape: Shape,
    causal: bool,
    scale: f64,
) -> chorus::Result<()> {
    program.launch(
        &variant.kernel(shape.dim, causal),
        &[
            q.as_arg(),
            k.as_arg(),
            v.as_arg(),
            o.as_arg(),
            Arg::value(shape.seq as i32),
            Arg::value((scale * std::f64::consts::LOG2_E) as f32),
        ],
        Launch::grid((shape.seq / BLOCK_ROWS, shape.batch * shape.heads))
            .block(variant.threads())
            .shared_mem(variant.shared_bytes(shape.dim)),
    )
}

/// Row `row` of (batch, head) pair `bh` of the output, in f64 from the BF16 inputs (exact
/// products, exact exponentials up to f64), and for each column the weighted mean of |V| there
/// (Σ p·|v| / Σ p: the scale of the error that rounding P to BF16 makes).
pub fn reference_row(
    [q, k, v]: [&[bf16]; 3],
    shape: Shape,
    causal: bool,
    scale: f64,
    bh: usize,
    row: usize,
) -> (Vec<f64>, Vec<f64>) {
    let (seq, dim) = (shape.seq, shape.dim);
    let head = bh * seq * dim;
    let keys = if causal { row + 1 } else { seq };
    let query = &q[head + row * dim..head + (row + 1) * dim];
    let scores: Vec<f64> = (0..keys)
        .map(|j| {
            let key = &k[head + j * dim..head + (j + 1) * dim];
            scale
                * query
                    .iter()
                    .zip(key)
                    .map(|(a, b)| a.to_f64() * b.to_f64())
                    .sum::<f64>()
        })
        .collect();
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
    let sum: f64 = weights.iter().sum();
    let (mut out, mut magnitude) = (vec![0.0f64; dim], vec![0.0f64; dim]);
    for (j, w) in weights.iter().enumerate() {
        let value = &v[head + j * dim..head + (j + 1) * dim];
        for ((o, m), x) in out.iter_mut().zip(&mut magnitude).zip(value) {
            *o += w * x.to_f64();
            *m += w * x.to_f64().abs();
        }
    }
    for (o, m) in out.iter_mut().zip(&mut magnitude) {
        *o /= sum;
        *m /= sum;
    }
    (out, magnitude)
}

/// True when `got` is within what BF16 allows of `want`: P rounded to BF16 before P·V (at most
/// 2^-8 relative on each weight, so 2^-8 of the weighted mean of |V|, `magnitude`), the output
/// rounded to BF16 (2^-8 of |want|), and a little for the f32 arithmetic (scores, exp2, sums).
pub fn close(got: bf16, want: f64, magnitude: f64) -> bool {
    let error = (got.to_f64() - want).abs();
    error <= (want.abs() + magnitude) * (1.0 / 256.0 + 1e-5) + 1e-7
}

/// `len` BF16 values uniform in [−range, range) from a fixed-seed generator.
pub fn random_bf16(len: usize, range: f32, random: &mut crate::Random) -> Vec<bf16> {
    (0..len)
        .map(|_| bf16::from_f32(range * (2.0 * random.next_f32() - 1.0)))
        .collect()
}

/// Random Q, K and V for `shape` (seed `seed`): Q and K uniform in [−2, 2), so that the
/// scaled scores spread over about ±4 (a softmax far from uniform, which a wrong scale or mask
/// visibly changes), V uniform in [−1, 1).
pub fn random_inputs(shape: Shape, seed: u64) -> [Vec<bf16>; 3] {
    let mut random = crate::Random::new(seed);
    let n = shape.len();
    let q = random_bf16(n, 2.0, &mut random);
    let k = random_bf16(n, 2.0, &mut random);
    let v = random_bf16(n, 1.0, &mut random);
    [q, k, v]
}

/// Checks the rows `rows` ((batch·head, row) pairs) of `o` against the f64 reference: how many
/// entries fail [`close`], and the largest |got − want| / (|want| + magnitude).
pub fn check_rows(
    o: &[bf16],
    inputs: [&[bf16]; 3],
    shape: Shape,
    causal: bool,
    scale: f64,
    rows: impl IntoIterator<Item = (usize, usize)>,
) -> (usize, usize, f64) {
    let (mut checked, mut bad, mut worst) = (0usize, 0usize, 0.0f64);
    for (bh, row) in rows {
        let (want, magnitude) = reference_row(inputs, shape, causal, scale, bh, row);
        let at = (bh * shape.seq + row) * shape.dim;
        for (c, (w, m)) in want.iter().zip(&magnitude).enumerate() {
            let got = o[at + c];
            checked += 1;
            if !close(got, *w, *m) {
                bad += 1;
            }
            let error = (got.to_f64() - w).abs() / (w.abs() + m);
            // A NaN (the poison, or a broken kernel) is the worst.
            worst = if error.is_nan() {
                f64::INFINITY
            } else {
                worst.max(error)
            };
        }
    }
    (checked, bad, worst)
}
