//! FFT-based circular convolution against a direct one: cuFFT transforms the signal and the
//! (zero-padded) filter (R2C), a kernel multiplies the spectra and scales by 1/N, cuFFT
//! transforms back (C2R); a kernel of the kernel language computes the same convolution
//! directly. Both are checked against f64 on the host at sampled points. Prints both times.
//!
//! `cargo run --release --example cufft-convolution` (needs the CUDA backend and cuFFT).

use chorus::{Direction, Launch, MemoryBlock};
use chorus_cuda_libs::cufft::{FftKind, Plan, PlanShape, Precision};
use chorus_cuda_libs::{AsDeviceSliceMut, C32};
use chorus_examples::{Random, banner};
use std::process::ExitCode;

chorus::defkernel! {
    (defkernel multiply-spectra (void ((x float*) (h float*) (bins int) (scale float)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i bins)
            (let ((xr (aref x (* 2 i))) (xi (aref x (+ (* 2 i) 1)))
                  (hr (aref h (* 2 i))) (hi (aref h (+ (* 2 i) 1))))
              (set (aref x (* 2 i)) (* scale (- (* xr hr) (* xi hi))))
              (set (aref x (+ (* 2 i) 1)) (* scale (+ (* xr hi) (* xi hr))))))))
}

chorus::defkernel! {
    (defkernel direct-convolution (void ((x float*) (h float*) (y float*) (n int) (taps int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i n)
            (let ((s 0.0) (j 0))
              (while (< j taps)
                (set s (+ s (* (aref h j) (aref x (mod (+ (- i j) n) n)))))
                (set j (+ j 1)))
              (set (aref y i) s)))))
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let backend = banner("cufft-convolution")?;
    if backend != chorus::Backend::Cuda {
        println!("skipped: the CUDA libraries need the CUDA backend");
        return Ok(true);
    }
    let (n, taps) = (1usize << 22, 255usize);
    let bins = n / 2 + 1;
    let mut random = Random::new(11);
    let mut x = MemoryBlock::<f32>::alloc(n)?;
    let mut h = MemoryBlock::<f32>::alloc(n)?;
    for v in x.as_mut_slice() {
        *v = 2.0 * random.next_f32() - 1.0;
    }
    for (j, v) in h.as_mut_slice().iter_mut().enumerate().take(taps) {
        *v = (-(j as f32) / 40.0).exp() / 20.0;
    }
    x.sync(Direction::HostToDevice)?;
    h.sync(Direction::HostToDevice)?;
    let mut xf = MemoryBlock::<f32>::alloc(2 * bins)?;
    let mut hf = MemoryBlock::<f32>::alloc(2 * bins)?;
    let mut y_fft = MemoryBlock::<f32>::alloc(n)?;
    let mut y_direct = MemoryBlock::<f32>::alloc(n)?;
    let stream = chorus_cuda_libs::Stream::null();
    let mut forward = Plan::new(
        PlanShape::new(&[n], FftKind::R2C, Precision::Single, 1),
        &stream,
    )?;
    let mut inverse = Plan::new(
        PlanShape::new(&[n], FftKind::C2R, Precision::Single, 1),
        &stream,
    )?;
    let grid = |len: usize| Launch::grid(len.div_ceil(256)).block(256);
    let mut convolve = |xf: &mut MemoryBlock<f32>,
                        hf: &mut MemoryBlock<f32>,
                        y: &mut MemoryBlock<f32>|
     -> Result<(), Box<dyn std::error::Error>> {
        forward.r2c(&x, &mut xf.as_device_slice_mut()?.cast::<C32>()?)?;
        forward.r2c(&h, &mut hf.as_device_slice_mut()?.cast::<C32>()?)?;
        multiply_spectra(&mut *xf, &*hf, bins as i32, 1.0 / n as f32, grid(bins))?;
        inverse.c2r(&mut xf.as_device_slice_mut()?.cast::<C32>()?, y)?;
        Ok(())
    };
    convolve(&mut xf, &mut hf, &mut y_fft)?; // plans warm
    stream.synchronize()?;
    let start = std::time::Instant::now();
    convolve(&mut xf, &mut hf, &mut y_fft)?;
    stream.synchronize()?;
    let fft_time = start.elapsed();
    direct_convolution(&x, &h, &mut y_direct, n as i32, taps as i32, grid(n))?;
    stream.synchronize()?;
    let start = std::time::Instant::now();
    direct_convolution(&x, &h, &mut y_direct, n as i32, taps as i32, grid(n))?;
    stream.synchronize()?;
    let direct_time = start.elapsed();
    y_fft.sync(Direction::DeviceToHost)?;
    y_direct.sync(Direction::DeviceToHost)?;
    let mut worst_fft = 0.0f64;
    let mut worst_direct = 0.0f64;
    for s in 0..512 {
        let i = (s * 8191 + 7) % n;
        let want: f64 = (0..taps)
            .map(|j| h[j] as f64 * x[(i + n - j) % n] as f64)
            .sum();
        worst_fft = worst_fft.max((y_fft[i] as f64 - want).abs());
        worst_direct = worst_direct.max((y_direct[i] as f64 - want).abs());
    }
    println!("circular convolution of {n} points with {taps} taps");
    println!(
        "FFT (cuFFT R2C ×2, a kernel, C2R): {:.3} ms, {:.1} Mpoints/s; largest error {worst_fft:.2e}",
        fft_time.as_secs_f64() * 1e3,
        n as f64 / fft_time.as_secs_f64() / 1e6
    );
    println!(
        "direct (kernel):                   {:.3} ms, {:.1} Mpoints/s; largest error {worst_direct:.2e}",
        direct_time.as_secs_f64() * 1e3,
        n as f64 / direct_time.as_secs_f64() / 1e6
    );
    Ok(worst_fft < 1e-4 && worst_direct < 1e-4)
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "cufft-convolution",
        "FFT convolution with cuFFT against a direct kernel",
    );
    chorus_examples::exit_code("cufft-convolution", run())
}
