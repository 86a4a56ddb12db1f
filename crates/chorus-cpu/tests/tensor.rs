//! The tensor-core instructions' faults on the CPU executor: what the GPU leaves undefined
//! (a partial warp at `mma-sync` or `ldmatrix`, rows outside shared memory, misaligned
//! `cp-async` operands) is a launch error naming the instruction and the lane. The exact
//! results are the corpus's (`tests/corpus/tensor/`, run by `run_corpus.rs`).

use chorus_cpu::{CpuModule, DeviceBuffer, KernelArg, LaunchConfig};
use std::sync::Arc;

/// Runs kernel `k` of `src` over `threads` threads with two 1 KiB buffers; the error text.
fn fault(src: &str, threads: u32) -> String {
    let module = chorus_lang::compile_str(src, "t.lisp").expect("the kernel compiles");
    let module = CpuModule::new(Arc::new(module)).expect("prepared");
    let (a, b) = (
        DeviceBuffer::alloc(1024).unwrap(),
        DeviceBuffer::alloc(1024).unwrap(),
    );
    module
        .launch(
            "k",
            &LaunchConfig::linear(1, threads),
            &[KernelArg::Buffer(&a), KernelArg::Buffer(&b)],
        )
        .expect_err("the launch faults")
        .to_string()
}

#[test]
fn mma_needs_the_whole_warp() {
    let src = "(defkernel k (void ((a uint4*) (c float4*)))
  (when (< thread-idx-x 31)
    (set (aref c 0) (mma-sync :m16n8k16 :bf16 (aref a 0) (uint2 0 0) (aref c 0)))))";
    let text = fault(src, 32);
    assert!(
        text.contains("`mma-sync` needs all 32 lanes of the warp active (lane 31"),
        "{text}"
    );
    assert!(text.contains("t.lisp:3:21"), "{text}");
    // A block of 16 threads is a partial warp too.
    let src = "(defkernel k (void ((a uint4*) (c float4*)))
  (set (aref c 0) (mma-sync :m16n8k16 :bf16 (aref a 0) (uint2 0 0) (aref c 0))))";
    assert!(fault(src, 16).contains("lane 16 is not"));
}

#[test]
fn ldmatrix_reads_aligned_shared_rows_only() {
    let global = "(defkernel k (void ((a uint*) (out uint*)))
  (set (aref out thread-idx-x) (ldmatrix :x1 (pointer (aref a (* 4 thread-idx-x))))))";
    let text = fault(global, 32);
    assert!(
        text.contains("`ldmatrix`: lane 0's address is not in shared memory"),
        "{text}"
    );
    let misaligned = "(defkernel k (void ((a uint*) (out uint*)))
  (with-shared-memory ((s uint 64))
    (set (aref out thread-idx-x) (ldmatrix :x1 (pointer (aref s (+ 1 thread-idx-x)))))))";
    let text = fault(misaligned, 32);
    assert!(
        text.contains("lane 0's address is not aligned to 16 bytes"),
        "{text}"
    );
}

#[test]
fn cp_async_copies_global_to_shared_at_its_alignment() {
    let to_global = "(defkernel k (void ((a uint*) (b uint*)))
  (cp-async (pointer (aref b (* 4 thread-idx-x))) (pointer (aref a (* 4 thread-idx-x))) 16))";
    assert!(fault(to_global, 1).contains("`cp-async`: lane 0's address is not in shared memory"));
    let from_shared = "(defkernel k (void ((a uint*) (b uint*)))
  (with-shared-memory ((s uint 64) (r uint 64))
    (cp-async (pointer (aref s 0)) (pointer (aref r 0)) 16)))";
    assert!(fault(from_shared, 1).contains("source must be global memory aligned to 16 bytes"));
    let misaligned = "(defkernel k (void ((a uint*) (b uint*)))
  (with-shared-memory ((s uint 64))
    (cp-async (pointer (aref s 0)) (pointer (aref a 1)) 8)))";
    assert!(fault(misaligned, 1).contains("aligned to 8 bytes"));
}
