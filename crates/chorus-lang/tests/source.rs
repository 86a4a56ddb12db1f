//! Whole CL-Cuda and Chorus Lisp source files: the Common Lisp syntax of host code, package
//! prefixes, the host forms that are skipped and the errors (with their locations) of what is
//! not skipped. The inputs are written here; `examples/tests/cl_cuda_originals.rs` runs CL-Cuda's
//! own files.

use chorus_lang::reader::{FEATURES, read_source};
use chorus_lang::source::{self, Skipped};
use chorus_lang::{compile_source, read_str};

/// A whole file with every piece of Common Lisp syntax a host form may use, around two kernels.
const HOST_SYNTAX: &str = r#"#|
  A block comment #| nested |# before the package.
|#
(in-package :cl-user)
(defpackage #:cl-cuda-examples.test
  (:use :cl #:cl-cuda)
  (:export #:main))
(in-package :cl-cuda-examples.test)

(defvar *chars* (list #\a #\Space #\Newline #\( #\) #\; #\" #\\ #\U+41))
(defparameter *vector* #(1 2 3 #(4 5)))
(defparameter *ratio* (+ 1/2 -3/4 22/7))
(defparameter *floats* (list 1.0d0 1.5f0 2.5s0 3.5l0 1d-3 -4.0e+2 1.0s10))
(defparameter *big* 123456789012345678901234567890)
(defparameter *read-time* #.(+ 1 2))
(defparameter *path* #p"/tmp/x.lisp")
(defparameter *bits* #*1011)
(defparameter *complex* #c(1 2))
(defparameter *array* #2A((1 2) (3 4)))
(defparameter *shared* '(#1=(a b) #1#))
(defparameter *radix* (list #x1F #b101 #o17 #36rZZ))
(defun |Mixed Case| (x) (funcall #'1+ x))
(defmacro with-thing ((var) &body body)
  `(let ((,var (make-thing)))
     ,@body
     ,(car body)))
#+sbcl (require :sb-sprof)
#-chorus (this form is skipped #\x #.(error "never read"))
(declaim (optimize (speed 3)))
(eval-when (:compile-toplevel :load-toplevel :execute)
  (defun helper () #'car)
  (cl-cuda:defkernel in-eval-when (void ((a cl-cuda:float*)))
    (set (aref a 0) 1.0)))

(cl-cuda:defkernel scale (void ((a cl-cuda:float*) (n cl-cuda:int) (k chorus:float)))
  (let ((i (+ (* cl-cuda:block-dim-x cl-cuda::block-idx-x) thread-idx-x)))
    #+chorus (when (< i n) (set (aref a i) (* k (aref a i))))
    #-chorus (this is not read as kernel code)
    #+(or sbcl (and chorus (not ccl))) (syncthreads)))

(defun main ()
  (with-cuda (0)
    (scale a n 2.0 :grid-dim '(1 1 1) :block-dim '(256 1 1))))
"#;

fn skipped_names(skipped: &[Skipped]) -> Vec<(String, u32)> {
    skipped
        .iter()
        .map(|s| (s.what.clone(), s.span.line))
        .collect()
}

#[test]
fn host_code_with_common_lisp_syntax_is_read_and_skipped() {
    let (module, skipped) = compile_source(HOST_SYNTAX, "host.lisp").unwrap();
    let kernels: Vec<&str> = module.functions.iter().map(|f| &*f.name).collect();
    assert_eq!(kernels, ["in-eval-when", "scale"]);
    let names = skipped_names(&skipped);
    let expected: Vec<(String, u32)> = [
        ("in-package", 4),
        ("defpackage cl-cuda-examples.test", 5),
        ("in-package", 8),
        ("defvar *chars*", 10),
        ("defparameter *vector*", 11),
        ("defparameter *ratio*", 12),
        ("defparameter *floats*", 13),
        ("defparameter *big*", 14),
        ("defparameter *read-time*", 15),
        ("defparameter *path*", 16),
        ("defparameter *bits*", 17),
        ("defparameter *complex*", 18),
        ("defparameter *array*", 19),
        ("defparameter *shared*", 20),
        ("defparameter *radix*", 21),
        ("defun Mixed Case", 22),
        ("defmacro with-thing", 23),
        ("declaim", 29),
        ("defun helper", 31),
        ("defun main", 41),
    ]
    .iter()
    .map(|(what, line)| (what.to_string(), *line))
    .collect();
    assert_eq!(names, expected);
    assert!(skipped.iter().all(|s| s.warning.is_none()));
    // The feature conditionals inside the kernel: only the `#+chorus` forms are there.
    let printed = chorus_lang::cuda::print_module(&module).unwrap().code;
    assert!(printed.contains("__syncthreads()"), "{printed}");
    assert!(!printed.contains("this"), "{printed}");
}

#[test]
fn the_reader_marks_top_level_forms_that_use_host_syntax() {
    let forms = read_source(HOST_SYNTAX, "host.lisp").unwrap();
    let marked: Vec<bool> = forms.iter().map(|f| f.host_syntax).collect();
    // in-package, defpackage (#:), in-package, then the data definitions.
    assert_eq!(&marked[..4], &[false, true, false, true]);
    // The placeholders: a character is a one-character string, a vector `(vector …)`, a
    // ratio `(/ n d)`, `#.form` the form, unevaluated.
    assert_eq!(
        forms[3].form.to_string(),
        r#"(defvar *chars* (list "a" " " "\n" "(" ")" ";" "\"" "\\" "A"))"#
    );
    assert_eq!(
        forms[4].form.to_string(),
        "(defparameter *vector* (vector 1 2 3 (vector 4 5)))"
    );
    assert_eq!(
        forms[5].form.to_string(),
        "(defparameter *ratio* (+ (/ |1| |2|) (/ |-3| |4|) (/ |22| |7|)))"
    );
    assert_eq!(
        forms[8].form.to_string(),
        "(defparameter *read-time* (+ 1 2))"
    );
    // Floats with every exponent marker: s and f single, d and l double.
    assert_eq!(
        forms[6].form.to_string(),
        "(defparameter *floats* (list 1.0d0 1.5 2.5 3.5d0 0.001d0 -400.0 10000000000.0))"
    );
    assert_eq!(
        forms[14].form.to_string(),
        "(defparameter *radix* (list 31 5 15 1295))"
    );
    // The kernel definitions are kernel code: no host syntax in them, package prefixes gone.
    let scale = forms
        .iter()
        .find(|f| f.form.to_string().starts_with("(defkernel scale"))
        .unwrap();
    assert!(!scale.host_syntax);
    assert!(
        scale
            .form
            .to_string()
            .starts_with("(defkernel scale (void ((a float*) (n int) (k float)))"),
        "{}",
        scale.form
    );
}

#[test]
fn package_prefixes_keep_the_local_name() {
    let forms = read_str(
        "(cl-cuda:int chorus:float4 cl-cuda-examples.sph::foo :restrict |pkg:not-a-prefix| \
         pkg::|Odd Name|)",
        "t.lisp",
    )
    .unwrap();
    assert_eq!(
        forms[0].to_string(),
        "(int float4 foo :restrict |pkg:not-a-prefix| |Odd Name|)"
    );
    // What prints reads back as the same symbol.
    let again = read_str(&forms[0].to_string(), "t.lisp").unwrap();
    assert!(again[0].same(&forms[0]));
}

fn error(text: &str) -> String {
    let e = compile_source(text, "t.lisp").unwrap_err();
    format!(
        "{}:{}-{}:{} {}",
        e.span.line, e.span.column, e.span.end_line, e.span.end_column, e.message
    )
}

#[test]
fn package_prefix_errors_are_located() {
    assert_eq!(
        error("(defvar x)\n(a:b:c)"),
        "2:2-2:7 `a:b:c` has more than one package marker; a symbol is `name`, `pkg:name` or \
         `pkg::name`"
    );
    assert_eq!(
        error("(foo pkg:)"),
        "1:6-1:10 `pkg:` is not a symbol: `pkg:name` needs a name after the package"
    );
    assert_eq!(
        error("(foo :a:b)"),
        "1:6-1:10 `:a:b`: a keyword has one colon, at its start"
    );
}

#[test]
fn two_packages_defining_one_name_collide_at_the_second_definition() {
    let text = "(in-package :a)\n(defkernel a::foo (int ((x int))) (return x))\n\
                (in-package :b)\n(defkernel b::foo (int ((x int))) (return (+ x 1)))\n";
    assert_eq!(
        error(text),
        "4:12-4:18 function `foo` is already defined at t.lisp:2:1"
    );
}

#[test]
fn host_only_syntax_in_kernel_code_is_a_located_error() {
    let kernel =
        |body: &str| format!("(in-package :x)\n(defkernel f (void ((a float*)))\n  {body})\n");
    let cases = [
        (
            "(set (aref a 0) #\\a)",
            "3:19-3:22 `#\\a` (a character) is not part of the kernel language",
        ),
        (
            "(set (aref a 0) #(1 2))",
            "3:19-3:21 `#(…)` (a vector) is not part of the kernel language",
        ),
        (
            "(set (aref a 0) 1/2)",
            "3:19-3:22 `1/2` is a ratio, which has no kernel type",
        ),
        (
            "(set (aref a 0) #.(+ 1 2))",
            "3:19-3:21 `#.` (read-time evaluation) is refused in kernel code",
        ),
        (
            "(set (aref a 0) #:g)",
            "3:19-3:21 `#:` (uninterned symbols) is not supported",
        ),
        (
            "(set (aref a 0) #p\"x\")",
            "3:19-3:21 `#p` (a pathname) is not part of the kernel language",
        ),
    ];
    for (body, expected) in cases {
        let got = error(&kernel(body));
        assert!(got.starts_with(expected), "{body}: {got}");
    }
    // The same inside a kernel macro's body, which is kernel code too.
    let got = error("(defkernelmacro m () #\\a)");
    assert!(got.starts_with("1:22-1:25 `#\\a` (a character)"), "{got}");
}

#[test]
fn feature_expressions() {
    assert_eq!(FEATURES, ["chorus", "cl-cuda", "common-lisp"]);
    let read = |text: &str| {
        read_source(text, "t.lisp")
            .unwrap()
            .iter()
            .map(|f| f.form.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(read("#+chorus a #-chorus b c"), ["a", "c"]);
    assert_eq!(
        read("#+cl-cuda a #+:common-lisp b #+sbcl c #-sbcl d"),
        ["a", "b", "d"]
    );
    assert_eq!(
        read("#+(and chorus (not sbcl)) a #+(or) b #-(and) c #+(and) d"),
        ["a", "d"]
    );
    // A skipped form may hold anything, even syntax nothing reads.
    assert_eq!(read("#+nil (#? #.(x) 1/0 #\\Nope a:b:c) e"), ["e"]);
    // Conditionals nest, and apply to the next form, in lists too.
    assert_eq!(read("(a #+sbcl #+chorus b c)"), ["(a c)"]);
    assert_eq!(read("'#-chorus x y"), ["'y"]);
    assert!(
        error("(foo #+chorus)").starts_with("1:6-1:14 expected a form after `#+chorus`"),
        "{}",
        error("(foo #+chorus)")
    );
    assert!(
        error("#+(xor a b) x").starts_with("1:3-1:12 `(xor a b)` is not a feature expression"),
        "{}",
        error("#+(xor a b) x")
    );
    assert!(error("#+").starts_with("1:1-1:3 expected a feature expression after `#+`"));
}

#[test]
fn character_names_are_checked() {
    let got = error("(defvar x #\\Nonsense)");
    assert!(
        got.starts_with("1:11-1:21 `#\\Nonsense` is not a character name"),
        "{got}"
    );
}

#[test]
fn a_misspelled_kernel_definition_is_an_error_at_its_head() {
    assert_eq!(
        error("(in-package :x)\n(defkernal f (void ()) (return))"),
        "2:2-2:11 `defkernal` is not a kernel definition (did you mean `defkernel`?); host forms \
         are skipped, but this one looks like a misspelled kernel definition"
    );
    assert!(error("(defkernelconst x 1)").contains("did you mean `defkernel`?"));
    assert!(error("(cl-cuda:defglobl x 1)").contains("did you mean `defglobal`?"));
}

#[test]
fn host_macros_that_write_kernels_are_expanded() {
    let text = r#"
(defmacro def-add (n)
  (let ((name (symbolicate "ADD-" (princ-to-string n))))
    `(defkernel ,name (void ((a float*)))
       ,@(loop repeat n collect '(set (aref a 0) (+ (aref a 0) 1.0))))))
(def-add 2)
(def-add 3)
(defmacro def-two (a b) `(progn (def-add ,a) (def-add ,b)))
(def-two 4 5)
(defmacro host-only (x) `(setf *x* ,(host-function x)))
(host-only 1)
"#;
    let (module, skipped) = compile_source(text, "m.lisp").unwrap();
    let kernels: Vec<&str> = module.functions.iter().map(|f| &*f.name).collect();
    assert_eq!(kernels, ["add-2", "add-3", "add-4", "add-5"]);
    let warnings: Vec<&Skipped> = skipped.iter().filter(|s| s.warning.is_some()).collect();
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].what, "host-only");
    assert_eq!(warnings[0].span.line, 11);
    let warning = warnings[0].warning.as_deref().unwrap();
    assert!(
        warning.starts_with("the host macro `host-only` could not be expanded"),
        "{warning}"
    );
    assert!(warning.contains("host-function"), "{warning}");
}

#[test]
fn top_level_calls_of_the_files_kernel_macros_define_kernels() {
    // The attention and Hopper GEMM examples write their kernels with a kernel macro called at
    // top level; whole-file compilation (`chorus compile`) must keep those calls, as kernel
    // text does, and still skip a call of a name that is no kernel macro.
    let text = r#"
(in-package :cl-user)
(defkernelmacro define-fill (name value)
  `(defkernel ,name (void ((a float*)))
     (set (aref a thread-idx-x) ,value)))
(define-fill fill-one 1.0)
(cl-cuda:define-fill fill-two 2.0)
(define-other fill-three 3.0)
"#;
    let (module, skipped) = compile_source(text, "m.lisp").unwrap();
    let kernels: Vec<&str> = module.functions.iter().map(|f| &*f.name).collect();
    assert_eq!(kernels, ["fill-one", "fill-two"]);
    assert_eq!(
        skipped_names(&skipped),
        [
            ("in-package".to_string(), 2),
            ("define-other fill-three".to_string(), 8)
        ]
    );
}

#[test]
fn top_level_atoms_and_odd_lists_are_skipped() {
    let source = source::read_source("42 \"doc\" *x* () ((lambda () 1))", "t.lisp").unwrap();
    let what: Vec<&str> = source.skipped.iter().map(|s| s.what.as_str()).collect();
    assert_eq!(
        what,
        [
            "a number",
            "a string",
            "a symbol",
            "an empty list",
            "a list"
        ]
    );
    assert!(source.forms.is_empty());
}

#[test]
fn plain_kernel_text_is_read_as_before() {
    // read_str (Program::new, defkernel!) reads kernel code everywhere: host syntax at top
    // level is an error there, and an unknown top-level form too.
    let e = chorus_lang::compile_str("(defvar x #\\a)", "t.lisp").unwrap_err();
    assert_eq!((e.span.line, e.span.column), (1, 11));
    let e = chorus_lang::compile_str("(defun f ())", "t.lisp").unwrap_err();
    assert!(e.message.starts_with("expected defkernel"), "{}", e.message);
}

#[test]
fn a_kernel_definition_inside_host_code_is_host_data() {
    // In a host macro's template (or a host function) a kernel definition is data of the host
    // code: host syntax there is read, and the macro is not expanded (a warning), not an error.
    let text = "(defmacro def-k (name)\n  `(defkernel ,name (void ()) ,(progn #\\a nil)))\n(def-k k1)\n\
                (defun f () '(defkernel g (void ()) #(1 2)))\n\
                (progn (defkernel h (void ((a float*))) (set (aref a 0) 1.0)))\n";
    let (module, skipped) = compile_source(text, "t.lisp").unwrap();
    let kernels: Vec<&str> = module.functions.iter().map(|f| &*f.name).collect();
    assert_eq!(kernels, ["h"]);
    let warning = skipped.iter().find_map(|s| s.warning.as_deref()).unwrap();
    assert!(
        warning.contains("its text uses Common Lisp syntax that has no kernel meaning"),
        "{warning}"
    );
    // In a top-level progn or eval-when it is kernel code again.
    assert!(
        error("(eval-when (:execute) (defkernel h (void ()) #\\a))")
            .starts_with("1:46-1:49 `#\\a` (a character)")
    );
}
