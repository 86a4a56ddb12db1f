//! The macro expander and the macro-time Lisp.

use chorus_lang::expand_str;

/// The expanded unit, one top-level form per line, or the error.
fn ex(text: &str) -> String {
    match expand_str(text, "t.lisp") {
        Ok(forms) => forms
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
        Err(e) => format!("ERROR {e}"),
    }
}

/// Expands `body` as the body of a kernel and returns the body's forms, printed.
fn body(defs: &str, body: &str) -> String {
    let out = ex(&format!("{defs}\n(defkernel k (void ()) {body})"));
    match out.strip_prefix("(defkernel k (void ()) ") {
        Some(rest) => rest.strip_suffix(')').unwrap_or(rest).to_string(),
        None => out,
    }
}

#[test]
fn seed_macrolet_example() {
    assert_eq!(
        body(
            "",
            "(macrolet ((square (a) (if (numberp a) (* a a) `(* ,a ,a)))) (return (square 2)) (return (square x)))"
        ),
        "(let () (return 4) (return (* x x)))"
    );
}

#[test]
fn seed_symbol_macrolet_example() {
    assert_eq!(
        body("", "(symbol-macrolet ((x 1.0)) (return x))"),
        "(let () (return 1.0))"
    );
}

#[test]
fn runaway_expansion_is_an_error_at_the_call() {
    assert_eq!(
        ex("(defkernelmacro f () '(f)) (defkernel g (void ()) (f))"),
        "ERROR t.lisp:1:51: macro expansion nests more than 1000 deep at the macro `f`; does it expand into itself?"
    );
    assert_eq!(
        ex("(defkernelmacro f () '(progn (f))) (defkernel g (void ()) (f))"),
        "ERROR t.lisp:1:59: macro expansion nests more than 1000 deep at the macro `f`; does it expand into itself?"
    );
}

#[test]
fn wrong_argument_count_names_the_macro_and_the_call() {
    assert_eq!(
        ex("(defkernelmacro f (a) `(+ ,a 1)) (defkernel g (void ()) (f 1 2))"),
        "ERROR t.lisp:1:57: macro `f` takes 1 argument (a), but got 2"
    );
}

#[test]
fn unknown_macro_time_function_points_into_the_macro() {
    assert_eq!(
        ex("(defkernelmacro f (a) (foo a)) (defkernel g (void ()) (f 1))"),
        "ERROR t.lisp:1:23: in macro `f` (expanding the call at t.lisp:1:55): unknown macro-time \
         function `foo`; macro code runs at expansion time and can call only the built-in list, \
         number and string functions and its own local functions (flet, labels)"
    );
}
