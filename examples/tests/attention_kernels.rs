//! The attention kernels (`kernels/attention.lisp`, the tensor-core macro library) on the CPU
//! executor: both shapes of block (w8, w4), head dimensions 128 and 64, causal and not, every
//! output entry against the f64 host reference within BF16's rounding
//! (`flash_attention::close`: 2^-8 of |want| plus 2^-8 of the weighted mean of |V|, about 0.002
//! here). Two query tiles and four K/V tiles exercise both pipeline stages, the causal skip of
//! whole tiles (per block and per warp) and the diagonal masks. The same tolerance refuses the
//! output of a wrong scale or of the other mask. On CUDA where a GPU is reachable, the same
//! checks of the GPU's output.

use chorus::{Backend, Direction, MemoryBlock, bf16, with_backend};
use chorus_examples::flash_attention::{self as attention, Shape, Variant};

/// Runs the kernel on `backend` and returns O.
fn attention_on(
    backend: Backend,
    variant: Variant,
    shape: Shape,
    causal: bool,
    inputs: &[Vec<bf16>; 3],
    scale: f64,
) -> Vec<bf16> {
    with_backend(backend, || -> chorus::Result<Vec<bf16>> {
        let program = attention::program()?;
        let q = MemoryBlock::from_slice(&inputs[0])?;
        let k = MemoryBlock::from_slice(&inputs[1])?;
        let v = MemoryBlock::from_slice(&inputs[2])?;
        let mut o = MemoryBlock::from_slice(&vec![bf16::NAN; shape.len()])?;
        attention::launch(&program, variant, [&q, &k, &v, &o], shape, causal, scale)?;
        o.sync(Direction::DeviceToHost)?;
        Ok(o.as_slice().to_vec())
    })
    .unwrap_or_else(|e| panic!("attention on {backend}: {e}"))
}

/// Every row of every (batch, head), against the reference with `scale` and `causal`.
fn failures(o: &[bf16], inputs: &[Vec<bf16>; 3], shape: Shape, causal: bool, scale: f64) -> usize {
    let rows = (0..shape.batch * shape.heads).flat_map(|bh| (0..shape.seq).map(move |r| (bh, r)));
    let refs = [
        inputs[0].as_slice(),
        inputs[1].as_slice(),
        inputs[2].as_slice(),
    ];
    let (checked, bad, worst) = attention::check_rows(o, refs, shape, causal, scale, rows);
    assert_eq!(checked, shape.len());
    eprintln!(
        "causal {causal}, scale {scale:.4}: {bad} of {checked} beyond tolerance, worst {worst:.3e}"
    );
    bad
}

fn check(variant: Variant, dim: usize) {
    let shape = Shape {
        batch: 1,
        heads: 2,
        seq: 256,
        dim,
    };
    assert_eq!(attention::unsupported_shape(shape), None);
    let inputs = attention::random_inputs(shape, 5);
    let scale = 1.0 / (dim as f64).sqrt();
    for causal in [false, true] {
        let o = attention_on(Backend::Cpu, variant, shape, causal, &inputs, scale);
        assert_eq!(
            failures(&o, &inputs, shape, causal, scale),
            0,
            "{variant:?}, dim {dim}, causal {causal}"
        );
        // The tolerance is tight enough to see a mistake: the other mask and a scale 10% off
        // each fail most entries (over 85% here).
        let wrong_mask = failures(&o, &inputs, shape, !causal, scale);
        let wrong_scale = failures(&o, &inputs, shape, causal, scale * 1.1);
        assert!(
            wrong_mask > shape.len() / 2,
            "the wrong mask passes: {wrong_mask}"
        );
        assert!(
            wrong_scale > shape.len() / 2,
            "a wrong scale passes: {wrong_scale}"
        );
        // The same check of the GPU's output (skipped without one, a failure under
        // CHORUS_REQUIRE_GPU=1).
        let what = format!("attention {variant:?} d{dim} causal {causal} (CUDA)");
        if chorus::cuda::testing::gpu_available_or_skip(&what) {
            let o = attention_on(Backend::Cuda, variant, shape, causal, &inputs, scale);
            assert_eq!(failures(&o, &inputs, shape, causal, scale), 0, "{what}");
        }
    }
}

#[test]
fn attention_w8_d128_matches_the_reference_on_the_cpu_executor() {
    check(Variant::W8, 128);
}

#[test]
fn attention_w8_d64_matches_the_reference_on_the_cpu_executor() {
    check(Variant::W8, 64);
}

#[test]
fn attention_w4_d128_matches_the_reference_on_the_cpu_executor() {
    check(Variant::W4, 128);
}

#[test]
fn attention_w4_d64_matches_the_reference_on_the_cpu_executor() {
    check(Variant::W4, 64);
}

#[test]
fn shapes_the_kernels_cannot_tile_are_refused() {
    let shape = |batch, heads, seq, dim| Shape {
        batch,
        heads,
        seq,
        dim,
    };
    assert_eq!(attention::unsupported_shape(shape(4, 32, 4096, 128)), None);
    assert_eq!(attention::unsupported_shape(shape(1, 1, 128, 64)), None);
    assert!(attention::unsupported_shape(shape(1, 1, 192, 128)).is_some());
    assert!(attention::unsupported_shape(shape(1, 1, 0, 128)).is_some());
    assert!(attention::unsupported_shape(shape(1, 1, 128, 96)).is_some());
    assert!(attention::unsupported_shape(shape(0, 1, 128, 128)).is_some());
    assert!(attention::unsupported_shape(shape(256, 256, 128, 128)).is_some());
    assert!(attention::unsupported_shape(shape(64, 64, 8192, 128)).is_some());
    assert_eq!(Variant::W8.kernel(128, true), "attention-d128-w8-causal");
    assert_eq!(Variant::W4.kernel(64, false), "attention-d64-w4");
    assert_eq!(Variant::W8.shared_bytes(128), 96 * 1024);
    // P stays in registers: both shapes hold only the Q tile and the K/V stages.
    assert_eq!(Variant::W4.shared_bytes(128), 96 * 1024);
    assert_eq!(Variant::W4.shared_bytes(64), 48 * 1024);
}
