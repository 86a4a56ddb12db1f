//! The tensor-core instructions' faults on the CPU executor: what the GPU leaves undefined
//! (a partial warp at `mma-sync` or `ldmatrix`, rows outside shared memory, misaligned
//! `cp-async` operands, touching a copy's destination before the copy is complete for the
//! thread) is a launch error naming the instruction and the lane. The exact results are the
//! corpus's (`tests/corpus/tensor/`, run by `run_corpus.rs`).

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

/// Runs kernel `k` of `src` over one block of `threads` threads, `a` holding 0, 1, 2, … and
/// `out` 256 zeros: `out`, or the error text.
fn run(src: &str, threads: u32) -> Result<Vec<u32>, String> {
    let module = chorus_lang::compile_str(src, "t.lisp").expect("the kernel compiles");
    let module = CpuModule::new(Arc::new(module)).expect("prepared");
    let input: Vec<u32> = (0..256).collect();
    let a = DeviceBuffer::from_slice(&input).unwrap();
    let out = DeviceBuffer::alloc(256 * 4).unwrap();
    module
        .launch(
            "k",
            &LaunchConfig::linear(1, threads),
            &[KernelArg::Buffer(&a), KernelArg::Buffer(&out)],
        )
        .map_err(|e| e.to_string())?;
    Ok(out.to_vec::<u32>().unwrap())
}

/// A kernel whose threads each copy a[i] (and, with two groups, a[64 + i]) into shared memory
/// with `cp-async`, then run `then` (`i` is the thread index, `s` the shared array).
fn copying(groups: usize, then: &str) -> String {
    let second = if groups == 2 {
        "(cp-async (pointer (aref s (+ 64 i))) (pointer (aref a (+ 64 i))) 4)
      (cp-async-commit)"
    } else {
        ""
    };
    format!(
        "(defkernel k (void ((a uint*) (out uint*)))
  (with-shared-memory ((s uint 128))
    (let ((i thread-idx-x))
      (cp-async (pointer (aref s i)) (pointer (aref a i)) 4)
      (cp-async-commit)
      {second}
      {then})))"
    )
}

#[test]
fn reading_a_copy_before_waiting_for_it_faults() {
    // The GPU may not have the data yet: the executor, whose copies complete at once, would
    // hide the race.
    let text = run(&copying(1, "(set (aref out i) (aref s i))"), 32).unwrap_err();
    assert!(
        text.contains(
            "reads shared memory at byte 0 that this thread's own `cp-async` (commit group 0) \
             may still be writing: wait for it first"
        ),
        "{text}"
    );
    assert!(
        text.contains("thread (0, 0, 0)") && text.contains("t.lisp:7:"),
        "{text}"
    );
    // Not yet committed: a wait does not complete the open group.
    let open = "(defkernel k (void ((a uint*) (out uint*)))
  (with-shared-memory ((s uint 64))
    (cp-async (pointer (aref s thread-idx-x)) (pointer (aref a thread-idx-x)) 4)
    (cp-async-wait 0)
    (set (aref out thread-idx-x) (aref s thread-idx-x))))";
    assert!(run(open, 32).unwrap_err().contains("commit group 0"));
    // Waiting for all but the newest group leaves the second copy in flight.
    let text = run(
        &copying(
            2,
            "(cp-async-wait 1)
      (set (aref out i) (aref s i))
      (set (aref out (+ 64 i)) (aref s (+ 64 i)))",
        ),
        32,
    )
    .unwrap_err();
    assert!(
        text.contains("at byte 256 that this thread's own `cp-async` (commit group 1)"),
        "{text}"
    );
    assert!(text.contains("t.lisp:10:"), "{text}");
    // Writing over a copy in flight, plainly or atomically, is a race too.
    let text = run(&copying(1, "(set (aref s i) 7)"), 32).unwrap_err();
    assert!(text.contains("writes shared memory at byte 0"), "{text}");
    let text = run(&copying(1, "(atomic-add (pointer (aref s i)) 1)"), 32).unwrap_err();
    assert!(text.contains("writes shared memory at byte 0"), "{text}");
}

#[test]
fn another_threads_copy_needs_its_wait_and_a_barrier() {
    // Waited for by its own thread, but no barrier since: thread 0 reads thread 1's word.
    let neighbour = "(set (aref out i) (aref s (mod (+ i 1) 64)))";
    let text = run(&copying(1, &format!("(cp-async-wait 0) {neighbour}")), 64).unwrap_err();
    assert!(
        text.contains("at byte 4 that thread (1, 0, 0)'s `cp-async` (commit group 0)"),
        "{text}"
    );
    assert!(
        text.contains("and the block synchronise (`syncthreads`)"),
        "{text}"
    );
    // A barrier without the wait does not complete the copy either.
    let text = run(&copying(1, &format!("(syncthreads) {neighbour}")), 64).unwrap_err();
    assert!(text.contains("thread (1, 0, 0)'s `cp-async`"), "{text}");
    // Wait, then barrier: every thread sees every copy.
    let out = run(
        &copying(1, &format!("(cp-async-wait 0) (syncthreads) {neighbour}")),
        64,
    );
    let want: Vec<u32> = (0..256)
        .map(|t| if t < 64 { (t + 1) % 64 } else { 0 })
        .collect();
    assert_eq!(out.unwrap(), want);
    // Within a warp, `syncwarp` orders them; a thread's own copy needs only its wait.
    let out = run(
        &copying(
            1,
            "(cp-async-wait-all) (syncwarp) (set (aref out i) (aref s (logxor i 1)))",
        ),
        32,
    );
    let want: Vec<u32> = (0..256).map(|t| if t < 32 { t ^ 1 } else { 0 }).collect();
    assert_eq!(out.unwrap(), want);
    let out = run(
        &copying(1, "(cp-async-wait 0) (set (aref out i) (aref s i))"),
        32,
    );
    let want: Vec<u32> = (0..256).map(|t| if t < 32 { t } else { 0 }).collect();
    assert_eq!(out.unwrap(), want);
}

/// Warp 1 refills with `cp-async` the words 32… of `s` that warp 0 has just read (thread i
/// reads word i + 32), with `between` in between.
fn refill(between: &str) -> String {
    format!(
        "(defkernel k (void ((a uint*) (out uint*)))
  (with-shared-memory ((s uint 64))
    (let ((i thread-idx-x))
      (set (aref s i) (uint (* 2 i)))
      (syncthreads)
      (when (< i 32) (set (aref out i) (aref s (+ i 32))))
      {between}
      (when (>= i 32)
        (cp-async (pointer (aref s i)) (pointer (aref a i)) 4)
        (cp-async-commit))
      (cp-async-wait-all)
      (syncthreads))))"
    )
}

#[test]
fn a_copy_over_words_another_warp_read_needs_a_barrier_between() {
    // A producer warp refilling what its consumers read in the same barrier interval: on a GPU
    // the copy may land first. Here warp 0 runs first, so only the tracker can tell.
    let text = run(&refill(""), 64).unwrap_err();
    assert!(
        text.contains(
            "`cp-async` into shared memory at byte 128, which thread (0, 0, 0) read since the \
             last `syncthreads`"
        ),
        "{text}"
    );
    assert!(text.contains("thread (32, 0, 0)"), "{text}");
    let out = run(&refill("(syncthreads)"), 64).unwrap();
    let want: Vec<u32> = (0..256)
        .map(|t| if t < 32 { 2 * (t + 32) } else { 0 })
        .collect();
    assert_eq!(out, want);
    // Read by both warps, then copied over by one.
    let both = "(defkernel k (void ((a uint*) (out uint*)))
  (with-shared-memory ((s uint 64))
    (set (aref s thread-idx-x) (uint 0))
    (syncthreads)
    (set (aref out thread-idx-x) (aref s 0))
    (when (= thread-idx-x 40)
      (cp-async (pointer (aref s 0)) (pointer (aref a 0)) 4))
    (cp-async-wait-all)))";
    let text = run(both, 64).unwrap_err();
    assert!(
        text.contains("which threads of several warps read"),
        "{text}"
    );
}
