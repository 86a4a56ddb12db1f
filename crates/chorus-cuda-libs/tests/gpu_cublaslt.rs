//! cuBLASLt on the GPU: each epilogue against an f64 reference (f32 1e-4; 5e-3 with GELU, whose
//! approximation cuBLASLt chooses; bf16 2e-2), FP8 E4M3
//! with scale factors (exact small integers, so 1e-6), the heuristic cache, and the errors.

mod common;

use chorus_cuda_libs::cublaslt::{BlasLt, Epilogue, Fp8Scales, Matmul};
use chorus_cuda_libs::{Error, Fp8E4M3, Transpose};
use chorus_driver::{AsDeviceSlice, Stream};
use common::*;
use half::bf16;

fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

#[test]
fn every_epilogue_in_f32_and_bf16() {
    on_gpu("every_epilogue_in_f32_and_bf16", |_| {
        let stream = Stream::new()?;
        let lt = BlasLt::new(&stream)?;
        let mut rng = Lcg::new(40);
        let (m, n, k) = (64, 48, 32);
        let (a, b, bias) = (rng.vec(m * k), rng.vec(k * n), rng.vec(m));
        let ab = matmul(false, false, m, n, k, &a, m, &b, k);
        let (da, db, dbias) = (upload(&f32s(&a)), upload(&f32s(&b)), upload(&f32s(&bias)));
        for epilogue in [
            Epilogue::None,
            Epilogue::Relu,
            Epilogue::Gelu,
            Epilogue::Bias,
            Epilogue::ReluBias,
            Epilogue::GeluBias,
        ] {
            let shape = Matmul::new(Transpose::No, Transpose::No, m, n, k).epilogue(epilogue);
            let mut d = upload(&vec![0.0f32; m * n]);
            let bias_arg = epilogue
                .needs_bias()
                .then(|| dbias.as_device_slice())
                .transpose()?;
            lt.matmul(&shape, 1.0, &da, &db, 0.0, &mut d, bias_arg, None)?;
            let want: Vec<f64> = (0..m * n)
                .map(|idx| {
                    let x = ab[idx]
                        + if epilogue.needs_bias() {
                            bias[idx % m]
                        } else {
                            0.0
                        };
                    match epilogue {
                        Epilogue::Relu | Epilogue::ReluBias => x.max(0.0),
                        Epilogue::Gelu | Epilogue::GeluBias => gelu(x),
                        _ => x,
                    }
                })
                .collect();
            let err = rel_err(download(&mut d).into_iter().map(f64::from), &want);
            let tolerance = if matches!(epilogue, Epilogue::Gelu | Epilogue::GeluBias) {
                5e-3
            } else {
                1e-4
            };
            assert!(err < tolerance, "{epilogue:?}: {err}");
        }
        assert_eq!(lt.prepared_count(), 6);
        // The same shape again: no new heuristic query.
        let shape = Matmul::new(Transpose::No, Transpose::No, m, n, k);
        let mut d = upload(&vec![0.0f32; m * n]);
        lt.matmul(&shape, 1.0, &da, &db, 0.0, &mut d, None, None)?;
        assert_eq!(lt.prepared_count(), 6);
        // bf16 inputs and output, with a bf16 bias; transposed A.
        let to_bf = |v: &[f64]| v.iter().map(|&x| bf16::from_f64(x)).collect::<Vec<_>>();
        let at: Vec<f64> = (0..k * m).map(|i| a[(i / k) + (i % k) * m]).collect(); // Aᵀ stored k × m
        let shape = Matmul::new(Transpose::Yes, Transpose::No, m, n, k).epilogue(Epilogue::Bias);
        let mut d = upload(&vec![bf16::ZERO; m * n]);
        let dbias16 = upload(&to_bf(&bias));
        lt.matmul(
            &shape,
            1.0,
            &upload(&to_bf(&at)),
            &upload(&to_bf(&b)),
            0.0,
            &mut d,
            Some(dbias16.as_device_slice()?),
            None,
        )?;
        let want: Vec<f64> = (0..m * n).map(|idx| ab[idx] + bias[idx % m]).collect();
        let err = rel_err(download(&mut d).into_iter().map(|v| v.to_f64()), &want);
        assert!(err < 2e-2, "bf16: {err}");
        Ok(())
    });
}

#[test]
fn fp8_with_scale_factors() {
    on_gpu("fp8_with_scale_factors", |ctx| {
        let (major, minor) = ctx.compute_capability()?;
        let stream = Stream::null();
        let lt = BlasLt::new(&stream)?;
        let (m, n, k) = (64, 64, 64);
        // Small integers are exact in E4M3; A is given transposed (k × m), as FP8 needs.
        let at: Vec<f64> = (0..k * m).map(|i| ((i * 7) % 9) as f64 - 4.0).collect();
        let b: Vec<f64> = (0..k * n).map(|i| ((i * 5) % 7) as f64 - 3.0).collect();
        let fp8 = |v: &[f64]| {
            v.iter()
                .map(|&x| Fp8E4M3::from_f32(x as f32))
                .collect::<Vec<_>>()
        };
        let (da, db) = (upload(&fp8(&at)), upload(&fp8(&b)));
        let (sa, sb) = (upload(&[2.0f32]), upload(&[0.25f32]));
        let scales = Fp8Scales {
            a: sa.as_device_slice()?,
            b: sb.as_device_slice()?,
        };
        let shape = Matmul::new(Transpose::Yes, Transpose::No, m, n, k);
        let mut d = upload(&vec![0.0f32; m * n]);
        let result = lt.matmul(&shape, 1.0, &da, &db, 0.0, &mut d, None, Some(scales));
        if (major, minor) < (8, 9) {
            assert!(
                matches!(result, Err(Error::Unsupported { .. })),
                "{result:?}"
            );
            return Ok(());
        }
        result?;
        let want: Vec<f64> = matmul(true, false, m, n, k, &at, k, &b, k)
            .iter()
            .map(|v| v * 0.5)
            .collect();
        let err = rel_err(download(&mut d).into_iter().map(f64::from), &want);
        assert!(err < 1e-6, "FP8: {err}");
        // FP8 needs the TN layout and scales.
        let nn = Matmul::new(Transpose::No, Transpose::No, m, n, k);
        assert!(matches!(
            lt.matmul(&nn, 1.0, &da, &db, 0.0, &mut d, None, Some(scales)),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            lt.matmul(&shape, 1.0, &da, &db, 0.0, &mut d, None, None),
            Err(Error::InvalidArgument { .. })
        ));
        Ok(())
    });
}

#[test]
fn missing_bias_and_short_buffers_are_refused() {
    on_gpu("missing_bias_and_short_buffers_are_refused", |_| {
        let stream = Stream::null();
        let lt = BlasLt::new(&stream)?;
        let a = upload(&[1.0f32; 16]);
        let mut d = upload(&[0.0f32; 16]);
        let shape = Matmul::new(Transpose::No, Transpose::No, 4, 4, 4).epilogue(Epilogue::Bias);
        let e = lt
            .matmul(&shape, 1.0, &a, &a, 0.0, &mut d, None, None)
            .unwrap_err();
        assert!(e.to_string().contains("needs a bias"), "{e}");
        let short = upload(&[1.0f32; 15]);
        let plain = Matmul::new(Transpose::No, Transpose::No, 4, 4, 4);
        let e = lt
            .matmul(&plain, 1.0, &short, &a, 0.0, &mut d, None, None)
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        Ok(())
    });
}
