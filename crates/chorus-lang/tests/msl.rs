//! The Metal Shading Language dialect: printed MSL (insta snapshots in `tests/snapshots`),
//! address spaces, implicit parameters, and what the Metal target refuses at its span.

use chorus_lang::cfamily::{PrintOptions, print_for_target};
use chorus_lang::target::Target;

fn metal() -> Target {
    Target::metal(8).expect("Apple8 is a Metal target")
}

/// The MSL of `source` without the prelude (the part that depends on the kernel).
fn msl(source: &str) -> String {
    let module = chorus_lang::compile_str_for(source, "test.lisp", &metal())
        .unwrap_or_else(|e| panic!("{e}"));
    let printed = print_for_target(&module, &metal(), &PrintOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let prelude = chorus_lang::cfamily::msl::PRELUDE;
    assert!(printed.code.starts_with(prelude), "{}", printed.code);
    printed.code[prelude.len()..].trim_start().to_string()
}

/// The message of the error compiling or printing `source` for Metal, with its line.
fn refusal(source: &str) -> String {
    let result = chorus_lang::compile_str_for(source, "test.lisp", &metal())
        .and_then(|m| print_for_target(&m, &metal(), &PrintOptions::default()));
    match result {
        Ok(p) => panic!("printed:\n{}", p.code),
        Err(e) => format!("{}: {}", e.span.line, e.message),
    }
}

#[test]
fn vector_add_binds_buffers_and_thread_positions() {
    insta::assert_snapshot!(msl(
        "(defkernel vec-add (void ((a float*) (b float*) (c float*) (n int)))
           (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x)))
             (if (< i n) (set (aref c i) (+ (aref a i) (aref b i))))))"
    ));
}

#[test]
fn shared_memory_barriers_and_launch_bounds() {
    insta::assert_snapshot!(msl("(defkernel block-sum (void ((a float*) (out float*)))
           (declare (launch-bounds 256))
           (with-shared-memory ((s float 256))
             (let ((tx thread-idx-x))
               (set (aref s tx) (aref a (+ (* block-idx-x 256) tx)))
               (syncthreads)
               (when (= tx 0)
                 (let ((sum 0.0))
                   (for (k 0 (< k 256) (+ k 1)) (set sum (+ sum (aref s k))))
                   (set (aref out block-idx-x) sum))))))"));
}

#[test]
fn dynamic_threadgroup_memory_is_a_kernel_parameter() {
    let text = msl("(defkernel reverse (void ((a int*)))
           (with-dynamic-shared-memory ((s int))
             (set (aref s thread-idx-x) (aref a thread-idx-x))
             (syncthreads)
             (set (aref a thread-idx-x) (aref s (- block-dim-x thread-idx-x 1)))))");
    assert!(
        text.contains("threadgroup uchar* chorus_dyn_smem [[threadgroup(0)]]"),
        "{text}"
    );
    assert!(
        text.contains("threadgroup int* s = (threadgroup int*)chorus_dyn_smem;"),
        "{text}"
    );
}

#[test]
fn pointers_take_the_space_they_point_into() {
    insta::assert_snapshot!(msl("(defkernel (bump :device) (void ((p int*)))
           (set (aref p 0) (+ (aref p 0) 1)))
         (defkernel (add-to :device) (void ((acc float*) (x float)))
           (set (aref acc 0) (+ (aref acc 0) x)))
         (defkernel (lane-of :device) (int ())
           (return (+ thread-idx-x 0)))
         (defkernel pointers (void ((a int*) (out float*)))
           (with-shared-memory ((s int 32))
             (let ((acc 0.0))
               (set (aref s thread-idx-x) 0)
               (bump (pointer (aref a (lane-of))))
               (add-to (pointer acc) 2.0)
               (set (aref out thread-idx-x) acc))))"));
}

#[test]
fn one_pointer_parameter_cannot_point_into_two_spaces() {
    let message = refusal(
        "(defkernel (bump :device) (void ((p int*)))
           (set (aref p 0) (+ (aref p 0) 1)))
         (defkernel twice (void ((a int*)))
           (with-shared-memory ((s int 32))
             (bump (pointer (aref a 0)))
             (bump (pointer (aref s 0)))))",
    );
    assert!(
        message.starts_with("6:") && message.contains("device and threadgroup"),
        "{message}"
    );
}

#[test]
fn warp_collectives_atomics_and_half() {
    insta::assert_snapshot!(msl(
        "(defkernel collectives (void ((out int*) (f float*) (h half*)))
           (let* ((v (+ thread-idx-x 1))
                  (s (shfl-down-sync (uint -1) v 16))
                  (x (shfl-xor-sync (uint -1) v 3 8))
                  (b (ballot-sync (uint -1) (> v 4)))
                  (r (reduce-add-sync (uint -1) v)))
             (atomic-add (pointer (aref out 0)) (+ s x r (int b)))
             (atomic-max (pointer (aref out 1)) v)
             (atomic-add (pointer (aref f 0)) 1.5)
             (set (aref h thread-idx-x) (* (aref h thread-idx-x) (half 2.0)))
             (set (aref out (+ 2 thread-idx-x)) lane-id)))"
    ));
}

#[test]
fn vectors_and_structures() {
    insta::assert_snapshot!(msl("(defkernel-struct particle (pos float3) (mass float))
         (defglobal scale 2.0 :constant)
         (defkernel move (void ((ps particle*) (v float3)))
           (let ((p (aref ps thread-idx-x)))
             (set (particle-pos p) (+ (particle-pos p) (* v scale)))
             (set (aref ps thread-idx-x) p)))"));
}

#[test]
fn metal_refuses_what_it_lacks_at_the_form() {
    for (source, line, what) in [
        (
            "(defkernel k (void ((a double*)))\n  (set (aref a 0) 1.0d0))",
            1,
            "64-bit floating point",
        ),
        (
            "(defkernel k (void ((a int*)))\n  (printf \"%d\" (aref a 0)))",
            2,
            "printf",
        ),
        (
            "(defkernel k (void ((a int*)))\n  (set (aref a 0) cluster-idx-x))",
            2,
            "clusters",
        ),
        (
            "(defkernel k (void ((a int*)))\n  (cuda-asm \"__nanosleep(1);\"))",
            2,
            "inline assembly",
        ),
        (
            "(defkernel k (void ((a uint64*)))\n  (atomic-add (pointer (aref a 0)) 1))",
            2,
            "64-bit integer atomics",
        ),
        (
            "(defglobal counter 0 :shared)\n(defkernel k (void ((a int*)))\n  (set (aref a 0) counter))",
            1,
            "shared-memory globals",
        ),
        (
            "(defkernel k (void ((a uint*)))\n  (set (aref a 0) (match-any-sync (uint -1) 3)))",
            2,
            "warp match",
        ),
    ] {
        let message = refusal(source);
        assert!(
            message.starts_with(&format!("{line}:")) && message.contains(what),
            "{source}\n→ {message}"
        );
    }
}
