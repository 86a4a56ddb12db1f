//! What a launch through the facade costs: a kernel that does almost nothing, launched many
//! times through its `defkernel!` function, timed per launch. On CUDA the same kernel is also
//! launched through the native API (`chorus::cuda::launch`), in the same run, as the baseline
//! the facade's cost is a ratio to.
//!
//! `cargo run --release --example launch-overhead [LAUNCHES]` (default 20000).

use chorus::{Backend, Launch, MemoryBlock};
use chorus_examples::banner;
use clap::Parser;
use std::process::ExitCode;
use std::time::Instant;

chorus::defkernel! {
    (defkernel touch (void ((a int*) (n int)))
      (if (< thread-idx-x n) (set (aref a thread-idx-x) n)))
}

/// Microseconds per launch of `launches` launches of `launch_once`, then a synchronization.
fn per_launch(
    launches: u32,
    mut launch_once: impl FnMut() -> chorus::Result<()>,
) -> chorus::Result<f64> {
    launch_once()?;
    chorus::synchronize()?;
    let start = Instant::now();
    for _ in 0..launches {
        launch_once()?;
    }
    chorus::synchronize()?;
    Ok(start.elapsed().as_secs_f64() * 1e6 / f64::from(launches))
}

/// The same kernel through `chorus::cuda`: compiled from the same text, launched with the
/// native argument list.
fn native_cuda(a: &MemoryBlock<i32>, launches: u32) -> chorus::Result<f64> {
    let program =
        chorus::cuda::Program::from_text(touch_program().source(), touch_program().file())?;
    let function = program.function("touch")?;
    let address = a
        .device_address()
        .expect("a CUDA memory block has a device address");
    let n = 1i32;
    let config = chorus::cuda::LaunchConfig::grid(1).block(32);
    per_launch(launches, || {
        let args = [
            // SAFETY: the address of `a`, alive for every launch, an int* as `touch` takes.
            unsafe { chorus::cuda::KernelArg::device_ptr(address) },
            chorus::cuda::KernelArg::value(&n),
        ];
        Ok(chorus::cuda::launch(&function, &config, &args)?)
    })
}

/// What a launch through the facade costs, against the native CUDA launch.
#[derive(Debug, clap::Parser)]
#[command(name = "launch-overhead")]
struct Arguments {
    /// How many launches to time (a positive number).
    #[arg(default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(1..))]
    launches: u32,
}

fn main() -> ExitCode {
    let launches = Arguments::parse().launches;
    let outcome = (|| -> chorus::Result<()> {
        let backend = banner("launch-overhead")?;
        let a = MemoryBlock::<i32>::alloc(32)?;
        let facade = per_launch(launches, || touch(&a, 1, Launch::grid(1).block(32)))?;
        println!("{launches} launches of 1 × 32 threads");
        println!("defkernel! function: {facade:8.2} µs per launch");
        if backend == Backend::Cuda {
            let native = native_cuda(&a, launches)?;
            println!("chorus::cuda::launch: {native:8.2} µs per launch");
            println!("facade / native:     {:8.2}", facade / native);
        }
        Ok(())
    })();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("launch-overhead: {error}");
            ExitCode::FAILURE
        }
    }
}
