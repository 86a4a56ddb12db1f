//! Long-running use: many compile-and-launch cycles of distinct kernels, then many alloc/free
//! cycles, on several threads, with host memory (`VmRSS`, `VmHWM` of `/proc/self/status`) and
//! device memory (`cuMemGetInfo`) sampled as they go. Prints one table per phase and exits 1
//! when memory is not flat.
//!
//! ```text
//! cargo bench -p chorus-benches --bench long_running -- --cycles 100000 --threads 16
//! cargo bench -p chorus-benches --bench long_running -- --backend cpu --cycles 200 --threads 2
//! ```
//!
//! Threads of one process barely speed compiles up: on the H200 machine 16 threads of one
//! process ran 58 compile-and-launch cycles a second (a debug build), so 100 000 cycles would
//! take 29 minutes. So the `--threads` workers run by default in as many processes (each its
//! share of the cycles, its own CUDA context and its own memory verdict; `--processes P` puts
//! T/P threads in each of P); the parent prints each one's tables and fails when one does.
//!
//! Every compile cycle compiles a kernel no other cycle has (its constants differ, so NVRTC
//! compiles each: the disk cache is off unless `--disk-cache`), launches it on a small block,
//! reads the block back and checks it, then drops the program and the block. An alloc cycle
//! allocates a block of a size that varies between 4 bytes and 4 MiB, writes it, reads one
//! element back and frees it.
//!
//! Flat: after the first [`WARMUP_FRACTION`] of a phase's cycles (caches filling, NVRTC and the
//! allocator reaching their working sets), the median of the phase's last three samples exceeds
//! the median of the first three after the warm-up by at most [`HOST_TOLERANCE`] bytes of host
//! memory and [`DEVICE_TOLERANCE`] bytes of device memory. A leak of 700 bytes per cycle over
//! 80 000 cycles (56 MB) fails; the ups and downs of 16 threads' working sets do not.

use chorus::{Arg, Backend, Direction, Launch, MemoryBlock, Program};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

/// The share of each phase's cycles before the samples that judge flatness.
const WARMUP_FRACTION: f64 = 0.2;
/// How much host memory may grow after the warm-up.
const HOST_TOLERANCE: i64 = 48 << 20;
/// How much device memory in use may grow after the warm-up.
const DEVICE_TOLERANCE: i64 = 48 << 20;

const USAGE: &str = "usage: long_running [--cycles N] [--allocs N] [--threads T] [--processes P] \
                     [--samples S] [--backend cuda|cpu] [--disk-cache]
  --cycles N    compile-and-launch cycles of distinct kernels (1000), in all
  --allocs N    alloc/free cycles (as many as --cycles), in all
  --threads T   cycles run in parallel, in all (the machine's cores)
  --processes P processes sharing them, each with T/P threads and its own CUDA context (T)
  --samples S   memory samples per phase (20)
  --backend B   cuda or cpu (Chorus's choice: CUDA where a device works)
  --disk-cache  leave the compile cache's disk level on (off: 100 000 entries otherwise)";

/// The options.
struct Options {
    cycles: usize,
    allocs: usize,
    threads: usize,
    samples: usize,
    backend: Option<Backend>,
    disk_cache: bool,
    /// `None`: one per thread.
    processes: Option<usize>,
    /// This process is the `K`th child of a `--processes` run: its kernels' names start at
    /// `first_kernel` so that no two processes compile the same one.
    first_kernel: usize,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        cycles: 1000,
        allocs: usize::MAX,
        threads: std::thread::available_parallelism().map_or(4, |n| n.get()),
        samples: 20,
        backend: None,
        disk_cache: false,
        processes: None,
        first_kernel: 0,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            let value = args.next().ok_or(format!("{name} needs a value"))?;
            match value.parse() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!("{name} {value}: expected a positive number")),
            }
        };
        match arg.as_str() {
            "--cycles" => options.cycles = number("--cycles")?,
            "--allocs" => options.allocs = number("--allocs")?,
            "--threads" => options.threads = number("--threads")?,
            "--samples" => options.samples = number("--samples")?.max(4),
            "--processes" => options.processes = Some(number("--processes")?),
            "--first-kernel" => {
                let value = args.next().ok_or("--first-kernel needs a value")?;
                options.first_kernel = value
                    .parse()
                    .map_err(|_| format!("--first-kernel {value}: expected a number"))?;
            }
            "--disk-cache" => options.disk_cache = true,
            "--backend" => {
                let name = args.next().ok_or("--backend needs a value")?;
                options.backend = match Backend::from_name(name) {
                    Some(backend @ (Backend::Cuda | Backend::Cpu)) => Some(backend),
                    _ => return Err(format!("--backend {name}: expected cuda or cpu")),
                };
            }
            // `cargo bench` passes `--bench` to harness-less benchmarks.
            "--bench" => {}
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if options.allocs == usize::MAX {
        options.allocs = options.cycles;
    }
    Ok(options)
}

/// One sample of memory, after `cycles` cycles.
#[derive(Clone, Copy, Debug)]
struct Sample {
    cycles: usize,
    seconds: f64,
    rss: i64,
    hwm: i64,
    /// Device memory in use (total less free), on CUDA.
    device_used: Option<i64>,
}

/// `VmRSS` and `VmHWM` of this process, in bytes.
fn host_memory() -> (i64, i64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kib| kib.parse::<i64>().ok())
            .map_or(0, |kib| kib * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Device memory in use on the current CUDA context, if there is one.
fn device_used(backend: Backend) -> Option<i64> {
    if backend != Backend::Cuda {
        return None;
    }
    let (free, total) = chorus::cuda::memory_info().ok()?;
    Some(total as i64 - free as i64)
}

/// Runs `cycle(i)` for `i` in `0..count` on `threads` threads, sampling memory every
/// `count / samples` cycles (taken by the thread that finishes that cycle).
fn run_phase(
    count: usize,
    threads: usize,
    samples: usize,
    backend: Backend,
    cycle: impl Fn(usize) -> Result<(), String> + Sync,
) -> Result<Vec<Sample>, String> {
    let every = count.div_ceil(samples).max(1);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let error = Mutex::new(None);
    let start = Instant::now();
    let (rss, hwm) = host_memory();
    let taken = Mutex::new(vec![Sample {
        cycles: 0,
        seconds: 0.0,
        rss,
        hwm,
        device_used: device_used(backend),
    }]);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                chorus::with_backend(backend, || {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= count || failed.load(Ordering::Relaxed) {
                            return Ok::<(), chorus::Error>(());
                        }
                        if let Err(e) = cycle(i) {
                            failed.store(true, Ordering::Relaxed);
                            *error.lock().unwrap() = Some(format!("cycle {i}: {e}"));
                            return Ok(());
                        }
                        let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                        if finished.is_multiple_of(every) || finished == count {
                            let (rss, hwm) = host_memory();
                            let sample = Sample {
                                cycles: finished,
                                seconds: start.elapsed().as_secs_f64(),
                                rss,
                                hwm,
                                device_used: device_used(backend),
                            };
                            taken.lock().unwrap().push(sample);
                        }
                    }
                })
                .unwrap_or_else(|e| *error.lock().unwrap() = Some(e.to_string()));
            });
        }
    });
    if let Some(error) = error.into_inner().unwrap() {
        return Err(error);
    }
    let mut samples = taken.into_inner().unwrap();
    samples.sort_by_key(|s| s.cycles);
    Ok(samples)
}

fn mib(bytes: i64) -> String {
    format!("{:.1}", bytes as f64 / f64::from(1u32 << 20))
}

/// Prints the samples and says whether memory stayed flat after the warm-up.
fn judge(phase: &str, count: usize, samples: &[Sample]) -> bool {
    println!("\n{phase}: {count} cycles");
    println!("| cycles | seconds | cycles/s | host RSS MiB | host peak MiB | device used MiB |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for s in samples {
        println!(
            "| {} | {:.1} | {:.0} | {} | {} | {} |",
            s.cycles,
            s.seconds,
            if s.seconds > 0.0 {
                s.cycles as f64 / s.seconds
            } else {
                0.0
            },
            mib(s.rss),
            mib(s.hwm),
            s.device_used.map_or_else(|| "-".to_string(), mib)
        );
    }
    let after_warmup: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.cycles as f64 >= WARMUP_FRACTION * count as f64)
        .collect();
    if after_warmup.len() < 6 {
        println!(
            "{phase}: too few samples after the warm-up to judge ({})",
            after_warmup.len()
        );
        return true;
    }
    let median = |values: &mut Vec<i64>| {
        values.sort_unstable();
        values[values.len() / 2]
    };
    let first = &after_warmup[..3];
    let last = &after_warmup[after_warmup.len() - 3..];
    let growth = |field: fn(&Sample) -> Option<i64>| -> Option<i64> {
        let mut a: Vec<i64> = first.iter().filter_map(|s| field(s)).collect();
        let mut b: Vec<i64> = last.iter().filter_map(|s| field(s)).collect();
        (a.len() == 3 && b.len() == 3).then(|| median(&mut b) - median(&mut a))
    };
    let host = growth(|s| Some(s.rss)).unwrap_or(0);
    let device = growth(|s| s.device_used);
    let host_flat = host <= HOST_TOLERANCE;
    let device_flat = device.is_none_or(|d| d <= DEVICE_TOLERANCE);
    println!(
        "{phase}: after the warm-up host memory grew {} MiB (tolerance {}), device memory {} \
         (tolerance {} MiB): {}",
        mib(host),
        mib(HOST_TOLERANCE),
        device.map_or_else(|| "-".to_string(), |d| format!("{} MiB", mib(d))),
        mib(DEVICE_TOLERANCE),
        if host_flat && device_flat {
            "flat"
        } else {
            "NOT FLAT"
        }
    );
    host_flat && device_flat
}

/// A kernel no other cycle compiles: its constants are the cycle's.
fn kernel_text(i: usize) -> String {
    format!(
        "(defkernel cycle-{i} (void ((a int*) (n int)))
           (let ((k (+ (* block-dim-x block-idx-x) thread-idx-x)))
             (when (< k n)
               (set (aref a k) (+ (* k {m}) {i})))))",
        m = i % 7 + 2
    )
}

/// One compile-and-launch cycle.
fn compile_cycle(i: usize) -> Result<(), String> {
    compile_and_launch(i).map_err(|e| e.to_string())?
}

/// A compile-and-launch cycle: the error of Chorus, or the result's first wrong element.
fn compile_and_launch(i: usize) -> chorus::Result<Result<(), String>> {
    let program = Program::new(kernel_text(i), format!("cycle-{i}.lisp"))?;
    let n = 256;
    let mut a = MemoryBlock::<i32>::alloc(n)?;
    program.launch(
        &format!("cycle-{i}"),
        &[a.as_arg(), Arg::value(n as i32)],
        Launch::grid(1).block(n),
    )?;
    a.sync(Direction::DeviceToHost)?;
    let m = (i % 7 + 2) as i64;
    let wrong = (0..n).find(|&k| i64::from(a[k]) != (k as i64 * m + i as i64) as i32 as i64);
    Ok(match wrong {
        None => Ok(()),
        Some(k) => Err(format!("element {k} is {}", a[k])),
    })
}

/// One alloc/free cycle: 4 bytes to 4 MiB, written and one element read back.
fn alloc_cycle(i: usize) -> Result<(), String> {
    let len = 1usize << (i % 21);
    let copy = || -> chorus::Result<i32> {
        let mut block = MemoryBlock::<i32>::alloc(len)?;
        block[len - 1] = i as i32;
        block.sync(Direction::HostToDevice)?;
        block[len - 1] = 0;
        block.sync(Direction::DeviceToHost)?;
        Ok(block[len - 1])
    };
    match copy().map_err(|e| e.to_string())? {
        read if read == i as i32 => Ok(()),
        read => Err(format!("read back {read}, not {i}")),
    }
}

fn run(options: &Options) -> Result<bool, String> {
    if !options.disk_cache {
        // SAFETY: set before any thread starts and before Chorus reads its settings.
        unsafe { std::env::set_var("CHORUS_DISK_CACHE", "0") };
    }
    let backend = match options.backend {
        Some(backend) => backend,
        None => chorus::current_device()
            .map_err(|e| e.to_string())?
            .backend(),
    };
    let device =
        chorus::with_backend(backend, chorus::current_device).map_err(|e| e.to_string())?;
    println!(
        "long_running: {} compile-and-launch cycles, {} alloc/free cycles, {} threads, on {device}",
        options.cycles, options.allocs, options.threads
    );
    let first = options.first_kernel;
    let compiles = run_phase(
        options.cycles,
        options.threads,
        options.samples,
        backend,
        |i| compile_cycle(first + i),
    )?;
    let compiles_flat = judge("compile-and-launch", options.cycles, &compiles);
    if let Some(last) = compiles.last().filter(|s| s.seconds > 0.0) {
        println!(
            "compile-and-launch: {:.2} ms per cycle per thread; 100 000 cycles would take {:.0} s \
             on {} threads",
            last.seconds * 1e3 * options.threads as f64 / last.cycles as f64,
            last.seconds * 100_000.0 / last.cycles as f64,
            options.threads
        );
    }
    let allocs = run_phase(
        options.allocs,
        options.threads,
        options.samples,
        backend,
        alloc_cycle,
    )?;
    let allocs_flat = judge("alloc/free", options.allocs, &allocs);
    Ok(compiles_flat && allocs_flat)
}

/// Runs `options.processes` copies of this program, each with its share of the cycles, and
/// prints their output; whether all of them found memory flat.
fn run_processes(options: &Options, args: &[String]) -> Result<bool, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding this program: {e}"))?;
    let p = options.processes.unwrap_or(options.threads);
    let threads = options.threads.div_ceil(p);
    // Every option but the counts passes through; the counts are split.
    let mut passed = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--cycles" | "--allocs" | "--threads" | "--processes" | "--first-kernel" => {
                rest.next();
            }
            _ => passed.push(arg.clone()),
        }
    }
    let start = Instant::now();
    let children = (0..p)
        .map(|k| {
            let share = |n: usize| n / p + usize::from(k < n % p);
            let first = (0..k)
                .map(|j| options.cycles / p + usize::from(j < options.cycles % p))
                .sum::<usize>();
            std::process::Command::new(&exe)
                .args(&passed)
                .args(["--cycles", &share(options.cycles).max(1).to_string()])
                .args(["--allocs", &share(options.allocs).max(1).to_string()])
                .args(["--first-kernel", &first.to_string()])
                .args(["--threads", &threads.to_string(), "--processes", "1"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| format!("starting process {k}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut all_flat = true;
    for (k, child) in children.into_iter().enumerate() {
        let output = child
            .wait_with_output()
            .map_err(|e| format!("waiting for process {k}: {e}"))?;
        println!("\n=== process {k} of {p}: {}", output.status);
        print!("{}", String::from_utf8_lossy(&output.stdout));
        eprint!("{}", String::from_utf8_lossy(&output.stderr));
        all_flat &= output.status.success();
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "\n{p} processes: {} compile-and-launch and {} alloc/free cycles in {seconds:.1} s \
         (100 000 of each at this rate: {:.0} s)",
        options.cycles,
        options.allocs,
        seconds * 100_000.0 / options.cycles.max(options.allocs) as f64
    );
    Ok(all_flat)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let options = match parse(&args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("long_running: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = if options.processes.unwrap_or(options.threads) > 1 {
        run_processes(&options, &args)
    } else {
        run(&options)
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("long_running: memory was not flat");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("long_running: {error}");
            ExitCode::FAILURE
        }
    }
}
