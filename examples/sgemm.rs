//! FP32 matrix product C = A·B on the CUDA cores, register-tiled (`kernels/sgemm.lisp`: 128×128
//! block tiles, an 8×8 tile per thread in sixteen float4 accumulators, whose 512 multiply-adds per
//! k-tile the kernel macros write out). A is given transposed. 2048³ on the GPU (128×256×64 on the
//! CPU executor); checks sampled entries (all of them on the CPU) against `f64`, prints TFLOP/s.
//!
//! `cargo run --release --example sgemm` (`CHORUS_BACKEND=cpu` for the CPU executor).

use chorus::{Arg, Direction, Float4, Launch, MemoryBlock};
use chorus_examples::workloads::{self, kernels};
use chorus_examples::{Random, banner};
use std::process::ExitCode;

/// `n` floats uniform in [−1, 1) as float4s.
fn random_matrix(n: usize, random: &mut Random) -> Vec<Float4> {
    let mut next = || 2.0 * random.next_f32() - 1.0;
    (0..n / 4)
        .map(|_| Float4::new(next(), next(), next(), next()))
        .collect()
}

/// Element `index` of a float4 array read as floats.
fn element(v: &[Float4], index: usize) -> f64 {
    let q = v[index / 4];
    [q.x, q.y, q.z, q.w][index % 4] as f64
}

fn run() -> chorus::Result<bool> {
    let backend = banner("sgemm")?;
    let cpu = workloads::on_cpu(backend);
    let (m, n, k) = if cpu {
        (128, 256, 64)
    } else {
        (2048, 2048, 2048)
    };
    let program = workloads::workload_program(&[kernels::SGEMM])?;
    let mut random = Random::new(3);
    let at_host = random_matrix(k * m, &mut random);
    let b_host = random_matrix(k * n, &mut random);
    let at = MemoryBlock::from_slice(&at_host)?;
    let b = MemoryBlock::from_slice(&b_host)?;
    let mut c = MemoryBlock::<Float4>::alloc(m * n / 4)?;
    let launch = || Launch::grid((n / 128, m / 128)).block(256);
    let sgemm = |c: &MemoryBlock<Float4>| {
        let args = [
            at.as_arg(),
            b.as_arg(),
            c.as_arg(),
            Arg::value(m as i32),
            Arg::value(n as i32),
            Arg::value(k as i32),
        ];
        program.launch("sgemm-tn", &args, launch())
    };
    sgemm(&c)?; // compile and load outside the time
    let ((), elapsed) = workloads::timed(|| {
        sgemm(&c)?;
        c.sync(Direction::DeviceToHost)
    })?;
    println!("{m}×{n}×{k}, grid {}×{} of 256 threads", n / 128, m / 128);
    workloads::print_rate(
        elapsed,
        2.0 * (m * n * k) as f64 / 1e12,
        "TFLOP/s (including the copy back)",
    );
    let samples: Vec<(usize, usize)> = if cpu {
        (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect()
    } else {
        (0..4096)
            .map(|s| ((s * 7919) % m, (s * 104_729) % n))
            .collect()
    };
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for &(i, j) in &samples {
        got.push(element(c.as_slice(), i * n + j));
        want.push(
            (0..k)
                .map(|kk| element(&at_host, kk * m + i) * element(&b_host, kk * n + j))
                .sum(),
        );
    }
    let error = workloads::relative_error(got, want);
    Ok(workloads::verdict(
        &format!("{} entries of C", samples.len()),
        error,
        1e-5,
    ))
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "sgemm",
        "FP32 matrix product on the CUDA cores, register-tiled",
    );
    chorus_examples::exit_code("sgemm", run())
}
