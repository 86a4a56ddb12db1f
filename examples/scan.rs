//! Inclusive prefix sum of ints, reduce-then-scan in three launches with warp shuffles
//! (`kernels/scan.lisp`). 64 M ints on the GPU (16 K on the CPU executor), checked exactly;
//! prints the time and the bandwidth (8 bytes per element: read once, written once).
//!
//! `cargo run --release --example scan` (`CHORUS_BACKEND=cpu` for the CPU executor).

use chorus::{Arg, Direction, Int4, Launch, MemoryBlock, Program};
use chorus_examples::workloads::{self, kernels};
use chorus_examples::{Random, banner};
use std::process::ExitCode;

/// The three launches: `blocks` chunks of `tiles` tiles of 1024 ints.
fn scan(
    program: &Program,
    x: &MemoryBlock<Int4>,
    y: &MemoryBlock<Int4>,
    sums: &MemoryBlock<i32>,
    blocks: usize,
    tiles: usize,
) -> chorus::Result<()> {
    let tiles = || Arg::value(tiles as i32);
    program.launch(
        "scan-reduce",
        &[x.as_arg(), sums.as_arg(), tiles()],
        Launch::grid(blocks).block(256),
    )?;
    program.launch(
        "scan-sums",
        &[sums.as_arg(), Arg::value(blocks as i32)],
        Launch::grid(1).block(1024),
    )?;
    program.launch(
        "scan-apply",
        &[x.as_arg(), y.as_arg(), sums.as_arg(), tiles()],
        Launch::grid(blocks).block(256),
    )
}

fn run() -> chorus::Result<bool> {
    let backend = banner("scan")?;
    let (n, blocks) = if workloads::on_cpu(backend) {
        (1 << 14, 4)
    } else {
        (1 << 26, 1024)
    };
    let tiles = n / (blocks * 1024);
    let program = workloads::workload_program(&[kernels::SCAN])?;
    let mut random = Random::new(13);
    let mut digit = || (random.next_f32() * 8.0) as i32;
    let data: Vec<Int4> = (0..n / 4)
        .map(|_| Int4::new(digit(), digit(), digit(), digit()))
        .collect();
    let x = MemoryBlock::from_slice(&data)?;
    let mut y = MemoryBlock::<Int4>::alloc(n / 4)?;
    let sums = MemoryBlock::<i32>::alloc(blocks)?;
    scan(&program, &x, &y, &sums, blocks, tiles)?; // compile and load outside the time
    let ((), elapsed) = workloads::timed(|| {
        scan(&program, &x, &y, &sums, blocks, tiles)?;
        y.sync(Direction::DeviceToHost)
    })?;
    println!("{n} ints, {blocks} chunks of {tiles} tiles of 1024");
    workloads::print_rate(
        elapsed,
        8.0 * n as f64 / 1e9,
        "GB/s (including the copy back)",
    );
    let mut running = 0i32;
    let mut wrong = 0usize;
    for (v, s) in data.iter().zip(y.as_slice()) {
        for (value, got) in [(v.x, s.x), (v.y, s.y), (v.z, s.z), (v.w, s.w)] {
            running += value;
            wrong += usize::from(got != running);
        }
    }
    println!(
        "{}",
        if wrong == 0 {
            "verification succeeded: exact".to_string()
        } else {
            format!("VERIFICATION FAILED: {wrong} wrong sums")
        }
    );
    Ok(wrong == 0)
}

fn main() -> ExitCode {
    chorus_examples::no_arguments("scan", "Inclusive prefix sum of ints, reduce-then-scan");
    chorus_examples::exit_code("scan", run())
}
