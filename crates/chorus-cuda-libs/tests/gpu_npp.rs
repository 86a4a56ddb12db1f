//! NPP on the GPU, each operation against a CPU reference in f64 (skipped without a GPU; a
//! failure under `CHORUS_REQUIRE_GPU=1`). Tolerances, per operation (8-bit levels unless said):
//!
//! - arithmetic and logical: exact (`u8` `Sfs`: `saturate(round(v · 2^-s))` with ties to even;
//!   `f32` add/sub/mul exact, div within 1 ulp); histogram: exact;
//! - colour conversions: ±1 (NPP's f32 formulas against f64, rounding at .5 either way);
//!   NV12 → RGB: ±2 against NPP's YUV formula (its manual's YUVToRGB; BT.601 in video and full
//!   range are printed too) inside blocks of constant chroma, so that chroma upsampling does not
//!   enter;
//! - box filter: ±1 (NPP's rounding of the mean); Gaussian: NPP's own kernel, read from the f32
//!   filter's impulse response (normalised, symmetric; the fitted σ is printed: NPP's 5 × 5 is not
//!   the manual's σ = 1.6), then `u8` within ±2 and `f32` within 1e-5 of the f64 convolution;
//! - resize, nearest: every output is one of the source pixels of its footprint; linear and cubic
//!   on a smooth image: upscales ±2 against the f64 pixel-centre bilinear and Catmull-Rom
//!   resamplers; downscales ±3 against the better of pixel-centre and corner (`x · scale`)
//!   mappings (NPP's nearest downscale takes `floor(x · scale)`; both are printed).
//!
//! Each test prints the largest difference it saw (the measured rounding).

#![cfg(feature = "npp")]

mod common;

use chorus_cuda_libs::npp::{self, GaussMask, ImageOp, Interpolation, LogicalOp, Npp};
use chorus_cuda_libs::{Error, Image, ImageShape, ImageView, ImageViewMut};
use chorus_driver::{AsDeviceSlice, AsDeviceSliceMut, MemoryBlock, Stream};
use common::{Lcg, on_gpu};

type R = Result<(), Box<dyn std::error::Error>>;

fn random_u8(seed: u64, n: usize) -> Vec<u8> {
    let mut rng = Lcg::new(seed);
    (0..n).map(|_| ((rng.next() + 1.0) * 128.0) as u8).collect()
}

/// A smooth RGB image (slow sine waves) of `w × h`.
fn smooth_rgb(w: usize, h: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f64 / w as f64, y as f64 / h as f64);
            v.push((127.5 + 100.0 * (3.0 * fx + 1.0 * fy).sin()) as u8);
            v.push((127.5 + 100.0 * (2.0 * fy - 1.5 * fx).cos()) as u8);
            v.push((60.0 + 150.0 * fx * fy) as u8);
        }
    }
    v
}

fn max_diff(got: &[u8], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    got.iter().zip(want).fold(0.0f64, |m, (&g, &w)| {
        m.max((g as f64 - w.round().clamp(0.0, 255.0)).abs())
    })
}

fn sat(v: f64) -> f64 {
    v.clamp(0.0, 255.0)
}

#[test]
fn npp_is_available_or_not_found_cleanly() {
    let available = npp::is_available();
    for lib in npp::LIBRARIES {
        match lib.ensure() {
            Ok(()) => assert!(lib.is_available()),
            Err(Error::LibraryNotFound { library, searched }) => {
                assert!(!available);
                assert_eq!(library, lib.display_name);
                assert!(!searched.is_empty());
            }
            Err(e) => panic!("{e}"),
        }
    }
    if available {
        // Loading the tables needs no GPU.
        let (major, minor, build) = npp::version().expect("NPP's version");
        eprintln!("NPP {major}.{minor}.{build} loaded");
        assert!(major >= 11);
    } else {
        let stream = Stream::null();
        match Npp::new(&stream) {
            Err(Error::LibraryNotFound { library, .. }) => assert!(library.starts_with("NPP")),
            other => panic!("NPP absent but Npp::new gave {other:?}"),
        }
        assert!(matches!(npp::version(), Err(Error::LibraryNotFound { .. })));
    }
}

#[test]
fn stream_context_comes_from_the_device() {
    on_gpu("stream_context_comes_from_the_device", |_ctx| {
        let stream = Stream::new()?;
        let npp = Npp::new(&stream)?;
        let c = npp.stream_context();
        assert_eq!(c.hStream as usize, stream.raw() as usize);
        assert!(c.nMultiProcessorCount > 0 && c.nMaxThreadsPerBlock >= 256);
        assert!(c.nCudaDevAttrComputeCapabilityMajor >= 5);
        let (major, minor, build) = npp::version()?;
        eprintln!(
            "NPP {major}.{minor}.{build}; {} SMs, cc {}.{}",
            c.nMultiProcessorCount,
            c.nCudaDevAttrComputeCapabilityMajor,
            c.nCudaDevAttrComputeCapabilityMinor
        );
        assert!(major >= 11);
        Ok(())
    });
}

#[test]
fn arithmetic_u8_saturates_and_rounds_ties_to_even() {
    on_gpu("arithmetic_u8", |_ctx| -> R {
        let (w, h, c) = (37, 19, 3);
        let n = w * h * c;
        let (a, b) = (random_u8(1, n), random_u8(2, n));
        let stream = Stream::new()?;
        let npp = Npp::new(&stream)?;
        let (ia, ib) = (
            Image::from_host(w, h, c, &a)?,
            Image::from_host(w, h, c, &b)?,
        );
        let mut out = Image::<u8>::new(w, h, c)?;
        let even = |v: f64| {
            let r = v.round();
            if (v - v.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
                r - v.signum()
            } else {
                r
            }
        };
        for (op, scale) in [
            (ImageOp::Add, 0),
            (ImageOp::Add, 1),
            (ImageOp::Sub, 0),
            (ImageOp::Mul, 0),
            (ImageOp::Mul, 8),
            (ImageOp::AbsDiff, 0),
        ] {
            npp.arith(op, ia.view(), ib.view(), out.view_mut(), scale)?;
            let got = out.download()?;
            let mut mismatches = 0;
            for i in 0..n {
                let (x, y) = (a[i] as f64, b[i] as f64);
                let v = match op {
                    ImageOp::Add => x + y,
                    ImageOp::Sub => x - y,
                    ImageOp::Mul => x * y,
                    ImageOp::AbsDiff => (x - y).abs(),
                    ImageOp::Div => unreachable!(),
                };
                let want = sat(even(v / f64::from(1u32 << scale)));
                if got[i] as f64 != want {
                    if mismatches < 5 {
                        eprintln!("{op:?} >> {scale}: {x} op {y} = {} (want {want})", got[i]);
                    }
                    mismatches += 1;
                }
            }
            assert_eq!(
                mismatches, 0,
                "{op:?} scale {scale}: {mismatches} of {n} differ"
            );
        }
        // The f32-only and u8-only operations say so.
        let e = npp.arith(ImageOp::Div, ia.view(), ib.view(), out.view_mut(), 0);
        assert!(matches!(e, Err(Error::InvalidArgument { .. })), "{e:?}");
        // Shapes must agree.
        let small = Image::<u8>::new(w - 1, h, c)?;
        let e = npp.arith(ImageOp::Add, ia.view(), small.view(), out.view_mut(), 0);
        assert!(matches!(e, Err(Error::InvalidArgument { .. })), "{e:?}");
        Ok(())
    });
}

#[test]
fn arithmetic_f32_matches_the_host() {
    on_gpu("arithmetic_f32", |_ctx| -> R {
        let (w, h) = (50, 30);
        let mut rng = Lcg::new(3);
        let a: Vec<f32> = (0..w * h).map(|_| rng.next() as f32 * 10.0).collect();
        let b: Vec<f32> = (0..w * h)
            .map(|_| 0.5 + (rng.next() as f32 + 1.0) * 4.0)
            .collect();
        let stream = Stream::null();
        let npp = Npp::new(&stream)?;
        let (ia, ib) = (
            Image::from_host(w, h, 1, &a)?,
            Image::from_host(w, h, 1, &b)?,
        );
        let mut out = Image::<f32>::new(w, h, 1)?;
        for op in [ImageOp::Add, ImageOp::Sub, ImageOp::Mul, ImageOp::Div] {
            npp.arith(op, ia.view(), ib.view(), out.view_mut(), 0)?;
            let got = out.download()?;
            let worst = (0..w * h).fold(0.0f32, |m, i| {
                let want = match op {
                    ImageOp::Add => a[i] + b[i],
                    ImageOp::Sub => a[i] - b[i],
                    ImageOp::Mul => a[i] * b[i],
                    ImageOp::Div => a[i] / b[i],
                    ImageOp::AbsDiff => unreachable!(),
                };
                m.max((got[i] - want).abs() / want.abs().max(f32::MIN_POSITIVE))
            });
            eprintln!("f32 {op:?}: largest relative difference {worst:e}");
            let tolerance = if op == ImageOp::Div {
                2.0 * f32::EPSILON
            } else {
                0.0
            };
            assert!(worst <= tolerance, "{op:?}: {worst:e}");
        }
        Ok(())
    });
}

#[test]
fn logical_operations_are_exact() {
    on_gpu("logical", |_ctx| -> R {
        let (w, h, c) = (41, 13, 1);
        let n = w * h * c;
        let (a, b) = (random_u8(4, n), random_u8(5, n));
        let stream = Stream::null();
        let npp = Npp::new(&stream)?;
        let (ia, ib) = (
            Image::from_host(w, h, c, &a)?,
            Image::from_host(w, h, c, &b)?,
        );
        let mut out = Image::<u8>::new(w, h, c)?;
        for op in [LogicalOp::And, LogicalOp::Or, LogicalOp::Xor] {
            npp.logical(op, ia.view(), ib.view(), out.view_mut())?;
            let want: Vec<u8> = (0..n)
                .map(|i| match op {
                    LogicalOp::And => a[i] & b[i],
                    LogicalOp::Or => a[i] | b[i],
                    LogicalOp::Xor => a[i] ^ b[i],
                })
                .collect();
            assert_eq!(out.download()?, want, "{op:?}");
        }
        npp.not(ia.view(), out.view_mut())?;
        assert_eq!(out.download()?, a.iter().map(|x| !x).collect::<Vec<_>>());
        Ok(())
    });
}

#[test]
fn colour_conversions_follow_npps_formulas() {
    on_gpu("colour", |_ctx| -> R {
        let (w, h) = (37, 23);
        let rgb = random_u8(6, w * h * 3);
        let stream = Stream::null();
        let npp = Npp::new(&stream)?;
        let src = Image::from_host(w, h, 3, &rgb)?;
        let mut yuv = Image::<u8>::new(w, h, 3)?;
        npp.rgb_to_yuv(src.view(), yuv.view_mut())?;
        let got_yuv = yuv.download()?;
        let mut want = Vec::new();
        for p in rgb.chunks_exact(3) {
            let (r, g, b) = (p[0] as f64, p[1] as f64, p[2] as f64);
            let y = 0.299 * r + 0.587 * g + 0.114 * b;
            want.extend([y, 0.492 * (b - y) + 128.0, sat(0.877 * (r - y) + 128.0)]);
        }
        let d = max_diff(&got_yuv, &want);
        eprintln!("RGB → YUV: largest difference {d}");
        assert!(d <= 1.0);

        let mut back = Image::<u8>::new(w, h, 3)?;
        npp.yuv_to_rgb(yuv.view(), back.view_mut())?;
        let got = back.download()?;
        let mut want = Vec::new();
        for p in got_yuv.chunks_exact(3) {
            let (y, u, v) = (p[0] as f64, p[1] as f64 - 128.0, p[2] as f64 - 128.0);
            want.extend([
                sat(y + 1.140 * v),
                sat(y - 0.394 * u - 0.581 * v),
                sat(y + 2.032 * u),
            ]);
        }
        let d = max_diff(&got, &want);
        eprintln!("YUV → RGB: largest difference {d}");
        assert!(d <= 1.0);

        let mut gray = Image::<u8>::new(w, h, 1)?;
        npp.rgb_to_gray(src.view(), gray.view_mut())?;
        let want: Vec<f64> = rgb
            .chunks_exact(3)
            .map(|p| 0.299 * p[0] as f64 + 0.587 * p[1] as f64 + 0.114 * p[2] as f64)
            .collect();
        let d = max_diff(&gray.download()?, &want);
        eprintln!("RGB → grey: largest difference {d}");
        assert!(d <= 1.0);
        // Channels are checked.
        let e = npp.rgb_to_gray(gray.view(), yuv.view_mut());
        assert!(matches!(e, Err(Error::InvalidArgument { .. })), "{e:?}");
        Ok(())
    });
}

#[test]
fn nv12_to_rgb_is_npps_yuv_formula() {
    on_gpu("nv12", |_ctx| -> R {
        let (w, h) = (48, 32);
        let luma = random_u8(7, w * h);
        // Chroma constant over 4 × 4 chroma samples (8 × 8 pixels), so that pixels inside a block
        // do not depend on how NPP upsamples chroma; random from block to block.
        let block_uv = random_u8(8, (w / 8) * (h / 8) * 2);
        let mut chroma = vec![0u8; w * h / 2];
        for cy in 0..h / 2 {
            for cx in 0..w / 2 {
                let b = ((cy / 4) * (w / 8) + cx / 4) * 2;
                chroma[cy * w + 2 * cx] = block_uv[b];
                chroma[cy * w + 2 * cx + 1] = block_uv[b + 1];
            }
        }
        // One pitched block: h rows of Y, then h/2 rows of interleaved UV, one pitch.
        let mut planes = luma.clone();
        planes.extend_from_slice(&chroma);
        let nv12 = Image::from_host(w, h * 3 / 2, 1, &planes)?;
        let pitch = nv12.pitch();
        let whole = nv12.block().as_device_slice()?;
        let y = ImageView::new(
            whole.slice(0..pitch * h)?,
            ImageShape {
                width: w,
                height: h,
                channels: 1,
                pitch,
            },
        )?;
        let uv = ImageView::new(
            whole.slice(pitch * h..whole.len())?,
            ImageShape {
                width: w / 2,
                height: h / 2,
                channels: 2,
                pitch,
            },
        )?;
        let stream = Stream::null();
        let npp = Npp::new(&stream)?;
        let mut rgb = Image::<u8>::new(w, h, 3)?;
        npp.nv12_to_rgb(y, uv, rgb.view_mut())?;
        let got = rgb.download()?;
        // Three candidate formulas, inside blocks and everywhere: NPP's YUV family (the formula
        // its manual gives for YUVToRGB; NV12ToRGB is of that family, and NPP's manual gives it
        // no formula of its own), and BT.601 YCbCr in video and in full range (which the first
        // H200 run showed NPP does not use: neither fitted).
        let names = ["NPP YUV", "BT.601 video range", "BT.601 full range"];
        let mut worst = [[0f64; 2]; 3];
        for row in 0..h {
            for col in 0..w {
                let inside = (2..6).contains(&(row % 8)) && (2..6).contains(&(col % 8));
                let yy = luma[row * w + col] as f64;
                let k = (row / 2) * w + (col / 2) * 2;
                let (u, v) = (chroma[k] as f64 - 128.0, chroma[k + 1] as f64 - 128.0);
                let l = 1.164 * (yy - 16.0);
                let candidates = [
                    [
                        sat(yy + 1.140 * v),
                        sat(yy - 0.394 * u - 0.581 * v),
                        sat(yy + 2.032 * u),
                    ],
                    [
                        sat(l + 1.596 * v),
                        sat(l - 0.813 * v - 0.391 * u),
                        sat(l + 2.018 * u),
                    ],
                    [
                        sat(yy + 1.402 * v),
                        sat(yy - 0.714 * v - 0.344 * u),
                        sat(yy + 1.772 * u),
                    ],
                ];
                for (r, want) in candidates.iter().enumerate() {
                    let d = max_diff(&got[(row * w + col) * 3..][..3], want);
                    worst[r][0] = worst[r][0].max(if inside { d } else { 0.0 });
                    worst[r][1] = worst[r][1].max(d);
                }
            }
        }
        for (name, [inside, everywhere]) in names.iter().zip(worst) {
            eprintln!(
                "NV12 → RGB against {name}: largest difference {inside} inside chroma blocks, {everywhere} everywhere"
            );
        }
        // NPP's YUV formula, within the rounding of its f32 arithmetic and of the output (±2).
        assert!(
            worst[0][0] <= 2.0,
            "NV12 → RGB is not NPP's YUV formula: {:?}",
            names.iter().zip(worst).collect::<Vec<_>>()
        );
        // Odd sizes and a UV plane of another pitch are refused before NPP.
        let e = npp.nv12_to_rgb(
            ImageView::new(
                whole,
                ImageShape {
                    width: w - 1,
                    height: h,
                    channels: 1,
                    pitch,
                },
            )?,
            uv,
            rgb.view_mut(),
        );
        assert!(matches!(e, Err(Error::InvalidArgument { .. })), "{e:?}");
        Ok(())
    });
}

/// The f64 mean of each `mw × mh` window (anchor at the centre), borders replicated.
fn box_ref(img: &[f64], w: usize, h: usize, c: usize, mw: usize, mh: usize) -> Vec<f64> {
    let mut out = vec![0.0; img.len()];
    let at = |x: isize, y: isize, k: usize| {
        let (x, y) = (
            x.clamp(0, w as isize - 1) as usize,
            y.clamp(0, h as isize - 1) as usize,
        );
        img[(y * w + x) * c + k]
    };
    for y in 0..h {
        for x in 0..w {
            for k in 0..c {
                let mut s = 0.0;
                for j in 0..mh {
                    for i in 0..mw {
                        s += at(
                            x as isize + i as isize - (mw / 2) as isize,
                            y as isize + j as isize - (mh / 2) as isize,
                            k,
                        );
                    }
                }
                out[(y * w + x) * c + k] = s / (mw * mh) as f64;
            }
        }
    }
    out
}

/// The `n × n` convolution of `img` with `kernel` (row-major, centred), borders replicated, in f64.
fn conv_ref(img: &[f64], w: usize, h: usize, c: usize, kernel: &[f64], n: usize) -> Vec<f64> {
    let r = (n / 2) as isize;
    let mut out = vec![0.0; img.len()];
    for y in 0..h as isize {
        for x in 0..w as isize {
            for ch in 0..c {
                let mut s = 0.0;
                for j in 0..n as isize {
                    for i in 0..n as isize {
                        let xx = (x + i - r).clamp(0, w as isize - 1) as usize;
                        let yy = (y + j - r).clamp(0, h as isize - 1) as usize;
                        s += kernel[(j * n as isize + i) as usize] * img[(yy * w + xx) * c + ch];
                    }
                }
                out[(y as usize * w + x as usize) * c + ch] = s;
            }
        }
    }
    out
}

/// NPP's Gaussian kernel for `mask`, read as the f32 filter's response to a unit impulse, after
/// checking it is a normalised, symmetric, centre-peaked kernel. NPP's manual gives
/// σ = 0.4 + (n / 2) · 0.6; the σ that fits the measured taps is printed.
fn npp_gauss_kernel(
    npp: &Npp<'_>,
    mask: GaussMask,
) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
    let (n, size) = (mask.size(), 33);
    let mut impulse = vec![0f32; size * size];
    impulse[(size / 2) * size + size / 2] = 1.0;
    let src = Image::from_host(size, size, 1, &impulse)?;
    let mut dst = Image::<f32>::new(size, size, 1)?;
    npp.gaussian(src.view(), dst.view_mut(), mask)?;
    let response = dst.download()?;
    let (c, r) = (size / 2, n / 2);
    let mut k = Vec::with_capacity(n * n);
    for j in 0..n {
        for i in 0..n {
            k.push(response[(c + j - r) * size + (c + i - r)] as f64);
        }
    }
    let outside: f64 = response.iter().map(|&v| v as f64).sum::<f64>() - k.iter().sum::<f64>();
    let sum: f64 = k.iter().sum();
    assert!(
        (sum - 1.0).abs() < 1e-3 && outside.abs() < 1e-6,
        "{mask:?}: sum {sum}, outside {outside}"
    );
    for j in 0..n {
        for i in 0..n {
            let v = k[j * n + i];
            for (a, b) in [(i, j), (n - 1 - i, j), (i, n - 1 - j)] {
                assert!(
                    (v - k[b * n + a]).abs() < 1e-6,
                    "{mask:?} is not symmetric: {k:?}"
                );
            }
            assert!(
                v <= k[r * n + r] + 1e-9,
                "{mask:?}: the centre is not the peak"
            );
        }
    }
    let taps: Vec<f64> = (0..n).map(|i| (0..n).map(|j| k[j * n + i]).sum()).collect();
    let sigma = (-1.0 / (2.0 * (taps[r + 1] / taps[r]).ln())).sqrt();
    // The fixed masks of NPP's older nppiFilterGauss documentation (row sums), to compare.
    let documented: &[f64] = match n {
        3 => &[1.0, 2.0, 1.0],
        5 => &[30.0, 128.0, 255.0, 128.0, 30.0],
        _ => &[],
    };
    let total: f64 = documented.iter().sum();
    let from_documented = documented
        .iter()
        .zip(&taps)
        .map(|(d, t)| (d / total - t).abs())
        .fold(0.0f64, f64::max);
    eprintln!(
        "Gauss {n}×{n}: NPP's taps (row sums) {:?}, σ ≈ {sigma:.3} (the manual's formula: {:.2}){}",
        taps.iter()
            .map(|t| (t * 1e4).round() / 1e4)
            .collect::<Vec<_>>(),
        mask.sigma(),
        if documented.is_empty() {
            String::new()
        } else {
            format!("; largest difference from nppiFilterGauss's fixed mask {from_documented:.4}")
        }
    );
    Ok(k)
}

#[test]
fn box_and_gaussian_filters_match_the_host() {
    on_gpu("filters", |_ctx| -> R {
        let (w, h) = (45, 31);
        let stream = Stream::null();
        let npp = Npp::new(&stream)?;
        for c in [1, 3] {
            let px = random_u8(9 + c as u64, w * h * c);
            let f: Vec<f64> = px.iter().map(|&v| v as f64).collect();
            let src = Image::from_host(w, h, c, &px)?;
            let mut dst = Image::<u8>::new(w, h, c)?;
            for (mw, mh) in [(3, 3), (5, 3), (7, 7)] {
                npp.box_filter(src.view(), dst.view_mut(), mw, mh)?;
                let d = max_diff(&dst.download()?, &box_ref(&f, w, h, c, mw, mh));
                eprintln!("box {mw}×{mh}, {c} channels: largest difference {d}");
                assert!(d <= 1.0, "box {mw}×{mh} c{c}: {d}");
            }
            for mask in [GaussMask::Size3, GaussMask::Size5, GaussMask::Size7] {
                npp.gaussian(src.view(), dst.view_mut(), mask)?;
                let kernel = npp_gauss_kernel(&npp, mask)?;
                let want = conv_ref(&f, w, h, c, &kernel, mask.size());
                let d = max_diff(&dst.download()?, &want);
                eprintln!(
                    "Gauss {}, {c} channels: largest difference {d}",
                    mask.size()
                );
                assert!(d <= 2.0, "gauss {mask:?} c{c}: {d}");
            }
        }
        // f32, one channel.
        let mut rng = Lcg::new(12);
        let v: Vec<f32> = (0..w * h).map(|_| rng.next() as f32).collect();
        let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
        let src = Image::from_host(w, h, 1, &v)?;
        let mut dst = Image::<f32>::new(w, h, 1)?;
        npp.box_filter(src.view(), dst.view_mut(), 5, 5)?;
        let want = box_ref(&f, w, h, 1, 5, 5);
        let d = dst
            .download()?
            .iter()
            .zip(&want)
            .fold(0.0f64, |m, (&g, &w)| m.max((g as f64 - w).abs()));
        eprintln!("box 5×5 f32: largest difference {d:e}");
        assert!(d <= 1e-5);
        npp.gaussian(src.view(), dst.view_mut(), GaussMask::Size5)?;
        let want = conv_ref(&f, w, h, 1, &npp_gauss_kernel(&npp, GaussMask::Size5)?, 5);
        let d = dst
            .download()?
            .iter()
            .zip(&want)
            .fold(0.0f64, |m, (&g, &w)| m.max((g as f64 - w).abs()));
        eprintln!("Gauss 5 f32: largest difference {d:e}");
        assert!(d <= 1e-5);
        // A mask larger than the image is refused before NPP.
        let e = npp.box_filter(src.view(), dst.view_mut(), w + 1, 3);
        assert!(matches!(e, Err(Error::InvalidArgument { .. })), "{e:?}");
        Ok(())
    });
}

/// Diagnostics for a linear resize that is not the pixel-centre bilinear: the largest and mean
/// differences (levels of 255) between `got` (f32 in [0, 1]) and the bilinear of `src` under
/// other source-coordinate mappings and weight roundings, and the worst outputs under the
/// pixel-centre one, so a GPU run's log says which formula NPP follows.
fn explain_linear_resize(
    got: &[f32],
    src: &[u8],
    (sw, sh): (usize, usize),
    (dw, dh): (usize, usize),
) {
    let at = |x: isize, y: isize| {
        let (x, y) = (x.clamp(0, sw as isize - 1), y.clamp(0, sh as isize - 1));
        src[y as usize * sw + x as usize] as f64
    };
    let bilinear = |fx: f64, fy: f64, quantum: f64| {
        let (x0, y0) = (fx.floor(), fy.floor());
        let q = |t: f64| {
            if quantum > 0.0 {
                (t / quantum).floor() * quantum
            } else {
                t
            }
        };
        let (tx, ty) = (q(fx - x0), q(fy - y0));
        let (x0, y0) = (x0 as isize, y0 as isize);
        let top = at(x0, y0) * (1.0 - tx) + at(x0 + 1, y0) * tx;
        let bottom = at(x0, y0 + 1) * (1.0 - tx) + at(x0 + 1, y0 + 1) * tx;
        top * (1.0 - ty) + bottom * ty
    };
    type Map = fn(usize, usize, usize) -> f64;
    let maps: [(&str, Map); 5] = [
        ("centres (d+0.5)·s/n−0.5", |d, s, n| {
            (d as f64 + 0.5) * s as f64 / n as f64 - 0.5
        }),
        ("centres in f32", |d, s, n| {
            ((d as f32 + 0.5) * (s as f32 / n as f32) - 0.5) as f64
        }),
        ("corners d·s/n", |d, s, n| d as f64 * s as f64 / n as f64),
        ("aligned corners d·(s−1)/(n−1)", |d, s, n| {
            d as f64 * (s - 1) as f64 / (n - 1) as f64
        }),
        ("centres without −0.5", |d, s, n| {
            (d as f64 + 0.5) * s as f64 / n as f64
        }),
    ];
    for (name, map) in maps {
        for quantum in [0.0, 1.0 / 256.0, 1.0 / 32.0, 1.0 / 16.0, 1.0 / 8.0] {
            let (mut worst, mut sum) = (0.0f64, 0.0f64);
            for y in 0..dh {
                for x in 0..dw {
                    let want = bilinear(map(x, sw, dw), map(y, sh, dh), quantum);
                    let d = (got[y * dw + x] as f64 * 255.0 - want).abs();
                    worst = worst.max(d);
                    sum += d;
                }
            }
            eprintln!(
                "  fit {name}, fractions floored to {quantum}: largest {worst:.4}, mean {:.4}",
                sum / (dw * dh) as f64
            );
        }
    }
    let centre = maps[0].1;
    let mut rows: Vec<(f64, usize, usize)> = (0..dh)
        .flat_map(|y| (0..dw).map(move |x| (x, y)))
        .map(|(x, y)| {
            let want = bilinear(centre(x, sw, dw), centre(y, sh, dh), 0.0);
            ((got[y * dw + x] as f64 * 255.0 - want).abs(), x, y)
        })
        .collect();
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    for &(d, x, y) in rows.iter().take(6) {
        let (fx, fy) = (centre(x, sw, dw), centre(y, sh, dh));
        eprintln!(
            "  worst ({x}, {y}): source ({fx:.4}, {fy:.4}), got {:.4}, bilinear {:.4}, differs {d:.4}",
            got[y * dw + x] as f64 * 255.0,
            bilinear(fx, fy, 0.0)
        );
    }
}

/// Bilinear (or Catmull-Rom when `cubic`) resampling in f64, with pixel centres aligned (`centre`)
/// or corners (source `x · scale` for output `x`).
fn resample_ref(
    img: &[u8],
    (sw, sh, c): (usize, usize, usize),
    (dw, dh): (usize, usize),
    cubic: bool,
    centre: bool,
) -> Vec<f64> {
    let map = |d: usize, s: usize, n: usize| {
        if centre {
            (d as f64 + 0.5) * s as f64 / n as f64 - 0.5
        } else {
            d as f64 * s as f64 / n as f64
        }
    };
    let at = |x: isize, y: isize, k: usize| {
        let (x, y) = (
            x.clamp(0, sw as isize - 1) as usize,
            y.clamp(0, sh as isize - 1) as usize,
        );
        img[(y * sw + x) * c + k] as f64
    };
    let weights = |t: f64| -> [f64; 4] {
        if cubic {
            let a = -0.5;
            let k = |x: f64| {
                let x = x.abs();
                if x < 1.0 {
                    (a + 2.0) * x * x * x - (a + 3.0) * x * x + 1.0
                } else if x < 2.0 {
                    a * x * x * x - 5.0 * a * x * x + 8.0 * a * x - 4.0 * a
                } else {
                    0.0
                }
            };
            [k(1.0 + t), k(t), k(1.0 - t), k(2.0 - t)]
        } else {
            [0.0, 1.0 - t, t, 0.0]
        }
    };
    let mut out = Vec::with_capacity(dw * dh * c);
    for y in 0..dh {
        let fy = map(y, sh, dh);
        let (y0, ty) = (fy.floor() as isize, fy - fy.floor());
        for x in 0..dw {
            let fx = map(x, sw, dw);
            let (x0, tx) = (fx.floor() as isize, fx - fx.floor());
            let (wx, wy) = (weights(tx), weights(ty));
            for k in 0..c {
                let mut s = 0.0;
                for (j, wyj) in wy.iter().enumerate() {
                    for (i, wxi) in wx.iter().enumerate() {
                        s += wyj * wxi * at(x0 + i as isize - 1, y0 + j as isize - 1, k);
                    }
                }
                out.push(s);
            }
        }
    }
    out
}

#[test]
fn resize_nearest_linear_and_cubic() {
    on_gpu("resize", |_ctx| -> R {
        let stream = Stream::new()?;
        let npp = Npp::new(&stream)?;
        let (sw, sh) = (64, 48);
        // Nearest on noise: each output is a source pixel of its footprint.
        let noise = random_u8(13, sw * sh);
        let src = Image::from_host(sw, sh, 1, &noise)?;
        for (dw, dh) in [(32, 24), (100, 75), (61, 50)] {
            let mut dst = Image::<u8>::new(dw, dh, 1)?;
            npp.resize(src.view(), dst.view_mut(), Interpolation::Nearest)?;
            let got = dst.download()?;
            let (sx, sy) = (sw as f64 / dw as f64, sh as f64 / dh as f64);
            let mut centre_hits = 0;
            for y in 0..dh {
                for x in 0..dw {
                    let v = got[y * dw + x];
                    let xs = ((x as f64 * sx).floor() as usize).saturating_sub(1)
                        ..=(((x + 1) as f64 * sx).ceil() as usize).min(sw - 1);
                    let ys = ((y as f64 * sy).floor() as usize).saturating_sub(1)
                        ..=(((y + 1) as f64 * sy).ceil() as usize).min(sh - 1);
                    let found = ys
                        .clone()
                        .any(|yy| xs.clone().any(|xx| noise[yy * sw + xx] == v));
                    assert!(
                        found,
                        "{dw}×{dh}: output ({x}, {y}) = {v} is no source pixel near it"
                    );
                    let cx = (((x as f64 + 0.5) * sx) as usize).min(sw - 1);
                    let cy = (((y as f64 + 0.5) * sy) as usize).min(sh - 1);
                    centre_hits += usize::from(noise[cy * sw + cx] == v);
                }
            }
            eprintln!(
                "nearest {sw}×{sh} → {dw}×{dh}: {:.1}% are the pixel under the output's centre",
                100.0 * centre_hits as f64 / (dw * dh) as f64
            );
        }
        // Linear and cubic on a smooth RGB image, up and down.
        let smooth = smooth_rgb(sw, sh);
        let src = Image::from_host(sw, sh, 3, &smooth)?;
        for (dw, dh) in [(100, 75), (40, 30)] {
            for (interp, cubic) in [(Interpolation::Linear, false), (Interpolation::Cubic, true)] {
                let mut dst = Image::<u8>::new(dw, dh, 3)?;
                npp.resize(src.view(), dst.view_mut(), interp)?;
                let got = dst.download()?;
                let centre = max_diff(
                    &got,
                    &resample_ref(&smooth, (sw, sh, 3), (dw, dh), cubic, true),
                );
                let corner = max_diff(
                    &got,
                    &resample_ref(&smooth, (sw, sh, 3), (dw, dh), cubic, false),
                );
                eprintln!(
                    "{interp:?} {sw}×{sh} → {dw}×{dh}: largest difference {centre} (pixel centres aligned), {corner} (corners)"
                );
                if dw > sw {
                    assert!(centre <= 2.0, "{interp:?} to {dw}×{dh}: {centre}");
                } else {
                    assert!(
                        centre.min(corner) <= 3.0,
                        "{interp:?} to {dw}×{dh}: {centre}, {corner}"
                    );
                }
            }
        }
        // f32, one channel, linear.
        let f: Vec<f32> = smooth
            .iter()
            .step_by(3)
            .map(|&v| v as f32 / 255.0)
            .collect();
        let srcf = Image::from_host(sw, sh, 1, &f)?;
        let mut dstf = Image::<f32>::new(90, 70, 1)?;
        npp.resize(srcf.view(), dstf.view_mut(), Interpolation::Linear)?;
        let u: Vec<u8> = smooth.iter().step_by(3).copied().collect();
        let (dw, dh) = (90, 70);
        let got = dstf.download()?;
        // NPP documents the pixel-centre mapping (`src = (dst + 0.5)·scale − 0.5`) and border
        // replication, but not its weights: the H200 runs of 2026-12-02 and 2026-12-04 differed
        // from the f64 pixel-centre bilinear by up to 0.79 levels of 255 (inside the image, the
        // second run showed), while the u8 upscale above is within 1 level. So every output
        // must lie within the range of its source neighbourhood (any interpolation with
        // non-negative weights does), and inside the image (both taps of each axis in it)
        // within one level of the pixel-centre bilinear, the u8 tolerance (other mappings miss
        // it on this image: by 3.7 levels half a pixel off, 1.16 for the corners `d·s/n`, 1.06
        // for aligned corners, computed on the host). When the interior
        // is not exact to f32 rounding, the fit of other mappings and weight roundings is
        // printed, so the log says which formula NPP follows.
        let want = resample_ref(&u, (sw, sh, 1), (dw, dh), false, true);
        let centre = |d: usize, s: usize, n: usize| (d as f64 + 0.5) * s as f64 / n as f64 - 0.5;
        let src_u8 = u.as_slice();
        let (mut interior, mut border, mut outside) = (0.0f64, 0.0f64, 0.0f64);
        for y in 0..dh {
            for x in 0..dw {
                let (fx, fy) = (centre(x, sw, dw), centre(y, sh, dh));
                let g = got[y * dw + x] as f64 * 255.0;
                let inner =
                    fx >= 0.0 && fy >= 0.0 && fx <= (sw - 1) as f64 && fy <= (sh - 1) as f64;
                let difference = (g - want[y * dw + x]).abs();
                if inner {
                    interior = interior.max(difference);
                } else {
                    border = border.max(difference);
                }
                let (x0, y0) = (fx.floor().max(0.0) as usize, fy.floor().max(0.0) as usize);
                let near = |v: usize, n: usize| v.saturating_sub(1)..=(v + 2).min(n - 1);
                let (lo, hi) = near(y0, sh)
                    .flat_map(|yy| near(x0, sw).map(move |xx| src_u8[yy * sw + xx] as f64))
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
                        (l.min(v), h.max(v))
                    });
                outside = outside.max((lo - g).max(g - hi).max(0.0));
            }
        }
        eprintln!(
            "Linear f32 {sw}×{sh} → {dw}×{dh}: largest difference {interior:e} inside, {border:e} in the border band (levels of 255; {outside:e} outside its neighbourhood's range)"
        );
        if interior > 1e-3 {
            explain_linear_resize(&got, src_u8, (sw, sh), (dw, dh));
        }
        assert!(interior <= 1.0, "interior {interior}");
        assert!(
            outside <= 1e-3,
            "border band {border}, outside the range by {outside}"
        );
        // Channels must agree.
        let mut gray = Image::<u8>::new(10, 10, 1)?;
        let e = npp.resize(src.view(), gray.view_mut(), Interpolation::Linear);
        assert!(matches!(e, Err(Error::InvalidArgument { .. })), "{e:?}");
        Ok(())
    });
}

#[test]
fn histogram_even_counts_exactly() {
    on_gpu("histogram", |_ctx| -> R {
        let (w, h) = (123, 77);
        let px = random_u8(14, w * h);
        let stream = Stream::null();
        let npp = Npp::new(&stream)?;
        let src = Image::from_host(w, h, 1, &px)?;
        for (bins, lower, upper) in [(16usize, 0i32, 256i32), (8, 64, 192), (256, 0, 256)] {
            let got = npp.histogram_even_host(src.view(), bins, lower, upper)?;
            let step = (upper - lower) / bins as i32;
            let mut want = vec![0i32; bins];
            for &v in &px {
                let v = v as i32;
                if (lower..upper).contains(&v) {
                    want[((v - lower) / step) as usize] += 1;
                }
            }
            assert_eq!(got, want, "{bins} bins over [{lower}, {upper})");
        }
        // Into a device block, and the argument checks.
        let mut hist = MemoryBlock::<i32>::alloc(4)?;
        npp.histogram_even(src.view(), &mut hist, 0, 256)?;
        hist.sync(chorus_driver::Direction::DeviceToHost)?;
        assert_eq!(hist.as_slice().iter().sum::<i32>(), (w * h) as i32);
        let e = npp.histogram_even(src.view(), &mut hist, 10, 10);
        assert!(matches!(e, Err(Error::InvalidArgument { .. })), "{e:?}");
        Ok(())
    });
}

#[test]
fn views_over_memory_blocks_are_checked() {
    on_gpu("views", |_ctx| -> R {
        let mut block = MemoryBlock::<u8>::alloc(100)?;
        let shape = ImageShape {
            width: 10,
            height: 10,
            channels: 1,
            pitch: 10,
        };
        assert!(ImageViewMut::new(block.as_device_slice_mut()?, shape).is_ok());
        let tall = ImageShape {
            height: 11,
            ..shape
        };
        let e = ImageViewMut::new(block.as_device_slice_mut()?, tall);
        assert!(matches!(e, Err(Error::InvalidArgument { .. })), "{e:?}");
        // An NPP call on a user's block with its own pitch.
        let ones = MemoryBlock::from_slice(&[1u8; 100])?;
        let mut ones = ones;
        ones.sync(chorus_driver::Direction::HostToDevice)?;
        let stream = Stream::null();
        let npp = Npp::new(&stream)?;
        let view = ImageView::new(ones.as_device_slice()?, shape)?;
        let out = ImageViewMut::new(block.as_device_slice_mut()?, shape)?;
        npp.arith(ImageOp::Add, view, view, out, 0)?;
        chorus_driver::synchronize_context()?;
        block.sync(chorus_driver::Direction::DeviceToHost)?;
        assert!(block.as_slice().iter().all(|&v| v == 2));
        Ok(())
    });
}
