//! The cuDNN benchmark of issue 11: a ResNet-style 3×3 convolution (N=32, C=K=256, 56×56,
//! padding 1, NHWC, f16 and bf16, f32 accumulation) through Chorus's `Dnn::conv_forward`
//! against the same `cudnnConvolutionForward` made by a C program (benches/baselines/
//! cudnn_conv.cu, compiled here with `nvcc … -lcudnn`) and by cudarc's raw binding in this
//! process, with the same algorithm, math type and data (the Chorus handle asks cuDNN for the
//! workspace size on its first call only, as the C program does). GPU time from events over repeated
//! calls on one stream; two alternating rounds, the best of each side. Verifies 256 sampled
//! outputs against f64 on the host. The issue asks for a speed ratio ≥ 0.98.
//!
//! Stage and run on the GPU machine (`--bin cudnn_bench`; a release build, not a test).
//! The C baseline is compiled with the nvcc that Chorus itself uses (`chorus_cuda::find_nvcc`:
//! `CHORUS_NVCC`, else `PATH` and the CUDA toolkit roots).

use chorus_cuda_libs::AsDeviceSlice;
use chorus_cuda_libs::cudnn::{
    Conv2d, ConvAlgo, ConvDesc, Dnn, DnnType, FilterDesc, Layout, MathType, Search, TensorDesc,
};
use chorus_driver::{Context, Event, MemoryBlock, Stream};
use cudarc::cudnn::sys as dnn_sys;
use half::{bf16, f16};
use std::path::Path;
use std::process::{Command, ExitCode};

type Failure = Box<dyn std::error::Error>;

const REPS: usize = 50;
const ROUNDS: usize = 2;
const DIMS: (usize, usize, usize, usize, usize) = (32, 256, 256, 56, 56); // N, C, K, H, W

/// The fill the C program uses too: `((i·13 + seed) mod 31 − 15) / 16`, exact in f16 and bf16.
fn value(i: usize, seed: usize) -> f32 {
    (((i * 13 + seed) % 31) as f32 - 15.0) * 0.0625
}

/// Milliseconds per call of `f` on `stream`: 3 warm-up calls, then `reps` between two events.
fn gpu_ms(
    stream: &Stream,
    reps: usize,
    mut f: impl FnMut() -> Result<(), Failure>,
) -> Result<f64, Failure> {
    for _ in 0..3 {
        f()?;
    }
    let (start, stop) = (Event::new()?, Event::new()?);
    start.record(stream)?;
    for _ in 0..reps {
        f()?;
    }
    stop.record(stream)?;
    stop.synchronize()?;
    Ok(stop.elapsed_ms_since(&start)? as f64 / reps as f64)
}

fn math_number(m: MathType) -> u32 {
    match m {
        MathType::Default => 0,
        MathType::TensorOp => 1,
        MathType::TensorOpAllowConversion => 2,
        MathType::Fma => 3,
    }
}

/// The C baseline, compiled (removed when dropped).
fn build_baseline() -> Result<chorus_cuda::testing::CProgram, Failure> {
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/baselines/cudnn_conv.cu");
    Ok(chorus_cuda::testing::build_c_program(
        &source,
        &["-lcudnn"],
    )?)
}

/// The C program's time for `dtype` with `algo` and `math` (ms per call).
fn baseline_ms(exe: &Path, dtype: &str, algo: u32, math: u32) -> Result<f64, Failure> {
    let (n, c, k, h, w) = DIMS;
    let out = Command::new(exe)
        .args([
            dtype.to_owned(),
            algo.to_string(),
            math.to_string(),
            REPS.to_string(),
            n.to_string(),
            c.to_string(),
            k.to_string(),
            h.to_string(),
            w.to_string(),
        ])
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "the C baseline failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    // "algo A math M ms T"
    let fields: Vec<&str> = text.split_whitespace().collect();
    let at = |key: &str| -> Result<&str, Failure> {
        let i = fields
            .iter()
            .position(|f| *f == key)
            .ok_or_else(|| format!("no `{key}` in the baseline's output: {text}"))?;
        Ok(fields.get(i + 1).copied().unwrap_or(""))
    };
    if at("algo")?.parse::<u32>()? != algo || at("math")?.parse::<u32>()? != math {
        return Err(format!("the baseline ran another algorithm: {text}").into());
    }
    Ok(at("ms")?.parse()?)
}

trait Half: DnnType<Scale = f32> {
    fn from_f32(x: f32) -> Self;
    fn to_f64(self) -> f64;
    const TOL: f64;
}
impl Half for f16 {
    fn from_f32(x: f32) -> f16 {
        f16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    const TOL: f64 = 4e-3;
}
impl Half for bf16 {
    fn from_f32(x: f32) -> bf16 {
        bf16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    const TOL: f64 = 1.6e-2;
}

fn filled<T: bytemuck::Pod>(n: usize, f: impl Fn(usize) -> T) -> Result<MemoryBlock<T>, Failure> {
    let mut block = MemoryBlock::<T>::alloc(n)?;
    for (i, v) in block.as_mut_slice().iter_mut().enumerate() {
        *v = f(i);
    }
    block.sync(chorus_driver::Direction::HostToDevice)?;
    Ok(block)
}

/// One precision: returns false when verification fails.
fn case<T: Half>(stream: &Stream, baseline: Option<&Path>) -> Result<bool, Failure> {
    let (n, c, k, h, w) = DIMS;
    let dnn = Dnn::new(stream)?;
    let x_desc = TensorDesc::<T>::new(Layout::Nhwc, n, c, h, w)?;
    let w_desc = FilterDesc::<T>::new(Layout::Nhwc, k, c, 3, 3)?;
    let mut conv = ConvDesc::<T>::new(Conv2d::padded(1))?;
    let y_desc = TensorDesc::<T>::new(Layout::Nhwc, n, k, h, w)?;
    let x = filled(x_desc.len(), |i| T::from_f32(value(i, 3)))?;
    let wt = filled(w_desc.len(), |i| T::from_f32(value(i, 7)))?;
    let mut y = MemoryBlock::<T>::alloc(y_desc.len())?;
    let found = dnn.conv_forward_algos(&x_desc, &w_desc, &conv, &y_desc, Search::Exhaustive)?;
    let best = *found.first().ok_or("cuDNN found no algorithm")?;
    conv.set_math(best.math)?;
    println!(
        "{}: cuDNN's exhaustive search: {}",
        T::NAME,
        found
            .iter()
            .map(|p| format!("{:?}/{:?} {:.3} ms", p.algo, p.math, p.time_ms))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let chorus = |y: &mut MemoryBlock<T>| -> Result<(), Failure> {
        Ok(dnn.conv_forward(
            1.0, &x_desc, &x, &w_desc, &wt, &conv, best.algo, 0.0, &y_desc, y,
        )?)
    };
    // The raw binding in-process: the C call with nothing on top (workspace sized once).
    let ws_bytes = dnn.conv_forward_workspace(&x_desc, &w_desc, &conv, &y_desc, best.algo)?;
    let ws = chorus_driver::DeviceMemory::alloc(ws_bytes.max(1))?;
    // SAFETY: the discriminant comes from the bindings' own enum (ConvAlgo::to_raw).
    let raw_algo: dnn_sys::cudnnConvolutionFwdAlgo_t =
        unsafe { std::mem::transmute(best.algo.to_raw()) };
    let (px, pw, py) = (
        x.as_device_slice()?.ptr(),
        wt.as_device_slice()?.ptr(),
        y.device_ptr(),
    );
    let (alpha, beta) = (1.0f32, 0.0f32);
    let direct = || -> Result<(), Failure> {
        // SAFETY: the handle, descriptors and buffers are live and match (checked by the Chorus
        // call above on the same descriptors); the workspace has the size cuDNN asked for.
        let s = unsafe {
            dnn_sys::cudnnConvolutionForward(
                dnn.raw(),
                (&alpha as *const f32).cast(),
                x_desc.raw(),
                px as *const std::ffi::c_void,
                w_desc.raw(),
                pw as *const std::ffi::c_void,
                conv.raw(),
                raw_algo,
                ws.ptr() as *mut std::ffi::c_void,
                ws.len(),
                (&beta as *const f32).cast(),
                y_desc.raw(),
                py as *mut std::ffi::c_void,
            )
        };
        if s != dnn_sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS {
            return Err(format!("cudnnConvolutionForward: {s:?}").into());
        }
        Ok(())
    };
    let (mut best_chorus, mut best_raw, mut best_c) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
    for _ in 0..ROUNDS {
        best_chorus = best_chorus.min(gpu_ms(stream, REPS, || chorus(&mut y))?);
        best_raw = best_raw.min(gpu_ms(stream, REPS, direct)?);
        if let Some(exe) = baseline {
            best_c = best_c.min(baseline_ms(
                exe,
                T::NAME,
                best.algo.to_raw(),
                math_number(best.math),
            )?);
        }
    }
    // Verify: the last call left conv(x, w) in y.
    chorus(&mut y)?;
    stream.synchronize()?;
    y.sync(chorus_driver::Direction::DeviceToHost)?;
    let xs: Vec<f64> = (0..x_desc.len())
        .map(|i| T::from_f32(value(i, 3)).to_f64())
        .collect();
    let ws_: Vec<f64> = (0..w_desc.len())
        .map(|i| T::from_f32(value(i, 7)).to_f64())
        .collect();
    let (mut worst, mut scale) = (0.0f64, 1e-30f64);
    let mut pairs = Vec::new();
    for s in 0..256usize {
        let (nn, kk, p, q) = ((s * 7) % n, (s * 37) % k, (s * 11) % h, (s * 29) % w);
        let mut sum = 0.0;
        for cc in 0..c {
            for r in 0..3 {
                for t in 0..3 {
                    let (hh, ww) = (p as isize + r as isize - 1, q as isize + t as isize - 1);
                    if hh < 0 || ww < 0 || hh >= h as isize || ww >= w as isize {
                        continue;
                    }
                    let xi = x_desc.offset([nn, cc, hh as usize, ww as usize]);
                    sum += xs[xi] * ws_[w_desc.offset([kk, cc, r, t])];
                }
            }
        }
        let got = y.as_slice()[y_desc.offset([nn, kk, p, q])].to_f64();
        scale = scale.max(sum.abs());
        pairs.push((got, sum));
    }
    for (got, want) in pairs {
        worst = worst.max((got - want).abs() / scale);
    }
    let flops = 2.0 * (n * k * h * w * c * 9) as f64;
    let tflops = |ms: f64| flops / (ms * 1e-3) / 1e12;
    println!(
        "{} 3×3 conv N={n} C={c} K={k} {h}×{w} NHWC, algo {:?} math {:?}, workspace {} bytes",
        T::NAME,
        best.algo,
        best.math,
        ws_bytes
    );
    println!(
        "  chorus {best_chorus:.4} ms ({:.1} TFLOP/s)   raw binding {best_raw:.4} ms ({:.1} TFLOP/s)   speed ratio vs raw {:.3}",
        tflops(best_chorus),
        tflops(best_raw),
        best_raw / best_chorus
    );
    if baseline.is_some() {
        let ratio = best_c / best_chorus;
        println!(
            "  C (nvcc -lcudnn) {best_c:.4} ms ({:.1} TFLOP/s)   speed ratio Chorus vs C {ratio:.3} ({})",
            tflops(best_c),
            if ratio >= 0.98 {
                "meets ≥ 0.98"
            } else {
                "BELOW 0.98"
            }
        );
    }
    println!(
        "  largest error of 256 sampled outputs against f64: {worst:.2e} (tolerance {:.1e})",
        T::TOL
    );
    Ok(worst <= T::TOL)
}

fn run() -> Result<bool, Failure> {
    let (maj, min, patch) = chorus_cuda_libs::cudnn::version()?;
    let _ctx = Context::new(0)?;
    println!("cudnn_bench: cuDNN {maj}.{min}.{patch}, device 0, {REPS} calls × {ROUNDS} rounds");
    let baseline = match build_baseline() {
        Ok(program) => Some(program),
        Err(e) => {
            println!("no C baseline: {e}");
            None
        }
    };
    let stream = Stream::new()?;
    let exe = baseline.as_ref().map(|program| program.path());
    let ok16 = case::<f16>(&stream, exe)?;
    let okb = case::<bf16>(&stream, exe)?;
    Ok(ok16 && okb && baseline.is_some())
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            println!("cudnn_bench: verification failed or no C baseline");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("cudnn_bench: {e}");
            ExitCode::FAILURE
        }
    }
}
