//! Data-parallel SGEMM over every GPU there is (one or more): C = A·B (row-major, cuBLAS) with
//! A and C split by rows, each rank multiplying its rows of A by the whole of B into its rows
//! of C, then C's rows all-gathered in place so that every rank holds all of C. Rank 0 then
//! computes the whole product on one GPU with one cuBLAS call and compares every element; it
//! also checks sampled entries against `f64` on the host, and prints both times.
//!
//! `cargo run --release --example nccl-gemm [-- --size N]`, or under `nccl-launch`. N must be
//! a multiple of the number of ranks.

#[path = "nccl-world.rs"]
mod world;

use chorus::{Direction, MemoryBlock};
use chorus_cuda_libs::cublas::Blas;
use chorus_cuda_libs::{AsDeviceSliceMut, Transpose, nccl};
use chorus_examples::Random;
use clap::Parser;
use std::process::ExitCode;
use std::time::Instant;

/// Data-parallel SGEMM over every GPU, checked against one GPU.
#[derive(Parser, Debug)]
#[command(name = "nccl-gemm")]
struct Cli {
    /// The size of the square matrices.
    #[arg(long, default_value_t = 4096)]
    size: usize,
}

/// A rank's matrices: A's rows for it, all of B, all of C (its rows written by its GEMM).
struct Share {
    a: MemoryBlock<f32>,
    b: MemoryBlock<f32>,
    c: MemoryBlock<f32>,
}

fn run(cli: &Cli) -> Result<bool, Box<dyn std::error::Error>> {
    let Some(ranks) = world::ranks("nccl-gemm")? else {
        return Ok(true);
    };
    let n = cli.size;
    let world_size = ranks[0].comm.size();
    if n == 0 || !n.is_multiple_of(world_size) {
        return Err(format!("--size {n} is not a multiple of {world_size} ranks").into());
    }
    let rows = n / world_size;
    let mut random = Random::new(11);
    let a_host: Vec<f32> = (0..n * n).map(|_| 2.0 * random.next_f32() - 1.0).collect();
    let b_host: Vec<f32> = (0..n * n).map(|_| 2.0 * random.next_f32() - 1.0).collect();
    let mut shares = Vec::new();
    for r in &ranks {
        let first = r.comm.rank() * rows;
        shares.push(Share {
            a: MemoryBlock::from_slice_on(r.device, &a_host[first * n..(first + rows) * n])?,
            b: MemoryBlock::from_slice_on(r.device, &b_host)?,
            c: MemoryBlock::<f32>::alloc_on(r.device, n * n)?,
        });
    }
    // One cuBLAS handle per rank, on the rank's stream, made in its device's context.
    let mut handles = Vec::new();
    for r in &ranks {
        let _current = r.comm.enter()?;
        handles.push(Blas::new(r.cuda())?);
    }
    let multiply = |shares: &mut [Share]| -> chorus_cuda_libs::Result<()> {
        for ((r, share), blas) in ranks.iter().zip(shares.iter_mut()).zip(&handles) {
            let first = r.comm.rank() * rows;
            let mut mine = share
                .c
                .as_device_slice_mut()?
                .slice(first * n..(first + rows) * n)?;
            let _current = r.comm.enter()?;
            blas.gemm_row_major(
                Transpose::No,
                Transpose::No,
                rows,
                n,
                n,
                1.0f32,
                &share.a,
                n,
                &share.b,
                n,
                0.0,
                &mut mine,
                n,
            )?;
        }
        nccl::group(|g| {
            for (r, share) in ranks.iter().zip(shares.iter_mut()) {
                g.all_gather_in_place(&r.comm, &mut share.c, r.cuda())?;
            }
            Ok(())
        })?;
        world::wait_all(&ranks)
    };
    multiply(&mut shares)?; // warm-up
    let start = Instant::now();
    multiply(&mut shares)?;
    let split = start.elapsed().as_secs_f64();
    let mut ok = true;
    if world::is_lead(&ranks) {
        let (k0, r0) = ranks
            .iter()
            .enumerate()
            .find(|(_, r)| r.comm.rank() == 0)
            .expect("rank 0");
        let _current = r0.comm.enter()?;
        let a = MemoryBlock::from_slice_on(r0.device, &a_host)?;
        let mut c = MemoryBlock::<f32>::alloc_on(r0.device, n * n)?;
        let blas = &handles[k0];
        let whole = |c: &mut MemoryBlock<f32>| -> chorus_cuda_libs::Result<()> {
            blas.gemm_row_major(
                Transpose::No,
                Transpose::No,
                n,
                n,
                n,
                1.0f32,
                &a,
                n,
                &shares[k0].b,
                n,
                0.0,
                c,
                n,
            )?;
            Ok(r0.cuda().synchronize()?)
        };
        whole(&mut c)?;
        let start = Instant::now();
        whole(&mut c)?;
        let single = start.elapsed().as_secs_f64();
        c.sync(Direction::DeviceToHost)?;
        let share = &mut shares[k0];
        share.c.sync(Direction::DeviceToHost)?;
        let (got, want) = (share.c.as_slice(), c.as_slice());
        let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(1.0);
        let worst = got
            .iter()
            .zip(want)
            .map(|(g, w)| (g - w).abs())
            .fold(0.0f32, f32::max)
            / scale;
        let mut sampled = 0.0f64;
        for s in 0..64 {
            let (i, j) = ((s * 7919) % n, (s * 104_729) % n);
            let exact: f64 = (0..n)
                .map(|p| f64::from(a_host[i * n + p]) * f64::from(b_host[p * n + j]))
                .sum();
            sampled = sampled.max((f64::from(got[i * n + j]) - exact).abs() / (1.0 + exact.abs()));
        }
        let flops = 2.0 * (n * n * n) as f64;
        println!(
            "SGEMM {n}×{n}×{n} split by rows over {world_size} rank(s), rows all-gathered: \
             {:.3} ms ({:.1} TFLOP/s); one GPU: {:.3} ms ({:.1} TFLOP/s)",
            split * 1e3,
            flops / split / 1e12,
            single * 1e3,
            flops / single / 1e12
        );
        println!(
            "largest difference from one GPU: {worst:.2e} of the largest entry; \
             64 sampled entries against f64: {sampled:.2e}"
        );
        ok = worst <= 1e-5 && sampled <= 1e-4;
        println!(
            "{}",
            if ok {
                "verification succeeded"
            } else {
                "VERIFICATION FAILED"
            }
        );
    }
    drop(handles);
    world::finalize(ranks)?;
    Ok(ok)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    chorus_examples::exit_code("nccl-gemm", run(&cli))
}
