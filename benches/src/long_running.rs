//! Long-running use: many compile-and-launch cycles of distinct kernels, then many alloc/free
//! cycles, on several threads, with host memory (`VmRSS`, `RssAnon`, `VmHWM` of
//! `/proc/self/status`), device memory (`cuMemGetInfo`) and chorus-cuda's compile cache
//! ([`chorus::cuda::cache::stats`]) sampled as they go. Prints one table per phase and exits 1
//! when memory is not flat.
//!
//! ```text
//! cargo bench -p chorus-benches --bench long_running -- --cycles 100000 --threads 32 --processes 16
//! cargo bench -p chorus-benches --bench long_running -- --backend cpu --cycles 200 --threads 2
//! ```
//!
//! Threads of one process barely speed compiles up: on the H200 machine 16 threads of one
//! process ran 58 compile-and-launch cycles a second (a debug build), so 100 000 cycles would
//! take 29 minutes. So the `--threads` workers run by default in as many processes (each its
//! share of the cycles, its own CUDA context and its own memory verdict; `--processes P` puts
//! T/P threads in each of P: two threads a process let one launch and synchronise while the
//! other compiles); the parent prints each one's tables and fails when one does.
//! `--time-limit S` stops starting cycles of the compile phase after 85% of S seconds and of the
//! alloc phase after S, so that a run under a hard limit still ends with its tables (each says
//! how many cycles it did).
//!
//! Every compile cycle compiles a kernel no other cycle has (its constants differ, so NVRTC
//! compiles each: the disk cache is off unless `--disk-cache`), launches it on a small block,
//! reads the block back and checks it, then drops the program and the block. An alloc cycle
//! allocates a block of a size that varies between 4 bytes and 4 MiB, writes it, reads one
//! element back and frees it.
//!
//! The compile cache's memory level keeps what it is given for the life of the process (up to
//! its budget, 64 MiB by default: 16 000 of these small kernels), which a long run would see as
//! growth until it is full. So the bench gives it a small budget (`--memory-cache MIB`, 1 MiB:
//! about 250 kernels, full long before the warm-up ends) and judges the rest: its eviction runs
//! all the time, which is what a process compiling for ever does.
//!
//! Flat: after the first [`WARMUP_FRACTION`] of a phase's cycles (the cache filling, NVRTC and
//! the allocator reaching their working sets), the median of the phase's last three samples
//! exceeds the median of the first three after the warm-up by at most the cache's budget plus
//! [`HOST_MARGIN`] of anonymous host memory (`RssAnon`: the heap and the driver's allocations;
//! not the pages of NVRTC's and the driver's libraries read in from their files, which `VmRSS`
//! also counts and which are no leak), and by at most [`DEVICE_TOLERANCE`] of device memory.
//! With 16 processes of 6 250 cycles each, about 5 000 cycles a process are judged: a leak of
//! 2 KB a cycle (10 MB) fails there; the allocator's ups and downs do not.

use chorus::{Arg, Backend, Direction, Launch, MemoryBlock, Program};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// The share of each phase's cycles before the samples that judge flatness.
const WARMUP_FRACTION: f64 = 0.2;
/// How much anonymous host memory may grow after the warm-up beyond the compile cache's budget
/// (the allocator's and the driver's working sets moving; the 60 000-cycle run of 2026-12-01
/// grew 2–3 MiB beyond what its cache held).
const HOST_MARGIN: i64 = 8 << 20;
/// The memory level's budget the bench gives the compile cache, by default.
const MEMORY_CACHE: usize = 1 << 20;
/// How much device memory in use may grow after the warm-up.
const DEVICE_TOLERANCE: i64 = 48 << 20;

const USAGE: &str = "usage: long_running [--cycles N] [--allocs N] [--threads T] [--processes P] \
                     [--samples S] [--backend cuda|cpu] [--disk-cache] [--memory-cache MIB]
                     [--time-limit S]
  --cycles N    compile-and-launch cycles of distinct kernels (1000), in all
  --allocs N    alloc/free cycles (as many as --cycles), in all
  --threads T   cycles run in parallel, in all (the machine's cores)
  --processes P processes sharing them, each with T/P threads and its own CUDA context (T)
  --samples S   memory samples per phase (20)
  --backend B   cuda or cpu (Chorus's choice: CUDA where a device works)
  --disk-cache  leave the compile cache's disk level on (off: 100 000 entries otherwise)
  --memory-cache MIB  the compile cache's memory budget (1)
  --time-limit S  start no compile cycle after 0.85 S seconds, no alloc cycle after S";

/// The options.
struct Options {
    cycles: usize,
    allocs: usize,
    threads: usize,
    samples: usize,
    backend: Option<Backend>,
    disk_cache: bool,
    /// The compile cache's memory budget, in bytes.
    memory_cache: usize,
    /// Seconds after which no cycle starts (85% of it for the compile phase).
    time_limit: Option<f64>,
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
        memory_cache: MEMORY_CACHE,
        time_limit: None,
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
            "--memory-cache" => {
                let value = args.next().ok_or("--memory-cache needs a value")?;
                let mib: f64 = value
                    .parse()
                    .ok()
                    .filter(|m: &f64| m.is_finite() && *m >= 0.0)
                    .ok_or(format!("--memory-cache {value}: expected MiB, 0 or more"))?;
                options.memory_cache = (mib * f64::from(1u32 << 20)) as usize;
            }
            "--time-limit" => {
                let value = args.next().ok_or("--time-limit needs a value")?;
                let seconds: f64 = value
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or(format!("--time-limit {value}: expected seconds"))?;
                options.time_limit = Some(seconds);
            }
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
    host: HostMemory,
    /// Device memory in use (total less free), on CUDA.
    device_used: Option<i64>,
    cache: chorus::cuda::cache::Stats,
}

impl Sample {
    fn now(cycles: usize, seconds: f64, backend: Backend) -> Sample {
        Sample {
            cycles,
            seconds,
            host: host_memory(),
            device_used: device_used(backend),
            cache: chorus::cuda::cache::stats(),
        }
    }
}

/// This process's memory, in bytes, from `/proc/self/status`.
#[derive(Clone, Copy, Debug)]
struct HostMemory {
    /// `VmRSS`: resident, anonymous and file-backed.
    rss: i64,
    /// `RssAnon`: resident anonymous memory (heap, stacks, the driver's allocations).
    anon: i64,
    /// `VmHWM`: the peak of `VmRSS`.
    hwm: i64,
}

/// This process's memory now.
fn host_memory() -> HostMemory {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kib| kib.parse::<i64>().ok())
            .map_or(0, |kib| kib * 1024)
    };
    HostMemory {
        rss: field("VmRSS:"),
        anon: field("RssAnon:"),
        hwm: field("VmHWM:"),
    }
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
/// `count / samples` cycles (taken by the thread that finishes that cycle), starting none after
/// `deadline`. The last sample is taken when every thread has stopped.
fn run_phase(
    count: usize,
    threads: usize,
    samples: usize,
    backend: Backend,
    deadline: Option<Instant>,
    cycle: impl Fn(usize) -> Result<(), String> + Sync,
) -> Result<Vec<Sample>, String> {
    let every = count.div_ceil(samples).max(1);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let error = Mutex::new(None);
    let start = Instant::now();
    // Under a deadline also every `samples`th of the time to it, so that a phase the deadline
    // stops early still has its samples.
    let interval =
        deadline.map(|d| d.saturating_duration_since(start).as_secs_f64() / samples as f64);
    let last_sample = AtomicU64::new(0f64.to_bits());
    let taken = Mutex::new(vec![Sample::now(0, 0.0, backend)]);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                chorus::with_backend(backend, || {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= count
                            || failed.load(Ordering::Relaxed)
                            || deadline.is_some_and(|d| Instant::now() >= d)
                        {
                            return Ok::<(), chorus::Error>(());
                        }
                        if let Err(e) = cycle(i) {
                            failed.store(true, Ordering::Relaxed);
                            *error.lock().unwrap() = Some(format!("cycle {i}: {e}"));
                            return Ok(());
                        }
                        let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                        let seconds = start.elapsed().as_secs_f64();
                        let due = interval.is_some_and(|interval| {
                            let last = f64::from_bits(last_sample.load(Ordering::Relaxed));
                            seconds - last >= interval
                                && last_sample
                                    .compare_exchange(
                                        last.to_bits(),
                                        seconds.to_bits(),
                                        Ordering::Relaxed,
                                        Ordering::Relaxed,
                                    )
                                    .is_ok()
                        });
                        if (finished.is_multiple_of(every) || due) && finished < count {
                            let sample = Sample::now(finished, seconds, backend);
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
    let done = done.into_inner();
    samples.push(Sample::now(done, start.elapsed().as_secs_f64(), backend));
    samples.sort_by_key(|s| s.cycles);
    // A sample taken at the last cycle and the one after the threads stopped: keep the later.
    samples.dedup_by(|later, earlier| {
        let same = later.cycles == earlier.cycles;
        if same {
            *earlier = *later;
        }
        same
    });
    Ok(samples)
}

fn mib(bytes: i64) -> String {
    format!("{:.1}", bytes as f64 / f64::from(1u32 << 20))
}

/// Prints the samples and says whether memory stayed flat after the warm-up (`budget`: the
/// compile cache's memory budget, which the cache may still be filling).
fn judge(phase: &str, samples: &[Sample], budget: usize) -> bool {
    let count = samples.last().map_or(0, |s| s.cycles);
    println!("\n{phase}: {count} cycles");
    println!(
        "| cycles | seconds | cycles/s since the last | compiler ms/cycle since the last | \
         host RSS MiB | anonymous MiB | host peak MiB | cache MiB (entries, evicted) | \
         device used MiB |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (s, before) in samples
        .iter()
        .zip(std::iter::once(&samples[0]).chain(samples))
    {
        let cycles = s.cycles.saturating_sub(before.cycles);
        let seconds = s.seconds - before.seconds;
        let per = |x: f64| if cycles > 0 { x / cycles as f64 } else { 0.0 };
        println!(
            "| {} | {:.1} | {:.0} | {:.1} | {} | {} | {} | {} ({}, {}) | {} |",
            s.cycles,
            s.seconds,
            if seconds > 0.0 {
                cycles as f64 / seconds
            } else {
                0.0
            },
            per((s.cache.compile_nanos - before.cache.compile_nanos) as f64 / 1e6),
            mib(s.host.rss),
            mib(s.host.anon),
            mib(s.host.hwm),
            mib(s.cache.memory_bytes as i64),
            s.cache.memory_entries,
            s.cache.evicted,
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
    let anon = growth(|s| Some(s.host.anon)).unwrap_or(0);
    let rss = growth(|s| Some(s.host.rss)).unwrap_or(0);
    let cache = growth(|s| Some(s.cache.memory_bytes as i64)).unwrap_or(0);
    let device = growth(|s| s.device_used);
    let host_tolerance = budget as i64 + HOST_MARGIN;
    let host_flat = anon <= host_tolerance;
    let device_flat = device.is_none_or(|d| d <= DEVICE_TOLERANCE);
    let full = first[0].cache.evicted > 0;
    let cache = if budget > 0 {
        format!(
            "; the compile cache {} MiB, {}; tolerance: its budget {} + {} MiB",
            mib(cache),
            if full {
                "full and evicting"
            } else {
                "not yet full"
            },
            mib(budget as i64),
            mib(HOST_MARGIN)
        )
    } else {
        format!("; tolerance {} MiB", mib(HOST_MARGIN))
    };
    println!(
        "{phase}: after the warm-up (cycle {}) anonymous host memory grew {} MiB (VmRSS {} MiB\
         {cache}), device memory {} (tolerance {} MiB): {}",
        first[0].cycles,
        mib(anon),
        mib(rss),
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
    chorus::cuda::cache::set_memory_budget(options.memory_cache);
    let start = Instant::now();
    let deadline = |share: f64| {
        options
            .time_limit
            .map(|limit| start + std::time::Duration::from_secs_f64(limit * share))
    };
    let first = options.first_kernel;
    let compiles = run_phase(
        options.cycles,
        options.threads,
        options.samples,
        backend,
        deadline(0.85),
        |i| compile_cycle(first + i),
    )?;
    let compiles_flat = judge("compile-and-launch", &compiles, options.memory_cache);
    let compiled = compiles.last().map_or(0, |s| s.cycles);
    if let Some(last) = compiles.last().filter(|s| s.seconds > 0.0 && s.cycles > 0) {
        println!(
            "compile-and-launch: {:.2} ms per cycle per thread, {:.2} ms of it in the compiler; \
             100 000 cycles would take {:.0} s on {} threads of this process",
            last.seconds * 1e3 * options.threads as f64 / last.cycles as f64,
            (last.cache.compile_nanos - compiles[0].cache.compile_nanos) as f64
                / 1e6
                / last.cycles as f64,
            last.seconds * 100_000.0 / last.cycles as f64,
            options.threads
        );
    }
    if compiled < options.cycles {
        println!(
            "compile-and-launch: stopped by the time limit after {compiled} of {} cycles",
            options.cycles
        );
    }
    let allocs = run_phase(
        options.allocs,
        options.threads,
        options.samples,
        backend,
        deadline(1.0),
        alloc_cycle,
    )?;
    // No compiles in this phase: the cache holds still, and gets no share of the tolerance.
    let allocs_flat = judge("alloc/free", &allocs, 0);
    let allocated = allocs.last().map_or(0, |s| s.cycles);
    if allocated < options.allocs {
        println!(
            "alloc/free: stopped by the time limit after {allocated} of {} cycles",
            options.allocs
        );
    }
    // Read by the parent of a `--processes` run.
    println!("{DONE} {compiled} {allocated}");
    Ok(compiles_flat && allocs_flat)
}

/// The line that ends a run's output: the cycles it did of each phase.
const DONE: &str = "long_running-done:";

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
    let (mut compiled, mut allocated) = (0, 0);
    for (k, child) in children.into_iter().enumerate() {
        let output = child
            .wait_with_output()
            .map_err(|e| format!("waiting for process {k}: {e}"))?;
        println!("\n=== process {k} of {p}: {}", output.status);
        let stdout = String::from_utf8_lossy(&output.stdout);
        print!("{stdout}");
        eprint!("{}", String::from_utf8_lossy(&output.stderr));
        all_flat &= output.status.success();
        let done = stdout.lines().find_map(|l| l.strip_prefix(DONE));
        let mut counts = done.into_iter().flat_map(str::split_whitespace);
        let mut next = || {
            counts
                .next()
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0)
        };
        compiled += next();
        allocated += next();
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "\n{p} processes: {compiled} of {} compile-and-launch and {allocated} of {} alloc/free \
         cycles in {seconds:.1} s",
        options.cycles, options.allocs,
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
