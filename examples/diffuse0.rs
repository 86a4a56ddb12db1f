//! cl-cuda's diffuse0: the 2-D heat equation on a 256×256 grid (5-point stencil, Neumann edges),
//! 20 000 steps of one launch each, the kernel reading global memory (`kernels/diffuse0.lisp`).
//! Checks the final field against the same steps in `f64` on the CPU and prints the elapsed time
//! and the rate (7 flops per cell per step, cl-cuda's count). On the CPU executor: 64×64, 200 steps.
//!
//! `cargo run --release --example diffuse0` (`CHORUS_BACKEND=cpu` for the CPU executor).

use chorus::{Direction, Launch, MemoryBlock};
use chorus_examples::banner;
use chorus_examples::workloads::{self, kernels};
use std::process::ExitCode;

fn run() -> chorus::Result<bool> {
    let backend = banner("diffuse0")?;
    let (nx, ny, steps) = if workloads::on_cpu(backend) {
        (64, 64, 200)
    } else {
        (256, 256, 20_000)
    };
    let block_x = 256.min(nx);
    let (c0, c1, c2, dt) = workloads::diffusion_coefficients(nx, ny);
    let program = workloads::workload_program(&[kernels::DIFFUSE0])?;
    let initial = workloads::diffusion_initial(nx, ny);
    let mut f = MemoryBlock::from_slice(&initial)?;
    let mut fnext = MemoryBlock::<f32>::alloc(nx * ny)?;
    let advance = |src: &MemoryBlock<f32>, dst: &MemoryBlock<f32>| {
        let args = workloads::diffusion_args(src, dst, nx, ny, (c0, c1, c2));
        program.launch(
            "diffuse0",
            &args,
            Launch::grid((nx / block_x, ny)).block((block_x, 1)),
        )
    };
    println!(
        "{nx}×{ny} cells, {steps} steps, block ({block_x}, 1), grid ({}, {ny})",
        nx / block_x
    );
    // Compiles and loads the kernel outside the timed loop (its first step overwrites fnext).
    advance(&f, &fnext)?;
    let (field, elapsed) = workloads::timed(|| {
        for step in 0..steps {
            if step % (steps / 10) == 0 {
                println!("time({step}) = {:.5}", step as f32 * dt);
            }
            let (src, dst) = if step % 2 == 0 {
                (&f, &fnext)
            } else {
                (&fnext, &f)
            };
            advance(src, dst)?;
        }
        // An odd number of steps leaves the field in fnext.
        let last = if steps % 2 == 1 { &mut fnext } else { &mut f };
        last.sync(Direction::DeviceToHost)?;
        Ok(last.as_slice().to_vec())
    })?;
    println!("time({steps}) = {:.5}", steps as f32 * dt);
    workloads::print_rate(elapsed, 7.0 * (nx * ny * steps) as f64 / 1e6, "MFlop/s");
    let reference = workloads::diffusion_reference(&initial, nx, ny, (c0, c1, c2), steps);
    let error = workloads::relative_error(field.iter().map(|&x| x as f64), reference);
    Ok(workloads::verdict("field after the last step", error, 1e-4))
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "diffuse0",
        "cl-cuda's diffuse0: the 2-D heat equation, reading global memory",
    );
    chorus_examples::exit_code("diffuse0", run())
}
