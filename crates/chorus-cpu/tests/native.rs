//! The native code path: which kernels take it, and its faults (out-of-bounds accesses through
//! parameters, other pointers and shared memory; division by zero), each the same error as
//! the interpreter's.

use chorus_cpu::{CpuModule, DeviceBuffer, Error, KernelArg, KernelPath, LaunchConfig};
use std::sync::Arc;

fn module(text: &str) -> CpuModule {
    let ir = chorus_lang::compile_str(text, "test.lisp").unwrap_or_else(|e| panic!("{e}"));
    CpuModule::new(Arc::new(ir)).unwrap_or_else(|e| panic!("{e}"))
}

/// Launches `kernel` on both paths with fresh copies of `inputs` (f32 buffers) and an `int`
/// `n`; returns both results, after checking the default path was native.
fn both(
    text: &str,
    kernel: &str,
    config: LaunchConfig,
    inputs: &[Vec<f32>],
    n: i32,
) -> [Result<Vec<Vec<f32>>, Error>; 2] {
    [true, false].map(|interpret| {
        let mut m = module(text);
        m.set_interpreted(interpret);
        if !interpret && cfg!(feature = "native") {
            assert_eq!(m.kernel_path(kernel).unwrap(), KernelPath::Native);
        }
        let buffers: Vec<DeviceBuffer> = inputs
            .iter()
            .map(|v| DeviceBuffer::from_slice(v).unwrap())
            .collect();
        let mut args: Vec<KernelArg<'_>> = buffers.iter().map(KernelArg::Buffer).collect();
        args.push(KernelArg::value(n));
        m.launch(kernel, &config, &args)?;
        Ok(buffers.iter().map(|b| b.to_vec::<f32>().unwrap()).collect())
    })
}

fn fault_of(r: &Result<Vec<Vec<f32>>, Error>) -> String {
    match r {
        Err(e @ Error::Fault { .. }) => e.to_string(),
        other => panic!("expected a fault, got {other:?}"),
    }
}

#[test]
fn out_of_bounds_reads_through_a_parameter_fault_as_on_the_interpreter() {
    // Thread 255 of block 3 reads a[1024], one past the end.
    let text = "(defkernel shift (void ((a float*) (c float*) (n int)))
                  (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
                    (set (aref c i) (aref a (+ i n)))))";
    let a = vec![1.0f32; 1024];
    let [interp, native] = both(
        text,
        "shift",
        LaunchConfig::linear(4, 256),
        &[a.clone(), a],
        1,
    );
    let message = fault_of(&native);
    assert_eq!(fault_of(&interp), message);
    assert!(message.contains("shift"), "{message}");
    assert!(message.contains("block (3, 0, 0)"), "{message}");
    assert!(message.contains("thread (255, 0, 0)"), "{message}");
    assert!(
        message.contains("out-of-bounds read of 4 byte(s) at byte offset 4096 (element index 1024) of a 4096-byte allocation"),
        "{message}"
    );
}

#[test]
fn out_of_bounds_writes_below_the_start_fault_with_a_negative_index() {
    let text = "(defkernel back (void ((a float*) (n int)))
                  (set (aref a (- thread-idx-x n)) 2.0))";
    let [interp, native] = both(
        text,
        "back",
        LaunchConfig::linear(1, 64),
        &[vec![0.0; 64]],
        1,
    );
    let message = fault_of(&native);
    assert_eq!(fault_of(&interp), message);
    assert!(message.contains("thread (0, 0, 0)"), "{message}");
    assert!(
        message.contains("out-of-bounds write of 4 byte(s) at byte offset -4 (element index -1)"),
        "{message}"
    );
}

#[test]
fn out_of_bounds_accesses_through_other_pointers_fault() {
    // `p` is assigned, so its accesses go through the allocation table, not a hoisted root.
    let text = "(defkernel walk (void ((a float*) (n int)))
                  (let ((p a))
                    (set p (pointer (aref p n)))
                    (set (aref p thread-idx-x) 1.0)))";
    let [interp, native] = both(
        text,
        "walk",
        LaunchConfig::linear(1, 32),
        &[vec![0.0; 40]],
        10,
    );
    let message = fault_of(&native);
    assert_eq!(fault_of(&interp), message);
    assert!(message.contains("thread (30, 0, 0)"), "{message}");
    assert!(message.contains("element index 40"), "{message}");
    // In bounds, the same kernel writes where the interpreter does.
    let [interp, native] = both(
        text,
        "walk",
        LaunchConfig::linear(1, 32),
        &[vec![0.0; 64]],
        10,
    );
    assert_eq!(interp.unwrap(), native.unwrap());
}

#[test]
fn out_of_bounds_shared_memory_faults_in_a_kernel_with_barriers() {
    let text = "(defkernel tile (void ((a float*) (n int)))
                  (with-shared-memory ((s float 32))
                    (set (aref s thread-idx-x) (aref a thread-idx-x))
                    (syncthreads)
                    (set (aref a thread-idx-x) (aref s (+ thread-idx-x n)))))";
    let input: Vec<f32> = (0..32).map(|i| i as f32).collect();
    let [interp, native] = both(
        text,
        "tile",
        LaunchConfig::linear(1, 32),
        std::slice::from_ref(&input),
        0,
    );
    assert_eq!(interp.unwrap(), native.unwrap());
    let [interp, native] = both(text, "tile", LaunchConfig::linear(1, 32), &[input], 4);
    let message = fault_of(&native);
    assert_eq!(fault_of(&interp), message);
    assert!(message.contains("thread (28, 0, 0)"), "{message}");
    assert!(message.contains("of a 128-byte allocation"), "{message}");
}

#[test]
fn integer_division_by_zero_faults() {
    let text = "(defkernel div (void ((a float*) (n int)))
                  (set (aref a thread-idx-x) (float (/ 10 (- thread-idx-x n)))))";
    let [interp, native] = both(text, "div", LaunchConfig::linear(1, 8), &[vec![0.0; 8]], 5);
    let message = fault_of(&native);
    assert_eq!(fault_of(&interp), message);
    assert!(message.contains("integer division by zero"), "{message}");
    assert!(message.contains("thread (5, 0, 0)"), "{message}");
}

#[test]
fn integer_edge_cases_match_the_interpreter() {
    // INT_MIN / -1 wraps; shifts by the width or more give 0 (or the sign); floor-mod.
    let text = "(defkernel edges (void ((a float*) (n int)))
                  (let* ((i thread-idx-x)
                         (m (- -2147483647 n))
                         (v (+ (/ m (- n 2)) (rem m (- n 2)) (mod (- i 3) 4) (floor-mod (- i 3) -4)
                               (shl 1 (+ i 28)) (shr m (+ i 28)))))
                    (set (aref a i) (float v))))";
    let [interp, native] = both(
        text,
        "edges",
        LaunchConfig::linear(1, 8),
        &[vec![0.0; 8]],
        1,
    );
    assert_eq!(interp.unwrap(), native.unwrap());
}

#[test]
fn kernels_the_native_compiler_lacks_run_on_the_interpreter_and_say_why() {
    // A warp collective evaluated again on each iteration of a loop's header.
    let m = module(
        "(defkernel count (void ((a float*)))
           (let ((i 0))
             (while (/= (any-sync #xffffffff (< i thread-idx-x)) 0)
               (set i (+ i 1)))
             (set (aref a thread-idx-x) (float i))))",
    );
    match m.kernel_path("count").unwrap() {
        KernelPath::Interpreted(why) => {
            if cfg!(feature = "native") {
                assert!(why.contains("loop's header"), "{why}")
            }
        }
        KernelPath::Native => panic!("collectives in loop headers are not compiled yet"),
    }
    let buffer = DeviceBuffer::from_slice(&[0.0f32; 4]).unwrap();
    m.launch(
        "count",
        &LaunchConfig::linear(1, 4),
        &[KernelArg::Buffer(&buffer)],
    )
    .unwrap();
    // Every lane runs until the last one stops.
    assert_eq!(buffer.to_vec::<f32>().unwrap(), vec![3.0; 4]);
    let mut m = module("(defkernel one (void ((a float*))) (set (aref a 0) 1.0))");
    m.set_interpreted(true);
    assert!(matches!(
        m.kernel_path("one").unwrap(),
        KernelPath::Interpreted(_)
    ));
    m.set_interpreted(false);
    let expected = if cfg!(feature = "native") {
        KernelPath::Native
    } else {
        KernelPath::Interpreted("built without the `native` feature".into())
    };
    assert_eq!(m.kernel_path("one").unwrap(), expected);
    assert!(m.kernel_path("none").is_err());
}

#[test]
fn a_misaligned_parameter_faults_as_on_the_interpreter() {
    let text = "(defkernel touch (void ((a float*))) (set (aref a thread-idx-x) 1.0))";
    let errors = [true, false].map(|interpret| {
        let mut m = module(text);
        m.set_interpreted(interpret);
        let b = DeviceBuffer::alloc(64).unwrap();
        m.launch(
            "touch",
            &LaunchConfig::linear(1, 4),
            &[KernelArg::BufferAt(&b, 2)],
        )
        .unwrap_err()
        .to_string()
    });
    assert_eq!(errors[0], errors[1]);
    assert!(
        errors[1].contains("misaligned write of 4 byte(s) at byte offset 2"),
        "{}",
        errors[1]
    );
    assert!(errors[1].contains("thread (0, 0, 0)"), "{}", errors[1]);
}

#[test]
fn out_of_bounds_atomics_fault_as_on_the_interpreter() {
    let text = "(defkernel count (void ((a float*) (n int)))
                  (atomic-add (pointer (aref a (+ thread-idx-x n))) 1.0))";
    let [interp, native] = both(
        text,
        "count",
        LaunchConfig::linear(1, 16),
        &[vec![0.0; 16]],
        0,
    );
    assert_eq!(native.unwrap(), vec![vec![1.0; 16]]);
    assert_eq!(interp.unwrap(), vec![vec![1.0; 16]]);
    let [interp, native] = both(
        text,
        "count",
        LaunchConfig::linear(1, 16),
        &[vec![0.0; 16]],
        2,
    );
    let message = fault_of(&native);
    assert_eq!(fault_of(&interp), message);
    assert!(
        message.contains("out-of-bounds atomic of 4 byte(s)"),
        "{message}"
    );
    assert!(message.contains("thread (14, 0, 0)"), "{message}");
}

#[test]
fn out_of_bounds_components_fault_at_their_own_offset() {
    // p holds 2 float4 (32 bytes); thread 1 reads the y component of p[2], at byte 36.
    let text = "(defkernel ys (void ((p float4*) (out float*) (n int)))
                  (set (aref out thread-idx-x) (float4-y (aref p (+ thread-idx-x n)))))";
    let errors = [true, false].map(|interpret| {
        let mut m = module(text);
        m.set_interpreted(interpret);
        if !interpret && cfg!(feature = "native") {
            assert_eq!(m.kernel_path("ys").unwrap(), KernelPath::Native);
        }
        let p = DeviceBuffer::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]).unwrap();
        let out = DeviceBuffer::alloc(16).unwrap();
        let args = |n: i32| {
            [
                KernelArg::Buffer(&p),
                KernelArg::Buffer(&out),
                KernelArg::value(n),
            ]
        };
        m.launch("ys", &LaunchConfig::linear(1, 2), &args(0))
            .unwrap();
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![2.0, 6.0, 0.0, 0.0]);
        m.launch("ys", &LaunchConfig::linear(1, 2), &args(1))
            .unwrap_err()
            .to_string()
    });
    assert_eq!(errors[0], errors[1]);
    assert!(errors[1].contains("thread (1, 0, 0)"), "{}", errors[1]);
    assert!(errors[1].contains("byte offset 36"), "{}", errors[1]);
}

#[test]
fn device_functions_return_vectors() {
    // float4 results (more leaves than return registers) and float4 parameters.
    let text = "(defkernel (twice :device) (float4 ((v float4)))
                  (return (* v 2.0)))
                (defkernel scale (void ((a float*) (n int)))
                  (let* ((i thread-idx-x)
                         (v (twice (float4 (aref a i) 1.0 (float n) -1.0))))
                    (set (aref a i) (+ (float4-x v) (float4-y v) (float4-z v) (float4-w v)))))";
    let input: Vec<f32> = (0..8).map(|i| i as f32).collect();
    let [interp, native] = both(text, "scale", LaunchConfig::linear(1, 8), &[input], 3);
    let native = native.unwrap();
    assert_eq!(interp.unwrap(), native);
    assert_eq!(native[0][5], 2.0 * (5.0 + 1.0 + 3.0 - 1.0));
}

#[test]
fn faults_inside_shared_device_functions_name_their_position() {
    // Two kernels share `get`, compiled once for the module; its fault names its own line.
    let text = "(defkernel (get :device) (float ((a float*) (i int)))
                  (return (aref a i)))
                (defkernel first (void ((a float*) (n int)))
                  (set (aref a thread-idx-x) (+ 1.0 (get a (+ thread-idx-x n)))))
                (defkernel second (void ((a float*) (n int)))
                  (set (aref a thread-idx-x) (get a (- thread-idx-x n))))";
    for kernel in ["first", "second"] {
        let [interp, native] = both(text, kernel, LaunchConfig::linear(1, 8), &[vec![0.0; 8]], 0);
        assert_eq!(interp.unwrap(), native.unwrap());
        let [interp, native] = both(text, kernel, LaunchConfig::linear(1, 8), &[vec![0.0; 8]], 1);
        let message = fault_of(&native);
        assert_eq!(fault_of(&interp), message);
        assert!(message.starts_with("test.lisp:2:"), "{message}");
    }
    let mut m = module(text);
    m.set_interpreted(false);
    if cfg!(feature = "native") {
        assert_eq!(m.kernel_path("first").unwrap(), KernelPath::Native);
        assert_eq!(m.kernel_path("second").unwrap(), KernelPath::Native);
    }
}

#[test]
fn warp_collectives_match_the_interpreter_bit_for_bit() {
    // Partial warps (48 threads a block), lanes that returned, divergent branches, masks of
    // some lanes, widths that are not powers of two, sources out of the segment and out of
    // the mask, a collective in an `if` condition and inside a loop with `break`, nested
    // collectives, and votes, reductions, match-any and match-all (its flag stored through a
    // pointer).
    let text = "(defkernel warps (void ((a float*) (out float*) (flags int*) (n int)))
      (let* ((tx thread-idx-x)
             (g (+ (* block-idx-x block-dim-x) tx))
             (o (* g 16))
             (v (int (aref a g))))
        (when (= (mod tx 7) 5) (return))
        (set (aref out o) (float (shfl-sync #xffffffff v (+ tx n))))
        (set (aref out (+ o 1)) (float (shfl-down-sync #x0000ffff v 3 8)))
        (set (aref out (+ o 2)) (float (shfl-up-sync #xffffffff v n 3)))
        (set (aref out (+ o 3)) (float (shfl-xor-sync #xffffffff v 17 16)))
        (set (aref out (+ o 4)) (float (shfl-xor-sync #xffffffff (shfl-down-sync #xffffffff v 1) 2)))
        (if (< (mod tx 3) 2)
            (progn
              (set (aref out (+ o 5)) (float (shfl-down-sync (activemask) v 1)))
              (set (aref out (+ o 6)) (float (ballot-sync #xffffffff (> v 10)))))
            (set (aref out (+ o 7)) (float (any-sync #xffffffff (= v 3)))))
        (when (/= (all-sync #xffffffff (> v -1000)) 0)
          (set (aref out (+ o 8)) (float (reduce-add-sync #xffffffff v))))
        (set (aref out (+ o 9)) (float (reduce-max-sync #xffffffff (- 0 v))))
        (set (aref out (+ o 10)) (float (uint (match-any-sync #xffffffff (mod v 4)))))
        (set (aref out (+ o 11)) (float (shfl-sync #xffffffff v -3)))
        (let ((s v))
          (for (k 0 (< k 5) (+ k 1))
            (when (= (mod (+ tx k) 9) 0) (break))
            (set s (+ s (shfl-up-sync #xffffffff s 1))))
          (set (aref out (+ o 12)) (float s)))
        (set (aref out (+ o 13)) (float (shfl-down-sync #xffffffff v (- 0 n))))
        (set (aref out (+ o 14))
             (float (match-all-sync #xffffffff (/ v 100) (pointer (aref flags g)))))
        (when (= (mod tx 2) 0)
          (set (aref out (+ o 15))
               (float (match-all-sync #xffffffff (mod tx (+ n 1)) (pointer (aref flags (+ g 96)))))))))";
    let a: Vec<f32> = (0..96).map(|i| ((i * 37) % 23) as f32 - 5.0).collect();
    for n in [1, 5, 40] {
        let [interp, native] = both(
            text,
            "warps",
            LaunchConfig::linear(2, 48),
            &[a.clone(), vec![-1.0; 96 * 16], vec![-1.0; 192]],
            n,
        );
        let (interp, native) = (interp.unwrap(), native.unwrap());
        let bits = |r: &Vec<Vec<f32>>| -> Vec<u32> {
            r[1..].iter().flatten().map(|x| x.to_bits()).collect()
        };
        assert_eq!(bits(&interp), bits(&native), "n = {n}");
        // The kernel did write: not every slot kept its initial value.
        assert!(interp[1].iter().filter(|x| **x != -1.0).count() > 96 * 8);
        // match-all-sync stored its flags through its pointers: 1 for the uniform key, and 0
        // for `tx mod (n + 1)` on the even lanes unless n = 1.
        let flag = |f: u32| interp[2].iter().any(|x| x.to_bits() == f);
        assert!(flag(1) && (n == 1 || flag(0)), "n = {n}");
    }
}
