//! Deep but legal input compiles on a test thread's 2 MiB stack: the front end runs small units
//! on the caller's thread and must move deep ones to its big stack, with the same result.

use chorus_lang::{Expander, compile_str, read_str};

/// A kernel whose `let*` of `n` bindings expands into `let`s nested `n` deep.
fn let_star_chain(n: usize) -> String {
    let bindings: String = (1..n)
        .map(|i| format!("(x{i} (+ x{} 1)) ", i - 1))
        .collect();
    format!(
        "(defkernel f (void ((a int*))) (let* ((x0 0) {bindings}) (set (aref a 0) x{})))",
        n - 1
    )
}

#[test]
fn a_let_star_nesting_1990_deep_compiles_on_a_2_mib_stack() {
    let module = compile_str(&let_star_chain(1990), "deep.lisp").expect("compiles");
    assert_eq!(module.functions.len(), 1);
}

#[test]
fn nesting_beyond_the_form_limit_is_an_error_not_an_overflow() {
    let error = compile_str(&let_star_chain(2100), "deep.lisp").unwrap_err();
    assert!(
        error.to_string().contains("nests more than 2000 deep"),
        "{error}"
    );
}

#[test]
fn text_at_the_reader_limit_compiles_on_a_2_mib_stack() {
    let depth = chorus_lang::reader::MAX_NESTING - 4;
    let text = format!(
        "(defkernel f (int ()) (return {}1{}))",
        "(- ".repeat(depth),
        ")".repeat(depth)
    );
    let module = compile_str(&text, "deep.lisp").expect("compiles");
    assert_eq!(module.functions.len(), 1);
}

#[test]
fn a_deep_symbol_macro_loop_gives_the_same_error_as_before() {
    let text = "(defkernel-symbol-macro a (- a)) (defkernel f (int ()) (return a))";
    let error = Expander::new()
        .expand_unit(&read_str(text, "t.lisp").unwrap())
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "t.lisp:1:64: macro expansion nests more than 1000 deep at the symbol macro `a`; does it \
         expand into itself?"
    );
}

/// Runs `f` on a thread with a 2 MiB stack (`std::thread`'s default), where programs compile.
fn on_2_mib_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn_scoped(scope, f)
            .expect("a test thread starts")
            .join()
            .expect("the test thread does not overflow or panic")
    })
}

/// A kernel returning `(+ 1 … 1)` of `operands` operands: a left fold as deep as it is long.
fn flat_sum(operands: usize) -> String {
    format!(
        "(defkernel f (int ()) (return (+ {})))",
        "1 ".repeat(operands)
    )
}

#[test]
fn a_flat_sum_of_10_000_operands_compiles_and_drops_on_a_2_mib_stack() {
    on_2_mib_stack(|| {
        let module = compile_str(&flat_sum(10_000), "flat.lisp").expect("compiles");
        assert_eq!(module.functions.len(), 1);
        drop(module);
    });
}

/// A macro whose output nests `(- …)` `10 * calls` deep: `calls` nested calls (text nests only
/// that deep, under the reader's limit) of a macro that wraps its argument in ten `-`.
fn deep_macro_output(calls: usize) -> String {
    format!(
        "(defkernelmacro neg10 (x) `(- (- (- (- (- (- (- (- (- (- ,x)))))))))))
         (defkernel f (int ()) (return {}1{}))",
        "(neg10 ".repeat(calls),
        ")".repeat(calls)
    )
}

#[test]
fn macro_output_1280_deep_compiles_and_drops_on_a_2_mib_stack() {
    on_2_mib_stack(|| {
        let module = compile_str(&deep_macro_output(128), "deep.lisp").expect("compiles");
        assert_eq!(module.functions.len(), 1);
        drop(module);
    });
}

#[test]
fn the_deepest_accepted_nesting_compiles_and_drops_on_a_2_mib_stack() {
    on_2_mib_stack(|| {
        let module = compile_str(&let_star_chain(1990), "deep.lisp").expect("compiles");
        let statements = module.functions[0].body.stmts.len();
        assert!(statements > 0);
        drop(module);
        let module = compile_str(&deep_macro_output(199), "deep.lisp").expect("compiles");
        drop(module);
    });
}
