//! A convolution layer (3×3, padding 1, then ReLU) through cuDNN against the same layer written
//! as a direct convolution in the kernel language, on the same memory blocks: a kernel fills
//! the input and the filter, cuDNN convolves them (the fastest FMA algorithm its exhaustive
//! search finds) and applies ReLU, the kernel-language layer computes its own output, and the
//! two are compared with each other everywhere and against f64 on the host at sampled points.
//! Prints the backend, both times and their TFLOP/s.
//!
//! `cargo run --release --example cudnn-conv` (needs the CUDA backend and cuDNN 9).

use chorus::{Direction, Launch, MemoryBlock};
use chorus_cuda_libs::cudnn::{
    Activation, Conv2d, ConvDesc, Dnn, FilterDesc, Layout, MathType, Search, TensorDesc,
};
use chorus_examples::banner;
use std::process::ExitCode;

chorus::defkernel! {
    (defkernel fill-values (void ((a float*) (n int) (seed int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i n)
            (set (aref a i) (* 0.0625 (float (- (mod (+ (* i 13) seed) 31) 15)))))))
}

chorus::defkernel! {
    (defkernel direct-conv3x3-relu (void ((x float*) (w float*) (y float*)
                                          (n int) (c int) (h int) (wd int) (k int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (if (< i (* n (* k (* h wd))))
            (let* ((q (mod i wd))
                   (p (mod (/ i wd) h))
                   (kk (mod (/ i (* wd h)) k))
                   (nn (/ i (* wd (* h k))))
                   (s 0.0)
                   (cc 0))
              (while (< cc c)
                (let ((r 0))
                  (while (< r 3)
                    (let* ((hh (+ p (- r 1))) (tt 0))
                      (while (< tt 3)
                        (let ((ww (+ q (- tt 1))))
                          (if (and (>= hh 0) (< hh h) (>= ww 0) (< ww wd))
                              (set s (+ s (* (aref x (+ (* (+ (* nn c) cc) (* h wd)) (+ (* hh wd) ww)))
                                             (aref w (+ (* (+ (* kk c) cc) 9) (+ (* r 3) tt))))))))
                        (set tt (+ tt 1))))
                    (set r (+ r 1))))
                (set cc (+ cc 1)))
              (set (aref y i) (if (< s 0.0) 0.0 s))))))
}

/// f64 `relu(conv(x, w))` at output index `i` (NCHW, 3×3, padding 1).
fn reference(x: &[f32], w: &[f32], (c, h, wd, k): (usize, usize, usize, usize), i: usize) -> f64 {
    let (q, p, kk, nn) = (i % wd, (i / wd) % h, (i / (wd * h)) % k, i / (wd * h * k));
    let mut sum = 0.0f64;
    for cc in 0..c {
        for r in 0..3 {
            for t in 0..3 {
                let (hh, ww) = (p as isize + r as isize - 1, q as isize + t as isize - 1);
                if hh < 0 || ww < 0 || hh >= h as isize || ww >= wd as isize {
                    continue;
                }
                let xv = x[((nn * c + cc) * h + hh as usize) * wd + ww as usize] as f64;
                sum += xv * w[(kk * c + cc) * 9 + r * 3 + t] as f64;
            }
        }
    }
    sum.max(0.0)
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let backend = banner("cudnn-conv")?;
    let with_dnn = backend == chorus::Backend::Cuda && chorus_cuda_libs::cudnn::is_available();
    if !with_dnn {
        println!(
            "cuDNN part skipped: {}; checking the kernel-language layer alone on a small input",
            if backend == chorus::Backend::Cuda {
                "cuDNN 9 is not available"
            } else {
                "the CUDA libraries need the CUDA backend"
            }
        );
    }
    let (n, c, h, w, k) = if with_dnn {
        (8usize, 64usize, 56usize, 56usize, 64usize)
    } else {
        (2, 4, 9, 7, 3)
    };
    let (x_len, w_len, y_len) = (n * c * h * w, k * c * 9, n * k * h * w);
    let mut x = MemoryBlock::<f32>::alloc(x_len)?;
    let mut filter = MemoryBlock::<f32>::alloc(w_len)?;
    let mut y_direct = MemoryBlock::<f32>::alloc(y_len)?;
    let grid = |len: usize| Launch::grid(len.div_ceil(256)).block(256);
    fill_values(&mut x, x_len as i32, 3, grid(x_len))?;
    fill_values(&mut filter, w_len as i32, 7, grid(w_len))?;
    let flops = 2.0 * (n * k * h * w * c * 9) as f64;
    println!("3×3 convolution + ReLU, N={n} C={c} K={k} {h}×{w}, f32 NCHW, padding 1");

    // cuDNN: NCHW f32 with FMA math (no TF32), so the two layers differ only in summation order.
    // The facade's CUDA calls made the primary context current; the null stream orders cuDNN
    // after the fill kernels.
    let mut y_dnn = None;
    if with_dnn {
        let stream = chorus_cuda_libs::Stream::null();
        let dnn = Dnn::new(&stream)?;
        let x_desc = TensorDesc::<f32>::new(Layout::Nchw, n, c, h, w)?;
        let w_desc = FilterDesc::<f32>::new(Layout::Nchw, k, c, 3, 3)?;
        let mut conv = ConvDesc::<f32>::new(Conv2d {
            math: MathType::Fma,
            ..Conv2d::padded(1)
        })?;
        let y_desc = TensorDesc::<f32>::new(Layout::Nchw, n, k, h, w)?;
        let found = dnn.conv_forward_algos(&x_desc, &w_desc, &conv, &y_desc, Search::Exhaustive)?;
        let best = *found
            .iter()
            .find(|p| p.math == MathType::Fma)
            .ok_or("cuDNN found no FMA algorithm")?;
        conv.set_math(best.math)?;
        let mut y = MemoryBlock::<f32>::alloc(y_len)?;
        let layer = |y: &mut MemoryBlock<f32>| -> Result<(), chorus_cuda_libs::Error> {
            dnn.conv_forward(
                1.0, &x_desc, &x, &w_desc, &filter, &conv, best.algo, 0.0, &y_desc, y,
            )?;
            dnn.activation_in_place(Activation::Relu, &y_desc, y)
        };
        layer(&mut y)?; // warm-up
        stream.synchronize()?;
        let start = std::time::Instant::now();
        layer(&mut y)?;
        stream.synchronize()?;
        let seconds = start.elapsed().as_secs_f64();
        println!(
            "cuDNN (algorithm {:?}, the fastest FMA one of {} its search found): {:.3} ms, {:.2} TFLOP/s",
            best.algo,
            found.len(),
            seconds * 1e3,
            flops / seconds / 1e12
        );
        y_dnn = Some(y);
    }

    let launch = grid(y_len);
    let direct = |y: &mut MemoryBlock<f32>| {
        direct_conv3x3_relu(
            &x,
            &filter,
            y,
            n as i32,
            c as i32,
            h as i32,
            w as i32,
            k as i32,
            launch.clone(),
        )
    };
    direct(&mut y_direct)?; // compile and load outside the time
    chorus::synchronize()?;
    let start = std::time::Instant::now();
    direct(&mut y_direct)?;
    chorus::synchronize()?;
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "kernel-language direct convolution: {:.3} ms, {:.2} TFLOP/s",
        seconds * 1e3,
        flops / seconds / 1e12
    );

    for b in [&mut x, &mut filter, &mut y_direct] {
        b.sync(Direction::DeviceToHost)?;
    }
    let scale = y_direct
        .as_slice()
        .iter()
        .fold(1e-30f32, |m, v| m.max(v.abs())) as f64;
    let dims = (c, h, w, k);
    let samples: Vec<usize> = if with_dnn {
        (0..512usize).map(|s| (s * 2_654_435_761) % y_len).collect()
    } else {
        (0..y_len).collect()
    };
    let mut worst = 0.0f64;
    for &i in &samples {
        let want = reference(x.as_slice(), filter.as_slice(), dims, i);
        worst = worst.max((y_direct[i] as f64 - want).abs() / scale);
    }
    let mut ok = worst < 1e-5;
    if let Some(mut y) = y_dnn {
        y.sync(Direction::DeviceToHost)?;
        let between = y
            .as_slice()
            .iter()
            .zip(y_direct.as_slice())
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs() as f64))
            / scale;
        for &i in &samples {
            let want = reference(x.as_slice(), filter.as_slice(), dims, i);
            worst = worst.max((y[i] as f64 - want).abs() / scale);
        }
        println!("largest difference between cuDNN and the direct kernel: {between:.2e}");
        ok = between < 1e-5 && worst < 1e-5;
    }
    println!(
        "largest error of {} sampled outputs against f64: {worst:.2e} (relative to the largest output)",
        samples.len()
    );
    Ok(ok)
}

fn main() -> ExitCode {
    chorus_examples::no_arguments(
        "cudnn-conv",
        "A 3×3 convolution layer through cuDNN against a direct convolution in the kernel language",
    );
    chorus_examples::exit_code("cudnn-conv", run())
}
