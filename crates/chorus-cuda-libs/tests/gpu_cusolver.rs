//! cuSOLVER on the GPU, checked by residuals computed on the host in f64: ‖A·x − b‖, ‖Q·R − A‖,
//! ‖QᵀQ − I‖, ‖A·v − λ·v‖, ‖U·Σ·Vᵀ − A‖ (relative, f64 1e-10, f32 1e-4); and the errors.

mod common;

use chorus_cuda_libs::cusolver::{Solver, SvdJob};
use chorus_cuda_libs::{Error, Fill, Transpose};
use chorus_driver::{MemoryBlock, Stream};
use common::*;

fn spd(rng: &mut Lcg, n: usize) -> Vec<f64> {
    let m = rng.vec(n * n);
    let mut a = matmul(true, false, n, n, n, &m, n, &m, n);
    for i in 0..n {
        a[i + i * n] += n as f64;
    }
    a
}

#[test]
fn lu_solves_and_finds_the_zero_pivot() {
    on_gpu("lu_solves_and_finds_the_zero_pivot", |_| {
        let stream = Stream::new()?;
        let solver = Solver::new(&stream)?;
        let mut rng = Lcg::new(20);
        let n = 50;
        let a = rng.vec(n * n);
        let b = rng.vec(n * 2);
        let mut lu = upload(&a);
        let mut ipiv = MemoryBlock::<i32>::alloc(n)?;
        solver.getrf(n, n, &mut lu, n, &mut ipiv)?;
        let mut x = upload(&b);
        solver.getrs(Transpose::No, n, 2, &lu, n, &ipiv, &mut x, n)?;
        let x = download(&mut x);
        assert!(
            rel_err(matmul(false, false, n, 2, n, &a, n, &x, n), &b) < 1e-10,
            "A·x = b"
        );
        // f32, transposed solve.
        let mut lu = upload(&f32s(&a));
        solver.getrf(n, n, &mut lu, n, &mut ipiv)?;
        let mut x = upload(&f32s(&b[..n]));
        solver.getrs(Transpose::Yes, n, 1, &lu, n, &ipiv, &mut x, n)?;
        let x: Vec<f64> = download(&mut x).into_iter().map(f64::from).collect();
        assert!(
            rel_err(matmul(true, false, n, 1, n, &a, n, &x, n), &b[..n]) < 1e-3,
            "Aᵀ·x = b"
        );
        // diag(1, 1, 0): U(3,3) is zero.
        let mut singular = upload(&[1.0f64, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
        let e = solver.getrf(3, 3, &mut singular, 3, &mut ipiv).unwrap_err();
        match &e {
            Error::Numerical { call, info, reason } => {
                assert_eq!((*call, *info), ("getrf", 3));
                assert!(
                    reason.contains("U(3,3)") && reason.contains("singular"),
                    "{reason}"
                );
            }
            other => panic!("expected a singular matrix, got {other}"),
        }
        // A leading dimension smaller than the rows.
        let mut a2 = upload(&a);
        let e = solver.getrf(n, n, &mut a2, n - 1, &mut ipiv).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        let mut short = MemoryBlock::<i32>::alloc(n - 1)?;
        let e = solver.getrf(n, n, &mut a2, n, &mut short).unwrap_err();
        assert!(e.to_string().contains("ipiv"), "{e}");
        Ok(())
    });
}

#[test]
fn cholesky_solves_and_names_the_failing_minor() {
    on_gpu("cholesky_solves_and_names_the_failing_minor", |_| {
        let stream = Stream::null();
        let solver = Solver::new(&stream)?;
        let mut rng = Lcg::new(21);
        let n = 40;
        let a = spd(&mut rng, n);
        let b = rng.vec(n * 3);
        for uplo in [Fill::Lower, Fill::Upper] {
            let mut l = upload(&a);
            solver.potrf(uplo, n, &mut l, n)?;
            let mut x = upload(&b);
            solver.potrs(uplo, n, 3, &l, n, &mut x, n)?;
            let x = download(&mut x);
            assert!(
                rel_err(matmul(false, false, n, 3, n, &a, n, &x, n), &b) < 1e-10,
                "{uplo:?}"
            );
        }
        let mut indefinite = upload(&[1.0f32, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 1.0]);
        let e = solver
            .potrf(Fill::Lower, 3, &mut indefinite, 3)
            .unwrap_err();
        match &e {
            Error::Numerical { call, info, reason } => {
                assert_eq!((*call, *info), ("potrf", 2));
                assert!(
                    reason.contains("order 2") && reason.contains("not positive definite"),
                    "{reason}"
                );
            }
            other => panic!("expected a non-positive-definite matrix, got {other}"),
        }
        Ok(())
    });
}

#[test]
fn qr_eigen_and_svd_reconstruct_their_matrices() {
    on_gpu("qr_eigen_and_svd_reconstruct_their_matrices", |_| {
        let stream = Stream::null();
        let solver = Solver::new(&stream)?;
        let mut rng = Lcg::new(22);
        // QR of 20 × 8.
        let (m, n) = (20, 8);
        let a = rng.vec(m * n);
        let mut qr = upload(&a);
        let mut tau = MemoryBlock::<f64>::alloc(n)?;
        solver.geqrf(m, n, &mut qr, m, &mut tau)?;
        let factored = download(&mut qr);
        let mut r = vec![0.0; n * n];
        for j in 0..n {
            for i in 0..=j {
                r[i + j * n] = factored[i + j * m];
            }
        }
        solver.orgqr(m, n, n, &mut qr, m, &tau)?;
        let q = download(&mut qr);
        assert!(
            rel_err(matmul(false, false, m, n, n, &q, m, &r, n), &a) < 1e-12,
            "Q·R = A"
        );
        let qtq = matmul(true, false, n, n, m, &q, m, &q, m);
        let eye: Vec<f64> = (0..n * n)
            .map(|i| if i % (n + 1) == 0 { 1.0 } else { 0.0 })
            .collect();
        assert!(rel_err(qtq, &eye) < 1e-12, "QᵀQ = I");
        // Symmetric eigen-decomposition of 16 × 16.
        let k = 16;
        let mut s = rng.vec(k * k);
        for j in 0..k {
            for i in 0..j {
                s[i + j * k] = s[j + i * k];
            }
        }
        let mut v = upload(&s);
        let mut w = MemoryBlock::<f64>::alloc(k)?;
        solver.syevd(true, Fill::Lower, k, &mut v, k, &mut w)?;
        let (v, w) = (download(&mut v), download(&mut w));
        assert!(w.windows(2).all(|p| p[0] <= p[1]), "ascending");
        let av = matmul(false, false, k, k, k, &s, k, &v, k);
        let lv: Vec<f64> = (0..k * k).map(|i| v[i] * w[i / k]).collect();
        assert!(rel_err(av, &lv) < 1e-10, "A·v = λ·v");
        // f32 values only.
        let mut v32 = upload(&f32s(&s));
        let mut w32 = MemoryBlock::<f32>::alloc(k)?;
        solver.syevd(false, Fill::Upper, k, &mut v32, k, &mut w32)?;
        let w32: Vec<f64> = download(&mut w32).into_iter().map(f64::from).collect();
        assert!(rel_err(w32, &w) < 1e-4, "f32 eigenvalues");
        // Thin SVD of 12 × 8.
        let (m, n) = (12, 8);
        let a = rng.vec(m * n);
        let mut work = upload(&a);
        let mut sv = MemoryBlock::<f64>::alloc(n)?;
        let mut u = MemoryBlock::<f64>::alloc(m * n)?;
        let mut vt = MemoryBlock::<f64>::alloc(n * n)?;
        solver.gesvd(
            SvdJob::Thin,
            m,
            n,
            &mut work,
            m,
            &mut sv,
            Some((&mut u, m)),
            Some((&mut vt, n)),
        )?;
        let (sv, u, vt) = (download(&mut sv), download(&mut u), download(&mut vt));
        assert!(
            sv.windows(2).all(|p| p[0] >= p[1]) && sv[n - 1] >= 0.0,
            "descending, non-negative"
        );
        let us: Vec<f64> = (0..m * n).map(|i| u[i] * sv[i / m]).collect();
        assert!(
            rel_err(matmul(false, false, m, n, n, &us, m, &vt, n), &a) < 1e-10,
            "U·Σ·Vᵀ = A"
        );
        let mut work = upload(&a);
        let mut values = MemoryBlock::<f64>::alloc(n)?;
        solver.gesvd(
            SvdJob::ValuesOnly,
            m,
            n,
            &mut work,
            m,
            &mut values,
            None,
            None,
        )?;
        assert!(rel_err(download(&mut values), &sv) < 1e-12, "values only");
        let mut wide = upload(&a);
        let e = solver
            .gesvd(
                SvdJob::ValuesOnly,
                n,
                m,
                &mut wide,
                n,
                &mut values,
                None,
                None,
            )
            .unwrap_err();
        assert!(e.to_string().contains("m ≥ n"), "{e}");
        Ok(())
    });
}
