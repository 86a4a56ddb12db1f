//! The expander and the checker consume a large unit statement by statement
//! (`Expander::expand_unit_owned`, `check::check_module_owned`: memory) and walk a small one
//! as borrowed (`expand_unit`, `check_module`). Both ways must give the same forms, spans,
//! IR and errors, for valid and invalid kernels alike.

use chorus_lang::check::{check_module, check_module_owned};
use chorus_lang::{Error, Expander, Form, FormKind, read_str};
use proptest::prelude::*;

#[path = "support/arbitrary_form.rs"]
mod arbitrary_form;
use arbitrary_form::arbitrary_form;

/// Enough top-level forms that `expand_unit_owned` takes its consuming path.
const FILLERS: usize = 64;

/// `text` followed by [`FILLERS`] small kernels, read.
fn padded(text: &str) -> Option<Vec<Form>> {
    let mut all = text.to_string();
    for n in 0..FILLERS {
        all.push_str(&format!(
            "\n(defkernel filler-{n} (void ((o int*))) (let ((v {n})) (when (> v 0) (set (aref o 0) v))))"
        ));
    }
    read_str(&all, "t.lisp").ok()
}

/// A form with its spans, all the way down, for comparison.
fn spelled(form: &Form) -> String {
    let inner = match &form.kind {
        FormKind::List(items) => items.iter().map(spelled).collect::<Vec<_>>().join(" "),
        _ => form.to_string(),
    };
    format!(
        "{}@{}-{}:{}",
        inner, form.span, form.span.end_line, form.span.end_column
    )
}

fn outcome<T>(result: &Result<T, Error>, show: impl Fn(&T) -> String) -> String {
    match result {
        Ok(value) => format!("ok {}", show(value)),
        Err(e) => format!("error {e}"),
    }
}

/// `text` with fillers, expanded and checked both ways; panics where they differ.
fn compare(text: &str) {
    let Some(forms) = padded(text) else {
        return;
    };
    let show_forms = |forms: &Vec<Form>| forms.iter().map(spelled).collect::<Vec<_>>().join("\n");
    let borrowed = Expander::new().expand_unit(&forms);
    let owned = Expander::new().expand_unit_owned(forms);
    assert_eq!(
        outcome(&borrowed, show_forms),
        outcome(&owned, show_forms),
        "expansion differs for {text}"
    );
    let Ok(expanded) = borrowed else {
        return;
    };
    let show_module = |m: &chorus_lang::ir::Module| format!("{m:?}");
    let checked = check_module(&expanded);
    let consumed = check_module_owned(expanded);
    assert_eq!(
        outcome(&checked, show_module),
        outcome(&consumed, show_module),
        "checking differs for {text}"
    );
}

#[test]
fn valid_and_invalid_kernels_give_the_same_results_both_ways() {
    let cases = [
        // Valid: statements in a let, a progn, a macro's output, a sequential let, declare.
        "(defkernel k (void ((a float*) (n int)))
           (declare (launch-bounds 128))
           (let ((acc 0.0) (i thread-idx-x))
             (set acc (+ acc (aref a i)))
             (progn (set acc (* acc 2.0)) (when (< i n) (set (aref a i) acc)))
             (let ((r 1.0) (q (+ r 1.0))) (set (aref a 0) q))))",
        "(defkernelmacro twice (&body body) `(progn ,@body ,@body))
         (defkernel k (void ((a int*)))
           (twice (let ((x 1)) (twice (set (aref a 0) (+ (aref a 0) x))))))",
        "(defkernel f (int ((x int))) (let ((y (* x 2))) (return y)))
         (defkernel k (void ((a int*))) (set (aref a 0) (f 3)))",
        // Invalid, in and after long bodies: the first error must be the same.
        "(defkernel k (void ((a int*)))
           (let ((i 0)) (set (aref a i) 1) (set i 1.5) (set zzz 2)))",
        "(defkernel k (void ((a int*))) (let ((i)) (return)))",
        "(defkernel k (void ((a int*))) (let i (return)))",
        "(defkernel k (void ((a int*))) (let))",
        "(defkernel k (void ((a int*))) (progn (set (aref a 0) 1) (+ 1 2)))",
        "(defkernel k (void ((a int*))) (let ((x 1)) (let ((x 2) (x 3)) (return))))",
        "(defkernel f (int ((x int))) (let ((y x)) (set y 2)))",
        "(defkernel k (void ((a int*))) (let ((x 1)) `(set x 2)))",
        "(defkernel k (void ((a int*))) (let ((x 1)) (set (aref a 0) ,x)))",
        "(defkernel k (void ((a int*))) (let ((x 1)) (syncthreads) (declare (launch-bounds 32))))",
        "(defkernel k (void ((a int*))) (let ((x 1)) (set (aref a 0) x)) (undefined-macro-or-fn 1))",
        "(defkernel k (void ((a int*))) (symbol-macrolet ((s (aref a 0))) (let ((x 1)) (set s x))))",
        "(defkernel k (void ((a int*))) (macrolet ((m (v) `(set (aref a 0) ,v))) (let ((x 1)) (m x))))",
        "(defkernel k)",
        "(defkernel k (void ((a int*))) (let nil (set (aref a 0) 1)))",
    ];
    for case in cases {
        compare(case);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_bodies_give_the_same_results_both_ways(
        body in prop::collection::vec(arbitrary_form(), 0..6),
    ) {
        let body = body.join(" ");
        compare(&format!(
            "(defkernel k (void ((a int*) (n int) (x float) (i int) (p float*)))
               (let ((s 0) (acc 0.0)) {body}))"
        ));
        compare(&format!(
            "(defkernel k (void ((a int*) (n int) (x float) (i int) (p float*))) {body})"
        ));
        compare(&format!(
            "(defkernel f (int ((n int))) (let ((r n)) {body} (return r)))
             (defkernel k (void ((a int*))) (when t (let ((q 1)) {body})))"
        ));
    }
}
