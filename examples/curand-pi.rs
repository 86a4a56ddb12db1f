//! Monte-Carlo π: cuRAND (Philox4x32-10) fills a memory block with uniform numbers, a kernel of
//! the kernel language counts the points (x, y) inside the unit circle. The count is checked
//! against the same count made on the host in f64 from the same numbers, and π against its
//! statistical error. Prints the time and the points per second.
//!
//! `cargo run --release --example curand-pi` (needs the CUDA backend and cuRAND).

use chorus::{Direction, Launch, MemoryBlock};
use chorus_cuda_libs::curand::{Generator, RngKind};
use chorus_examples::banner;
use std::process::ExitCode;

chorus::defkernel! {
    (defkernel count-inside (void ((xy float*) (points int) (count int*)))
      (let* ((stride (* grid-dim-x block-dim-x))
             (i (+ (* block-idx-x block-dim-x) thread-idx-x))
             (inside 0))
        (while (< i points)
          (let ((x (aref xy (* 2 i)))
                (y (aref xy (+ (* 2 i) 1))))
            (if (<= (+ (* x x) (* y y)) 1.0)
                (set inside (+ inside 1))))
          (set i (+ i stride)))
        (atomic-add (pointer (aref count 0)) inside)))
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let backend = banner("curand-pi")?;
    if backend != chorus::Backend::Cuda {
        println!("skipped: the CUDA libraries need the CUDA backend");
        return Ok(true);
    }
    let points = 1usize << 26;
    let mut xy = MemoryBlock::<f32>::alloc(2 * points)?;
    let mut count = MemoryBlock::<i32>::alloc(1)?;
    count.sync(Direction::HostToDevice)?; // zero
    let stream = chorus_cuda_libs::Stream::null();
    let mut generator = Generator::new(RngKind::Philox4x32_10, &stream)?;
    generator.set_seed(2026)?;
    stream.synchronize()?;
    let start = std::time::Instant::now();
    generator.fill_uniform(&mut xy)?;
    count_inside(
        &xy,
        points as i32,
        &mut count,
        Launch::grid(1024).block(256),
    )?;
    count.sync(Direction::DeviceToHost)?;
    let elapsed = start.elapsed();
    xy.sync(Direction::DeviceToHost)?;
    let host = xy.as_slice();
    let host_count = (0..points)
        .filter(|&i| {
            let (x, y) = (host[2 * i] as f64, host[2 * i + 1] as f64);
            x * x + y * y <= 1.0
        })
        .count();
    let device_count = count[0] as usize;
    let pi = 4.0 * device_count as f64 / points as f64;
    let sigma = 4.0
        * ((std::f64::consts::FRAC_PI_4 * (1.0 - std::f64::consts::FRAC_PI_4)) / points as f64)
            .sqrt();
    let seconds = elapsed.as_secs_f64();
    println!("{points} points (cuRAND Philox4x32-10, counted by a kernel)");
    println!(
        "π ≈ {pi:.6} (error {:.2e}, σ = {sigma:.1e}); the host's f64 count differs by {}",
        pi - std::f64::consts::PI,
        device_count.abs_diff(host_count)
    );
    println!(
        "elapsed time {:.3} ms, {:.2} Gpoints/s",
        seconds * 1e3,
        points as f64 / seconds / 1e9
    );
    // Points within an ulp of the circle may round either way in f32 against f64.
    Ok(device_count.abs_diff(host_count) <= points / 1_000_000
        && (pi - std::f64::consts::PI).abs() < 5.0 * sigma)
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "curand-pi",
        "Monte-Carlo π from cuRAND numbers counted by a kernel",
    );
    chorus_examples::exit_code("curand-pi", run())
}
