//! Times the CPU backend against plain Rust loops doing the same work on the same machine:
//! vector addition over 1M floats, one 256×256 step of cl-cuda's diffuse0 heat stencil, and the
//! reduction example's kernel (warp shuffles) over 1M floats,
//! on the native code (1 and 2 worker threads) and on the SIMT interpreter; then the time to
//! compile the largest example module (sph) to native code.
//!
//! Run with `cargo run --release -p chorus-cpu --example cpu_bench`. Prints the median of
//! several runs of each and the ratios. An argument (`vector-add`, `diffuse`, `reduction` or `sph`) runs
//! only that part, which helps when profiling one kernel under callgrind. Figures are in
//! BENCHMARKS.md ("CPU backend: native code").
//!
//! Interpreter figures of 2026-11-29 (2-core x86_64 machine, load average 5.3 from other
//! builds; wall times vary a lot under such load, instruction counts do not):
//!
//! | | executor | native | ratio | callgrind, executor instructions per element |
//! |---|---|---|---|---|
//! | vector add, 1M floats | 18–21 ms (was 37–49 ms) | 0.62–0.80 ms | 23–31× (was 55–76×) | 112 (was 186) |
//! | diffuse0 step, 256×256 | 2.3–3.4 ms (was 3.6–8.4 ms) | 0.19 ms | 12–18× (was 19–24×) | 377 (was 546) |

use chorus_cpu::{CpuModule, DeviceBuffer, KernelArg, KernelPath, LaunchConfig};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

const RUNS: usize = 21;

fn median(mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[RUNS / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Times `launch` on the interpreter (all cores) and on native code with 1 and 2 workers,
/// against `rust` (a plain loop on one core), and prints the ratios.
fn compare(what: &str, text: &str, kernel: &str, launch: impl Fn(&CpuModule), rust: Duration) {
    let mut interp = prepare(text);
    interp.set_interpreted(true);
    let interpreted = median(|| launch(&interp));
    // The interpreter on one worker: its scaling, measured alongside, tells machine load
    // from the native code's own.
    interp.set_workers(1);
    let interpreted_one = median(|| launch(&interp));
    let mut native = prepare(text);
    let started = Instant::now();
    let path = native.kernel_path(kernel).unwrap();
    let compile = started.elapsed();
    assert_eq!(path, KernelPath::Native, "{kernel} must compile");
    native.set_workers(1);
    let one = median(|| launch(&native));
    native.set_workers(2);
    let two = median(|| launch(&native));
    // The native code without SIMD over threads, for comparison (the variable is read when a
    // kernel compiles; nothing else runs at this point).
    // SAFETY: this program has no other thread now.
    unsafe { std::env::set_var("CHORUS_CPU_SIMD", "0") };
    let mut scalar = prepare(text);
    assert_eq!(scalar.kernel_path(kernel).unwrap(), KernelPath::Native);
    // SAFETY: as above.
    unsafe { std::env::remove_var("CHORUS_CPU_SIMD") };
    scalar.set_workers(1);
    let scalar_one = median(|| launch(&scalar));
    let r = |d: Duration| d.as_secs_f64() / rust.as_secs_f64();
    println!(
        "{what:<24} rust {:>7.3} ms | native 1 core {:>7.3} ms ({:>4.2}x) 2 cores {:>7.3} ms ({:>4.2}x), scaling {:>4.2}x | without SIMD 1 core {:>7.3} ms ({:>4.2}x) | interpreter {:>8.3} ms ({:>5.1}x, {:>5.1}x native-2, scaling {:>4.2}x) | compile {:>5.2} ms",
        ms(rust),
        ms(one),
        r(one),
        ms(two),
        r(two),
        one.as_secs_f64() / two.as_secs_f64(),
        ms(scalar_one),
        r(scalar_one),
        ms(interpreted),
        r(interpreted),
        interpreted.as_secs_f64() / two.as_secs_f64(),
        interpreted_one.as_secs_f64() / interpreted.as_secs_f64(),
        ms(compile),
    );
}

fn prepare(text: &str) -> CpuModule {
    let ir = chorus_lang::compile_str(text, "bench.lisp").unwrap_or_else(|e| panic!("{e}"));
    CpuModule::new(Arc::new(ir)).unwrap_or_else(|e| panic!("{e}"))
}

fn vector_add() {
    let n = 1 << 20;
    let text = include_str!("../tests/corpus/vec_add.lisp");
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 0.5 * i as f32).collect();
    let (da, db) = (
        DeviceBuffer::from_slice(&a).unwrap(),
        DeviceBuffer::from_slice(&b).unwrap(),
    );
    let dc = DeviceBuffer::alloc(n * 4).unwrap();
    let config = LaunchConfig::linear((n / 256) as u32, 256);
    let args = [
        KernelArg::Buffer(&da),
        KernelArg::Buffer(&db),
        KernelArg::Buffer(&dc),
        KernelArg::value(n as i32),
    ];
    let mut c = vec![0.0f32; n];
    let rust = median(|| {
        for ((c, a), b) in c.iter_mut().zip(black_box(&a)).zip(black_box(&b)) {
            *c = a + b;
        }
        black_box(&mut c);
    });
    // A control: the same Rust loop split over two threads, one of them spawned per run, as
    // the executor's launches did until 2026-12-04 (exec/pool.rs): on the 2-vCPU machine the
    // spawn costs about what the second core gives back, so this scales about 1x, while the
    // executor's persistent helpers scale the native vector add about 2x.
    let mut c2 = vec![0.0f32; n];
    let rust_two = median(|| {
        let (a, b) = (black_box(&a), black_box(&b));
        let (lo, hi) = c2.split_at_mut(n / 2);
        std::thread::scope(|s| {
            s.spawn(|| {
                for ((c, a), b) in hi.iter_mut().zip(&a[n / 2..]).zip(&b[n / 2..]) {
                    *c = a + b;
                }
            });
            for ((c, a), b) in lo.iter_mut().zip(a).zip(b) {
                *c = a + b;
            }
        });
        black_box(&mut c2);
    });
    println!(
        "control: the Rust vector add on 2 threads (one spawned per run) {:.3} ms, on 1 {:.3} ms: scaling {:.2}x",
        ms(rust_two),
        ms(rust),
        rust.as_secs_f64() / rust_two.as_secs_f64()
    );
    let launch = |m: &CpuModule| {
        m.launch("vec-add", &config, &args).unwrap();
        assert_eq!(dc.to_vec::<f32>().unwrap(), c);
    };
    // The check of the result is outside the timed launches.
    let timed = |m: &CpuModule| m.launch("vec-add", &config, &args).unwrap();
    launch(&prepare(text));
    compare("vector add, 1M floats", text, "vec-add", timed, rust);
}

fn diffuse() {
    let (nx, ny) = (256usize, 256usize);
    let text = include_str!("../tests/corpus/diffuse.lisp");
    let (dx, dy) = (1.0 / nx as f32, 1.0 / ny as f32);
    let f: Vec<f32> = (0..nx * ny)
        .map(|j| {
            let (x, y) = (
                dx * ((j % nx) as f32 + 0.5) - 0.5,
                dy * ((j / nx) as f32 + 0.5) - 0.5,
            );
            (-30.0 * (x * x + y * y)).exp()
        })
        .collect();
    let (c0, c1) = (0.2f32, 0.2f32);
    let c2 = 1.0 - 2.0 * (c0 + c1);
    let df = DeviceBuffer::from_slice(&f).unwrap();
    let dn = DeviceBuffer::alloc(nx * ny * 4).unwrap();
    let config = LaunchConfig {
        grid: [1, ny as u32, 1],
        block: [nx as u32, 1, 1],
        shared_mem: 0,
    };
    let args = [
        KernelArg::Buffer(&df),
        KernelArg::Buffer(&dn),
        KernelArg::value(nx as i32),
        KernelArg::value(ny as i32),
        KernelArg::value(c0),
        KernelArg::value(c1),
        KernelArg::value(c2),
    ];
    let mut next = vec![0.0f32; nx * ny];
    let rust = median(|| {
        let f = black_box(&f);
        for jy in 0..ny {
            for jx in 0..nx {
                let j = nx * jy + jx;
                let fcc = f[j];
                let fcw = if jx == 0 { fcc } else { f[j - 1] };
                let fce = if jx == nx - 1 { fcc } else { f[j + 1] };
                let fcs = if jy == 0 { fcc } else { f[j - nx] };
                let fcn = if jy == ny - 1 { fcc } else { f[j + nx] };
                next[j] = c0 * (fce + fcw) + c1 * (fcn + fcs) + c2 * fcc;
            }
        }
        black_box(&mut next);
    });
    prepare(text).launch("diffuse", &config, &args).unwrap();
    assert_eq!(dn.to_vec::<f32>().unwrap(), next);
    let timed = |m: &CpuModule| m.launch("diffuse", &config, &args).unwrap();
    compare("diffuse0 step, 256x256", text, "diffuse", timed, rust);
}

/// Compiles every kernel of the sph example (the largest example module) to native code and
/// prints the time and each kernel's path.
fn sph() {
    let text = format!(
        "{}\n{}",
        include_str!("../../../examples/kernels/prelude.lisp"),
        include_str!("../../../examples/kernels/sph.lisp")
    );
    let ir =
        Arc::new(chorus_lang::compile_str(&text, "sph.lisp").unwrap_or_else(|e| panic!("{e}")));
    let kernels: Vec<String> = ir
        .functions
        .iter()
        .filter(|f| f.kind == chorus_lang::ir::FunctionKind::Kernel)
        .map(|f| f.name.to_string())
        .collect();
    let mut times = Vec::new();
    let mut scalar_times = Vec::new();
    let mut paths = Vec::new();
    let mut simd = 0;
    for _ in 0..RUNS {
        let module = CpuModule::new(ir.clone()).unwrap();
        let started = Instant::now();
        paths = kernels
            .iter()
            .map(|k| (k, module.kernel_path(k).unwrap()))
            .collect();
        times.push(started.elapsed());
        simd = kernels
            .iter()
            .filter(|k| module.kernel_uses_simd(k).unwrap())
            .count();
        // The same without SIMD over threads (what its attempts cost).
        // SAFETY: this program has no other thread now.
        unsafe { std::env::set_var("CHORUS_CPU_SIMD", "0") };
        let module = CpuModule::new(ir.clone()).unwrap();
        let started = Instant::now();
        for k in &kernels {
            module.kernel_path(k).unwrap();
        }
        scalar_times.push(started.elapsed());
        // SAFETY: as above.
        unsafe { std::env::remove_var("CHORUS_CPU_SIMD") };
    }
    times.sort();
    scalar_times.sort();
    let native = paths
        .iter()
        .filter(|(_, p)| *p == KernelPath::Native)
        .count();
    println!(
        "sph module: {} kernels, {native} compiled natively ({simd} with SIMD), in {:.2} ms (median of {RUNS}); without SIMD {:.2} ms",
        kernels.len(),
        ms(times[RUNS / 2]),
        ms(scalar_times[RUNS / 2])
    );
    for (k, p) in &paths {
        if let KernelPath::Interpreted(why) = p {
            println!("  {k}: interpreted: {why}");
        }
    }
}

/// The reduction example's kernel (float4 loads, warp shuffles, one atomic per block) over 1M
/// floats, against a Rust loop summing them: the cost of warp collectives on the native path.
fn reduction() {
    let n = 1usize << 20;
    let text = concat!(
        include_str!("../../../examples/kernels/prelude.lisp"),
        "\n",
        include_str!("../../../examples/kernels/reduction.lisp")
    );
    let x: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let dx = DeviceBuffer::from_slice(&x).unwrap();
    let out = DeviceBuffer::from_slice(&[0.0f32]).unwrap();
    let blocks = 1056.min((n / 4).div_ceil(256)) as u32;
    let config = LaunchConfig::linear(blocks, 256);
    let args = [
        KernelArg::Buffer(&dx),
        KernelArg::value((n / 4) as i32),
        KernelArg::Buffer(&out),
    ];
    let rust = median(|| {
        black_box(black_box(&x).iter().sum::<f32>());
    });
    let want: f64 = x.iter().map(|v| *v as f64).sum();
    let got = out.to_vec::<f32>().unwrap()[0];
    let check = prepare(text);
    check.launch("reduce-sum", &config, &args).unwrap();
    let got = out.to_vec::<f32>().unwrap()[0] - got;
    assert!(
        ((got as f64 - want) / want).abs() < 1e-5,
        "{got} against {want}"
    );
    let timed = |m: &CpuModule| m.launch("reduce-sum", &config, &args).unwrap();
    compare("reduction, 1M floats", text, "reduce-sum", timed, rust);
}

fn main() {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "chorus-cpu benchmark: median of {RUNS} runs; {workers} core(s); the interpreter uses all, the Rust loops one"
    );
    let only = std::env::args().nth(1);
    let wanted = |name: &str| only.as_deref().is_none_or(|o| o == name);
    if wanted("vector-add") {
        vector_add();
    }
    if wanted("diffuse") {
        diffuse();
    }
    if wanted("reduction") {
        reduction();
    }
    if wanted("sph") {
        sph();
    }
}
