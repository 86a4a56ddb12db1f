//! The hgemm kernel (`kernels/hgemm.lisp`, the tensor-core macro library) on the CPU executor:
//! 128×256×160 (two blocks, five k-tiles through the three cp.async stages), with small-integer
//! inputs whose products and sums are exact, so the result must equal the host's product
//! rounded to bf16, entry for entry. On CUDA where a GPU is reachable, the same bytes.

use chorus::{Backend, Direction, MemoryBlock, bf16, with_backend};
use chorus_examples::tensor_gemm;

/// `len` small integers in −4..=4 as bf16, from `seed`.
fn small(len: usize, seed: usize) -> Vec<bf16> {
    (0..len)
        .map(|i| bf16::from_f32(((i * 7 + seed * 13 + i / 5) % 9) as f32 - 4.0))
        .collect()
}

fn hgemm(m: usize, n: usize, k: usize) -> chorus::Result<(Vec<bf16>, Vec<bf16>)> {
    let (a_host, b_host) = (small(m * k, 1), small(k * n, 2));
    let want: Vec<bf16> = (0..m * n)
        .map(|e| {
            let (sum, _) = tensor_gemm::reference_entry(&a_host, &b_host, (n, k), e / n, e % n);
            bf16::from_f64(sum)
        })
        .collect();
    let program = tensor_gemm::program()?;
    let a = MemoryBlock::from_slice(&a_host)?;
    let b = MemoryBlock::from_slice(&b_host)?;
    let mut c = MemoryBlock::<bf16>::alloc(m * n)?;
    tensor_gemm::launch(&program, &a, &b, &c, (m, n, k))?;
    c.sync(Direction::DeviceToHost)?;
    Ok((c.as_slice().to_vec(), want))
}

#[test]
fn hgemm_is_exact_on_the_cpu_executor() {
    let (got, want) =
        with_backend(Backend::Cpu, || hgemm(128, 256, 160)).expect("hgemm on the CPU");
    let first = got.iter().zip(&want).position(|(g, w)| g != w);
    assert_eq!(first, None, "first difference at {first:?}");
    assert!(
        want.iter().any(|w| w.to_f32().abs() > 64.0),
        "the test needs large sums"
    );
    if chorus::cuda::testing::gpu_available_or_skip("hgemm_is_exact_on_the_cpu_executor (CUDA)") {
        let (gpu, _) = with_backend(Backend::Cuda, || hgemm(128, 256, 160)).expect("hgemm on CUDA");
        assert_eq!(gpu, got, "CUDA and the CPU executor differ");
    }
}

#[test]
fn shapes_the_kernel_cannot_tile_are_refused() {
    assert_eq!(tensor_gemm::unsupported_shape(128, 256, 160), None);
    assert!(tensor_gemm::unsupported_shape(100, 128, 32).is_some());
    assert!(tensor_gemm::unsupported_shape(128, 128, 48).is_some());
    assert!(tensor_gemm::unsupported_shape(65536, 65536, 32).is_some());
}
