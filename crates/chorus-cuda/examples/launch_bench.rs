//! Host-side costs of the CUDA backend, against raw driver calls in the same process:
//! launching a cached kernel, cold compiles (NVRTC, nvcc), cache hits and module loads.
//!
//! `cargo run --release -p chorus-cuda --example launch_bench` on a machine with a GPU.
//! Medians of many samples; CUDA_CACHE_DISABLE=1 is set so that compiles and PTX loads are cold.
//!
//! Measured on an NVIDIA H200 (sm_90), driver 580.159.04 (CUDA 13.0), NVRTC and nvcc 13.0,
//! 2026-11-29 16:02 UTC (after the two-level cache key and cubin by default; launch figures vary
//! by about 10% between runs, and earlier runs that day gave raw launches of 4.2–4.6 µs):
//!
//! | measure | median |
//! |---|---|
//! | launch, raw `cuLaunchKernel` (host, per launch) | 3.61 µs |
//! | launch, chorus `launch()` | 3.07 µs (ratio 0.85) |
//! | launch, kernel text, arguments checked against the signature | 3.04 µs |
//! | launch, kernel text, `launch_unchecked` | 2.94 µs |
//! | cold compile, NVRTC (now cubin for the device) | 25 ms |
//! | cold compile, nvcc | 0.27 s |
//! | cache hit, memory, 97 B / 4.3 KB source | 0.26 µs / 0.57 µs |
//! | cache hit, disk (read + SHA-256 check) | 17 µs |
//! | module load, PTX (driver JIT, uncached) | 9.2 ms |
//! | module load, cubin | 11 µs |
//! | `Program::from_cuda_c`, warm cache, default (cubin) / `CHORUS_IMAGE=ptx` | 11 µs / 9.0 ms |
//!
//! The row "first Program in a process, disk-cache hit" (added later, not yet measured here)
//! times `Program::from_cuda_c` in fresh child processes (this example re-run with
//! `CHORUS_BENCH_FIRST_PROGRAM` set), after their context exists: the cost a program start pays
//! on a disk-cache hit, which no longer includes loading NVRTC (28–33 ms before).
//!
//! Before (same day, 15:25 UTC): memory hit 4.45 µs (SHA-256 key, driver queries per lookup),
//! `Program::from_cuda_c` warm 9.5 ms (PTX by default, driver JIT at every load).

use chorus_cuda::compile::compile_with;
use chorus_cuda::*;
use std::time::{Duration, Instant};

const KERNEL: &str =
    "extern \"C\" __global__ void noop(float* a, float* b, int n) { if (n < 0) a[0] = b[0]; }\n";
const LAUNCHES_PER_BURST: u32 = 200;
const BURSTS: usize = 50;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn micros(d: Duration) -> String {
    format!("{:10.2} µs", d.as_secs_f64() * 1e6)
}

/// The median over bursts of the host time per launch.
fn per_launch(mut launch_once: impl FnMut() -> Result<()>) -> Result<Duration> {
    let mut samples = Vec::with_capacity(BURSTS);
    for burst in 0..=BURSTS {
        let start = Instant::now();
        for _ in 0..LAUNCHES_PER_BURST {
            launch_once()?;
        }
        let elapsed = start.elapsed();
        synchronize_context()?;
        if burst > 0 {
            samples.push(elapsed / LAUNCHES_PER_BURST);
        }
    }
    Ok(median(samples))
}

fn time_median(n: usize, mut f: impl FnMut(usize) -> Result<()>) -> Result<Duration> {
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let start = Instant::now();
        f(i)?;
        samples.push(start.elapsed());
    }
    Ok(median(samples))
}

/// Set (to the cache directory) in the child process that times the first program of a process.
const FIRST_PROGRAM_VAR: &str = "CHORUS_BENCH_FIRST_PROGRAM";

/// In the child process: the time of the process's first `Program::from_cuda_c` of `source`,
/// after the context exists (so that only compiler, cache and module load count), printed as
/// `first-program MICROS disk-hits N`.
fn first_program_child(cache_dir: std::path::PathBuf, source: &str) -> Result<()> {
    cache::set_dir(Some(cache_dir));
    with_cuda(0, |_| -> Result<()> {
        let start = Instant::now();
        Program::from_cuda_c(source, "noop")?;
        let elapsed = start.elapsed();
        println!(
            "first-program {} disk-hits {}",
            elapsed.as_secs_f64() * 1e6,
            cache::stats().disk_hits
        );
        Ok(())
    })
}

/// The median over `runs` child processes of the first program's time, `None` when a child
/// failed or its program was not a disk hit.
fn first_program_in_a_process(cache_dir: &std::path::Path, runs: usize) -> Option<Duration> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let output = std::process::Command::new(std::env::current_exe().ok()?)
            .env(FIRST_PROGRAM_VAR, cache_dir)
            .output()
            .ok()?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout.lines().find(|l| l.starts_with("first-program "))?;
        let fields: Vec<&str> = line.split_whitespace().collect();
        if !output.status.success() || fields.get(3) != Some(&"1") {
            eprintln!(
                "first program child: {stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            );
            return None;
        }
        samples.push(Duration::from_secs_f64(
            fields.get(1)?.parse::<f64>().ok()? / 1e6,
        ));
    }
    Some(median(samples))
}

fn main() -> Result<()> {
    // SAFETY: set before any other thread exists and before NVRTC or the driver is loaded.
    unsafe { std::env::set_var("CUDA_CACHE_DISABLE", "1") };
    if let Some(dir) = std::env::var_os(FIRST_PROGRAM_VAR) {
        return first_program_child(dir.into(), &format!("// cached\n{KERNEL}"));
    }
    let date = std::process::Command::new("date")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let cache_dir = std::env::temp_dir().join(format!("chorus-bench-{}", std::process::id()));
    cache::set_dir(Some(cache_dir.clone()));
    let mut rows: Vec<(String, String)> = Vec::new();

    with_cuda(0, |ctx| -> Result<()> {
        let info = &devices()?[ctx.device()];
        println!(
            "{} (sm_{}{}), driver CUDA {:?}, {date}",
            info.name,
            info.compute_capability.0,
            info.compute_capability.1,
            driver_version()?
        );
        let program = Program::from_cuda_c(KERNEL, "noop")?;
        let f = program.function("noop")?;
        let a = MemoryBlock::<f32>::alloc(1)?;
        let b = MemoryBlock::<f32>::alloc(1)?;
        let n = 1i32;

        // Raw cuLaunchKernel with a prepared parameter array.
        let (mut pa, mut pb, mut pn) = (a.device_ptr(), b.device_ptr(), n);
        let mut params = [
            (&mut pa as *mut u64).cast::<std::ffi::c_void>(),
            (&mut pb as *mut u64).cast(),
            (&mut pn as *mut i32).cast(),
        ];
        let raw = per_launch(|| {
            // SAFETY: the driver is initialised (with_cuda), the function and parameters are valid.
            let r = unsafe {
                sys::cuLaunchKernel(
                    f.raw(),
                    1,
                    1,
                    1,
                    32,
                    1,
                    1,
                    0,
                    std::ptr::null_mut(),
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
            Ok(())
        })?;
        let cfg = LaunchConfig::grid(1).block(32);
        // Raw CUDA C has no signature to check against: chorus launches it unchecked.
        let chorus = per_launch(|| {
            // SAFETY: the arguments match `noop`'s parameters (float*, float*, int).
            unsafe {
                launch_unchecked(
                    &f,
                    &cfg,
                    &[
                        KernelArg::block(&a),
                        KernelArg::block(&b),
                        KernelArg::value(&n),
                    ],
                )
            }
        })?;
        rows.push((
            "launch, raw cuLaunchKernel (host, per launch)".into(),
            micros(raw),
        ));
        rows.push((
            "launch, chorus launch() (host, per launch)".into(),
            micros(chorus),
        ));
        rows.push((
            "launch overhead ratio chorus / raw".into(),
            format!("{:10.3}", chorus.as_secs_f64() / raw.as_secs_f64()),
        ));
        // The same kernel from kernel text: arguments are checked against its signature.
        let checked_noop = Program::from_text(
            "(defkernel noop (void ((a float*) (b float*) (n int)))
               (if (< n 0) (set (aref a 0) (aref b 0))))",
            "noop.lisp",
        )?
        .function("noop")?;
        let checked = per_launch(|| {
            let args = [
                KernelArg::block(&a),
                KernelArg::block(&b),
                KernelArg::value(&n),
            ];
            launch(&checked_noop, &cfg, &args)
        })?;
        rows.push((
            "launch, kernel text, checked arguments".into(),
            micros(checked),
        ));
        let unchecked = per_launch(|| {
            let args = [
                KernelArg::block(&a),
                KernelArg::block(&b),
                KernelArg::value(&n),
            ];
            // SAFETY: the arguments match `noop`'s parameters (float*, float*, int).
            unsafe { launch_unchecked(&checked_noop, &cfg, &args) }
        })?;
        rows.push((
            "launch, kernel text, launch_unchecked".into(),
            micros(unchecked),
        ));

        let base = Settings {
            disk_cache: false,
            ..settings()
        };
        for compiler in [CompilerChoice::Nvrtc, CompilerChoice::Nvcc] {
            let s = Settings {
                compiler,
                ..base.clone()
            };
            if compile::Compiler::from_settings(&s).is_err() {
                rows.push((format!("cold compile {compiler:?}"), "not found".into()));
                continue;
            }
            let samples = if compiler == CompilerChoice::Nvrtc {
                9
            } else {
                5
            };
            let cold = time_median(samples, |i| {
                let source = format!("// cold {i} {compiler:?}\n{KERNEL}");
                compile_with(&s, &source, "noop", None).map(drop)
            })?;
            rows.push((
                format!("cold compile {compiler:?} (CUDA_CACHE_DISABLE=1)"),
                micros(cold),
            ));
        }

        let s = Settings {
            disk_cache: true,
            ..settings()
        };
        let source = format!("// cached\n{KERNEL}");
        let image = compile_with(&s, &source, "noop", None)?;
        rows.push(("default image kind".into(), format!("{:?}", image.kind)));
        let memory_hit = time_median(1001, |_| compile_with(&s, &source, "noop", None).map(drop))?;
        rows.push((
            format!("cache hit, memory ({} B source)", source.len()),
            micros(memory_hit),
        ));
        // A source of the size generated modules have (a few KB).
        let large = format!(
            "{}{source}",
            "// padding to a few KB of source\n".repeat(128)
        );
        compile_with(&s, &large, "noop", None)?;
        let memory_hit = time_median(1001, |_| compile_with(&s, &large, "noop", None).map(drop))?;
        rows.push((
            format!("cache hit, memory ({} B source)", large.len()),
            micros(memory_hit),
        ));
        let disk_hit = time_median(51, |_| {
            cache::clear_memory();
            compile_with(&s, &source, "noop", None).map(drop)
        })?;
        rows.push(("cache hit, disk (read + checksum)".into(), micros(disk_hit)));
        let ptx = compile_with(&s, &source, "noop", Some(ImageKind::Ptx))?;
        let load = time_median(21, |_| Module::load(&ptx.bytes, ImageKind::Ptx).map(drop))?;
        rows.push((
            "module load of a PTX image (driver JIT)".into(),
            micros(load),
        ));
        let cubin = compile_with(&s, &source, "noop", Some(ImageKind::Cubin))?;
        let load = time_median(21, |_| {
            Module::load(&cubin.bytes, ImageKind::Cubin).map(drop)
        })?;
        rows.push(("module load of a cubin".into(), micros(load)));
        let end_to_end = time_median(21, |_| Program::from_cuda_c(&source, "noop").map(drop))?;
        rows.push((
            "Program::from_cuda_c, warm cache, default (compile+load)".into(),
            micros(end_to_end),
        ));
        let first = first_program_in_a_process(&cache_dir, 7);
        rows.push((
            "first Program in a process, disk-cache hit (child processes)".into(),
            first.map_or_else(|| "failed".into(), micros),
        ));
        update_settings(|s| s.image = ImageChoice::Ptx);
        Program::from_cuda_c(&source, "noop")?;
        let end_to_end = time_median(21, |_| Program::from_cuda_c(&source, "noop").map(drop))?;
        rows.push((
            "Program::from_cuda_c, warm cache, CHORUS_IMAGE=ptx".into(),
            micros(end_to_end),
        ));
        Ok(())
    })?;
    let _ = cache::clear();
    let _ = std::fs::remove_dir(&cache_dir);
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    println!("{:width$}  {:>13}", "measure", "median");
    for (what, value) in rows {
        println!("{what:width$}  {value:>13}");
    }
    Ok(())
}
