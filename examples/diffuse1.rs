//! cl-cuda's diffuse1: the heat equation of diffuse0, each 16×16 block staging its cells and a
//! one-cell halo in shared memory (`kernels/diffuse1.lisp`). Runs the same steps with diffuse0's
//! kernel too, and checks that both give the same field bit for bit, and that it matches the
//! `f64` steps on the CPU. 256×256 cells, 20 000 steps; on the CPU executor 64×64, 200 steps.
//!
//! `cargo run --release --example diffuse1` (`CHORUS_BACKEND=cpu` for the CPU executor).

use chorus::{Direction, Launch, MemoryBlock, Program};
use chorus_examples::banner;
use chorus_examples::workloads::{self, kernels};
use std::process::ExitCode;

/// Runs `steps` steps of `kernel` from `initial`; returns the final field and prints the timing.
fn simulate(
    program: &Program,
    kernel: &str,
    launch: &dyn Fn() -> Launch<'static>,
    initial: &[f32],
    (nx, ny, steps): (usize, usize, usize),
    (c0, c1, c2): (f32, f32, f32),
) -> chorus::Result<Vec<f32>> {
    let mut f = MemoryBlock::from_slice(initial)?;
    let mut fnext = MemoryBlock::<f32>::alloc(nx * ny)?;
    let advance = |src: &MemoryBlock<f32>, dst: &MemoryBlock<f32>| {
        program.launch(
            kernel,
            &workloads::diffusion_args(src, dst, nx, ny, (c0, c1, c2)),
            launch(),
        )
    };
    // Compiles and loads the kernel outside the timed loop (its first step overwrites fnext).
    advance(&f, &fnext)?;
    let (field, elapsed) = workloads::timed(|| {
        for step in 0..steps {
            let (src, dst) = if step % 2 == 0 {
                (&f, &fnext)
            } else {
                (&fnext, &f)
            };
            advance(src, dst)?;
        }
        let last = if steps % 2 == 1 { &mut fnext } else { &mut f };
        last.sync(Direction::DeviceToHost)?;
        Ok(last.as_slice().to_vec())
    })?;
    print!("{kernel}: ");
    workloads::print_rate(elapsed, 7.0 * (nx * ny * steps) as f64 / 1e6, "MFlop/s");
    Ok(field)
}

fn run() -> chorus::Result<bool> {
    let backend = banner("diffuse1")?;
    let (nx, ny, steps) = if workloads::on_cpu(backend) {
        (64, 64, 200)
    } else {
        (256, 256, 20_000)
    };
    let (c0, c1, c2, dt) = workloads::diffusion_coefficients(nx, ny);
    let program = workloads::workload_program(&[kernels::DIFFUSE0, kernels::DIFFUSE1])?;
    let initial = workloads::diffusion_initial(nx, ny);
    println!(
        "{nx}×{ny} cells, {steps} steps (t = {:.5}), blocks of 16×16",
        steps as f32 * dt
    );
    let size = (nx, ny, steps);
    let tiled = simulate(
        &program,
        "diffuse1",
        &|| Launch::grid((nx / 16, ny / 16)).block((16, 16)),
        &initial,
        size,
        (c0, c1, c2),
    )?;
    let block_x = 256.min(nx);
    let global = simulate(
        &program,
        "diffuse0",
        &|| Launch::grid((nx / block_x, ny)).block((block_x, 1)),
        &initial,
        size,
        (c0, c1, c2),
    )?;
    let differing = tiled
        .iter()
        .zip(&global)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    let same = differing == 0;
    println!(
        "diffuse1 against diffuse0: {}",
        if same {
            "the same field, bit for bit".to_string()
        } else {
            format!("{differing} cells DIFFER")
        }
    );
    let reference = workloads::diffusion_reference(&initial, nx, ny, (c0, c1, c2), steps);
    let error = workloads::relative_error(tiled.iter().map(|&x| x as f64), reference);
    Ok(workloads::verdict("diffuse1's field after the last step", error, 1e-4) && same)
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "diffuse1",
        "cl-cuda's diffuse1: the 2-D heat equation through shared-memory tiles",
    );
    chorus_examples::exit_code("diffuse1", run())
}
