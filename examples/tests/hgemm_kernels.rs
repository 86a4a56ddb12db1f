//! The hgemm kernels (`kernels/hgemm.lisp`, the tensor-core macro library) on the CPU
//! executor, each block shape over two blocks and five k-tiles (more than any pipeline's
//! stages), with small-integer inputs whose products and sums are exact, so the result must
//! equal the host's product rounded to bf16, entry for entry. On CUDA where a GPU is
//! reachable, the same bytes.

use chorus::{Backend, Direction, MemoryBlock, Program, bf16, with_backend};
use chorus_examples::tensor_gemm::{self, HgemmKernel};

/// `len` small integers in −4..=4 as bf16, from `seed`.
fn small(len: usize, seed: usize) -> Vec<bf16> {
    (0..len)
        .map(|i| bf16::from_f32(((i * 7 + seed * 13 + i / 5) % 9) as f32 - 4.0))
        .collect()
}

fn hgemm(
    kernel: HgemmKernel,
    shape: (usize, usize, usize),
) -> chorus::Result<(Vec<bf16>, Vec<bf16>)> {
    hgemm_in(&tensor_gemm::program()?, kernel, shape)
}

/// `kernel` of `program` on small integers: its result and the exact one, rounded to bf16.
fn hgemm_in(
    program: &Program,
    kernel: HgemmKernel,
    (m, n, k): (usize, usize, usize),
) -> chorus::Result<(Vec<bf16>, Vec<bf16>)> {
    let (a_host, b_host) = (small(m * k, 1), small(k * n, 2));
    let want: Vec<bf16> = (0..m * n)
        .map(|e| {
            let (sum, _) = tensor_gemm::reference_entry(&a_host, &b_host, (n, k), e / n, e % n);
            bf16::from_f64(sum)
        })
        .collect();
    let a = MemoryBlock::from_slice(&a_host)?;
    let b = MemoryBlock::from_slice(&b_host)?;
    let mut c = MemoryBlock::<bf16>::alloc(m * n)?;
    kernel.launch(program, &a, &b, &c, (m, n, k))?;
    c.sync(Direction::DeviceToHost)?;
    Ok((c.as_slice().to_vec(), want))
}

/// Two blocks of `kernel` side by side along N, five k-tiles.
fn two_blocks(kernel: HgemmKernel) -> (usize, usize, usize) {
    let (rows, columns) = kernel.tile();
    (rows, 2 * columns, 5 * kernel.tile_k)
}

#[test]
fn hgemm_is_exact_on_the_cpu_executor() {
    for kernel in HgemmKernel::ALL {
        let shape = two_blocks(kernel);
        let (got, want) = with_backend(Backend::Cpu, || hgemm(kernel, shape))
            .unwrap_or_else(|e| panic!("{} on the CPU: {e}", kernel.name));
        let first = got.iter().zip(&want).position(|(g, w)| g != w);
        assert_eq!(
            first, None,
            "{}: first difference at {first:?}",
            kernel.name
        );
        assert!(
            want.iter().any(|w| w.to_f32().abs() > 64.0),
            "the test needs large sums"
        );
        if chorus::cuda::testing::gpu_available_or_skip("hgemm_is_exact_on_the_cpu_executor (CUDA)")
        {
            let (gpu, _) = with_backend(Backend::Cuda, || hgemm(kernel, shape))
                .unwrap_or_else(|e| panic!("{} on CUDA: {e}", kernel.name));
            assert_eq!(
                gpu, got,
                "{}: CUDA and the CPU executor differ",
                kernel.name
            );
        }
    }
}

#[test]
fn shapes_the_kernels_cannot_tile_are_refused() {
    let [
        square,
        interleaved,
        prefetch,
        wide_prefetch,
        deep_k,
        wide,
        tall,
    ] = HgemmKernel::ALL;
    assert_eq!(interleaved.unsupported_shape(128, 256, 160), None);
    assert_eq!(square.unsupported_shape(128, 256, 160), None);
    assert_eq!(prefetch.unsupported_shape(128, 256, 160), None);
    assert!(square.unsupported_shape(100, 128, 32).is_some());
    assert!(square.unsupported_shape(128, 128, 48).is_some());
    assert!(square.unsupported_shape(65536, 65536, 32).is_some());
    assert_eq!(deep_k.unsupported_shape(128, 128, 64), None);
    assert!(deep_k.unsupported_shape(128, 128, 96).is_some());
    assert_eq!(wide.unsupported_shape(128, 256, 32), None);
    assert_eq!(wide_prefetch.unsupported_shape(128, 256, 32), None);
    assert!(wide_prefetch.unsupported_shape(256, 128, 32).is_some());
    assert!(wide.unsupported_shape(256, 128, 32).is_some());
    assert_eq!(tall.unsupported_shape(256, 128, 32), None);
    assert!(tall.unsupported_shape(128, 256, 32).is_some());
}

#[test]
fn the_block_shapes_fit_their_shared_memory_and_thread_counts() {
    let shapes: Vec<_> = HgemmKernel::ALL
        .iter()
        .map(|k| (k.tile(), k.threads(), k.shared_bytes()))
        .collect();
    assert_eq!(
        shapes,
        [
            ((128, 128), 128, 48 << 10),
            ((128, 128), 128, 48 << 10),
            ((128, 128), 128, 48 << 10),
            ((128, 256), 256, 96 << 10),
            ((128, 128), 128, 96 << 10),
            ((128, 256), 256, 96 << 10),
            ((256, 128), 256, 96 << 10)
        ]
    );
}

/// Each of the file's kernels is what its `define-hgemm` form says (the `hgemm` example's
/// `--define` writes the same form), and a `--define`d shape runs exactly on the CPU executor.
#[test]
fn define_hgemm_arguments_round_trip_and_run() {
    for kernel in HgemmKernel::ALL {
        let text = kernel.definition();
        let arguments = text
            .trim()
            .trim_start_matches("(define-hgemm")
            .trim_end_matches(')');
        assert_eq!(
            HgemmKernel::parse_definition(arguments),
            Ok(kernel),
            "{text}"
        );
    }
    for bad in [
        "x 2 2",
        "x 2 2 3 :tile-k 48",
        "x 2 2 3 :prefetch",
        "x 9 2 3",
        "x 2 2 1",
        "x 2 2 3 :warp-n 48",
        "x 2 2 3 :min-blocks 0",
    ] {
        assert!(HgemmKernel::parse_definition(bad).is_err(), "{bad}");
    }
    for text in [
        "hgemm-tall-prefetch 4 2 4 :prefetch t",
        // Warp tiles of 64×32: eight warps over 128×128, with and without the fragments'
        // pipeline, and sixteen over 128×256.
        "hgemm-w32 2 4 3 :warp-n 32 :min-blocks 2",
        "hgemm-w32-prefetch 2 4 4 :warp-n 32 :min-blocks 2 :prefetch t",
        "hgemm-w32-wide 2 8 3 :warp-n 32",
    ] {
        let kernel = HgemmKernel::parse_definition(text).unwrap();
        let (got, want) = with_backend(Backend::Cpu, || {
            hgemm_in(
                &tensor_gemm::program_with(&[kernel])?,
                kernel,
                two_blocks(kernel),
            )
        })
        .unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(
            got == want,
            "the --define'd {} differs from the exact product",
            kernel.name
        );
    }
    let narrow = HgemmKernel::parse_definition("w 2 4 3 :warp-n 32").unwrap();
    assert_eq!((narrow.tile(), narrow.threads()), ((128, 128), 256));
}

/// The probes leave out what they say: with neither copies nor fragment loads, with no
/// copies, with no mma, or with every copy from k-tile 0, the result is not the product (and
/// the kernels still run and are not checked);
/// `:probe mma-only` without the fragments' pipeline is refused by the macro, naming the
/// option.
#[test]
fn hgemm_probes_leave_work_out() {
    let define = |text: &str| HgemmKernel::parse_definition(text).unwrap();
    let mma_only = define("p-mma 2 2 3 :prefetch t :probe mma-only");
    let no_copies = define("p-nc 2 2 3 :probe no-copies");
    let no_mma = define("p-nm 2 2 3 :prefetch t :probe no-mma");
    let l1_copies = define("p-l1 2 2 3 :prefetch t :probe l1-copies");
    let plain = define("p-plain 2 2 3 :prefetch t");
    assert!(mma_only.is_probe() && no_copies.is_probe() && no_mma.is_probe());
    assert!(l1_copies.is_probe());
    assert!(!plain.is_probe());
    assert!(HgemmKernel::parse_definition("x 2 2 3 :probe everything").is_err());
    let program =
        tensor_gemm::program_with(&[mma_only, no_copies, no_mma, l1_copies, plain]).unwrap();
    for probe in [mma_only, no_copies, no_mma, l1_copies] {
        let (got, want) = with_backend(Backend::Cpu, || {
            hgemm_in(&program, probe, two_blocks(probe))
        })
        .unwrap_or_else(|e| panic!("{}: {e}", probe.name));
        assert!(got != want, "{} computed the product", probe.name);
    }
    let (got, want) = with_backend(Backend::Cpu, || {
        hgemm_in(&program, plain, two_blocks(plain))
    })
    .unwrap();
    assert!(
        got == want,
        "the kernel beside the probes differs from the exact product"
    );
    let refused = tensor_gemm::program_with(&[define("p-bad 2 2 3 :probe mma-only")])
        .expect_err(":probe mma-only without :prefetch compiled")
        .to_string();
    assert!(
        refused.contains(":probe mma-only needs :prefetch t"),
        "{refused}"
    );
}

/// The CPU executor checks the pipelines' protocol, not only their results (its copies
/// complete at once, so a result cannot show a missing wait): `kernels/hgemm.lisp` over a
/// tensor-core library whose main loops wait for one group too few, refill the stage in use
/// (a tile further ahead), or (with double-buffered fragments) fetch the next tile without the
/// barrier, faults naming the copy in flight.
#[test]
fn a_pipeline_that_waits_too_little_faults_on_the_cpu_executor() {
    let library = chorus::lang::library::TENSOR_CORE;
    // Every loop's wait (tc-pipeline-wait), one group short.
    let wait = "(cp-async-wait ,(- stages 2))";
    let short_waits = library.replace(wait, "(cp-async-wait ,(- stages 1))");
    assert_eq!(library.matches(wait).count(), 1, "the library's wait moved");
    // The barrier before the next tile's first fetch (tc-pipeline-fragments' last step): the
    // wait alone.
    let fetch_after_barrier = "(tc-pipeline-wait ,stages)\n           (,fetch";
    assert!(
        library.contains(fetch_after_barrier),
        "the library's loop moved"
    );
    let no_barrier = library.replace(
        fetch_after_barrier,
        "(cp-async-wait ,(- stages 2))\n           (,fetch",
    );
    // Refilling the stage the current tile is in: one tile further ahead (tc-pipeline-issue).
    let ahead = "(+ ,tile ,(- stages 1))";
    assert_eq!(
        library.matches(ahead).count(),
        1,
        "the library's issue moved"
    );
    let too_far_ahead = library.replace(ahead, "(+ ,tile ,stages)");
    let square_kernels = [HgemmKernel::SQUARE, HgemmKernel::PREFETCH];
    let mutants = [
        (&short_waits, square_kernels),
        (
            &no_barrier,
            [HgemmKernel::PREFETCH, HgemmKernel::WIDE_PREFETCH],
        ),
        (
            &too_far_ahead,
            [HgemmKernel::INTERLEAVED, HgemmKernel::PREFETCH],
        ),
    ];
    for (mutant, kernels) in mutants {
        let text = format!("{mutant}\n{}", tensor_gemm::HGEMM);
        for kernel in kernels {
            let e = with_backend(Backend::Cpu, || {
                let program = chorus::Program::new(text.as_str(), "hgemm.lisp")?;
                let shape = two_blocks(kernel);
                let (m, n, k) = shape;
                let a = MemoryBlock::<bf16>::alloc(m * k)?;
                let b = MemoryBlock::<bf16>::alloc(k * n)?;
                let c = MemoryBlock::<bf16>::alloc(m * n)?;
                kernel.launch(&program, &a, &b, &c, shape)
            })
            .expect_err(kernel.name)
            .to_string();
            assert!(e.contains("may still be writing"), "{}: {e}", kernel.name);
        }
    }
}
