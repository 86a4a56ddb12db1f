//! cuBLAS on memory that kernels of the kernel language fill and finish: a kernel makes A and B,
//! cuBLAS multiplies them (SGEMM, row-major through `gemm_row_major`), a kernel adds a bias and
//! applies ReLU, all on the same memory blocks with no copy in between. Checks 256 sampled
//! entries against f64 on the host; prints the time and TFLOP/s of the SGEMM.
//!
//! `cargo run --release --example cublas-gemm` (needs the CUDA backend and cuBLAS).

use chorus::{Direction, Launch, MemoryBlock};
use chorus_cuda_libs::Transpose;
use chorus_cuda_libs::cublas::Blas;
use chorus_examples::banner;
use std::process::ExitCode;

chorus::defkernel! {
    (defkernel fill-matrix (void ((a float*) (n int) (seed int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i n)
            (set (aref a i) (* 0.125 (float (- (mod (+ (* i 7) seed) 17) 8)))))))
}

chorus::defkernel! {
    (defkernel bias-relu (void ((c float*) (bias float*) (cols int) (n int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i n)
            (let ((v (+ (aref c i) (aref bias (mod i cols)))))
              (set (aref c i) (if (< v 0.0) 0.0 v))))))
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let backend = banner("cublas-gemm")?;
    if backend != chorus::Backend::Cuda {
        println!("skipped: the CUDA libraries need the CUDA backend");
        return Ok(true);
    }
    let (m, n, k) = (4096usize, 4096usize, 4096usize);
    let mut a = MemoryBlock::<f32>::alloc(m * k)?;
    let mut b = MemoryBlock::<f32>::alloc(k * n)?;
    let mut c = MemoryBlock::<f32>::alloc(m * n)?;
    let mut bias = MemoryBlock::<f32>::alloc(n)?;
    for (j, x) in bias.as_mut_slice().iter_mut().enumerate() {
        *x = (j % 5) as f32 - 2.0;
    }
    bias.sync(Direction::HostToDevice)?;
    let grid = |len: usize| Launch::grid(len.div_ceil(256)).block(256);
    fill_matrix(&mut a, (m * k) as i32, 1, grid(m * k))?;
    fill_matrix(&mut b, (k * n) as i32, 5, grid(k * n))?;
    // The facade's CUDA calls made the device's primary context current; the null stream orders
    // cuBLAS after the kernels and the epilogue kernel after cuBLAS.
    let stream = chorus_cuda_libs::Stream::null();
    let blas = Blas::new(&stream)?;
    let gemm = |c: &mut MemoryBlock<f32>| {
        blas.gemm_row_major(
            Transpose::No,
            Transpose::No,
            m,
            n,
            k,
            1.0f32,
            &a,
            k,
            &b,
            n,
            0.0,
            c,
            n,
        )
    };
    gemm(&mut c)?; // warm-up
    stream.synchronize()?;
    let start = std::time::Instant::now();
    gemm(&mut c)?;
    stream.synchronize()?;
    let elapsed = start.elapsed();
    bias_relu(&mut c, &bias, n as i32, (m * n) as i32, grid(m * n))?;
    c.sync(Direction::DeviceToHost)?;
    a.sync(Direction::DeviceToHost)?;
    b.sync(Direction::DeviceToHost)?;
    let mut worst = 0.0f64;
    for s in 0..256 {
        let (i, j) = ((s * 977) % m, (s * 389) % n);
        let dot: f64 = (0..k)
            .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
            .sum();
        let want = (dot + bias[j] as f64).max(0.0);
        worst = worst.max((c[i * n + j] as f64 - want).abs() / (1.0 + want.abs()));
    }
    let seconds = elapsed.as_secs_f64();
    println!(
        "SGEMM {m}×{n}×{k} (row-major, cuBLAS) on kernel-made inputs, bias + ReLU by a kernel"
    );
    println!(
        "elapsed time {:.3} ms, {:.1} TFLOP/s",
        seconds * 1e3,
        2.0 * (m * n * k) as f64 / seconds / 1e12
    );
    println!("largest relative error of 256 sampled entries against f64: {worst:.2e}");
    Ok(worst < 1e-4)
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "cublas-gemm",
        "A kernel makes A and B, cuBLAS multiplies, a kernel adds bias and ReLU",
    );
    chorus_examples::exit_code("cublas-gemm", run())
}
