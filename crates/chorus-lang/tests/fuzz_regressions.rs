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

/// `#\` as the last two characters of the text: the error's span ran one column past the end
/// (1:57-1:58 for 56 characters). It now covers the `#\` itself.
#[test]
fn a_character_prefix_at_the_end_of_the_text_is_located_inside_it() {
    let text = "(defkernelmacro fz-twice (&body progn) `(progn ,@body #\\";
    let error = chorus_lang::reader::read_str(text, "fuzz.lisp").unwrap_err();
    let span = &error.span;
    let length = text.chars().count() as u32;
    assert_eq!((span.line, span.column), (1, length - 1), "{error}");
    assert!(span.end_column <= length + 1, "{error}: {span:?}");
    assert!(
        error.to_string().contains("expected a character"),
        "{error}"
    );
}
