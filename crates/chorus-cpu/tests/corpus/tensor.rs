//! The tensor-core corpus (`tensor/*.lisp`): `mma-sync` for every shape and input type,
//! `ldmatrix` with and without `.trans`, `cp-async` with its groups, the fragment packs. They need sm_80 (fp8:
//! sm_89), so they are not in [`super::cases`], which every target runs; the CPU executor and
//! CUDA run them ([`cases`]).
//!
//! Inputs are small integers, exactly representable in every input type, so that each product
//! and each sum is exact in `f32`: the CPU executor and a GPU must then agree bit for bit, and
//! the expectations (plain matrix products computed here, independently of the fragment
//! layouts the kernels use) are exact bytes.

use super::{Case, bytes, case, input, output, pseudo_random, random_ints};
use bytemuck::Pod;
use chorus_lang::host::{bf16, f16};
use std::iter::Sum;
use std::ops::{Add, Mul};

/// A `rows × cols` matrix of small integers in -4..=4 (as `f32`), from `seed`.
fn small(seed: u32, rows: usize, cols: usize) -> Vec<f32> {
    random_ints(seed, rows * cols, -4..5)
        .into_iter()
        .map(|x| x as f32)
        .collect()
}

/// `C + A·B` for row-major A (m×k), B (k×n), C (m×n): each product summed in `k` order.
fn mma_reference<T>(a: &[T], b: &[T], c: &[T], m: usize, n: usize, k: usize) -> Vec<T>
where
    T: Copy + Add<Output = T> + Mul<Output = T> + Sum,
{
    (0..m * n)
        .map(|i| {
            let (r, col) = (i / n, i % n);
            c[i] + (0..k).map(|kk| a[r * k + kk] * b[kk * n + col]).sum::<T>()
        })
        .collect()
}

/// One warp's `mma-sync` of `kernel` (of kernel file `file`: stem and text) on a 16×8×`k`
/// shape: A (16×k) and B (k×8, passed transposed) as `encode` stores them, C (16×8) in, and
/// D = C + A·B out.
fn mma_case<T>(
    file: (&'static str, &'static str),
    kernel: &'static str,
    k: usize,
    [a, b, c]: [Vec<T>; 3],
    encode: impl Fn(&[T]) -> Vec<u8>,
) -> Case
where
    T: Pod + Add<Output = T> + Mul<Output = T> + Sum,
{
    let d = mma_reference(&a, &b, &c, 16, 8, k);
    let bt = transpose(&b, k, 8);
    case(
        file,
        kernel,
        [1, 1, 1],
        [32, 1, 1],
        vec![raw(encode(&a)), raw(encode(&bt)), input(&c), output(&d)],
    )
}

/// The transpose of a row-major `rows × cols` matrix.
fn transpose<T: Copy>(x: &[T], rows: usize, cols: usize) -> Vec<T> {
    (0..rows * cols)
        .map(|i| x[(i % rows) * cols + i / rows])
        .collect()
}

/// The bits of a small integer in an 8-bit float with `man` mantissa bits and exponent bias
/// `bias` (E4M3: 3 and 7; E5M2: 2 and 15).
fn fp8_bits(v: f32, man: u32, bias: i32) -> u8 {
    if v == 0.0 {
        return 0;
    }
    let a = v.abs() as u32;
    let e = 31 - a.leading_zeros();
    let m = ((a << man) >> e) - (1 << man);
    (u8::from(v < 0.0) << 7) | (((e as i32 + bias) as u8) << man) | m as u8
}

/// Every tensor-core case.
pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    let src16 = ("mma_16bit", include_str!("tensor/mma_16bit.lisp"));
    // (kernel, k, bf16?)
    for (kernel, k, brain) in [
        ("mma-bf16-k16", 16, true),
        ("mma-f16-k16", 16, false),
        ("mma-bf16-k8", 8, true),
        ("mma-f16-k8", 8, false),
    ] {
        let abc = [small(k as u32, 16, k), small(7, k, 8), small(3, 16, 8)];
        let halves = |x: &[f32]| -> Vec<u8> {
            if brain {
                bytes(&x.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>())
            } else {
                bytes(&x.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>())
            }
        };
        all.push(mma_case(src16, kernel, k, abc, halves));
    }
    let (a, b, c) = (small(11, 16, 8), small(12, 8, 8), small(13, 16, 8));
    // Quarters are exact in tf32 too.
    let a: Vec<f32> = a.iter().map(|x| x * 0.25).collect();
    let d = mma_reference(&a, &b, &c, 16, 8, 8);
    // B as it is: this kernel reads it by rows.
    all.push(case(
        ("mma_tf32", include_str!("tensor/mma_tf32.lisp")),
        "mma-tf32",
        [1, 1, 1],
        [32, 1, 1],
        vec![input(&a), input(&b), input(&c), output(&d)],
    ));
    let src8 = ("mma_8bit", include_str!("tensor/mma_8bit.lisp"));
    for (kernel, man, bias) in [("mma-e4m3", 3, 7), ("mma-e5m2", 2, 15)] {
        let abc = [small(21, 16, 32), small(22, 32, 8), small(23, 16, 8)];
        let enc = |x: &[f32]| -> Vec<u8> { x.iter().map(|&v| fp8_bits(v, man, bias)).collect() };
        all.push(mma_case(src8, kernel, 32, abc, enc));
    }
    for (kernel, signed) in [("mma-s8", true), ("mma-u8", false)] {
        let value = |x: u32| -> i32 {
            if signed {
                (x as u8) as i8 as i32
            } else {
                (x as u8) as i32
            }
        };
        let a: Vec<i32> = pseudo_random(31, 16 * 32).into_iter().map(value).collect();
        let b: Vec<i32> = pseudo_random(32, 32 * 8).into_iter().map(value).collect();
        let c = random_ints(33, 16 * 8, -1000..1001);
        let as_bytes = |x: &[i32]| -> Vec<u8> { x.iter().map(|&v| v as u8).collect() };
        all.push(mma_case(src8, kernel, 32, [a, b, c], as_bytes));
    }
    all.push(ldmatrix());
    all.push(cp_async());
    all.push(pack());
    all
}

/// An input buffer of raw bytes.
fn raw(data: Vec<u8>) -> super::Arg {
    super::Arg::Buffer {
        data,
        expect: super::Expect::Any,
    }
}

/// What lane `l` receives: per PTX's ldmatrix layout, from matrix `m` of the tile's quadrants.
fn ldmatrix() -> Case {
    let tile: Vec<u16> = pseudo_random(41, 256).iter().map(|&x| x as u16).collect();
    // Matrix j's top-left corner: lanes 8j..8j+7 give rows (8j + r) % 16 at column 8 ((8j + r) / 16).
    let corner = |j: usize| ((8 * j) % 16, 8 * ((8 * j) / 16));
    let at = |j: usize, r: usize, c: usize| {
        let (r0, c0) = corner(j);
        u32::from(tile[(r0 + r) * 16 + c0 + c])
    };
    let plain =
        |j: usize, l: usize| at(j, l / 4, 2 * (l % 4)) | at(j, l / 4, 2 * (l % 4) + 1) << 16;
    let trans =
        |j: usize, l: usize| at(j, 2 * (l % 4), l / 4) | at(j, 2 * (l % 4) + 1, l / 4) << 16;
    let mut out = Vec::new();
    for l in 0..32 {
        out.push(plain(0, l));
        out.extend((0..2).map(|j| plain(j, l)));
        out.extend((0..4).map(|j| plain(j, l)));
        out.push(trans(0, l));
        out.extend((0..2).map(|j| trans(j, l)));
        out.extend((0..4).map(|j| trans(j, l)));
    }
    case(
        ("ldmatrix", include_str!("tensor/ldmatrix.lisp")),
        "ld",
        [1, 1, 1],
        [32, 1, 1],
        vec![input(&tile), output(&out)],
    )
}

fn cp_async() -> Case {
    let src: Vec<u32> = pseudo_random(51, 448);
    let out: Vec<u32> = (0..448).map(|k| src[447 - k].wrapping_add(1)).collect();
    case(
        ("cp_async", include_str!("tensor/cp_async.lisp")),
        "copy-async",
        [1, 1, 1],
        [64, 1, 1],
        vec![input(&src), output(&out)],
    )
}

/// `pack-bf16x2` and `pack-f16x2` on pairs chosen for their rounding; the expected words were
/// worked out by hand from the IEEE encodings (round to nearest, ties to even), not by the
/// conversions the executor uses, and a GPU run compares them with `cvt.rn.*x2.f32`.
fn pack() -> Case {
    // (lo, hi, bf16x2, f16x2)
    let pairs: [(f32, f32, u32, u32); 8] = [
        (1.0, -2.0, 0xC000_3F80, 0xC000_3C00),
        // 1 + 2⁻⁸ and 1 + 3·2⁻⁸: bfloat16 ties (to 1.0 and to 1 + 2⁻⁶), exact in half.
        (
            1.0 + 1.0 / 256.0,
            1.0 + 3.0 / 256.0,
            0x3F82_3F80,
            0x3C0C_3C04,
        ),
        // 1 + 2⁻¹¹ and 1 + 3·2⁻¹¹: half ties, 1.0 in bfloat16.
        (
            1.0 + 1.0 / 2048.0,
            1.0 + 3.0 / 2048.0,
            0x3F80_3F80,
            0x3C02_3C00,
        ),
        // Half's largest finite value, and the tie above it, which rounds to infinity.
        (65504.0, 65520.0, 0x4780_4780, 0x7C00_7BFF),
        (3.0e38, -0.0, 0x8000_7F62, 0x8000_7C00),
        // An f32 subnormal (bfloat16 keeps it; half has no such small value), and 2⁻²⁴.
        (
            f32::from_bits(0x0001_16C2),
            5.960_464_5e-8,
            0x3380_0001,
            0x0001_0000,
        ),
        (-1.5, 0.1, 0x3DCD_BFC0, 0x2E66_BE00),
        (1024.5, -1.0 / 3.0, 0xBEAB_4480, 0xB555_6400),
    ];
    let x: Vec<f32> = pairs.iter().flat_map(|&(lo, hi, ..)| [lo, hi]).collect();
    let out: Vec<u32> = pairs.iter().flat_map(|&(.., b, h)| [b, h]).collect();
    case(
        ("pack", include_str!("tensor/pack.lisp")),
        "pack",
        [1, 1, 1],
        [8, 1, 1],
        vec![input(&x), output(&out)],
    )
}
