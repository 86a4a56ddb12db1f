//! FP8 (E4M3) matrix product C = A·Bᵀ with f32 accumulation and BF16 output on Hopper's tensor
//! cores: the skeleton of `hgemm-hopper` (`kernels/hgemm-hopper.lisp`, `define-hopper-gemm`)
//! with 128-element K slices and wgmma m64n256k32 e4m3. 8192³.
//!
//! Checks 1024 sampled entries against the exact product (the inputs are multiples of 1/8 in
//! [−1, 1], exact in E4M3, so the only error is C's rounding to BF16) and prints the rate; the
//! issue's reference is cuBLASLt's FP8 matmul on the same H200, 1407 TFLOP/s (not run here).
//!
//! `cargo run --release --example fp8-gemm` (needs a CUDA device of compute capability 9.0).

use chorus::cuda::TensorDataType;
use chorus::{Arg, Direction, Fp8E4M3, MemoryBlock, bf16};
use chorus_cuda_libs::F8E4M3;
use chorus_examples::workloads::{self, kernels};
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
            Fp8E4M3(F8E4M3::from_f32(x).0)
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
    let mut c = MemoryBlock::<bf16>::alloc(m * n)?;
    let address = |block: &MemoryBlock<Fp8E4M3>| block.device_address().ok_or("no device address");
    // The TMA moves FP8 as bytes.
    let a_map = workloads::hopper_gemm_map(TensorDataType::U8, address(&a)?, m, k, 128)?;
    let b_map = workloads::hopper_gemm_map(TensorDataType::U8, address(&b)?, n, k, 256)?;
    let gemm = |c: &MemoryBlock<bf16>| {
        let args = [
            Arg::tensor_map(&a_map),
            Arg::tensor_map(&b_map),
            c.as_arg(),
            Arg::value(m as i32),
            Arg::value(n as i32),
            Arg::value(k as i32),
        ];
        program.launch("fp8-gemm", &args, workloads::hopper_gemm_launch(m, n))
    };
    gemm(&c)?; // compile and load outside the time
    chorus::synchronize()?;
    let ((), elapsed) = workloads::timed(|| {
        for _ in 0..ITERATIONS {
            gemm(&c)?;
        }
        chorus::synchronize()
    })?;
    let seconds = elapsed.as_secs_f64() / f64::from(ITERATIONS);
    c.sync(Direction::DeviceToHost)?;
    let value = |x: &Fp8E4M3| f64::from(F8E4M3(x.0).to_f32());
    let (bad, worst) = workloads::check_gemm_samples(
        c.as_slice(),
        (m, n, k),
        |i| value(&a_host[i]),
        |i| value(&b_host[i]),
    );
    println!(
        "FP8 E4M3 GEMM {m}×{n}×{k} (C = A·Bᵀ, f32 accumulation, BF16 out), {ITERATIONS} launches"
    );
    println!(
        "fp8-gemm: {:.3} ms, {:.1} TFLOP/s ({:.1}% of cuBLASLt's 1407 TFLOP/s on the H200)",
        seconds * 1e3,
        2.0 * (SIZE as f64).powi(3) / seconds / 1e12,
        100.0 * 2.0 * (SIZE as f64).powi(3) / seconds / 1e12 / 1407.0
    );
    println!(
        "1024 sampled entries against the exact product: {bad} beyond half a BF16 ulp (largest \
         relative error {worst:.2e})"
    );
    Ok(bad == 0)
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "fp8-gemm",
        "FP8 E4M3 GEMM with wgmma, TMA and warp specialisation (sm_90a)",
    );
    chorus_examples::exit_code("fp8-gemm", run())
}
