//! SIMD over threads in the native code: which kernels take it, and that it gives the
//! interpreter's bytes and faults exactly, at chunk edges (rows that are not a multiple of the
//! chunk, lanes that disagree on a branch, accesses that leave the allocation part-way).
#![cfg(feature = "native")]

use chorus_cpu::{CpuModule, DeviceBuffer, Error, KernelArg, LaunchConfig};
use std::sync::Arc;

fn module(text: &str) -> CpuModule {
    let ir = chorus_lang::compile_str(text, "simd.lisp").unwrap_or_else(|e| panic!("{e}"));
    CpuModule::new(Arc::new(ir)).unwrap_or_else(|e| panic!("{e}"))
}

/// What one path did: every buffer's bytes after the launch, or its error's message.
type Outcome = Result<Vec<Vec<u8>>, String>;

/// Runs `kernel` on the interpreter and on the native code with fresh copies of `buffers`
/// (raw bytes, each passed at byte `offset`) and then `n` as an `int`; checks whether the
/// native code used SIMD (`simd`) and returns both outcomes.
fn both(
    text: &str,
    kernel: &str,
    config: LaunchConfig,
    buffers: &[(Vec<u8>, usize)],
    n: i32,
    simd: bool,
) -> [Outcome; 2] {
    [true, false].map(|interpret| {
        let mut m = module(text);
        m.set_interpreted(interpret);
        if !interpret {
            assert_eq!(m.kernel_uses_simd(kernel).unwrap(), simd, "{kernel}");
        }
        let bufs: Vec<DeviceBuffer> = buffers
            .iter()
            .map(|(b, _)| DeviceBuffer::from_slice(b).unwrap())
            .collect();
        let mut args: Vec<KernelArg<'_>> = bufs
            .iter()
            .zip(buffers)
            .map(|(b, (_, off))| KernelArg::BufferAt(b, *off))
            .collect();
        args.push(KernelArg::value(n));
        match m.launch(kernel, &config, &args) {
            Ok(()) => Ok(bufs.iter().map(|b| b.to_vec::<u8>().unwrap()).collect()),
            Err(e @ Error::Fault { .. }) => Err(e.to_string()),
            Err(e) => panic!("{kernel}: {e}"),
        }
    })
}

fn floats(v: impl IntoIterator<Item = f32>) -> Vec<u8> {
    v.into_iter().flat_map(f32::to_le_bytes).collect()
}

fn ints(v: impl IntoIterator<Item = i32>) -> Vec<u8> {
    v.into_iter().flat_map(i32::to_le_bytes).collect()
}

fn agree(text: &str, kernel: &str, config: LaunchConfig, buffers: &[(Vec<u8>, usize)], n: i32) {
    let [want, got] = both(text, kernel, config, buffers, n, true);
    assert!(want.is_ok(), "{kernel}: {want:?}");
    assert_eq!(want, got, "{kernel}");
}

const VEC_ADD: &str = "(defkernel vadd (void ((a float*) (b float*) (c float*) (n int)))
  (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
    (if (< i n)
        (set (aref c i) (+ (aref a i) (aref b i))))))";

#[test]
fn guarded_vector_add_matches_at_every_edge() {
    // Rows of 100 threads (three chunks and a scalar rest), n inside a chunk of the last block.
    let len = 1000;
    let a = floats((0..len).map(|i| i as f32 * 0.37 - 11.0));
    let b = floats((0..len).map(|i| 1.0 / (i as f32 + 0.5)));
    let c = floats((0..len).map(|_| -1.0));
    for n in [0, 1, 31, 32, 33, 999, 1000] {
        agree(
            VEC_ADD,
            "vadd",
            LaunchConfig::linear(10, 100),
            &[(a.clone(), 0), (b.clone(), 0), (c.clone(), 0)],
            n,
        );
    }
}

#[test]
fn every_form_of_the_guard_matches() {
    // The guard decided from the chunk's first and last lane, in each direction.
    let len = 300;
    let a = floats((0..len).map(|i| i as f32 + 0.25));
    let c = floats((0..len).map(|_| 7.0));
    for guard in [
        "(> n i)",
        "(<= i (- n 1))",
        "(>= (- n 1) i)",
        "(not (>= i n))",
    ] {
        let text = VEC_ADD.replace("(< i n)", guard);
        for n in [0, 17, 32, 95, 96, 97, 300] {
            agree(
                &text,
                "vadd",
                LaunchConfig::linear(3, 100),
                &[(a.clone(), 0), (a.clone(), 0), (c.clone(), 0)],
                n,
            );
        }
    }
}

#[test]
fn a_chunk_that_leaves_the_allocation_faults_as_on_the_interpreter() {
    // The output is 4 bytes short: the last thread's store faults, after its chunk bailed.
    let a = floats((0..256).map(|i| i as f32));
    let short = floats((0..255).map(|_| 0.0));
    let [want, got] = both(
        VEC_ADD,
        "vadd",
        LaunchConfig::linear(2, 128),
        &[(a.clone(), 0), (a, 0), (short, 0)],
        256,
        true,
    );
    let message = want.expect_err("the interpreter faults");
    assert_eq!(got, Err(message.clone()));
    assert!(message.contains("thread (127, 0, 0)"), "{message}");
    assert!(message.contains("block (1, 0, 0)"), "{message}");
}

#[test]
fn misaligned_and_offset_pointers_match() {
    let a = floats((0..300).map(|i| i as f32 * 1.5));
    // A 4-byte offset shifts the elements; a 2-byte one makes every access misaligned.
    for off in [4, 2] {
        let [want, got] = both(
            VEC_ADD,
            "vadd",
            LaunchConfig::linear(2, 128),
            &[(a.clone(), off), (a.clone(), 0), (a.clone(), 0)],
            256,
            true,
        );
        assert!(want == got, "offset {off}: the paths differ");
        assert_eq!(want.is_err(), off == 2, "offset {off}: {want:?}");
    }
}

#[test]
fn a_stencil_whose_edge_lanes_take_the_other_branch_matches() {
    let text = "(defkernel blur (void ((f float*) (g float*) (w float*) (n int)))
      (let* ((x (+ (* block-dim-x block-idx-x) thread-idx-x))
             (y block-idx-y)
             (j (+ (* n y) x))
             (c (aref f j))
             (l (if (= x 0) c (aref f (- j 1))))
             (r (if (= x (- n 1)) c (aref f (+ j 1))))
             (u (if (= y 0) c (aref f (- j n)))))
        (set (aref g j) (+ (* 0.25 (+ l r)) (* 0.5 (- u c)) (aref w 0)))))";
    let n = 96;
    let f = floats((0..n * 4).map(|i| ((i * 7919) % 113) as f32 / 7.0));
    let config = LaunchConfig {
        grid: [1, 4, 1],
        block: [n as u32, 1, 1],
        shared_mem: 0,
    };
    agree(
        text,
        "blur",
        config,
        &[(f.clone(), 0), (f, 0), (floats([0.125]), 0)],
        n,
    );
}

#[test]
fn integer_arithmetic_casts_and_early_returns_match() {
    let text = "(defkernel mix (void ((a int*) (b int*) (c float*) (n int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (when (>= i n) (return))
        (let* ((x (aref a i))
               (y (aref b i))
               (s (- (* x 3) (logxor y i)))
               (big (and (> x y) (/= (logand s 1) 0))))
          (set (aref c i) (if big (float s) (- (float (- x)) 0.5))))))";
    let len = 200;
    let a = ints((0..len).map(|i| i * 1_234_567 - 90_000_000));
    let b = ints((0..len).map(|i| (i * 7) ^ 0x55));
    let c = floats((0..len).map(|_| 0.0));
    for n in [5, 64, 150, 200] {
        agree(
            text,
            "mix",
            LaunchConfig::linear(4, 64),
            &[(a.clone(), 0), (b.clone(), 0), (c.clone(), 0)],
            n,
        );
    }
}

#[test]
fn a_body_with_two_stores_runs_natively_without_simd() {
    // A second store would be checked after the first: SIMD is refused, the scalar loop runs.
    let text = "(defkernel two (void ((a float*) (b float*) (c float*) (n int)))
      (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
        (set (aref b i) (aref a i))
        (set (aref c i) (* 2.0 (aref a i)))))";
    let a = floats((0..128).map(|i| i as f32));
    let [want, got] = both(
        text,
        "two",
        LaunchConfig::linear(2, 64),
        &[(a.clone(), 0), (a.clone(), 0), (a, 0)],
        0,
        false,
    );
    assert!(want.is_ok());
    assert_eq!(want, got);
}

#[test]
fn the_corpus_streaming_kernels_use_simd() {
    for (file, kernel) in [
        (include_str!("corpus/vec_add.lisp"), "vec-add"),
        (include_str!("corpus/diffuse.lisp"), "diffuse"),
    ] {
        assert!(module(file).kernel_uses_simd(kernel).unwrap(), "{kernel}");
    }
}
