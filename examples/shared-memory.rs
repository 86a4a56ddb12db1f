//! cl-cuda's shared-memory benchmark: each thread adds 1.0 to its element N times, either
//! directly in global memory or in a `__shared__` copy of its block's elements, for N in
//! {1000, 2000, 3000, 4000} unrolled statements, launched repeatedly with a synchronization
//! after each launch. The result must be exactly `launches · N` everywhere.
//!
//! The kernels are generated at run time (the Lisp original generates them with a macro): the
//! text is built in Rust and compiled with `chorus::Program::new`.
//!
//! On CUDA it runs cl-cuda's size (65536 floats, 16 threads per block, 100 launches); on the CPU
//! executor a smaller one (1024 floats, 10 launches) that finishes in seconds. It exits with
//! status 1 on a wrong result.

use chorus::{Backend, Direction, Launch, MemoryBlock, Program};
use chorus_examples::banner;
use std::fmt::Write;
use std::process::ExitCode;
use std::time::Instant;

const THREADS_PER_BLOCK: usize = 16;
const UNROLLS: [usize; 4] = [1000, 2000, 3000, 4000];

/// The kernel text: `add-global-N` and `add-shared-N` for every N of `UNROLLS`.
fn kernel_text() -> String {
    let mut text = String::new();
    for n in UNROLLS {
        writeln!(text, "(defkernel add-global-{n} (void ((a float*)))").unwrap();
        writeln!(
            text,
            "  (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))"
        )
        .unwrap();
        for _ in 0..n {
            writeln!(text, "    (set (aref a i) (+ (aref a i) 1.0))").unwrap();
        }
        text.push_str("    ))\n");
        writeln!(text, "(defkernel add-shared-{n} (void ((a float*)))").unwrap();
        writeln!(
            text,
            "  (with-shared-memory ((s float {THREADS_PER_BLOCK}))"
        )
        .unwrap();
        writeln!(
            text,
            "    (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))"
        )
        .unwrap();
        writeln!(text, "      (set (aref s thread-idx-x) (aref a i))").unwrap();
        writeln!(text, "      (syncthreads)").unwrap();
        for _ in 0..n {
            writeln!(
                text,
                "      (set (aref s thread-idx-x) (+ (aref s thread-idx-x) 1.0))"
            )
            .unwrap();
        }
        writeln!(text, "      (syncthreads)").unwrap();
        writeln!(text, "      (set (aref a i) (aref s thread-idx-x)))))").unwrap();
    }
    text
}

/// Runs `kernel` `launches` times over `len` zeroed floats; the seconds taken, and whether every
/// element ended at exactly `launches · unroll`.
fn run(
    program: &Program,
    kernel: &str,
    len: usize,
    launches: usize,
    unroll: usize,
) -> chorus::Result<(f64, bool)> {
    let mut a = MemoryBlock::<f32>::alloc(len)?;
    a.sync(Direction::HostToDevice)?;
    let launch = Launch::grid(len / THREADS_PER_BLOCK).block(THREADS_PER_BLOCK);
    // Compile and load before timing.
    program.load()?;
    let start = Instant::now();
    for _ in 0..launches {
        program.launch(kernel, &[a.as_arg()], launch.clone())?;
        chorus::synchronize()?;
    }
    let seconds = start.elapsed().as_secs_f64();
    a.sync(Direction::DeviceToHost)?;
    let expected = (launches * unroll) as f32;
    Ok((seconds, a.as_slice().iter().all(|&x| x == expected)))
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "shared-memory",
        "cl-cuda's shared-memory benchmark: global against __shared__ memory",
    );
    let outcome = (|| -> chorus::Result<bool> {
        let backend = banner("shared-memory")?;
        let (len, launches) = if backend == Backend::Cpu {
            (1024, 10)
        } else {
            (65536, 100)
        };
        println!(
            "{len} floats, grid {} × block {THREADS_PER_BLOCK}, {launches} launches per kernel",
            len / THREADS_PER_BLOCK
        );
        let program = Program::new(kernel_text(), "shared-memory.lisp")?;
        let mut all_correct = true;
        for unroll in UNROLLS {
            for memory in ["global", "shared"] {
                let kernel = format!("add-{memory}-{unroll}");
                let (seconds, correct) = run(&program, &kernel, len, launches, unroll)?;
                let verdict = if correct { "exact" } else { "WRONG" };
                println!("{kernel:>16}: {seconds:8.3} s  {verdict}");
                all_correct &= correct;
            }
        }
        Ok(all_correct)
    })();
    chorus_examples::exit_code("shared-memory", outcome)
}
