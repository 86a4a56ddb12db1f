//! The arithmetic of `kernels/hgemm-tma.lisp`'s consumer warps on the CPU executor: the TMA and
//! the mbarriers that feed them are Hopper-only, but their fragments (ldmatrix of A's and B's
//! K-major rows from the 128-byte swizzled layout the TMA writes, `tc-b-half`'s halves of each B
//! quad, the 32 mma.sync of a k16 step, the epilogue) run anywhere. A test kernel writes one
//! 128×256×64 slice into shared memory where the TMA's 128-byte swizzle would put it (the
//! built-in `swizzle-128b`, not the kernel's own `tc-swizzle`), then lets eight warps multiply
//! it with the kernel's macros in `consume-tile`'s order of fetches and register sets (B
//! K-major, as `hgemm-tma` reads it, and N-major in 64-column boxes, as `hgemm-tma-nn`); the
//! same after the cp.async producer's copies (`copy-slice-data`, `hgemm-ws-nn`) instead. With
//! small-integer inputs the result must equal the host's exact product rounded to BF16, entry
//! for entry. On CUDA where a GPU is reachable, the same bytes.

use chorus::lang::library::Library;
use chorus::{Arg, Backend, Direction, Launch, MemoryBlock, Program, bf16, with_backend};
use chorus_examples::workloads::{PRELUDE, kernels};

/// One slice of one block tile: M × N × K.
const M: usize = 128;
const N: usize = 256;
const K: usize = 64;

/// The test kernel `name`: A (M×K) row-major, B N×K or K×N, C (M×N) row-major BF16. `load`
/// fills the stage (A at `a-tiles`, B at `b-tiles`) as the producer would, `b_quad` names the
/// kernel's macro that reads B's quads.
fn slice_kernel(name: &str, load: &str, b_quad: &str) -> String {
    format!(
        r#"
(defkernel {name} (void ((a bfloat16*) (b bfloat16*) (c bfloat16*) (n int) (k int)))
  (with-dynamic-shared-memory ((raw bfloat16))
    (let* ((a-tiles (pointer (aref raw 0)))
           (b-tiles (pointer (aref raw (* 128 64))))
           (tid thread-idx-x))
      {load}
      (syncthreads)
      (with-consumer-warp ((/ tid 32) (mod tid 32) t)
       (let ((m0 0)
             (n0 0))
        (tc-with-accumulators (acc 4 8)
          (tc-with-fragment-sets (fa bq 4 4 0)
            (tma-fetch 0 0 0 {b_quad})
            (tma-fetch 0 1 1 {b_quad})
            (tma-mma 0)
            (tma-fetch 0 2 0 {b_quad})
            (tma-mma 1)
            (tma-fetch 0 3 1 {b_quad})
            (tma-mma 0)
            (tma-mma 1))
          (tc-for-each-accumulator (acc 4 8) tma-store)))))))
"#
    )
}

/// Where the TMA puts A, with its 128-byte swizzle (`swizzle-128b`, not the kernels' own
/// `tc-swizzle`), and B N×K (K-major, `hgemm-tma`): one box of 256 rows of 64 elements.
const TMA_K_MAJOR: &str = "(for (e tid (< e (* 128 64)) (+ e 256))
        (set (aref a-tiles (/ (swizzle-128b (* 2 e)) 2)) (aref a e)))
      (for (e tid (< e (* 256 64)) (+ e 256))
        (set (aref b-tiles (/ (swizzle-128b (* 2 e)) 2)) (aref b e)))";

/// The same with B K×N (N-major, `hgemm-tma-nn`): four boxes of 64 columns by 64 rows of K, one
/// after the other.
const TMA_N_MAJOR: &str = "(for (e tid (< e (* 128 64)) (+ e 256))
        (set (aref a-tiles (/ (swizzle-128b (* 2 e)) 2)) (aref a e)))
      (for (e tid (< e (* 256 64)) (+ e 256))
        (let* ((row (/ e 256)) (col (mod e 256)))
          (set (aref b-tiles (+ (* (/ col 64) 4096)
                                (/ (swizzle-128b (+ (* row 128) (* 2 (mod col 64)))) 2)))
               (aref b e))))";

/// The cp.async producer's copies (`copy-slice-data`, `hgemm-ws-nn`): threads 0–127 copy the
/// slice, B N×K or K×N, and wait for their copies.
fn cp_async_producer(n_major: bool) -> String {
    let flag = if n_major { "t" } else { "nil" };
    format!("(when (< tid 128) (copy-slice-data 0 0 0 0 {flag}))\n      (cp-async-wait-all)")
}

/// The macros of a Hopper kernel file without the kernels they define at its end (from its first
/// top-level `(define-…` call): those use the TMA, and the CPU executor refuses a program that
/// has them.
fn macros_only(file: &str) -> &str {
    let end = file
        .match_indices("\n(define-")
        .next()
        .map_or(file.len(), |(at, _)| at + 1);
    assert!(end < file.len(), "the file defines its kernels at its end");
    &file[..end]
}

/// `len` small integers in −4..=4 as bf16, from `seed`.
fn small(len: usize, seed: usize) -> Vec<bf16> {
    (0..len)
        .map(|i| bf16::from_f32(((i * 7 + seed * 13 + i / 5) % 9) as f32 - 4.0))
        .collect()
}

/// The slice multiplied by the test kernels on the current backend, each with the exact
/// product rounded to BF16: laid out as the TMA lays it out, B K-major (`hgemm-tma`), then
/// N-major (`hgemm-tma-nn`); then copied by the cp.async producer (`hgemm-ws-nn`), the same
/// two ways.
fn multiply_slice() -> chorus::Result<Vec<(Vec<bf16>, Vec<bf16>)>> {
    let mut text = String::from(PRELUDE);
    for (_, source) in [kernels::HGEMM_HOPPER, kernels::HGEMM_TMA] {
        text.push('\n');
        text.push_str(macros_only(source));
    }
    let kernels = [
        ("slice-k-major", TMA_K_MAJOR.to_string(), false),
        ("slice-n-major", TMA_N_MAJOR.to_string(), true),
        ("cp-async-k-major", cp_async_producer(false), false),
        ("cp-async-n-major", cp_async_producer(true), true),
    ];
    for (name, load, n_major) in &kernels {
        let b_quad = if *n_major {
            "tma-b-quad-n-major"
        } else {
            "tma-b-quad"
        };
        text.push_str(&slice_kernel(name, load, b_quad));
    }
    let program = Program::with_libraries(&[Library::TensorCore], text, "hgemm-tma+slice")?;
    let (a_host, b_host) = (small(M * K, 1), small(N * K, 2));
    let a = MemoryBlock::from_slice(&a_host)?;
    let b = MemoryBlock::from_slice(&b_host)?;
    let mut results = Vec::new();
    for (kernel, _, n_major) in kernels {
        let b_at = |kk: usize, j: usize| {
            let index = if n_major { kk * N + j } else { j * K + kk };
            b_host[index].to_f32()
        };
        let want = (0..M * N)
            .map(|e| {
                let (i, j) = (e / N, e % N);
                let sum: f64 = (0..K)
                    .map(|kk| f64::from(a_host[i * K + kk].to_f32() * b_at(kk, j)))
                    .sum();
                bf16::from_f64(sum)
            })
            .collect();
        let mut c = MemoryBlock::<bf16>::alloc(M * N)?;
        let launch = Launch::grid(1)
            .block(256)
            .shared_mem(((M + N) * K * 2) as u32);
        program.launch(
            kernel,
            &[
                a.as_arg(),
                b.as_arg(),
                c.as_arg(),
                Arg::value(N as i32),
                Arg::value(K as i32),
            ],
            launch,
        )?;
        c.sync(Direction::DeviceToHost)?;
        results.push((c.as_slice().to_vec(), want));
    }
    Ok(results)
}

#[test]
fn hgemm_tma_fragments_multiply_a_swizzled_slice_exactly() {
    let cpu = with_backend(Backend::Cpu, multiply_slice)
        .unwrap_or_else(|e| panic!("on the CPU executor: {e}"));
    let layouts = [
        "the TMA's layout, K-major B",
        "the TMA's layout, N-major B",
        "the cp.async producer, K-major B",
        "the cp.async producer, N-major B",
    ];
    assert_eq!(cpu.len(), layouts.len());
    for (layout, (got, want)) in layouts.iter().zip(&cpu) {
        let first = got.iter().zip(want).position(|(g, w)| g != w);
        assert_eq!(
            first,
            None,
            "{layout}: first difference at {first:?}: got {:?}, want {:?}",
            first.map(|i| got[i]),
            first.map(|i| want[i])
        );
        assert!(
            want.iter().any(|w| w.to_f32().abs() > 64.0),
            "the test needs large sums"
        );
    }
    if chorus::cuda::testing::gpu_available_or_skip("hgemm_tma_fragments (CUDA)") {
        let gpu =
            with_backend(Backend::Cuda, multiply_slice).unwrap_or_else(|e| panic!("CUDA: {e}"));
        for ((gpu, _), (cpu, _)) in gpu.iter().zip(&cpu) {
            assert_eq!(gpu, cpu, "CUDA and the CPU executor differ");
        }
    }
}
