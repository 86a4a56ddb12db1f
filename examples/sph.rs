//! cl-cuda's sph: smoothed-particle hydrodynamics of a collapsing dam of fluid in a box
//! (`kernels/sph.lisp`: a neighbour grid built with atomic counts, density, pressure, force,
//! acceleration, boundary walls, integration; nine launches a step). 22 275 particles and 300
//! steps on the GPU, as in cl-cuda (96 particles and 10 steps on the CPU executor). Checks the
//! densities of the first step and the displacements after ten steps against the same algorithm
//! in `f64` on the CPU, then that every particle stays finite and in the box.
//!
//! `cargo run --release --example sph` (`CHORUS_BACKEND=cpu` for the CPU executor).

use chorus::{Arg, Direction, Float4, Launch, MemoryBlock, Program};
use chorus_examples::banner;
use chorus_examples::workloads::{self, SphReference, kernels, sph};
use std::process::ExitCode;

/// The simulation's device state.
struct Fluid {
    n: usize,
    pos: MemoryBlock<Float4>,
    vel: MemoryBlock<Float4>,
    acc: MemoryBlock<Float4>,
    force: MemoryBlock<Float4>,
    rho: MemoryBlock<f32>,
    prs: MemoryBlock<f32>,
    count: MemoryBlock<i32>,
    map: MemoryBlock<i32>,
}

impl Fluid {
    fn new(particles: &[Float4]) -> chorus::Result<Fluid> {
        let n = particles.len();
        let cells = sph::GRID.iter().product::<usize>();
        Ok(Fluid {
            n,
            pos: MemoryBlock::from_slice(particles)?,
            vel: MemoryBlock::from_slice(&vec![Float4::default(); n])?,
            acc: MemoryBlock::alloc(n)?,
            force: MemoryBlock::alloc(n)?,
            rho: MemoryBlock::alloc(n)?,
            prs: MemoryBlock::alloc(n)?,
            count: MemoryBlock::alloc(cells)?,
            map: MemoryBlock::alloc(cells * sph::CAPACITY)?,
        })
    }

    /// One step: nine launches.
    fn step(&self, program: &Program) -> chorus::Result<()> {
        let n = || Arg::value(self.n as i32);
        let particles = || Launch::grid(self.n.div_ceil(64)).block(64);
        let [gx, gy, gz] = sph::GRID;
        program.launch(
            "clear-neighbor-count",
            &[self.count.as_arg()],
            Launch::grid((gy, gz)).block(gx),
        )?;
        program.launch(
            "update-neighbor-map",
            &[
                self.count.as_arg(),
                self.map.as_arg(),
                self.pos.as_arg(),
                n(),
            ],
            particles(),
        )?;
        program.launch(
            "update-density",
            &[
                self.rho.as_arg(),
                self.pos.as_arg(),
                self.count.as_arg(),
                self.map.as_arg(),
                n(),
            ],
            particles(),
        )?;
        program.launch(
            "update-pressure",
            &[self.prs.as_arg(), self.rho.as_arg(), n()],
            particles(),
        )?;
        program.launch(
            "update-force",
            &[
                self.force.as_arg(),
                self.pos.as_arg(),
                self.vel.as_arg(),
                self.rho.as_arg(),
                self.prs.as_arg(),
                self.count.as_arg(),
                self.map.as_arg(),
                n(),
            ],
            particles(),
        )?;
        program.launch(
            "update-acceleration",
            &[
                self.acc.as_arg(),
                self.force.as_arg(),
                self.rho.as_arg(),
                n(),
            ],
            particles(),
        )?;
        program.launch(
            "boundary-condition",
            &[self.acc.as_arg(), self.pos.as_arg(), self.vel.as_arg(), n()],
            particles(),
        )?;
        program.launch(
            "update-velocity",
            &[self.vel.as_arg(), self.acc.as_arg(), n()],
            particles(),
        )?;
        program.launch(
            "update-position",
            &[self.pos.as_arg(), self.vel.as_arg(), n()],
            particles(),
        )
    }
}

fn run() -> chorus::Result<bool> {
    let backend = banner("sph")?;
    let cpu = workloads::on_cpu(backend);
    let (init_max, steps) = if cpu {
        ([-6.0, 6.0, -6.0], 10)
    } else {
        ([0.0, 40.0, 30.0], 300)
    };
    let program = workloads::workload_program(&[kernels::SPH])?;
    // The kernels' grid constants must be what the host computes from the box and h.
    let (origin, delta, size) = workloads::sph_grid_geometry();
    let declared = (
        program.global_ref::<Float4>("origin")?,
        program.global_ref::<f32>("delta")?,
        [
            program.global_ref::<i32>("size-x")?,
            program.global_ref::<i32>("size-y")?,
            program.global_ref::<i32>("size-z")?,
        ],
    );
    let geometry_ok = [declared.0.x, declared.0.y, declared.0.z] == origin
        && declared.1 == delta
        && declared.2 == size.map(|s| s as i32);
    println!(
        "neighbour grid {size:?} cells of {delta}, origin {origin:?}: {}",
        if geometry_ok {
            "as declared"
        } else {
            "DIFFERENT FROM THE KERNEL'S CONSTANTS"
        }
    );

    let particles = workloads::sph_initial([-10.0, 0.0, -10.0], init_max);
    let mut fluid = Fluid::new(&particles)?;
    let mut reference = SphReference::new(&particles);
    println!("{} particles, {steps} steps", fluid.n);

    // Step 1: densities; steps 2..10: displacements.
    fluid.step(&program)?;
    reference.step();
    fluid.rho.sync(Direction::DeviceToHost)?;
    let density_error = workloads::relative_error(
        fluid.rho.as_slice().iter().map(|&r| r as f64),
        reference.rho.iter().copied(),
    );
    let mut ok = workloads::verdict("densities after step 1", density_error, 1e-4);
    let checked = 10.min(steps);
    for _ in 1..checked {
        fluid.step(&program)?;
        reference.step();
    }
    fluid.pos.sync(Direction::DeviceToHost)?;
    let got = fluid
        .pos
        .as_slice()
        .iter()
        .zip(&particles)
        .flat_map(|(p, q)| [p.x - q.x, p.y - q.y, p.z - q.z].map(f64::from));
    let want = reference
        .pos
        .iter()
        .zip(&particles)
        .flat_map(|(p, q)| [p[0] - q.x as f64, p[1] - q.y as f64, p[2] - q.z as f64]);
    let displacement_error = workloads::relative_error(got, want);
    ok &= workloads::verdict(
        &format!("displacements after step {checked}"),
        displacement_error,
        1e-3,
    );

    let ((), elapsed) = workloads::timed(|| {
        for _ in checked..steps {
            fluid.step(&program)?;
        }
        fluid.pos.sync(Direction::DeviceToHost)
    })?;
    let timed_steps = steps - checked;
    if timed_steps > 0 {
        println!("steps {} to {steps}:", checked + 1);
        workloads::print_rate(
            elapsed,
            (fluid.n * timed_steps) as f64 / 1e6,
            "million particle-steps/s",
        );
    }
    let inside = fluid.pos.as_slice().iter().all(|p| {
        let x = [p.x, p.y, p.z].map(f64::from);
        (0..3).all(|a| {
            x[a].is_finite() && x[a] > sph::BOX_MIN[a] - 1.0 && x[a] < sph::BOX_MAX[a] + 1.0
        })
    });
    println!("every particle finite and in the box after {steps} steps: {inside}");
    Ok(ok && inside && geometry_ok)
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "sph",
        "cl-cuda's sph: smoothed-particle hydrodynamics of a collapsing dam",
    );
    chorus_examples::exit_code("sph", run())
}
