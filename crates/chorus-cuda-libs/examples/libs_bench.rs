//! The benchmark: each library call through Chorus against the same call made from CUDA C
//! (`benches/baselines/libs.cu`), in one run on one device, with identical data (both sides draw
//! their inputs from the same integer hash) and the same method: a created stream, 3 warm-up
//! batches, then the median over 15 event-timed batches; every result checked on samples against
//! a float64 host reference. Every working set exceeds the 50 MiB L2, so buffers are not rotated.
//! Host overhead of a 64³ SGEMM: the median over bursts of 64 calls of the time to issue them.
//!
//! The C side is compiled here with the nvcc that Chorus itself uses (`chorus_cuda::find_nvcc`:
//! `$CHORUS_NVCC`, else `PATH` and the CUDA toolkit roots) and run twice, before and after the Chorus
//! measurements, so that its own spread shows. Ratios: speed = C time / Chorus time (the issue asks
//! ≥ 0.98), host = Chorus time / C time (≤ 1.1). Exits 1 when a check fails on either side.
//! `CHORUS_LIBS_BASELINE=EXE` takes a baseline built from the same file elsewhere instead of
//! compiling it; each baseline run is stopped after `CHORUS_LIBS_BASELINE_LIMIT_S` seconds (60).
//! Progress goes to stderr with the seconds since the start.
//!
//! Run on the GPU machine as a release build: `cargo run --release -p chorus-cuda-libs --example
//! libs_bench` (nothing here is a test).

#![allow(clippy::too_many_arguments)]

use chorus_cuda_libs::cublas::{Blas, MathMode};
use chorus_cuda_libs::cublaslt::{BlasLt, Fp8Scales, Matmul};
use chorus_cuda_libs::cufft::{Direction, FftKind, Plan, PlanShape, Precision};
use chorus_cuda_libs::cusparse::{Sparse, SparseMatrix};
use chorus_cuda_libs::{AsDeviceSlice, C32, Fp8E4M3, Transpose};
use chorus_driver::{Context, Event, MemoryBlock, Stream};
use half::bf16;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

type Failure = Box<dyn std::error::Error>;

const WARMUP: usize = 3;
const REPS: usize = 15;

/// The inputs' hash, the same function as `uniform` in `benches/baselines/libs.cu`: element `i`
/// of stream `seed`, uniform in `[lo, hi)`.
fn uniform(i: usize, seed: u32, lo: f32, hi: f32) -> f32 {
    let mut h = (i as u32).wrapping_mul(2_654_435_761) ^ seed;
    h ^= h >> 16;
    h = h.wrapping_mul(0x7feb_352d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x846c_a68b);
    h ^= h >> 16;
    lo + (hi - lo) * (h >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// Milliseconds per call of `f` on `stream`: `WARMUP` batches of `batch` calls, then the median
/// over `REPS` event-timed batches, divided by `batch`.
fn time_ms(
    stream: &Stream,
    batch: usize,
    mut f: impl FnMut() -> Result<(), Failure>,
) -> Result<f64, Failure> {
    for _ in 0..WARMUP * batch {
        f()?;
    }
    stream.synchronize()?;
    let (start, stop) = (Event::new()?, Event::new()?);
    let mut t = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        start.record(stream)?;
        for _ in 0..batch {
            f()?;
        }
        stop.record(stream)?;
        stop.synchronize()?;
        t.push(stop.elapsed_ms_since(&start)? as f64);
    }
    Ok(median(t) / batch as f64)
}

/// Microseconds of host time per call: 200 bursts of 64 calls (the first 10 dropped), each
/// burst's issue time measured and the stream drained after it; the median.
fn host_us(stream: &Stream, mut f: impl FnMut() -> Result<(), Failure>) -> Result<f64, Failure> {
    let mut per = Vec::new();
    for r in 0..200 {
        let t0 = std::time::Instant::now();
        for _ in 0..64 {
            f()?;
        }
        let elapsed = t0.elapsed();
        stream.synchronize()?;
        if r >= 10 {
            per.push(elapsed.as_secs_f64() * 1e6 / 64.0);
        }
    }
    Ok(median(per))
}

fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// A block of `n` elements `value(i)`, on the device.
fn filled<T: bytemuck::Pod>(
    n: usize,
    value: impl Fn(usize) -> T,
) -> Result<MemoryBlock<T>, Failure> {
    let mut block = MemoryBlock::<T>::alloc(n)?;
    for (i, v) in block.as_mut_slice().iter_mut().enumerate() {
        *v = value(i);
    }
    block.sync(chorus_driver::Direction::HostToDevice)?;
    Ok(block)
}

/// The device copy of `block`, read back after `stream` finishes.
fn download<T: bytemuck::Pod>(
    stream: &Stream,
    block: &mut MemoryBlock<T>,
) -> Result<Vec<T>, Failure> {
    stream.synchronize()?;
    block.sync(chorus_driver::Direction::DeviceToHost)?;
    Ok(block.as_slice().to_vec())
}

/// An element type the GEMM checks read as float64.
trait Wide: Copy {
    fn wide(self) -> f64;
}

impl Wide for f32 {
    fn wide(self) -> f64 {
        self.into()
    }
}

impl Wide for bf16 {
    fn wide(self) -> f64 {
        self.to_f64()
    }
}

impl Wide for Fp8E4M3 {
    fn wide(self) -> f64 {
        self.to_f32().into()
    }
}

/// Column-major `C (m×n) = op(A)·B` checked at 64 places against float64, as libs.cu's `gemm_ok`:
/// `|c − ref| ≤ tol·Σ|a·b|`. `A` is `m×k` (lda `m`) or, with `at`, `k×m` (lda `k`); `B` `k×n`.
/// Only the sampled rows and columns are widened: at 8192² a widened copy of every operand took
/// most of the benchmark's wall time.
fn gemm_ok(
    a: &[impl Wide],
    b: &[impl Wide],
    c: &[impl Wide],
    m: usize,
    n: usize,
    k: usize,
    at: bool,
    tol: f64,
) -> bool {
    (0..64).all(|s| {
        let (i, j) = ((s * 7919) % m, (s * 104_729) % n);
        let (mut want, mut mag) = (0.0, 0.0);
        for kk in 0..k {
            let x = if at { a[i * k + kk] } else { a[kk * m + i] }.wide() * b[j * k + kk].wide();
            want += x;
            mag += x.abs();
        }
        (c[j * m + i].wide() - want).abs() <= tol * mag + 1e-6
    })
}

/// One measured case: its name (the C row's), Chorus's time and its check.
struct Case {
    name: String,
    ms: f64,
    ok: bool,
}

fn gemms(stream: &Stream, n: usize, cases: &mut Vec<Case>) -> Result<(), Failure> {
    let mut blas = Blas::new(stream)?;
    blas.set_math_mode(MathMode::Default)?;
    let no = Transpose::No;

    let a = filled(n * n, |i| uniform(i, 1, -1.0, 1.0))?;
    let b = filled(n * n, |i| uniform(i, 2, -1.0, 1.0))?;
    let mut c = MemoryBlock::<f32>::alloc(n * n)?;
    let ms = time_ms(stream, 1, || {
        Ok(blas.gemm(no, no, n, n, n, 1.0f32, &a, n, &b, n, 0.0, &mut c, n)?)
    })?;
    let hc = download(stream, &mut c)?;
    let ok = gemm_ok(a.as_slice(), b.as_slice(), &hc, n, n, n, false, 2e-5);
    cases.push(Case {
        name: format!("sgemm-fp32-{n}"),
        ms,
        ok,
    });
    drop((a, b, c));

    let a = filled(n * n, |i| bf16::from_f32(uniform(i, 3, -1.0, 1.0)))?;
    let b = filled(n * n, |i| bf16::from_f32(uniform(i, 4, -1.0, 1.0)))?;
    let mut c = MemoryBlock::<bf16>::alloc(n * n)?;
    let ms = time_ms(stream, 2, || {
        Ok(blas.gemm_ex(no, no, n, n, n, 1.0, &a, n, &b, n, 0.0, &mut c, n)?)
    })?;
    let hc = download(stream, &mut c)?;
    let ok = gemm_ok(a.as_slice(), b.as_slice(), &hc, n, n, n, false, 1e-2);
    cases.push(Case {
        name: format!("gemm-bf16-{n}"),
        ms,
        ok,
    });
    drop((a, b, c));

    let m = 64;
    let a = filled(m * m, |i| uniform(i, 9, -1.0, 1.0))?;
    let b = filled(m * m, |i| uniform(i, 10, -1.0, 1.0))?;
    let mut c = MemoryBlock::<f32>::alloc(m * m)?;
    let us = host_us(stream, || {
        Ok(blas.gemm(no, no, m, m, m, 1.0f32, &a, m, &b, m, 0.0, &mut c, m)?)
    })?;
    let hc = download(stream, &mut c)?;
    let ok = gemm_ok(a.as_slice(), b.as_slice(), &hc, m, m, m, false, 1e-5);
    cases.push(Case {
        name: "sgemm-64-host".into(),
        ms: us / 1e3,
        ok,
    });
    Ok(())
}

fn fp8(stream: &Stream, n: usize, cases: &mut Vec<Case>) -> Result<(), Failure> {
    let lt = BlasLt::new(stream)?;
    let a = filled(n * n, |i| Fp8E4M3::from_f32(uniform(i, 5, -1.0, 1.0)))?;
    let b = filled(n * n, |i| Fp8E4M3::from_f32(uniform(i, 6, -1.0, 1.0)))?;
    let mut d = MemoryBlock::<bf16>::alloc(n * n)?;
    let (sa, sb) = (filled(1, |_| 1.0f32)?, filled(1, |_| 1.0f32)?);
    let scales = Fp8Scales {
        a: sa.as_device_slice()?,
        b: sb.as_device_slice()?,
    };
    let shape = Matmul::new(Transpose::Yes, Transpose::No, n, n, n);
    let ms = time_ms(stream, 4, || {
        Ok(lt.matmul(&shape, 1.0, &a, &b, 0.0, &mut d, None, Some(scales))?)
    })?;
    for (_, algorithm) in lt.algorithms()? {
        // Beside the C baseline's line: the same call should get the same algorithm.
        eprintln!("# libs_bench: FP8 {algorithm}");
    }
    let hd = download(stream, &mut d)?;
    let ok = gemm_ok(a.as_slice(), b.as_slice(), &hd, n, n, n, true, 1e-2);
    cases.push(Case {
        name: format!("lt-fp8-e4m3-{n}"),
        ms,
        ok,
    });
    Ok(())
}

fn fft(stream: &Stream, log2: u32, cases: &mut Vec<Case>) -> Result<(), Failure> {
    let n = 1usize << log2;
    let x = filled(n, |i| {
        C32::new(
            uniform(2 * i, 11, -1.0, 1.0),
            uniform(2 * i + 1, 11, -1.0, 1.0),
        )
    })?;
    let mut y = MemoryBlock::<C32>::alloc(n)?;
    let mut plan = Plan::new(
        PlanShape::new(&[n], FftKind::C2C, Precision::Single, 1),
        stream,
    )?;
    let ms = time_ms(stream, 10, || {
        Ok(plan.c2c(&x, &mut y, Direction::Forward)?)
    })?;
    let hy = download(stream, &mut y)?;
    // Three bins against a float64 DFT, as libs.cu: |Y_k − ref| ≤ 1e-5·Σ|x|; the twiddle factor
    // turns by one step per term and is recomputed exactly every 4096 terms.
    let hx = x.as_slice();
    let mag: f64 = hx.iter().map(|v| (v.re as f64).hypot(v.im as f64)).sum();
    let angle = |i: usize, k: usize| -2.0 * std::f64::consts::PI * ((i * k) % n) as f64 / n as f64;
    let ok = [0usize, 1, 4099].iter().all(|&k| {
        let (si, sr) = angle(1, k).sin_cos();
        let (mut re, mut im, mut wr, mut wi) = (0.0f64, 0.0f64, 1.0f64, 0.0f64);
        for (i, v) in hx.iter().enumerate() {
            if i % 4096 == 0 {
                (wi, wr) = angle(i, k).sin_cos();
            }
            let (xr, xi) = (v.re as f64, v.im as f64);
            re += xr * wr - xi * wi;
            im += xr * wi + xi * wr;
            (wr, wi) = (wr * sr - wi * si, wr * si + wi * sr);
        }
        (hy[k].re as f64 - re).hypot(hy[k].im as f64 - im) <= 1e-5 * mag
    });
    cases.push(Case {
        name: format!("fft-c2c-f32-2^{log2}"),
        ms,
        ok,
    });
    Ok(())
}

fn spmv(stream: &Stream, side: usize, cases: &mut Vec<Case>) -> Result<(), Failure> {
    // The 5-point Laplacian pattern of a side × side grid, hashed values (as libs.cu).
    let rows = side * side;
    let (mut offsets, mut cols) = (vec![0i32], Vec::with_capacity(5 * rows));
    for r in 0..rows {
        let (i, j) = (r / side, r % side);
        for (present, c) in [
            (i > 0, r.wrapping_sub(side)),
            (j > 0, r.wrapping_sub(1)),
            (true, r),
            (j + 1 < side, r + 1),
            (i + 1 < side, r + side),
        ] {
            if present {
                cols.push(c as i32);
            }
        }
        offsets.push(cols.len() as i32);
    }
    let nnz = cols.len();
    let values = filled(nnz, |i| uniform(i, 12, -1.0, 1.0))?;
    let x = filled(rows, |i| uniform(i, 13, -1.0, 1.0))?;
    let (doff, dcol) = (filled(rows + 1, |i| offsets[i])?, filled(nnz, |i| cols[i])?);
    let mut y = MemoryBlock::<f32>::alloc(rows)?;
    let sparse = Sparse::new(stream)?;
    let a = SparseMatrix::csr(rows, rows, &doff, &dcol, &values)?;
    let ms = time_ms(stream, 10, || {
        Ok(sparse.spmv(Transpose::No, 1.0f32, &a, &x, 0.0, &mut y)?)
    })?;
    let hy = download(stream, &mut y)?;
    let (hv, hx) = (values.as_slice(), x.as_slice());
    let ok = (0..rows).all(|r| {
        let (mut want, mut mag) = (0.0f64, 0.0f64);
        for p in offsets[r] as usize..offsets[r + 1] as usize {
            let t = hv[p] as f64 * hx[cols[p] as usize] as f64;
            want += t;
            mag += t.abs();
        }
        (hy[r] as f64 - want).abs() <= 1e-5 * mag + 1e-7
    });
    cases.push(Case {
        name: format!("spmv-csr-f32-{nnz}nnz"),
        ms,
        ok,
    });
    Ok(())
}

/// The C baseline: `benches/baselines/libs.cu` compiled for `sm` (removed when dropped), or
/// the executable `$CHORUS_LIBS_BASELINE` names (built from it elsewhere, e.g. to save a short
/// lease nvcc's seconds).
enum Baseline {
    Built(chorus_cuda::testing::CProgram),
    Given(PathBuf),
}

impl Baseline {
    fn path(&self) -> &Path {
        match self {
            Baseline::Built(program) => program.path(),
            Baseline::Given(path) => path,
        }
    }
}

fn build_baseline(sm: String) -> Result<Baseline, Failure> {
    if let Some(exe) = std::env::var_os("CHORUS_LIBS_BASELINE") {
        return Ok(Baseline::Given(exe.into()));
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/baselines/libs.cu");
    let arch = format!("-arch=sm_{sm}");
    let options = [
        arch.as_str(),
        "-lcublas",
        "-lcublasLt",
        "-lcufft",
        "-lcusparse",
    ];
    Ok(Baseline::Built(chorus_cuda::testing::build_c_program(
        &src, &options,
    )?))
}

/// Runs the baseline (its progress on our stderr), killed after `limit`: its rows by name,
/// `(ms, ok)`.
fn run_baseline(
    exe: &Path,
    limit: std::time::Duration,
) -> Result<HashMap<String, (f64, bool)>, Failure> {
    let mut child = Command::new(exe)
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the C baseline ran past {limit:?} and was stopped").into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stdout = String::new();
    if let Some(mut pipe) = child.stdout.take() {
        std::io::Read::read_to_string(&mut pipe, &mut stdout)?;
    }
    if !status.success() {
        return Err(format!("the C baseline failed ({status})").into());
    }
    let mut rows = HashMap::new();
    for line in stdout.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f.first() == Some(&"baseline") && f.len() == 6 {
            rows.insert(f[1].to_string(), (f[2].parse::<f64>()?, f[5] == "ok"));
        }
    }
    Ok(rows)
}

fn run() -> Result<bool, Failure> {
    let ctx = Context::new(0)?;
    let (major, minor) = ctx.compute_capability()?;
    println!(
        "libs_bench: {} (compute capability {major}.{minor})",
        chorus_driver::device_name(0)?
    );
    // Progress on stderr with the seconds since the start, so that a cut run shows where it was.
    let start = std::time::Instant::now();
    let progress = |what: &str| {
        eprintln!(
            "# libs_bench: {what} at {:.1} s",
            start.elapsed().as_secs_f64()
        )
    };
    let limit = std::time::Duration::from_secs(
        std::env::var("CHORUS_LIBS_BASELINE_LIMIT_S")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(60),
    );
    let baseline = build_baseline(format!("{major}{minor}"))?;
    let exe = baseline.path();
    progress("C baseline ready");
    let before = run_baseline(exe, limit)?;
    progress("C baseline, first run, done");
    let stream = Stream::new()?;
    let mut cases = Vec::new();
    let n = 8192;
    gemms(&stream, n, &mut cases)?;
    progress("Chorus GEMMs done");
    if (major, minor) >= (8, 9) {
        fp8(&stream, n, &mut cases)?;
        progress("Chorus FP8 done");
    }
    fft(&stream, 24, &mut cases)?;
    progress("Chorus FFT done");
    spmv(&stream, 2048, &mut cases)?;
    progress("Chorus SpMV done");
    let after = run_baseline(exe, limit)?;
    progress("C baseline, second run, done");

    println!(
        "{:28} {:>12} {:>12} {:>12} {:>7}  checks (chorus, C, C)",
        "case", "chorus ms", "C ms (1st)", "C ms (2nd)", "ratio"
    );
    let mut all_ok = true;
    for case in &cases {
        let (Some(&(b1, ok1)), Some(&(b2, ok2))) = (before.get(&case.name), after.get(&case.name))
        else {
            println!("{:28} {:12.4}  (no C row of this name)", case.name, case.ms);
            all_ok = false;
            continue;
        };
        let c_ms = (b1 + b2) / 2.0;
        // GPU cases: speed ratio (C time / Chorus time, ≥ 0.98 asked); host case: time ratio.
        let (ratio, goal, met) = if case.name.ends_with("-host") {
            let r = case.ms / c_ms;
            (r, "host time ≤ 1.1×", r <= 1.1)
        } else {
            let r = c_ms / case.ms;
            (r, "speed ≥ 0.98×", r >= 0.98)
        };
        let mark = |ok: bool| if ok { "ok" } else { "FAIL" };
        println!(
            "{:28} {:12.4} {:12.4} {:12.4} {:7.3}  {} {} {}  {goal}: {}",
            case.name,
            case.ms,
            b1,
            b2,
            ratio,
            mark(case.ok),
            mark(ok1),
            mark(ok2),
            if met { "met" } else { "missed" }
        );
        all_ok &= case.ok && ok1 && ok2;
    }
    Ok(all_ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("libs_bench: a result check failed");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("libs_bench: {e}");
            ExitCode::FAILURE
        }
    }
}
