//! Chorus's benchmark suite: each workload of the examples at a size that fills an H200, timed the
//! same way as the hand-written CUDA C baselines of `benches/baselines/` (whose harness prints the
//! rows this program reads with `--baseline`), then one table: Chorus's time and rate, the
//! baseline's, their ratio, and the target. Also the host cost of a launch, cold and warm
//! compilation, and memory-block copies.
//!
//! ```text
//! nvcc -O3 -arch=sm_90 -o baselines benches/baselines/harness.cu -lcublas -lcuda
//! ./baselines > baselines.tsv
//! cargo bench -p chorus-benches -- --baseline baselines.tsv --out results.tsv
//! ```
//!
//! Timing: `WARMUP` untimed batches, then the median over `REPS` samples of a batch of
//! back-to-back launches timed with CUDA events, divided by the batch size (the harness does the
//! same with the same batch sizes). Every result is checked before it is timed.

use chorus::cuda::Timer;
use chorus::{Arg, Backend, Direction, Float4, Int4, Launch, MemoryBlock, Program};
use chorus_benches::{Row, baseline_name, median, parse_baselines, table};
use chorus_examples::Random;
use chorus_examples::workloads::{self, kernels};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::process::{Command, ExitCode};
use std::time::Instant;

const WARMUP: usize = 3;
const REPS: usize = 15;
/// Multiprocessors of an H200: the reduction's persistent grid is 8 blocks per multiprocessor.
const PERSISTENT_BLOCKS: usize = 132 * 8;

/// The benchmark's kernels: the examples' workloads and the float4 vector add.
const VECTOR_ADD4: (&str, &str) = (
    "vector-add4.lisp",
    include_str!("../kernels/vector-add4.lisp"),
);

/// Times `run`: the median per-run milliseconds over `REPS` event-timed batches of `batch` runs.
fn time_ms(batch: usize, mut run: impl FnMut() -> chorus::Result<()>) -> chorus::Result<f64> {
    for _ in 0..WARMUP * batch {
        run()?;
    }
    chorus::cuda::synchronize_context()?;
    let mut samples = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let timer = Timer::new()?;
        timer.start()?;
        for _ in 0..batch {
            run()?;
        }
        timer.stop()?;
        timer.synchronize()?;
        samples.push(timer.elapsed_ms()? as f64 / batch as f64);
    }
    Ok(median(&mut samples))
}

/// A block of `n` pseudo-random values made by `next`, copied to the device.
fn random_block<T: chorus::KernelValue>(
    n: usize,
    mut next: impl FnMut() -> T,
) -> chorus::Result<MemoryBlock<T>> {
    let mut block = MemoryBlock::<T>::alloc(n)?;
    for x in block.as_mut_slice() {
        *x = next();
    }
    block.sync(Direction::HostToDevice)?;
    Ok(block)
}

fn float4(random: &mut Random, lo: f32, hi: f32) -> Float4 {
    let mut next = || lo + (hi - lo) * random.next_f32();
    Float4::new(next(), next(), next(), next())
}

fn vector_add(program: &Program, random: &mut Random) -> chorus::Result<Row> {
    let n = 1usize << 28;
    let n4 = n / 4;
    let a = random_block(n4, || float4(random, 0.0, 1.0))?;
    let b = random_block(n4, || float4(random, 0.0, 1.0))?;
    let mut c = MemoryBlock::<Float4>::alloc(n4)?;
    let launch = |c: &MemoryBlock<Float4>| {
        program.launch(
            "vec-add4",
            &[a.as_arg(), b.as_arg(), c.as_arg(), Arg::value(n4 as i32)],
            Launch::grid(n4 / 256).block(256),
        )
    };
    launch(&c)?;
    c.sync(Direction::DeviceToHost)?;
    let ok = (0..n4).step_by(997).all(|i| {
        let (x, y, z) = (a[i], b[i], c[i]);
        z == Float4::new(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w)
    });
    let ms = time_ms(4, || launch(&c))?;
    Ok(Row {
        name: "vector-add",
        size: "256M floats".into(),
        ms,
        value: 12.0 * n as f64 / ms / 1e9,
        unit: "TB/s",
        ok,
    })
}

fn reduction(program: &Program, random: &mut Random) -> chorus::Result<Row> {
    let n = 1usize << 28;
    let x = random_block(n / 4, || float4(random, 0.0, 1.0))?;
    let want: f64 = x
        .as_slice()
        .iter()
        .map(|v| v.x as f64 + v.y as f64 + v.z as f64 + v.w as f64)
        .sum();
    let mut out = MemoryBlock::<f32>::alloc(1)?;
    out.sync(Direction::HostToDevice)?;
    let launch = |out: &MemoryBlock<f32>| {
        program.launch(
            "reduce-sum",
            &[x.as_arg(), Arg::value((n / 4) as i32), out.as_arg()],
            Launch::grid(PERSISTENT_BLOCKS).block(256),
        )
    };
    launch(&out)?;
    out.sync(Direction::DeviceToHost)?;
    let ok = (out[0] as f64 - want).abs() <= 1e-5 * want.abs();
    // The timed runs keep adding into out[0]; only the time matters now.
    let ms = time_ms(10, || launch(&out))?;
    Ok(Row {
        name: "reduction",
        size: "256M floats".into(),
        ms,
        value: 4.0 * n as f64 / ms / 1e9,
        unit: "TB/s",
        ok,
    })
}

fn transpose(program: &Program, random: &mut Random) -> chorus::Result<Row> {
    let (w, h) = (16384usize, 16384usize);
    let input = random_block(w * h, || random.next_f32())?;
    let mut output = MemoryBlock::<f32>::alloc(w * h)?;
    let launch = |output: &MemoryBlock<f32>| {
        program.launch(
            "transpose",
            &[
                input.as_arg(),
                output.as_arg(),
                Arg::value(w as i32),
                Arg::value(h as i32),
            ],
            Launch::grid((w / 32, h / 32)).block((32, 8)),
        )
    };
    launch(&output)?;
    output.sync(Direction::DeviceToHost)?;
    let ok = (0..100_000usize).all(|s| {
        let (y, x) = ((s * 7919) % h, (s * 104_729) % w);
        output[x * h + y] == input[y * w + x]
    });
    let ms = time_ms(5, || launch(&output))?;
    Ok(Row {
        name: "transpose",
        size: "16384²".into(),
        ms,
        value: 8.0 * (w * h) as f64 / ms / 1e9,
        unit: "TB/s",
        ok,
    })
}

fn sgemm(program: &Program, random: &mut Random) -> chorus::Result<Row> {
    let (m, n, k) = (4096usize, 4096usize, 4096usize);
    let at = random_block(k * m / 4, || float4(random, -1.0, 1.0))?;
    let b = random_block(k * n / 4, || float4(random, -1.0, 1.0))?;
    let mut c = MemoryBlock::<Float4>::alloc(m * n / 4)?;
    let launch = |c: &MemoryBlock<Float4>| {
        program.launch(
            "sgemm-tn",
            &[
                at.as_arg(),
                b.as_arg(),
                c.as_arg(),
                Arg::value(m as i32),
                Arg::value(n as i32),
                Arg::value(k as i32),
            ],
            Launch::grid((n / 128, m / 128)).block(256),
        )
    };
    launch(&c)?;
    c.sync(Direction::DeviceToHost)?;
    let element = |v: &MemoryBlock<Float4>, i: usize| {
        let q = v[i / 4];
        [q.x, q.y, q.z, q.w][i % 4] as f64
    };
    let ok = (0..256usize).all(|s| {
        let (i, j) = ((s * 7919) % m, (s * 104_729) % n);
        let (mut want, mut magnitude) = (0.0f64, 0.0f64);
        for kk in 0..k {
            let p = element(&at, kk * m + i) * element(&b, kk * n + j);
            want += p;
            magnitude += p.abs();
        }
        (element(&c, i * n + j) - want).abs() <= 1e-5 * magnitude + 1e-6
    });
    let ms = time_ms(1, || launch(&c))?;
    Ok(Row {
        name: "sgemm",
        size: "4096³".into(),
        ms,
        value: 2.0 * (m * n * k) as f64 / ms / 1e9,
        unit: "TFLOP/s",
        ok,
    })
}

fn nbody(program: &Program, random: &mut Random) -> chorus::Result<Row> {
    let n = 131_072usize;
    let pos = random_block(n, || float4(random, -1.0, 1.0))?;
    let mut vel = MemoryBlock::from_slice(&vec![Float4::default(); n])?;
    let out = MemoryBlock::<Float4>::alloc(n)?;
    let (dt, damping, soft2) = (0.016f32, 1.0f32, 0.01f32);
    let launch = |vel: &MemoryBlock<Float4>| {
        program.launch(
            "nbody-step",
            &[
                pos.as_arg(),
                vel.as_arg(),
                out.as_arg(),
                Arg::value(n as i32),
                Arg::value(dt),
                Arg::value(damping),
                Arg::value(soft2),
            ],
            Launch::grid(n / 256).block(256),
        )
    };
    launch(&vel)?;
    vel.sync(Direction::DeviceToHost)?;
    let ok = (0..32usize).all(|s| {
        let i = (s * 7919) % n;
        let a = workloads::nbody_acceleration(pos.as_slice(), i, soft2 as f64);
        let p = pos[i];
        let magnitude: f64 = pos
            .as_slice()
            .iter()
            .map(|q| {
                let d = [(q.x - p.x) as f64, (q.y - p.y) as f64, (q.z - p.z) as f64];
                let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + soft2 as f64;
                (q.w as f64).abs() / d2
            })
            .sum();
        let v = vel[i];
        [v.x, v.y, v.z].iter().zip(a).all(|(&got, a)| {
            (got as f64 - a * dt as f64).abs() <= 1e-4 * magnitude * dt as f64 + 1e-7
        })
    });
    let ms = time_ms(1, || launch(&vel))?;
    Ok(Row {
        name: "nbody",
        size: "N = 131072".into(),
        ms,
        value: 20.0 * (n * n) as f64 / ms / 1e9,
        unit: "TFLOP/s",
        ok,
    })
}

fn diffuse(program: &Program, random: &mut Random) -> chorus::Result<[Row; 2]> {
    let (nx, ny) = (8192usize, 8192usize);
    let f = random_block(nx * ny, || random.next_f32())?;
    let mut fn0 = MemoryBlock::<f32>::alloc(nx * ny)?;
    let mut fn1 = MemoryBlock::<f32>::alloc(nx * ny)?;
    let (c0, c1) = (0.2f32, 0.2f32);
    let c2 = 1.0 - 2.0 * (c0 + c1);
    let c = (c0, c1, c2);
    let launch0 = |out: &MemoryBlock<f32>| {
        program.launch(
            "diffuse0",
            &workloads::diffusion_args(&f, out, nx, ny, c),
            Launch::grid((nx / 256, ny)).block((256, 1)),
        )
    };
    let launch1 = |out: &MemoryBlock<f32>| {
        program.launch(
            "diffuse1",
            &workloads::diffusion_args(&f, out, nx, ny, c),
            Launch::grid((nx / 16, ny / 16)).block((16, 16)),
        )
    };
    launch0(&fn0)?;
    launch1(&fn1)?;
    fn0.sync(Direction::DeviceToHost)?;
    fn1.sync(Direction::DeviceToHost)?;
    let (mut ok0, mut ok1) = (true, true);
    for s in 0..200_000usize {
        let (mut jx, mut jy) = ((s * 7919) % nx, (s * 104_729) % ny);
        if s < 4 {
            jx = if s & 1 == 1 { nx - 1 } else { 0 };
            jy = if s & 2 == 2 { ny - 1 } else { 0 };
        }
        let j = jy * nx + jx;
        let fc = f[j] as f64;
        let at = |k: usize| f[k] as f64;
        let fw = if jx == 0 { fc } else { at(j - 1) };
        let fe = if jx == nx - 1 { fc } else { at(j + 1) };
        let fs = if jy == 0 { fc } else { at(j - nx) };
        let fnn = if jy == ny - 1 { fc } else { at(j + nx) };
        let want = c0 as f64 * (fe + fw) + c1 as f64 * (fnn + fs) + c2 as f64 * fc;
        ok0 &= (fn0[j] as f64 - want).abs() <= 1e-6;
        ok1 &= fn1[j].to_bits() == fn0[j].to_bits();
    }
    let ms0 = time_ms(20, || launch0(&fn0))?;
    let ms1 = time_ms(20, || launch1(&fn1))?;
    let bytes = 8.0 * (nx * ny) as f64;
    Ok([
        Row {
            name: "diffuse0",
            size: "8192², 1 step".into(),
            ms: ms0,
            value: bytes / ms0 / 1e9,
            unit: "TB/s",
            ok: ok0,
        },
        Row {
            name: "diffuse1",
            size: "8192², 1 step".into(),
            ms: ms1,
            value: bytes / ms1 / 1e9,
            unit: "TB/s",
            ok: ok1,
        },
    ])
}

fn scan(program: &Program, random: &mut Random) -> chorus::Result<Row> {
    let (n, blocks) = (1usize << 28, 1024usize);
    let tiles = n / (blocks * 1024);
    let mut digit = || (random.next_f32() * 8.0) as i32;
    let x = random_block(n / 4, || Int4::new(digit(), digit(), digit(), digit()))?;
    let mut y = MemoryBlock::<Int4>::alloc(n / 4)?;
    let sums = MemoryBlock::<i32>::alloc(blocks)?;
    let run = |y: &MemoryBlock<Int4>| -> chorus::Result<()> {
        let t = Arg::value(tiles as i32);
        program.launch(
            "scan-reduce",
            &[x.as_arg(), sums.as_arg(), Arg::value(tiles as i32)],
            Launch::grid(blocks).block(256),
        )?;
        program.launch(
            "scan-sums",
            &[sums.as_arg(), Arg::value(blocks as i32)],
            Launch::grid(1).block(1024),
        )?;
        program.launch(
            "scan-apply",
            &[x.as_arg(), y.as_arg(), sums.as_arg(), t],
            Launch::grid(blocks).block(256),
        )
    };
    run(&y)?;
    y.sync(Direction::DeviceToHost)?;
    let mut running = 0i32;
    let mut ok = true;
    for (v, s) in x.as_slice().iter().zip(y.as_slice()) {
        for (value, got) in [(v.x, s.x), (v.y, s.y), (v.z, s.z), (v.w, s.w)] {
            running = running.wrapping_add(value);
            ok &= got == running;
        }
    }
    let ms = time_ms(5, || run(&y))?;
    Ok(Row {
        name: "scan",
        size: "256M ints".into(),
        ms,
        value: 8.0 * n as f64 / ms / 1e9,
        unit: "TB/s",
        ok,
    })
}

fn sph(program: &Program) -> chorus::Result<Row> {
    let particles = workloads::sph_initial([-10.0, 0.0, -10.0], [0.0, 40.0, 30.0]);
    let n = particles.len();
    let cells: usize = workloads::sph::GRID.iter().product();
    let pos = MemoryBlock::from_slice(&particles)?;
    let vel = MemoryBlock::from_slice(&vec![Float4::default(); n])?;
    let acc = MemoryBlock::<Float4>::alloc(n)?;
    let force = MemoryBlock::<Float4>::alloc(n)?;
    let mut rho = MemoryBlock::<f32>::alloc(n)?;
    let prs = MemoryBlock::<f32>::alloc(n)?;
    let count = MemoryBlock::<i32>::alloc(cells)?;
    let map = MemoryBlock::<i32>::alloc(cells * workloads::sph::CAPACITY)?;
    let [gx, gy, gz] = workloads::sph::GRID;
    let step = |rho: &MemoryBlock<f32>| -> chorus::Result<()> {
        let nn = || Arg::value(n as i32);
        let p = || Launch::grid(n.div_ceil(64)).block(64);
        program.launch(
            "clear-neighbor-count",
            &[count.as_arg()],
            Launch::grid((gy, gz)).block(gx),
        )?;
        program.launch(
            "update-neighbor-map",
            &[count.as_arg(), map.as_arg(), pos.as_arg(), nn()],
            p(),
        )?;
        program.launch(
            "update-density",
            &[
                rho.as_arg(),
                pos.as_arg(),
                count.as_arg(),
                map.as_arg(),
                nn(),
            ],
            p(),
        )?;
        program.launch("update-pressure", &[prs.as_arg(), rho.as_arg(), nn()], p())?;
        program.launch(
            "update-force",
            &[
                force.as_arg(),
                pos.as_arg(),
                vel.as_arg(),
                rho.as_arg(),
                prs.as_arg(),
                count.as_arg(),
                map.as_arg(),
                nn(),
            ],
            p(),
        )?;
        program.launch(
            "update-acceleration",
            &[acc.as_arg(), force.as_arg(), rho.as_arg(), nn()],
            p(),
        )?;
        program.launch(
            "boundary-condition",
            &[acc.as_arg(), pos.as_arg(), vel.as_arg(), nn()],
            p(),
        )?;
        program.launch("update-velocity", &[vel.as_arg(), acc.as_arg(), nn()], p())?;
        program.launch("update-position", &[pos.as_arg(), vel.as_arg(), nn()], p())
    };
    step(&rho)?;
    rho.sync(Direction::DeviceToHost)?;
    let mut reference = workloads::SphReference::new(&particles);
    reference.step();
    let error = workloads::relative_error(
        rho.as_slice().iter().map(|&r| r as f64),
        reference.rho.iter().copied(),
    );
    let ok = error <= 1e-4;
    let ms = time_ms(10, || step(&rho))?;
    Ok(Row {
        name: "sph",
        size: format!("{n} particles, 1 step"),
        ms,
        value: n as f64 / ms / 1e3,
        unit: "Mparticle-steps/s",
        ok,
    })
}

chorus::defkernel! {
    (defkernel empty-typed (void ((a float*) (b float*) (c float*) (n int))))
}

/// Host time of one launch of an empty kernel with four arguments: the median over 190 bursts
/// of 64 launches (after 10 bursts of warm-up), each burst followed by a synchronisation.
/// `typed` launches through the `defkernel!` function, otherwise `Program::launch` by name.
fn launch_overhead(program: &Program, typed: bool) -> chorus::Result<Row> {
    let a = MemoryBlock::<f32>::alloc(1)?;
    let mut per_launch = Vec::new();
    for burst in 0..200 {
        let start = Instant::now();
        for _ in 0..64 {
            if typed {
                empty_typed(&a, &a, &a, 0, Launch::grid(1).block(32))?;
            } else {
                let args = [a.as_arg(), a.as_arg(), a.as_arg(), Arg::value(0i32)];
                program.launch("empty", &args, Launch::grid(1).block(32))?;
            }
        }
        let elapsed = start.elapsed();
        chorus::cuda::synchronize_context()?;
        if burst >= 10 {
            per_launch.push(elapsed.as_secs_f64() * 1e6 / 64.0);
        }
    }
    let us = median(&mut per_launch);
    Ok(Row {
        name: if typed { "launch-typed" } else { "launch" },
        size: if typed {
            "defkernel! fn, 4 args"
        } else {
            "Program::launch, 4 args"
        }
        .into(),
        ms: us / 1e3,
        value: us,
        unit: "us",
        ok: true,
    })
}

/// The compile probe, run in a child process: for two kernel texts made unique by `nonce`, the
/// time from the text to the first launch's result (read, expand, check, CUDA C, compile or cache
/// lookup, load, launch), with the context already made, and the part of it `Program::new`
/// (read, expand, check) took. The first text also pays for loading NVRTC.
fn compile_probe(nonce: &str) -> chorus::Result<[Probe; 2]> {
    let a = MemoryBlock::from_slice(&vec![Float4::default(); 256])?;
    let mut c = MemoryBlock::<Float4>::alloc(256)?;
    let mut probes = [Probe::default(); 2];
    for (i, probe) in probes.iter_mut().enumerate() {
        // A global whose initializer is the nonce makes the CUDA C, and so the cache key, unique.
        let text = format!("(defglobal probe-nonce {nonce}{i})\n{}", VECTOR_ADD4.1);
        let start = Instant::now();
        let program = Program::new(text, "vector-add4.lisp")?;
        probe.check_ms = start.elapsed().as_secs_f64() * 1e3;
        let args = [a.as_arg(), a.as_arg(), c.as_arg(), Arg::value(64i32)];
        program.launch("vec-add4", &args, Launch::grid(1).block(64))?;
        c.sync(Direction::DeviceToHost)?;
        probe.total_ms = start.elapsed().as_secs_f64() * 1e3;
    }
    Ok(probes)
}

/// What [`compile_probe`] measures of one kernel text.
#[derive(Clone, Copy, Default)]
struct Probe {
    /// From the text to the first launch's result, in milliseconds.
    total_ms: f64,
    /// Of which `Program::new` (read, expand, check).
    check_ms: f64,
}

/// Runs this program as `--probe-compile NONCE` with `env` and reads the times it prints.
fn run_probe(nonce: &str, env: &[(&str, &str)]) -> Result<[Probe; 2], String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let output = Command::new(exe)
        .arg("--probe-compile")
        .arg(nonce)
        .envs(env.iter().copied())
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&output.stdout);
    let t: Vec<f64> = text
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect();
    match t[..] {
        [a, b, c, d] if output.status.success() => Ok([
            Probe {
                total_ms: a,
                check_ms: b,
            },
            Probe {
                total_ms: c,
                check_ms: d,
            },
        ]),
        _ => Err(format!(
            "probe failed: {text} {}",
            String::from_utf8_lossy(&output.stderr)
        )),
    }
}

fn compile_rows() -> Vec<Row> {
    let mut rows = Vec::new();
    // CHORUS_IMAGE=auto is the seed's rule (PTX, which the driver JIT-compiles at every load
    // here since its cache is off); cubin is compiled for the device and loads without a JIT.
    for (image, names) in [
        (
            "auto",
            [
                "compile-first",
                "compile-cold",
                "compile-warm-first",
                "compile-warm",
            ],
        ),
        (
            "cubin",
            [
                "compile-first-cubin",
                "compile-cold-cubin",
                "compile-warm-first-cubin",
                "compile-warm-cubin",
            ],
        ),
    ] {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_micros());
        // Nine digits and a final digit per text: an int literal.
        let nonce = format!("{}", 100_000_000 + micros % 100_000_000);
        // NVRTC, with the driver's and NVRTC's own caches off; Chorus's disk cache on (its default).
        let env = [
            ("CUDA_CACHE_DISABLE", "1"),
            ("CHORUS_COMPILER", "nvrtc"),
            ("CHORUS_IMAGE", image),
        ];
        // Cold: new texts in a new process. Warm: the same texts in the next process (disk cache hits).
        let cold = run_probe(&nonce, &env);
        let warm = run_probe(&nonce, &env);
        let sizes = [
            "vector-add, NVRTC, 1st in process",
            "vector-add, NVRTC, 2nd in process",
            "disk cache hit, 1st in process",
            "disk cache hit, 2nd in process",
        ];
        for (k, name) in names.into_iter().enumerate() {
            let (result, which) = if k < 2 { (&cold, k) } else { (&warm, k - 2) };
            let size = format!("{}, {image}", sizes[k]);
            rows.push(match result {
                Ok(probes) => {
                    let p = probes[which];
                    let size = format!("{size} (check {:.2} ms)", p.check_ms);
                    Row {
                        name,
                        size,
                        ms: p.total_ms,
                        value: p.total_ms,
                        unit: "ms",
                        ok: true,
                    }
                }
                Err(e) => {
                    eprintln!("{name}: {e}");
                    Row {
                        name,
                        size,
                        ms: f64::NAN,
                        value: f64::NAN,
                        unit: "ms",
                        ok: false,
                    }
                }
            });
        }
    }
    rows
}

/// Memory-block copies of 256 MiB each way, pageable and pinned host copies: median of 10.
fn sync_rows() -> chorus::Result<Vec<Row>> {
    let n = (256usize << 20) / 4;
    let mut rows = Vec::new();
    let mut pageable = MemoryBlock::<f32>::alloc(n)?;
    let mut pinned = chorus::cuda::MemoryBlock::<f32>::alloc_pinned(n)?;
    let time = |copy: &mut dyn FnMut() -> chorus::Result<()>| -> chorus::Result<f64> {
        let mut t = Vec::new();
        for r in 0..12 {
            let start = Instant::now();
            copy()?;
            if r >= 2 {
                t.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
        Ok(median(&mut t))
    };
    let gb = (n * 4) as f64 / 1e6;
    for (name, direction) in [
        ("h2d-pageable", Direction::HostToDevice),
        ("d2h-pageable", Direction::DeviceToHost),
    ] {
        let ms = time(&mut || pageable.sync(direction))?;
        rows.push(Row {
            name,
            size: "256 MiB".into(),
            ms,
            value: gb / ms,
            unit: "GB/s",
            ok: true,
        });
    }
    for (name, direction) in [
        ("h2d-pinned", chorus::cuda::Direction::HostToDevice),
        ("d2h-pinned", chorus::cuda::Direction::DeviceToHost),
    ] {
        let ms = time(&mut || pinned.sync(direction).map_err(chorus::Error::from))?;
        rows.push(Row {
            name,
            size: "256 MiB".into(),
            ms,
            value: gb / ms,
            unit: "GB/s",
            ok: true,
        });
    }
    Ok(rows)
}

fn run(args: &[String]) -> Result<bool, String> {
    let option = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let base = match option("--baseline") {
        Some(path) => {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
            parse_baselines(&text, &path)?
        }
        None => HashMap::new(),
    };
    let backend = chorus::check_backend().map_err(|e| e.to_string())?;
    if backend != Backend::Cuda {
        let why = format!("the benchmark needs the CUDA backend; the current one is {backend}");
        // Like the GPU tests: skip and say so, unless a GPU is required.
        if chorus::cuda::testing::gpu_required() {
            return Err(why);
        }
        println!("bench_suite: skipped: {why}");
        return Ok(true);
    }
    let device = chorus::current_device().map_err(|e| e.to_string())?;
    println!("# chorus bench_suite on {device}");
    let e = |e: chorus::Error| e.to_string();
    let program = workloads::workload_program(&[
        VECTOR_ADD4,
        kernels::REDUCTION,
        kernels::TRANSPOSE,
        kernels::SGEMM,
        kernels::NBODY,
        kernels::DIFFUSE0,
        kernels::DIFFUSE1,
        kernels::SCAN,
    ])
    .map_err(e)?;
    let sph_program = workloads::workload_program(&[kernels::SPH]).map_err(e)?;
    let mut random = Random::new(2026);
    let mut rows = Vec::new();
    // Each workload frees its memory before the next one starts.
    let mut step = |what: &str, r: chorus::Result<Vec<Row>>| match r {
        Ok(mut new) => {
            for row in &new {
                println!(
                    "# {}: {:.4} ms, {:.3} {} ({})",
                    row.name,
                    row.ms,
                    row.value,
                    row.unit,
                    if row.ok { "ok" } else { "FAILED" }
                );
            }
            rows.append(&mut new);
        }
        Err(error) => println!("# {what}: error: {error}"),
    };
    step(
        "vector-add",
        vector_add(&program, &mut random).map(|r| vec![r]),
    );
    step(
        "reduction",
        reduction(&program, &mut random).map(|r| vec![r]),
    );
    step(
        "transpose",
        transpose(&program, &mut random).map(|r| vec![r]),
    );
    step("sgemm", sgemm(&program, &mut random).map(|r| vec![r]));
    step("nbody", nbody(&program, &mut random).map(|r| vec![r]));
    step("diffuse", diffuse(&program, &mut random).map(Vec::from));
    step("scan", scan(&program, &mut random).map(|r| vec![r]));
    step("sph", sph(&sph_program).map(|r| vec![r]));
    step("launch", launch_overhead(&program, false).map(|r| vec![r]));
    step(
        "launch-typed",
        launch_overhead(&program, true).map(|r| vec![r]),
    );
    step("compile", Ok(compile_rows()));
    step("sync", sync_rows());

    let text = table(&rows, &base);
    println!("\n{text}");
    if let Some(path) = option("--out") {
        let mut tsv = String::from("name\tms\tvalue\tunit\tok\tbaseline_ms\tbaseline_value\n");
        for row in &rows {
            let b = base.get(baseline_name(row.name));
            let _ = writeln!(
                tsv,
                "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                row.name,
                row.ms,
                row.value,
                row.unit,
                row.ok,
                b.map_or(f64::NAN, |b| b.0),
                b.map_or(f64::NAN, |b| b.1)
            );
        }
        for extra in ["d2d-copy", "cublas-sgemm"] {
            if let Some(b) = base.get(extra) {
                let _ = writeln!(
                    tsv,
                    "{extra}\t{}\t{}\tceiling\ttrue\t{}\t{}",
                    b.0, b.1, b.0, b.1
                );
            }
        }
        std::fs::write(&path, tsv).map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(rows.iter().all(|r| r.ok))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--probe-compile") {
        return match compile_probe(args.get(i + 1).map_or("1", String::as_str)) {
            Ok([first, second]) => {
                println!(
                    "{} {} {} {}",
                    first.total_ms, first.check_ms, second.total_ms, second.check_ms
                );
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("{error}");
                ExitCode::FAILURE
            }
        };
    }
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("bench_suite: some results did not check out");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("bench_suite: {error}");
            ExitCode::FAILURE
        }
    }
}
