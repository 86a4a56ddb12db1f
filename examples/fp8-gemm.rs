//! FP8 (E4M3) matrix product C = A·Bᵀ with f32 accumulation and BF16 output on Hopper's tensor
//! cores: the skeleton of `hgemm-hopper` (`kernels/hgemm-hopper.lisp`, `define-hopper-gemm`)
//! with 128-element K slices and wgmma m64n256k32 e4m3. 8192³.
//!
//! Like `hgemm-hopper`, it runs the kernel's four schedules: `fp8-gemm` (a block per tile),
//! `fp8-gemm-grouped` (the same in grouped order), `fp8-gemm-persistent` (a block per
//! multiprocessor) and `fp8-gemm-multicast` (persistent, in clusters of two sharing B).
//!
//! Checks 1024 sampled entries against the exact product (the inputs are multiples of 1/8 in
//! [−1, 1], exact in E4M3, so the only error is C's rounding to BF16), then makes the same
//! product with cuBLASLt's FP8 matmul on the same buffers in the same run (checked the same
//! way), and prints both rates and their ratio.
//!
//! `cargo run --release --example fp8-gemm` (needs a CUDA device of compute capability 9.0).

use chorus::cuda::TensorDataType;
use chorus::{Direction, Fp8E4M3, MemoryBlock, bf16};
use chorus_cuda_libs::cublaslt::{BlasLt, Fp8Scales, Matmul};
use chorus_cuda_libs::{AsDeviceSlice, Transpose};
use chorus_examples::workloads::{self, HopperSchedule, kernels};
use chorus_examples::{Random, banner};
use std::process::ExitCode;

/// The problem size: M = N = K.
const SIZE: usize = 8192;
/// Timed launches.
const ITERATIONS: u32 = 20;

/// `count` values, multiples of 1/8 in [−1, 1], exact in E4M3.
fn random_fp8(count: usize, random: &mut Random) -> Vec<Fp8E4M3> {
    (0..count)
        .map(|_| {
            let x = ((random.next_f32() * 17.0) as i32 - 8) as f32 / 8.0;
            Fp8E4M3::from_f32(x)
        })
        .collect()
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let backend = banner("fp8-gemm")?;
    if let Some(why) = workloads::hopper_unavailable(backend)? {
        println!("skipped: {why}");
        return Ok(true);
    }
    let (m, n, k) = (SIZE, SIZE, SIZE);
    let program = workloads::workload_program(&[kernels::HGEMM_HOPPER])?;
    let mut random = Random::new(13);
    let a_host = random_fp8(m * k, &mut random);
    let b_host = random_fp8(n * k, &mut random);
    let a = MemoryBlock::from_slice(&a_host)?;
    let b = MemoryBlock::from_slice(&b_host)?;
    let address = |block: &MemoryBlock<Fp8E4M3>| block.device_address().ok_or("no device address");
    // The TMA moves FP8 as bytes.
    let maps =
        workloads::HopperMaps::new(TensorDataType::U8, (address(&a)?, address(&b)?), (m, n, k))?;
    let value = |x: &Fp8E4M3| x.to_f64();
    let check = |c: &[bf16]| {
        workloads::check_gemm_samples(c, (m, n, k), |i| value(&a_host[i]), |i| value(&b_host[i]))
    };
    let tflops = |seconds: f64| 2.0 * (m * n * k) as f64 / seconds / 1e12;
    println!(
        "FP8 E4M3 GEMM {m}×{n}×{k} (C = A·Bᵀ, f32 accumulation, BF16 out), {ITERATIONS} launches"
    );
    // The four schedules of the kernel, each printed as soon as it is measured: one block per
    // tile (rows of tiles first, or grouped), persistent blocks, and persistent pairs of blocks
    // sharing B.
    let mut ours = Vec::new();
    for schedule in HopperSchedule::ALL {
        let (kernel, seconds, c) = workloads::run_hopper_gemm(
            &program,
            ("fp8-gemm", schedule),
            workloads::GemmInputs::Maps(&maps),
            (m, n, k),
            ITERATIONS,
        )?;
        let (bad, worst) = check(&c);
        println!(
            "{kernel}: {:.3} ms, {:.1} TFLOP/s; 1024 sampled entries against the exact product: \
             {bad} beyond half a BF16 ulp (largest relative error {worst:.2e})",
            seconds * 1e3,
            tflops(seconds)
        );
        ours.push((kernel, seconds, bad));
    }
    // cuBLASLt on the same operands. It is column-major: row-major C = A·Bᵀ is, column-major,
    // Cᵀ (n×m) = B·Aᵀ, where B's storage is the column-major k×n matrix Bᵀ (so op = T, the
    // TN layout FP8 needs) and A's is Aᵀ (k×m, op = N). Unit scales.
    let stream = chorus_cuda_libs::Stream::null();
    let lt = BlasLt::new(&stream)?;
    // The kernels' fp8 is the libraries' Fp8E4M3: the same blocks, no cast.
    let (a_lt, b_lt) = (a.as_device_slice()?, b.as_device_slice()?);
    let unit = MemoryBlock::from_slice(&[1.0f32])?;
    let scales = Fp8Scales {
        a: unit.as_device_slice()?,
        b: unit.as_device_slice()?,
    };
    let shape = Matmul::new(Transpose::Yes, Transpose::No, n, m, k);
    let mut d = MemoryBlock::<bf16>::alloc(m * n)?;
    let mut matmul = || lt.matmul(&shape, 1.0, &b_lt, &a_lt, 0.0, &mut d, None, Some(scales));
    matmul()?;
    stream.synchronize()?;
    let start = std::time::Instant::now();
    for _ in 0..ITERATIONS {
        matmul()?;
    }
    stream.synchronize()?;
    let theirs = start.elapsed().as_secs_f64() / f64::from(ITERATIONS);
    d.sync(Direction::DeviceToHost)?;
    let (their_bad, _) = check(d.as_slice());
    println!(
        "cuBLASLt FP8 matmul (TN, unit scales, BF16 out): {:.3} ms, {:.1} TFLOP/s, {their_bad} \
         sampled entries beyond half a BF16 ulp",
        theirs * 1e3,
        tflops(theirs),
    );
    for (kernel, seconds, _) in &ours {
        println!("{kernel}/cuBLASLt = {:.1}%", 100.0 * theirs / seconds);
    }
    Ok(their_bad == 0 && ours.iter().all(|&(_, _, bad)| bad == 0))
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "fp8-gemm",
        "FP8 E4M3 GEMM with wgmma, TMA and warp specialisation (sm_90a)",
    );
    chorus_examples::exit_code("fp8-gemm", run())
}
