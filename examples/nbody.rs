//! cl-cuda's nbody (the CUDA SDK's): all-pairs gravity with a shared float4 tile
//! (`kernels/nbody.lisp`), without the OpenGL view. 32 768 bodies on the GPU (512 on the CPU
//! executor) start on a rotating shell; the first step is checked against the accelerations
//! computed in `f64` on the CPU for a sample of bodies, then 100 more steps (2 on the CPU) are
//! timed and the rate printed (20 flops per interaction, the SDK's count).
//!
//! `cargo run --release --example nbody` (`CHORUS_BACKEND=cpu` for the CPU executor).

use chorus::{Arg, Direction, Float4, Launch, MemoryBlock, Program};
use chorus_examples::workloads::{self, NBODY_DAMPING, NBODY_DT, NBODY_SOFTENING2, kernels};
use chorus_examples::{Random, banner};
use std::process::ExitCode;

/// One step from `pos` into `out`, updating `vel`.
fn step(
    program: &Program,
    pos: &MemoryBlock<Float4>,
    vel: &MemoryBlock<Float4>,
    out: &MemoryBlock<Float4>,
) -> chorus::Result<()> {
    let n = pos.len();
    let args = [
        pos.as_arg(),
        vel.as_arg(),
        out.as_arg(),
        Arg::value(n as i32),
        Arg::value(NBODY_DT),
        Arg::value(NBODY_DAMPING),
        Arg::value(NBODY_SOFTENING2),
    ];
    program.launch("nbody-step", &args, Launch::grid(n / 256).block(256))
}

fn run() -> chorus::Result<bool> {
    let backend = banner("nbody")?;
    let (n, steps) = if workloads::on_cpu(backend) {
        (512, 2)
    } else {
        (32_768, 100)
    };
    let program = workloads::workload_program(&[kernels::NBODY])?;
    let (pos0, vel0) = workloads::nbody_initial(n, &mut Random::new(7));
    let pos = MemoryBlock::from_slice(&pos0)?;
    let mut vel = MemoryBlock::from_slice(&vel0)?;
    let mut other = MemoryBlock::<Float4>::alloc(n)?;
    println!("{n} bodies, block 256, grid {}", n / 256);

    // Check the first step: v1 = v0 + a·dt (damping 1), x1 = x0 + v1·dt.
    step(&program, &pos, &vel, &other)?;
    vel.sync(Direction::DeviceToHost)?;
    other.sync(Direction::DeviceToHost)?;
    let sample: Vec<usize> = (0..n).step_by((n / 256).max(1)).collect();
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for &i in &sample {
        let a = workloads::nbody_acceleration(&pos0, i, NBODY_SOFTENING2 as f64);
        let v0 = [vel0[i].x, vel0[i].y, vel0[i].z].map(f64::from);
        let v1 = [0, 1, 2].map(|c| v0[c] + a[c] * NBODY_DT as f64);
        let x1 = [
            pos0[i].x as f64 + v1[0] * NBODY_DT as f64,
            pos0[i].y as f64 + v1[1] * NBODY_DT as f64,
            pos0[i].z as f64 + v1[2] * NBODY_DT as f64,
        ];
        // Compare the change of velocity (what the interactions computed) and the new position.
        got.extend(
            [vel[i].x, vel[i].y, vel[i].z]
                .iter()
                .zip(v0)
                .map(|(&v, v0)| v as f64 - v0),
        );
        want.extend([0, 1, 2].map(|c| v1[c] - v0[c]));
        got.extend([other[i].x, other[i].y, other[i].z].map(f64::from));
        want.extend(x1);
    }
    let error = workloads::relative_error(got, want);
    let ok = workloads::verdict(&format!("first step, {} bodies", sample.len()), error, 1e-4);

    let ((), elapsed) = workloads::timed(|| {
        for s in 0..steps {
            if s % 2 == 0 {
                step(&program, &other, &vel, &pos)?
            } else {
                step(&program, &pos, &vel, &other)?
            }
        }
        vel.sync(Direction::DeviceToHost)
    })?;
    println!("{steps} more steps");
    workloads::print_rate(elapsed, 20.0 * (n * n * steps) as f64 / 1e9, "GFLOP/s");
    let finite = vel
        .as_slice()
        .iter()
        .all(|v| v.x.is_finite() && v.y.is_finite() && v.z.is_finite());
    println!("velocities finite after {} steps: {finite}", steps + 1);
    Ok(ok && finite)
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "nbody",
        "cl-cuda's nbody: all-pairs gravity with a shared tile",
    );
    chorus_examples::exit_code("nbody", run())
}
