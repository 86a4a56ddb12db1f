//! BF16 matrix product C = A·B on the tensor cores (mma.sync m16n8k16 + ldmatrix + a 3-stage
//! cp.async pipeline; `kernels/hgemm.lisp`, written with the tensor-core macro library),
//! f32 accumulation, BF16 result. Checks sampled entries against an f64 host reference (all
//! of them on the CPU executor) and, on CUDA, against cuBLAS's BF16 `gemmEx` in the same run,
//! and prints both rates and their ratio.
//!
//! `cargo run --release --example hgemm -- [--size N] [--iterations I]` (default 8192³ on the
//! GPU; 128×256×160 on the CPU executor, `CHORUS_BACKEND=cpu`).

use chorus::{Backend, Direction, MemoryBlock, bf16};
use chorus_cuda_libs::Transpose;
use chorus_cuda_libs::cublas::Blas;
use chorus_examples::tensor_gemm::{self, close, reference_entry};
use chorus_examples::{Random, banner, workloads};
use std::process::ExitCode;
use std::time::Instant;

/// `len` bf16 values uniform in [−1, 1).
fn random_matrix(len: usize, random: &mut Random) -> Vec<bf16> {
    (0..len)
        .map(|_| bf16::from_f32(2.0 * random.next_f32() - 1.0))
        .collect()
}

/// Runs `work` `iterations` times after one warm-up and returns the seconds per run (the null
/// stream orders the kernels and cuBLAS; it is synchronised before and after).
fn seconds_per_run(
    iterations: usize,
    mut work: impl FnMut() -> Result<(), Box<dyn std::error::Error>>,
) -> Result<f64, Box<dyn std::error::Error>> {
    let stream = chorus_cuda_libs::Stream::null();
    work()?;
    stream.synchronize()?;
    let start = Instant::now();
    for _ in 0..iterations {
        work()?;
    }
    stream.synchronize()?;
    Ok(start.elapsed().as_secs_f64() / iterations as f64)
}

fn run(size: Option<usize>, iterations: usize) -> Result<bool, Box<dyn std::error::Error>> {
    let backend = banner("hgemm")?;
    if let Some(why) = workloads::tensor_cores_unavailable()? {
        println!("skipped: {why}");
        return Ok(true);
    }
    let cpu = workloads::on_cpu(backend);
    let (m, n, k) = match size {
        Some(s) => (s, s, s),
        None if cpu => (128, 256, 160),
        None => (8192, 8192, 8192),
    };
    if let Some(why) = tensor_gemm::unsupported_shape(m, n, k) {
        return Err(why.into());
    }
    let program = tensor_gemm::program()?;
    let mut random = Random::new(7);
    let a_host = random_matrix(m * k, &mut random);
    let b_host = random_matrix(k * n, &mut random);
    let a = MemoryBlock::from_slice(&a_host)?;
    let b = MemoryBlock::from_slice(&b_host)?;
    let mut c = MemoryBlock::<bf16>::alloc(m * n)?;
    let flop = 2.0 * (m * n * k) as f64;
    println!("{m}×{n}×{k}, grid {}×{} of 128 threads", n / 128, m / 128);
    let ours = if cpu {
        let start = Instant::now();
        tensor_gemm::launch(&program, &a, &b, &c, (m, n, k))?;
        start.elapsed().as_secs_f64()
    } else {
        seconds_per_run(iterations, || {
            Ok(tensor_gemm::launch(&program, &a, &b, &c, (m, n, k))?)
        })?
    };
    println!(
        "hgemm (Chorus, mma.sync): {:.3} ms, {:.1} TFLOP/s",
        ours * 1e3,
        flop / ours / 1e12
    );
    c.sync(Direction::DeviceToHost)?;
    let samples: Vec<(usize, usize)> = if cpu {
        (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect()
    } else {
        (0..2048)
            .map(|s| ((s * 7919) % m, (s * 104_729) % n))
            .collect()
    };
    let mut ok = true;
    let mut bad = 0usize;
    for &(i, j) in &samples {
        let (want, magnitude) = reference_entry(&a_host, &b_host, (n, k), i, j);
        if !close(c[i * n + j], want, magnitude) {
            bad += 1;
        }
    }
    println!(
        "{} of {} sampled entries within bf16 rounding of the f64 reference",
        samples.len() - bad,
        samples.len()
    );
    ok &= bad == 0;
    if backend == Backend::Cuda {
        let stream = chorus_cuda_libs::Stream::null();
        let blas = Blas::new(&stream)?;
        let mut reference = MemoryBlock::<bf16>::alloc(m * n)?;
        let theirs = seconds_per_run(iterations, || {
            Ok(blas.gemm_ex_row_major::<bf16, bf16>(
                Transpose::No,
                Transpose::No,
                m,
                n,
                k,
                1.0,
                &a,
                k,
                &b,
                n,
                0.0,
                &mut reference,
                n,
            )?)
        })?;
        reference.sync(Direction::DeviceToHost)?;
        let differ = samples
            .iter()
            .filter(|&&(i, j)| {
                let (want, magnitude) = reference_entry(&a_host, &b_host, (n, k), i, j);
                // Both round an f32 sum to bf16: within one bf16 ulp of each other.
                (c[i * n + j].to_f64() - reference[i * n + j].to_f64()).abs()
                    > want.abs() / 128.0 + 2e-5 * magnitude + 1e-30
            })
            .count();
        println!(
            "cuBLAS gemmEx (BF16 in and out, f32 compute): {:.3} ms, {:.1} TFLOP/s; \
             Chorus/cuBLAS = {:.1}%; {differ} sampled entries differ by more than a bf16 ulp",
            theirs * 1e3,
            flop / theirs / 1e12,
            100.0 * theirs / ours
        );
        ok &= differ == 0;
    }
    if ok {
        println!("verification succeeded");
    }
    Ok(ok)
}

fn main() -> ExitCode {
    let matches = clap::Command::new("hgemm")
        .about("BF16 GEMM on the tensor cores (mma.sync, ldmatrix, cp.async), against cuBLAS")
        .arg(
            clap::Arg::new("size")
                .long("size")
                .value_parser(clap::value_parser!(usize))
                .help(
                    "M = N = K (multiples of 128; default 8192 on a GPU, 128×256×160 on the CPU)",
                ),
        )
        .arg(
            clap::Arg::new("iterations")
                .long("iterations")
                .value_parser(clap::value_parser!(usize))
                .default_value("20")
                .help("timed runs after one warm-up (GPU)"),
        )
        .get_matches();
    let size = matches.get_one::<usize>("size").copied();
    let iterations = matches
        .get_one::<usize>("iterations")
        .copied()
        .unwrap_or(20)
        .max(1);
    chorus_examples::exit_code("hgemm", run(size, iterations))
}
