//! Sum reduction: float4 loads, four in flight per thread, warp shuffles, one atomic add per block
//! (`kernels/reduction.lisp`). 64 M floats on the GPU (64 K on the CPU executor), checked against
//! the `f64` sum on the CPU; prints the time and the bandwidth (4 bytes read per element).
//!
//! `cargo run --release --example reduction` (`CHORUS_BACKEND=cpu` for the CPU executor).

use chorus::{Arg, Direction, Float4, Launch, MemoryBlock};
use chorus_examples::workloads::{self, kernels};
use chorus_examples::{Random, banner};
use std::process::ExitCode;

fn run() -> chorus::Result<bool> {
    let backend = banner("reduction")?;
    let n: usize = if workloads::on_cpu(backend) {
        1 << 16
    } else {
        1 << 26
    };
    let program = workloads::workload_program(&[kernels::REDUCTION])?;
    let mut random = Random::new(11);
    let data: Vec<Float4> = (0..n / 4)
        .map(|_| {
            Float4::new(
                random.next_f32(),
                random.next_f32(),
                random.next_f32(),
                random.next_f32(),
            )
        })
        .collect();
    let want: f64 = data
        .iter()
        .map(|v| v.x as f64 + v.y as f64 + v.z as f64 + v.w as f64)
        .sum();
    let x = MemoryBlock::from_slice(&data)?;
    let mut out = MemoryBlock::<f32>::alloc(1)?;
    // A persistent grid: at most 1056 blocks (8 per multiprocessor of an H200), fewer when the
    // array is small.
    let blocks = 1056.min((n / 4).div_ceil(256));
    let mut reduce = || -> chorus::Result<()> {
        out[0] = 0.0;
        out.sync(Direction::HostToDevice)?;
        program.launch(
            "reduce-sum",
            &[x.as_arg(), Arg::value((n / 4) as i32), out.as_arg()],
            Launch::grid(blocks).block(256),
        )?;
        out.sync(Direction::DeviceToHost)
    };
    reduce()?; // compiles and loads the kernel: keep that out of the time
    let ((), elapsed) = workloads::timed(&mut reduce)?;
    println!(
        "{n} floats, grid {blocks} × 256: sum {} (f64 on the CPU: {want})",
        out[0]
    );
    workloads::print_rate(
        elapsed,
        4.0 * n as f64 / 1e9,
        "GB/s (including the two 4-byte copies)",
    );
    let error = workloads::relative_error([out[0] as f64], [want]);
    Ok(workloads::verdict("sum", error, 1e-5))
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "reduction",
        "Sum reduction with float4 loads and warp shuffles",
    );
    chorus_examples::exit_code("reduction", run())
}
