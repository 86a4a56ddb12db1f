//! The kernel test corpus, shared by the CPU executor's tests and the GPU tests.
//!
//! Each case is one kernel file in this folder (`NAME.lisp`), a launch configuration, the
//! launch's arguments (buffers with their initial contents, by-value scalars) and what every
//! buffer and global must hold afterwards. Expected values come from plain Rust references
//! written here, independently of any executor: exact for integer work, within a tolerance for
//! floating point (GPUs contract `a*b+c` into `fma` and their math functions differ by ulps).
//!
//! The table depends on no backend: a runner compiles `source` with
//! `chorus_lang::compile_str`, allocates one buffer per [`Arg::Buffer`], sets
//! [`Case::globals`] that have an `init`, launches `kernel`, collects an [`Outcome`] and calls
//! [`check`]. [`cpu::run`] is the CPU executor's runner. Use it from another crate's tests with
//! `#[path = "../../chorus-cpu/tests/corpus/mod.rs"] mod corpus;`.

#![allow(dead_code)]

pub mod cpu;
pub mod tensor;

use bytemuck::Pod;
use chorus_lang::host::{Fp4E2M1, Fp8E4M3, KernelValue, bf16, f16};
use chorus_lang::types::Type;

/// One kernel launch and its expected results.
pub struct Case {
    /// The kernel file's stem.
    pub name: &'static str,
    /// The kernel text.
    pub source: &'static str,
    /// The kernel launched.
    pub kernel: &'static str,
    /// Blocks per grid.
    pub grid: [u32; 3],
    /// Threads per block.
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes.
    pub shared_mem: usize,
    /// The arguments, in order.
    pub args: Vec<Arg>,
    /// Globals to set before the launch and check after it.
    pub globals: Vec<GlobalValue>,
}

/// A launch argument.
pub enum Arg {
    /// A device buffer: its initial bytes and what it must hold after the launch.
    Buffer {
        /// Initial contents.
        data: Vec<u8>,
        /// Expected contents afterwards.
        expect: Expect,
    },
    /// A value passed by value.
    Value {
        /// Its kernel type.
        ty: Type,
        /// Its bytes.
        bytes: Vec<u8>,
    },
}

/// A global's value before and after the launch.
pub struct GlobalValue {
    /// The global's name.
    pub name: &'static str,
    /// Bytes to store before the launch (`None`: keep the initializer's value).
    pub init: Option<Vec<u8>>,
    /// Its expected bytes afterwards.
    pub expect: Expect,
}

/// What a buffer (or global) must hold.
pub enum Expect {
    /// Not checked (an input, or output whose content is arbitrary).
    Any,
    /// Exactly these bytes.
    Bytes(Vec<u8>),
    /// `f32` values, each within `tolerance` (absolute, or relative to the larger magnitude).
    F32(Vec<f32>, f32),
    /// `f64` values, likewise.
    F64(Vec<f64>, f64),
    /// A check of the bytes.
    Check(fn(&[u8]) -> Result<(), String>),
}

impl Expect {
    /// Compares `actual` with the expectation; the error names the first difference.
    pub fn check(&self, actual: &[u8]) -> Result<(), String> {
        match self {
            Expect::Any => Ok(()),
            Expect::Bytes(want) => {
                if want.len() != actual.len() {
                    return Err(format!("{} bytes, expected {}", actual.len(), want.len()));
                }
                match want.iter().zip(actual).position(|(a, b)| a != b) {
                    None => Ok(()),
                    Some(i) => Err(format!(
                        "byte {i} is {:#04x}, expected {:#04x} (bytes {}..: {:?} vs {:?})",
                        actual[i],
                        want[i],
                        i & !7,
                        &actual[i & !7..(i & !7) + 8.min(actual.len() - (i & !7))],
                        &want[i & !7..(i & !7) + 8.min(want.len() - (i & !7))]
                    )),
                }
            }
            Expect::F32(want, tol) => {
                let got: Vec<f32> = from_bytes(actual);
                compare(
                    &want.iter().map(|&x| x as f64).collect::<Vec<_>>(),
                    &got.iter().map(|&x| x as f64).collect::<Vec<_>>(),
                    *tol as f64,
                )
            }
            Expect::F64(want, tol) => compare(want, &from_bytes::<f64>(actual), *tol),
            Expect::Check(f) => f(actual),
        }
    }
}

fn compare(want: &[f64], got: &[f64], tol: f64) -> Result<(), String> {
    if want.len() != got.len() {
        return Err(format!("{} values, expected {}", got.len(), want.len()));
    }
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else {
            w == g || (w - g).abs() <= tol * w.abs().max(g.abs()).max(1.0)
        };
        if !ok {
            return Err(format!("value {i} is {g}, expected {w} (tolerance {tol})"));
        }
    }
    Ok(())
}

/// What a backend left in every buffer argument (in argument order) and in every global of
/// [`Case::globals`] after the launch.
pub struct Outcome {
    /// One entry per [`Arg::Buffer`], in order.
    pub buffers: Vec<Vec<u8>>,
    /// One entry per [`Case::globals`] entry, in order.
    pub globals: Vec<Vec<u8>>,
}

impl Case {
    /// The initial contents of each buffer argument, in order.
    pub fn buffer_data(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.args.iter().filter_map(|a| match a {
            Arg::Buffer { data, .. } => Some(data),
            Arg::Value { .. } => None,
        })
    }

    /// The expectation of each buffer argument, in order.
    pub fn buffer_expectations(&self) -> impl Iterator<Item = &Expect> {
        self.args.iter().filter_map(|a| match a {
            Arg::Buffer { expect, .. } => Some(expect),
            Arg::Value { .. } => None,
        })
    }
}

/// Checks a backend's outcome against the case's expectations; the error names the first
/// difference.
pub fn check(case: &Case, outcome: &Outcome) -> Result<(), String> {
    for (k, (expect, bytes)) in case.buffer_expectations().zip(&outcome.buffers).enumerate() {
        expect
            .check(bytes)
            .map_err(|e| format!("buffer argument {}: {e}", k + 1))?;
    }
    for (g, bytes) in case.globals.iter().zip(&outcome.globals) {
        g.expect
            .check(bytes)
            .map_err(|e| format!("global {}: {e}", g.name))?;
    }
    Ok(())
}

/// The bytes of `values`.
pub fn bytes<T: Pod>(values: &[T]) -> Vec<u8> {
    bytemuck::cast_slice(values).to_vec()
}

/// `bytes` read as `T`s.
pub fn from_bytes<T: Pod>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(size_of::<T>())
        .map(bytemuck::pod_read_unaligned)
        .collect()
}

/// An input buffer.
pub fn input<T: Pod>(values: &[T]) -> Arg {
    Arg::Buffer {
        data: bytes(values),
        expect: Expect::Any,
    }
}

/// A buffer that starts as `initial` and must end exactly as `expected`.
pub fn exact<T: Pod>(initial: &[T], expected: &[T]) -> Arg {
    Arg::Buffer {
        data: bytes(initial),
        expect: Expect::Bytes(bytes(expected)),
    }
}

/// A zeroed buffer of `expected.len()` values that must end exactly as `expected`.
pub fn output<T: Pod>(expected: &[T]) -> Arg {
    Arg::Buffer {
        data: vec![0; size_of_val(expected)],
        expect: Expect::Bytes(bytes(expected)),
    }
}

/// A zeroed `f32` buffer that must end near `expected`.
pub fn output_f32(expected: Vec<f32>, tolerance: f32) -> Arg {
    Arg::Buffer {
        data: vec![0; expected.len() * 4],
        expect: Expect::F32(expected, tolerance),
    }
}

/// A zeroed `f64` buffer that must end near `expected`.
pub fn output_f64(expected: Vec<f64>, tolerance: f64) -> Arg {
    Arg::Buffer {
        data: vec![0; expected.len() * 8],
        expect: Expect::F64(expected, tolerance),
    }
}

/// A zeroed buffer of `len` bytes checked by `f`.
pub fn checked(len: usize, f: fn(&[u8]) -> Result<(), String>) -> Arg {
    Arg::Buffer {
        data: vec![0; len],
        expect: Expect::Check(f),
    }
}

/// A zeroed buffer of `len` bytes whose content is not checked.
pub fn scratch(len: usize) -> Arg {
    Arg::Buffer {
        data: vec![0; len],
        expect: Expect::Any,
    }
}

/// A by-value argument.
pub fn value<T: KernelValue>(v: T) -> Arg {
    Arg::Value {
        ty: T::kernel_type(),
        bytes: bytemuck::bytes_of(&v).to_vec(),
    }
}

/// A launch of `kernel` from kernel file `(name, source)` (see [`lisp!`]), no dynamic shared
/// memory and no globals.
fn case(
    (name, source): (&'static str, &'static str),
    kernel: &'static str,
    grid: [u32; 3],
    block: [u32; 3],
    args: Vec<Arg>,
) -> Case {
    Case {
        name,
        source,
        kernel,
        grid,
        block,
        shared_mem: 0,
        args,
        globals: Vec::new(),
    }
}

/// A kernel file of this folder: its stem and its text.
macro_rules! lisp {
    ($name:literal) => {
        ($name, include_str!(concat!($name, ".lisp")))
    };
}

/// A deterministic pseudo-random sequence for inputs (xorshift32).
pub fn pseudo_random(seed: u32, n: usize) -> Vec<u32> {
    let mut x = seed.max(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        })
        .collect()
}

/// `n` pseudo-random integers in `range` from `seed` (uniform enough for test inputs).
pub fn random_ints(seed: u32, n: usize, range: std::ops::Range<i32>) -> Vec<i32> {
    let span = range.end.abs_diff(range.start);
    pseudo_random(seed, n)
        .iter()
        .map(|x| (x % span) as i32 + range.start)
        .collect()
}

/// cuRAND's XORWOW for the reference: seeding (subsequence 0), then stepping.
struct Xorwow {
    d: u32,
    v: [u32; 5],
}

impl Xorwow {
    fn new(seed: u64, offset: u64) -> Xorwow {
        let t0 = 1_099_087_573u32.wrapping_mul(seed as u32 ^ 0xaad2_6b49);
        let t1 = 2_591_861_531u32.wrapping_mul((seed >> 32) as u32 ^ 0xf7dc_efdd);
        let mut g = Xorwow {
            d: 6_615_241u32.wrapping_add(t1).wrapping_add(t0),
            v: [
                123_456_789u32.wrapping_add(t0),
                362_436_069 ^ t0,
                521_288_629u32.wrapping_add(t1),
                88_675_123 ^ t1,
                5_783_321u32.wrapping_add(t0),
            ],
        };
        for _ in 0..offset {
            g.next();
        }
        g
    }

    fn next(&mut self) -> u32 {
        let t = self.v[0] ^ (self.v[0] >> 2);
        self.v = [
            self.v[1],
            self.v[2],
            self.v[3],
            self.v[4],
            (self.v[4] ^ (self.v[4] << 4)) ^ (t ^ (t << 1)),
        ];
        self.d = self.d.wrapping_add(362_437);
        self.v[4].wrapping_add(self.d)
    }
}

fn f16s(values: &[f32]) -> Vec<f16> {
    values.iter().map(|&v| f16::from_f32(v)).collect()
}

/// Every case.
pub fn cases() -> Vec<Case> {
    vec![
        vec_add(),
        index_3d(),
        shared_reduce(),
        warp_reduce_shfl(),
        shfl_variants(),
        shfl_float_double(),
        histogram(),
        prefix_scan(),
        do_two_vars(),
        while_collatz(),
        for_break_continue(),
        switch_clauses(),
        device_functions(),
        structs(),
        vectors(),
        doubles(),
        half_bf16(),
        half2(),
        fp8_fp4(),
        curand_uniform(),
        curand_normal(),
        printf(),
        globals(),
        dynamic_shared(),
        shared_2d(),
        votes(),
        matches(),
        warp_reduce_ops(),
        atomics_int(),
        atomics_float(),
        math_float(),
        math_double(),
        int_intrinsics(),
        fma_saturate(),
        int_conversions(),
        select_and_or(),
        nested_loops(),
        early_return(),
        macros(),
        pointers(),
        matmul(),
        diffuse(),
        bools(),
        size_t_indexing(),
        barrier_loop(),
        shared_scalar(),
        lane_ids(),
        small_ints(),
    ]
}

fn vec_add() -> Case {
    let n = 1000;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..n).map(|i| 1.0 / (i as f32 + 1.0)).collect();
    let c: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    let mut c_full = c.clone();
    c_full.extend([-1.0f32; 24]);
    let mut init = vec![0.0f32; n];
    init.extend([-1.0f32; 24]);
    case(
        lisp!("vec_add"),
        "vec-add",
        [4, 1, 1],
        [256, 1, 1],
        vec![input(&a), input(&b), exact(&init, &c_full), value(n as i32)],
    )
}

fn index_3d() -> Case {
    let (grid, block) = ([2u32, 3, 2], [4u32, 2, 3]);
    let mut ids = Vec::new();
    let mut dims = Vec::new();
    for bz in 0..grid[2] {
        for by in 0..grid[1] {
            for bx in 0..grid[0] {
                for tz in 0..block[2] {
                    for ty in 0..block[1] {
                        for tx in 0..block[0] {
                            ids.push(
                                (tx + 10 * ty + 100 * tz + 1000 * bx + 10000 * by + 100000 * bz)
                                    as i32,
                            );
                            dims.push(4 + 10 * 2 + 100 * 3 + 1000 * 2 + 10000 * 3 + 100000 * 2);
                        }
                    }
                }
            }
        }
    }
    case(
        lisp!("index_3d"),
        "index-3d",
        grid,
        block,
        vec![output(&ids), output(&dims)],
    )
}

fn shared_reduce() -> Case {
    let data = random_ints(1, 256 * 8, -500..500);
    let sums: Vec<i32> = data.chunks(256).map(|c| c.iter().sum()).collect();
    case(
        lisp!("shared_reduce"),
        "block-sum",
        [8, 1, 1],
        [256, 1, 1],
        vec![input(&data), output(&sums)],
    )
}

fn warp_reduce_shfl() -> Case {
    let data = random_ints(2, 512, 0..100);
    let sums: Vec<i32> = data.chunks(32).map(|c| c.iter().sum()).collect();
    case(
        lisp!("warp_reduce_shfl"),
        "warp-sum",
        [2, 1, 1],
        [256, 1, 1],
        vec![input(&data), output(&sums)],
    )
}

/// CUDA's shuffle rules (PTX `shfl.sync`), for the reference.
fn shuffle_reference(values: &[i32], mode: char, b: i32, width: i32) -> Vec<i32> {
    (0..32)
        .map(|lane: i32| {
            let min = lane & !(width - 1);
            let max = min | (width - 1);
            let (j, ok) = match mode {
                'u' => (lane - b, lane - b >= min),
                'd' => (lane + b, lane + b <= max),
                _ => (lane ^ b, (lane ^ b) <= max),
            };
            if ok {
                values[j as usize]
            } else {
                values[lane as usize]
            }
        })
        .collect()
}

fn shfl_variants() -> Case {
    let v: Vec<i32> = (0..32).map(|l| 100 * (l + 1)).collect();
    let mut out = vec![0i32; 256];
    for lane in 0..32usize {
        // shfl-sync's source lane wraps within the segment: lane + 3 taken modulo the width.
        let idx_src = |w: i32| {
            let min = lane as i32 & !(w - 1);
            v[(min | ((lane as i32 + 3) & (w - 1))) as usize]
        };
        out[lane * 8] = idx_src(32);
        out[lane * 8 + 1] = idx_src(8);
        out[lane * 8 + 2] = shuffle_reference(&v, 'u', 2, 32)[lane];
        out[lane * 8 + 3] = shuffle_reference(&v, 'u', 2, 8)[lane];
        out[lane * 8 + 4] = shuffle_reference(&v, 'd', 3, 32)[lane];
        out[lane * 8 + 5] = shuffle_reference(&v, 'd', 3, 8)[lane];
        out[lane * 8 + 6] = shuffle_reference(&v, 'x', 5, 32)[lane];
        out[lane * 8 + 7] = shuffle_reference(&v, 'x', 9, 8)[lane];
    }
    case(
        lisp!("shfl_variants"),
        "shuffles",
        [1, 1, 1],
        [32, 1, 1],
        vec![output(&out)],
    )
}

fn shfl_float_double() -> Case {
    let f: Vec<f32> = (0..32).map(|l| 1.5 * (l ^ 1) as f32).collect();
    let d: Vec<f64> = (0..32).map(|_| 0.25 * 31.0).collect();
    let l: Vec<i64> = (0..32)
        .map(|l| 1_000_000_000_000i64 * if l == 31 { 31 } else { l + 1 })
        .collect();
    case(
        lisp!("shfl_float_double"),
        "shuffle-wide",
        [1, 1, 1],
        [32, 1, 1],
        vec![output(&f), output(&d), output(&l)],
    )
}

fn histogram() -> Case {
    let n = 2000;
    let data = random_ints(3, n, 0..64);
    let mut bins = vec![0u32; 64];
    for &d in &data {
        bins[d as usize] += 1;
    }
    case(
        lisp!("histogram"),
        "histogram",
        [16, 1, 1],
        [128, 1, 1],
        vec![input(&data), value(n as i32), output(&bins)],
    )
}

fn prefix_scan() -> Case {
    let data = random_ints(4, 512, -10..11);
    let mut out = Vec::new();
    for chunk in data.chunks(128) {
        let mut acc = 0;
        for &x in chunk {
            acc += x;
            out.push(acc);
        }
    }
    case(
        lisp!("prefix_scan"),
        "scan",
        [4, 1, 1],
        [128, 1, 1],
        vec![input(&data), output(&out)],
    )
}

fn do_two_vars() -> Case {
    let mut out = Vec::new();
    for t in 0..32 {
        let (mut a, mut b, mut sum) = (0, t, 0);
        while a <= 5 {
            sum += a * b;
            let (na, nb) = (a + 1, b + a);
            a = na;
            b = nb;
        }
        out.push(sum);
        let (mut x, mut y) = (1, 2);
        let (mut i, mut p, mut q) = (0, x, y);
        while i != t + 1 {
            x = p;
            y = q;
            let (ni, np, nq) = (i + 1, q, p);
            i = ni;
            p = np;
            q = nq;
        }
        out.push(10 * x + y);
    }
    case(
        lisp!("do_two_vars"),
        "do-two",
        [1, 1, 1],
        [32, 1, 1],
        vec![output(&out)],
    )
}

fn while_collatz() -> Case {
    let out: Vec<i32> = (1..=256i64)
        .map(|mut n| {
            let mut steps = 0;
            while n != 1 {
                n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
                steps += 1;
            }
            steps
        })
        .collect();
    case(
        lisp!("while_collatz"),
        "collatz",
        [4, 1, 1],
        [64, 1, 1],
        vec![output(&out)],
    )
}

fn for_break_continue() -> Case {
    let out: Vec<i32> = (0..64)
        .map(|t| {
            (0..100)
                .filter(|i| i % 2 == 1)
                .take_while(|&i| i <= 3 * t)
                .sum()
        })
        .collect();
    case(
        lisp!("for_break_continue"),
        "odd-sums",
        [1, 1, 1],
        [64, 1, 1],
        vec![output(&out)],
    )
}

fn switch_clauses() -> Case {
    let out: Vec<i32> = (0..40)
        .map(|t| match t % 7 {
            0 => 100,
            1 | 2 => 200 + t,
            5 => -5,
            _ => t * t,
        })
        .collect();
    case(
        lisp!("switch_clauses"),
        "classify",
        [1, 1, 1],
        [40, 1, 1],
        vec![output(&out)],
    )
}

fn device_functions() -> Case {
    fn fib(n: i32) -> i32 {
        if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
    }
    let mut out = Vec::new();
    let mut big = Vec::new();
    for t in 0..64i32 {
        out.extend([t * t, 2 * t * t, fib(t % 12), t * t * t * t]);
        big.push((1..=(t % 20 + 1) as i64).product::<i64>());
    }
    case(
        lisp!("device_functions"),
        "use-functions",
        [1, 1, 1],
        [64, 1, 1],
        vec![output(&out), output(&big)],
    )
}

/// `body` of structs.lisp: uint8 id; float3 pos at 4; pair p at 16 (int x, float y); double mass
/// at 24; 32 bytes.
fn body_bytes(id: u8, pos: [f32; 3], px: i32, py: f32, mass: f64) -> Vec<u8> {
    let mut b = vec![0u8; 32];
    b[0] = id;
    for (k, c) in pos.iter().enumerate() {
        b[4 + 4 * k..8 + 4 * k].copy_from_slice(&c.to_le_bytes());
    }
    b[16..20].copy_from_slice(&px.to_le_bytes());
    b[20..24].copy_from_slice(&py.to_le_bytes());
    b[24..32].copy_from_slice(&mass.to_le_bytes());
    b
}

fn structs() -> Case {
    let n = 8;
    let (qx, qy) = (5i32, 0.5f32);
    let mut bodies = Vec::new();
    let mut after = Vec::new();
    let mut out = Vec::new();
    let mut pairs = Vec::new();
    for t in 0..n {
        let (id, pos, px, py, mass) = (
            t as u8 * 3,
            [t as f32, 1.0, 0.25 * t as f32],
            t as i32 - 4,
            1.5f32,
            2.0 + t as f64,
        );
        bodies.extend(body_bytes(id, pos, px, py, mass));
        after.extend(body_bytes(id, pos, qx + t as i32, py, 2.0 * mass));
        out.push(pos[0] + pos[2] + (px as f32 + py) + mass as f32 + id as f32);
        pairs.extend((3 * t as i32).to_le_bytes());
        pairs.extend((qy * t as f32).to_le_bytes());
    }
    let mut q = qx.to_le_bytes().to_vec();
    q.extend(qy.to_le_bytes());
    case(
        lisp!("structs"),
        "structs",
        [1, 1, 1],
        [n as u32, 1, 1],
        vec![
            Arg::Buffer {
                data: bodies,
                expect: Expect::Bytes(after),
            },
            Arg::Value {
                ty: Type::Struct("pair".into()),
                bytes: q,
            },
            output_f32(out, 1e-6),
            Arg::Buffer {
                data: vec![0; 8 * n],
                expect: Expect::Bytes(pairs),
            },
        ],
    )
}

fn vectors() -> Case {
    let n = 16;
    let a: Vec<[f32; 4]> = (0..n)
        .map(|t| [t as f32, 1.0, -2.0, 0.5 * t as f32])
        .collect();
    let b: Vec<[f32; 3]> = (0..n).map(|t| [1.0, t as f32, 3.0]).collect();
    let mut out = Vec::new();
    let mut dots = Vec::new();
    let mut b_after = Vec::new();
    let mut ints = Vec::new();
    for t in 0..n {
        let u = a[t];
        let w = [u[0] + 1.0, u[1] + 2.0, u[2] + 3.0, u[3] + 4.0];
        out.extend((0..4).map(|k| 2.0 * w[k] - u[k] / 2.0));
        dots.push(u.iter().map(|x| x * x).sum::<f32>());
        dots.push(b[t].iter().map(|x| 3.0 * x * x).sum::<f32>());
        b_after.extend([b[t][0], b[t][0] + b[t][2], b[t][2]]);
        ints.extend([2 * t as i32, -(t as i32) + 100]);
    }
    let flat = |v: &[[f32; 4]]| v.iter().flatten().copied().collect::<Vec<f32>>();
    let flat3 = |v: &[[f32; 3]]| v.iter().flatten().copied().collect::<Vec<f32>>();
    case(
        lisp!("vectors"),
        "vectors",
        [1, 1, 1],
        [n as u32, 1, 1],
        vec![
            input(&flat(&a)),
            Arg::Buffer {
                data: bytes(&flat3(&b)),
                expect: Expect::F32(b_after, 1e-6),
            },
            output_f32(out, 1e-6),
            output_f32(dots, 1e-6),
            output(&ints),
        ],
    )
}

fn doubles() -> Case {
    let n = 8;
    let x: Vec<f64> = (0..n).map(|t| 0.1 * t as f64 + 0.3).collect();
    let v: Vec<f64> = (0..n).flat_map(|t| [t as f64, 1.0, -1.5, 0.25]).collect();
    let mut out = Vec::new();
    for t in 0..n {
        let a = x[t];
        out.push((a * a + 1.0) / 3.0);
        out.push(a * a + 4.0 * a * a + 1.0);
        let q = &v[4 * t..4 * t + 4];
        out.push(q.iter().map(|c| -c * (c * 0.5)).sum());
    }
    case(
        lisp!("doubles"),
        "doubles",
        [1, 1, 1],
        [n as u32, 1, 1],
        vec![input(&x), input(&v), output_f64(out, 1e-14)],
    )
}

fn half_bf16() -> Case {
    let n = 16;
    let h: Vec<f16> = (0..n)
        .map(|t| f16::from_f32(0.37 * t as f32 - 2.0))
        .collect();
    let b: Vec<bf16> = (0..n)
        .map(|t| bf16::from_f32(1.3 * t as f32 - 7.0))
        .collect();
    let r = |v: f32| f16::from_f32(v);
    let rb = |v: f32| bf16::from_f32(v);
    let mut hout = Vec::new();
    let mut bout = Vec::new();
    let mut f = Vec::new();
    for t in 0..n {
        let x = h[t].to_f32();
        let y = b[t].to_f32();
        hout.extend([
            r(x + x),
            r(x * r(1.1).to_f32()),
            r(x / 3.0),
            r(x - r(0.1).to_f32()),
        ]);
        bout.extend([rb(y + y), rb(y * rb(1.1).to_f32())]);
        f.push(r(x * x).to_f32());
        f.push(rb(y - 0.5).to_f32());
    }
    case(
        lisp!("half_bf16"),
        "half-math",
        [1, 1, 1],
        [n as u32, 1, 1],
        vec![
            input(&h),
            input(&b),
            output(&hout),
            output(&bout),
            output(&f),
        ],
    )
}

fn half2() -> Case {
    let n = 8;
    let a: Vec<f16> = f16s(&(0..2 * n).map(|k| 0.3 * k as f32 - 1.0).collect::<Vec<_>>());
    let mut out = Vec::new();
    let mut lo = Vec::new();
    for t in 0..n {
        let (x, y) = (a[2 * t].to_f32(), a[2 * t + 1].to_f32());
        let sx = f16::from_f32(x + 1.0).to_f32();
        let sy = f16::from_f32(y + 2.0).to_f32();
        out.extend([f16::from_f32(sx * x), f16::from_f32(sy * y)]);
        lo.push(f16::from_f32(sy * y));
    }
    case(
        lisp!("half2"),
        "half2-math",
        [1, 1, 1],
        [n as u32, 1, 1],
        vec![input(&a), output(&out), output(&lo)],
    )
}

fn fp8_fp4() -> Case {
    // (input, E4M3 code, its value, E2M1 code, its value), from the formats' tables.
    let table: [(f32, u8, f32, u8, f32); 12] = [
        (0.0, 0x00, 0.0, 0x0, 0.0),
        (1.0, 0x38, 1.0, 0x2, 1.0),
        (-2.0, 0xc0, -2.0, 0xc, -2.0),
        (0.3, 0x2a, 0.3125, 0x1, 0.5),
        (1.0625, 0x38, 1.0, 0x2, 1.0),
        (1.1875, 0x3a, 1.25, 0x2, 1.0),
        (448.0, 0x7e, 448.0, 0x7, 6.0),
        (1000.0, 0x7e, 448.0, 0x7, 6.0),
        (-1.0e9, 0xfe, -448.0, 0xf, -6.0),
        (0.001953125, 0x01, 0.001953125, 0x0, 0.0),
        (2.5, 0x42, 2.5, 0x4, 2.0),
        (5.5, 0x4b, 5.5, 0x7, 6.0),
    ];
    let x: Vec<f32> = table.iter().map(|r| r.0).collect();
    let c8: Vec<Fp8E4M3> = table.iter().map(|r| Fp8E4M3(r.1)).collect();
    let v8: Vec<f32> = table.iter().map(|r| r.2).collect();
    let c4: Vec<Fp4E2M1> = table.iter().map(|r| Fp4E2M1(r.3)).collect();
    let v4: Vec<f32> = table.iter().map(|r| r.4).collect();
    case(
        lisp!("fp8_fp4"),
        "narrow-floats",
        [1, 1, 1],
        [table.len() as u32, 1, 1],
        vec![
            input(&x),
            output(&c8),
            output(&v8),
            output(&c4),
            output(&v4),
        ],
    )
}

fn curand_uniform() -> Case {
    let n = 32;
    let mut out = Vec::new();
    for t in 0..n {
        let mut g = Xorwow::new(1234, 4 * t as u64);
        for _ in 0..4 {
            out.push(g.next() as f32 * 2.3283064e-10f32 + 2.3283064e-10f32 / 2.0);
        }
    }
    case(
        lisp!("curand_uniform"),
        "uniforms",
        [1, 1, 1],
        [n as u32, 1, 1],
        vec![
            scratch(48 * n),
            // A GPU may contract `x * 2^-32 + 2^-33` into one fma: allow that last-bit difference.
            output_f32(out, 2e-7),
        ],
    )
}

fn curand_normal() -> Case {
    fn check_f(b: &[u8]) -> Result<(), String> {
        let v: Vec<f32> = from_bytes(b);
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / v.len() as f64;
        if mean.abs() > 0.1 || (var - 1.0).abs() > 0.15 {
            return Err(format!("float normals have mean {mean} and variance {var}"));
        }
        let distinct = v.windows(2).filter(|w| w[0] != w[1]).count();
        if distinct < v.len() - 2 {
            return Err("float normals repeat".into());
        }
        Ok(())
    }
    fn check_d(b: &[u8]) -> Result<(), String> {
        let v: Vec<f64> = from_bytes(b);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        if mean.abs() > 0.15 || (var - 1.0).abs() > 0.2 {
            return Err(format!(
                "double normals have mean {mean} and variance {var}"
            ));
        }
        Ok(())
    }
    fn check_u(b: &[u8]) -> Result<(), String> {
        let v: Vec<f64> = from_bytes(b);
        if v.iter().any(|&x| !(x > 0.0 && x <= 1.0)) {
            return Err("a double uniform is outside (0, 1]".into());
        }
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        if (mean - 0.5).abs() > 0.06 {
            return Err(format!("double uniforms have mean {mean}"));
        }
        Ok(())
    }
    let n = 512;
    case(
        lisp!("curand_normal"),
        "normals",
        [4, 1, 1],
        [128, 1, 1],
        vec![
            scratch(48 * n),
            checked(8 * n, check_f),
            checked(8 * n, check_d),
            checked(8 * n, check_u),
        ],
    )
}

fn printf() -> Case {
    case(
        lisp!("printf"),
        "say",
        [1, 1, 1],
        [32, 1, 1],
        vec![value(3i32), input(b"ok\0")],
    )
}

fn globals() -> Case {
    let mut c = case(
        lisp!("globals"),
        "add-globals",
        [1, 1, 1],
        [1, 1, 1],
        vec![output(&[3i32]), output_f32(vec![2.0], 0.0)],
    );
    c.globals = vec![
        GlobalValue {
            name: "foo",
            init: Some(bytes(&[1i32])),
            expect: Expect::Bytes(bytes(&[7i32])),
        },
        GlobalValue {
            name: "bar",
            init: Some(bytes(&[2i32])),
            expect: Expect::Bytes(bytes(&[2i32])),
        },
        GlobalValue {
            name: "counter",
            init: None,
            expect: Expect::Bytes(bytes(&[10i32])),
        },
    ];
    c
}

fn dynamic_shared() -> Case {
    let n = 128;
    let a: Vec<i32> = (0..n).map(|i| i * 3 + 1).collect();
    let mut out = Vec::new();
    for block in 0..2 {
        let slice = &a[block * 64..block * 64 + 64];
        for t in 0..64 {
            // Byte 4·t of the int array is the low byte of element t (little-endian).
            out.push(slice[63 - t] + 1000 * (slice[t] & 0xff));
        }
    }
    let mut c = case(
        lisp!("dynamic_shared"),
        "reverse",
        [2, 1, 1],
        [64, 1, 1],
        vec![input(&a), output(&out)],
    );
    c.shared_mem = 64 * 4;
    c
}

fn shared_2d() -> Case {
    let n = 32;
    let a: Vec<f32> = (0..n * n).map(|i| i as f32).collect();
    let t: Vec<f32> = (0..n * n).map(|i| a[(i % n) * n + i / n]).collect();
    case(
        lisp!("shared_2d"),
        "transpose",
        [2, 2, 1],
        [16, 16, 1],
        vec![input(&a), output(&t), value(n as i32)],
    )
}

fn votes() -> Case {
    let mut out = Vec::new();
    for w in 0..2u32 {
        let ballot = (0..32u32)
            .filter(|l| (32 * w + l) % 3 == 0)
            .fold(0u32, |m, l| m | 1 << l);
        let low10 = (1u32 << 10) - 1;
        let odd_low = (0..10u32)
            .filter(|l| l % 2 == 1)
            .fold(0u32, |m, l| m | 1 << l);
        out.extend([ballot, 1, 0, 1, low10, odd_low]);
    }
    case(
        lisp!("votes"),
        "votes",
        [1, 1, 1],
        [64, 1, 1],
        vec![output(&out)],
    )
}

fn matches() -> Case {
    let key = |t: u32| (t / 4) % 3;
    let mut out = Vec::new();
    for t in 0..32 {
        out.push(
            (0..32)
                .filter(|&j| key(j) == key(t))
                .fold(0u32, |m, j| m | 1 << j),
        );
    }
    out.extend([u32::MAX; 32]);
    out.extend([0u32; 32]);
    let mut preds = vec![1i32; 32];
    preds.extend([0i32; 32]);
    case(
        lisp!("match"),
        "matches",
        [1, 1, 1],
        [32, 1, 1],
        vec![output(&out), output(&preds)],
    )
}

fn warp_reduce_ops() -> Case {
    let data = random_ints(5, 64, -1000..1001);
    let mut out = vec![0i32; 12];
    let mut uout = vec![0u32; 12];
    for w in 0..2 {
        let c = &data[32 * w..32 * w + 32];
        out[6 * w] = c.iter().sum();
        out[6 * w + 1] = *c.iter().min().unwrap_or(&0);
        out[6 * w + 2] = *c.iter().max().unwrap_or(&0);
        uout[6 * w] = c.iter().fold(u32::MAX, |a, &x| a & x as u32);
        uout[6 * w + 1] = c.iter().fold(0, |a, &x| a | x as u32);
        uout[6 * w + 2] = c.iter().fold(0, |a, &x| a ^ x as u32);
    }
    case(
        lisp!("warp_reduce_ops"),
        "reductions",
        [1, 1, 1],
        [64, 1, 1],
        vec![input(&data), output(&out), output(&uout)],
    )
}

fn atomics_int() -> Case {
    let n: i64 = 1024;
    let init_i = [0i32, 0, i32::MAX, i32::MIN, -1, 0, 0, -7, 0];
    fn check_exch(b: &[u8]) -> Result<(), String> {
        // Every old value is -7 (the initial) or a thread id, all different; the last thread
        // id exchanged in stays in memory.
        let mut v: Vec<i32> = from_bytes(b);
        v.sort();
        if v.len() != 1024
            || v[0] != -7
            || v.windows(2).any(|w| w[0] == w[1])
            || v.iter().any(|&x| x != -7 && !(0..1024).contains(&x))
        {
            return Err(format!(
                "exchanged values are not a chain of distinct ids: {:?}",
                &v[..8.min(v.len())]
            ));
        }
        Ok(())
    }
    fn check_i(b: &[u8]) -> Result<(), String> {
        let v: Vec<i32> = from_bytes(b);
        let n = 1024;
        let mut and = -1i32;
        let mut or = 0i32;
        let mut xor = 0i32;
        for t in 0..n {
            and &= !(1 << (t % 31));
            or |= 1 << (t % 31);
            xor ^= t;
        }
        let want = [
            n * (n - 1) / 2,
            -(n * (n - 1) / 2),
            500 - (n - 1),
            500,
            and,
            or,
            xor,
        ];
        if v[..7] != want {
            return Err(format!("int atomics gave {:?}, expected {want:?}", &v[..7]));
        }
        if !(0..n).contains(&v[7]) {
            return Err(format!("exchange left {} in memory", v[7]));
        }
        if v[8] != n {
            return Err(format!(
                "the compare-and-swap counter is {}, expected {n}",
                v[8]
            ));
        }
        Ok(())
    }
    let u_after = [
        (n % 101) as u32,
        {
            // atomicDec from 0 with limit 100: 0 → 100 → 99 … (a cycle of 101).
            let mut x = 0u32;
            for _ in 0..n {
                x = if x == 0 || x > 100 { 100 } else { x - 1 };
            }
            x
        },
        7,
        (n - 1) as u32,
    ];
    let l_after = [
        (0..n as u64).map(|t| t * 1_000_000_000).sum::<u64>(),
        (n - 1) as u64,
    ];
    let s_after = [-5_000_000_000i64, 3 * (n - 1)];
    case(
        lisp!("atomics_int"),
        "int-atomics",
        [8, 1, 1],
        [128, 1, 1],
        vec![
            Arg::Buffer {
                data: bytes(&init_i),
                expect: Expect::Check(check_i),
            },
            exact(&[0u32, 0, u32::MAX, 0], &u_after),
            exact(&[0u64, 0], &l_after),
            exact(&[0i64, i64::MIN], &s_after),
            checked(4 * n as usize, check_exch),
        ],
    )
}

fn atomics_float() -> Case {
    let n = 512;
    let dsum: f64 = (0..n).map(|t| 0.5 * t as f64).sum();
    fn check_f(b: &[u8]) -> Result<(), String> {
        let v: Vec<f32> = from_bytes(b);
        let want: f32 = (0..512).map(|t| (t % 10) as f32).sum();
        if v[0] != want || !(0.0..512.0).contains(&v[1]) {
            return Err(format!(
                "float atomics left {:?}, expected a sum of {want} and a thread id",
                v
            ));
        }
        Ok(())
    }
    case(
        lisp!("atomics_float"),
        "float-atomics",
        [4, 1, 1],
        [128, 1, 1],
        vec![
            Arg::Buffer {
                data: bytes(&[0.0f32, -1.0]),
                expect: Expect::Check(check_f),
            },
            exact(&[0.0f64], &[dsum]),
            // 512 half additions of 1.0 from 0 are exact up to 2048.
            exact(&[f16::from_f32(0.0)], &[f16::from_f32(512.0)]),
            scratch(4 * n),
        ],
    )
}

fn math_float() -> Case {
    let x: Vec<f32> = vec![0.5, 1.0, 1.7, 2.5, 3.25, 0.125, 10.0, 0.9];
    let mut out = Vec::new();
    for &v in &x {
        out.extend([
            v.sqrt(),
            v.exp(),
            v.ln(),
            v.sin(),
            v.cos(),
            v.tan(),
            1.0 / v.sqrt(),
            v.powf(1.5),
            v.floor(),
            v.ceil(),
            v.round(),
            v.trunc(),
            v.tanh(),
            v.atan2(2.0),
            erf(v as f64) as f32,
            (1.0 - erf(v as f64)) as f32,
            v.log2(),
            v.exp2(),
            v.cbrt(),
            v.hypot(3.0),
            v.exp(),
            v.sin(),
            v.log2(),
            v % 0.75,
        ]);
    }
    case(
        lisp!("math_float"),
        "float-math",
        [1, 1, 1],
        [x.len() as u32, 1, 1],
        vec![
            input(&x),
            // CUDA's float functions are within a few ulp; its __expf, __sinf and __log2f
            // intrinsics are coarser.
            output_f32(out, 1e-5),
        ],
    )
}

/// erf by its Taylor series (enough terms for |x| ≤ 10 in f64 when summed carefully).
fn erf(x: f64) -> f64 {
    if x.abs() > 5.0 {
        return x.signum();
    }
    let mut sum = 0.0;
    let mut term = x;
    let mut n = 0;
    while term.abs() > 1e-20 || n < 5 {
        sum += term / (2 * n + 1) as f64;
        n += 1;
        term *= -x * x / n as f64;
        if n > 400 {
            break;
        }
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

fn math_double() -> Case {
    let x: Vec<f64> = vec![0.5, 1.0, 1.7, 2.5, 3.25, 0.125];
    let mut out = Vec::new();
    for &v in &x {
        out.extend([
            v.sqrt(),
            v.exp(),
            v.ln(),
            v.sin(),
            v.cosh(),
            (v / 4.0).asin(),
            v.powf(2.5),
            erf(v),
            v.ln_1p(),
            v.exp_m1(),
        ]);
    }
    case(
        lisp!("math_double"),
        "double-math",
        [1, 1, 1],
        [x.len() as u32, 1, 1],
        vec![input(&x), output_f64(out, 1e-12)],
    )
}

fn int_intrinsics() -> Case {
    let x: Vec<u32> = vec![0, 1, 0x8000_0000, 0xf0, 0xffff_ffff, 12345, 0x0001_0000, 7];
    let y: Vec<u64> = vec![0, 1, 1 << 63, 0xff00, u64::MAX, 1 << 40, 123_456_789_012, 3];
    let ffs32 = |v: u32| {
        if v == 0 {
            0
        } else {
            v.trailing_zeros() as i32 + 1
        }
    };
    let ffs64 = |v: u64| {
        if v == 0 {
            0
        } else {
            v.trailing_zeros() as i32 + 1
        }
    };
    let mut out = Vec::new();
    for (a, b) in x.iter().zip(&y) {
        out.extend([
            a.leading_zeros() as i32,
            a.count_ones() as i32,
            ffs32(*a),
            b.leading_zeros() as i32,
            b.count_ones() as i32,
            ffs64(*b),
        ]);
    }
    let rev: Vec<u32> = x.iter().map(|v| v.reverse_bits()).collect();
    let rev64: Vec<u64> = y.iter().map(|v| v.reverse_bits()).collect();
    case(
        lisp!("int_intrinsics"),
        "bits",
        [1, 1, 1],
        [8, 1, 1],
        vec![
            input(&x),
            input(&y),
            output(&out),
            output(&rev),
            output(&rev64),
        ],
    )
}

fn fma_saturate() -> Case {
    let x: Vec<f32> = vec![-1.0, 0.0, 0.25, 0.5, 1.0, 2.5, -0.5, 0.999];
    let dx: Vec<f64> = vec![2.5, 3.5, -2.5, -3.5, 0.4999, 1e10, -1e10, 7.0];
    let mut out = Vec::new();
    for &v in &x {
        out.extend([v.mul_add(3.0, 0.25), v.clamp(0.0, 1.0), v / 4.0]);
    }
    let rn: Vec<i32> = dx.iter().map(|d| d.round_ties_even() as i32).collect();
    case(
        lisp!("fma_saturate"),
        "special",
        [1, 1, 1],
        [8, 1, 1],
        vec![input(&x), input(&dx), output_f32(out, 1e-6), output(&rn)],
    )
}

fn int_conversions() -> Case {
    let x: Vec<f32> = vec![2.7, -2.7, 1e10, -1e10, 0.5, -0.5, 100.99, 3.0];
    let mut out = Vec::new();
    let mut u = Vec::new();
    let mut l = Vec::new();
    let mut b = Vec::new();
    for t in 0..8i32 {
        out.extend([
            x[t as usize] as i32,
            (t * 50) as i8 as i32,
            (t - 3) as u8 as i32,
            (7 - t) / 2,
            (7 - t) % 3,
            (-(t * 1000)) >> 3,
            (t * 20000) as i16 as i32,
            2147483647i32.wrapping_mul(t + 1),
        ]);
        u.push(u32::MAX.wrapping_add(t as u32));
        l.push((t as i64 + 1) * 3_000_000_000);
        b.push(250u8.wrapping_add(t as u8));
    }
    case(
        lisp!("int_conversions"),
        "conversions",
        [1, 1, 1],
        [8, 1, 1],
        vec![input(&x), output(&out), output(&u), output(&l), output(&b)],
    )
}

fn select_and_or() -> Case {
    let n = 20;
    let a: Vec<i32> = (0..n).map(|i| (i * 7) % 23).collect();
    let mut out = Vec::new();
    for i in 0..32 {
        let inside = i < n;
        let v = if inside { a[i as usize] } else { 0 };
        out.push(if inside { v } else { -1 });
        out.push((inside && v > 10) as i32);
        out.push(if !inside || v == 0 || v < 5 { 7 } else { 8 });
    }
    case(
        lisp!("select_and_or"),
        "guarded",
        [1, 1, 1],
        [32, 1, 1],
        vec![input(&a), value(n), output(&out)],
    )
}

fn nested_loops() -> Case {
    let out: Vec<i32> = (0..48)
        .map(|t| {
            let mut acc = 0;
            for i in 0..10 {
                if (i + t) % 3 == 0 {
                    continue;
                }
                for j in 0..10 {
                    if i * j > t + 5 {
                        break;
                    }
                    acc += i + j;
                }
            }
            acc
        })
        .collect();
    case(
        lisp!("nested_loops"),
        "nested",
        [1, 1, 1],
        [48, 1, 1],
        vec![output(&out)],
    )
}

fn early_return() -> Case {
    let n = 40;
    let mut out: Vec<i32> = (0..n)
        .map(|t| {
            let (start, k) = (t * 10, t % 7 + 3);
            (start..=1000).find(|i| i % k == 0).unwrap_or(-1)
        })
        .collect();
    let mut init = vec![0i32; 64];
    out.extend(vec![-9i32; 64 - n as usize]);
    init[n as usize..].fill(-9);
    case(
        lisp!("early_return"),
        "early",
        [1, 1, 1],
        [64, 1, 1],
        vec![exact(&init, &out), value(n)],
    )
}

fn macros() -> Case {
    let out: Vec<i32> = (0..8)
        .map(|t| 2 * t + 10 + if t > 3 { 1000 } else { 500 })
        .collect();
    case(
        lisp!("macros"),
        "macros",
        [1, 1, 1],
        [8, 1, 1],
        vec![output(&out)],
    )
}

fn pointers() -> Case {
    let n = 16;
    let a: Vec<i32> = (0..2 * n).collect();
    let after: Vec<i32> = (0..2 * n)
        .map(|i| if i % 2 == 0 { i + 1 } else { i + 10 })
        .collect();
    let out: Vec<f32> = (0..n)
        .map(|t| (0..4).map(|i| (i * t) as f32).sum())
        .collect();
    case(
        lisp!("pointers"),
        "pointers",
        [1, 1, 1],
        [n as u32, 1, 1],
        vec![exact(&a, &after), output(&out)],
    )
}

fn matmul() -> Case {
    let n = 20;
    let a: Vec<f32> = (0..n * n).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
    let b: Vec<f32> = (0..n * n).map(|i| ((i * 3) % 13) as f32 - 6.0).collect();
    let mut c = vec![0.0f32; n * n];
    for r in 0..n {
        for col in 0..n {
            c[r * n + col] = (0..n).map(|k| a[r * n + k] * b[k * n + col]).sum();
        }
    }
    case(
        lisp!("matmul"),
        "matmul",
        [2, 2, 1],
        [16, 16, 1],
        vec![input(&a), input(&b), output_f32(c, 0.0), value(n as i32)],
    )
}

/// The initial field of diffuse0: exp(-30 (x² + y²)) on a 256×256 grid of [-0.5, 0.5]².
pub fn diffuse_initial(nx: usize, ny: usize) -> Vec<f32> {
    let dx = 1.0 / nx as f32;
    let dy = 1.0 / ny as f32;
    let mut f = vec![0.0f32; nx * ny];
    for jy in 0..ny {
        for jx in 0..nx {
            let x = dx * (jx as f32 + 0.5) - 0.5;
            let y = dy * (jy as f32 + 0.5) - 0.5;
            f[nx * jy + jx] = (-30.0 * (x * x + y * y)).exp();
        }
    }
    f
}

/// One diffuse0 step in plain Rust (the kernel's association order).
pub fn diffuse_step(f: &[f32], fnext: &mut [f32], nx: usize, ny: usize, c0: f32, c1: f32, c2: f32) {
    for jy in 0..ny {
        for jx in 0..nx {
            let j = nx * jy + jx;
            let fcc = f[j];
            let fcw = if jx == 0 { fcc } else { f[j - 1] };
            let fce = if jx == nx - 1 { fcc } else { f[j + 1] };
            let fcs = if jy == 0 { fcc } else { f[j - nx] };
            let fcn = if jy == ny - 1 { fcc } else { f[j + nx] };
            fnext[j] = c0 * (fce + fcw) + c1 * (fcn + fcs) + c2 * fcc;
        }
    }
}

fn diffuse() -> Case {
    let (nx, ny) = (256, 256);
    let f = diffuse_initial(nx, ny);
    let (c0, c1) = (0.2f32, 0.2f32);
    let c2 = 1.0 - 2.0 * (c0 + c1);
    let mut next = vec![0.0f32; nx * ny];
    diffuse_step(&f, &mut next, nx, ny, c0, c1, c2);
    case(
        lisp!("diffuse"),
        "diffuse",
        [1, 256, 1],
        [256, 1, 1],
        vec![
            input(&f),
            output_f32(next, 1e-6),
            value(nx as i32),
            value(ny as i32),
            value(c0),
            value(c1),
            value(c2),
        ],
    )
}

fn bools() -> Case {
    let flags: Vec<u8> = (0..32).map(|t| (t % 3 == 0) as u8).collect();
    let after: Vec<u8> = flags.iter().map(|f| 1 - f).collect();
    let count = after.iter().map(|&f| f as i32).sum::<i32>();
    case(
        lisp!("bools"),
        "bools",
        [1, 1, 1],
        [32, 1, 1],
        vec![
            exact(&flags, &after),
            value(chorus_lang::host::Bool8(1)),
            output(&[count]),
        ],
    )
}

fn size_t_indexing() -> Case {
    let n: u64 = 10_000_000_000;
    let mut out: Vec<u64> = (0..32u64).map(|t| n * 2 + t + (1u64 << (t + 32))).collect();
    out.extend((0..32u64).map(|t| t.wrapping_sub(1)));
    case(
        lisp!("size_t_indexing"),
        "wide",
        [1, 1, 1],
        [32, 1, 1],
        vec![output(&out), value(chorus_lang::host::SizeT(n))],
    )
}

fn barrier_loop() -> Case {
    let mut a: Vec<f32> = (0..128)
        .map(|i| if i % 16 == 0 { 16.0 } else { 0.0 })
        .collect();
    let init = a.clone();
    for _ in 0..5 {
        let b: Vec<f32> = (0..128)
            .map(|t| {
                let left = if t == 0 { a[t] } else { a[t - 1] };
                let right = if t == 127 { a[t] } else { a[t + 1] };
                0.25 * (left + right + 2.0 * a[t])
            })
            .collect();
        a = b;
    }
    case(
        lisp!("barrier_loop"),
        "smooth",
        [1, 1, 1],
        [128, 1, 1],
        vec![
            Arg::Buffer {
                data: bytes(&init),
                expect: Expect::F32(a, 1e-6),
            },
            value(5i32),
        ],
    )
}

fn shared_scalar() -> Case {
    let out = vec![(1..=96).sum::<i32>(); 3];
    case(
        lisp!("shared_scalar"),
        "block-count",
        [3, 1, 1],
        [96, 1, 1],
        vec![output(&out)],
    )
}

fn lane_ids() -> Case {
    let out: Vec<i32> = (0..128).map(|l| l % 32 + 100 * (l / 32) + 320000).collect();
    case(
        lisp!("lane_ids"),
        "lanes",
        [1, 1, 1],
        [16, 8, 1],
        vec![output(&out)],
    )
}

fn small_ints() -> Case {
    let a: Vec<i8> = (0..16).map(|t| (t * 11 - 60) as i8).collect();
    let b: Vec<u16> = (0..16).map(|t| t * 300).collect();
    let c: Vec<i16> = (0..16).map(|t| t * 1000).collect();
    let a2: Vec<i8> = a.iter().map(|x| x.wrapping_mul(3)).collect();
    let b2: Vec<u16> = b.iter().map(|x| x.wrapping_sub(1000)).collect();
    let c2: Vec<i16> = c.iter().map(|x| x.wrapping_add(30000)).collect();
    case(
        lisp!("small_ints"),
        "small-ints",
        [1, 1, 1],
        [16, 1, 1],
        vec![exact(&a, &a2), exact(&b, &b2), exact(&c, &c2)],
    )
}
