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
