//! The macro expander and the macro-time Lisp: built-in macros, the seed's examples, scoping,
//! the sph example's macros, lambda lists, quasiquote, the interpreter's functions, limits,
//! errors (message and span), and a property: no form makes the expander panic.

use chorus_lang::expand::{Expander, MAX_EXPANSION_DEPTH, MAX_EXPANSIONS, MacroContext};
use chorus_lang::form::{FloatPrecision, IntSuffix};
use chorus_lang::{Error, Form, FormKind, Span, expand_str, read_one, read_str};
use proptest::prelude::*;

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

/// The error `text` gives.
fn err(text: &str) -> Error {
    match expand_str(text, "t.lisp") {
        Ok(forms) => panic!("expected an error, got {forms:?}"),
        Err(e) => e,
    }
}

/// Expands `body` as the body of a kernel, after the definitions `defs`, and returns the body.
fn body(defs: &str, body: &str) -> String {
    let out = ex(&format!("{defs}\n(defkernel k (void ()) {body})"));
    match out.strip_prefix("(defkernel k (void ()) ") {
        Some(rest) => rest.strip_suffix(')').unwrap_or(rest).to_string(),
        None => out,
    }
}

/// The value a macro-time expression computes: `(m)` where `m`'s body is `expr`.
fn eval(expr: &str) -> String {
    body(&format!("(defkernelmacro m () {expr})"), "(m)")
}

fn span_of(form: &Form) -> (u32, u32) {
    (form.span.line, form.span.column)
}

// --- the built-in macros -----------------------------------------------------------------------

#[test]
fn let_star_nests_one_binding_per_level() {
    assert_eq!(
        body("", "(let* ((a 1) (b (+ a 1)) (c b)) (return c))"),
        "(let ((a 1)) (let ((b (+ a 1))) (let ((c b)) (return c))))"
    );
    assert_eq!(body("", "(let* () (return 0))"), "(let () (return 0))");
    assert_eq!(body("", "(let* nil (return 0))"), "(let () (return 0))");
    assert_eq!(body("", "(let* ((a 1)))"), "(let ((a 1)))");
}

#[test]
fn when_and_unless() {
    assert_eq!(
        body("", "(when (< i n) (f i) (g i))"),
        "(if (< i n) (progn (f i) (g i)))"
    );
    assert_eq!(
        body("", "(unless (< i n) (f i))"),
        "(if (not (< i n)) (progn (f i)))"
    );
    assert_eq!(body("", "(when t)"), "(if t (progn))");
    // Their bodies are expanded too.
    assert_eq!(
        body("", "(when a (unless b (let* ((x 1)) (f x))))"),
        "(if a (progn (if (not b) (progn (let ((x 1)) (f x))))))"
    );
}

#[test]
fn built_in_macro_errors() {
    assert_eq!(
        err("(defkernel k (void ()) (let* x (f)))").to_string(),
        "t.lisp:1:24: expected (let* ((var init)…) statement…), found `(let* x (f))`"
    );
    assert_eq!(
        err("(defkernel k (void ()) (when))").to_string(),
        "t.lisp:1:24: expected (when test statement…), found `(when)`"
    );
    assert_eq!(
        err("(defkernel k (void ()) (unless))").to_string(),
        "t.lisp:1:24: expected (unless test statement…), found `(unless)`"
    );
}

#[test]
fn built_in_macros_can_be_redefined() {
    assert_eq!(
        body(
            "(defkernelmacro when (test &body body) `(if ,test (progn ,@body) (progn)))",
            "(when a (f))"
        ),
        "(if a (progn (f)) (progn))"
    );
}

// --- the seed's examples -------------------------------------------------------------------------

#[test]
fn seed_macrolet_example() {
    assert_eq!(
        body(
            "",
            "(macrolet ((square (a) (if (numberp a) (* a a) `(* ,a ,a)))) (return (square 2)) \
             (return (square x)))"
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
fn seed_vector_add_is_unchanged() {
    let text = "(defkernel vec-add-kernel (void ((a float*) (b float*) (c float*) (n int))) \
                (let ((i (+ (* block-dim-x block-idx-x) thread-idx-x))) (if (< i n) (set (aref c i) \
                (+ (aref a i) (aref b i))))))";
    let read = read_str(text, "t.lisp").unwrap();
    let expanded = expand_str(text, "t.lisp").unwrap();
    assert!(expanded[0].same(&read[0]));
}

#[test]
fn macrolet_accepts_an_empty_lambda_list() {
    assert_eq!(
        body("", "(macrolet ((one () 1)) (return (one)))"),
        "(let () (return 1))"
    );
    assert_eq!(body("", "(macrolet () (return 1))"), "(let () (return 1))");
}

#[test]
fn global_macros_and_symbol_macros() {
    let defs = "(defkernel-symbol-macro block-size 256)
                (defkernelmacro twice (x) `(* 2 ,x))";
    assert_eq!(
        body(defs, "(return (twice block-size))"),
        "(return (* 2 256))"
    );
}

#[test]
fn definition_order_does_not_matter() {
    let text = "(defkernel k (void ()) (return (outer 1)))
                (defkernelmacro outer (x) `(inner ,x))
                (defkernelmacro inner (x) `(+ ,x limit))
                (defkernel-symbol-macro limit 10)";
    assert_eq!(ex(text), "(defkernel k (void ()) (return (+ 1 10)))");
}

#[test]
fn macros_expand_into_macros_and_macrolet() {
    let defs = "(defkernelmacro with-square ((name) &body body)
                  `(macrolet ((,name (x) `(* ,x ,x))) ,@body))";
    assert_eq!(
        body(defs, "(with-square (sq) (return (sq (+ a 1))))"),
        "(let () (return (* (+ a 1) (+ a 1))))"
    );
}

#[test]
fn symbol_macros_expand_into_macro_calls_and_chains() {
    let defs = "(defkernel-symbol-macro a b)
                (defkernel-symbol-macro b (twice c))
                (defkernelmacro twice (x) `(+ ,x ,x))";
    assert_eq!(body(defs, "(return a)"), "(return (+ c c))");
}

#[test]
fn symbol_macros_work_as_set_places_and_array_sizes() {
    let defs = "(defkernel-symbol-macro n 16) (defkernel-symbol-macro head (aref buf 0))";
    assert_eq!(
        body(
            defs,
            "(with-shared-memory ((s float n n)) (set head (aref s 0 0)))"
        ),
        "(with-shared-memory ((s float 16 16)) (set (aref buf 0) (aref s 0 0)))"
    );
}

#[test]
fn top_level_macros_make_top_level_forms() {
    let text = "(defkernelmacro def-getter (name index)
                  `(defkernel ,name (float ((info float*))) (return (aref info ,index))))
                (defkernelmacro def-getters (&rest specs)
                  `(progn ,@(mapcar (lambda (s) `(def-getter ,@s)) specs)))
                (def-getters (info-min-x 0) (info-min-y 1))
                (defglobal scale (twice 2) :constant)
                (defkernelmacro twice (x) `(* 2 ,x))
                (defkernel-struct pair (x int) (y int))";
    assert_eq!(
        ex(text),
        "(defkernel info-min-x (float ((info float*))) (return (aref info 0)))\n\
         (defkernel info-min-y (float ((info float*))) (return (aref info 1)))\n\
         (defglobal scale (* 2 2) :constant)\n\
         (defkernel-struct pair (x int) (y int))"
    );
}

#[test]
fn definitions_inside_a_top_level_progn_apply_to_the_forms_after_them() {
    let text = "(progn (defkernelmacro one () 1) (defkernel k (int ()) (return (one))))";
    assert_eq!(ex(text), "(defkernel k (int ()) (return 1))");
    let text = "(progn (defkernel k (int ()) (return (two))) (defkernelmacro two () 2))";
    assert_eq!(
        ex(text),
        "(defkernel k (int ()) (return (two)))",
        "not yet defined: `(two)` is left for the checker as a function call"
    );
}

#[test]
fn top_level_macros_may_define_macros_for_later_forms() {
    let text = "(defkernelmacro define-constant (name value)
                  `(defkernel-symbol-macro ,name ,value))
                (define-constant width 64)
                (defkernel k (int ()) (return width))";
    assert_eq!(ex(text), "(defkernel k (int ()) (return 64))");
}

// --- lookup order and shadowing ------------------------------------------------------------------

#[test]
fn user_macros_shadow_core_forms() {
    // A user `if` that swaps its branches, as cl-cuda allows.
    let defs =
        "(defkernelmacro if (test then else) `(progn (when ,test ,else) (unless ,test ,then)))";
    assert_eq!(
        body(defs, "(if c (f) (g))"),
        // The built-in `when` expands into `if` — the user's — whose expansion needs 3 operands.
        "ERROR t.lisp:2:24: macro `if` takes 3 arguments (test then else), but got 2"
    );
    let defs = "(defkernelmacro if (test then &optional else) `(switch ,test (1 ,then) (t ,else)))";
    assert_eq!(body(defs, "(if c (f) (g))"), "(switch c (1 (f)) (t (g)))");
}

#[test]
fn local_macros_shadow_global_macros() {
    let defs = "(defkernelmacro m () 1)";
    assert_eq!(
        body(
            defs,
            "(progn (return (m)) (macrolet ((m () 2)) (return (m))) (return (m)))"
        ),
        "(progn (return 1) (let () (return 2)) (return 1))"
    );
}

#[test]
fn variables_shadow_symbol_macros() {
    let defs = "(defkernel-symbol-macro x 100)";
    assert_eq!(
        body(defs, "(progn (f x) (let ((x (g x))) (f x)) (f x))"),
        "(progn (f 100) (let ((x (g 100))) (f x)) (f 100))"
    );
    assert_eq!(
        body("", "(symbol-macrolet ((x 1)) (let ((x x)) (f x)) (f x))"),
        "(let () (let ((x 1)) (f x)) (f 1))"
    );
    // And a symbol-macrolet shadows the variable again.
    assert_eq!(
        body(
            "",
            "(let ((x 1)) (symbol-macrolet ((x 2)) (let ((y x)) (f x y))))"
        ),
        "(let ((x 1)) (let () (let ((y 2)) (f 2 y))))"
    );
}

#[test]
fn every_binding_form_shadows() {
    let defs = "(defkernel-symbol-macro i 7)";
    // do: the init sees the outer i; steps, test and body see the variable.
    assert_eq!(
        body(defs, "(do ((i i (+ i 1))) ((> i 3) i) (f i))"),
        "(do ((i 7 (+ i 1))) ((> i 3) i) (f i))"
    );
    assert_eq!(
        body(defs, "(do ((j 0 (+ j i))) ((> j i)) (f i))"),
        "(do ((j 0 (+ j 7))) ((> j 7)) (f 7))"
    );
    // for: likewise.
    assert_eq!(
        body(defs, "(for (i i (< i 10) (+ i 1)) (f i))"),
        "(for (i 7 (< i 10) (+ i 1)) (f i))"
    );
    // with-shared-memory: the sizes are outside, the body inside.
    assert_eq!(
        body(defs, "(with-shared-memory ((i int i)) (f i))"),
        "(with-shared-memory ((i int 7)) (f i))"
    );
    assert_eq!(
        body(defs, "(with-dynamic-shared-memory ((i int)) (f i))"),
        "(with-dynamic-shared-memory ((i int)) (f i))"
    );
    // Kernel parameters.
    assert_eq!(
        ex("(defkernel-symbol-macro i 7) (defkernel k (void ((i int) (j int))) (f i j) (g i))"),
        "(defkernel k (void ((i int) (j int))) (f i j) (g i))"
    );
    assert_eq!(
        ex("(defkernel-symbol-macro j 7) (defkernel (k :device) (int ((i int))) (return (+ i j)))"),
        "(defkernel (k :device) (int ((i int))) (return (+ i 7)))"
    );
}

#[test]
fn declarations_types_and_constant_positions_are_left_alone() {
    let defs = "(defkernel-symbol-macro int float) (defkernel-symbol-macro launch-bounds 1)
                (defkernel-symbol-macro default 3) (defkernel-symbol-macro one 1)";
    assert_eq!(
        ex(&format!(
            "{defs} (defkernel k (void ((a int*))) (declare (launch-bounds 32))
               (with-shared-memory ((s int 4)) (switch one (one (f)) (default (g)) (t (h))))
               (printf \"%d\" one) (return (int one)))"
        )),
        "(defkernel k (void ((a int*))) (declare (launch-bounds 32)) (with-shared-memory ((s int 4)) \
         (switch 1 (1 (f)) (default (g)) (t (h)))) (printf \"%d\" 1) (return (int 1)))"
    );
}

#[test]
fn commas_and_backquotes_outside_macros_are_errors() {
    assert_eq!(
        err("(defkernel k (void ()) (f ,x))").to_string(),
        "t.lisp:1:27: a comma (`,` or `,@`) is only meaningful inside a backquote in macro code"
    );
    assert_eq!(
        err("(defkernel k (void ()) (f `(a)))").to_string(),
        "t.lisp:1:27: a backquote is only meaningful in macro code (defkernelmacro, macrolet)"
    );
}

// --- the sph example's macros ----------------------------------------------------------------------

const SPH_MACROS: &str = "
(defkernelmacro do-range ((var from to) &body body)
  (alexandria:with-gensyms (limit)
    `(let ((,limit ,to))
       (do ((,var ,from (+ ,var 1)))
           ((> ,var ,limit))
         ,@body))))

(defkernelmacro and (&rest args)
  (case (length args)
    (0 t)
    (1 (car args))
    (t `(if ,(car args) (and ,@(cdr args)) nil))))

(defkernelmacro inc (place val)
  `(set ,place (+ ,place ,val)))

(defkernelmacro pow (x n)
  (check-type n fixnum)
  (if (= n 1) x `(* ,x (pow ,x ,(1- n)))))

(defkernelmacro pow-loop (x n)
  (check-type n fixnum)
  `(* ,@(loop repeat n collect x)))

(defkernelmacro with-cell ((i j k info x) &body body)
  `(let ((,i (pos-to-cell-x ,x ,info))
         (,j (pos-to-cell-y ,x ,info))
         (,k (pos-to-cell-z ,x ,info)))
     ,@body))

(defkernelmacro do-particles-in-cell ((p nbr info i j k) &body body)
  (alexandria:with-gensyms (n index)
    `(when (valid-cell-index ,info ,i ,j ,k)
       (let ((,n (number-of-particles-in-cell ,nbr ,info ,i ,j ,k)))
         (do-range (,index 0 (- ,n 1))
           (let ((,p (nth-particle-in-cell ,index ,nbr ,info ,i ,j ,k)))
             ,@body))))))

(defkernelmacro do-neighbor-particles ((p nbr info x) &body body)
  (alexandria:with-gensyms (i0 j0 k0 i j k shared-info)
    `(with-shared-memory ((,shared-info float 15))
       (do-range (,i 0 14)
         (set (aref ,shared-info ,i) (aref ,info ,i)))
       (with-cell (,i0 ,j0 ,k0 ,shared-info ,x)
         (do-range (,i (- ,i0 1) (+ ,i0 1))
           (do-range (,j (- ,j0 1) (+ ,j0 1))
             (do-range (,k (- ,k0 1) (+ ,k0 1))
               (do-particles-in-cell (,p ,nbr ,shared-info ,i ,j ,k)
                 ,@body))))))))
";

#[test]
fn sph_small_macros() {
    assert_eq!(
        body(SPH_MACROS, "(inc (aref a i) 1.0)"),
        "(set (aref a i) (+ (aref a i) 1.0))"
    );
    assert_eq!(
        body(SPH_MACROS, "(return (pow x 3))"),
        "(return (* x (* x x)))"
    );
    assert_eq!(
        body(SPH_MACROS, "(return (pow-loop (f y) 3))"),
        "(return (* (f y) (f y) (f y)))"
    );
    assert_eq!(body(SPH_MACROS, "(return (and))"), "(return t)");
    assert_eq!(body(SPH_MACROS, "(return (and a))"), "(return a)");
    assert_eq!(
        body(SPH_MACROS, "(return (and (<= 0 i) (< i n) t))"),
        "(return (if (<= 0 i) (if (< i n) t nil) nil))"
    );
    assert_eq!(
        body(SPH_MACROS, "(do-range (i 0 (- n 1)) (inc (aref a i) 1))"),
        "(let ((#:limit1 (- n 1))) (do ((i 0 (+ i 1))) ((> i #:limit1)) (set (aref a i) (+ (aref a i) 1))))"
    );
}

#[test]
fn sph_do_range_with_once_only() {
    let defs = "(defkernelmacro do-range ((var from to) &body body)
                  (once-only (to)
                    `(do ((,var ,from (+ ,var 1))) ((> ,var ,to)) ,@body)))";
    assert_eq!(
        body(defs, "(do-range (i 0 (- n 1)) (f i))"),
        "(let ((#:to1 (- n 1))) (do ((i 0 (+ i 1))) ((> i #:to1)) (f i)))"
    );
    assert_eq!(
        body(defs, "(do-range (i 0 14) (f i))"),
        "(do ((i 0 (+ i 1))) ((> i 14)) (f i))"
    );
}

#[test]
fn sph_info_accessors_generated_by_one_macro() {
    // sph.lisp writes fifteen one-line kernels by hand; one macro can write them.
    let text = "(defkernelmacro def-info-accessors (&rest names)
                  `(progn
                     ,@(loop for name in names
                             for index from 0
                             collect `(defkernel ,(alexandria:symbolicate 'info- name)
                                          (float ((info float*)))
                                        (return (aref info ,index))))))
                (def-info-accessors min-x min-y min-z max-x max-y max-z origin-x origin-y origin-z delta)";
    let forms = expand_str(text, "t.lisp").unwrap();
    let printed: Vec<String> = forms.iter().map(|f| f.pretty(100)).collect();
    insta::assert_snapshot!(printed.join("\n"));
}

#[test]
fn sph_check_type_rejects_a_non_integer_power() {
    let text = format!("{SPH_MACROS}(defkernel k (float ((x float))) (return (pow x y)))");
    let e = err(&text);
    assert_eq!(
        e.message,
        "macro `pow`: the value of n, `y`, is not of type fixnum"
    );
    let last_line = text.lines().count() as u32;
    assert_eq!((e.span.line, e.span.column), (last_line, 42));
}

#[test]
fn sph_do_neighbor_particles() {
    let kernel = format!(
        "{SPH_MACROS}
         (defkernel update-density (void ((rho float*) (x float4*) (nbr int*) (info float*) (n int)))
           (let ((i (+ (* block-idx-x block-dim-x) thread-idx-x)))
             (when (< i n)
               (let ((xi (aref x i)) (tmp 0.0))
                 (do-neighbor-particles (j nbr info xi)
                   (let ((dr (- xi (aref x j))))
                     (inc tmp (pow (dot dr dr) 3))))
                 (set (aref rho i) tmp)))))"
    );
    let forms = expand_str(&kernel, "t.lisp").unwrap();
    insta::assert_snapshot!(forms[0].pretty(100));
}

// --- lambda lists ----------------------------------------------------------------------------------

#[test]
fn optional_parameters() {
    let defs = "(defkernelmacro m (a &optional (b 10) (c (+ b 1) c-p) d) `(f ,a ,b ,c ,c-p ,d))";
    assert_eq!(body(defs, "(m 1)"), "(f 1 10 11 nil nil)");
    assert_eq!(body(defs, "(m 1 2)"), "(f 1 2 3 nil nil)");
    assert_eq!(body(defs, "(m 1 2 3 4)"), "(f 1 2 3 t 4)");
    assert_eq!(
        body(defs, "(m 1 2 3 4 5)"),
        "ERROR t.lisp:2:24: macro `m` takes 1 to 4 arguments (a &optional (b 10) (c (+ b 1) c-p) d), but got 5"
    );
    assert_eq!(
        body(defs, "(m)"),
        "ERROR t.lisp:2:24: macro `m` takes 1 to 4 arguments (a &optional (b 10) (c (+ b 1) c-p) d), but got 0"
    );
}

#[test]
fn rest_and_body_parameters() {
    assert_eq!(
        body(
            "(defkernelmacro m (a &rest r) `(f ,a ,@r (g ,@r)))",
            "(m 1 2 3)"
        ),
        "(f 1 2 3 (g 2 3))"
    );
    assert_eq!(
        body("(defkernelmacro m (a &body b) `(progn ,a ,@b))", "(m (f))"),
        "(progn (f))"
    );
    assert_eq!(body("(defkernelmacro m (&rest r) (length r))", "(m)"), "0");
}

#[test]
fn key_parameters() {
    let defs = "(defkernelmacro m (&key (start 0) (end 10 end-p) ((:by step) 1)) `(f ,start ,end ,end-p ,step))";
    assert_eq!(body(defs, "(m)"), "(f 0 10 nil 1)");
    assert_eq!(body(defs, "(m :end 5 :start 2 :by 3)"), "(f 2 5 t 3)");
    // The first occurrence of a keyword wins, as in Common Lisp.
    assert_eq!(body(defs, "(m :start 1 :start 2)"), "(f 1 10 nil 1)");
    assert_eq!(
        body(defs, "(m :stop 5)"),
        "ERROR t.lisp:2:27: macro `m`: unknown keyword argument `:stop`; the keywords are :start :end :by"
    );
    assert_eq!(
        body(defs, "(m :start)"),
        "ERROR t.lisp:2:24: macro `m`: the keyword arguments must come in pairs (:key value), got an odd number"
    );
    assert_eq!(
        body(defs, "(m :stop 5 :allow-other-keys t)"),
        "(f 0 10 nil 1)"
    );
    let defs = "(defkernelmacro m (a &rest r &key x &allow-other-keys) `(f ,a ,x ,@r))";
    assert_eq!(body(defs, "(m 1 :y 2 :x 3)"), "(f 1 3 :y 2 :x 3)");
}

#[test]
fn whole_aux_and_environment_parameters() {
    assert_eq!(
        body(
            "(defkernelmacro m (&whole w a &environment e &aux (n (length w)) z) `(f ,a ,n ,e ,z (quote ,w)))",
            "(m 5)"
        ),
        "(f 5 2 nil nil '(m 5))"
    );
}

#[test]
fn nested_destructuring() {
    let defs = "(defkernelmacro m (((a b) c) &optional ((d e) '(4 5))) `(f ,a ,b ,c ,d ,e))";
    assert_eq!(body(defs, "(m ((1 2) 3))"), "(f 1 2 3 4 5)");
    assert_eq!(body(defs, "(m ((1 2) 3) (6 7))"), "(f 1 2 3 6 7)");
    assert_eq!(
        body(defs, "(m ((1) 3))"),
        "ERROR t.lisp:2:28: macro `m` takes 2 arguments (a b), but got 1"
    );
    assert_eq!(
        body(defs, "(m (x 3))"),
        "ERROR t.lisp:2:28: macro `m`: expected a list matching (a b), got `x`"
    );
}

#[test]
fn lambda_list_syntax_errors() {
    assert_eq!(
        err("(defkernelmacro m (a &rest) 1)").to_string(),
        "t.lisp:1:22: `&rest` must be followed by a parameter"
    );
    assert_eq!(
        err("(defkernelmacro m (&key a &optional b) 1)").to_string(),
        "t.lisp:1:27: `&optional` is misplaced or unknown in the lambda list `(&key a &optional b)`; \
         the order is &whole, required, &optional, &rest/&body, &key, &allow-other-keys, &aux"
    );
    assert_eq!(
        err("(defkernelmacro m (a &whole w) 1)").to_string(),
        "t.lisp:1:22: `&whole` may only come first, in a macro lambda list"
    );
    assert_eq!(
        err("(defkernelmacro m (a :b) 1)").to_string(),
        "t.lisp:1:22: expected a variable name in the lambda list, found `:b`"
    );
    assert_eq!(
        err("(defkernelmacro m x 1)").to_string(),
        "t.lisp:1:19: expected a lambda list (a list of parameters), found `x`"
    );
    assert_eq!(
        err("(defkernelmacro m (&rest a b) 1)").to_string(),
        "t.lisp:1:28: unexpected parameter `b` in the lambda list `(&rest a b)`"
    );
}

// --- quasiquote --------------------------------------------------------------------------------------

#[test]
fn quasiquote_basics() {
    assert_eq!(
        eval("(let ((x 1) (l '(2 3))) `(a ,x ,@l b ,@nil (c ,@l)))"),
        "(a 1 2 3 b (c 2 3))"
    );
    assert_eq!(eval("`x"), "x");
    assert_eq!(eval("`(,@'(1 2))"), "(1 2)");
    assert_eq!(eval("(let ((x 5)) `,x)"), "5");
}

#[test]
fn nested_quasiquote() {
    // Depth 2: the inner commas stay, the ,, ones are evaluated at the outer level. The results
    // are quoted so that the kernel walker leaves the inner backquote alone.
    let quoted = |expr: &str| eval(&format!("(list 'quote {expr})"));
    assert_eq!(quoted("(let ((x 'a)) `(f `(g ,,x ,y)))"), "'(f `(g ,a ,y))");
    assert_eq!(
        quoted("(let ((x '(h 1))) `(f `(g ,',x)))"),
        "'(f `(g ,'(h 1)))"
    );
    assert_eq!(
        quoted("(let ((l '(1 2))) `(f `(g ,,@l)))"),
        "'(f `(g ,1 ,2))"
    );
    assert_eq!(quoted("`(a `(b ,(c ,(+ 1 2))))"), "'(a `(b ,(c 3)))");
    assert_eq!(
        quoted("(let ((l '(1 2))) `(f `(g ,@,@l)))"),
        "'(f `(g ,@1 ,@2))"
    );
    assert_eq!(quoted("`(a `(b ,@(c)))"), "'(a `(b ,@(c)))");
    assert!(eval("(let ((x 1)) `,@x)").contains(",@ must be inside a list"));
    assert!(
        eval("(let ((l '(1 2))) `(f `,,@l))")
            .contains("a comma followed by ,@ must be inside a list")
    );
    // The classic once-only style: a macro writing a macrolet that uses a backquote itself.
    let defs = "(defkernelmacro def-adder (name n) `(defkernelmacro ,name (x) `(+ ,x ,',n)))
                (def-adder add5 5)";
    assert_eq!(
        ex(&format!("{defs} (defkernel k (int ()) (return (add5 y)))")),
        "(defkernel k (int ()) (return (+ y 5)))"
    );
}

#[test]
fn unquote_errors() {
    assert_eq!(
        body("(defkernelmacro m (l) `(f ,@l))", "(m x)"),
        "ERROR t.lisp:1:29: in macro `m` (expanding the call at t.lisp:2:24): ,@ needs a list to splice, got `x`"
    );
    assert_eq!(
        body("(defkernelmacro m (x) (list ,x))", "(m 1)"),
        "ERROR t.lisp:1:29: in macro `m` (expanding the call at t.lisp:2:24): `,` (a comma) outside of a backquote"
    );
}

// --- the macro-time Lisp -----------------------------------------------------------------------------

#[test]
fn arithmetic_follows_common_lisp() {
    assert_eq!(eval("(+ 1 2 3)"), "6");
    assert_eq!(eval("(+)"), "0");
    assert_eq!(eval("(*)"), "1");
    assert_eq!(eval("(- 5)"), "-5");
    assert_eq!(eval("(- 10 1 2)"), "7");
    assert_eq!(eval("(* 2 3.0)"), "6.0");
    assert_eq!(eval("(+ 1 1.5d0)"), "2.5d0");
    assert_eq!(eval("(+ 1.5 1.5d0)"), "3.0d0");
    assert_eq!(eval("(/ 6 2)"), "3");
    assert_eq!(eval("(/ 7 2.0)"), "3.5");
    assert_eq!(eval("(/ 2.0)"), "0.5");
    assert_eq!(eval("(+ 1u 2)"), "3u");
    assert_eq!(eval("(* 2ll 3u)"), "6ll");
    assert_eq!(eval("(1+ 1)"), "2");
    assert_eq!(eval("(1- 1.0)"), "0.0");
    assert_eq!(eval("(mod -7 2)"), "1");
    assert_eq!(eval("(rem -7 2)"), "-1");
    assert_eq!(eval("(mod 7.5 2)"), "1.5");
    assert_eq!(
        eval(
            "(list (floor 7 2) (ceiling 7 2) (truncate -7 2) (round 5 2) (round 7 2) (floor -0.5))"
        ),
        "(3 4 -3 2 4 -1)"
    );
    assert_eq!(
        eval("(list (min 3 1 2) (max 3 1.0 2) (abs -4) (abs -1.5))"),
        "(1 3 4 1.5)"
    );
    assert_eq!(
        eval(
            "(list (expt 2 10) (expt 2.0 3) (expt -1 -3) (sqrt 16) (sqrt 2d0) (float 1) (float 1 1d0))"
        ),
        "(1024 8.0 -1 4.0 1.4142135623730951d0 1.0 1.0d0)"
    );
    assert_eq!(
        eval("(list (= 1 1.0) (< 1 2 3) (< 1 3 2) (/= 1 2 1) (>= 3 3 2) (<= 1 1))"),
        "(t t nil nil t t)"
    );
    assert_eq!(
        eval("(list (zerop 0) (plusp -1) (minusp -1) (evenp 4) (oddp 4))"),
        "(t nil t t nil)"
    );
    // A single result is rounded to single precision.
    assert_eq!(eval("(/ 1.0 3)"), "0.33333334");
}

#[test]
fn arithmetic_errors() {
    assert_eq!(
        eval("(/ 7 2)"),
        "ERROR t.lisp:1:22: in macro `m` (expanding the call at t.lisp:2:24): (/ 7 2) on integers \
         would be a ratio, which the kernel language has no type for; use (floor 7 2), (truncate 7 2) \
         or a float operand"
    );
    assert!(eval("(/ 1 0)").ends_with("division by zero"));
    assert!(eval("(floor 1.0 0)").ends_with("division by zero"));
    assert!(
        eval("(* 18446744073709551615 2)")
            .ends_with("integer overflow: the result does not fit in 64 bits")
    );
    assert!(eval("(expt 2 64)").ends_with("integer overflow: the result does not fit in 64 bits"));
    assert!(eval("(expt 2 -1)").ends_with("would be a ratio; use a float base"));
    assert!(eval("(* 1e38 1e38)").ends_with("the float result is infinite or not a number"));
    assert!(eval("(sqrt -1)").contains("complex numbers are not supported"));
    assert!(eval("(+ 1 'a)").ends_with("expected a number, got `a`"));
}

#[test]
fn list_functions() {
    assert_eq!(eval("(list 1 'a \"s\" '(b))"), "(1 a \"s\" (b))");
    assert_eq!(eval("(list* 1 2 '(3 4))"), "(1 2 3 4)");
    assert_eq!(eval("(cons 0 '(1))"), "(0 1)");
    assert_eq!(eval("(cons 0 nil)"), "(0)");
    assert_eq!(
        eval(
            "(let ((l '(1 2 3 4 5 6))) (list (car l) (cdr l) (first l) (second l) (third l) (fourth l) (fifth l) (rest l)))"
        ),
        "(1 (2 3 4 5 6) 1 2 3 4 5 (2 3 4 5 6))"
    );
    assert_eq!(
        eval("(let ((l '(1 2 3))) (list (cadr l) (cddr l) (caddr l) (car nil) (cdr nil)))"),
        "(2 (3) 3 nil ())"
    );
    assert_eq!(
        eval(
            "(let ((l '(1 2 3))) (list (last l) (last l 2) (butlast l) (butlast l 2) (nth 1 l) (nth 5 l) (nthcdr 2 l)))"
        ),
        "((3) (2 3) (1 2) (1) 2 nil (3))"
    );
    assert_eq!(
        eval(
            "(list (append '(1) '(2 3) nil '(4)) (reverse '(1 2 3)) (length '(1 2)) (length \"abc\") (reverse \"ab\"))"
        ),
        "((1 2 3 4) (3 2 1) 2 3 \"ba\")"
    );
    assert_eq!(
        eval(
            "(list (member 2 '(1 2 3)) (member 5 '(1 2)) (assoc 'b '((a 1) (b 2))) (assoc 'c '((a 1))))"
        ),
        "((2 3) nil (b 2) nil)"
    );
    assert_eq!(eval("(mapcar #'1+ '(1 2 3))"), "(2 3 4)");
    assert_eq!(
        eval("(mapcar (lambda (a b) (list a b)) '(1 2 3) '(x y))"),
        "((1 x) (2 y))"
    );
    assert_eq!(eval("(mapcar '1+ '(1))"), "(2)");
    assert_eq!(eval("(mapcan (lambda (x) (list x x)) '(1 2))"), "(1 1 2 2)");
    assert_eq!(
        eval("(list (remove-if #'oddp '(1 2 3 4)) (remove-if-not #'oddp '(1 2 3 4)))"),
        "((2 4) (1 3))"
    );
    assert_eq!(
        eval(
            "(list (every #'numberp '(1 2)) (every #'numberp '(1 a)) (some #'symbolp '(1 a)) (some #'symbolp '(1)))"
        ),
        "(t nil t nil)"
    );
    assert_eq!(
        eval(
            "(list (funcall #'+ 1 2) (apply #'+ 1 '(2 3)) (funcall (lambda (&optional (x 5)) x)) (identity 'q))"
        ),
        "(3 6 5 q)"
    );
    assert_eq!(
        eval(
            "(let ((l '(a b a c))) (list (nreverse l) (copy-list l) (endp nil) (endp l) (remove 'a l) (find 'c l) (find 'z l) (position 'b l) (position 'z l) (count 'a l)))"
        ),
        "((c a b a) (a b a c) t nil (b c) c nil 1 nil 2)"
    );
    assert_eq!(
        eval(
            "(list (reduce #'+ '(1 2 3)) (reduce #'+ '(1 2) :initial-value 10) (reduce #'+ nil) (reduce #'list '(1 2 3)))"
        ),
        "(6 13 0 ((1 2) 3))"
    );
    assert_eq!(
        eval(
            "(list (subseq '(1 2 3 4) 1) (subseq '(1 2 3 4) 1 3) (subseq \"chorus\" 0 3) (values 1 2) (values))"
        ),
        "((2 3 4) (2 3) \"cho\" 1 nil)"
    );
    assert!(eval("(subseq '(1 2) 1 5)").contains("subseq: the bounds 1 to 5 are outside 0 to 2"));
    assert!(
        eval("(reduce #'+ '(1) :from-end t)")
            .contains("reduce takes a function, a list and optionally :initial-value v")
    );
    assert_eq!(
        eval(
            "(let ((l '(1 2)) (s 0)) (list (pop l) l (pop l) (pop l) (mapc (lambda (x) (incf s x)) '(3 4)) s))"
        ),
        "(1 (2) 2 nil (3 4) 7)"
    );
    assert_eq!(
        eval("(cons 1 2)"),
        "ERROR t.lisp:1:22: in macro `m` (expanding the call at t.lisp:2:24): (cons x `2`): the second argument must be a list, dotted pairs are not supported"
    );
    assert_eq!(
        eval("(car 1)"),
        "ERROR t.lisp:1:22: in macro `m` (expanding the call at t.lisp:2:24): expected a list, got `1`"
    );
    assert!(eval("(list #'car)").ends_with("a function cannot be stored in a list"));
    assert!(eval("#'car").ends_with("macro `m` returned a function, not a form"));
}

#[test]
fn predicates_and_equality() {
    assert_eq!(
        eval(
            "(list (numberp 1) (numberp 'a) (integerp 1.0) (floatp 1.0) (symbolp 'a) (symbolp nil) (keywordp :k) (stringp \"s\") (listp nil) (consp nil) (atom 'a) (atom '(1)) (null nil) (not 1) (functionp #'car))"
        ),
        "(t nil nil t t t t t t nil t nil t nil t)"
    );
    assert_eq!(
        eval(
            "(list (eq 'a 'a) (eql 1 1) (eql 1 1.0) (equal '(1 (2)) '(1 (2))) (equal nil '()) (eq \"a\" \"a\"))"
        ),
        "(t t nil t t t)"
    );
}

#[test]
fn control_forms() {
    assert_eq!(eval("(if nil 1)"), "nil");
    assert_eq!(eval("(cond ((= 1 2) 'a) ((+ 1 1)) (t 'c))"), "2");
    assert_eq!(eval("(cond ((= 1 2) 'a))"), "nil");
    assert_eq!(
        eval("(list (when t 1 2) (unless t 1) (and) (and 1 2) (and 1 nil 2) (or) (or nil 3))"),
        "(2 nil t 2 nil nil 3)"
    );
    assert_eq!(eval("(case 'b ((a c) 1) (b 2) (otherwise 3))"), "2");
    assert_eq!(eval("(case 5 ((1 2) 'low) (t 'high))"), "high");
    assert_eq!(eval("(case 5 ((1 2) 'low))"), "nil");
    assert_eq!(
        eval("(ecase 5 ((1 2) 'low))"),
        "ERROR t.lisp:2:24: macro `m`: `5` matches no ecase clause"
    );
    assert_eq!(
        eval("(let ((x 1) (y 2)) (let ((x y) (y x)) (list x y)))"),
        "(2 1)"
    );
    assert_eq!(eval("(let* ((x 1) (y (+ x 1))) (list x y))"), "(1 2)");
    assert_eq!(eval("(let (a (b)) (list a b))"), "(nil nil)");
    assert_eq!(eval("(progn 1 2)"), "2");
    assert_eq!(
        eval("(destructuring-bind (a (b &rest c) &key d) '(1 (2 3 4) :d 5) (list a b c d))"),
        "(1 2 (3 4) 5)"
    );
    assert_eq!(
        eval(
            "(let ((s 0) (l nil)) (dolist (x '(1 2 3)) (incf s x) (push x l)) (dotimes (i 3) (decf s)) (list s l))"
        ),
        "(3 (3 2 1))"
    );
    assert_eq!(
        eval("(let ((x 1)) (setq x (+ x 1)) (setf x (* x 10)) x)"),
        "20"
    );
    assert_eq!(eval("(dolist (x '(1 2) 'done))"), "done");
    assert_eq!(
        eval("(assert (= 1 2))"),
        "ERROR t.lisp:2:24: macro `m`: the assertion (= 1 2) failed"
    );
    assert_eq!(eval("(progn (declare (ignore x)) 1)"), "1");
    assert_eq!(
        eval("(+ 1 (declare x))"),
        "ERROR t.lisp:1:27: in macro `m` (expanding the call at t.lisp:2:24): `declare` is only allowed at the start of a body"
    );
}

#[test]
fn functions_flet_labels_and_closures() {
    assert_eq!(eval("(flet ((sq (x) (* x x))) (sq 5))"), "25");
    assert_eq!(
        eval("(labels ((fact (n) (if (= n 0) 1 (* n (fact (1- n)))))) (fact 10))"),
        "3628800"
    );
    assert_eq!(
        eval(
            "(labels ((ev (n) (if (= n 0) t (od (1- n)))) (od (n) (if (= n 0) nil (ev (1- n))))) (list (ev 10) (od 7)))"
        ),
        "(t t)"
    );
    assert_eq!(
        eval("(let ((k 10)) (funcall (let ((k 1)) (lambda (x) (+ x k))) 5))"),
        "6"
    );
    assert_eq!(
        eval("(flet ((f (x) (* 2 x))) (flet ((f (x) (f (f x)))) (f 1)))"),
        "4"
    );
    assert_eq!(eval("((lambda (x) (* x 3)) 2)"), "6");
    assert_eq!(
        eval("(flet ((f (a &key (b 2)) (+ a b))) (list (f 1) (f 1 :b 5)))"),
        "(3 6)"
    );
    assert!(
        eval("(flet ((f (a) a)) (f))").contains("function `f` takes 1 argument (a), but got 0")
    );
    assert!(
        eval("(labels ((f (x) (f x))) (f 1))")
            .contains("macro-time calls nest more than 1000 deep")
    );
}

#[test]
fn loop_subset() {
    assert_eq!(eval("(loop repeat 3 collect 'x)"), "(x x x)");
    assert_eq!(eval("(loop for x in '(1 2 3) collect (* x x))"), "(1 4 9)");
    assert_eq!(eval("(loop for i from 0 below 4 collect i)"), "(0 1 2 3)");
    assert_eq!(eval("(loop for i from 1 to 3 sum i)"), "6");
    assert_eq!(eval("(loop for i from 10 downto 8 collect i)"), "(10 9 8)");
    assert_eq!(eval("(loop for i from 0 to 10 by 5 collect i)"), "(0 5 10)");
    assert_eq!(
        eval("(loop for x in '(a b c) for i from 0 collect (list x i))"),
        "((a 0) (b 1) (c 2))"
    );
    assert_eq!(
        eval("(loop for x in '(1 2 3 4) when (evenp x) collect x)"),
        "(2 4)"
    );
    assert_eq!(eval("(loop for x in '((1) (2 3)) append x)"), "(1 2 3)");
    assert_eq!(
        eval("(let ((s 0)) (loop for x in '(1 2) do (incf s x) (incf s)) s)"),
        "5"
    );
    assert!(
        eval("(loop for x on '(1 2) collect x)")
            .contains("loop: expected `in` or `from`, found `on`")
    );
    assert!(eval("(loop while t)").contains("loop: `while` is not supported"));
    assert!(
        eval("(loop do (+ 1 1))")
            .contains("the macro ran for more than 250000 steps; does it loop forever?")
    );
}

#[test]
fn strings_symbols_and_format() {
    assert_eq!(
        eval("(format nil \"~a-~s-~d~%~~\" \"x\" \"y\" 42)"),
        "\"x-\\\"y\\\"-42\\n~\""
    );
    assert_eq!(eval("(format nil \"~A.~a\" 'sym '(1 2))"), "\"sym.(1 2)\"");
    assert_eq!(eval("(intern (format nil \"~a-X\" 'foo))"), "foo-x");
    assert_eq!(eval("(intern (string-upcase \"bar\"))"), "bar");
    assert_eq!(
        eval("(alexandria:symbolicate 'info- \"SIZE-\" 'x)"),
        "info-size-x"
    );
    assert_eq!(
        eval(
            "(list (symbol-name 'abc) (symbol-name nil) (string 'a) (string-upcase 'ab) (string-downcase \"AB\"))"
        ),
        "(\"abc\" \"nil\" \"a\" \"AB\" \"ab\")"
    );
    assert_eq!(
        eval(
            "(list (string= \"a\" \"a\") (string= \"a\" \"A\") (string-equal \"a\" \"A\") (string= 'a \"a\"))"
        ),
        "(t nil t t)"
    );
    assert_eq!(eval("(concatenate 'string \"ab\" \"cd\")"), "\"abcd\"");
    assert_eq!(eval("(concatenate 'list '(1) '(2))"), "(1 2)");
    assert!(eval("(format t \"x\")").contains("only (format nil …) is supported"));
    assert!(eval("(format nil \"~f\" 1.0)").contains("format directive `~f` is not supported"));
    assert!(eval("(format nil \"~a\")").contains("format: no argument left for ~a"));
    assert!(
        eval("(intern \"#:g1\")").contains("names starting with `#:` are reserved for gensyms")
    );
}

#[test]
fn user_errors_point_at_the_call() {
    assert_eq!(
        body(
            "(defkernelmacro m (x) (if (symbolp x) x (error \"m needs a symbol, not ~s\" x)))",
            "(m 1)"
        ),
        "ERROR t.lisp:2:24: macro `m`: m needs a symbol, not 1"
    );
}

#[test]
fn macro_time_errors() {
    assert_eq!(
        eval("y"),
        "ERROR t.lisp:1:22: in macro `m` (expanding the call at t.lisp:2:24): unbound variable `y`"
    );
    assert_eq!(
        eval("(1 2)"),
        "ERROR t.lisp:1:23: in macro `m` (expanding the call at t.lisp:2:24): `1` is not a function name"
    );
    assert!(eval("(if)").contains("`if` takes 2 to 3 operand(s), got 0"));
    assert!(eval("(car)").contains("`car` takes 1 argument(s), got 0"));
    assert!(eval("(let ((1 2)) 1)").contains("expected a variable name, found `1`"));
    assert!(eval("(check-type 1 widget)").contains("check-type does not know the type `widget`"));
    assert!(eval("(setq 1 2)").contains("only variables can be assigned at macro time, not `1`"));
    assert!(eval("(setq zz 2)").contains("unbound variable `zz`"));
    assert!(eval("(funcall 'nope)").contains("`nope` is not a function"));
    assert!(eval("#'nope").contains("unknown macro-time function `nope`"));
}

// --- gensyms -----------------------------------------------------------------------------------------

#[test]
fn gensyms_are_fresh_and_print_as_uninterned() {
    assert_eq!(
        eval("(list (gensym) (gensym \"I\") (gensym 'tmp) (make-symbol \"X\"))"),
        "(#:g1 #:i2 #:tmp3 #:x4)"
    );
    assert_eq!(eval("(eq (gensym) (gensym))"), "nil");
    // A prefix ending in a digit is separated from the counter, so `i0`+`11` and `i01`+`1`
    // cannot meet.
    assert_eq!(
        eval("(list (gensym \"i0\") (gensym \"i01\") (gensym \"\"))"),
        "(#:i0_1 #:i01_2 #:g3)"
    );
    let defs = "(defkernelmacro swap (a b) (alexandria:with-gensyms (tmp (other \"O\")) `(let ((,tmp ,a) (,other 0)) (set ,a ,b) (set ,b ,tmp))))";
    assert_eq!(
        body(defs, "(progn (swap x y) (swap y z))"),
        "(progn (let ((#:tmp1 x) (#:o2 0)) (set x y) (set y #:tmp1)) (let ((#:tmp3 y) (#:o4 0)) (set y z) (set z #:tmp3)))"
    );
}

#[test]
fn once_only_evaluates_once_and_skips_literals() {
    let defs = "(defkernelmacro sq (x) (once-only (x) `(* ,x ,x)))";
    assert_eq!(
        body(defs, "(return (sq (f a)))"),
        "(return (let ((#:x1 (f a))) (* #:x1 #:x1)))"
    );
    assert_eq!(body(defs, "(return (sq 3))"), "(return (* 3 3))");
    assert_eq!(
        body(
            "(defkernelmacro m (a b) (alexandria:once-only (a (c (list 'g b))) `(f ,a ,c)))",
            "(m x y)"
        ),
        "(let ((#:a1 x) (#:c2 (g y))) (f #:a1 #:c2))"
    );
}

// --- limits --------------------------------------------------------------------------------------------

#[test]
fn runaway_expansion_is_an_error_at_the_call() {
    assert_eq!(
        err("(defkernelmacro f () '(f)) (defkernel g (void ()) (f))").to_string(),
        format!(
            "t.lisp:1:51: macro expansion nests more than {MAX_EXPANSION_DEPTH} deep at the macro \
             `f`; does it expand into itself?"
        )
    );
    assert_eq!(
        err("(defkernelmacro f () '(progn (f))) (defkernel g (void ()) (f))").to_string(),
        "t.lisp:1:59: macro expansion nests more than 1000 deep at the macro `f`; does it expand into itself?"
    );
    assert_eq!(
        err("(defkernel-symbol-macro a (+ a 1)) (defkernel g (int ()) (return a))").to_string(),
        "t.lisp:1:66: macro expansion nests more than 1000 deep at the symbol macro `a`; does it expand into itself?"
    );
    assert_eq!(
        err("(defkernel g (int ()) (symbol-macrolet ((a a)) (return a)))").to_string(),
        "t.lisp:1:56: macro expansion nests more than 1000 deep at the symbol macro `a`; does it expand into itself?"
    );
    // Top-level runaway.
    assert_eq!(
        err("(defkernelmacro f () '(f)) (f)").to_string(),
        "t.lisp:1:28: macro expansion nests more than 1000 deep at the macro `f`; does it expand into itself?"
    );
}

#[test]
fn too_many_expansions_is_an_error() {
    // 2^20 expansions: each call expands into two calls.
    let text = "(defkernelmacro f (n) (if (= n 0) 0 `(+ (f ,(1- n)) (f ,(1- n)))))
                (defkernel g (int ()) (return (f 20)))";
    assert_eq!(
        err(text).to_string(),
        format!(
            "t.lisp:2:47: more than {MAX_EXPANSIONS} macro expansions; is a macro expanding forever?"
        )
    );
}

/// The fuzzer's finding (`fuzz/findings/macro-amplification.lisp`): a macro that expands into
/// three calls of itself, each with a copy of its body. Before the growth budget it stopped only
/// at `MAX_EXPANSIONS`, holding about 500 MB of forms.
const SELF_TRIPLING: &str = "(defkernelmacro tri ((&rest names) &body body)
  (if names
      `(let ((,(car names) 0))
         (tri ,(cdr names) ,@body) (tri ,(cdr names) ,@body) (tri ,(cdr names) ,@body))
      `(progn ,@body)))
(defkernel k (void ((out float*) (n int)))
  (tri (a b c d e f g h i j k l m n o p)
    (for (i 0 (< i n) (+ i 1))
      (set (aref out i) (+ (aref out i) (* 2.0 (aref out (+ i 1))) (* 3.0 (aref out (+ i 2))))))))";

#[test]
fn a_self_copying_macro_is_stopped_by_the_growth_budget() {
    let error = err(SELF_TRIPLING).to_string();
    // Located at a call of the macro, named, before the expansion count's limit.
    assert!(error.starts_with("t.lisp:"), "{error}");
    assert!(
        error.contains("macro expansions made more than 1000") && error.contains("`tri`"),
        "{error}"
    );
    assert!(!error.contains("macro expansions; is a macro"), "{error}");
    // The same macro with fewer names is legal and expands.
    let small = SELF_TRIPLING.replace("(a b c d e f g h i j k l m n o p)", "(a b c d)");
    chorus_lang::compile_str(&small, "t.lisp").expect("3^4 copies fit the budget");
}

#[test]
fn macros_cannot_exhaust_time_or_memory() {
    // Doubling a list 40 times would need 2^40 elements; the work charged for the copies stops it.
    assert!(
        eval("(let ((x '(1))) (dotimes (i 40) (setq x (append x x))) (length x))")
            .contains("the macro ran for more than 250000 steps")
    );
    assert!(
        eval("(let ((s \"ab\")) (dotimes (i 40) (setq s (concatenate 'string s s))) 1)")
            .contains("the macro ran for more than 250000 steps")
    );
    // Empty loops still count their iterations.
    assert!(
        eval("(dotimes (i 1000000000000))").contains("the macro ran for more than 250000 steps")
    );
    assert!(
        eval("(loop repeat 1000000000000)").contains("the macro ran for more than 250000 steps")
    );
    // Pushing onto a long list copies it (lists are vectors): charged, so it stays fast.
    assert!(
        eval("(let ((l nil)) (dotimes (i 100000) (push i l)) 1)")
            .contains("the macro ran for more than 250000 steps")
    );
    // So is every use of a large value.
    assert!(
        eval("(let ((l (loop repeat 1000 collect 'x))) (dotimes (i 1000000) l))")
            .contains("the macro ran for more than 250000 steps")
    );
}

#[test]
fn absurdly_deep_expansions_are_refused() {
    let mut expander = Expander::new();
    expander.define_rust_macro("deep", |_: &Form, cx: &MacroContext| {
        let mut form = Form::symbol("x", cx.span().clone());
        for _ in 0..5000 {
            form = Form::list(
                vec![Form::symbol("f", cx.span().clone()), form],
                cx.span().clone(),
            );
        }
        Ok(form)
    });
    let forms = read_str("(defkernel k (void ()) (deep))", "t.lisp").unwrap();
    assert_eq!(
        expander.expand_unit(&forms).unwrap_err().to_string(),
        "t.lisp:1:24: the expansion of the macro `deep` nests more than 2000 deep"
    );
    // Building deep data in macro code copies it at every level, which the step limit stops.
    assert!(
        body(
            "(defkernelmacro m () (let ((x 1)) (dotimes (i 3000) (setq x (list 'f x))) x))",
            "(m)"
        )
        .contains("the macro ran for more than 250000 steps")
    );
}

// --- errors in definitions and top-level forms --------------------------------------------------------

#[test]
fn definition_errors() {
    assert_eq!(
        err("(defkernelmacro)").to_string(),
        "t.lisp:1:1: expected (defkernelmacro name lambda-list body…), found `(defkernelmacro)`"
    );
    assert_eq!(
        err("(defkernelmacro 1 ())").to_string(),
        "t.lisp:1:17: expected a macro name, found `1`"
    );
    assert_eq!(
        err("(defkernel-symbol-macro t 1)").to_string(),
        "t.lisp:1:25: expected a symbol-macro name (not t, nil or a keyword), found `t`"
    );
    assert_eq!(
        err("(defkernel-symbol-macro x)").to_string(),
        "t.lisp:1:1: expected (defkernel-symbol-macro name expansion), found `(defkernel-symbol-macro x)`"
    );
    assert_eq!(
        err("(defkernel-symbol-macro m 1) (defkernelmacro m () 2) (defkernel-symbol-macro m 3)")
            .to_string(),
        "t.lisp:1:54: the symbol macro `m` is defined twice in this unit (first at t.lisp:1:1)"
    );
    assert_eq!(
        err("(defkernelmacro m () 1)\n(defkernelmacro m () 2)").to_string(),
        "t.lisp:2:1: the macro `m` is defined twice in this unit (first at t.lisp:1:1)"
    );
    assert_eq!(
        err("(defkernel k (void ()) (macrolet (m) 1))").to_string(),
        "t.lisp:1:35: expected a macro definition (name lambda-list body…), found `m`"
    );
    assert_eq!(
        err("(defkernel k (void ()) (macrolet x 1))").to_string(),
        "t.lisp:1:34: expected a list of macro definitions (name lambda-list body…), found `x`"
    );
    assert_eq!(
        err("(defkernel k (void ()) (symbol-macrolet ((a)) 1))").to_string(),
        "t.lisp:1:42: expected (symbol expansion), found `(a)`"
    );
    assert_eq!(
        err("(foo 1)").to_string(),
        "t.lisp:1:1: expected defkernel, defglobal, defkernel-struct, defkernelmacro or \
         defkernel-symbol-macro at top level, found `(foo 1)`"
    );
}

// --- spans ----------------------------------------------------------------------------------------------

#[test]
fn macro_output_spans() {
    let text = "(defkernelmacro m (a) `(+ ,a 1))\n(defkernel k (int ((x int)))\n  (return (m x)))";
    let forms = expand_str(text, "t.lisp").unwrap();
    let ret = &forms[0].as_list().unwrap()[3];
    let call = &ret.as_list().unwrap()[1];
    // The call `(m x)` is at 3:11; the argument x at 3:14.
    assert_eq!(span_of(call), (3, 11));
    let items = call.as_list().unwrap();
    assert_eq!(span_of(&items[0]), (3, 11), "`+` is made by the macro");
    assert_eq!(span_of(&items[1]), (3, 14), "`x` is the call's argument");
    assert_eq!(
        span_of(&items[2]),
        (3, 11),
        "`1` comes from the macro's template"
    );
    // A symbol macro's expansion gets the span of the symbol.
    let forms = expand_str(
        "(defkernel-symbol-macro s (f 1))\n(defkernel k (int ()) (return s))",
        "t.lisp",
    )
    .unwrap();
    let ret = &forms[0].as_list().unwrap()[3];
    let expansion = &ret.as_list().unwrap()[1];
    assert_eq!(span_of(expansion), (2, 31));
    assert_eq!(span_of(&expansion.as_list().unwrap()[1]), (2, 31));
}

// --- the public API ---------------------------------------------------------------------------------------

fn form(text: &str) -> Form {
    read_one(text, "api.lisp").unwrap()
}

#[test]
fn expand_macro_1_and_expand_macro() {
    let mut expander = Expander::new();
    expander
        .define_macro(&form("(defkernelmacro a (x) `(b ,x))"))
        .unwrap();
    expander
        .define_macro(&form("(defkernelmacro b (x) `(c ,x))"))
        .unwrap();
    expander
        .define_symbol_macro(&form("(defkernel-symbol-macro s (a 1))"))
        .unwrap();
    let (once, expanded) = expander.expand_macro_1(&form("(a (a 1))")).unwrap();
    assert_eq!(
        (once.to_string(), expanded),
        ("(b (a 1))".to_string(), true)
    );
    let (all, expanded) = expander.expand_macro(&form("(a (a 1))")).unwrap();
    assert_eq!((all.to_string(), expanded), ("(c (a 1))".to_string(), true));
    let (same, expanded) = expander.expand_macro(&form("(c 1)")).unwrap();
    assert_eq!((same.to_string(), expanded), ("(c 1)".to_string(), false));
    assert_eq!(
        expander.expand_macro_1(&form("s")).unwrap().0.to_string(),
        "(a 1)"
    );
    assert_eq!(
        expander.expand_macro(&form("s")).unwrap().0.to_string(),
        "(c 1)"
    );
    assert_eq!(
        expander
            .expand_macro_1(&form("(when x y)"))
            .unwrap()
            .0
            .to_string(),
        "(if x (progn y))"
    );
    assert_eq!(
        expander
            .expand_all(&form("(f (a s) (let ((s 2)) s))"))
            .unwrap()
            .to_string(),
        "(f (c (c 1)) (let ((s 2)) s))"
    );
    assert!(expander.is_macro("a") && expander.is_macro("let*") && !expander.is_macro("s"));
    assert!(expander.is_symbol_macro("s") && !expander.is_symbol_macro("a"));
    let self_loop = {
        let mut e = Expander::new();
        e.define_macro(&form("(defkernelmacro f () '(f))")).unwrap();
        e.expand_macro(&form("(f)")).unwrap_err().to_string()
    };
    assert!(self_loop.contains("macro expansion nests more than 1000 deep"));
}

#[test]
fn rust_macros() {
    let mut expander = Expander::new();
    expander.define_rust_macro("swap!", |call: &Form, cx: &MacroContext| {
        let Some([_, a, b]) = call.as_list() else {
            return Err(Error::new(
                cx.span(),
                format!("{} takes two places", cx.name()),
            ));
        };
        let tmp = cx.gensym("tmp");
        let s = cx.span().clone();
        let sym = |n: &str| Form::symbol(n, s.clone());
        let list = |items: Vec<Form>| Form::list(items, s.clone());
        Ok(list(vec![
            sym("let"),
            list(vec![list(vec![tmp.clone(), a.clone()])]),
            list(vec![sym("set"), a.clone(), b.clone()]),
            list(vec![sym("set"), b.clone(), tmp]),
        ]))
    });
    let forms = read_str("(defkernel k (void ()) (swap! x y) (swap! x))", "t.lisp").unwrap();
    assert_eq!(
        expander.expand_unit(&forms).unwrap_err().to_string(),
        "t.lisp:1:36: swap! takes two places"
    );
    let forms = read_str("(defkernel k (void ()) (when c (swap! x y)))", "t.lisp").unwrap();
    assert_eq!(
        expander.expand_unit(&forms).unwrap()[0].to_string(),
        // The first unit used #:tmp1 before it failed: the counter belongs to the expander.
        "(defkernel k (void ()) (if c (progn (let ((#:tmp2 x)) (set x y) (set y #:tmp2)))))"
    );
    assert_eq!(expander.gensym("G", &Span::generated()).to_string(), "#:g3");
}

#[test]
fn definitions_persist_across_units() {
    let mut expander = Expander::new();
    expander
        .expand_unit(&read_str("(defkernelmacro m () 1)", "a.lisp").unwrap())
        .unwrap();
    let out = expander
        .expand_unit(&read_str("(defkernel k (int ()) (return (m)))", "b.lisp").unwrap())
        .unwrap();
    assert_eq!(out[0].to_string(), "(defkernel k (int ()) (return 1))");
    // A later unit may redefine it.
    let out = expander
        .expand_unit(
            &read_str(
                "(defkernelmacro m () 2) (defkernel k (int ()) (return (m)))",
                "c.lisp",
            )
            .unwrap(),
        )
        .unwrap();
    assert_eq!(out[0].to_string(), "(defkernel k (int ()) (return 2))");
}

#[test]
fn literal_kinds_survive_expansion() {
    let out = expand_str("(defkernel k (void ()) (f 1.5d0 2u \"s\" 3ll))", "t.lisp").unwrap();
    let args = &out[0].as_list().unwrap()[3].as_list().unwrap()[1..];
    assert!(matches!(
        args[0].kind,
        FormKind::Float {
            precision: FloatPrecision::Double,
            ..
        }
    ));
    assert!(matches!(
        args[1].kind,
        FormKind::Int {
            suffix: IntSuffix::U,
            ..
        }
    ));
    assert!(matches!(args[2].kind, FormKind::Str(_)));
    assert!(matches!(
        args[3].kind,
        FormKind::Int {
            suffix: IntSuffix::L,
            ..
        }
    ));
}

// --- the property ------------------------------------------------------------------------------------------

/// Forms built from the kernel language's and the macro Lisp's vocabulary, so that random forms
/// exercise the walker's core forms, macro definitions and the interpreter.
fn arb_form() -> impl Strategy<Value = Form> {
    const WORDS: &[&str] = &[
        "let",
        "let*",
        "do",
        "for",
        "when",
        "unless",
        "if",
        "progn",
        "macrolet",
        "symbol-macrolet",
        "with-shared-memory",
        "switch",
        "set",
        "quote",
        "quasiquote",
        "unquote",
        "unquote-splicing",
        "declare",
        "defkernel",
        "defkernelmacro",
        "defkernel-symbol-macro",
        "defglobal",
        "m",
        "s",
        "x",
        "y",
        "&rest",
        "&optional",
        "&key",
        "&body",
        "&whole",
        "nil",
        "t",
        "list",
        "car",
        "cons",
        "+",
        "/",
        "floor",
        "lambda",
        "funcall",
        "mapcar",
        "labels",
        "loop",
        "collect",
        "repeat",
        "with-gensyms",
        "once-only",
        "case",
        "format",
        "error",
        ":k",
        "otherwise",
        "gensym",
    ];
    let span = Span::generated();
    let (s1, s2) = (span.clone(), span.clone());
    let leaf = prop_oneof![
        proptest::sample::select(WORDS).prop_map(move |w| Form::symbol(w, s1.clone())),
        (-3i128..20).prop_map(move |v| Form::int(v, s2.clone())),
    ];
    leaf.prop_recursive(6, 80, 5, move |inner| {
        let span = span.clone();
        prop::collection::vec(inner, 0..5).prop_map(move |items| Form::list(items, span.clone()))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_units_never_panic_the_expander(forms in prop::collection::vec(arb_form(), 1..4)) {
        let _ = Expander::new().expand_unit(&forms);
    }

    #[test]
    fn arbitrary_macro_bodies_never_panic(lambda_list in arb_form(), body in arb_form(), args in prop::collection::vec(arb_form(), 0..3)) {
        let span = Span::generated();
        let mut call = vec![Form::symbol("m", span.clone())];
        call.extend(args);
        let unit = vec![
            Form::list(vec![Form::symbol("defkernelmacro", span.clone()), Form::symbol("m", span.clone()), lambda_list, body], span.clone()),
            Form::list(vec![
                Form::symbol("defkernel", span.clone()),
                Form::symbol("k", span.clone()),
                Form::list(vec![Form::symbol("void", span.clone()), Form::list(vec![], span.clone())], span.clone()),
                Form::list(call, span.clone()),
            ], span.clone()),
        ];
        let _ = Expander::new().expand_unit(&unit);
    }
}

#[test]
fn expanders_can_be_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Expander>();
}

#[test]
fn expanded_macros_pass_the_checker() {
    // The contract with the checker: what the expander leaves (nested lets, `(let () …)`,
    // `(if test (progn …))`, gensyms, `nil` as false) is core language it accepts.
    let text = format!(
        "{SPH_MACROS}
         (defkernel g (void ((a float*) (n int)))
           (let* ((i (+ (* block-idx-x block-dim-x) thread-idx-x)) (j 0))
             (when (and (< i n) (>= i 0) t)
               (do-range (k 0 (- n 1)) (inc (aref a i) (pow (aref a k) 3)))
               (macrolet ((twice (x) `(* 2 ,x)))
                 (symbol-macrolet ((limit (twice n)))
                   (unless (= j limit) (set j 2)))))))"
    );
    if let Err(e) = chorus_lang::compile_str(&text, "t.lisp") {
        panic!("{e}");
    }
}
