//! Symmetric eigen-decomposition with cuSOLVER (`syevd`) of a matrix a kernel of the kernel
//! language builds (a smooth kernel matrix plus a diagonal), f64. Checks ‖A·v − λ·v‖ for 32
//! eigenpairs and the trace against Σλ on the host in f64. Prints the time.
//!
//! `cargo run --release --example cusolver-eigen` (needs the CUDA backend and cuSOLVER).

use chorus::{Direction, Launch, MemoryBlock};
use chorus_cuda_libs::Fill;
use chorus_cuda_libs::cusolver::Solver;
use chorus_examples::banner;
use std::process::ExitCode;

chorus::defkernel! {
    (defkernel build-matrix (void ((a double*) (n int)))
      (let ((idx (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< idx (* n n))
            (let* ((i (mod idx n))
                   (j (/ idx n))
                   (d (double (- i j))))
              (set (aref a idx) (+ (/ 1.0d0 (+ 1.0d0 (* d d)))
                                   (if (= i j) (double (mod i 7)) 0.0d0)))))))
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let backend = banner("cusolver-eigen")?;
    if backend != chorus::Backend::Cuda {
        println!("skipped: the CUDA libraries need the CUDA backend");
        return Ok(true);
    }
    let n = 2048usize;
    let mut a = MemoryBlock::<f64>::alloc(n * n)?;
    let mut w = MemoryBlock::<f64>::alloc(n)?;
    build_matrix(
        &mut a,
        n as i32,
        Launch::grid((n * n).div_ceil(256)).block(256),
    )?;
    a.sync(Direction::DeviceToHost)?;
    let original = a.as_slice().to_vec();
    let stream = chorus_cuda_libs::Stream::null();
    let solver = Solver::new(&stream)?;
    let start = std::time::Instant::now();
    solver.syevd(true, Fill::Lower, n, &mut a, n, &mut w)?;
    let elapsed = start.elapsed();
    a.sync(Direction::DeviceToHost)?;
    w.sync(Direction::DeviceToHost)?;
    let (v, lambda) = (a.as_slice(), w.as_slice());
    let mut worst = 0.0f64;
    for s in 0..32 {
        let j = (s * 131) % n;
        for i in 0..n {
            let av: f64 = (0..n).map(|p| original[i + p * n] * v[p + j * n]).sum();
            worst = worst.max((av - lambda[j] * v[i + j * n]).abs());
        }
    }
    let trace: f64 = (0..n).map(|i| original[i + i * n]).sum();
    let sum: f64 = lambda.iter().sum();
    println!("syevd of a {n} × {n} symmetric f64 matrix built by a kernel");
    println!(
        "eigenvalues {:.4} … {:.4}; trace {trace:.6}, Σλ {sum:.6}",
        lambda[0],
        lambda[n - 1]
    );
    println!("largest |A·v − λ·v| over 32 eigenpairs: {worst:.2e}");
    println!(
        "elapsed time {:.3} ms, {:.1} GFLOP/s (≈ 9n³ flops with vectors)",
        elapsed.as_secs_f64() * 1e3,
        9.0 * (n as f64).powi(3) / elapsed.as_secs_f64() / 1e9
    );
    Ok(worst < 1e-9 && (trace - sum).abs() < 1e-9 * trace.abs())
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "cusolver-eigen",
        "cuSOLVER's symmetric eigen-decomposition of a kernel-built matrix",
    );
    chorus_examples::exit_code("cusolver-eigen", run())
}
