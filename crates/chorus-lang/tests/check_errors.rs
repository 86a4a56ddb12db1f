//! The checker on malformed and ill-typed programs: each case asserts the message (exactly, or
//! a stable part of it) and the line:column of the offending form. A property test feeds
//! arbitrary kernel-shaped forms and asserts that the checker never panics.

use chorus_lang::{Error, compile_str};
use proptest::prelude::*;

#[path = "support/arbitrary_form.rs"]
mod arbitrary_form;
use arbitrary_form::arbitrary_form;

fn error_of(src: &str) -> Error {
    match compile_str(src, "test.lisp") {
        Ok(_) => panic!("expected an error for:\n{src}"),
        Err(e) => e,
    }
}

#[track_caller]
fn check_position(e: &Error, at: &str) {
    assert_eq!(&*e.span.file, "test.lisp");
    assert_eq!(
        format!("{}:{}", e.span.line, e.span.column),
        at,
        "wrong position for: {e}"
    );
}

/// The error is `message` exactly, at `at` (`LINE:COLUMN`).
#[track_caller]
fn exact(src: &str, at: &str, message: &str) {
    let e = error_of(src);
    assert_eq!(e.message, message);
    check_position(&e, at);
}

/// The error contains `part`, at `at`.
#[track_caller]
fn contains(src: &str, at: &str, part: &str) {
    let e = error_of(src);
    assert!(
        e.message.contains(part),
        "`{}` does not contain `{part}`",
        e.message
    );
    check_position(&e, at);
}

macro_rules! cases {
    ($($name:ident: $kind:ident($src:expr, $at:expr, $message:expr);)*) => {
        $(
            #[test]
            fn $name() {
                $kind($src, $at, $message);
            }
        )*
    };
}

cases! {
    unknown_variable_suggests_a_close_name: contains("(defkernel k (void ((length int) (a int*)))\n  (set (aref a 0) lenght))", "2:19", "unknown variable `lenght`; did you mean `length`?");
    unknown_variable_without_a_close_name: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set (aref a 0) zzz))", "2:19", "unknown variable `zzz`");
    unknown_function_suggests_a_built_in: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (syncthread))", "2:3", "unknown function `syncthread`; did you mean `syncthreads`?");
    setf_suggests_set: contains("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (setf n 1))", "2:3", "unknown function `setf`; did you mean `set`?");
    built_in_argument_count: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (atomic-add a))", "2:3", "`atomic-add` takes 2 arguments, got 1");
    user_function_argument_count: exact("(defkernel f (int ((a int) (b float))) (return a))\n(defkernel k (void ((o int*)))\n  (set (aref o 0) (f 1)))", "3:19", "`f` takes 2 arguments (int, float), got 1");
    no_overload_lists_the_accepted_signatures: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (atomic-sub p 1.0))", "2:3", "no overload of `atomic-sub` takes (float*, float); accepted: (T*, T) → T for T in int, uint");
    set_type_mismatch_says_how_to_convert: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (let ((i 0))\n    (set i 1.5)))", "3:12", "cannot store a float in int variable i; convert explicitly: (int …) or (floor …)");
    set_element_type_mismatch: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set (aref a 0) x))", "2:19", "cannot store a float in int element (aref a 0); convert explicitly: (int …) or (floor …)");
    if_test_must_be_bool: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (if n (return)))", "2:7", "the test of if must be bool, got int; compare explicitly, e.g. (/= x 0)");
    while_test_must_be_bool: contains("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (while x (return)))", "2:10", "the test of while must be bool, got float");
    aref_on_a_non_pointer: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set (aref n 0) 1))", "2:14", "aref needs a pointer or array, but `n` has type int");
    too_many_indices: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set (aref a 0 1) 1))", "2:18", "too many indices: `a` has type int* and takes at most 1 (2 given)");
    non_integer_index: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set (aref a x) 1))", "2:16", "an array index must be an integer, got a float; convert explicitly: (int …) or (floor …)");
    break_outside_a_loop: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (break))", "2:3", "`break` outside a loop; it is allowed only inside do, while and for");
    continue_outside_a_loop: contains("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (if (> n 0) (continue)))", "2:15", "`continue` outside a loop");
    break_directly_in_a_switch_clause: contains("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (while t (switch n (1 (break)))))", "2:25", "`break` directly inside a switch clause is not allowed");
    duplicate_parameter: exact("(defkernel k (void ((a int) (b int) (a float))))", "1:38", "duplicate parameter `a` in `k`");
    unknown_type_suggests_a_close_name: exact("(defkernel k (void ((a flaot*))))", "1:24", "unknown type `flaot*`; did you mean `float*`?");
    launch_bounds_on_a_device_function: exact("(defkernel f (int ((a int)))\n  (declare (launch-bounds 256))\n  (return a))", "2:12", "launch-bounds applies only to kernels; `f` is a device function");
    declare_must_come_first: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (syncthreads)\n  (declare (launch-bounds 32)))", "3:3", "declare must be the first form of a kernel body");
    return_value_in_a_void_function: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (return 1))", "2:11", "`k` returns void, so return takes no value");
    missing_return_value: exact("(defkernel f (float ((a float)))\n  (return))", "2:3", "`f` returns float; return needs a value: (return VALUE)");
    return_value_of_the_wrong_type: exact("(defkernel f (int ((a float)))\n  (return a))", "2:11", "`f` returns int, but this value is a float; convert explicitly: (int …) or (floor …)");
    switch_label_not_constant: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (switch n\n    (n (return))))", "3:6", "a switch label must be an integer constant, got `n`");
    duplicate_switch_label: contains("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (switch n\n    (1 (return))\n    ((values 2 1) (return))))", "4:16", "duplicate switch label 1 (also at test.lisp:3:6)");
    switch_on_a_float: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (switch x (1 (return))))", "2:11", "switch needs an integer value, got a float");
    shared_memory_dimension_not_constant: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (with-shared-memory ((s float n))\n    (syncthreads)))", "2:33", "the size of shared array `s` must be a positive integer constant (literals and arithmetic on them), got `n`");
    shared_memory_dimension_zero: contains("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (with-shared-memory ((s float (- 4 4)))\n    (syncthreads)))", "2:33", "must be a positive integer constant");
    defglobal_init_not_constant: exact("(defglobal g (sin 1.0))", "1:14", "the initial value of global `g` must be a constant: a literal, a negated literal, or a vector or structure constructor of literals; got `(sin 1.0)`");
    defglobal_unknown_qualifier: exact("(defglobal g 1 :texture)", "1:16", "unknown global qualifier `:texture`; expected :device, :constant, :shared, :managed or :restrict");
    malformed_let_binding: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (let ((i))\n    (return)))", "2:9", "a let binding is (VAR INIT), got `(i)`");
    malformed_let_bindings: contains("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (let i (return)))", "2:8", "malformed let: expected a list of bindings, got `i`");
    malformed_do: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (do ((i 0 (+ i 1)))))", "2:3", "malformed do: expected (do ((VAR INIT [STEP])…) (END-TEST [RESULT…]) body…)");
    malformed_do_binding: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (do ((i)) ((> i 3))))", "2:8", "a do binding is (VAR INIT [STEP]), got `(i)`");
    malformed_for: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (for (i 0 (< i n))\n    (return)))", "2:8", "malformed for: expected (for (VAR INIT TEST STEP) body…), e.g. (for (i 0 (< i n) (+ i 1)) …)");
    for_step_of_the_wrong_type: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (for (i 0 (< i n) (+ i 0.5))\n    (return)))", "2:21", "the step of `i` must be int, got a float; convert explicitly: (int …) or (floor …)");
    struct_unknown_field: contains("(defkernel-struct pair (x int) (y int))\n(defkernel k (void ((p pair*)))\n  (set (pair-z (aref p 0)) 1))", "3:8", "unknown function `pair-z`; did you mean `pair-x`?");
    struct_accessor_on_a_pointer: exact("(defkernel-struct pair (x int) (y int))\n(defkernel k (void ((p pair*)))\n  (set (pair-x p) 1))", "3:16", "`pair-x` needs a pair, got a pair*; for a pointer write (pair-x (aref p 0))");
    struct_containing_itself: exact("(defkernel-struct node (v int) (next node))", "1:38", "structure `node` cannot contain itself; use a pointer `node*`");
    assignment_to_a_non_place: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set (+ n 1) 2))", "2:8", "cannot assign to `(+ n 1)`: set needs a variable, a global, an (aref …) or an accessor such as (float4-x v)");
    assignment_to_an_index_variable: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set thread-idx-x 0))", "2:8", "`thread-idx-x` is an index variable and cannot be assigned");
    assignment_to_a_constant_global: exact("(defglobal c 1 :constant)\n(defkernel k (void ())\n  (set c 2))", "3:8", "`c` is a :constant global; device code cannot write it (set it from the host)");
    assignment_to_dynamic_shared_memory: contains("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (with-dynamic-shared-memory ((s int))\n    (set s a)))", "3:10", "`s` aliases dynamic shared memory and cannot be reassigned");
    printf_argument_count: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (printf \"%d %f\\n\" n))", "2:3", "the printf format has 2 conversions but 1 argument is given");
    printf_conversion_type: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (printf \"%d\\n\" x))", "2:18", "printf conversion `%d` needs an integer, got a double");
    printf_64_bit_integer: exact("(defkernel k (void ((m int64)))\n  (printf \"%d\" m))", "2:16", "printf conversion `%d` takes a 32-bit integer, got an int64; write `%lld`");
    printf_half: exact("(defkernel k (void ((h half)))\n  (printf \"%f\" h))", "2:16", "printf cannot print a half; convert it: (half-to-float …)");
    redefinition_of_a_function: exact("(defkernel f (void ()))\n(defkernel f (void ()))", "2:12", "function `f` is already defined at test.lisp:1:1");
    redefinition_of_a_global: exact("(defglobal g 1)\n(defglobal g 2)", "2:12", "global `g` is already defined at test.lisp:1:1");
    redefinition_of_a_structure: exact("(defkernel-struct s (x int))\n(defkernel-struct s (y int))", "2:19", "structure `s` is already defined at test.lisp:1:1");
    function_named_like_a_built_in: exact("(defkernel sin (float ((x float))) (return x))", "1:12", "`sin` is a built-in name of the kernel language; choose another name");
    mixed_signedness_needs_a_conversion: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set (aref a 0) (+ n u)))", "2:24", "`+`: mixing signed int and unsigned uint needs an explicit conversion: (uint …) or (int …)");
    half_does_not_mix_with_float: exact("(defkernel k (void ((h half) (f float) (o half*)))\n  (set (aref o 0) (+ h f)))", "2:24", "`+`: half does not convert implicitly to float; convert explicitly: (half-to-float …)");
    kernels_cannot_be_called: contains("(defkernel other (void ()))\n(defkernel k (void ())\n  (other))", "3:3", "`other` is a kernel; kernels are launched from the host, not called");
    and_needs_bool_operands: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (if (and (> n 0) n) (return)))", "2:20", "`and` needs bool operands, got an int; compare explicitly, e.g. (/= x 0)");
    integer_literal_out_of_range: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set (aref a 0) 18446744073709551615))", "2:19", "integer literal 18446744073709551615 does not fit in int64");
    restrict_on_a_non_pointer: exact("(defkernel k (void ((n int :restrict))))", "1:21", ":restrict applies to pointers; `n` has type int");
    statement_used_as_a_value: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set n (let ((y 1)) y)))", "2:10", "`let` is a statement and has no value; it cannot be used as an expression");
    unused_value: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (+ n 1))", "2:3", "the value of `(+ n 1)` is not used; a statement must have an effect (set, a call, …)");
    vector_constructor_count: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (let ((v (float3 1.0 2.0))) (return)))", "2:12", "`float3` takes 3 values (float, float, float), got 2");
    vector_accessor_on_the_wrong_vector: exact("(defkernel k (void ((v float3) (o float*)))\n  (set (aref o 0) (float4-x v)))", "2:29", "`float4-x` needs a float4, got a float3");
    multi_dimensional_shared_array_as_a_value: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (with-shared-memory ((s float 4 4))\n    (let ((q s)) (return))))", "3:14", "`s` is a 2-dimensional shared array, which C cannot use as a float** value; index it with (aref s i j), pass a row as (aref s i) or (pointer (aref s i 0)), or use a 1-D array");
    value_if_needs_an_else: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set n (if (> n 0) 1)))", "2:10", "an if used as a value needs a test and two values: (if TEST THEN ELSE)");
    value_if_arms_must_agree: contains("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set p (if (> n 0) p a)))", "2:24", "the two values of if must have one type: float* and int* have no common type");
    cast_of_a_pointer: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set n (int p)))", "2:15", "cannot convert a float* to int");
    pointer_of_a_non_place: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set p (pointer 1.0)))", "2:19", "pointer needs a place (a variable, global, aref or accessor), got `1.0`");
    keyword_is_not_a_value: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set n :x))", "2:10", "the keyword `:x` is not a value");
    device_function_result_of_void_used: exact("(defkernel (g :device) (void ()))\n(defkernel k (void ((a int*)))\n  (set (aref a 0) (g)))", "3:19", "`(g)` returns no value");
    argument_of_the_wrong_type: exact("(defkernel f (int ((a int*))) (return 0))\n(defkernel k (void ((p float*)))\n  (f p))", "3:6", "argument 1 of `f` must be int*, got a float*; a float* cannot be used where an int* is expected");
    launch_bounds_not_constant: exact("(defkernel k (void ((n int)))\n  (declare (launch-bounds n)))", "2:27", "a launch bound must be a positive integer constant, got `n`");
    empty_struct: exact("(defkernel-struct e)", "1:1", "structure `e` has no fields; expected (defkernel-struct NAME (FIELD TYPE)…)");
    rebinding_an_index_variable: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (let ((thread-idx-x 0)) (return)))", "2:10", "`thread-idx-x` is an index variable and cannot be rebound; choose another name");
    assignment_to_a_row_of_a_shared_array: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (with-shared-memory ((s float 4 4))\n    (set (aref s 0) p)))", "3:10", "`(aref s 0)` is a row of a shared array; assign its elements with more indices");
    continue_directly_in_a_switch_clause: contains("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (while t (switch n (1 (continue)))))", "2:25", "`continue` directly inside a switch clause is not allowed");
    shift_of_a_float: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set n (shl x 1)))", "2:10", "no overload of `shl` takes (float, int); accepted: (T, T) → T for T in int8, uint8, int16, uint16, int, uint, int64, uint64, size-t; (T, int) → T for T in int8, uint8, int16, uint16, uint, int64, uint64, size-t");
    duplicate_shared_variable: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (with-shared-memory ((s float 4) (s int 4))\n    (syncthreads)))", "2:37", "`s` is bound twice in one with-shared-memory");
    duplicate_let_variable: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (let ((q 1) (q 2))\n    (syncthreads)))", "2:16", "`q` is bound twice in one let");
    struct_accessor_clashes_with_a_built_in: exact("(defkernel-struct atomic (add int))", "1:19", "structure `atomic` would define `atomic-add`: `atomic-add` is a built-in name of the kernel language; choose another name");
    pointer_test_hint: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (if p (return)))", "2:7", "the test of if must be bool, got float*");
    missing_final_return: exact("(defkernel f (int ((a int)))\n  (if (> a 0) (return 1))\n  (set a 2))", "3:3", "`f` returns int, but its body can reach the end without returning a value; end it with (return …)");
    loop_with_break_can_end: contains("(defkernel f (int ((a int)))\n  (while t (if (> a 0) (break) (return 1))))", "2:3", "`f` returns int, but its body can reach the end without returning a value");
    static_shared_memory_limit: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (with-shared-memory ((s float 128 64) (t2 double 4096))\n    (syncthreads)))", "2:41", "`k` declares more than 48 KiB of static shared memory, CUDA's limit; use with-dynamic-shared-memory and :shared-mem for more");
    values_outside_a_switch: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set n (values 1 2)))", "2:10", "`values` is allowed only as a switch label: ((values 1 2) …)");
    misspelled_cast_suggests_the_type: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (set x (flaot n)))", "2:10", "unknown function `flaot`; did you mean `float`?");
    conflicting_global_qualifiers: exact("(defglobal g 1 (:constant :managed))", "1:16", "a global cannot be both :constant and :managed");
    cuda_asm_needs_a_string: exact("(defkernel k (void ((a int*) (n int) (x float) (u uint) (p float*)))\n  (cuda-asm n))", "2:13", "cuda-asm takes one string literal: (cuda-asm \"…\")");
}

/// A device function taking `float**` and one taking `float*`, for the shared-array cases.
const TAKES_POINTERS: &str = "(defkernel (rows :device) (void ((q float**))) (return))
(defkernel (row :device) (void ((r float*))) (return))
";

cases! {
    two_dimensional_shared_array_as_an_argument: exact(&format!("{TAKES_POINTERS}(defkernel k (void ())
  (with-shared-memory ((s float 16 16))
    (rows s)))"), "5:11", "`s` is a 2-dimensional shared array, which C cannot use as a float** value; index it with (aref s i j), pass a row as (aref s i) or (pointer (aref s i 0)), or use a 1-D array");
    two_dimensional_shared_array_stored_in_a_variable: exact("(defkernel k (void ((q float**)))
  (with-shared-memory ((s float 16 16))
    (set q s)))", "3:12", "`s` is a 2-dimensional shared array, which C cannot use as a float** value; index it with (aref s i j), pass a row as (aref s i) or (pointer (aref s i 0)), or use a 1-D array");
    three_dimensional_shared_array_in_an_expression: exact("(defkernel k (void ((p int***)))
  (with-shared-memory ((s int 2 3 4))
    (if (= s p) (return))))", "3:12", "`s` is a 3-dimensional shared array, which C cannot use as a int*** value; index it with (aref s i j k), pass a row as (aref s i j) or (pointer (aref s i j 0)), or use a 1-D array");
    two_dimensional_shared_array_behind_pointer: contains("(defkernel k (void ())
  (with-shared-memory ((s float 4 4))
    (let ((q (pointer s))) (return))))", "3:23", "`s` is a 2-dimensional shared array, which C cannot use as a float** value");
    plane_of_a_three_dimensional_shared_array: exact(&format!("{TAKES_POINTERS}(defkernel k (void ())
  (with-shared-memory ((s float 2 3 4))
    (rows (aref s 0))))"), "5:11", "`s` is a 3-dimensional shared array; give at least 2 indices");
    kernel_and_callee_shared_memory_over_the_limit: exact("(defkernel (helper :device) (void ())
  (with-shared-memory ((tile float 8192))
    (syncthreads)))
(defkernel k (void ())
  (with-shared-memory ((mine double 2049))
    (helper)))", "4:1", "kernel `k` needs 49160 bytes of static shared memory with the device functions it calls, more than CUDA's limit of 48 KiB; largest: `tile` in `helper` (32768 bytes), `mine` in `k` (16392 bytes); use with-dynamic-shared-memory and :shared-mem for more");
    shared_memory_of_indirect_callees_counts: exact("(defkernel k (void ((n int)))
  (with-shared-memory ((a int 1024))
    (if (> n 0) (set n (middle n)))))
(defkernel middle (int ((n int)))
  (with-shared-memory ((b int 1024))
    (return (+ (leaf n) (leaf 1)))))
(defkernel leaf (int ((n int)))
  (with-shared-memory ((c float 10240) (d int 2))
    (return n)))", "1:1", "kernel `k` needs 49160 bytes of static shared memory with the device functions it calls, more than CUDA's limit of 48 KiB; largest: `c` in `leaf` (40960 bytes), `a` in `k` (4096 bytes), `b` in `middle` (4096 bytes); use with-dynamic-shared-memory and :shared-mem for more");
    shared_global_used_by_a_callee_counts: exact("(defglobal flag 0 :shared)
(defkernel (touch :device) (void ()) (set flag 1))
(defkernel k (void ())
  (with-shared-memory ((s float 12288))
    (touch)))", "3:1", "kernel `k` needs 49156 bytes of static shared memory with the device functions it calls, more than CUDA's limit of 48 KiB; largest: `s` in `k` (49152 bytes), :shared global `flag` (4 bytes); use with-dynamic-shared-memory and :shared-mem for more");
}

#[test]
fn valid_uses_of_shared_arrays_still_check() {
    let src = format!(
        "{TAKES_POINTERS}(defkernel k (void ((out float*)))
  (with-shared-memory ((flat float 16) (s float 16 16) (cube float 2 4 4))
    (row flat)
    (row (aref s 1))
    (row (pointer (aref s 1 0)))
    (row (aref cube 1 2))
    (let ((p flat) (q (aref s 2)))
      (set (aref s 0 1) (aref flat 3))
      (set (aref out 0) (+ (aref s 0 1) (aref q 1) (aref p 0) (aref cube 1 2 3))))))"
    );
    let module = compile_str(&src, "test.lisp").unwrap_or_else(|e| panic!("{e}"));
    let c = chorus_lang::cuda::print_module(&module)
        .unwrap_or_else(|e| panic!("{e}"))
        .code;
    for expected in [
        "row(flat);",
        "row(s[1]);",
        "row(&(s[1][0]));",
        "row(cube[1][2]);",
        "float* q = s[2];",
    ] {
        assert!(c.contains(expected), "`{expected}` missing from:\n{c}");
    }
}

#[test]
fn shared_memory_is_counted_once_per_kernel() {
    // `halve` is reached twice and calls itself: 20 KiB counted once, with the kernel's 16 KiB
    // and `other`'s 8 KiB under the limit; `unused` (40 KiB) is called by no kernel.
    let src = "(defkernel halve (int ((n int)))
  (with-shared-memory ((h float 5120))
    (if (> n 0) (return (halve (- n 1))))
    (return n)))
(defkernel other (int ((n int)))
  (with-shared-memory ((o float 2048))
    (return (halve n))))
(defkernel unused (void ())
  (with-shared-memory ((u float 10240))
    (syncthreads)))
(defkernel k (void ((n int)))
  (with-shared-memory ((own float 4096))
    (set n (+ (halve n) (other n) (halve 2)))))";
    compile_str(src, "test.lisp").unwrap_or_else(|e| panic!("{e}"));
    // Four bytes more than another 4 KiB in the kernel tip it over.
    let over = src.replace("(own float 4096)", "(own float 5121)");
    let e = error_of(&over);
    assert!(
        e.message.starts_with("kernel `k` needs 49156 bytes"),
        "{}",
        e.message
    );
    check_position(&e, "11:1");
}

#[test]
fn unexpanded_macros_are_reported_by_check_module() {
    let forms = chorus_lang::read_str(
        "(defkernel k (void ((n int)))\n  (when (> n 0) (syncthreads)))",
        "test.lisp",
    )
    .unwrap();
    let e = chorus_lang::check::check_module(&forms).unwrap_err();
    assert_eq!(
        e.message,
        "`when` is a macro; compile with chorus_lang::compile_forms or compile_str, which expand \
         macros first"
    );
    check_position(&e, "2:3");
    let forms = chorus_lang::read_str("(defkernel k (void ()))\n(print 1)", "test.lisp").unwrap();
    let e = chorus_lang::check::check_module(&forms).unwrap_err();
    assert_eq!(
        e.message,
        "expected defkernel, defglobal or defkernel-struct at top level, got `(print 1)`"
    );
    check_position(&e, "2:1");
    let forms = chorus_lang::read_str("(defkernelmacro inc (x) `(+ ,x 1))", "test.lisp").unwrap();
    let e = chorus_lang::check::check_module(&forms).unwrap_err();
    assert!(
        e.message
            .starts_with("`defkernelmacro` is handled by the macro expander")
    );
    check_position(&e, "1:1");
}

#[test]
fn errors_in_macro_output_point_into_the_call() {
    // An argument copied into the expansion keeps its own span …
    exact(
        "(defkernelmacro store (place v) `(set ,place ,v))
(defkernel k (void ((a int*) (x float)))
  (store (aref a 0) x))",
        "3:21",
        "cannot store a float in int element (aref a 0); convert explicitly: (int …) or (floor …)",
    );
    // … and a form the macro made has the span of the call.
    contains(
        "(defkernelmacro inc (place delta) `(set ,place (+ ,place ,delta)))
(defkernel k (void ((a int*) (x float)))
  (inc (aref a 0) x))",
        "3:3",
        "cannot store a float in int element (aref a 0)",
    );
}

#[test]
fn errors_display_as_file_line_column() {
    let e = error_of("(defkernel k (void ()) (break))");
    assert_eq!(
        e.to_string(),
        "test.lisp:1:24: `break` outside a loop; it is allowed only inside do, while and for"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_checker_never_panics(body in prop::collection::vec(arbitrary_form(), 0..4),
                                global in arbitrary_form()) {
        // Each definition is compiled on its own, so that an error in one does not keep the
        // checker from reaching the others.
        let body = body.join(" ");
        let units = [
            format!("(defglobal g {global})"),
            format!(
                "(defkernel-struct pair (x int) (y float))
                 (defglobal g 1.5)
                 (defkernel f (int ((a int*) (n int) (x float))) {body})"
            ),
            format!(
                "(defkernel-struct pair (x int) (y float))
                 (defkernel f (int ((a int*))) (return 0))
                 (defkernel k (void ((a int*) (n int) (x float) (i int))) {body})"
            ),
            // A 2-D shared array `s` in scope, and a kernel 1.7 KiB under the
            // static shared-memory limit with its callee and a :shared global, so that the
            // body's own shared arrays may tip it over.
            format!(
                "(defglobal sg 0 :shared)
                 (defkernel f (int ((a int*) (n int) (x float)))
                   (with-shared-memory ((s float 4 4)) (set sg 1) {body})
                   (return 0))
                 (defkernel k (void ((a int*) (n int) (x float) (i int)))
                   (with-shared-memory ((s float 64 185))
                     (set n (f a n x))
                     {body}))"
            ),
        ];
        for src in units {
            // Ok or a positioned error; never a panic.
            if let Err(e) = compile_str(&src, "p.lisp") {
                prop_assert!(!e.message.is_empty());
                prop_assert!(e.span.line >= 1);
            }
        }
    }
}
