//! Sparse matrix × vector: cuSPARSE's SpMV (CSR, f32) against a CSR SpMV written in the kernel
//! language (one thread per row), on the 5-point Laplacian of a 2048 × 2048 grid (4.2 M rows,
//! 21 M non-zeros), both checked against f64 on the host at sampled rows. Prints both times and
//! their rate in GFLOP/s and GB/s.
//!
//! `cargo run --release --example cusparse-spmv` (needs the CUDA backend and cuSPARSE).

use chorus::{Direction, Launch, MemoryBlock};
use chorus_cuda_libs::Transpose;
use chorus_cuda_libs::cusparse::{Sparse, SparseMatrix};
use chorus_examples::{Random, banner};
use std::process::ExitCode;

chorus::defkernel! {
    (defkernel csr-spmv (void ((offsets int*) (cols int*) (values float*) (x float*) (y float*) (rows int)))
      (let ((row (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< row rows)
            (let ((s 0.0) (p (aref offsets row)))
              (while (< p (aref offsets (+ row 1)))
                (set s (+ s (* (aref values p) (aref x (aref cols p)))))
                (set p (+ p 1)))
              (set (aref y row) s)))))
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let backend = banner("cusparse-spmv")?;
    if backend != chorus::Backend::Cuda {
        println!("skipped: the CUDA libraries need the CUDA backend");
        return Ok(true);
    }
    let side = 2048usize;
    let rows = side * side;
    let (mut offsets, mut cols, mut values) = (vec![0i32], Vec::new(), Vec::new());
    for r in 0..rows {
        let (i, j) = (r / side, r % side);
        let mut push = |c: usize, v: f32| {
            cols.push(c as i32);
            values.push(v);
        };
        if i > 0 {
            push(r - side, -1.0);
        }
        if j > 0 {
            push(r - 1, -1.0);
        }
        push(r, 4.0);
        if j + 1 < side {
            push(r + 1, -1.0);
        }
        if i + 1 < side {
            push(r + side, -1.0);
        }
        offsets.push(cols.len() as i32);
    }
    let nnz = values.len();
    let mut random = Random::new(7);
    let x_host: Vec<f32> = (0..rows).map(|_| random.next_f32()).collect();
    let offsets_block = MemoryBlock::from_slice(&offsets)?;
    let cols_block = MemoryBlock::from_slice(&cols)?;
    let values_block = MemoryBlock::from_slice(&values)?;
    let x = MemoryBlock::from_slice(&x_host)?;
    let mut y_lib = MemoryBlock::<f32>::alloc(rows)?;
    let mut y_kernel = MemoryBlock::<f32>::alloc(rows)?;
    let stream = chorus_cuda_libs::Stream::null();
    let sparse = Sparse::new(&stream)?;
    let matrix = SparseMatrix::csr(rows, rows, &offsets_block, &cols_block, &values_block)?;
    let launch = || Launch::grid(rows.div_ceil(256)).block(256);
    let time = |f: &mut dyn FnMut() -> Result<(), Box<dyn std::error::Error>>| -> Result<f64, Box<dyn std::error::Error>> {
        f()?; // warm-up
        stream.synchronize()?;
        let start = std::time::Instant::now();
        for _ in 0..10 {
            f()?;
        }
        stream.synchronize()?;
        Ok(start.elapsed().as_secs_f64() / 10.0)
    };
    let lib_time =
        time(&mut || Ok(sparse.spmv(Transpose::No, 1.0f32, &matrix, &x, 0.0, &mut y_lib)?))?;
    let kernel_time = time(&mut || {
        Ok(csr_spmv(
            &offsets_block,
            &cols_block,
            &values_block,
            &x,
            &mut y_kernel,
            rows as i32,
            launch(),
        )?)
    })?;
    y_lib.sync(Direction::DeviceToHost)?;
    y_kernel.sync(Direction::DeviceToHost)?;
    let mut worst = 0.0f64;
    for s in 0..4096 {
        let r = (s * 104729) % rows;
        let want: f64 = (offsets[r] as usize..offsets[r + 1] as usize)
            .map(|p| values[p] as f64 * x_host[cols[p] as usize] as f64)
            .sum();
        worst = worst
            .max((y_lib[r] as f64 - want).abs())
            .max((y_kernel[r] as f64 - want).abs());
    }
    let bytes = (nnz * 8 + rows * 4 * 3) as f64;
    let report = |name: &str, t: f64| {
        println!(
            "{name}: {:.3} ms, {:.1} GFLOP/s, {:.0} GB/s",
            t * 1e3,
            2.0 * nnz as f64 / t / 1e9,
            bytes / t / 1e9
        )
    };
    println!("SpMV, {rows} rows, {nnz} non-zeros (5-point Laplacian), f32");
    report("cuSPARSE         ", lib_time);
    report("kernel (row/thread)", kernel_time);
    println!("largest error of 4096 sampled rows against f64: {worst:.2e}");
    Ok(worst < 1e-5)
}

fn main() -> ExitCode {
    chorus_examples::no_arguments("cusparse-spmv", "cuSPARSE SpMV against a CSR SpMV kernel");
    chorus_examples::exit_code("cusparse-spmv", run())
}
