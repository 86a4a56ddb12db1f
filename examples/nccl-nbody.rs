//! Data-parallel n-body over every GPU there is (one or more): the bodies are split over the
//! ranks, each rank computes its share of a step with `examples/nbody.rs`'s all-pairs kernel
//! (`kernels/nbody.lisp`: its `interact` macro and its algorithm, over a range of bodies), and
//! the new positions are all-gathered in place each step (`ncclAllGather`), on the same stream
//! as the kernels. After the steps, rank 0 runs the same steps on one GPU with the original
//! kernel and compares every position; it prints the time per step of both.
//!
//! `cargo run --release --example nccl-nbody [-- --bodies N --steps S]`, or under
//! `nccl-launch` (one process per GPU). N must be a multiple of 256 × the number of ranks.

#[path = "nccl-world.rs"]
mod world;

use chorus::{Arg, Direction, Float4, Launch, MemoryBlock};
use chorus_cuda_libs::nccl;
use chorus_cuda_libs::{AsDeviceSliceMut, DeviceSliceMut};
use chorus_examples::Random;
use chorus_examples::workloads::{self, NBODY_DAMPING, NBODY_DT, NBODY_SOFTENING2, kernels};
use clap::Parser;
use std::process::ExitCode;
use std::time::Instant;

/// `nbody-step` of `kernels/nbody.lisp` over the bodies `base` to `base + count`: body
/// `base + i` reads the whole of `pos`, updates `vel[i]` (the rank's own velocities) and
/// writes `pos-out[base + i]`. Launch count/256 blocks of 256.
const NBODY_RANGE: (&str, &str) = (
    "nccl-nbody.lisp",
    r#"
(defkernel nbody-step-range (void ((pos float4* :restrict) (vel float4* :restrict)
                                   (pos-out float4* :restrict) (base int) (n int)
                                   (dt float) (damping float) (softening2 float)))
  (declare (launch-bounds 256))
  (with-shared-memory ((tile float4 256))
    (let* ((k (+ (* block-idx-x block-dim-x) thread-idx-x))
           (i (+ base k))
           (p (aref pos i))
           (ax 0.0)
           (ay 0.0)
           (az 0.0))
      (for (t0 0 (< t0 n) (+ t0 256))
        (set (aref tile thread-idx-x) (aref pos (+ t0 thread-idx-x)))
        (syncthreads)
        (for (j 0 (< j 256) (+ j 8))
          (unroll (u 0 1 8)
            (interact (aref tile (+ j u)) p ax ay az softening2)))
        (syncthreads))
      (let ((v (aref vel k)))
        (set (float4-x v) (* (+ (float4-x v) (* ax dt)) damping))
        (set (float4-y v) (* (+ (float4-y v) (* ay dt)) damping))
        (set (float4-z v) (* (+ (float4-z v) (* az dt)) damping))
        (set (aref vel k) v)
        (set (aref pos-out i)
             (float4 (+ (float4-x p) (* (float4-x v) dt))
                     (+ (float4-y p) (* (float4-y v) dt))
                     (+ (float4-z p) (* (float4-z v) dt))
                     (float4-w p)))))))
"#,
);

/// Data-parallel n-body over every GPU, checked against one GPU.
#[derive(Parser, Debug)]
#[command(name = "nccl-nbody")]
struct Cli {
    /// The number of bodies.
    #[arg(long, default_value_t = 65_536)]
    bodies: usize,
    /// The number of steps.
    #[arg(long, default_value_t = 10)]
    steps: usize,
}

/// A rank's share: the positions (all of them, twice: read one, write the other) and its
/// bodies' velocities.
struct Share {
    pos: [MemoryBlock<Float4>; 2],
    vel: MemoryBlock<Float4>,
    first: usize,
}

/// The positions as the all-gather takes them: floats, 4 per body.
fn floats(block: &mut MemoryBlock<Float4>) -> chorus_cuda_libs::Result<DeviceSliceMut<'_, f32>> {
    Ok(block.as_device_slice_mut()?.cast::<f32>()?)
}

fn run(cli: &Cli) -> Result<bool, Box<dyn std::error::Error>> {
    let Some(ranks) = world::ranks("nccl-nbody")? else {
        return Ok(true);
    };
    let (n, steps) = (cli.bodies, cli.steps);
    let world_size = ranks[0].comm.size();
    if n == 0 || !n.is_multiple_of(256 * world_size) {
        return Err(format!("--bodies {n} is not a multiple of 256 × {world_size} ranks").into());
    }
    let chunk = n / world_size;
    // Compiled once; loaded on each device at its first launch there.
    let program = workloads::workload_program(&[kernels::NBODY, NBODY_RANGE])?;
    let (pos0, vel0) = workloads::nbody_initial(n, &mut Random::new(7));
    let mut shares = Vec::new();
    for r in &ranks {
        let first = r.comm.rank() * chunk;
        shares.push(Share {
            pos: [
                MemoryBlock::from_slice_on(r.device, &pos0)?,
                MemoryBlock::from_slice_on(r.device, &pos0)?,
            ],
            vel: MemoryBlock::from_slice_on(r.device, &vel0[first..first + chunk])?,
            first,
        });
    }
    type Failure = Box<dyn std::error::Error>;
    let step = |ranks: &[world::Rank], shares: &mut [Share], s: usize| -> Result<(), Failure> {
        let (from, to) = (s % 2, 1 - s % 2);
        for (r, share) in ranks.iter().zip(shares.iter()) {
            let args = [
                share.pos[from].as_arg(),
                share.vel.as_arg(),
                share.pos[to].as_arg(),
                Arg::value(share.first as i32),
                Arg::value(n as i32),
                Arg::value(NBODY_DT),
                Arg::value(NBODY_DAMPING),
                Arg::value(NBODY_SOFTENING2),
            ];
            program.launch(
                "nbody-step-range",
                &args,
                Launch::grid(chunk / 256).block(256).stream(&r.stream),
            )?;
        }
        let mut views = Vec::new();
        for share in shares.iter_mut() {
            views.push(floats(&mut share.pos[to])?);
        }
        nccl::group(|g| {
            for (r, view) in ranks.iter().zip(views.iter_mut()) {
                g.all_gather_in_place(&r.comm, view, r.cuda())?;
            }
            Ok(())
        })?;
        Ok(())
    };
    step(&ranks, &mut shares, 0)?; // compile and load outside the time
    world::wait_all(&ranks)?;
    let start = Instant::now();
    for s in 1..steps {
        step(&ranks, &mut shares, s)?;
    }
    world::wait_all(&ranks)?;
    let per_step = start.elapsed().as_secs_f64() / (steps.max(2) - 1) as f64;
    let lead = world::is_lead(&ranks);
    let mut ok = true;
    if lead {
        // The same steps on one GPU, with the original kernel.
        let r0 = ranks.iter().find(|r| r.comm.rank() == 0).expect("rank 0");
        let mut one = [
            MemoryBlock::from_slice_on(r0.device, &pos0)?,
            MemoryBlock::from_slice_on(r0.device, &pos0)?,
        ];
        let vel = MemoryBlock::from_slice_on(r0.device, &vel0)?;
        let single = |one: &[MemoryBlock<Float4>; 2], s: usize| -> chorus::Result<()> {
            let args = [
                one[s % 2].as_arg(),
                vel.as_arg(),
                one[1 - s % 2].as_arg(),
                Arg::value(n as i32),
                Arg::value(NBODY_DT),
                Arg::value(NBODY_DAMPING),
                Arg::value(NBODY_SOFTENING2),
            ];
            program.launch(
                "nbody-step",
                &args,
                Launch::grid(n / 256).block(256).on(r0.device),
            )
        };
        single(&one, 0)?;
        r0.device.synchronize()?;
        let start = Instant::now();
        for s in 1..steps {
            single(&one, s)?;
        }
        r0.device.synchronize()?;
        let single_step = start.elapsed().as_secs_f64() / (steps.max(2) - 1) as f64;
        let last = steps % 2;
        one[last].sync(Direction::DeviceToHost)?;
        let share = shares
            .iter_mut()
            .zip(&ranks)
            .find(|(_, r)| r.comm.rank() == 0)
            .expect("rank 0")
            .0;
        share.pos[last].sync(Direction::DeviceToHost)?;
        let (got, want) = (share.pos[last].as_slice(), one[last].as_slice());
        let identical = got == want;
        let error = workloads::relative_error(
            got.iter()
                .flat_map(|p| [p.x, p.y, p.z].map(f64::from))
                .collect::<Vec<f64>>(),
            want.iter()
                .flat_map(|p| [p.x, p.y, p.z].map(f64::from))
                .collect::<Vec<f64>>(),
        );
        println!(
            "{n} bodies, {steps} steps over {world_size} rank(s): {:.3} ms a step \
             ({:.1} GFLOP/s); one GPU: {:.3} ms a step; speed-up {:.2}",
            per_step * 1e3,
            20.0 * (n * n) as f64 / per_step / 1e9,
            single_step * 1e3,
            single_step / per_step
        );
        ok = workloads::verdict(
            &format!(
                "positions after {steps} steps against one GPU ({})",
                if identical {
                    "bit for bit"
                } else {
                    "not bit for bit"
                }
            ),
            error,
            1e-5,
        );
    }
    world::finalize(ranks)?;
    Ok(ok)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    chorus_examples::exit_code("nccl-nbody", run(&cli))
}
