//! Matrix transpose through a shared 32×33 tile (the padding column avoids bank conflicts),
//! `kernels/transpose.lisp`. An 8192×4096 matrix on the GPU (100×70 on the CPU executor, which
//! exercises the edge guards), checked exactly; prints the time and the bandwidth (8 bytes moved
//! per element).
//!
//! `cargo run --release --example transpose` (`CHORUS_BACKEND=cpu` for the CPU executor).

use chorus::{Arg, Direction, Launch, MemoryBlock};
use chorus_examples::workloads::{self, kernels};
use chorus_examples::{Random, banner};
use std::process::ExitCode;

fn run() -> chorus::Result<bool> {
    let backend = banner("transpose")?;
    let (width, height) = if workloads::on_cpu(backend) {
        (100, 70)
    } else {
        (8192, 4096)
    };
    let program = workloads::workload_program(&[kernels::TRANSPOSE])?;
    let mut random = Random::new(5);
    let data: Vec<f32> = (0..width * height).map(|_| random.next_f32()).collect();
    let input = MemoryBlock::from_slice(&data)?;
    let mut output = MemoryBlock::<f32>::alloc(width * height)?;
    let launch = || Launch::grid((width.div_ceil(32), height.div_ceil(32))).block((32, 8));
    let transpose = |output: &MemoryBlock<f32>| {
        program.launch(
            "transpose",
            &[
                input.as_arg(),
                output.as_arg(),
                Arg::value(width as i32),
                Arg::value(height as i32),
            ],
            launch(),
        )
    };
    transpose(&output)?; // compile and load outside the time
    let ((), elapsed) = workloads::timed(|| {
        transpose(&output)?;
        output.sync(Direction::DeviceToHost)
    })?;
    println!("{height}×{width} → {width}×{height}, blocks of 32×8");
    workloads::print_rate(
        elapsed,
        8.0 * (width * height) as f64 / 1e9,
        "GB/s (including the copy back)",
    );
    let wrong = (0..height)
        .flat_map(|y| (0..width).map(move |x| (x, y)))
        .filter(|&(x, y)| output[x * height + y] != data[y * width + x])
        .count();
    println!(
        "{}",
        if wrong == 0 {
            "verification succeeded: exact".to_string()
        } else {
            format!("VERIFICATION FAILED: {wrong} wrong elements")
        }
    );
    Ok(wrong == 0)
}

fn main() -> ExitCode {
    chorus_examples::no_arguments("transpose", "Matrix transpose through a shared 32x33 tile");
    chorus_examples::exit_code("transpose", run())
}
