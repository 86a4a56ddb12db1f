//! cuSPARSE on the GPU against dense f64 references: SpMV (CSR, COO, CSC, transposed), SpMM,
//! SpGEMM, sparse to dense and dense to sparse; and the length checks.

mod common;

use chorus_cuda_libs::cusparse::{Dense, Format, Sparse, SparseMatrix};
use chorus_cuda_libs::{Error, Transpose};
use chorus_driver::MemoryBlock;
use chorus_driver::Stream;
use common::*;

/// A random `rows × cols` matrix with about `density` of its elements non-zero: (dense
/// row-major, CSR offsets, CSR columns, CSR values).
fn random_sparse(
    rng: &mut Lcg,
    rows: usize,
    cols: usize,
    density: f64,
) -> (Vec<f64>, Vec<i32>, Vec<i32>, Vec<f64>) {
    let mut dense = vec![0.0; rows * cols];
    let (mut offsets, mut indices, mut values) = (vec![0i32], vec![], vec![]);
    for i in 0..rows {
        for j in 0..cols {
            if (rng.next() + 1.0) / 2.0 < density {
                let v = rng.next();
                dense[i * cols + j] = v;
                indices.push(j as i32);
                values.push(v);
            }
        }
        offsets.push(indices.len() as i32);
    }
    (dense, offsets, indices, values)
}

fn dense_mv(trans: bool, rows: usize, cols: usize, a: &[f64], x: &[f64]) -> Vec<f64> {
    if trans {
        (0..cols)
            .map(|j| (0..rows).map(|i| a[i * cols + j] * x[i]).sum())
            .collect()
    } else {
        (0..rows)
            .map(|i| (0..cols).map(|j| a[i * cols + j] * x[j]).sum())
            .collect()
    }
}

#[test]
fn spmv_in_every_format() {
    on_gpu("spmv_in_every_format", |_| {
        let stream = Stream::new()?;
        let sparse = Sparse::new(&stream)?;
        let mut rng = Lcg::new(30);
        let (rows, cols) = (30, 20);
        let (dense, offsets, indices, values) = random_sparse(&mut rng, rows, cols, 0.2);
        let (d_off, d_idx, d_val) = (upload(&offsets), upload(&indices), upload(&values));
        let csr = SparseMatrix::csr(rows, cols, &d_off, &d_idx, &d_val)?;
        assert_eq!(
            (csr.format(), csr.shape(), csr.nnz()),
            (Format::Csr, (rows, cols), values.len())
        );
        let x = rng.vec(rows.max(cols));
        for trans in [Transpose::No, Transpose::Yes] {
            let (out, inn) = trans.apply(rows, cols);
            let y0 = rng.vec(out);
            let mut y = upload(&y0);
            sparse.spmv(trans, 2.0, &csr, &upload(&x[..inn]), 0.5, &mut y)?;
            let ax = dense_mv(trans == Transpose::Yes, rows, cols, &dense, &x[..inn]);
            let want: Vec<f64> = ax.iter().zip(&y0).map(|(a, y)| 2.0 * a + 0.5 * y).collect();
            assert!(rel_err(download(&mut y), &want) < 1e-13, "CSR {trans:?}");
        }
        // COO (row indices expanded from the offsets) and CSC (the transpose's CSR), in f32.
        let row_idx: Vec<i32> = (0..rows)
            .flat_map(|i| std::iter::repeat_n(i as i32, (offsets[i + 1] - offsets[i]) as usize))
            .collect();
        let (d_rows, d_val32) = (upload(&row_idx), upload(&f32s(&values)));
        let coo = SparseMatrix::coo(rows, cols, &d_rows, &d_idx, &d_val32)?;
        let mut y = upload(&vec![0.0f32; rows]);
        sparse.spmv(
            Transpose::No,
            1.0f32,
            &coo,
            &upload(&f32s(&x[..cols])),
            0.0,
            &mut y,
        )?;
        let want = dense_mv(false, rows, cols, &dense, &x[..cols]);
        assert!(
            rel_err(download(&mut y).into_iter().map(f64::from), &want) < 1e-5,
            "COO"
        );
        let mut t_off = vec![0i32];
        let (mut t_idx, mut t_val) = (vec![], vec![]);
        for j in 0..cols {
            for i in 0..rows {
                if dense[i * cols + j] != 0.0 {
                    t_idx.push(i as i32);
                    t_val.push(dense[i * cols + j] as f32);
                }
            }
            t_off.push(t_idx.len() as i32);
        }
        let (c_off, c_idx, c_val) = (upload(&t_off), upload(&t_idx), upload(&t_val));
        let csc = SparseMatrix::csc(rows, cols, &c_off, &c_idx, &c_val)?;
        let mut y = upload(&vec![0.0f32; rows]);
        sparse.spmv(
            Transpose::No,
            1.0f32,
            &csc,
            &upload(&f32s(&x[..cols])),
            0.0,
            &mut y,
        )?;
        assert!(
            rel_err(download(&mut y).into_iter().map(f64::from), &want) < 1e-5,
            "CSC"
        );
        // Too-short vectors and mismatched arrays are refused before the call.
        let mut short = upload(&vec![0.0f64; rows - 1]);
        let e = sparse
            .spmv(
                Transpose::No,
                1.0,
                &csr,
                &upload(&x[..cols]),
                0.0,
                &mut short,
            )
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument { reason, .. } if reason.contains("y needs 30")),
            "{e}"
        );
        let few = upload(&offsets[..rows]);
        assert!(SparseMatrix::csr(rows, cols, &few, &d_idx, &d_val).is_err());
        Ok(())
    });
}

#[test]
fn spmm_spgemm_and_conversions() {
    on_gpu("spmm_spgemm_and_conversions", |_| {
        let stream = Stream::null();
        let sparse = Sparse::new(&stream)?;
        let mut rng = Lcg::new(31);
        let (m, k, n) = (25, 18, 7);
        let (a_dense, a_off, a_idx, a_val) = random_sparse(&mut rng, m, k, 0.3);
        let (d_off, d_idx, d_val) = (upload(&a_off), upload(&a_idx), upload(&a_val));
        let a = SparseMatrix::csr(m, k, &d_off, &d_idx, &d_val)?;
        // SpMM with row-major B (k × n) and C (m × n).
        let b = rng.vec(k * n);
        let mut c = upload(&vec![0.0f64; m * n]);
        sparse.spmm(
            Transpose::No,
            Transpose::No,
            1.0,
            &a,
            &upload(&b),
            Dense::row_major(k, n),
            0.0,
            &mut c,
            Dense::row_major(m, n),
        )?;
        let got = download(&mut c);
        for i in 0..m {
            for j in 0..n {
                let want: f64 = (0..k).map(|p| a_dense[i * k + p] * b[p * n + j]).sum();
                assert!((got[i * n + j] - want).abs() < 1e-13, "SpMM ({i},{j})");
            }
        }
        // SpGEMM: A (m × k) · B (k × n), both sparse.
        let (b_dense, b_off, b_idx, b_val) = random_sparse(&mut rng, k, n, 0.4);
        let (e_off, e_idx, e_val) = (upload(&b_off), upload(&b_idx), upload(&b_val));
        let bs = SparseMatrix::csr(k, n, &e_off, &e_idx, &e_val)?;
        let product = sparse.spgemm(&a, &bs)?;
        assert_eq!(product.shape(), (m, n));
        let mut dense_c = upload(&vec![0.0f64; m * n]);
        sparse.sparse_to_dense(&product.matrix()?, &mut dense_c, Dense::row_major(m, n))?;
        let got = download(&mut dense_c);
        for i in 0..m {
            for j in 0..n {
                let want: f64 = (0..k)
                    .map(|p| a_dense[i * k + p] * b_dense[p * n + j])
                    .sum();
                assert!((got[i * n + j] - want).abs() < 1e-13, "SpGEMM ({i},{j})");
            }
        }
        // Sparse to dense and back.
        let mut back = upload(&vec![0.0f64; m * k]);
        sparse.sparse_to_dense(&a, &mut back, Dense::row_major(m, k))?;
        assert_eq!(download(&mut back), a_dense);
        let csr = sparse.dense_to_csr(&upload(&a_dense), Dense::row_major(m, k))?;
        let (off, idx, val) = csr.to_host()?;
        assert_eq!((off, idx, val), (a_off, a_idx, a_val));
        let mut wrong = MemoryBlock::<f64>::alloc(m * k)?;
        let e = sparse
            .sparse_to_dense(&a, &mut wrong, Dense::row_major(k, m))
            .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        Ok(())
    });
}
