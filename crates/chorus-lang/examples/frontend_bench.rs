//! Times the front end (read, expand, check) on small units, host only.
//!
//! Run with `cargo run --release -p chorus-lang --example frontend_bench`. Prints, for the seed's
//! vector-add kernel and for the sph example with the shared prelude (about 200 lines with
//! macros): the first `compile_str` of the process, then the median of warm calls of
//! `compile_str` and of each pass on its own.

use chorus_lang::{Expander, check, compile_str, read_str};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The seed's vector-add kernel.
const VEC_ADD: &str = "(defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int)))
  (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
    (if (< i n)
        (set (aref c i)
             (+ (aref a i) (aref b i))))))";

const PRELUDE: &str = include_str!("../../../examples/kernels/prelude.lisp");
const SPH: &str = include_str!("../../../examples/kernels/sph.lisp");

/// The median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort_unstable();
    times[runs / 2]
}

fn micros(d: Duration) -> String {
    format!("{:9.1} µs", d.as_secs_f64() * 1e6)
}

fn report(name: &str, text: &str, runs: usize) {
    let forms = read_str(text, "bench.lisp").expect("the benchmark text reads");
    let expanded = Expander::new()
        .expand_unit(&forms)
        .expect("the benchmark text expands");
    let lines = text.lines().count();
    println!("{name} ({lines} lines), median of {runs}:");
    let all = median(runs, || {
        black_box(compile_str(black_box(text), "bench.lisp").expect("compiles"));
    });
    let read = median(runs, || {
        black_box(read_str(black_box(text), "bench.lisp").expect("reads"));
    });
    let expand = median(runs, || {
        black_box(
            Expander::new()
                .expand_unit(black_box(&forms))
                .expect("expands"),
        );
    });
    let checked = median(runs, || {
        black_box(check::check_module(black_box(&expanded)).expect("checks"));
    });
    println!("  compile_str {}", micros(all));
    println!("  read        {}", micros(read));
    println!("  expand      {}", micros(expand));
    println!("  check       {}", micros(checked));
}

fn main() {
    // The very first call pays for lazily built tables and anything started once per process:
    // timed pass by pass, which is what the first `compile_str` does.
    let start = Instant::now();
    let forms = read_str(VEC_ADD, "vec-add.lisp").expect("vec-add reads");
    let read = start.elapsed();
    let expanded = Expander::new()
        .expand_unit(&forms)
        .expect("vec-add expands");
    let expand = start.elapsed() - read;
    black_box(check::check_module(&expanded).expect("vec-add checks"));
    let total = start.elapsed();
    println!(
        "vec-add first call (read + expand + check) {} = read {} + expand {} + check {}",
        micros(total),
        micros(read),
        micros(expand),
        micros(total - read - expand)
    );
    let start = Instant::now();
    black_box(compile_str(VEC_ADD, "vec-add.lisp").expect("vec-add compiles"));
    println!("vec-add second compile_str {}", micros(start.elapsed()));
    report("vec-add", VEC_ADD, 1000);
    let sph = format!("{PRELUDE}\n{SPH}");
    report("prelude + sph", &sph, 200);
}
