//! Regressions found by fuzzing (`fuzz/README.md`), each with the input that found it, reduced.

/// A switch on `thread-idx-x` (an int in the language, an `unsigned int` in CUDA C) with a
/// negative label: nvcc refused `switch (threadIdx.x) { case -1: … }` as a narrowing
/// conversion. The scrutinee is printed with the language's type.
#[test]
fn a_switch_on_a_thread_index_takes_negative_labels() {
    let module = chorus_lang::compile_str(
        "(defkernel k (void ((out int*)))
           (switch thread-idx-x
             (-1 (set (aref out 0) 1))
             (t (set (aref out 0) 2))))",
        "t.lisp",
    )
    .unwrap();
    let code = chorus_lang::cuda::print_module(&module).unwrap().code;
    assert!(code.contains("switch ((int)(threadIdx.x)) {"), "{code}");
    assert!(code.contains("case -1: {"), "{code}");
}
