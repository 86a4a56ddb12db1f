//! cuFFT on the GPU against a naive f64 DFT. Tolerances relative to the largest output: f32
//! 1e-4, f64 1e-11.

mod common;

use chorus_cuda_libs::cufft::{
    Direction, Embedding, FftKind, Plan, PlanCache, PlanShape, Precision,
};
use chorus_cuda_libs::{C32, C64, Complex, Error};
use chorus_driver::{MemoryBlock, Stream};
use common::*;

/// The unnormalised DFT of `x` over `dims` (row-major, last fastest), `sign` −1 forward.
fn dft(x: &[C64], dims: &[usize], sign: f64) -> Vec<C64> {
    let mut data = x.to_vec();
    let total: usize = dims.iter().product();
    let mut inner = total;
    for &n in dims {
        inner /= n;
        let outer = total / (n * inner);
        let mut out = data.clone();
        for o in 0..outer {
            for i in 0..inner {
                for k in 0..n {
                    let mut s = Complex::new(0.0, 0.0);
                    for j in 0..n {
                        let angle =
                            sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                        let w = Complex::new(angle.cos(), angle.sin());
                        s = cadd(s, cmul(data[(o * n + j) * inner + i], w));
                    }
                    out[(o * n + k) * inner + i] = s;
                }
            }
        }
        data = out;
    }
    data
}

fn to32(v: &[C64]) -> Vec<C32> {
    v.iter()
        .map(|c| Complex::new(c.re as f32, c.im as f32))
        .collect()
}

fn from32(v: &[C32]) -> Vec<C64> {
    v.iter()
        .map(|c| Complex::new(c.re as f64, c.im as f64))
        .collect()
}

#[test]
fn c2c_in_one_two_and_three_dimensions() {
    on_gpu("c2c_in_one_two_and_three_dimensions", |_| {
        let stream = Stream::new()?;
        let mut rng = Lcg::new(10);
        // 1-D, f32, batch 3, forward then inverse.
        let (n, batch) = (1000, 3);
        let x = rng.complex(n * batch);
        let mut plan = Plan::new(
            PlanShape::new(&[n], FftKind::C2C, Precision::Single, batch),
            &stream,
        )?;
        let input = MemoryBlock::from_slice(&to32(&x))?;
        let mut input = input;
        input.sync(chorus_driver::Direction::HostToDevice)?;
        let mut output = MemoryBlock::<C32>::alloc(n * batch)?;
        plan.c2c(&input, &mut output, Direction::Forward)?;
        let got = from32(&download(&mut output));
        for b in 0..batch {
            let want = dft(&x[b * n..(b + 1) * n], &[n], -1.0);
            let err = rel_err(flat(&got[b * n..(b + 1) * n]), &flat(&want));
            assert!(err < 1e-4, "1-D batch {b}: {err}");
        }
        plan.c2c_in_place(&mut output, Direction::Inverse)?;
        let back = from32(&download(&mut output));
        let scaled: Vec<C64> = x
            .iter()
            .map(|c| Complex::new(c.re * n as f64, c.im * n as f64))
            .collect();
        assert!(rel_err(flat(&back), &flat(&scaled)) < 1e-4, "round trip");
        // 2-D, f64.
        let dims = [8, 12];
        let x = rng.complex(96);
        let mut plan = Plan::new(
            PlanShape::new(&dims, FftKind::C2C, Precision::Double, 1),
            &stream,
        )?;
        let mut out = MemoryBlock::<C64>::alloc(96)?;
        plan.c2c(&upload(&x), &mut out, Direction::Forward)?;
        assert!(
            rel_err(flat(&download(&mut out)), &flat(&dft(&x, &dims, -1.0))) < 1e-11,
            "2-D"
        );
        // 3-D, f32, inverse.
        let dims = [4, 6, 8];
        let x = rng.complex(192);
        let mut plan = Plan::new(
            PlanShape::new(&dims, FftKind::C2C, Precision::Single, 1),
            &stream,
        )?;
        let mut out = MemoryBlock::<C32>::alloc(192)?;
        plan.c2c(&upload(&to32(&x)), &mut out, Direction::Inverse)?;
        assert!(
            rel_err(
                flat(&from32(&download(&mut out))),
                &flat(&dft(&x, &dims, 1.0))
            ) < 1e-4,
            "3-D"
        );
        Ok(())
    });
}

#[test]
fn real_transforms_and_advanced_layouts() {
    on_gpu("real_transforms_and_advanced_layouts", |_| {
        let stream = Stream::null();
        let mut rng = Lcg::new(11);
        // R2C f32, n = 64, batch 2; then C2R back (× n).
        let (n, batch) = (64, 2);
        let x = rng.vec(n * batch);
        let mut r2c = Plan::new(
            PlanShape::new(&[n], FftKind::R2C, Precision::Single, batch),
            &stream,
        )?;
        let mut spectrum = MemoryBlock::<C32>::alloc((n / 2 + 1) * batch)?;
        r2c.r2c(&upload(&f32s(&x)), &mut spectrum)?;
        let got = from32(&download(&mut spectrum));
        for b in 0..batch {
            let xc: Vec<C64> = x[b * n..(b + 1) * n]
                .iter()
                .map(|&v| Complex::new(v, 0.0))
                .collect();
            let want = dft(&xc, &[n], -1.0);
            let h = n / 2 + 1;
            assert!(
                rel_err(flat(&got[b * h..(b + 1) * h]), &flat(&want[..h])) < 1e-4,
                "R2C batch {b}"
            );
        }
        let mut c2r = Plan::new(
            PlanShape::new(&[n], FftKind::C2R, Precision::Single, batch),
            &stream,
        )?;
        let mut real = MemoryBlock::<f32>::alloc(n * batch)?;
        c2r.c2r(&mut spectrum, &mut real)?;
        let back: Vec<f64> = download(&mut real)
            .iter()
            .map(|&v| v as f64 / n as f64)
            .collect();
        assert!(rel_err(back, &x) < 1e-5, "C2R round trip");
        // D2Z in 2-D (6 × 10 → 6 × 6).
        let dims = [6, 10];
        let x = rng.vec(60);
        let mut plan = Plan::new(
            PlanShape::new(&dims, FftKind::R2C, Precision::Double, 1),
            &stream,
        )?;
        let mut out = MemoryBlock::<C64>::alloc(36)?;
        plan.r2c(&upload(&x), &mut out)?;
        let got = download(&mut out);
        let want = dft(
            &x.iter().map(|&v| Complex::new(v, 0.0)).collect::<Vec<_>>(),
            &dims,
            -1.0,
        );
        for r in 0..6 {
            let row_want: Vec<C64> = want[r * 10..r * 10 + 6].to_vec();
            assert!(
                rel_err(flat(&got[r * 6..r * 6 + 6]), &flat(&row_want)) < 1e-11,
                "D2Z row {r}"
            );
        }
        // Advanced layout: 2 transforms of 16 points read with stride 2 (interleaved), written
        // contiguously.
        let x = rng.complex(64);
        let shape = PlanShape::new(&[16], FftKind::C2C, Precision::Double, 2).with_layouts(
            Embedding {
                embed: vec![16],
                stride: 2,
                dist: 1,
            },
            Embedding {
                embed: vec![16],
                stride: 1,
                dist: 16,
            },
        );
        let mut plan = Plan::new(shape, &stream)?;
        assert_eq!(plan.input_len(), 32);
        let mut out = MemoryBlock::<C64>::alloc(32)?;
        plan.c2c(&upload(&x), &mut out, Direction::Forward)?;
        let got = download(&mut out);
        for b in 0..2 {
            let signal: Vec<C64> = (0..16).map(|j| x[b + 2 * j]).collect();
            assert!(
                rel_err(
                    flat(&got[b * 16..(b + 1) * 16]),
                    &flat(&dft(&signal, &[16], -1.0))
                ) < 1e-11,
                "strided batch {b}"
            );
        }
        Ok(())
    });
}

#[test]
fn the_plan_cache_plans_each_shape_once_and_mistakes_are_refused() {
    on_gpu(
        "the_plan_cache_plans_each_shape_once_and_mistakes_are_refused",
        |_| {
            let stream = Stream::null();
            let mut cache = PlanCache::new(&stream);
            let shape = PlanShape::new(&[256], FftKind::C2C, Precision::Single, 4);
            let x = upload(&vec![C32::new(1.0, 0.0); 1024]);
            let mut y = MemoryBlock::<C32>::alloc(1024)?;
            for _ in 0..3 {
                cache.plan(&shape)?.c2c(&x, &mut y, Direction::Forward)?;
            }
            assert_eq!(cache.len(), 1);
            let got = download(&mut y);
            assert_eq!(got[0], C32::new(256.0, 0.0));
            assert!(got[1].re.abs() < 1e-4 && got[1].im.abs() < 1e-4);
            cache.plan(&PlanShape::new(&[128], FftKind::C2C, Precision::Single, 8))?;
            assert_eq!(cache.len(), 2);
            // A buffer too short, a type the plan is not for.
            let plan = cache.plan(&shape)?;
            let mut short = MemoryBlock::<C32>::alloc(1000)?;
            let e = plan.c2c(&x, &mut short, Direction::Forward).unwrap_err();
            assert!(
                matches!(&e, Error::InvalidArgument { reason, .. } if reason.contains("output has 1000")),
                "{e}"
            );
            let mut z = MemoryBlock::<C64>::alloc(1024)?;
            let e = plan
                .c2c(
                    &upload(&vec![C64::new(0.0, 0.0); 1024]),
                    &mut z,
                    Direction::Forward,
                )
                .unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
            let e = Plan::new(
                PlanShape::new(&[0], FftKind::C2C, Precision::Single, 1),
                &stream,
            )
            .unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
            Ok(())
        },
    );
}
