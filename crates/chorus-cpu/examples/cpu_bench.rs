//! Times the CPU executor against plain Rust loops doing the same work on the same machine:
//! vector addition over 1M floats, and one 256×256 step of cl-cuda's diffuse0 heat stencil.
//!
//! Run with `cargo run --release -p chorus-cpu --example cpu_bench`. Prints the median of
//! several runs of each and the executor / native ratio. An argument (`vector-add` or
//! `diffuse`) runs only that benchmark, which helps when profiling one kernel under callgrind.
//!
//! Figures of 2026-11-29 (2-core x86_64 machine, load average 5.3 from other builds; wall
//! times vary a lot under such load, instruction counts do not):
//!
//! | | executor | native | ratio | callgrind, executor instructions per element |
//! |---|---|---|---|---|
//! | vector add, 1M floats | 18–21 ms (was 37–49 ms) | 0.62–0.80 ms | 23–31× (was 55–76×) | 112 (was 186) |
//! | diffuse0 step, 256×256 | 2.3–3.4 ms (was 3.6–8.4 ms) | 0.19 ms | 12–18× (was 19–24×) | 377 (was 546) |
//!
//! Instructions per element are `run_block`'s inclusive count over the 8 launches of one
//! benchmark, divided by 8 × its element count. Most of what remains is one pass over 32
//! 64-bit lanes per bytecode instruction (vectorised by two lanes where SSE2 allows):
//! vector add runs 16 instructions per warp, diffuse 68.

use chorus_cpu::{CpuModule, DeviceBuffer, KernelArg, LaunchConfig};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

const RUNS: usize = 7;

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

fn report(what: &str, executor: Duration, native: Duration) {
    println!(
        "{what:<28} executor {:>9.3} ms   native {:>8.3} ms   ratio {:>6.1}x",
        executor.as_secs_f64() * 1e3,
        native.as_secs_f64() * 1e3,
        executor.as_secs_f64() / native.as_secs_f64()
    );
}

fn prepare(text: &str) -> CpuModule {
    let ir = chorus_lang::compile_str(text, "bench.lisp").unwrap_or_else(|e| panic!("{e}"));
    CpuModule::new(Arc::new(ir)).unwrap_or_else(|e| panic!("{e}"))
}

fn vector_add() {
    let n = 1 << 20;
    let module = prepare(include_str!("../tests/corpus/vec_add.lisp"));
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
    let executor = median(|| module.launch("vec-add", &config, &args).unwrap());
    let mut c = vec![0.0f32; n];
    let native = median(|| {
        for ((c, a), b) in c.iter_mut().zip(black_box(&a)).zip(black_box(&b)) {
            *c = a + b;
        }
        black_box(&mut c);
    });
    assert_eq!(dc.to_vec::<f32>().unwrap(), c);
    report("vector add, 1M floats", executor, native);
}

fn diffuse() {
    let (nx, ny) = (256usize, 256usize);
    let module = prepare(include_str!("../tests/corpus/diffuse.lisp"));
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
    let executor = median(|| module.launch("diffuse", &config, &args).unwrap());
    let mut next = vec![0.0f32; nx * ny];
    let native = median(|| {
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
    assert_eq!(dn.to_vec::<f32>().unwrap(), next);
    report("diffuse0 step, 256x256", executor, native);
}

fn main() {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "chorus-cpu benchmark: median of {RUNS} runs; the executor uses {workers} worker thread(s), the native loops one"
    );
    let only = std::env::args().nth(1);
    let wanted = |name: &str| only.as_deref().is_none_or(|o| o == name);
    if wanted("vector-add") {
        vector_add();
    }
    if wanted("diffuse") {
        diffuse();
    }
}
