//! cuBLAS on the GPU against f64 host references. Tolerances (relative to the largest
//! reference value): f32 1e-5·√k-ish (1e-4), f64 1e-12, TF32 and f16/bf16 inputs 1e-2.

mod common;

use chorus_cuda_libs::cublas::{Blas, MathMode};
use chorus_cuda_libs::{C32, C64, Complex, Diagonal, Error, Fill, Side, Transpose};
use chorus_driver::{AsDeviceSlice, Context, Stream};
use common::*;
use half::{bf16, f16};

#[test]
fn level1_real() {
    on_gpu("level1_real", |_| {
        let stream = Stream::new()?;
        let blas = Blas::new(&stream)?;
        let mut rng = Lcg::new(1);
        let (x, y) = (rng.vec(1000), rng.vec(1000));
        // f64, unit increments.
        let dx = upload(&x);
        let mut dy = upload(&y);
        blas.axpy(1000, 2.5, &dx, 1, &mut dy, 1)?;
        let want: Vec<f64> = x.iter().zip(&y).map(|(a, b)| 2.5 * a + b).collect();
        assert!(rel_err(download(&mut dy), &want) < 1e-14);
        let dot = blas.dot(1000, &dx, 1, &dx, 1)?;
        let want_dot: f64 = x.iter().map(|a| a * a).sum();
        assert!((dot - want_dot).abs() < 1e-12 * want_dot);
        assert!((blas.nrm2(1000, &dx, 1)? - want_dot.sqrt()).abs() < 1e-12);
        let asum: f64 = x.iter().map(|a| a.abs()).sum();
        assert!((blas.asum(1000, &dx, 1)? - asum).abs() < 1e-10);
        let imax = x
            .iter()
            .enumerate()
            .fold(0, |b, (i, v)| if v.abs() > x[b].abs() { i } else { b });
        assert_eq!(blas.iamax(1000, &dx, 1)?, Some(imax));
        // f32 with increments: every other element.
        let xs = f32s(&x);
        let mut dxs = upload(&xs);
        blas.scal(500, -2.0f32, &mut dxs, 2)?;
        let got = download(&mut dxs);
        for i in 0..1000 {
            let want = if i % 2 == 0 { -2.0 * xs[i] } else { xs[i] };
            assert_eq!(got[i], want, "scal {i}");
        }
        let mut a = upload(&f32s(&x[..10]));
        let mut b = upload(&f32s(&y[..10]));
        blas.swap(10, &mut a, 1, &mut b, 1)?;
        assert_eq!(download(&mut a), f32s(&y[..10]));
        assert_eq!(download(&mut b), f32s(&x[..10]));
        blas.copy(5, &a, 2, &mut b, 1)?;
        let got = download(&mut b);
        for i in 0..5 {
            assert_eq!(got[i], y[2 * i] as f32);
        }
        Ok(())
    });
}

#[test]
fn level1_complex() {
    on_gpu("level1_complex", |_| {
        let stream = Stream::null();
        let blas = Blas::new(&stream)?;
        let mut rng = Lcg::new(2);
        let (x, y) = (rng.complex(300), rng.complex(300));
        let (dx, dy) = (upload(&x), upload(&y));
        let dotu = x
            .iter()
            .zip(&y)
            .fold(Complex::new(0.0, 0.0), |s, (a, b)| cadd(s, cmul(*a, *b)));
        let dotc = x.iter().zip(&y).fold(Complex::new(0.0, 0.0), |s, (a, b)| {
            cadd(s, cmul(conj(*a), *b))
        });
        let got = blas.dot(300, &dx, 1, &dy, 1)?;
        assert!(
            rel_err(flat(&[got]), &flat(&[dotu])) < 1e-12,
            "{got:?} {dotu:?}"
        );
        let got = blas.dotc(300, &dx, 1, &dy, 1)?;
        assert!(rel_err(flat(&[got]), &flat(&[dotc])) < 1e-12);
        let norm = x
            .iter()
            .map(|c| c.re * c.re + c.im * c.im)
            .sum::<f64>()
            .sqrt();
        assert!((blas.nrm2(300, &dx, 1)? - norm).abs() < 1e-12);
        // Single precision.
        let xs: Vec<C32> = x
            .iter()
            .map(|c| Complex::new(c.re as f32, c.im as f32))
            .collect();
        let ys: Vec<C32> = y
            .iter()
            .map(|c| Complex::new(c.re as f32, c.im as f32))
            .collect();
        let dxs = upload(&xs);
        let mut dys = upload(&ys);
        let alpha = C32::new(0.5, -1.0);
        blas.axpy(300, alpha, &dxs, 1, &mut dys, 1)?;
        let want: Vec<C64> = x
            .iter()
            .zip(&y)
            .map(|(a, b)| cadd(cmul(Complex::new(0.5, -1.0), *a), *b))
            .collect();
        let got: Vec<f64> = download(&mut dys)
            .iter()
            .flat_map(|c| [c.re as f64, c.im as f64])
            .collect();
        assert!(rel_err(got, &flat(&want)) < 1e-5);
        Ok(())
    });
}

#[test]
fn level2_gemv_and_ger() {
    on_gpu("level2_gemv_and_ger", |_| {
        let stream = Stream::null();
        let blas = Blas::new(&stream)?;
        let mut rng = Lcg::new(3);
        let (m, n, lda) = (37, 23, 40);
        let a = rng.vec(lda * n);
        let (x, y) = (rng.vec(m.max(n)), rng.vec(m.max(n)));
        let da = upload(&a);
        for trans in [Transpose::No, Transpose::Yes] {
            let (rows, cols) = trans.apply(m, n);
            let dx = upload(&x[..cols]);
            let mut dy = upload(&y[..rows]);
            blas.gemv(trans, m, n, 2.0, &da, lda, &dx, 1, 0.5, &mut dy, 1)?;
            let ax = matmul(
                trans == Transpose::Yes,
                false,
                rows,
                1,
                cols,
                &a,
                lda,
                &x[..cols],
                cols,
            );
            let want: Vec<f64> = (0..rows).map(|i| 2.0 * ax[i] + 0.5 * y[i]).collect();
            assert!(rel_err(download(&mut dy), &want) < 1e-13, "{trans:?}");
        }
        let mut da = upload(&a);
        let (dx, dy) = (upload(&x[..m]), upload(&y[..n]));
        blas.ger(m, n, -1.5, &dx, 1, &dy, 1, &mut da, lda)?;
        let got = download(&mut da);
        let mut want = a.clone();
        for j in 0..n {
            for i in 0..m {
                want[i + j * lda] += -1.5 * x[i] * y[j];
            }
        }
        assert!(rel_err(got, &want) < 1e-13);
        // gerc on complex: A += alpha·x·yᴴ.
        let (cx, cy, ca) = (rng.complex(4), rng.complex(3), rng.complex(12));
        let mut dca = upload(&ca);
        blas.gerc(
            4,
            3,
            C64::new(1.0, 0.0),
            &upload(&cx),
            1,
            &upload(&cy),
            1,
            &mut dca,
            4,
        )?;
        let got = download(&mut dca);
        let want: Vec<C64> = (0..12)
            .map(|idx| cadd(ca[idx], cmul(cx[idx % 4], conj(cy[idx / 4]))))
            .collect();
        assert!(rel_err(flat(&got), &flat(&want)) < 1e-13);
        Ok(())
    });
}

fn check_gemm<T: chorus_cuda_libs::cublas::BlasScalar>(
    blas: &Blas<'_>,
    to: impl Fn(f64) -> T,
    from: impl Fn(T) -> f64,
    tol: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = Lcg::new(4);
    let (m, n, k) = (45, 31, 64);
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let lda = if ta { k + 3 } else { m + 1 };
        let ldb = if tb { n + 2 } else { k };
        let a = rng.vec(lda * if ta { m } else { k });
        let b = rng.vec(ldb * if tb { k } else { n });
        let c0 = rng.vec(m * n);
        let da = upload(&a.iter().map(|&v| to(v)).collect::<Vec<T>>());
        let db = upload(&b.iter().map(|&v| to(v)).collect::<Vec<T>>());
        let mut dc = upload(&c0.iter().map(|&v| to(v)).collect::<Vec<T>>());
        let t = |f| if f { Transpose::Yes } else { Transpose::No };
        blas.gemm(
            t(ta),
            t(tb),
            m,
            n,
            k,
            to(1.5),
            &da,
            lda,
            &db,
            ldb,
            to(-0.5),
            &mut dc,
            m,
        )?;
        let ab = matmul(ta, tb, m, n, k, &a, lda, &b, ldb);
        let want: Vec<f64> = ab.iter().zip(&c0).map(|(p, c)| 1.5 * p - 0.5 * c).collect();
        let err = rel_err(download(&mut dc).into_iter().map(&from), &want);
        assert!(err < tol, "gemm {ta} {tb}: {err}");
    }
    Ok(())
}

#[test]
fn level3_gemm_every_type() {
    on_gpu("level3_gemm_every_type", |_| {
        let stream = Stream::new()?;
        let mut blas = Blas::new(&stream)?;
        check_gemm::<f32>(&blas, |v| v as f32, |v| v as f64, 1e-5)?;
        check_gemm::<f64>(&blas, |v| v, |v| v, 1e-13)?;
        // Complex types with a purely real value: the imaginary parts stay zero.
        check_gemm::<C32>(&blas, |v| C32::new(v as f32, 0.0), |v| v.re as f64, 1e-5)?;
        check_gemm::<C64>(&blas, |v| C64::new(v, 0.0), |v| v.re, 1e-13)?;
        blas.set_math_mode(MathMode::Tf32)?;
        check_gemm::<f32>(&blas, |v| v as f32, |v| v as f64, 1e-2)?;
        blas.set_math_mode(MathMode::Default)?;
        Ok(())
    });
}

#[test]
fn level3_gemm_row_major_batched_trsm_syrk_symm() {
    on_gpu("level3_gemm_row_major_batched_trsm_syrk_symm", |_| {
        let stream = Stream::null();
        let blas = Blas::new(&stream)?;
        let mut rng = Lcg::new(5);
        let (m, n, k) = (7, 5, 6);
        // Row-major: A m×k, B k×n, C m×n stored row by row.
        let (a, b) = (rng.vec(m * k), rng.vec(k * n));
        let mut dc = upload(&vec![0.0f64; m * n]);
        blas.gemm_row_major(
            Transpose::No,
            Transpose::No,
            m,
            n,
            k,
            1.0,
            &upload(&a),
            k,
            &upload(&b),
            n,
            0.0,
            &mut dc,
            n,
        )?;
        let got = download(&mut dc);
        for i in 0..m {
            for j in 0..n {
                let want: f64 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
                assert!((got[i * n + j] - want).abs() < 1e-13, "row-major ({i},{j})");
            }
        }
        // Strided batched: 3 GEMMs, A m×k, B k×n, C m×n packed back to back.
        let batch = 3;
        let (a, b) = (rng.vec(m * k * batch), rng.vec(k * n * batch));
        let mut dc = upload(&vec![0.0f64; m * n * batch]);
        blas.gemm_strided_batched(
            Transpose::No,
            Transpose::No,
            m,
            n,
            k,
            1.0,
            &upload(&a),
            m,
            m * k,
            &upload(&b),
            k,
            k * n,
            0.0,
            &mut dc,
            m,
            m * n,
            batch,
        )?;
        let got = download(&mut dc);
        for q in 0..batch {
            let want = matmul(
                false,
                false,
                m,
                n,
                k,
                &a[q * m * k..],
                m,
                &b[q * k * n..],
                k,
            );
            assert!(
                rel_err(got[q * m * n..(q + 1) * m * n].iter().copied(), &want) < 1e-13,
                "batch {q}"
            );
        }
        let short = upload(&vec![0.0f64; m * k * batch - 1]);
        let e = blas
            .gemm_strided_batched(
                Transpose::No,
                Transpose::No,
                m,
                n,
                k,
                1.0,
                &short,
                m,
                m * k,
                &upload(&b),
                k,
                k * n,
                0.0,
                &mut dc,
                m,
                m * n,
                batch,
            )
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        // Pointer-batched over separate blocks.
        let blocks_a: Vec<_> = (0..batch)
            .map(|q| upload(&a[q * m * k..(q + 1) * m * k]))
            .collect();
        let blocks_b: Vec<_> = (0..batch)
            .map(|q| upload(&b[q * k * n..(q + 1) * k * n]))
            .collect();
        let mut blocks_c: Vec<_> = (0..batch).map(|_| upload(&vec![0.0f64; m * n])).collect();
        blas.gemm_batched(
            Transpose::No,
            Transpose::No,
            m,
            n,
            k,
            1.0,
            &blocks_a,
            m,
            &blocks_b,
            k,
            0.0,
            &mut blocks_c,
            m,
        )?;
        for (q, c) in blocks_c.iter_mut().enumerate() {
            let want = matmul(
                false,
                false,
                m,
                n,
                k,
                &a[q * m * k..],
                m,
                &b[q * k * n..],
                k,
            );
            assert!(rel_err(download(c), &want) < 1e-13, "pointer batch {q}");
        }
        // trsm: lower-triangular L (m×m, well conditioned), solve L·X = 2·B.
        let mut l = vec![0.0f64; m * m];
        for j in 0..m {
            for i in j..m {
                l[i + j * m] = if i == j {
                    2.0 + rng.next().abs()
                } else {
                    0.3 * rng.next()
                };
            }
        }
        let bm = rng.vec(m * n);
        let mut dx = upload(&bm);
        blas.trsm(
            Side::Left,
            Fill::Lower,
            Transpose::No,
            Diagonal::NonUnit,
            m,
            n,
            2.0,
            &upload(&l),
            m,
            &mut dx,
            m,
        )?;
        let x = download(&mut dx);
        let lx = matmul(false, false, m, n, m, &l, m, &x, m);
        assert!(rel_err(lx, &bm.iter().map(|v| 2.0 * v).collect::<Vec<_>>()) < 1e-12);
        // syrk: C = A·Aᵀ (n×n from n×k), lower triangle.
        let a = rng.vec(n * k);
        let mut dc = upload(&vec![0.0f64; n * n]);
        blas.syrk(
            Fill::Lower,
            Transpose::No,
            n,
            k,
            1.0,
            &upload(&a),
            n,
            0.0,
            &mut dc,
            n,
        )?;
        let got = download(&mut dc);
        let want = matmul(false, true, n, n, k, &a, n, &a, n);
        for j in 0..n {
            for i in j..n {
                assert!(
                    (got[i + j * n] - want[i + j * n]).abs() < 1e-13,
                    "syrk ({i},{j})"
                );
            }
        }
        // symm: C = S·B with S symmetric m×m read from its upper triangle.
        let mut s = rng.vec(m * m);
        for j in 0..m {
            for i in 0..j {
                s[j + i * m] = s[i + j * m];
            }
        }
        let bm = rng.vec(m * n);
        let mut dc = upload(&vec![0.0f64; m * n]);
        blas.symm(
            Side::Left,
            Fill::Upper,
            m,
            n,
            1.0,
            &upload(&s),
            m,
            &upload(&bm),
            m,
            0.0,
            &mut dc,
            m,
        )?;
        assert!(
            rel_err(
                download(&mut dc),
                &matmul(false, false, m, n, m, &s, m, &bm, m)
            ) < 1e-13
        );
        Ok(())
    });
}

#[test]
fn gemm_ex_half_and_bfloat16_accumulate_in_f32() {
    on_gpu("gemm_ex_half_and_bfloat16_accumulate_in_f32", |_| {
        let stream = Stream::null();
        let blas = Blas::new(&stream)?;
        let mut rng = Lcg::new(6);
        let (m, n, k) = (64, 32, 128);
        let (a, b) = (rng.vec(m * k), rng.vec(k * n));
        // References from the rounded inputs, so only the accumulation and output differ.
        let ah: Vec<f16> = a.iter().map(|&v| f16::from_f64(v)).collect();
        let bh: Vec<f16> = b.iter().map(|&v| f16::from_f64(v)).collect();
        let want = matmul(
            false,
            false,
            m,
            n,
            k,
            &ah.iter().map(|v| v.to_f64()).collect::<Vec<_>>(),
            m,
            &bh.iter().map(|v| v.to_f64()).collect::<Vec<_>>(),
            k,
        );
        let mut c = upload(&vec![0.0f32; m * n]);
        blas.gemm_ex(
            Transpose::No,
            Transpose::No,
            m,
            n,
            k,
            1.0,
            &upload(&ah),
            m,
            &upload(&bh),
            k,
            0.0,
            &mut c,
            m,
        )?;
        let err = rel_err(download(&mut c).into_iter().map(f64::from), &want);
        assert!(err < 1e-5, "f16 → f32: {err}");
        let ab: Vec<bf16> = a.iter().map(|&v| bf16::from_f64(v)).collect();
        let bb: Vec<bf16> = b.iter().map(|&v| bf16::from_f64(v)).collect();
        let want = matmul(
            false,
            false,
            m,
            n,
            k,
            &ab.iter().map(|v| v.to_f64()).collect::<Vec<_>>(),
            m,
            &bb.iter().map(|v| v.to_f64()).collect::<Vec<_>>(),
            k,
        );
        let mut c = upload(&vec![bf16::ZERO; m * n]);
        blas.gemm_ex(
            Transpose::No,
            Transpose::No,
            m,
            n,
            k,
            1.0,
            &upload(&ab),
            m,
            &upload(&bb),
            k,
            0.0,
            &mut c,
            m,
        )?;
        let err = rel_err(download(&mut c).into_iter().map(|v| v.to_f64()), &want);
        assert!(err < 1e-2, "bf16 → bf16: {err}");
        Ok(())
    });
}

#[test]
fn bad_arguments_are_refused_before_the_call() {
    on_gpu("bad_arguments_are_refused_before_the_call", |_| {
        let stream = Stream::null();
        let blas = Blas::new(&stream)?;
        let a = upload(&[1.0f32; 12]);
        let b = upload(&[1.0f32; 12]);
        let mut c = upload(&[0.0f32; 16]);
        // Leading dimension smaller than the rows.
        let e = blas
            .gemm(
                Transpose::No,
                Transpose::No,
                4,
                4,
                3,
                1.0,
                &a,
                3,
                &b,
                3,
                0.0,
                &mut c,
                4,
            )
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument { reason, .. } if reason.contains("leading dimension of A = 3")),
            "{e}"
        );
        // A buffer too short for its matrix.
        let e = blas
            .gemm(
                Transpose::No,
                Transpose::No,
                4,
                4,
                4,
                1.0,
                &a,
                4,
                &b,
                4,
                0.0,
                &mut c,
                4,
            )
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument { reason, .. } if reason.contains("needs 16 elements, has 12")),
            "{e}"
        );
        // Mismatched vector lengths.
        let mut y = upload(&[0.0f32; 5]);
        let e = blas.axpy(12, 1.0, &a, 1, &mut y, 1).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument { reason, .. } if reason.contains("y has 12 elements")),
            "{e}"
        );
        let e = blas.axpy(3, 1.0, &a, 0, &mut y, 1).unwrap_err();
        assert!(e.to_string().contains("increment of x is 0"), "{e}");
        // Sub-slices are checked by their own length.
        let e = blas
            .dot(12, &a.as_device_slice()?.slice(0..6)?, 1, &b, 1)
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        assert_eq!(
            blas.dot(6, &a.as_device_slice()?.slice(6..12)?, 1, &b, 1)?,
            6.0
        );
        Ok(())
    });
}

#[test]
fn a_stream_of_another_context_is_refused() {
    on_gpu(
        "a_stream_of_another_context_is_refused",
        |first: &Context| {
            let foreign = Stream::new()?; // made in `first`, current now
            let second = Context::new(0)?; // current now
            let e = Blas::new(&foreign).unwrap_err();
            assert!(matches!(e, Error::StreamFromAnotherContext), "{e}");
            // The null stream belongs to every context; a stream of this one is fine.
            drop(Blas::new(&Stream::null())?);
            let own = Stream::new()?;
            let mut blas = Blas::new(&own)?;
            assert!(matches!(
                blas.set_stream(&foreign),
                Err(Error::StreamFromAnotherContext)
            ));
            drop(blas);
            drop(own);
            drop(second);
            first.make_current()?;
            Ok(())
        },
    );
}
